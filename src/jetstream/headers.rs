//! Reading and writing NATS header blocks (`NATS/1.0\r\nName: value\r\n...\r\n\r\n`,
//! client protocol doc, "HPUB"): the JetStream headers a publish may carry
//! (`Nats-Msg-Id`, `Nats-Expected-*`, `Nats-Rollup`) and the ones JetStream adds.

/// `Nats-Msg-Id`: deduplication id.
pub const MSG_ID: &str = "Nats-Msg-Id";
/// `Nats-Expected-Stream`.
pub const EXPECTED_STREAM: &str = "Nats-Expected-Stream";
/// `Nats-Expected-Last-Sequence`.
pub const EXPECTED_LAST_SEQ: &str = "Nats-Expected-Last-Sequence";
/// `Nats-Expected-Last-Subject-Sequence`.
pub const EXPECTED_LAST_SUBJECT_SEQ: &str = "Nats-Expected-Last-Subject-Sequence";
/// `Nats-Expected-Last-Msg-Id`.
pub const EXPECTED_LAST_MSG_ID: &str = "Nats-Expected-Last-Msg-Id";
/// `Nats-Rollup` (`sub` or `all`).
pub const ROLLUP: &str = "Nats-Rollup";

/// The value of header `name` in `block` (the first one; names compared exactly, as
/// nats-server's `getHeader` does), trimmed of spaces.
pub fn get<'a>(block: &'a [u8], name: &str) -> Option<&'a [u8]> {
    if block.is_empty() {
        return None;
    }
    let mut lines = block.split(|&b| b == b'\n');
    lines.next()?; // NATS/1.0 [status]
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        if &line[..colon] == name.as_bytes() {
            return Some(line[colon + 1..].trim_ascii());
        }
    }
    None
}

/// [`get`] as text (lossy).
pub fn get_str(block: &[u8], name: &str) -> Option<String> {
    get(block, name).map(|v| String::from_utf8_lossy(v).into_owned())
}

/// A header block from `existing` (a block or empty) with `extra` headers appended.
pub fn with_headers(existing: &[u8], extra: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(existing.len() + 64 * extra.len() + 12);
    if existing.is_empty() {
        out.extend_from_slice(b"NATS/1.0\r\n");
    } else {
        // Without the blank line that ends it.
        let body = existing.strip_suffix(b"\r\n").unwrap_or(existing);
        out.extend_from_slice(body);
    }
    for (k, v) in extra {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// A header block from `existing` with `name` set to `value`: every line of `existing` with
/// that name (case-insensitive) is dropped first, so a sender cannot slip in a value of its
/// own ahead of the server's (nats-server's `setHeader`).
pub fn with_header_set(existing: &[u8], name: &str, value: &str) -> Vec<u8> {
    let mut kept = Vec::with_capacity(existing.len());
    let mut lines = existing.split(|&b| b == b'\n');
    if let Some(first) = lines.next() {
        if !existing.is_empty() {
            kept.extend_from_slice(first);
            kept.push(b'\n');
        }
    }
    for line in lines {
        let is_name = line.iter().position(|&b| b == b':').is_some_and(|colon| {
            line[..colon]
                .trim_ascii()
                .eq_ignore_ascii_case(name.as_bytes())
        });
        if !is_name && !line.is_empty() {
            kept.extend_from_slice(line);
            kept.push(b'\n');
        }
    }
    with_headers(&kept, &[(name, value)])
}

/// A status-only header block: `NATS/1.0 404 Message Not Found\r\n\r\n`.
pub fn status(code: u16, text: &str) -> Vec<u8> {
    format!("NATS/1.0 {code} {text}\r\n\r\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_every_line_of_the_name() {
        let forged = b"NATS/1.0\r\nNats-Request-Info: {\"acc\":\"SYS\"}\r\nX: y\r\nnats-request-info: z\r\n\r\n";
        let set = with_header_set(forged, "Nats-Request-Info", "{\"acc\":\"B\"}");
        assert_eq!(
            set,
            b"NATS/1.0\r\nX: y\r\nNats-Request-Info: {\"acc\":\"B\"}\r\n\r\n"
        );
        assert_eq!(with_header_set(b"", "A", "1"), b"NATS/1.0\r\nA: 1\r\n\r\n");
    }

    #[test]
    fn reads_and_appends() {
        let b = b"NATS/1.0\r\nNats-Msg-Id: a1\r\nX: y\r\n\r\n";
        assert_eq!(get(b, MSG_ID), Some(&b"a1"[..]));
        assert_eq!(get(b, "Nats-Msg"), None);
        assert_eq!(
            with_headers(b, &[("Nats-Stream", "S")]),
            b"NATS/1.0\r\nNats-Msg-Id: a1\r\nX: y\r\nNats-Stream: S\r\n\r\n"
        );
        assert_eq!(
            with_headers(b"", &[("A", "b")]),
            b"NATS/1.0\r\nA: b\r\n\r\n"
        );
    }
}
