//! Formatting `MSG` and `HMSG` lines (client protocol doc, "MSG" and "HMSG").

/// What goes on one `MSG`/`HMSG` line, borrowed from the `PUB` and the subscription.
#[derive(Debug, Clone, Copy)]
pub struct MsgLine<'a> {
    /// The subject the message was published to.
    pub subject: &'a [u8],
    /// The receiving subscription's id.
    pub sid: &'a [u8],
    /// The reply subject, if any.
    pub reply: Option<&'a [u8]>,
    /// For `HMSG`: the header length token, as the publisher wrote it.
    pub header_token: Option<&'a [u8]>,
    /// The total size token (headers plus body), as the publisher wrote it.
    pub size_token: &'a [u8],
}

/// Appends `MSG <subject> <sid> [reply] <size>\r\n`, or
/// `HMSG <subject> <sid> [reply] <hdr_len> <total_len>\r\n` when `header_token` is set.
///
/// Sizes are copied from the publisher's tokens, as nats-server does (so `PUB foo 02` is
/// delivered as `MSG foo 1 02`). Appends to a reused buffer: no allocation once it has grown.
#[inline]
pub fn write_msg_line(out: &mut Vec<u8>, line: &MsgLine<'_>) {
    match line.header_token {
        Some(_) => out.extend_from_slice(b"HMSG "),
        None => out.extend_from_slice(b"MSG "),
    }
    out.extend_from_slice(line.subject);
    out.push(b' ');
    out.extend_from_slice(line.sid);
    out.push(b' ');
    if let Some(reply) = line.reply {
        out.extend_from_slice(reply);
        out.push(b' ');
    }
    write_sizes(out, line.header_token, line.size_token);
}

/// Appends the end of a message's control line, the same in `MSG`, `HMSG` and `RMSG`: the
/// header length token (`HMSG`) and the total size token, then CR LF.
#[inline]
pub(crate) fn write_sizes(out: &mut Vec<u8>, header_token: Option<&[u8]>, size_token: &[u8]) {
    if let Some(hdr) = header_token {
        out.extend_from_slice(hdr);
        out.push(b' ');
    }
    out.extend_from_slice(size_token);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(l: MsgLine) -> String {
        let mut v = Vec::new();
        write_msg_line(&mut v, &l);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn shapes() {
        let base = MsgLine {
            subject: b"foo.bar",
            sid: b"9",
            reply: None,
            header_token: None,
            size_token: b"02",
        };
        assert_eq!(line(base), "MSG foo.bar 9 02\r\n");
        assert_eq!(
            line(MsgLine {
                reply: Some(b"_INBOX.1"),
                ..base
            }),
            "MSG foo.bar 9 _INBOX.1 02\r\n"
        );
        assert_eq!(
            line(MsgLine {
                reply: Some(b"r"),
                header_token: Some(b"12"),
                size_token: b"14",
                ..base
            }),
            "HMSG foo.bar 9 r 12 14\r\n"
        );
    }
}
