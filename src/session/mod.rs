//! A client session: the reader thread of one client connection, from `INFO` to departure.
//!
//! It does blocking reads into a reusable buffer, parses every complete operation in it
//! without copying ([`crate::protocol::Parser`]), and acts on each: a `PUB` is matched against
//! the subscription table (through this thread's private [`MatchCache`]) and staged, per
//! destination, in the thread's [`Outbox`]; replies to the client itself (`PONG`, `+OK`,
//! `-ERR`) are staged the same way. After each read the outbox is flushed: one queue push and
//! at most one writer wake-up per destination.
//!
//! ## The read buffer
//! A [`ReadBuffer`] (shared with route connections): reads are frozen into `Bytes` and
//! parsed without copying; large payloads are shared with subscribers as slices of it. Its
//! docs say how its size adapts and why steady traffic allocates nothing.
//!
//! ## Liveness
//! The socket's read timeout is `ping_interval`; each time it expires (or data arrives) the
//! reader checks whether the client was idle for that long and sends a `PING`, closing the
//! client as stale after `ping_max` unanswered ones. No timer thread is needed.

mod connect;
mod ping;
mod publish;
mod runner;
mod subs;
pub(crate) use subs::apply_permissions;
mod tls;
mod trace;
mod websocket;

pub use runner::Session;
pub(crate) use websocket::spawn_websocket;
pub use websocket::WebSocketListener;

use crate::auth::{Permissions, PubCache};
use crate::client::{lock_session, Account, Client, Login, StallPolicy, Subscription};
use crate::close::CloseReason;
use crate::delivery::{Outbox, FLUSH_STAGED};
use crate::protocol::{self, err, go_quote, ClientOp, ConnectOptions, ParseError, Parser};
use crate::shared::{Admission, Shared};
use crate::socket::{ReadBuffer, Socket};
use crate::subjects::MatchCache;
use bytes::Bytes;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Shortest socket read timeout set (a zero timeout would mean "none").
const MIN_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1);
/// Stack size of reader threads. Matching and parsing are iterative; 256 KiB leaves room
/// for logging and the allocator (see `docs/architecture.md` for the per-connection cost).
pub const READER_STACK: usize = 256 * 1024;

/// Why the connection ends, and what to tell the client first.
struct Closing {
    reason: CloseReason,
    err: Option<&'static [u8]>,
}

impl Closing {
    fn new(reason: CloseReason, err: Option<&'static [u8]>) -> Self {
        Closing { reason, err }
    }
}

impl From<ParseError> for Closing {
    fn from(e: ParseError) -> Self {
        match e {
            ParseError::UnknownOp => {
                Closing::new(CloseReason::ProtocolViolation, Some(err::UNKNOWN_OP))
            }
            ParseError::MaxControlLine => Closing::new(
                CloseReason::MaxControlLineExceeded,
                Some(err::MAX_CONTROL_LINE),
            ),
            ParseError::MaxPayload { .. } => {
                Closing::new(CloseReason::MaxPayloadExceeded, Some(err::MAX_PAYLOAD))
            }
            ParseError::BadArgs(_) | ParseError::HeadersNotSupported => {
                Closing::new(CloseReason::ProtocolViolation, None)
            }
        }
    }
}

/// Accepts a connection: registers it and starts its reader thread. On failure the
/// connection is closed and the error returned.
pub(crate) fn spawn(shared: &Arc<Shared>, stream: TcpStream, addr: SocketAddr) -> io::Result<()> {
    let tls = shared.tls();
    start(shared, stream, addr, tls.as_ref(), None)
}

/// [`spawn`]'s body: `tls` is the listener's TLS configuration, `ws` the reader's WebSocket
/// state for a client of the WebSocket listener.
fn start(
    shared: &Arc<Shared>,
    stream: TcpStream,
    addr: SocketAddr,
    tls: Option<&Arc<rustls::ServerConfig>>,
    ws: Option<websocket::WsReader>,
) -> io::Result<()> {
    // One descriptor per connection, shared by the reader and the writers (see `Socket`).
    let socket = Arc::new(Socket::new(stream)?);
    let doorbell = shared.doorbell.clone().into();
    let Some(conn) = Connection::accept(shared, socket, addr, tls, ws, doorbell)? else {
        return Ok(());
    };
    let (cid, client) = (conn.client.cid, conn.client.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("beaver-reader-{cid}"))
        .stack_size(READER_STACK)
        .spawn(move || conn.run());
    if let Err(e) = spawned {
        // The closure, and the connection in it, were dropped unrun: that finished it
        // (`Drop`), as an abort.
        client.abort(CloseReason::ServerShutdown);
        return Err(e);
    }
    Ok(())
}

/// A reader thread's state. Everything here is owned by the thread.
struct Connection {
    shared: Arc<Shared>,
    client: Arc<Client>,
    /// The socket, shared with the writers (through `Client::socket`).
    socket: Arc<Socket>,
    /// This connection's place under `max_connections`, held until the reader exits;
    /// `None`: refused (it gets INFO, then `-ERR 'maximum connections exceeded'`).
    admission: Option<Admission>,
    /// For a refused connection: its place among those being refused (`Shared::refuse`).
    refusal: Option<crate::shared::Refusal>,
    parser: Parser,
    buf: ReadBuffer,
    opts: ConnectOptions,
    outbox: Outbox,
    /// The account the client is in (`$G` until a user of another account logs in; never
    /// changes after that). Its subscription table is where this connection subscribes and
    /// where its messages are matched: the message path reaches it through this pointer,
    /// without a lock.
    account: Arc<Account>,
    /// Match results of `account`'s table.
    cache: MatchCache<Subscription>,
    /// Payload bytes and messages received since the counters were last published.
    in_msgs: u64,
    in_bytes: u64,
    /// The client published or (un)subscribed during the current read.
    active: bool,
    /// When the client last published or (un)subscribed (or sent CONNECT).
    last_activity: Instant,
    /// When the client last sent a PING.
    last_remote_ping: Option<Instant>,
    /// When we last sent a PING (kept after its PONG). With none in the last
    /// [`RTT_MEASUREMENT_INTERVAL`], the ping timer PINGs whatever the activity, to measure
    /// the round trip, as nats-server does (`needRTT` in its `processPingTimer`).
    last_ping_sent: Option<Instant>,
    /// Our PINGs not answered yet.
    pings_out: u32,
    /// When we sent our last PING, until its PONG measures the round trip.
    ping_sent: Option<Instant>,
    /// When the ping timer next fires.
    next_ping_check: Instant,
    /// Clean-up done (see `finish` and the `Drop` impl).
    finished: bool,
    /// Whether the read timeout is the short one of the first ping after `CONNECT` (set
    /// back to `ping_interval` when that check runs).
    first_ping_pending: bool,
    stall: StallPolicy,
    /// `None` for a reader thread, which waits in `flush` for subscribers over the stall
    /// threshold; `Some` for an async runner's session ([`Session`]), which must not: the
    /// clients to wait for are collected here instead, for the runner to wait on.
    stalled: Option<Vec<Arc<Client>>>,
    trace: bool,
    /// Authentication is required and no valid `CONNECT` has been seen yet.
    awaiting_auth: bool,
    /// When an `awaiting_auth` client is closed (`Authentication Timeout`).
    auth_deadline: Instant,
    /// The nonce its `INFO` carried, when nkey users are configured: what `CONNECT`'s `sig`
    /// must sign.
    nonce: Option<crate::auth::Nonce>,
    /// In operator mode: the user JWT's expiry and limits, and the client's place under its
    /// account's connection limit (held for as long as the connection).
    jwt: Option<crate::auth::JwtLogin>,
    /// When the user's JWT expires: the reader wakes up then and closes the client.
    auth_expires: Option<Instant>,
    /// The system account was told this client connected (so it is told when it leaves).
    announced: bool,
    /// The authentication generation this reader's permissions come from (see
    /// `Shared::auth_generation`).
    auth_generation: u64,
    /// The authorized user's name, for permission violation logs.
    user: String,
    /// The authorized user's permissions; `None` allows everything.
    perms: Option<Arc<Permissions>>,
    /// Publish decisions of this connection (see [`PubCache`]).
    pub_cache: PubCache,
    /// TLS: ciphertext read from the socket, before decryption (empty without TLS).
    tls_in: Vec<u8>,
    /// A WebSocket client's handshake and frame decoding; `None` for TCP clients.
    ws: Option<websocket::WsReader>,
    /// The configuration generation `limits` and `trace` were taken from.
    config_generation: u64,
    /// The reloadable settings this connection uses, cached (see `refresh_config`).
    limits: Limits,
}

/// The settings a connection reads often, copied from the configuration at connect and
/// after each reload, so that the read path takes no lock.
struct Limits {
    max_payload: usize,
    max_control_line: usize,
    /// Most subscriptions of this connection; `None`: no limit (`max_subscriptions` 0, and
    /// no JWT limit).
    max_subscriptions: Option<usize>,
    ping_interval: Duration,
    ping_max: u32,
}

impl Limits {
    fn of(config: &crate::config::Config) -> Limits {
        Limits {
            max_payload: config.max_payload,
            max_control_line: config.max_control_line,
            max_subscriptions: (config.max_subscriptions > 0).then_some(config.max_subscriptions),
            ping_interval: config.ping_interval,
            ping_max: config.effective_ping_max(),
        }
    }
}

impl Connection {
    /// Registers an accepted connection and prepares its reader: the shared [`Client`]
    /// (whose writer `doorbell` reaches), admission under `max_connections`, the TLS
    /// session. `Ok(None)`: refused and closed at once (over `max_connections` with no room
    /// to tell it so). On error the connection is closed and unregistered.
    fn accept(
        shared: &Arc<Shared>,
        socket: Arc<Socket>,
        addr: SocketAddr,
        tls: Option<&Arc<rustls::ServerConfig>>,
        ws: Option<websocket::WsReader>,
        doorbell: crate::client::Doorbell,
    ) -> io::Result<Option<Connection>> {
        let tls = match tls {
            Some(config) => {
                let mut session = rustls::ServerConnection::new(config.clone())
                    .map_err(|e| io::Error::other(e.to_string()))?;
                // The writer bounds what it hands over (one gather at a time); rustls must
                // take all of it.
                session.set_buffer_limit(None);
                Some(rustls::Connection::Server(session))
            }
            None => None,
        };
        let cid = shared.registry.next_cid();
        let mut client = Client::new(
            cid,
            addr,
            socket.clone(),
            doorbell,
            shared.config().max_pending,
            shared.registry.departed().clone(),
            tls,
            shared.accounts.global().clone(),
        );
        if ws.is_some() {
            client = client.into_websocket();
        }
        let client = Arc::new(client);
        shared.registry.register(client.clone());
        // Admitted (or not) before anything else, atomically: clients still in their
        // handshake are counted, but never refused on each other's account.
        let admission = shared.admit();
        // A refused connection is told so by a reader of its own, within a bound.
        let refusal = match admission {
            Some(_) => None,
            None => match shared.refuse() {
                Some(r) => Some(r),
                None => {
                    log::debug!("{addr} - maximum connections exceeded; closed at once");
                    shared.registry.unregister(cid);
                    client.abort(CloseReason::MaxConnectionsExceeded);
                    return Ok(None);
                }
            },
        };
        match Connection::new(shared.clone(), client.clone(), socket, admission) {
            Ok(mut conn) => {
                conn.ws = ws;
                conn.refusal = refusal;
                // A WebSocket listener may have credentials of its own.
                conn.awaiting_auth = conn.auth().required();
                conn.auth_deadline = Instant::now() + conn.auth().timeout();
                Ok(Some(conn))
            }
            Err(e) => {
                shared.registry.unregister(cid);
                client.abort(CloseReason::ReadError);
                Err(e)
            }
        }
    }

    fn new(
        shared: Arc<Shared>,
        client: Arc<Client>,
        socket: Arc<Socket>,
        admission: Option<Admission>,
    ) -> io::Result<Self> {
        // The generation first: a reload after this is seen by the first `refresh_config`.
        let config_generation = shared.config_generation();
        let config = shared.config();
        // Until `CONNECT` the ping timer runs at the full interval, as nats-server's (it
        // shortens the first one only at `CONNECT`: see `schedule_first_ping`).
        socket.set_read_timeout(config.ping_interval)?;
        Ok(Connection {
            parser: Parser::new(config.max_control_line, config.max_payload),
            buf: ReadBuffer::new(),
            opts: ConnectOptions::default(),
            outbox: Outbox::with_direct_writes(),
            account: shared.accounts.global().clone(),
            cache: MatchCache::new(crate::subjects::MATCH_CACHE_CAPACITY),
            in_msgs: 0,
            in_bytes: 0,
            active: false,
            last_activity: Instant::now(),
            last_remote_ping: None,
            last_ping_sent: None,
            pings_out: 0,
            ping_sent: None,
            next_ping_check: Instant::now()
                .checked_add(config.ping_interval)
                .unwrap_or_else(Instant::now),
            first_ping_pending: false,
            finished: false,
            stall: shared.stall,
            stalled: None,
            trace: config.trace,
            awaiting_auth: shared.auth().required(),
            auth_deadline: Instant::now() + shared.auth().timeout(),
            nonce: None,
            jwt: None,
            auth_expires: None,
            announced: false,
            auth_generation: shared.auth_generation(),
            user: String::new(),
            perms: None,
            pub_cache: PubCache::default(),
            tls_in: Vec::new(),
            ws: None,
            config_generation,
            limits: Limits::of(&config),
            socket,
            admission,
            refusal: None,
            client,
            shared,
        })
    }

    // Never inlined into the thread's closure: `benches/cost.sh` counts instructions spent
    // below this function (and the writers' `run`) with callgrind's --toggle-collect.
    #[inline(never)]
    fn run(mut self) {
        let reason = match self.open() {
            Ok(()) => self.read_loop(),
            Err(reason) => reason,
        };
        self.finish(reason);
    }

    /// The session's start: logged, then `INFO` (and, with TLS, the handshake). `Err`: the
    /// connection ends, for this reason.
    fn open(&mut self) -> Result<(), CloseReason> {
        log::debug!("{} - Client connection created", self.client.log_prefix());
        self.greet().map_err(|c| self.fail(c))
    }

    fn read_loop(&mut self) -> CloseReason {
        loop {
            if let Err(reason) = self.before_read() {
                return reason;
            }
            let read = self.read();
            if let Err(reason) = self.after_read(read) {
                return reason;
            }
        }
    }

    /// What comes before each read: the authentication timer (which may shorten the read
    /// timeout, or close the client). `Err`: the connection ends, for this reason.
    fn before_read(&mut self) -> Result<(), CloseReason> {
        if self.awaiting_auth {
            if let Err(c) = self.check_auth_timeout() {
                return Err(self.fail(c));
            }
        }
        Ok(())
    }

    /// What comes after each read, given its result (a timeout is `WouldBlock` or
    /// `TimedOut`): the operations read are handled, then the timers, then everything
    /// staged is queued (the stall included). `Err`: the connection ends, for this reason.
    fn after_read(&mut self, read: io::Result<usize>) -> Result<(), CloseReason> {
        match read {
            Ok(0) => {
                return Err(self
                    .client
                    .close_reason()
                    .unwrap_or(CloseReason::ClientClosed))
            }
            Ok(_) => {
                self.refresh_config();
                if let Err(c) = self.process() {
                    return Err(self.fail(c));
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                if let Some(r) = self.client.close_reason() {
                    return Err(r);
                }
                log::debug!("{} - Read error: {e}", self.client.log_prefix());
                return Err(CloseReason::ReadError);
            }
        }
        self.publish_counters();
        self.refresh_config();
        self.cache.refresh(&self.account.sublist);
        if let Err(c) = self.check_ping() {
            return Err(self.fail(c));
        }
        if let Err(c) = self.check_auth_expiry() {
            return Err(self.fail(c));
        }
        self.flush();
        if self.client.is_closing() {
            // Closed by another thread (slow consumer, shutdown): stop reading.
            return Err(self
                .client
                .close_reason()
                .unwrap_or(CloseReason::ServerShutdown));
        }
        self.buf.shrink_when_idle();
        Ok(())
    }

    /// One blocking read into the buffer (see [`ReadBuffer`]).
    fn read(&mut self) -> io::Result<usize> {
        if self.is_websocket() {
            return self.read_websocket();
        }
        self.read_transport()
    }

    /// Parses and handles every complete operation in the buffer.
    fn process(&mut self) -> Result<(), Closing> {
        // Waiting for a payload: do not look at it again until it is all here. Its CR LF is
        // parsed as soon as the CR arrives (a wrong byte there is an error right away).
        if self
            .parser
            .bytes_needed()
            .is_some_and(|need| self.buf.len() + 1 < need)
        {
            return Ok(());
        }
        let chunk = self.buf.take();
        let mut pos = 0;
        let result = loop {
            if self.awaiting_auth && pos < chunk.len() && !matches!(chunk[pos], b'C' | b'c') {
                // Anything but CONNECT first (nats-server looks at the first byte): in as the
                // `no_auth_user` if there is one, otherwise refused.
                let login = match self.auth().no_auth_login() {
                    Some(login) => self.login(login),
                    None => Err(self.auth_violation(&self.auth().error_message(&self.opts))),
                };
                if let Err(c) = login {
                    break Err(c);
                }
            }
            let step = match self.parser.parse(&chunk[pos..]) {
                Ok(step) => step,
                Err(e) => {
                    self.log_parse_error(e, &chunk[pos..]);
                    break Err(Closing::from(e));
                }
            };
            let start = pos;
            pos += step.consumed;
            let line = step.pub_line.is_some();
            if let Some(line) = step.pub_line {
                self.on_pub_line(&line);
            }
            let Some(op) = step.op else {
                if line {
                    continue; // see `Step::pub_line`
                }
                break Ok(());
            };
            if let Err(c) = self.handle(op, &chunk, start) {
                break Err(c);
            }
            if self.outbox.staged() >= FLUSH_STAGED {
                self.flush();
            }
        };
        if result.is_ok() {
            // The start of an operation the next read completes goes back to the front.
            self.buf.keep(chunk, pos);
        }
        result
    }

    fn handle(&mut self, op: ClientOp<'_>, chunk: &Bytes, start: usize) -> Result<(), Closing> {
        if self.trace {
            self.trace_in(&op);
        }
        match op {
            ClientOp::Pub(p) => self.on_pub(&p, chunk, start),
            ClientOp::Sub {
                subject,
                queue,
                sid,
            } => {
                self.on_sub(subject, queue, sid);
                Ok(())
            }
            ClientOp::Unsub { sid, max } => {
                self.on_unsub(sid, max);
                Ok(())
            }
            ClientOp::Ping => {
                self.last_remote_ping = Some(Instant::now());
                self.send_traced(protocol::PONG, "PONG");
                Ok(())
            }
            ClientOp::Pong => {
                self.pings_out = 0;
                // nats-server's processPong: the round trip since our PING.
                if let Some(sent) = self.ping_sent.take() {
                    self.client.set_rtt(sent.elapsed());
                }
                Ok(())
            }
            ClientOp::Connect(json) => self.on_connect(json),
            ClientOp::Info(json) => {
                // nats-server decodes a client's INFO and ignores it; bad JSON closes.
                match serde_json::from_slice::<serde_json::Value>(json) {
                    Ok(serde_json::Value::Object(_) | serde_json::Value::Null) => Ok(()),
                    _ => Err(Closing::new(CloseReason::ProtocolViolation, None)),
                }
            }
            ClientOp::Ok => Ok(()),
            ClientOp::Err(msg) => {
                log::error!(
                    "{} - Client Error {}",
                    self.client.log_prefix(),
                    String::from_utf8_lossy(msg)
                );
                Err(Closing::new(CloseReason::ParseError, None))
            }
        }
    }

    /// Sends `-ERR '<text>'` (a message built at run time), traced as nats-server does.
    fn send_err_text(&mut self, text: &str) {
        if self.trace {
            log::trace!("{} - ->> [-ERR {text}]", self.client.log_prefix());
        }
        let line = format!("-ERR '{text}'\r\n");
        self.send(line.as_bytes());
    }

    /// Stages bytes for this client itself.
    fn send(&mut self, bytes: &[u8]) {
        self.outbox
            .batch_for(&self.client, &self.shared.pool)
            .push(bytes);
        self.outbox.add_staged(bytes.len());
    }

    /// Stages bytes for this client and traces them as nats-server does (`->> [OK]`,
    /// `->> [-ERR Unknown Protocol Operation]`).
    fn send_traced(&mut self, bytes: &'static [u8], what: &str) {
        if self.trace {
            if what == "-ERR" {
                let text = String::from_utf8_lossy(bytes);
                let msg = text
                    .trim_end()
                    .trim_start_matches("-ERR ")
                    .trim_matches('\'');
                log::trace!("{} - ->> [-ERR {msg}]", self.client.log_prefix());
            } else {
                log::trace!("{} - ->> [{what}]", self.client.log_prefix());
            }
        }
        self.send(bytes);
    }

    /// Queues everything staged.
    fn flush(&mut self) {
        let (pool, cid) = (&self.shared.pool, self.client.cid);
        match &mut self.stalled {
            None => self.outbox.flush(pool, Some(&self.stall), cid),
            Some(stalled) => self
                .outbox
                .flush_deferring_stall(pool, &self.stall, cid, stalled),
        }
    }

    fn publish_counters(&mut self) {
        if self.in_msgs > 0 {
            self.client.stats.inbound.add(self.in_msgs, self.in_bytes);
            self.in_msgs = 0;
            self.in_bytes = 0;
        }
    }

    /// After a configuration reload (SIGHUP), takes the new limits, trace flag and ping
    /// interval, as nats-server applies them to existing clients. One atomic load per read
    /// otherwise.
    fn refresh_config(&mut self) {
        let generation = self.shared.config_generation();
        if generation == self.config_generation {
            return;
        }
        self.config_generation = generation;
        // The authentication is replaced before the configuration (see `Shared::set_auth`).
        let auth_generation = self.shared.auth_generation();
        if auth_generation != self.auth_generation {
            self.auth_generation = auth_generation;
            self.reauthenticate();
        }
        let config = self.shared.config();
        let old_interval = self.limits.ping_interval;
        self.limits = Limits::of(&config);
        self.trace = config.trace;
        self.parser
            .set_limits(self.limits.max_control_line, self.limits.max_payload);
        self.apply_jwt_limits();
        if self.limits.ping_interval != old_interval && !self.first_ping_pending {
            let now = Instant::now();
            self.next_ping_check = now.checked_add(self.limits.ping_interval).unwrap_or(now);
            self.wake_for_ping_timer();
        }
    }

    /// Sends the closing `-ERR` (if any), and returns the reason.
    fn fail(&mut self, c: Closing) -> CloseReason {
        if let Some(e) = c.err {
            self.send_traced(e, "-ERR");
        }
        c.reason
    }

    /// Ends the connection: flush the last output, close gracefully (the writer writes what
    /// is queued, then shuts the socket), remove the subscriptions, then leave the server
    /// (`Registry::depart`: unregister, add the counters to the server's totals, keep a
    /// snapshot for `/connz?state=closed`).
    fn finish(&mut self, reason: CloseReason) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.publish_counters();
        self.flush();
        self.client.close(reason);
        let subs: Vec<Arc<Subscription>> = std::mem::take(&mut *self.client.subs.lock())
            .into_values()
            .collect();
        // The ones this call closed (an auto-unsubscribe on another thread may have won
        // some): each subscription's interest is withdrawn exactly once.
        let closed: Vec<&Arc<Subscription>> = subs.iter().filter(|s| s.close()).collect();
        // One generation bump for all of them (see `Sublist::remove_many`). They are all in
        // this connection's account (see `login`).
        self.account.sublist.remove_many(subs.iter());
        // ROUTES: withdraw the interest from the cluster.
        self.shared.interest_removed(&closed);
        let reason = self.client.close_reason().unwrap_or(reason);
        if self.announced {
            if let Some(events) = self.shared.events() {
                events.disconnected(&self.client, reason);
            }
        }
        self.shared.registry.depart(&self.client, reason, &subs);
        log::debug!(
            "{} - Client connection closed: {}",
            self.client.log_prefix(),
            reason
        );
        self.client.reader_finished(&self.shared.pool);
    }
}

/// If the reader thread panics (a bug), unwinding still cleans up: the client is closed and
/// unregistered and its subscriptions removed, so a bug in one connection does not leave
/// a ghost client that keeps receiving messages.
impl Drop for Connection {
    fn drop(&mut self) {
        if !self.finished {
            log::error!(
                "{} - reader thread failed; closing the connection",
                self.client.log_prefix()
            );
            self.client.abort(CloseReason::ServerError);
            self.finish(CloseReason::ServerError);
        }
    }
}
