//! What a session logs about its traffic: `-DV` traces of operations received, and protocol
//! errors in nats-server's words.

use super::*;

impl Connection {
    pub(super) fn trace_in(&self, op: &ClientOp<'_>) {
        let p = self.client.log_prefix();
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match op {
            ClientOp::Connect(j) => {
                log::trace!("{p} - <<- [CONNECT {}]", protocol::redact_secrets(j))
            }
            ClientOp::Pub(pb) => {
                // The control line was traced when it was parsed (`on_pub_line`).
                log::trace!("{p} - <<- MSG_PAYLOAD: [{:?}]", s(pb.payload));
            }
            ClientOp::Sub {
                subject,
                queue,
                sid,
            } => match queue {
                Some(q) => log::trace!("{p} - <<- [SUB {} {} {}]", s(subject), s(q), s(sid)),
                None => log::trace!("{p} - <<- [SUB {} {}]", s(subject), s(sid)),
            },
            ClientOp::Unsub { sid, max } => match max {
                Some(m) => log::trace!("{p} - <<- [UNSUB {} {m}]", s(sid)),
                None => log::trace!("{p} - <<- [UNSUB {}]", s(sid)),
            },
            ClientOp::Ping => log::trace!("{p} - <<- [PING]"),
            ClientOp::Pong => log::trace!("{p} - <<- [PONG]"),
            ClientOp::Info(j) => log::trace!("{p} - <<- [INFO {}]", s(j)),
            ClientOp::Ok => log::trace!("{p} - <<- [OK]"),
            ClientOp::Err(e) => log::trace!("{p} - <<- [-ERR {}]", s(e)),
        }
    }

    /// Logs a protocol error at error level, in nats-server's words.
    pub(super) fn log_parse_error(&self, e: ParseError, rest: &[u8]) {
        let p = self.client.log_prefix();
        match e {
            ParseError::MaxPayload { size } => log::error!(
                "{p} - maximum payload exceeded: {size} vs {}",
                self.limits.max_payload
            ),
            ParseError::UnknownOp => {
                let snippet = String::from_utf8_lossy(&rest[..rest.len().min(32)]);
                log::error!("{p} - Client parser ERROR: proto={snippet:?}...");
            }
            ParseError::MaxControlLine => log::error!(
                "{p} - maximum control line exceeded (max_control_line {})",
                self.limits.max_control_line
            ),
            ParseError::BadArgs(what) => log::error!("{p} - {what}"),
            ParseError::HeadersNotSupported => log::error!("{p} - message headers not supported"),
        }
    }
}
