//! The client protocol parser: bytes in, [`ClientOp`]s out, without copying.
//!
//! The reader thread hands [`Parser::parse`] the unconsumed part of its read buffer; the parser
//! returns the next complete operation with slices *into that buffer* (subject, reply, sid,
//! payload...), and how many bytes it used. Nothing is copied or allocated. A control line is
//! found with `memchr` (SIMD), and a payload is never scanned: its declared size says where it
//! ends, as in nats-server's parser, which "jumps over" payloads.
//!
//! When an operation is not complete yet, the parser says how many bytes it used (usually 0:
//! the caller keeps the partial operation at the front of its buffer and appends the next
//! read) and, for a `PUB` waiting for its payload, remembers the parsed control line so it is
//! not parsed twice. The only bytes ever dropped before an operation completes are the junk
//! nats-server ignores after `PING`, `PONG` and `+OK`.
//!
//! Behaviour follows nats-server 2.9 (`server/parser.go`, `server/client.go`), byte for byte
//! where a client can observe it:
//! - op names are case-insensitive; `PUB`/`HPUB`/`SUB`/`UNSUB`/`-ERR` need at least one space
//!   or tab after the name, `CONNECT`/`INFO` take any number (including none);
//! - arguments are separated by any run of spaces and tabs; a control line ends at LF, and one
//!   CR is dropped before it (a bare LF is accepted);
//! - anything after `PING`, `PONG` or `+OK` up to the LF is ignored;
//! - a payload must be followed by exactly CR LF;
//! - the argument part of a control line may be at most `max_control_line` bytes.
//!
//! See the client protocol documentation ("Protocol conventions", "PUB", "HPUB", "SUB",
//! "UNSUB", "CONNECT") for the operations themselves.

use memchr::memchr;

/// One operation sent by a client. Slices point into the caller's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOp<'a> {
    /// `CONNECT <json>`: the raw JSON (may be empty or invalid; the caller parses it).
    Connect(&'a [u8]),
    /// `PUB` or `HPUB` with its payload.
    Pub(Publish<'a>),
    /// `SUB <subject> [queue group] <sid>`.
    Sub {
        /// Subject, possibly with wildcards; not validated here.
        subject: &'a [u8],
        /// Queue group name.
        queue: Option<&'a [u8]>,
        /// Subscription id chosen by the client.
        sid: &'a [u8],
    },
    /// `UNSUB <sid> [max_msgs]`.
    Unsub {
        /// Subscription id.
        sid: &'a [u8],
        /// Parsed `max_msgs`; `None` when absent or not a number (both mean "now", as in
        /// nats-server, where an unparsable count reads as -1).
        max: Option<u64>,
    },
    /// `PING`.
    Ping,
    /// `PONG`.
    Pong,
    /// `INFO <json>` sent by a client (accepted and ignored by nats-server when valid JSON).
    Info(&'a [u8]),
    /// `+OK` sent by a client (ignored).
    Ok,
    /// `-ERR <message>` sent by a client (nats-server logs it and closes the connection).
    Err(&'a [u8]),
}

/// A `PUB` or `HPUB`, payload included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publish<'a> {
    /// The control line's arguments (for trace logs).
    pub args: &'a [u8],
    /// Subject; not validated here (the caller applies pedantic checks).
    pub subject: &'a [u8],
    /// Reply subject.
    pub reply: Option<&'a [u8]>,
    /// For `HPUB`: the header length in bytes (it includes the `NATS/1.0` line) and its token
    /// as the client wrote it.
    pub headers: Option<(usize, &'a [u8])>,
    /// The total payload size token as the client wrote it (nats-server echoes it verbatim in
    /// `MSG`, leading zeros included).
    pub size_token: &'a [u8],
    /// The payload: headers then body for `HPUB`; exactly the declared size.
    pub payload: &'a [u8],
    /// Offset of `payload` from the start of the slice given to [`Parser::parse`].
    pub payload_offset: usize,
}

/// Why parsing stopped. Every error ends the connection; what the client is told first
/// differs, exactly as in nats-server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not an operation a client may send, or a payload not followed by CR LF:
    /// `-ERR 'Unknown Protocol Operation'`.
    UnknownOp,
    /// The arguments are longer than `max_control_line`: `-ERR 'maximum control line exceeded'`.
    MaxControlLine,
    /// `PUB`/`HPUB` larger than `max_payload`: `-ERR 'Maximum Payload Violation'`.
    MaxPayload {
        /// Declared size in bytes.
        size: usize,
    },
    /// Malformed arguments (wrong count, bad size): nats-server closes without an `-ERR`.
    BadArgs(&'static str),
    /// `HPUB` from a client that did not declare `headers` in `CONNECT`: closed without an
    /// `-ERR`, like nats-server.
    HeadersNotSupported,
}

/// One step of parsing: bytes used, and the operation completed, if any.
#[derive(Debug)]
pub struct Step<'a> {
    /// Bytes of the input consumed (belonging to `op`, or skipped).
    pub consumed: usize,
    /// The completed operation; `None` means "need more bytes".
    pub op: Option<ClientOp<'a>>,
    /// Set on the step that parsed a `PUB`/`HPUB` control line, whether or not its payload
    /// is complete yet: nats-server acts on the control line at once (pedantic subject
    /// check, trace), before the payload arrives. A step with a `pub_line` and no `op` does
    /// not necessarily mean "need more bytes": call again (the next call returns the
    /// payload's outcome, or asks for more).
    pub pub_line: Option<PubLine<'a>>,
}

/// A parsed `PUB`/`HPUB` control line (see [`Step::pub_line`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PubLine<'a> {
    /// `true` for `HPUB`.
    pub headers: bool,
    /// The control line's arguments.
    pub args: &'a [u8],
    /// The subject.
    pub subject: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pub,
    HPub,
    Sub,
    Unsub,
    Ping,
    Pong,
    Connect,
    Info,
    PlusOk,
    MinusErr,
}

impl Kind {
    fn name(self) -> &'static [u8] {
        match self {
            Kind::Pub => b"PUB",
            Kind::HPub => b"HPUB",
            Kind::Sub => b"SUB",
            Kind::Unsub => b"UNSUB",
            Kind::Ping => b"PING",
            Kind::Pong => b"PONG",
            Kind::Connect => b"CONNECT",
            Kind::Info => b"INFO",
            Kind::PlusOk => b"+OK",
            Kind::MinusErr => b"-ERR",
        }
    }
}

/// Byte range relative to the start of the pending operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn of(self, buf: &[u8]) -> &[u8] {
        &buf[self.start..self.end]
    }
}

/// A parsed `PUB`/`HPUB` control line whose payload has not fully arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PendingPub {
    args: Span,
    subject: Span,
    reply: Option<Span>,
    headers: Option<(usize, Span)>,
    size_token: Span,
    size: usize,
    /// Offset of the payload (just after the control line's LF).
    payload_start: usize,
}

impl PendingPub {
    /// Total bytes of the operation: control line, payload, CR LF.
    fn total_len(&self) -> usize {
        self.payload_start + self.size + 2
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of an operation.
    Start,
    /// Inside a `PING`/`PONG`/`+OK` line whose LF has not arrived; the bytes seen were dropped.
    SkipLine(Kind),
    /// A `PUB`/`HPUB` control line is parsed; waiting for the payload.
    Payload(PendingPub),
}

/// The parser for one client connection. See the module docs.
///
/// Each call takes the bytes from where the previous one stopped and returns one step:
/// what it consumed and, when complete, the operation, whose arguments and payload borrow
/// the caller's buffer (no copy).
///
/// ```
/// use beaver::protocol::{ClientOp, Parser};
///
/// let mut parser = Parser::new(4096, 1024 * 1024);
/// let input = b"SUB greeting 1\r\nPUB greeting 5\r\nhello\r\nPI";
/// let mut ops = Vec::new();
/// let mut at = 0;
/// loop {
///     let step = parser.parse(&input[at..]).expect("valid input");
///     at += step.consumed;
///     match step.op {
///         Some(op) => ops.push(op),
///         // A PUB's control line alone (its payload follows): call again.
///         None if step.pub_line.is_some() => continue,
///         // The rest is an operation cut off by the end of the read.
///         None => break,
///     }
/// }
/// assert_eq!(
///     ops[0],
///     ClientOp::Sub { subject: b"greeting", queue: None, sid: b"1" }
/// );
/// let ClientOp::Pub(publish) = &ops[1] else { panic!("a PUB") };
/// assert_eq!((publish.subject, publish.payload), (&b"greeting"[..], &b"hello"[..]));
/// // `PI` waits for the rest of its `PING`, presented again with the next read's bytes.
/// assert_eq!(&input[at..], b"PI");
/// ```
#[derive(Debug, Clone)]
pub struct Parser {
    state: State,
    max_control_line: usize,
    max_payload: usize,
    headers: bool,
}

/// Most arguments any client operation has (`HPUB subject reply hdr_len total_len`).
const MAX_ARGS: usize = 4;

impl Parser {
    /// A parser enforcing `max_control_line` (bytes of arguments in one control line) and
    /// `max_payload` (bytes of one message, headers included).
    pub fn new(max_control_line: usize, max_payload: usize) -> Self {
        Parser {
            state: State::Start,
            max_control_line,
            max_payload,
            headers: false,
        }
    }

    /// Changes the limits (after a configuration reload); applies from the next operation.
    pub fn set_limits(&mut self, max_control_line: usize, max_payload: usize) {
        self.max_control_line = max_control_line;
        self.max_payload = max_payload;
    }

    /// Allows `HPUB` (set after a `CONNECT` with `"headers": true`).
    pub fn set_headers(&mut self, headers: bool) {
        self.headers = headers;
    }

    /// When waiting for a payload: the total bytes the pending operation needs, counted from
    /// the start of the slice the next [`Parser::parse`] call will get. Lets the reader size its
    /// buffer once for a large message.
    pub fn bytes_needed(&self) -> Option<usize> {
        match self.state {
            State::Payload(p) => Some(p.total_len()),
            _ => None,
        }
    }

    /// Parses the next operation from `buf`, which must start where the previous call's
    /// `consumed` ended (so a partial operation is presented again, with more bytes after it).
    pub fn parse<'a>(&mut self, buf: &'a [u8]) -> Result<Step<'a>, ParseError> {
        match self.state {
            State::Start => self.parse_start(buf),
            State::SkipLine(kind) => Ok(match memchr(b'\n', buf) {
                Some(lf) => {
                    self.state = State::Start;
                    Step::op(lf + 1, simple_op(kind))
                }
                None => Step::skip(buf.len()),
            }),
            State::Payload(pending) => self.finish_payload(buf, pending),
        }
    }

    fn parse_start<'a>(&mut self, buf: &'a [u8]) -> Result<Step<'a>, ParseError> {
        let need_more = Ok(Step::skip(0));
        let Some(kind) = identify(buf)? else {
            return need_more;
        };
        let name_len = kind.name().len();
        match kind {
            Kind::Ping | Kind::Pong | Kind::PlusOk => {
                return Ok(match memchr(b'\n', &buf[name_len..]) {
                    Some(i) => Step::op(name_len + i + 1, simple_op(kind)),
                    None => {
                        // nats-server ignores every byte up to the LF: drop them now rather
                        // than let junk accumulate in the buffer.
                        self.state = State::SkipLine(kind);
                        Step::skip(buf.len())
                    }
                });
            }
            Kind::Pub | Kind::HPub | Kind::Sub | Kind::Unsub | Kind::MinusErr => {
                match buf.get(name_len) {
                    None => return need_more,
                    Some(b' ' | b'\t') => {}
                    Some(_) => return Err(ParseError::UnknownOp),
                }
            }
            Kind::Connect | Kind::Info => {}
        }
        // Skip the separator run; the arguments start after it.
        let arg_start = name_len
            + buf[name_len..]
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
        // The first byte after the blanks always belongs to the arguments in nats-server's
        // state machine, even an LF: the line ends at the next LF after it.
        let first_lf = match buf.get(arg_start) {
            Some(_) => memchr(b'\n', &buf[arg_start + 1..]).map(|i| arg_start + 1 + i),
            None => None,
        };
        let Some(lf) = first_lf else {
            // Incomplete line. nats-server checks the length of a partial argument as it goes
            // (with the same CR rule as below). It would skip blanks before the arguments
            // forever; bounding them by the same limit keeps our buffer bounded too.
            let partial = &buf[arg_start..];
            let too_long = match partial.split_first() {
                None => arg_start - name_len > self.max_control_line,
                Some((_, rest)) => {
                    partial.len() - usize::from(rest.contains(&b'\r')) > self.max_control_line
                }
            };
            if too_long {
                return Err(ParseError::MaxControlLine);
            }
            return need_more;
        };
        let mut arg_end = lf;
        // nats-server drops one byte before the LF if it saw a CR anywhere in the arguments
        // (after their first byte): usually the CR of CR LF.
        if lf > arg_start + 1 && buf[arg_start + 1..lf].contains(&b'\r') {
            arg_end -= 1;
        }
        let args = &buf[arg_start..arg_end];
        if args.len() > self.max_control_line {
            return Err(ParseError::MaxControlLine);
        }
        let line_len = lf + 1;
        let op = match kind {
            Kind::Connect => ClientOp::Connect(args),
            Kind::Info => ClientOp::Info(args),
            Kind::MinusErr => ClientOp::Err(args),
            Kind::Sub => {
                let (a, n) = split_args(args, arg_start, true);
                match n {
                    2 => ClientOp::Sub {
                        subject: a[0].of(buf),
                        queue: None,
                        sid: a[1].of(buf),
                    },
                    3 => ClientOp::Sub {
                        subject: a[0].of(buf),
                        queue: Some(a[1].of(buf)),
                        sid: a[2].of(buf),
                    },
                    _ => return Err(ParseError::BadArgs("processSub Parse Error")),
                }
            }
            Kind::Unsub => {
                let (a, n) = split_args(args, arg_start, true);
                match n {
                    1 => ClientOp::Unsub {
                        sid: a[0].of(buf),
                        max: None,
                    },
                    2 => ClientOp::Unsub {
                        sid: a[0].of(buf),
                        max: parse_size(a[1].of(buf)).map(|m| m as u64),
                    },
                    _ => return Err(ParseError::BadArgs("processUnsub Parse Error")),
                }
            }
            Kind::Pub | Kind::HPub => {
                let pending = self.parse_pub_args(kind, buf, arg_start, arg_end, line_len)?;
                let line = PubLine {
                    headers: kind == Kind::HPub,
                    args: pending.args.of(buf),
                    subject: pending.subject.of(buf),
                };
                return Ok(match self.finish_payload(buf, pending) {
                    Ok(mut step) => {
                        step.pub_line = Some(line);
                        step
                    }
                    // A bad payload end: report the control line first (the caller acts on
                    // it, as nats-server does before it sees the payload), and the error on
                    // the next call.
                    Err(_) => {
                        self.state = State::Payload(pending);
                        Step {
                            consumed: 0,
                            op: None,
                            pub_line: Some(line),
                        }
                    }
                });
            }
            Kind::Ping | Kind::Pong | Kind::PlusOk => unreachable!("handled above"),
        };
        Ok(Step::op(line_len, op))
    }

    fn parse_pub_args(
        &self,
        kind: Kind,
        buf: &[u8],
        arg_start: usize,
        arg_end: usize,
        payload_start: usize,
    ) -> Result<PendingPub, ParseError> {
        let args = &buf[arg_start..arg_end];
        // PUB arguments are split on spaces and tabs only (nats-server's processPub).
        let (a, n) = split_args(args, arg_start, false);
        let span_args = Span {
            start: arg_start,
            end: arg_end,
        };
        let pending = if kind == Kind::Pub {
            let (subject, reply, size_token) = match n {
                2 => (a[0], None, a[1]),
                3 => (a[0], Some(a[1]), a[2]),
                _ => return Err(ParseError::BadArgs("processPub Parse Error")),
            };
            let size = parse_size(size_token.of(buf))
                .ok_or(ParseError::BadArgs("processPub Bad or Missing Size"))?;
            PendingPub {
                args: span_args,
                subject,
                reply,
                headers: None,
                size_token,
                size,
                payload_start,
            }
        } else {
            if !self.headers {
                return Err(ParseError::HeadersNotSupported);
            }
            let (subject, reply, hdr_token, size_token) = match n {
                3 => (a[0], None, a[1], a[2]),
                4 => (a[0], Some(a[1]), a[2], a[3]),
                _ => return Err(ParseError::BadArgs("processHeaderPub Parse Error")),
            };
            let hdr = parse_size(hdr_token.of(buf)).ok_or(ParseError::BadArgs(
                "processHeaderPub Bad or Missing Header Size",
            ))?;
            let size = parse_size(size_token.of(buf)).ok_or(ParseError::BadArgs(
                "processHeaderPub Bad or Missing Total Size",
            ))?;
            if hdr > size {
                return Err(ParseError::BadArgs(
                    "processHeaderPub Header Size larger then TotalSize",
                ));
            }
            PendingPub {
                args: span_args,
                subject,
                reply,
                headers: Some((hdr, hdr_token)),
                size_token,
                size,
                payload_start,
            }
        };
        if pending.size > self.max_payload {
            return Err(ParseError::MaxPayload { size: pending.size });
        }
        Ok(pending)
    }

    /// Completes a `PUB`/`HPUB` once its payload and CR LF are in `buf`.
    fn finish_payload<'a>(&mut self, buf: &'a [u8], p: PendingPub) -> Result<Step<'a>, ParseError> {
        let end = p.payload_start + p.size;
        // Check the CR LF as soon as each byte is here, as nats-server does: a client that
        // sends a wrong size learns it without waiting for more bytes.
        if buf.len() > end && buf[end] != b'\r' {
            self.state = State::Start;
            return Err(ParseError::UnknownOp);
        }
        if buf.len() > end + 1 && buf[end + 1] != b'\n' {
            self.state = State::Start;
            return Err(ParseError::UnknownOp);
        }
        if buf.len() < end + 2 {
            self.state = State::Payload(p);
            return Ok(Step::skip(0));
        }
        self.state = State::Start;
        Ok(Step::op(
            end + 2,
            ClientOp::Pub(Publish {
                args: p.args.of(buf),
                subject: p.subject.of(buf),
                reply: p.reply.map(|r| r.of(buf)),
                // nats-server treats a header length of 0 as "no headers" (plain MSG).
                headers: p
                    .headers
                    .filter(|&(n, _)| n > 0)
                    .map(|(n, t)| (n, t.of(buf))),
                size_token: p.size_token.of(buf),
                payload: &buf[p.payload_start..end],
                payload_offset: p.payload_start,
            }),
        ))
    }
}

impl<'a> Step<'a> {
    fn op(consumed: usize, op: ClientOp<'a>) -> Self {
        Step {
            consumed,
            op: Some(op),
            pub_line: None,
        }
    }

    fn skip(consumed: usize) -> Self {
        Step {
            consumed,
            op: None,
            pub_line: None,
        }
    }
}

fn simple_op(kind: Kind) -> ClientOp<'static> {
    match kind {
        Kind::Ping => ClientOp::Ping,
        Kind::Pong => ClientOp::Pong,
        Kind::PlusOk => ClientOp::Ok,
        _ => unreachable!("only PING, PONG and +OK are simple"),
    }
}

/// Which operation `buf` starts with: `Ok(None)` if the bytes so far are a prefix of a valid
/// name (need more), an error as soon as they cannot be.
fn identify(buf: &[u8]) -> Result<Option<Kind>, ParseError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let kind = match first.to_ascii_uppercase() {
        b'P' => match buf.get(1).map(u8::to_ascii_uppercase) {
            None => return Ok(None),
            Some(b'U') => Kind::Pub,
            Some(b'I') => Kind::Ping,
            Some(b'O') => Kind::Pong,
            Some(_) => return Err(ParseError::UnknownOp),
        },
        b'H' => Kind::HPub,
        b'S' => Kind::Sub,
        b'U' => Kind::Unsub,
        b'C' => Kind::Connect,
        b'I' => Kind::Info,
        b'+' => Kind::PlusOk,
        b'-' => Kind::MinusErr,
        _ => return Err(ParseError::UnknownOp),
    };
    let name = kind.name();
    let n = name.len().min(buf.len());
    if !buf[..n].eq_ignore_ascii_case(&name[..n]) {
        return Err(ParseError::UnknownOp);
    }
    Ok((n == name.len()).then_some(kind))
}

/// Splits arguments on runs of spaces and tabs (and CR/LF for SUB/UNSUB, as nats-server's
/// `splitArg` does). Returns spans relative to the operation start and the argument count;
/// counts past [`MAX_ARGS`] are reported but not stored. No allocation.
fn split_args(args: &[u8], offset: usize, crlf_too: bool) -> ([Span; MAX_ARGS], usize) {
    let mut out = [Span { start: 0, end: 0 }; MAX_ARGS];
    let mut n = 0;
    let mut start: Option<usize> = None;
    let is_sep = |b: u8| b == b' ' || b == b'\t' || (crlf_too && (b == b'\r' || b == b'\n'));
    for (i, &b) in args.iter().enumerate() {
        if is_sep(b) {
            if let Some(s) = start.take() {
                if n < MAX_ARGS {
                    out[n] = Span {
                        start: offset + s,
                        end: offset + i,
                    };
                }
                n += 1;
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        if n < MAX_ARGS {
            out[n] = Span {
                start: offset + s,
                end: offset + args.len(),
            };
        }
        n += 1;
    }
    (out, n)
}

/// nats-server's `parseSize`: 1 to 9 ASCII digits, nothing else.
pub fn parse_size(token: &[u8]) -> Option<usize> {
    if token.is_empty() || token.len() > 9 {
        return None;
    }
    token.iter().try_fold(0usize, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + usize::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests;
