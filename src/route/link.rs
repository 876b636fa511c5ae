//! What the reader of a server-to-server connection does whatever its protocol (a route, a
//! leafnode connection; see [`crate::protocol::route::Dialect`]): reading, straight towards
//! the end of a message whose size is known, walking the operations of a read, counting
//! what came in, and the PING timer. `route::conn` and `leaf::conn` build their readers on
//! it; what an operation means is theirs.

use crate::client::Client;
use crate::close::CloseReason;
use crate::protocol::route::{parse_with, Dialect, Parsed, RouteOp, RouteParseError};
use crate::shared::Shared;
use crate::socket::{ReadBuffer, Socket};
use bytes::Bytes;
use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest read: such a connection carries many clients' messages.
const MAX_READ: usize = 256 * 1024;
/// Smallest read (and the first).
const MIN_READ: usize = 4096;

/// The reader's side of one server-to-server connection.
pub(crate) struct Link {
    /// The connection's shared half.
    pub(crate) client: Arc<Client>,
    /// The socket, shared with the writers (through `Client::socket`).
    pub(crate) socket: Arc<Socket>,
    buf: ReadBuffer,
    /// Bytes the operation at the front of `buf` takes in all, when known (a message whose
    /// payload is still arriving); 0 otherwise.
    need: usize,
    dialect: Dialect,
    pings_out: u32,
    ping_sent: Option<Instant>,
    /// When the next PING is due.
    pub(crate) next_ping: Instant,
    /// Messages and bytes received since the counters were last published.
    in_msgs: u64,
    in_bytes: u64,
    /// TLS (a route's `cluster.tls`): ciphertext read from the socket, before decryption;
    /// empty without TLS.
    tls_in: Vec<u8>,
}

/// A server-to-server connection's reader, as [`run`] drives it: what its protocol does
/// with an operation, and the little else that differs between routes and leafnodes.
pub(crate) trait Reader {
    /// The reader's [`Link`].
    fn link(&mut self) -> &mut Link;
    /// Handles one operation (`at`: where it starts in `chunk`, the frozen read buffer).
    fn handle(&mut self, op: RouteOp<'_>, chunk: &Bytes, at: usize) -> Result<(), CloseReason>;
    /// Deadlines of its own (a handshake's, an authentication's), checked after each read
    /// before the PING timer; `Ok(false)`: no PING timer yet (the handshake is not done).
    fn deadlines(&mut self) -> Result<bool, CloseReason>;
    /// Stages bytes for the other server.
    fn send(&mut self, bytes: &[u8]);
    /// Queues what was staged (without stalling on a slow local subscriber).
    fn flush(&mut self);
    /// Bytes staged and not flushed yet.
    fn staged(&self) -> usize;
    /// Whether the connection must end now (closed by another thread, shutdown), and why.
    fn ending(&self) -> Option<CloseReason>;
    /// The server's shared state (for the PING settings).
    fn shared(&self) -> &Shared;
    /// The protocol's name in logs ("Route", "Leafnode").
    fn what(&self) -> &'static str;
    /// Whether to trace operations.
    fn trace(&self) -> bool;
}

/// Runs `r`'s reader until the connection ends, and returns why: read, handle every
/// complete operation (flushing every `FLUSH_STAGED` bytes), publish the counters, check
/// the deadlines and the PING timer, flush; again.
pub(crate) fn run<R: Reader>(r: &mut R) -> CloseReason {
    loop {
        match r.link().read() {
            Err(reason) => return reason,
            Ok(Some(chunk)) => {
                if let Err(reason) = process(r, chunk) {
                    return reason;
                }
            }
            Ok(None) => {}
        }
        r.link().publish_counters();
        let timers = timers(r);
        // First, so that an error the timers staged (stale, timeout) goes out.
        r.flush();
        if let Err(reason) = timers {
            return reason;
        }
        if let Some(reason) = r.ending() {
            return reason;
        }
    }
}

/// The reader's own deadlines, then the PING timer.
fn timers<R: Reader>(r: &mut R) -> Result<(), CloseReason> {
    if !r.deadlines()? {
        return Ok(());
    }
    let config = r.shared().config();
    match r.link().ping_due(&config) {
        Ping::NotYet => {}
        Ping::Stale => {
            log::debug!("{} - Stale Client Connection - Closing", r_prefix(r));
            r.send(crate::protocol::err::STALE_CONNECTION);
            return Err(CloseReason::StaleConnection);
        }
        Ping::Send => {
            if r.trace() {
                log::trace!("{} - ->> [PING]", r_prefix(r));
            }
            r.send(crate::protocol::PING);
        }
    }
    Ok(())
}

/// Handles every complete operation in `chunk` (the read buffer, frozen), and gives back
/// the start of one the next read completes.
fn process<R: Reader>(r: &mut R, chunk: Bytes) -> Result<(), CloseReason> {
    let mut pos = 0;
    let result = loop {
        let (op, used) = match r.link().next_op(&chunk, pos) {
            Ok(Some(step)) => step,
            Ok(None) => break Ok(()),
            Err(e) => {
                log::error!("{} - {} parser ERROR: {e}", r_prefix(r), r.what());
                r.send(b"-ERR 'Unknown Protocol Operation'\r\n");
                break Err(CloseReason::ParseError);
            }
        };
        let at = pos;
        pos += used;
        if let Err(reason) = r.handle(op, &chunk, at) {
            break Err(reason);
        }
        if r.staged() >= crate::delivery::FLUSH_STAGED {
            r.flush();
        }
    };
    if result.is_ok() {
        r.link().keep(chunk, pos);
    }
    result
}

/// `r`'s log prefix (its client's).
fn r_prefix<R: Reader>(r: &mut R) -> String {
    r.link().client.log_prefix()
}

/// What the PING timer says (see `Link::ping_due`).
enum Ping {
    /// Not yet (the socket's read timeout is set to wake the reader then).
    NotYet,
    /// Send a PING now.
    Send,
    /// Too many PINGs unanswered: the connection is stale.
    Stale,
}

impl Link {
    /// A reader for `client` on `socket`, speaking `dialect`; the first PING is due at
    /// `first_ping`.
    pub(crate) fn new(
        client: Arc<Client>,
        socket: Arc<Socket>,
        dialect: Dialect,
        first_ping: Instant,
    ) -> Link {
        Link {
            client,
            socket,
            buf: ReadBuffer::with_sizes(MIN_READ, MIN_READ, MAX_READ),
            need: 0,
            dialect,
            pings_out: 0,
            ping_sent: None,
            next_ping: first_ping,
            in_msgs: 0,
            in_bytes: 0,
            tls_in: Vec::new(),
        }
    }

    /// The TLS handshake is over: `scratch` is its read buffer, kept for the ciphertext of
    /// the reads after it.
    pub(crate) fn tls_ready(&mut self, scratch: Vec<u8>) {
        self.tls_in = scratch;
    }

    /// One blocking read (bounded by the socket's read timeout). `Ok(Some(chunk))`: the
    /// read buffer, frozen, to walk with [`Link::next_op`] and give back with
    /// [`Link::keep`]; `Ok(None)`: nothing to parse yet (a timeout, or a message still
    /// arriving: reads go straight towards its end, without parsing or copying the partial
    /// message again); `Err`: the connection ended, and why.
    pub(crate) fn read(&mut self) -> Result<Option<Bytes>, CloseReason> {
        let need = (self.need > 0).then_some(self.need);
        let read = if self.client.tls.is_some() {
            let want = self.buf.want(need);
            crate::client::tls::read_plaintext(
                &self.client,
                &self.socket,
                &mut self.buf,
                want,
                &mut self.tls_in,
            )
        } else {
            self.buf.read_from(&self.socket, need)
        };
        match read {
            Ok(0) => Err(self
                .client
                .close_reason()
                .unwrap_or(CloseReason::ClientClosed)),
            Ok(_) if self.buf.len() < self.need => Ok(None),
            Ok(_) => {
                self.need = 0;
                Ok(Some(self.buf.take()))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => {
                if let Some(r) = self.client.close_reason() {
                    return Err(r);
                }
                log::debug!("{} - Read error: {e}", self.client.log_prefix());
                Err(CloseReason::ReadError)
            }
        }
    }

    /// The operation at `pos` in `chunk` and the bytes it takes, or `None` when the rest is
    /// the start of one the next read completes (then give `chunk` back with
    /// [`Link::keep`]). Limits: the route ones (`conn::ROUTE_MAX_CONTROL_LINE`,
    /// `conn::ROUTE_MAX_PAYLOAD`).
    pub(crate) fn next_op<'c>(
        &mut self,
        chunk: &'c Bytes,
        pos: usize,
    ) -> Result<Option<(RouteOp<'c>, usize)>, RouteParseError> {
        match parse_with(
            self.dialect,
            &chunk[pos..],
            super::conn::ROUTE_MAX_CONTROL_LINE,
            super::conn::ROUTE_MAX_PAYLOAD,
        )? {
            Parsed::Op(op, used) => {
                if let RouteOp::Msg(m) = &op {
                    self.in_msgs += 1;
                    self.in_bytes += m.payload.len() as u64;
                }
                Ok(Some((op, used)))
            }
            Parsed::Incomplete { need } => {
                // Counted from the start of what is left, which goes to the front of the
                // buffer.
                self.need = need.unwrap_or(0);
                Ok(None)
            }
        }
    }

    /// Gives the read buffer back, keeping what is left from `pos` (the start of an
    /// operation the next read completes).
    pub(crate) fn keep(&mut self, chunk: Bytes, pos: usize) {
        self.buf.keep(chunk, pos);
    }

    /// Adds what came in since the last call to the connection's counters.
    pub(crate) fn publish_counters(&mut self) {
        if self.in_msgs > 0 {
            self.client.stats.inbound.add(self.in_msgs, self.in_bytes);
            (self.in_msgs, self.in_bytes) = (0, 0);
        }
    }

    /// The PING timer (every `ping_interval`, `ping_max` unanswered make the connection
    /// stale); sets the socket's read timeout to wake the reader when the next is due.
    fn ping_due(&mut self, config: &crate::config::Config) -> Ping {
        let now = Instant::now();
        if now + Duration::from_millis(5) < self.next_ping {
            let _ = self.socket.set_read_timeout(self.next_ping - now);
            return Ping::NotYet;
        }
        self.next_ping = now + config.ping_interval;
        if self.pings_out + 1 > config.effective_ping_max() {
            return Ping::Stale;
        }
        self.pings_out += 1;
        self.ping_sent = Some(now);
        let _ = self.socket.set_read_timeout(config.ping_interval);
        Ping::Send
    }

    /// The JSON of an `op` (`INFO`, `CONNECT`); bad JSON ends the connection, logged.
    pub(crate) fn decode<T: serde::de::DeserializeOwned>(
        &self,
        op: &str,
        json: &[u8],
    ) -> Result<T, CloseReason> {
        serde_json::from_slice(json).map_err(|e| {
            log::error!("{} - {op}: {e}", self.client.log_prefix());
            CloseReason::ProtocolViolation
        })
    }

    /// Traces a received operation as nats-server does (`<<- [RS+ $G foo]`, a message's
    /// control line then its payload, `CONNECT` with its secrets redacted); `+OK` and
    /// `-ERR` are logged by the reader, not traced here.
    pub(crate) fn trace_in(&self, op: &RouteOp<'_>) {
        let p = self.client.log_prefix();
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        // The account, on a route; a leafnode connection's operations have none.
        let acc = |a: &[u8]| match self.dialect {
            Dialect::Route => format!("{} ", s(a)),
            Dialect::Leaf => String::new(),
        };
        let kind = match self.dialect {
            Dialect::Route => 'R',
            Dialect::Leaf => 'L',
        };
        let text = match op {
            RouteOp::Ping => "PING".to_owned(),
            RouteOp::Pong => "PONG".to_owned(),
            RouteOp::Ok | RouteOp::Err(_) => return,
            RouteOp::Connect(json) => {
                format!("CONNECT {}", crate::protocol::redact_secrets(json))
            }
            RouteOp::Info(json) => format!("INFO {}", s(json)),
            RouteOp::Sub {
                account,
                subject,
                queue,
            } => format!(
                "{kind}S+ {}{}{}",
                acc(account),
                s(subject),
                queue.map_or_else(String::new, |(q, w)| format!(" {} {w}", s(q)))
            ),
            RouteOp::Unsub {
                account,
                subject,
                queue,
            } => format!(
                "{kind}S- {}{}{}",
                acc(account),
                s(subject),
                queue.map_or_else(String::new, |q| format!(" {}", s(q)))
            ),
            RouteOp::Msg(m) => {
                let op = match (m.headers.is_some(), kind) {
                    (true, _) => "HMSG",
                    (false, 'R') => "RMSG",
                    (false, _) => "LMSG",
                };
                log::trace!("{p} - <<- [{op} {}]", s(m.args));
                log::trace!("{p} - <<- MSG_PAYLOAD: [{:?}]", s(m.payload));
                return;
            }
        };
        log::trace!("{p} - <<- [{text}]");
    }

    /// A PONG came: nothing is outstanding, and the round trip is the connection's RTT.
    pub(crate) fn pong(&mut self) {
        self.pings_out = 0;
        if let Some(sent) = self.ping_sent.take() {
            self.client.set_rtt(sent.elapsed());
        }
    }
}
