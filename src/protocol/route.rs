//! The route protocol's bytes: the route `INFO` and `CONNECT` JSON, parsing what another
//! server sends on a route (`INFO`, `CONNECT`, `PING`, `PONG`, `+OK`, `-ERR`, `RS+`, `RS-`,
//! `LS+`, `LS-`, `RMSG`, `HMSG`), and formatting what beaver sends.
//!
//! Source: nats-server 2.9 (`server/route.go`, `server/parser.go`), checked by running two
//! Debian nats-server 2.9.10 nodes with `-DV` and a scripted peer:
//! - `RS+ <account> <subject>` and `RS+ <account> <subject> <queue> <weight>`; `RS- <account>
//!   <subject> [<queue>]` (no weight);
//! - `RMSG <account> <subject> [reply] <size>`; with queue groups the receiver must pick,
//!   `RMSG <account> <subject> + <reply> <queue>... <size>` or, without a reply subject,
//!   `RMSG <account> <subject> | <queue>... <size>`; `HMSG` has the header size before the
//!   total size, as `HPUB`.
//!
//! Parsing borrows from the reader's buffer, as the client parser does: nothing is copied.

pub use super::info::SubjectPermission;
use memchr::memchr;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

/// The route `INFO` (nats-server's `Info`, the fields routes use, in its order). Sent by both
/// sides when a route connects; an `INFO` about *another* server (`server_id` not the
/// route's) is gossip: dial it (an implicit route).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RouteInfo {
    /// The sending server's id.
    pub server_id: String,
    /// Its name.
    pub server_name: String,
    /// The nats-server version it speaks ("2.9.10").
    pub version: String,
    /// Route protocol level; nats-server 2.9 sends 2.
    pub proto: i32,
    /// Its route listen host.
    pub host: String,
    /// Its route listen port.
    pub port: u16,
    /// Whether it supports headers (`HMSG` on routes).
    pub headers: bool,
    /// Routes must authenticate (cluster `authorization`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auth_required: bool,
    /// Routes must use TLS.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_required: bool,
    /// Routes' certificates are verified (nats-server sets it with `tls_required`: routes
    /// always use mutual TLS).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_verify: bool,
    /// Its `max_payload`.
    pub max_payload: i64,
    /// Where to dial it (`nats-route://HOST:PORT/`): its `cluster_advertise`, or, in gossip,
    /// the address the forwarding server saw it at.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ip: String,
    /// Its cluster name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// Its cluster name was made up (no `name` configured).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cluster_dynamic: bool,
    /// Its client URLs (`HOST:PORT`), for clients to discover (unless `no_advertise`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connect_urls: Vec<String>,
    /// It is going away (lame-duck mode).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ldm: bool,
    /// Its cluster `import` permission (informative: each server applies its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<SubjectPermission>,
    /// Its cluster `export` permission (informative, as `import`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export: Option<SubjectPermission>,
    /// It understands `LS+` (leaf origin cluster); nats-server 2.9 sets it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lnoc: bool,
}

/// The route `CONNECT`, sent by the dialing side only (nats-server's `connectInfo`, in its
/// order).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RouteConnect {
    /// Always true.
    pub echo: bool,
    /// Always false.
    pub verbose: bool,
    /// Always false.
    pub pedantic: bool,
    /// Cluster user (from the route URL, or `cluster.authorization`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// Cluster password.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pass: String,
    /// Whether the route uses TLS.
    pub tls_required: bool,
    /// Headers supported.
    pub headers: bool,
    /// The dialing server's id.
    pub name: String,
    /// Its cluster name.
    pub cluster: String,
    /// Its cluster name is dynamic.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cluster_dynamic: bool,
    /// Leaf origin cluster support.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lnoc: bool,
    /// Set by a gateway that dialled the route port by mistake.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    /// Set by clients (never by servers): how nats-server spots a client on the route port.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang: String,
}

/// `INFO {json} \r\n` / `CONNECT {json}\r\n` bytes (JSON with Go's escaping).
pub fn json_line(op: &str, value: &impl Serialize, trailing_space: bool) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(op.as_bytes());
    line.push(b' ');
    let mut ser = serde_json::Serializer::with_formatter(&mut line, crate::protocol::GoJson);
    // Plain strings, numbers and booleans into a Vec: cannot fail.
    let _ = value.serialize(&mut ser);
    if trailing_space {
        // nats-server writes INFO as "INFO %s \r\n" and CONNECT as "CONNECT %s\r\n".
        line.push(b' ');
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// A message received on a route (`RMSG`/`HMSG`). Slices point into the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedMsg<'a> {
    /// The control line's arguments (for traces).
    pub args: &'a [u8],
    /// The account name.
    pub account: &'a [u8],
    /// The subject.
    pub subject: &'a [u8],
    /// The reply subject.
    pub reply: Option<&'a [u8]>,
    /// The queue groups the sender picked this server to deliver to (one member each).
    /// Empty: deliver to plain subscriptions only.
    pub queues: SmallVec<[&'a [u8]; 4]>,
    /// `HMSG`: the header size and its token.
    pub headers: Option<(usize, &'a [u8])>,
    /// The total size token.
    pub size_token: &'a [u8],
    /// Headers then body.
    pub payload: &'a [u8],
    /// Offset of `payload` in the slice given to [`parse`].
    pub payload_offset: usize,
}

/// One operation received on a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteOp<'a> {
    /// `INFO <json>`.
    Info(&'a [u8]),
    /// `CONNECT <json>`.
    Connect(&'a [u8]),
    /// `PING`.
    Ping,
    /// `PONG`.
    Pong,
    /// `+OK`.
    Ok,
    /// `-ERR <text>`.
    Err(&'a [u8]),
    /// `RS+` (or `LS+`, its origin dropped): interest in `subject` on the remote server.
    Sub {
        /// Account name.
        account: &'a [u8],
        /// Subject, possibly with wildcards.
        subject: &'a [u8],
        /// Queue group and weight (number of members on the remote server; at least 1).
        queue: Option<(&'a [u8], u32)>,
    },
    /// `RS-` (or `LS-`): the interest is gone.
    Unsub {
        /// Account name.
        account: &'a [u8],
        /// Subject.
        subject: &'a [u8],
        /// Queue group.
        queue: Option<&'a [u8]>,
    },
    /// `RMSG`/`HMSG` with its payload.
    Msg(RoutedMsg<'a>),
}

/// Why a route's input could not be parsed: nats-server logs the error and closes the route
/// (`Protocol Violation`/`Parse Error`); no route input may panic beaver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteParseError {
    /// Not a route operation.
    UnknownOp,
    /// A control line longer than the limit.
    MaxControlLine,
    /// Bad arguments; the text names the operation, as nats-server's error does.
    BadArgs(String),
    /// A message larger than the limit.
    MaxPayload(usize),
}

impl std::fmt::Display for RouteParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RouteParseError::UnknownOp => f.write_str("Unknown Protocol Operation"),
            RouteParseError::MaxControlLine => f.write_str("maximum control line exceeded"),
            RouteParseError::BadArgs(s) => f.write_str(s),
            RouteParseError::MaxPayload(n) => write!(f, "maximum payload exceeded: {n}"),
        }
    }
}

/// Splits arguments on runs of spaces and tabs.
fn split_args(line: &[u8]) -> SmallVec<[&[u8]; 8]> {
    line.split(|&b| b == b' ' || b == b'\t')
        .filter(|a| !a.is_empty())
        .collect()
}

/// A decimal size, as nats-server's `parseSize` (digits only).
fn size(token: &[u8]) -> Option<usize> {
    crate::protocol::parse_size(token)
}

/// What [`parse`] found at the start of a buffer.
#[derive(Debug, PartialEq)]
pub enum Parsed<'a> {
    /// A complete operation, and the bytes it used.
    Op(RouteOp<'a>, usize),
    /// Not all of the next operation is there yet. `need`: how many bytes (from the start
    /// of the buffer) it takes in all, when the control line says (a message whose payload
    /// is still arriving): the reader reads until then without parsing (or copying) the
    /// partial message again.
    Incomplete {
        /// Bytes the whole operation takes, when known.
        need: Option<usize>,
    },
}

/// Parses the next complete operation at the start of `buf`.
///
/// Errors end the route (see [`RouteParseError`]).
pub fn parse(
    buf: &[u8],
    max_control_line: usize,
    max_payload: usize,
) -> Result<Parsed<'_>, RouteParseError> {
    parse_with(Dialect::Route, buf, max_control_line, max_payload)
}

/// The two server-to-server protocols [`parse_with`] reads: they share their operations
/// and differ in the account argument, which a route names on every line and a leafnode
/// connection never does (it is bound to one account).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `RS+ <account> <subject>`, `RMSG <account> <subject> ...`.
    Route,
    /// `LS+ <subject>`, `LMSG <subject> ...` (nats-server's `processLeafSub`,
    /// `processLeafMsgArgs`); operations carry an empty account.
    Leaf,
}

/// [`parse`] for either protocol (see [`Dialect`]).
pub fn parse_with(
    dialect: Dialect,
    buf: &[u8],
    max_control_line: usize,
    max_payload: usize,
) -> Result<Parsed<'_>, RouteParseError> {
    let Some(nl) = memchr(b'\n', buf) else {
        if buf.len() > max_control_line + 16 {
            return Err(RouteParseError::MaxControlLine);
        }
        return Ok(Parsed::Incomplete { need: None });
    };
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    let after = nl + 1;
    let (name, rest) = match line.iter().position(|&b| b == b' ' || b == b'\t') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &line[line.len()..]),
    };
    let rest = trim(rest);
    if rest.len() > max_control_line {
        return Err(RouteParseError::MaxControlLine);
    }
    let upper: SmallVec<[u8; 8]> = name.iter().map(u8::to_ascii_uppercase).collect();
    let op = match &upper[..] {
        b"PING" => RouteOp::Ping,
        b"PONG" => RouteOp::Pong,
        b"+OK" => RouteOp::Ok,
        b"-ERR" => RouteOp::Err(rest),
        b"INFO" => RouteOp::Info(rest),
        b"CONNECT" => RouteOp::Connect(rest),
        b"LS+" if dialect == Dialect::Leaf => {
            let a = split_args(rest);
            let bad = || {
                RouteParseError::BadArgs(format!(
                    "processLeafSub Parse Error: '{}'",
                    String::from_utf8_lossy(rest)
                ))
            };
            match a.len() {
                1 => RouteOp::Sub {
                    account: b"",
                    subject: a[0],
                    queue: None,
                },
                3 => {
                    let w = size(a[2])
                        .and_then(|w| u32::try_from(w).ok())
                        .ok_or_else(bad)?;
                    RouteOp::Sub {
                        account: b"",
                        subject: a[0],
                        queue: Some((a[1], w.max(1))),
                    }
                }
                _ => return Err(bad()),
            }
        }
        b"LS-" if dialect == Dialect::Leaf => {
            let a = split_args(rest);
            match a.len() {
                1 | 2 => RouteOp::Unsub {
                    account: b"",
                    subject: a[0],
                    queue: a.get(1).copied(),
                },
                _ => {
                    return Err(RouteParseError::BadArgs(format!(
                        "processLeafUnsub Parse Error: '{}'",
                        String::from_utf8_lossy(rest)
                    )))
                }
            }
        }
        b"RS+" | b"RS-" | b"RMSG" if dialect == Dialect::Leaf => {
            return Err(RouteParseError::UnknownOp)
        }
        b"LMSG" if dialect == Dialect::Route => return Err(RouteParseError::UnknownOp),
        b"RS+" | b"LS+" => {
            let mut a = split_args(rest);
            if upper[0] == b'L' && !a.is_empty() {
                a.remove(0); // the origin cluster
            }
            match a.len() {
                2 => RouteOp::Sub {
                    account: a[0],
                    subject: a[1],
                    queue: None,
                },
                4 => {
                    let w = size(a[3])
                        .and_then(|w| u32::try_from(w).ok())
                        .ok_or_else(|| {
                            RouteParseError::BadArgs(format!(
                                "processRemoteSub Parse Error: '{}'",
                                String::from_utf8_lossy(rest)
                            ))
                        })?;
                    RouteOp::Sub {
                        account: a[0],
                        subject: a[1],
                        queue: Some((a[2], w.max(1))),
                    }
                }
                _ => {
                    return Err(RouteParseError::BadArgs(format!(
                        "processRemoteSub Parse Error: '{}'",
                        String::from_utf8_lossy(rest)
                    )))
                }
            }
        }
        b"RS-" | b"LS-" => {
            let a = split_args(rest);
            // LS- carries no origin in 2.9: `LS- <account> <subject> [queue]`.
            match a.len() {
                2 | 3 => RouteOp::Unsub {
                    account: a[0],
                    subject: a[1],
                    queue: a.get(2).copied(),
                },
                _ => {
                    return Err(RouteParseError::BadArgs(format!(
                        "processRemoteUnsub parse error: '{}'",
                        String::from_utf8_lossy(rest)
                    )))
                }
            }
        }
        b"RMSG" | b"HMSG" | b"LMSG" => {
            let headers = upper[0] == b'H';
            let m = parse_msg_args(rest, headers, dialect)?;
            let total = size(m.size_token).ok_or_else(|| bad_msg(headers, "Size", rest))?;
            if total > max_payload {
                return Err(RouteParseError::MaxPayload(total));
            }
            let hdr = match m.hdr_token {
                Some(t) => {
                    let h = size(t).ok_or_else(|| bad_msg(headers, "Header Size", rest))?;
                    if h > total {
                        return Err(RouteParseError::BadArgs(format!(
                            "processRoutedHeaderMsgArgs Header Size larger then TotalSize: '{}'",
                            String::from_utf8_lossy(rest)
                        )));
                    }
                    Some((h, t))
                }
                None => None,
            };
            let end = after + total;
            if buf.len() < end + 2 {
                return Ok(Parsed::Incomplete {
                    need: Some(end + 2),
                });
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(RouteParseError::UnknownOp);
            }
            let msg = RoutedMsg {
                args: rest,
                account: m.account,
                subject: m.subject,
                reply: m.reply,
                queues: m.queues,
                headers: hdr,
                size_token: m.size_token,
                payload: &buf[after..end],
                payload_offset: after,
            };
            return Ok(Parsed::Op(RouteOp::Msg(msg), end + 2));
        }
        _ => return Err(RouteParseError::UnknownOp),
    };
    Ok(Parsed::Op(op, after))
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', r @ ..] = s {
        s = r;
    }
    while let [r @ .., b' ' | b'\t'] = s {
        s = r;
    }
    s
}

fn bad_msg(headers: bool, what: &str, rest: &[u8]) -> RouteParseError {
    let f = if headers {
        "processRoutedHeaderMsgArgs"
    } else {
        "processRoutedMsgArgs"
    };
    RouteParseError::BadArgs(format!(
        "{f} Bad or Missing {what}: '{}'",
        String::from_utf8_lossy(rest)
    ))
}

struct MsgArgs<'a> {
    account: &'a [u8],
    subject: &'a [u8],
    reply: Option<&'a [u8]>,
    queues: SmallVec<[&'a [u8]; 4]>,
    hdr_token: Option<&'a [u8]>,
    size_token: &'a [u8],
}

/// The arguments of `RMSG`/`HMSG` (nats-server's `processRoutedMsgArgs` and
/// `processRoutedHeaderMsgArgs`).
fn parse_msg_args(
    rest: &[u8],
    headers: bool,
    dialect: Dialect,
) -> Result<MsgArgs<'_>, RouteParseError> {
    let mut a = split_args(rest);
    if dialect == Dialect::Leaf {
        // No account on a leafnode connection: the same arguments, one fewer.
        a.insert(0, b"");
    }
    let sizes = if headers { 2 } else { 1 };
    let f = match (dialect, headers) {
        (Dialect::Route, true) => "processRoutedHeaderMsgArgs",
        (Dialect::Route, false) => "processRoutedMsgArgs",
        (Dialect::Leaf, true) => "processLeafHeaderMsgArgs",
        (Dialect::Leaf, false) => "processLeafMsgArgs",
    };
    if a.len() < 2 + sizes {
        return Err(RouteParseError::BadArgs(format!(
            "{f} Parse Error: '{}'",
            String::from_utf8_lossy(rest)
        )));
    }
    let n = a.len();
    let size_token = a[n - 1];
    let hdr_token = headers.then(|| a[n - 2]);
    let middle = &a[2..n - sizes];
    let (reply, queues) = match middle.len() {
        0 => (None, SmallVec::new()),
        1 => (Some(middle[0]), SmallVec::new()),
        _ => match middle[0] {
            b"+" => (Some(middle[1]), middle[2..].iter().copied().collect()),
            b"|" => (None, middle[1..].iter().copied().collect()),
            _ => {
                return Err(RouteParseError::BadArgs(format!(
                    "{f} Bad or Missing Reply Indicator: '{}'",
                    String::from_utf8_lossy(middle[0])
                )))
            }
        },
    };
    Ok(MsgArgs {
        account: a[0],
        subject: a[1],
        reply,
        queues,
        hdr_token,
        size_token,
    })
}

/// Appends `RS+ <account> <subject>[ <queue> <weight>]\r\n`.
pub fn write_sub(out: &mut Vec<u8>, account: &[u8], subject: &[u8], queue: Option<(&[u8], u32)>) {
    write_interest(
        out,
        b"RS+ ",
        Some(account),
        subject,
        queue.map(|(q, w)| (q, Some(w))),
    );
}

/// Appends `RS- <account> <subject>[ <queue>]\r\n`.
pub fn write_unsub(out: &mut Vec<u8>, account: &[u8], subject: &[u8], queue: Option<&[u8]>) {
    write_interest(
        out,
        b"RS- ",
        Some(account),
        subject,
        queue.map(|q| (q, None)),
    );
}

/// Appends `LS+ <subject>[ <queue> <weight>]\r\n` (leafnode interest: no account).
pub fn write_leaf_sub(out: &mut Vec<u8>, subject: &[u8], queue: Option<(&[u8], u32)>) {
    write_interest(
        out,
        b"LS+ ",
        None,
        subject,
        queue.map(|(q, w)| (q, Some(w))),
    );
}

/// Appends `LS- <subject>[ <queue>]\r\n`.
pub fn write_leaf_unsub(out: &mut Vec<u8>, subject: &[u8], queue: Option<&[u8]>) {
    write_interest(out, b"LS- ", None, subject, queue.map(|q| (q, None)));
}

/// One interest line: `op`, the account if any, the subject, the queue and its weight if
/// any.
fn write_interest(
    out: &mut Vec<u8>,
    op: &[u8],
    account: Option<&[u8]>,
    subject: &[u8],
    queue: Option<(&[u8], Option<u32>)>,
) {
    out.extend_from_slice(op);
    if let Some(a) = account {
        out.extend_from_slice(a);
        out.push(b' ');
    }
    out.extend_from_slice(subject);
    if let Some((q, w)) = queue {
        out.push(b' ');
        out.extend_from_slice(q);
        if let Some(w) = w {
            out.push(b' ');
            out.extend_from_slice(itoa::Buffer::new().format(w).as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// What goes on one `RMSG`/`HMSG` line.
#[derive(Debug, Clone, Copy)]
pub struct RmsgLine<'a> {
    /// Account name.
    pub account: &'a [u8],
    /// Subject.
    pub subject: &'a [u8],
    /// Reply subject.
    pub reply: Option<&'a [u8]>,
    /// Queue groups the receiver must deliver to (one member each).
    pub queues: &'a [&'a [u8]],
    /// `HMSG`: the header size token.
    pub header_token: Option<&'a [u8]>,
    /// The total size token.
    pub size_token: &'a [u8],
}

/// Appends an `RMSG`/`HMSG` control line (see the module docs for the forms).
pub fn write_rmsg_line(out: &mut Vec<u8>, l: &RmsgLine<'_>) {
    write_msg_line_in(out, l, Dialect::Route);
}

/// Appends a leafnode `LMSG`/`HMSG` control line: the route forms without the account
/// (`l.account` is not written; see [`crate::protocol::leaf`]).
pub fn write_lmsg_line(out: &mut Vec<u8>, l: &RmsgLine<'_>) {
    write_msg_line_in(out, l, Dialect::Leaf);
}

fn write_msg_line_in(out: &mut Vec<u8>, l: &RmsgLine<'_>, dialect: Dialect) {
    out.extend_from_slice(match (l.header_token.is_some(), dialect) {
        (true, _) => b"HMSG ",
        (false, Dialect::Route) => b"RMSG ",
        (false, Dialect::Leaf) => b"LMSG ",
    });
    if dialect == Dialect::Route {
        out.extend_from_slice(l.account);
        out.push(b' ');
    }
    out.extend_from_slice(l.subject);
    out.push(b' ');
    if l.queues.is_empty() {
        if let Some(r) = l.reply {
            out.extend_from_slice(r);
            out.push(b' ');
        }
    } else {
        match l.reply {
            Some(r) => {
                out.extend_from_slice(b"+ ");
                out.extend_from_slice(r);
                out.push(b' ');
            }
            None => out.extend_from_slice(b"| "),
        }
        for q in l.queues {
            out.extend_from_slice(q);
            out.push(b' ');
        }
    }
    super::msg::write_sizes(out, l.header_token, l.size_token);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(b: &[u8]) -> RouteOp<'_> {
        match parse(b, 4096, 1 << 20).unwrap() {
            Parsed::Op(op, _) => op,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn subs_and_unsubs() {
        assert_eq!(
            one(b"RS+ $G foo\r\n"),
            RouteOp::Sub {
                account: b"$G",
                subject: b"foo",
                queue: None
            }
        );
        assert_eq!(
            one(b"RS+ $G bar q 2\r\n"),
            RouteOp::Sub {
                account: b"$G",
                subject: b"bar",
                queue: Some((b"q", 2))
            }
        );
        assert_eq!(
            one(b"LS+ orig $G bar\r\n"),
            RouteOp::Sub {
                account: b"$G",
                subject: b"bar",
                queue: None
            }
        );
        assert_eq!(
            one(b"RS- $G bar q\r\n"),
            RouteOp::Unsub {
                account: b"$G",
                subject: b"bar",
                queue: Some(b"q")
            }
        );
        assert!(parse(b"RS+ $G\r\n", 4096, 10).is_err());
        assert!(parse(b"RS+ $G a q x\r\n", 4096, 10).is_err());
        assert!(parse(b"XYZ\r\n", 4096, 10).is_err());
    }

    #[test]
    fn messages_in_every_form() {
        let RouteOp::Msg(m) = one(b"RMSG $G foo + r q1 q2 2\r\nhi\r\n") else {
            panic!()
        };
        assert_eq!(
            (m.reply, &m.queues[..]),
            (Some(&b"r"[..]), &[&b"q1"[..], b"q2"][..])
        );
        assert_eq!(m.payload, b"hi");
        let RouteOp::Msg(m) = one(b"RMSG $G foo | q1 2\r\nhi\r\n") else {
            panic!()
        };
        assert_eq!((m.reply, m.queues.len()), (None, 1));
        let RouteOp::Msg(m) = one(b"RMSG $G foo r 2\r\nhi\r\n") else {
            panic!()
        };
        assert_eq!((m.reply, m.queues.len()), (Some(&b"r"[..]), 0));
        let RouteOp::Msg(m) = one(b"HMSG $G foo + r g 12 14\r\nNATS/1.0\r\n\r\nhi\r\n") else {
            panic!()
        };
        assert_eq!(m.headers, Some((12, &b"12"[..])));
        assert_eq!(m.payload.len(), 14);
        assert_eq!(
            parse(b"RMSG $G foo 2\r\nh", 4096, 10),
            Ok(Parsed::Incomplete { need: Some(19) })
        );
        assert_eq!(
            parse(b"RMSG $G fo", 4096, 10),
            Ok(Parsed::Incomplete { need: None })
        );
        assert!(parse(b"RMSG $G foo x 5 2\r\nhi\r\n", 4096, 10).is_err());
        assert!(parse(b"RMSG $G foo 2\r\nhiXX", 4096, 10).is_err());
        assert!(parse(b"HMSG $G foo 9 2\r\nhi\r\n", 4096, 10).is_err());
    }

    #[test]
    fn lines_as_nats_server_writes_them() {
        let mut b = Vec::new();
        write_sub(&mut b, b"$G", b"bar", Some((b"q", 2)));
        write_unsub(&mut b, b"$G", b"bar", Some(b"q"));
        write_sub(&mut b, b"$G", b"foo", None);
        write_rmsg_line(
            &mut b,
            &RmsgLine {
                account: b"$G",
                subject: b"qq",
                reply: Some(b"rr"),
                queues: &[b"g"],
                header_token: None,
                size_token: b"2",
            },
        );
        write_rmsg_line(
            &mut b,
            &RmsgLine {
                account: b"$G",
                subject: b"qq",
                reply: None,
                queues: &[b"g"],
                header_token: Some(b"12"),
                size_token: b"14",
            },
        );
        write_rmsg_line(
            &mut b,
            &RmsgLine {
                account: b"$G",
                subject: b"baz",
                reply: Some(b"r"),
                queues: &[],
                header_token: None,
                size_token: b"2",
            },
        );
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "RS+ $G bar q 2\r\nRS- $G bar q\r\nRS+ $G foo\r\nRMSG $G qq + rr g 2\r\n\
             HMSG $G qq | g 12 14\r\nRMSG $G baz r 2\r\n"
        );
    }
}
