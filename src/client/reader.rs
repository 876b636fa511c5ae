//! The reader thread: one per client connection.
//!
//! It does blocking reads into a reusable buffer, parses every complete operation in it
//! without copying ([`crate::protocol::Parser`]), and acts on each: a `PUB` is matched against
//! the subscription table (through this thread's private [`MatchCache`]) and staged, per
//! destination, in the thread's [`Outbox`]; replies to the client itself (`PONG`, `+OK`,
//! `-ERR`) are staged the same way. After each read the outbox is flushed: one queue push and
//! at most one writer wake-up per destination.
//!
//! ## The read buffer
//! A `BytesMut`. Before parsing, the filled part is frozen into a `Bytes` (no copy). Parsed
//! arguments are slices of it; a payload that is shared with subscribers (see
//! [`crate::outbound::SHARE_MIN`]) is a `Bytes::slice` of it: a reference count, no copy, no
//! allocation. An operation cut off by the end of the read is copied back to the (empty)
//! buffer to be completed by the next read; that is at most one operation, and a large
//! payload is not parsed (nor copied) again until all of it has arrived. When nothing
//! retains the frozen bytes, the next `reserve` reclaims the same allocation, so steady
//! traffic allocates nothing. The read size adapts: it doubles while reads fill it (up to
//! [`MAX_READ`]) and halves after short reads (down to [`MIN_READ`]), so an idle connection
//! costs little memory.
//!
//! ## Liveness
//! The socket's read timeout is `ping_interval`; each time it expires (or data arrives) the
//! reader checks whether the client was idle for that long and sends a `PING`, closing the
//! client as stale after `ping_max` unanswered ones. No timer thread is needed.

use super::{lock_session, Client, Outbox, Subscription};
use crate::auth::{Permissions, PubCache};
use crate::client::Account;
use crate::client::Claim;
use crate::client::Login;
use crate::client::StallPolicy;
use crate::close::CloseReason;
use crate::outbound::SHARE_MIN;
use crate::protocol::{
    self, err, go_quote, ClientOp, ConnectOptions, MsgLine, ParseError, Parser, PubLine, Publish,
};
use crate::shared::{Admission, Shared};
use crate::socket::Socket;
use crate::subjects::{is_valid_literal_subject, MatchCache, SublistError};
use bytes::{Bytes, BytesMut};
use std::io::{self, ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Shortest socket read timeout set (a zero timeout would mean "none").
const MIN_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1);
/// Smallest read (and initial buffer size): idle connections stay small.
pub const MIN_READ: usize = 512;
/// Initial read size.
pub const START_READ: usize = 1024;
/// Largest read.
pub const MAX_READ: usize = 128 * 1024;
/// Stack size of reader threads. Matching and parsing are iterative; 256 KiB leaves room
/// for logging and the allocator (see `docs/architecture.md` for the per-connection cost).
pub const READER_STACK: usize = 256 * 1024;
/// Staged output (bytes copied into batches) after which the outbox is flushed before the
/// read buffer is finished, to bound memory and start writers earlier.
pub const FLUSH_STAGED: usize = 256 * 1024;

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
    // One descriptor per connection, shared by the reader and the writers (see `Socket`).
    let socket = Arc::new(Socket::new(stream)?);
    let tls = match &shared.tls {
        Some(config) => {
            let mut session = rustls::ServerConnection::new(config.clone())
                .map_err(|e| io::Error::other(e.to_string()))?;
            // The writer bounds what it hands over (one gather at a time); rustls must take
            // all of it.
            session.set_buffer_limit(None);
            Some(session)
        }
        None => None,
    };
    let cid = shared.registry.next_cid();
    let client = Arc::new(Client::new(
        cid,
        addr,
        socket.clone(),
        shared.doorbell.clone(),
        shared.config().max_pending,
        shared.registry.departed().clone(),
        tls,
        shared.accounts.global().clone(),
    ));
    shared.registry.register(client.clone());
    // Admitted (or not) before anything else, atomically: clients still in their handshake
    // are counted, but never refused on each other's account.
    let admission = shared.admit();
    let conn = match Connection::new(shared.clone(), client.clone(), socket, admission) {
        Ok(conn) => conn,
        Err(e) => {
            shared.registry.unregister(cid);
            client.abort(CloseReason::ReadError);
            return Err(e);
        }
    };
    let spawned = std::thread::Builder::new()
        .name(format!("beaver-reader-{cid}"))
        .stack_size(READER_STACK)
        .spawn(move || conn.run());
    if let Err(e) = spawned {
        shared.registry.unregister(cid);
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
    parser: Parser,
    buf: BytesMut,
    /// Scratch space for an operation cut off by the end of a read (see `process`).
    tail: Vec<u8>,
    read_size: usize,
    short_reads: u32,
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
    trace: bool,
    /// Authentication is required and no valid `CONNECT` has been seen yet.
    awaiting_auth: bool,
    /// When an `awaiting_auth` client is closed (`Authentication Timeout`).
    auth_deadline: Instant,
    /// The authorized user's name, for permission violation logs.
    user: String,
    /// The authorized user's permissions; `None` allows everything.
    perms: Option<Arc<Permissions>>,
    /// Publish decisions of this connection (see [`PubCache`]).
    pub_cache: PubCache,
    /// TLS: ciphertext read from the socket, before decryption (empty without TLS).
    tls_in: Vec<u8>,
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
    max_subscriptions: usize,
    ping_interval: Duration,
    ping_max: u32,
}

impl Limits {
    fn of(config: &crate::config::Config) -> Limits {
        Limits {
            max_payload: config.max_payload,
            max_control_line: config.max_control_line,
            max_subscriptions: config.max_subscriptions,
            ping_interval: config.ping_interval,
            ping_max: config.effective_ping_max(),
        }
    }
}

impl Connection {
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
            buf: BytesMut::new(),
            tail: Vec::new(),
            read_size: START_READ,
            short_reads: 0,
            opts: ConnectOptions::default(),
            outbox: Outbox::new(),
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
            trace: config.trace,
            awaiting_auth: shared.auth.required(),
            auth_deadline: Instant::now() + shared.auth.timeout(),
            user: String::new(),
            perms: None,
            pub_cache: PubCache::default(),
            tls_in: Vec::new(),
            config_generation,
            limits: Limits::of(&config),
            socket,
            admission,
            client,
            shared,
        })
    }

    // Never inlined into the thread's closure: `benches/cost.sh` counts instructions spent
    // below this function (and the writers' `run`) with callgrind's --toggle-collect.
    #[inline(never)]
    fn run(mut self) {
        log::debug!("{} - Client connection created", self.client.log_prefix());
        let reason = match self.greet() {
            Ok(()) => self.read_loop(),
            Err(c) => self.fail(c),
        };
        self.finish(reason);
    }

    /// Sends INFO; refuses the connection if over `max_connections`. With TLS, INFO goes out
    /// in plain text straight from this thread (nothing else is queued yet), then the
    /// handshake runs here too; after it, every byte to the client goes through its writer.
    fn greet(&mut self) -> Result<(), Closing> {
        let info = self.shared.info_line(&self.client);
        if self.client.is_tls() {
            if let Err(e) = self
                .socket
                .write_all_until(&info, self.handshake_deadline())
            {
                log::debug!("{} - Write error: {e}", self.client.log_prefix());
                return Err(Closing::new(CloseReason::WriteError, None));
            }
            if self.admission.is_none() {
                log::error!(
                    "{} - maximum connections exceeded",
                    self.client.log_prefix()
                );
                let _ = self
                    .socket
                    .write_all_until(err::MAX_CONNECTIONS, self.handshake_deadline());
                return Err(Closing::new(CloseReason::MaxConnectionsExceeded, None));
            }
            self.tls_handshake()?;
            self.auth_deadline = Instant::now() + self.shared.auth.timeout();
            return Ok(());
        }
        self.send(&info);
        if self.admission.is_none() {
            log::error!(
                "{} - maximum connections exceeded",
                self.client.log_prefix()
            );
            return Err(Closing::new(
                CloseReason::MaxConnectionsExceeded,
                Some(err::MAX_CONNECTIONS),
            ));
        }
        self.flush();
        Ok(())
    }

    fn read_loop(&mut self) -> CloseReason {
        loop {
            if self.awaiting_auth {
                if let Err(c) = self.check_auth_timeout() {
                    return self.fail(c);
                }
            }
            match self.read() {
                Ok(0) => {
                    return self
                        .client
                        .close_reason()
                        .unwrap_or(CloseReason::ClientClosed)
                }
                Ok(_) => {
                    self.refresh_config();
                    if let Err(c) = self.process() {
                        return self.fail(c);
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    if let Some(r) = self.client.close_reason() {
                        return r;
                    }
                    log::debug!("{} - Read error: {e}", self.client.log_prefix());
                    return CloseReason::ReadError;
                }
            }
            self.publish_counters();
            self.refresh_config();
            self.cache.refresh(&self.account.sublist);
            if let Err(c) = self.check_ping() {
                return self.fail(c);
            }
            self.flush();
            if self.client.is_closing() {
                // Closed by another thread (slow consumer, shutdown): stop reading.
                return self
                    .client
                    .close_reason()
                    .unwrap_or(CloseReason::ServerShutdown);
            }
            self.shrink_when_idle();
        }
    }

    /// Before `CONNECT` with authentication on: closes the client once the authentication
    /// timeout has passed, and otherwise makes the next read wake up by then.
    fn check_auth_timeout(&mut self) -> Result<(), Closing> {
        let now = Instant::now();
        if now >= self.auth_deadline {
            // nats-server's order: the -ERR (traced), then the debug line.
            self.send_traced(err::AUTHENTICATION_TIMEOUT, "-ERR");
            log::debug!("{} - Authentication Timeout", self.client.log_prefix());
            return Err(Closing::new(CloseReason::AuthenticationTimeout, None));
        }
        let wake = self.auth_deadline.min(self.next_ping_check);
        let _ = self
            .socket
            .set_read_timeout(wake.saturating_duration_since(now).max(MIN_TIMEOUT));
        Ok(())
    }

    /// Records a successful authentication. A client stays in the account of its first
    /// login: a later `CONNECT` as a user of another account is refused (its subscriptions
    /// and match cache belong to the first one).
    fn login(&mut self, login: Login) -> Result<(), Closing> {
        if !Arc::ptr_eq(&login.account, &self.account) {
            if !self.awaiting_auth {
                log::error!(
                    "{} - Authorization Error - a connection cannot move from account {:?} \
                     to {:?}",
                    self.client.log_prefix(),
                    self.account.name,
                    login.account.name
                );
                return Err(Closing::new(
                    CloseReason::AuthenticationViolation,
                    Some(err::AUTHORIZATION_VIOLATION),
                ));
            }
            self.client.set_account(&login.account);
            self.cache = MatchCache::new(crate::subjects::MATCH_CACHE_CAPACITY);
            self.account = login.account;
        }
        self.client.set_authorized_user(&login.user);
        self.user = login.user;
        self.perms = login.permissions;
        self.pub_cache.clear();
        if std::mem::replace(&mut self.awaiting_auth, false) {
            // The read timeout was shortened for the authentication timer: back to the ping
            // timer's.
            let wait = self
                .next_ping_check
                .saturating_duration_since(Instant::now())
                .max(MIN_TIMEOUT);
            let _ = self.socket.set_read_timeout(wait);
        }
        Ok(())
    }

    /// Refuses a client that failed authentication (nats-server's `authViolation`).
    fn auth_violation(&self, log_line: &str) -> Closing {
        log::error!("{} - {log_line}", self.client.log_prefix());
        Closing::new(
            CloseReason::AuthenticationViolation,
            Some(err::AUTHORIZATION_VIOLATION),
        )
    }

    /// When a TLS handshake starting now must be over.
    fn handshake_deadline(&self) -> Instant {
        let timeout = self
            .shared
            .config()
            .tls
            .as_ref()
            .map_or(crate::config::DEFAULT_TLS_TIMEOUT, |t| {
                t.effective_timeout()
            });
        Instant::now() + timeout
    }

    /// The TLS handshake, on this thread, before anything else is read (nats-server's
    /// order: plain-text INFO, then the handshake, bounded by the TLS `timeout`). Records
    /// this thread's writes go straight to the socket: no writer touches the client yet.
    fn tls_handshake(&mut self) -> Result<(), Closing> {
        let Some(tls) = self.client.tls.as_ref() else {
            return Ok(());
        };
        let prefix = self.client.log_prefix();
        log::debug!("{prefix} - Starting TLS client connection handshake");
        let deadline = self.handshake_deadline();
        let failed = |what: &dyn std::fmt::Display| {
            let what = what.to_string();
            // rustls (webpki) accepts only X.509 v3 certificates; `openssl x509 -req` without
            // `-extfile` makes v1 ones, which nats-server (Go) accepts. Say so plainly.
            let hint = if what.contains("UnsupportedCertVersion") {
                " (the client certificate is X.509 v1; beaver needs v3: see the README, TLS)"
            } else {
                ""
            };
            log::error!("{prefix} - TLS handshake error: {what}{hint}");
            Closing::new(CloseReason::TlsHandshakeError, None)
        };
        let mut buf = vec![0u8; 16 * 1024];
        let mut out = Vec::new();
        let mut first = true;
        loop {
            // Send what the session has for the client. The session lock is held only to
            // produce the bytes; the socket write happens outside it.
            let handshaking = {
                let Some(mut session) = lock_session(tls) else {
                    return Err(failed(&"the connection was closed"));
                };
                while session.wants_write() {
                    if session.write_tls(&mut out).is_err() {
                        break;
                    }
                }
                session.is_handshaking()
            };
            if !out.is_empty() {
                if let Err(e) = self.socket.write_all_until(&out, deadline) {
                    return Err(failed(&e));
                }
                out.clear();
            }
            if !handshaking {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                // nats-server closes first and then fails to send
                // `-ERR 'Secure Connection - TLS Required'`: the client sees the connection
                // close and nothing else. So does beaver's.
                log::error!("{prefix} - TLS handshake error: i/o timeout");
                log::error!("{prefix} - TLS handshake timeout");
                return Err(Closing::new(CloseReason::TlsHandshakeError, None));
            }
            let _ = self.socket.set_read_timeout(deadline - now);
            let n = match self.socket.read(&mut buf) {
                Ok(0) => return Err(failed(&"EOF")),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue; // the deadline check above ends it
                }
                Err(e) => return Err(failed(&e)),
            };
            let result = {
                let Some(mut session) = lock_session(tls) else {
                    return Err(failed(&"the connection was closed"));
                };
                let mut rd = &buf[..n];
                let mut result = Ok(());
                while !rd.is_empty() {
                    let step = match session.read_tls(&mut rd) {
                        Err(e) => Err(e.to_string()),
                        Ok(_) => match session.process_new_packets() {
                            Ok(_) => Ok(()),
                            // Not TLS at all (a plain-text client): Go's TLS stack, hence
                            // nats-server, closes without an alert, and says so.
                            Err(rustls::Error::InvalidMessage(_)) if first => {
                                out.clear();
                                result =
                                    Err("tls: first record does not look like a TLS handshake"
                                        .to_string());
                                break;
                            }
                            Err(e) => Err(e.to_string()),
                        },
                    };
                    if let Err(e) = step {
                        // The alert for the client, if rustls made one.
                        while session.wants_write() {
                            if session.write_tls(&mut out).is_err() {
                                break;
                            }
                        }
                        result = Err(e);
                        break;
                    }
                }
                first = false;
                result
            };
            if let Err(e) = result {
                let _ = self.socket.write_all_until(&out, deadline);
                return Err(failed(&e));
            }
        }
        let (version, cipher) = {
            let Some(session) = lock_session(tls) else {
                return Err(failed(&"the connection was closed"));
            };
            (
                crate::auth::tls::version_name(&session),
                crate::auth::tls::cipher_name(&session),
            )
        };
        log::debug!("{prefix} - TLS handshake complete");
        log::debug!("{prefix} - TLS version {version}, cipher suite {cipher}");
        self.client.set_tls_info(version, cipher);
        self.tls_in = buf;
        let wait = self
            .next_ping_check
            .saturating_duration_since(Instant::now())
            .max(MIN_TIMEOUT);
        let _ = self.socket.set_read_timeout(wait);
        Ok(())
    }

    /// One blocking read into the buffer. See the module docs for the sizing.
    fn read(&mut self) -> io::Result<usize> {
        if self.client.is_tls() {
            return self.read_tls();
        }
        let len = self.buf.len();
        let want = match self.parser.bytes_needed() {
            // A large payload is on its way: read straight towards its end.
            Some(need) if need > len => (need - len).clamp(self.read_size, MAX_READ),
            _ => self.read_size,
        };
        self.buf.reserve(want);
        self.buf.resize(len + want, 0);
        let result = self.socket.read(&mut self.buf[len..]);
        let n = *result.as_ref().unwrap_or(&0);
        self.buf.truncate(len + n);
        if n == want {
            self.read_size = (self.read_size * 2).min(MAX_READ);
            self.short_reads = 0;
        } else if n > 0 && n < want / 4 {
            self.short_reads += 1;
            if self.short_reads >= 4 {
                self.read_size = (self.read_size / 2).max(MIN_READ);
                self.short_reads = 0;
            }
        }
        result
    }

    /// [`Connection::read`] for TLS: ciphertext is read from the socket outside the session
    /// lock, then decrypted under it, the plaintext going straight into the read buffer.
    /// Returns the plaintext bytes added (0 at the end of the stream).
    fn read_tls(&mut self) -> io::Result<usize> {
        let Some(tls) = self.client.tls.as_ref() else {
            return Ok(0);
        };
        let len = self.buf.len();
        let want = match self.parser.bytes_needed() {
            Some(need) if need > len => (need - len).clamp(self.read_size, MAX_READ),
            _ => self.read_size,
        };
        if self.tls_in.len() < want {
            self.tls_in.resize(want, 0);
        }
        let mut fresh = 0;
        loop {
            let mut got = 0;
            let mut closed = false;
            let mut reply = false;
            let result: io::Result<()> = (|| {
                let Some(mut session) = lock_session(tls) else {
                    return Err(ErrorKind::NotConnected.into());
                };
                let mut rd = &self.tls_in[..fresh];
                loop {
                    // Decrypt what was read (nothing, the first time round: plaintext left
                    // over from the handshake or a previous read comes out first).
                    let state = session
                        .process_new_packets()
                        .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                    let avail = state.plaintext_bytes_to_read();
                    if avail > 0 {
                        let at = len + got;
                        if self.buf.len() < at + avail {
                            self.buf.resize(at + avail, 0);
                        }
                        session.reader().read_exact(&mut self.buf[at..at + avail])?;
                        got += avail;
                    }
                    closed |= state.peer_has_closed();
                    if rd.is_empty() {
                        break;
                    }
                    session.read_tls(&mut rd)?;
                }
                reply = session.wants_write();
                Ok(())
            })();
            self.buf.truncate(len + got);
            if reply {
                // Records of the session's own (alerts, key updates): the writer sends them,
                // in order with the rest of the ciphertext.
                self.client.kick();
            }
            result?;
            if got > 0 {
                self.adapt_read_size(got, want);
                return Ok(got);
            }
            if closed {
                return Ok(0);
            }
            // Nothing decrypted yet: read more ciphertext (blocking, socket timeout applies).
            fresh = self.socket.read(&mut self.tls_in)?;
            if fresh == 0 {
                return Ok(0);
            }
        }
    }

    /// Adapts the read size to how full the last read was (see the module docs).
    fn adapt_read_size(&mut self, n: usize, want: usize) {
        if n >= want {
            self.read_size = (self.read_size * 2).min(MAX_READ);
            self.short_reads = 0;
        } else if n > 0 && n < want / 4 {
            self.short_reads += 1;
            if self.short_reads >= 4 {
                self.read_size = (self.read_size / 2).max(MIN_READ);
                self.short_reads = 0;
            }
        }
    }

    /// Drops a large idle buffer (the next read allocates a small one).
    fn shrink_when_idle(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 4 * self.read_size.max(START_READ) {
            self.buf = BytesMut::new();
        }
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
        let chunk = self.buf.split().freeze();
        let mut pos = 0;
        let result = loop {
            if self.awaiting_auth && pos < chunk.len() && !matches!(chunk[pos], b'C' | b'c') {
                // Anything but CONNECT first (nats-server looks at the first byte): in as the
                // `no_auth_user` if there is one, otherwise refused.
                let login = match self.shared.auth.no_auth_login() {
                    Some(login) => self.login(login),
                    None => Err(self.auth_violation(&self.shared.auth.error_message(""))),
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
        if result.is_ok() && pos < chunk.len() {
            // The start of an operation the next read completes goes back to the front of the
            // buffer. Copied out first and `chunk` dropped, so that the buffer is the only
            // owner of its allocation again and `reserve` can reuse it instead of allocating.
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[pos..]);
            drop(chunk);
            self.buf.extend_from_slice(&self.tail);
        }
        result
    }

    /// Logs a protocol error at error level, in nats-server's words.
    fn log_parse_error(&self, e: ParseError, rest: &[u8]) {
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

    fn on_connect(&mut self, json: &[u8]) -> Result<(), Closing> {
        if let Err(e) = self.opts.merge_json(json) {
            log::error!("{} - CONNECT: {e}", self.client.log_prefix());
            return Err(Closing::new(CloseReason::ProtocolViolation, None));
        }
        if self.shared.auth.required() {
            // Every CONNECT is checked, a repeated one too (as nats-server does).
            match self.shared.auth.authenticate(&self.opts) {
                Ok(login) => self.login(login)?,
                Err(e) => return Err(self.auth_violation(&e.0)),
            }
        }
        if !self.opts.account.is_empty() || self.opts.new_account {
            log::error!("{} - Authorization Error", self.client.log_prefix());
            return Err(Closing::new(
                CloseReason::AuthenticationViolation,
                Some(err::AUTHORIZATION_VIOLATION),
            ));
        }
        if !(0..=1).contains(&self.opts.protocol) {
            return Err(Closing::new(
                CloseReason::BadClientProtocolVersion,
                Some(err::INVALID_CLIENT_PROTOCOL),
            ));
        }
        self.active = true;
        // nats-server's first RTT estimate: from accept to CONNECT (computeRTT(c.start)).
        self.client.set_rtt_since_accept(Instant::now());
        self.schedule_first_ping();
        self.parser.set_headers(self.opts.headers);
        self.client.set_headers(self.opts.headers);
        self.client.set_async_info(self.opts.protocol >= 1);
        self.client
            .set_identity(&self.opts.name, &self.opts.lang, &self.opts.version);
        if self.opts.no_responders && !self.opts.headers {
            return Err(Closing::new(
                CloseReason::NoRespondersRequiresHeaders,
                Some(err::NO_RESPONDERS_REQUIRES_HEADERS),
            ));
        }
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
        Ok(())
    }

    fn on_sub(&mut self, subject: &[u8], queue: Option<&[u8]>, sid: &[u8]) {
        self.active = true;
        let mut deny = None;
        if let Some(perms) = &self.perms {
            if !perms.can_subscribe(subject, queue) {
                self.sub_violation(subject, queue, sid);
                return;
            }
            deny = perms.delivery_filter(subject);
        }
        let limit = self.limits.max_subscriptions;
        let mut subs = self.client.subs.lock();
        // nats-server checks the limit before looking at the sid.
        if limit > 0 && subs.len() >= limit {
            drop(subs);
            log::error!(
                "{} - maximum subscriptions exceeded",
                self.client.log_prefix()
            );
            self.send_traced(err::MAX_SUBSCRIPTIONS, "-ERR");
            return;
        }
        // A sid that is already in use: nats-server keeps the first subscription and still
        // answers +OK.
        if !subs.contains_key(sid) {
            let sub = Arc::new(
                Subscription::new(
                    self.client.clone(),
                    self.account.clone(),
                    subject,
                    queue,
                    sid,
                )
                .with_delivery_filter(deny),
            );
            // Lock order: the client's sid map, then the sublist's locks (documented in
            // docs/architecture.md); nothing else is held here.
            match self.account.sublist.insert(sub.clone()) {
                Ok(()) => {
                    subs.insert(sid.into(), sub.clone());
                    drop(subs);
                    // ROUTES: tell the cluster (after the client's sid map is released).
                    self.shared.interest_added(&sub);
                    if self.opts.verbose {
                        self.send_traced(protocol::OK, "OK");
                    }
                    return;
                }
                Err(SublistError::InvalidSubject) => {
                    drop(subs);
                    self.send_traced(err::INVALID_SUBJECT, "-ERR");
                    return;
                }
            }
        }
        drop(subs);
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
    }

    /// `-ERR 'Permissions Violation for Subscription to "x"'` (with ` using queue "q"` for a
    /// queue subscription), and nats-server's log line. The connection stays open.
    fn sub_violation(&mut self, subject: &[u8], queue: Option<&[u8]>, sid: &[u8]) {
        let (err_text, log_text) = match queue {
            None => (
                format!(
                    "Permissions Violation for Subscription to {}",
                    go_quote(subject)
                ),
                format!(
                    "Subscription Violation - User {}, Subject {}, SID {}",
                    go_quote(self.user.as_bytes()),
                    go_quote(subject),
                    String::from_utf8_lossy(sid)
                ),
            ),
            Some(q) => (
                format!(
                    "Permissions Violation for Subscription to {} using queue {}",
                    go_quote(subject),
                    go_quote(q)
                ),
                format!(
                    "Subscription Violation - User {}, Subject {}, Queue: {}, SID {}",
                    go_quote(self.user.as_bytes()),
                    go_quote(subject),
                    go_quote(q),
                    String::from_utf8_lossy(sid)
                ),
            ),
        };
        self.send_err_text(&err_text);
        log::error!("{} - {log_text}", self.client.log_prefix());
    }

    /// `-ERR 'Permissions Violation for Publish to "x"'` and nats-server's log line. The
    /// message is dropped; the connection stays open.
    fn pub_violation(&mut self, subject: &[u8]) {
        let text = format!("Permissions Violation for Publish to {}", go_quote(subject));
        self.send_err_text(&text);
        log::error!(
            "{} - Publish Violation - User {}, Subject {}",
            self.client.log_prefix(),
            go_quote(self.user.as_bytes()),
            go_quote(subject)
        );
    }

    /// Sends `-ERR '<text>'` (a message built at run time), traced as nats-server does.
    fn send_err_text(&mut self, text: &str) {
        if self.trace {
            log::trace!("{} - ->> [-ERR {text}]", self.client.log_prefix());
        }
        let line = format!("-ERR '{text}'\r\n");
        self.send(line.as_bytes());
    }

    fn on_unsub(&mut self, sid: &[u8], max: Option<u64>) {
        self.active = true;
        let sub = self.client.subs.lock().get(sid).cloned();
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
        if let Some(sub) = sub {
            let now = match max {
                Some(max) if max > 0 => sub.set_max(max),
                _ => true,
            };
            if now {
                self.shared.unsubscribe(&sub);
            }
        }
    }

    /// A `PUB`/`HPUB` control line, as soon as it is parsed (its payload may still be on
    /// its way): traced, and checked in pedantic mode, when nats-server does both.
    fn on_pub_line(&mut self, line: &PubLine<'_>) {
        if self.trace {
            let op = if line.headers { "HPUB" } else { "PUB" };
            log::trace!(
                "{} - <<- [{op} {}]",
                self.client.log_prefix(),
                String::from_utf8_lossy(line.args)
            );
        }
        if self.opts.pedantic && !is_valid_literal_subject(line.subject) {
            // nats-server complains but still delivers.
            self.send_traced(err::INVALID_PUBLISH_SUBJECT, "-ERR");
        }
    }

    fn on_pub(&mut self, p: &Publish<'_>, chunk: &Bytes, start: usize) -> Result<(), Closing> {
        self.active = true;
        self.in_msgs += 1;
        self.in_bytes += p.payload.len() as u64;
        if let Some(perms) = &self.perms {
            // One cached lookup per message; nothing allocated once the subject is cached.
            if perms.restricts_publish() && !self.pub_cache.can_publish(perms, p.subject) {
                self.pub_violation(p.subject);
                return Ok(());
            }
        }
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
        let mut msg = Message::new(p, chunk, start + p.payload_offset);
        let delivered = self.route(&mut msg);
        if !delivered && self.opts.no_responders {
            if let Some(reply) = p.reply {
                self.no_responders(reply);
            }
        }
        Ok(())
    }

    /// Delivers a message to every matching subscription, local or on a route; returns
    /// whether anyone got it.
    fn route(&mut self, msg: &mut Message<'_, '_>) -> bool {
        let shared = &*self.shared;
        // The publisher's account: its table, and its name on routes. Subjects do not
        // cross accounts.
        let account = &self.account;
        let ctx = DeliveryContext {
            publisher: self.client.cid,
            echo: self.opts.echo,
            trace: self.trace,
            origin: Origin::Client {
                account: &account.name,
            },
        };
        deliver_message(
            shared,
            &account.sublist,
            &mut self.cache,
            &mut self.outbox,
            msg,
            &ctx,
        )
    }

    /// A request nobody can answer: tell the requester with a 503 status message, sent to
    /// the requester's own subscription on the reply subject (client protocol doc,
    /// "no_responders"; nats-server's exact bytes).
    fn no_responders(&mut self, reply: &[u8]) {
        let shared = &*self.shared;
        let sublist = &self.account.sublist;
        let result = self.cache.get(sublist).matches(sublist, reply);
        let Some(sub) = result
            .plain
            .iter()
            .find(|s| s.client.cid == self.client.cid)
        else {
            return;
        };
        let batch = self.outbox.batch_for(&self.client, &shared.pool);
        let before = batch.len();
        let buf = batch.buf_mut();
        buf.extend_from_slice(b"HMSG ");
        buf.extend_from_slice(reply);
        buf.push(b' ');
        buf.extend_from_slice(&sub.sid);
        buf.extend_from_slice(b" 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
        let added = batch.len() - before;
        self.outbox.add_staged(added);
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
        self.outbox
            .flush(&self.shared.pool, Some(&self.stall), self.client.cid);
    }

    fn publish_counters(&mut self) {
        if self.in_msgs > 0 {
            self.client.stats.inbound.add(self.in_msgs, self.in_bytes);
            self.in_msgs = 0;
            self.in_bytes = 0;
        }
    }

    /// nats-server's ping timer, without a timer: the first check comes
    /// `min(ping_interval, 2 s)` (plus up to 20% jitter) after the connection opens, then one
    /// every `ping_interval`. A check sends a PING unless the client published, subscribed or
    /// PINGed within the last interval (activity makes PINGs unnecessary), except that until
    /// a round trip has been seen (CONNECT or PONG) it always PINGs. A client that left
    /// `ping_max` PINGs unanswered is closed as stale.
    /// At each `CONNECT`, as nats-server: the ping timer restarts with the short first delay
    /// (see [`first_ping_delay`]); when it fires, a PING goes out whatever the activity
    /// unless one was sent within [`RTT_MEASUREMENT_INTERVAL`], so the client's first PING
    /// comes about 2 s after `CONNECT`, and none before `CONNECT` until a whole
    /// `ping_interval` has passed.
    fn schedule_first_ping(&mut self) {
        let delay = first_ping_delay(self.limits.ping_interval);
        self.next_ping_check = Instant::now() + delay;
        self.first_ping_pending = true;
        let _ = self.socket.set_read_timeout(delay.max(MIN_TIMEOUT));
    }

    fn check_ping(&mut self) -> Result<(), Closing> {
        let now = Instant::now();
        if self.active {
            // At most once per read: the reader's own copy for the ping timer, and the
            // client's for monitoring (one Relaxed store).
            self.active = false;
            self.last_activity = now;
            self.client.set_last_activity(now);
        }
        // (A read timeout never fires early, but allow for clock granularity.)
        if now + Duration::from_millis(5) < self.next_ping_check {
            return Ok(());
        }
        let interval = self.limits.ping_interval;
        // `interval` is at most a year (config::MAX_DURATION); saturate anyway.
        self.next_ping_check = now.checked_add(interval).unwrap_or(now);
        if self.first_ping_pending {
            // From now on the reader only needs to wake once per interval.
            self.first_ping_pending = false;
            let _ = self.socket.set_read_timeout(interval.max(MIN_TIMEOUT));
        }
        let recent = |t: Instant| now.duration_since(t) < interval;
        let need_rtt = self
            .last_ping_sent
            .is_none_or(|t| now.duration_since(t) > RTT_MEASUREMENT_INTERVAL);
        if !need_rtt && (recent(self.last_activity) || self.last_remote_ping.is_some_and(recent)) {
            return Ok(()); // recent activity: no PING needed
        }
        if self.pings_out + 1 > self.limits.ping_max {
            log::debug!(
                "{} - Stale Client Connection - Closing",
                self.client.log_prefix()
            );
            return Err(Closing::new(
                CloseReason::StaleConnection,
                Some(err::STALE_CONNECTION),
            ));
        }
        self.pings_out += 1;
        self.ping_sent = Some(now);
        self.last_ping_sent = Some(now);
        self.send_traced(protocol::PING, "PING");
        Ok(())
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
        let config = self.shared.config();
        let old_interval = self.limits.ping_interval;
        self.limits = Limits::of(&config);
        self.trace = config.trace;
        self.parser
            .set_limits(self.limits.max_control_line, self.limits.max_payload);
        if self.limits.ping_interval != old_interval && !self.first_ping_pending {
            let now = Instant::now();
            self.next_ping_check = now.checked_add(self.limits.ping_interval).unwrap_or(now);
            let _ = self.socket.set_read_timeout(self.limits.ping_interval);
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
    /// (`Shared::depart`: unregister, add the counters to the server's totals, keep a
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
        self.shared.registry.depart(&self.client, reason, &subs);
        log::debug!(
            "{} - Client connection closed: {}",
            self.client.log_prefix(),
            reason
        );
        self.client.reader_finished(&self.shared.pool);
    }

    fn trace_in(&self, op: &ClientOp<'_>) {
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
}

/// When the first ping check comes: `min(ping_interval, 2 s)` plus up to 20% of it, as
/// nats-server's `setFirstPingTimer` (the jitter spreads the PINGs of clients that connected
/// together).
/// How often the ping timer PINGs to measure the round trip even when the client is busy
/// (nats-server's `DEFAULT_RTT_MEASUREMENT_INTERVAL`).
const RTT_MEASUREMENT_INTERVAL: Duration = Duration::from_secs(3600);

/// The delay of the first ping check after a `CONNECT`: `ping_interval`, at most 2 s, plus up
/// to 20 % of random jitter (nats-server's `setFirstPingTimer` for clients,
/// `firstClientPingInterval`), so that the round trip is measured soon after connecting.
fn first_ping_delay(interval: std::time::Duration) -> std::time::Duration {
    let d = interval.min(std::time::Duration::from_secs(2));
    let jitter = d.as_nanos() as u64 / 5;
    d + std::time::Duration::from_nanos(fastrand::u64(0..=jitter))
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

/// Ends a `MSG`/`HMSG`/`RMSG` whose control line was just written into `batch` from byte
/// `before`: the payload from byte `skip` (shared with the other deliveries when large,
/// copied when small), CR LF, and the message count. With `trace`, logs the control line as
/// sent to that client. Returns the bytes staged since `before`.
fn finish_msg(
    batch: &mut crate::outbound::Batch,
    msg: &mut Message<'_, '_>,
    skip: usize,
    before: usize,
    trace: Option<&Client>,
) -> usize {
    let line_end = batch.buf_mut().len();
    let payload = &msg.publish.payload[skip..];
    if payload.len() >= SHARE_MIN {
        batch.push_shared(msg.shared_payload().slice(skip..));
    } else {
        batch.push(payload);
    }
    batch.push(b"\r\n");
    batch.count_msg(payload.len());
    if let Some(client) = trace {
        // The line just written, without its CR LF.
        let line = &batch.buf_mut()[before..line_end - 2];
        log::trace!(
            "{} - ->> [{}]",
            client.log_prefix(),
            String::from_utf8_lossy(line)
        );
    }
    batch.buf_mut().len() - before
}

/// The payload at `at..at + len` of the frozen read buffer `chunk`, as a `Bytes` that every
/// subscriber can share.
///
/// Slicing `chunk` costs nothing, but keeps the whole read buffer alive for as long as any
/// subscriber holds the payload, while `max_pending` only counts the payload. So the buffer
/// is sliced only when the payload is at least half of it (what is pinned is then at most
/// twice what is counted); otherwise the payload gets its own allocation, exactly its size.
fn share(chunk: &Bytes, at: usize, len: usize) -> Bytes {
    if len * 2 >= chunk.len() {
        chunk.slice(at..at + len)
    } else {
        Bytes::copy_from_slice(&chunk[at..at + len])
    }
}

/// One message being routed.
pub(crate) struct Message<'p, 'b> {
    publish: &'p Publish<'b>,
    /// The frozen read buffer the publish was parsed from.
    chunk: &'p Bytes,
    /// Offset of the payload in `chunk`.
    payload_at: usize,
    /// The payload as a shared `Bytes`, made on first need.
    shared: Option<Bytes>,
    /// For subscribers without headers support: the body size, formatted once.
    stripped_size: SizeToken,
}

impl<'p, 'b> Message<'p, 'b> {
    /// A message whose payload is at `payload_at` in the frozen read buffer `chunk`.
    pub(crate) fn new(publish: &'p Publish<'b>, chunk: &'p Bytes, payload_at: usize) -> Self {
        Message {
            publish,
            chunk,
            payload_at,
            shared: None,
            // Only needed (and only formatted) for messages with headers.
            stripped_size: SizeToken::new(
                publish
                    .headers
                    .map_or(0, |(h, _)| publish.payload.len().saturating_sub(h)),
            ),
        }
    }

    /// The payload as one `Bytes` every destination can share (see `share`).
    fn shared_payload(&mut self) -> Bytes {
        let (chunk, at, len) = (self.chunk, self.payload_at, self.publish.payload.len());
        self.shared
            .get_or_insert_with(|| share(chunk, at, len))
            .clone()
    }
}

/// Where a message comes from, which decides where it may go (nats-server's
/// `processMsgResults`).
pub(crate) enum Origin<'q> {
    /// A client of this server, in `account`: local subscribers, and once to each route with
    /// interest (with the queue groups this server picked that route for).
    Client {
        /// The publisher's account name.
        account: &'q str,
    },
    /// A route: local subscribers only, never another route; queue groups only those the
    /// sending server listed (it picked this server for them).
    Route {
        /// The queue groups named in `RMSG`.
        queues: &'q [&'q [u8]],
    },
}

/// Who publishes, for [`deliver_message`].
pub(crate) struct DeliveryContext<'q> {
    /// The publishing connection's cid (a route's rid for routed messages).
    pub publisher: u64,
    /// Whether the publisher gets its own messages.
    pub echo: bool,
    /// Trace deliveries.
    pub trace: bool,
    /// See [`Origin`].
    pub origin: Origin<'q>,
}

/// A route picked for a message, and the queue groups it must deliver to.
struct RouteTarget<'r> {
    client: &'r Arc<Client>,
    queues: smallvec::SmallVec<[&'r [u8]; 4]>,
}

/// Delivers `msg` to every subscription of `sublist` that matches it, staging the output in
/// `outbox`: plain subscriptions each get a copy, each queue group one (a random member,
/// local or a route), and each route with interest one `RMSG` (client publishes only).
/// Returns whether anyone got it (a route counts: it has a subscriber).
pub(crate) fn deliver_message(
    shared: &Shared,
    sublist: &crate::subjects::Sublist<Subscription>,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
    msg: &mut Message<'_, '_>,
    ctx: &DeliveryContext<'_>,
) -> bool {
    let result = cache.get(sublist).matches(sublist, msg.publish.subject);
    if result.is_empty() {
        return false;
    }
    let from_route = matches!(ctx.origin, Origin::Route { .. });
    let mut targets: smallvec::SmallVec<[RouteTarget<'_>; 4]> = smallvec::SmallVec::new();
    let mut d = Deliverer {
        shared,
        outbox,
        publisher: ctx.publisher,
        echo: ctx.echo,
        trace: ctx.trace,
    };
    let mut delivered = false;
    for sub in &result.plain {
        if sub.client.is_route() {
            // ROUTES: remote interest. A routed message never goes to another route.
            if !from_route && !sub.client.is_closing() {
                route_target(&mut targets, &sub.client);
            }
            continue;
        }
        delivered |= d.deliver(sub, msg);
    }
    for group in &result.groups {
        if let Origin::Route { queues } = ctx.origin {
            if !queues.contains(&&*group.name) {
                continue;
            }
        }
        // One member per group, chosen at random so load spreads evenly. fastrand keeps
        // its state in a thread-local: no shared counter between publishers. If the
        // chosen member cannot take it (closing, echo), try the next one.
        let n = group.members.len();
        let first = if n > 1 { fastrand::usize(..n) } else { 0 };
        for i in 0..n {
            let member = &group.members[(first + i) % n];
            if member.client.is_route() {
                // ROUTES: a member on another server; that server delivers to one of its
                // members (we list the group in the RMSG).
                if from_route || member.client.is_closing() {
                    continue;
                }
                let t = route_target(&mut targets, &member.client);
                targets[t].queues.push(&group.name);
                delivered = true;
                break;
            }
            if d.deliver(member, msg) {
                delivered = true;
                break;
            }
        }
    }
    if let Origin::Client { account } = ctx.origin {
        for t in &targets {
            d.forward(t, account, msg);
            delivered = true;
        }
    }
    delivered
}

/// The index of `client`'s entry in `targets`, added if new (a route gets one RMSG per
/// message however many of its subscriptions match).
fn route_target<'r>(
    targets: &mut smallvec::SmallVec<[RouteTarget<'r>; 4]>,
    client: &'r Arc<Client>,
) -> usize {
    match targets.iter().position(|t| t.client.cid == client.cid) {
        Some(i) => i,
        None => {
            targets.push(RouteTarget {
                client,
                queues: smallvec::SmallVec::new(),
            });
            targets.len() - 1
        }
    }
}

/// A decimal size formatted once, without allocating.
struct SizeToken {
    digits: [u8; 20],
    len: usize,
}

impl SizeToken {
    fn new(n: usize) -> Self {
        let mut buf = itoa::Buffer::new();
        let s = buf.format(n).as_bytes();
        let mut digits = [0u8; 20];
        digits[..s.len()].copy_from_slice(s);
        SizeToken {
            digits,
            len: s.len(),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

/// Puts one message into subscribers' batches.
pub(crate) struct Deliverer<'a> {
    shared: &'a Shared,
    outbox: &'a mut Outbox,
    publisher: u64,
    echo: bool,
    trace: bool,
}

impl Deliverer<'_> {
    /// Stages `msg` for `sub`. Returns false if the subscription could not take it.
    #[inline]
    fn deliver(&mut self, sub: &Arc<Subscription>, msg: &mut Message<'_, '_>) -> bool {
        if !self.echo && sub.client.cid == self.publisher {
            return false;
        }
        if sub.is_closed() || sub.client.is_closing() {
            return false;
        }
        if let Some(deny) = &sub.deny {
            // A wildcard subscription covering subjects its user may not subscribe to.
            if deny.matches(msg.publish.subject) {
                return false;
            }
        }
        let claim = sub.claim();
        if claim == Claim::Exhausted {
            self.shared.unsubscribe(sub);
            return false;
        }
        let p = msg.publish;
        // A subscriber that did not declare headers gets the body only, as a MSG.
        let (header_token, size_token, skip): (Option<&[u8]>, &[u8], usize) = match p.headers {
            Some((hdr_len, _)) if !sub.client.headers() => {
                (None, msg.stripped_size.as_bytes(), hdr_len)
            }
            Some((_, token)) => (Some(token), p.size_token, 0),
            None => (None, p.size_token, 0),
        };
        let batch = self.outbox.batch_for(&sub.client, &self.shared.pool);
        let before = batch.buf_mut().len();
        protocol::write_msg_line(
            batch.buf_mut(),
            &MsgLine {
                subject: p.subject,
                sid: &sub.sid,
                reply: p.reply,
                header_token,
                size_token,
            },
        );
        let added = finish_msg(batch, msg, skip, before, self.trace.then_some(&*sub.client));
        self.outbox.add_staged(added);
        if claim == Claim::DeliverLast {
            self.shared.unsubscribe(sub);
        }
        true
    }

    /// Stages `msg` for a route as `RMSG`/`HMSG` (route protocol), with the queue groups
    /// this server picked that route for. Headers always cross (nats-server 2.9 routes
    /// support them).
    fn forward(&mut self, t: &RouteTarget<'_>, account: &str, msg: &mut Message<'_, '_>) {
        let p = msg.publish;
        let batch = self.outbox.batch_for(t.client, &self.shared.pool);
        let before = batch.buf_mut().len();
        crate::protocol::route::write_rmsg_line(
            batch.buf_mut(),
            &crate::protocol::route::RmsgLine {
                account: account.as_bytes(),
                subject: p.subject,
                reply: p.reply,
                queues: &t.queues,
                header_token: p.headers.map(|(_, t)| t),
                size_token: p.size_token,
            },
        );
        let added = finish_msg(batch, msg, 0, before, self.trace.then_some(t.client));
        self.outbox.add_staged(added);
    }
}
