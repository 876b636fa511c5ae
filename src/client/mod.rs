//! Client connections.
//!
//! A connection is split by who touches it:
//! - [`Client`] (this module) is the part *shared* between threads, behind an `Arc`: its
//!   outbound queue, counters, subscriptions and close state. Other clients' reader threads
//!   push messages into it; writer threads drain it.
//! - the reader thread's private state (the `reader` module): the socket's read side, the parser, the
//!   read buffer, the `CONNECT` options, the match cache and the outbox. Nothing there is
//!   shared, so nothing there is locked.
//!
//! Closing: any thread may decide a client must go (its own reader on EOF or a protocol
//! error, another reader on a slow consumer, a writer on a write error, the server on
//! shutdown). The first decision wins and records the reason. A *graceful* close lets the
//! writer flush what is queued and then shuts the socket; an *abortive* one shuts it at once.
//! Either way the client's own reader thread wakes up from its blocking read and is the one
//! that removes the subscriptions and unregisters the client.

mod doorbell;
mod leaf;
mod service;
mod snapshot;
mod stats;
mod subscription;
pub(crate) mod tls;

pub use crate::outbound::StallPolicy;
pub use doorbell::{Doorbell, Ring};
pub use service::{Service, ServiceMsg, ServiceReply};
pub use snapshot::{ClientSnapshot, SubSnapshot};
pub use stats::{ClientStats, MsgCounter, Traffic};
pub use subscription::{Claim, Subscription};
pub(crate) use tls::{lock_session, TlsSlot};

/// An account of this server: its subscription table holds [`Subscription`]s.
pub type Account = crate::account::Account<Subscription>;
/// The server's account registry.
pub type Accounts = crate::account::Accounts<Subscription>;
/// A successful login, to one of the server's accounts.
pub type Login = crate::auth::Login<Subscription>;
/// The server's authentication settings.
pub type Authenticator = crate::auth::Authenticator<Subscription>;

use crate::close::CloseReason;
use crate::outbound::{Batch, BatchPool, Outbound, Output, Token};
use crate::socket::Socket;
use crossbeam_channel::Sender;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The shared part of a client connection. See the module docs.
pub struct Client {
    /// Connection id (`cid`, `client_id` in `INFO`), unique per server run.
    pub cid: u64,
    /// The client's address.
    pub addr: SocketAddr,
    /// When the connection was accepted (wall clock, for monitoring).
    pub start: SystemTime,
    /// The same moment on the monotonic clock; `last_activity` counts from it.
    start_instant: Instant,
    /// When the client last published, (un)subscribed or sent `CONNECT`, in nanoseconds
    /// since `start_instant` (nats-server's `last`, shown by `/connz` as `last_activity`).
    /// Stored by the client's reader at most once per read; read by monitoring. Relaxed: a
    /// statistic that publishes nothing else, and a monitoring read that races with a store
    /// just shows the previous activity.
    last_activity: AtomicU64,
    /// The last measured round trip in nanoseconds, 0 until measured (nats-server's `rtt`):
    /// from accept to `CONNECT`, then from each server `PING` to the client's `PONG`. Stored
    /// by the reader, read by monitoring; Relaxed for the same reason as `last_activity`.
    rtt: AtomicU64,
    /// The server's totals of departed connections, which this client's counters join when
    /// it leaves (see [`Client::settle`] and the `Drop` impl).
    departed: Arc<ClientStats>,
    /// What [`Client::settle`] added to `departed`, so that `Drop` adds only what came later.
    /// Locked once, by the reader when it finishes; `Drop` has exclusive access.
    settled: Mutex<Option<Traffic>>,
    /// The writers' handle on the socket: the reader's own `Arc` (one descriptor per
    /// connection). Also used to shut the socket down, which is how any thread wakes the
    /// blocked reader. Dropped (set to `None`) once the socket is shut, so a `Client` that
    /// lingers in some thread's match cache does not keep the descriptor open after its
    /// reader has gone. Read-locked by the writer holding the token for each write,
    /// write-locked once, to drop it; readers of the lock never wait for each other.
    pub(crate) socket: RwLock<Option<Arc<Socket>>>,
    /// Bytes waiting to be written.
    pub(crate) outbound: Outbound,
    /// The writer's side of the output (batches in flight, retry timers, TLS ciphertext).
    /// Reached only through [`Client::output`], by the holder of the scheduled [`Token`],
    /// and once by [`Client::release`] for a departed connection; so the lock is contended
    /// only in that one moment (a reader freeing its connection while a writer shuts it).
    /// The token makes the writer's exclusive access a type; the mutex remains because
    /// `release` can run without the token (see there).
    output: Mutex<Output>,
    /// The doorbell: hands this client to its writer (the writer pool's, in `beaver`).
    doorbell: Doorbell,
    /// 0 while open, else the [`CloseReason`] that closed it (first one wins).
    close_reason: AtomicU8,
    /// Set once the socket has been shut down; queued output is then discarded.
    shut: AtomicBool,
    /// The reader has finished with this connection (see [`Client::release`]).
    reader_done: AtomicBool,
    /// What a departed connection no longer needs has been freed (see [`Client::release`]).
    released: AtomicBool,
    /// Whether the client declared `headers` (set by its reader at `CONNECT`, read by
    /// publishers to decide between `HMSG` and a header-stripped `MSG`).
    headers: AtomicBool,
    /// The client sent `CONNECT` with `protocol` 1 and so takes async `INFO` (lame-duck
    /// notice). Relaxed: set once by the reader, read by the lame-duck thread.
    async_info: AtomicBool,
    /// Subscriptions by sid. Locked by the owner on SUB/UNSUB/close, by a publisher's reader
    /// when an auto-unsubscribe limit is reached, and by monitoring; never per message.
    pub(crate) subs: Mutex<FxHashMap<Box<[u8]>, Arc<Subscription>>>,
    /// Name, lang and version from `CONNECT`, for logs and monitoring (set by the reader,
    /// read by other threads when they log about this client).
    identity: Mutex<Identity>,
    /// `allow_responses`: the reply subjects of the messages delivered to it, which it may
    /// answer (`None` without the permission). Locked by whoever delivers a message with a
    /// reply, and by its reader when a publish is not otherwise allowed; a leaf lock.
    replies: Mutex<Option<crate::auth::permissions::Replies>>,
    /// Whether `replies` is `Some`: delivery checks this flag, not the lock.
    tracks_replies: AtomicBool,
    /// The account the client is in: `$G` until a user of another account logs in. Set by
    /// the reader at its first login (a client never changes accounts afterwards, and has
    /// no subscription before it); read by monitoring. The reader keeps its own clone for
    /// the message path, which never takes this lock.
    account: Mutex<Arc<crate::client::Account>>,
    /// Counters.
    pub stats: ClientStats,
    /// `max_pending` in bytes: a batch that would push the queue past it closes the client
    /// as a slow consumer.
    max_pending: usize,
    /// The TLS session, when the connection uses TLS (a client's: the server side; a route's:
    /// either side, see [`TlsSlot`]). Locked by the reader to decrypt what it
    /// read (`read_tls`, `process_new_packets`, reading plaintext) and by the writer holding
    /// the scheduled token to encrypt a gather of batches into ciphertext. Socket I/O is
    /// never done under it, and no other lock is taken under it (lock order:
    /// `Client::output` → `Client::tls`; see docs/architecture.md, "TLS"). The inner
    /// `Option` is emptied when the connection has left ([`Client::release`]): the session's
    /// buffers go then, whoever still holds the `Client`. Lock it with [`lock_session`].
    pub(crate) tls: Option<TlsSlot>,
    /// This connection is a route to another server, not a client (set before it is
    /// shared; see [`Client::into_route`]).
    route: bool,
    /// A leafnode connection: `Some(spoke)`, set before it is shared (see `leaf.rs`).
    leaf: Option<bool>,
    /// A WebSocket client: what the writers need to frame its output (set before it is
    /// shared; see [`Client::into_websocket`]).
    pub(crate) websocket: Option<crate::websocket::Framing>,
    /// For a service of the server ([`Client::new_service`]): where its messages go instead
    /// of a socket.
    service: Option<Arc<dyn Service>>,
}

const OPEN: u8 = 0;

impl Client {
    /// Creates the shared state for an accepted connection. `socket` is the one the reader
    /// also holds.
    // One caller (the acceptor's `spawn`); a parameter struct would only rename the list.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        cid: u64,
        addr: SocketAddr,
        socket: Arc<Socket>,
        doorbell: impl Into<Doorbell>,
        max_pending: usize,
        departed: Arc<ClientStats>,
        tls: Option<rustls::Connection>,
        account: Arc<crate::client::Account>,
    ) -> Self {
        let socket = Some(socket);
        let doorbell = doorbell.into();
        Client::new_inner(
            cid,
            addr,
            socket,
            doorbell,
            max_pending,
            departed,
            tls,
            account,
        )
    }

    // The two constructors' shared body (a socket, or none for a service).
    #[allow(clippy::too_many_arguments)]
    fn new_inner(
        cid: u64,
        addr: SocketAddr,
        socket: Option<Arc<Socket>>,
        doorbell: Doorbell,
        max_pending: usize,
        departed: Arc<ClientStats>,
        tls: Option<rustls::Connection>,
        account: Arc<crate::client::Account>,
    ) -> Self {
        Client {
            cid,
            addr,
            start: SystemTime::now(),
            start_instant: Instant::now(),
            last_activity: AtomicU64::new(0),
            rtt: AtomicU64::new(0),
            departed,
            settled: Mutex::new(None),
            socket: RwLock::new(socket),
            outbound: Outbound::new(),
            output: Mutex::new(Output::default()),
            doorbell,
            close_reason: AtomicU8::new(OPEN),
            shut: AtomicBool::new(false),
            reader_done: AtomicBool::new(false),
            released: AtomicBool::new(false),
            headers: AtomicBool::new(false),
            async_info: AtomicBool::new(false),
            subs: Mutex::new(FxHashMap::default()),
            identity: Mutex::new(Identity::default()),
            replies: Mutex::new(None),
            tracks_replies: AtomicBool::new(false),
            account: Mutex::new(account),
            stats: ClientStats::default(),
            max_pending,
            tls: tls.map(|t| Mutex::new(Some(t))),
            route: false,
            leaf: None,
            websocket: None,
            service: None,
        }
    }

    /// The client of an in-process service (JetStream): no socket, never registered as a
    /// connection; deliveries to its subscriptions call `service` on the publisher's thread
    /// (see [`Service`]). `cid` comes from the registry, like any connection's.
    pub fn new_service(
        cid: u64,
        doorbell: Sender<Ready>,
        account: Arc<crate::client::Account>,
        service: Arc<dyn Service>,
    ) -> Self {
        let addr = SocketAddr::from(([0, 0, 0, 0], 0));
        let mut client = Client::new_inner(
            cid,
            addr,
            None,
            Doorbell::pool(doorbell),
            usize::MAX,
            Arc::default(),
            None,
            account,
        );
        client.service = Some(service);
        client
    }

    /// The service this client stands for, if it is one.
    #[inline]
    pub fn service(&self) -> Option<&Arc<dyn Service>> {
        self.service.as_ref()
    }

    /// Marks a new connection as a route (`crate::route`): its subscriptions are remote
    /// interest, publishers send it `RMSG` instead of `MSG`, and logs say `rid`.
    pub(crate) fn into_route(mut self) -> Self {
        self.route = true;
        self
    }

    /// Marks an accepted connection as a WebSocket client, before it is shared: its output
    /// is framed by the writers once its reader has answered the upgrade.
    pub(crate) fn into_websocket(mut self) -> Self {
        self.websocket = Some(crate::websocket::Framing::new());
        self
    }

    /// Whether this is a WebSocket client.
    #[inline]
    pub fn is_websocket(&self) -> bool {
        self.websocket.is_some()
    }

    /// Whether this connection is a route to another server.
    #[inline]
    pub fn is_route(&self) -> bool {
        self.route
    }

    /// Whether this connection uses TLS.
    #[inline]
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The authorized user (nats-server's `getRawAuthUser`: the user name, or the token for
    /// token authentication); empty without authentication. Shown by `/connz?auth=1`.
    pub fn authorized_user(&self) -> String {
        self.identity.lock().user.clone()
    }

    /// Records the authorized user (at a successful `CONNECT`).
    pub(crate) fn set_authorized_user(&self, user: &str) {
        let mut id = self.identity.lock();
        if id.user != user {
            id.user = user.to_owned();
        }
    }

    /// What the client last authenticated with, for a reload to check again; `None` until
    /// its first `CONNECT` (or without authentication).
    pub fn credentials(&self) -> Option<Arc<crate::auth::Credentials>> {
        self.identity.lock().credentials.clone()
    }

    /// Records a successful authentication's credentials.
    pub(crate) fn set_credentials(&self, credentials: crate::auth::Credentials) {
        self.identity.lock().credentials = Some(Arc::new(credentials));
    }

    /// Starts (or stops) tracking the reply subjects this client may answer
    /// (`allow_responses`), at a login.
    pub(crate) fn set_response_permission(&self, p: Option<crate::config::ResponsePermission>) {
        *self.replies.lock() = p.map(crate::auth::permissions::Replies::new);
        // Relaxed: a delivery racing with the login may go untracked, as in nats-server,
        // where the permission takes effect for messages delivered after it.
        self.tracks_replies.store(p.is_some(), Ordering::Relaxed);
    }

    /// A message with the reply subject `reply` is being delivered to this client: remembered
    /// if it may answer it. One relaxed load for clients without `allow_responses`.
    #[inline]
    pub fn note_reply(&self, reply: &[u8]) {
        if self.tracks_replies.load(Ordering::Relaxed) {
            if let Some(r) = self.replies.lock().as_mut() {
                r.delivered(reply, Instant::now());
            }
        }
    }

    /// Whether this client may publish a response to `subject`, a reply subject of a message
    /// it received (`allow_responses`); counts the response.
    pub(crate) fn may_respond(&self, subject: &[u8]) -> bool {
        self.replies
            .lock()
            .as_mut()
            .is_some_and(|r| r.respond(subject, Instant::now()))
    }

    /// The account the client is in (`$G` unless it logged in as a user of an account).
    pub fn account(&self) -> Arc<crate::client::Account> {
        self.account.lock().clone()
    }

    /// Records the account the client logged in to.
    pub(crate) fn set_account(&self, account: &Arc<crate::client::Account>) {
        *self.account.lock() = account.clone();
    }

    /// The negotiated TLS version and cipher suite (Go's names), empty without TLS.
    pub fn tls_info(&self) -> (String, String) {
        let id = self.identity.lock();
        (id.tls_version.clone(), id.tls_cipher.clone())
    }

    /// Records the negotiated TLS version and cipher suite (after the handshake).
    pub(crate) fn set_tls_info(&self, version: String, cipher: String) {
        let mut id = self.identity.lock();
        id.tls_version = version;
        id.tls_cipher = cipher;
    }

    /// Whether the client supports headers.
    #[inline]
    pub fn headers(&self) -> bool {
        // Relaxed: a publisher that races with the CONNECT just sees the old value, as it
        // would have had it published a moment earlier.
        self.headers.load(Ordering::Relaxed)
    }

    pub(crate) fn set_headers(&self, on: bool) {
        self.headers.store(on, Ordering::Relaxed);
    }

    /// Whether the client takes async `INFO` (`CONNECT` with `protocol` 1).
    pub fn takes_async_info(&self) -> bool {
        self.async_info.load(Ordering::Relaxed)
    }

    pub(crate) fn set_async_info(&self, on: bool) {
        self.async_info.store(on, Ordering::Relaxed);
    }

    /// The client's name from `CONNECT` (empty if none).
    pub fn name(&self) -> String {
        self.identity.lock().name.clone()
    }

    /// Records the client's name, library language and version (from `CONNECT`).
    pub(crate) fn set_identity(&self, name: &str, lang: &str, version: &str) {
        let mut id = self.identity.lock();
        if id.name != name || id.lang != lang || id.version != version {
            id.name = name.to_owned();
            id.lang = lang.to_owned();
            id.version = version.to_owned();
        }
    }

    /// The client's name, lang and version from `CONNECT` (each empty if not given).
    pub fn identity(&self) -> (String, String, String) {
        let id = self.identity.lock();
        (id.name.clone(), id.lang.clone(), id.version.clone())
    }

    /// Records activity at `now` (see the `last_activity` field). Called by the reader.
    pub(crate) fn set_last_activity(&self, now: Instant) {
        let nanos = now.saturating_duration_since(self.start_instant).as_nanos();
        self.last_activity
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// When the client was last active (its `start` until it publishes, (un)subscribes or
    /// sends `CONNECT`).
    pub fn last_activity(&self) -> SystemTime {
        let since_start = Duration::from_nanos(self.last_activity.load(Ordering::Relaxed));
        self.start.checked_add(since_start).unwrap_or(self.start)
    }

    /// Records a measured round trip (at least 1 ns, as nats-server's `computeRTT`).
    pub(crate) fn set_rtt(&self, rtt: Duration) {
        let nanos = u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.rtt.store(nanos, Ordering::Relaxed);
    }

    /// Records the round trip from accept to `now` (at `CONNECT`, as nats-server estimates
    /// it first).
    pub(crate) fn set_rtt_since_accept(&self, now: Instant) {
        self.set_rtt(now.saturating_duration_since(self.start_instant));
    }

    /// The last measured round trip; zero until one was measured.
    pub fn rtt(&self) -> Duration {
        Duration::from_nanos(self.rtt.load(Ordering::Relaxed))
    }

    /// Adds this client's counters to the server's totals of departed connections, and
    /// returns them. Called once, by the reader when it finishes (after the last of its
    /// own `in_*` counts). A publisher that was already past its closing check may still add
    /// to `out_*` afterwards; `Drop` adds that remainder, so the server's totals end up
    /// exact and never go down.
    pub(crate) fn settle(&self) -> Traffic {
        let mut settled = self.settled.lock();
        let now = self.stats.snapshot();
        let before = settled.unwrap_or_default();
        self.departed.add(now.since(before));
        *settled = Some(now);
        now
    }

    /// Bytes queued for this client.
    pub fn pending_bytes(&self) -> usize {
        self.outbound.pending()
    }

    /// Number of subscriptions.
    pub fn num_subs(&self) -> usize {
        self.subs.lock().len()
    }

    /// Whether a close has been decided (output may still be flushing).
    #[inline]
    pub fn is_closing(&self) -> bool {
        // Relaxed: used to skip work early; the authoritative transition is the CAS below.
        self.close_reason.load(Ordering::Relaxed) != OPEN
    }

    /// Whether the socket has been shut down.
    #[inline]
    pub fn is_shut(&self) -> bool {
        self.shut.load(Ordering::Acquire)
    }

    /// The reader is done with this connection (it has departed). If the socket is shut
    /// already, frees what the connection no longer needs, on this (otherwise idle) thread;
    /// if not, the writer that shuts it will (see [`Client::release`]).
    pub(crate) fn reader_finished(&self, pool: &BatchPool) {
        // A handshake with whoever shuts the socket (swap of `shut`) and the writer that then
        // reads `reader_done` (`should_release`): each side sets its flag with a
        // read-modify-write and reads the other's with one (AcqRel), so at least one of the
        // two sees the other and releases (as the stall handshake in `outbound`).
        self.reader_done.swap(true, Ordering::AcqRel);
        if self.shut.fetch_or(false, Ordering::AcqRel) {
            self.release(pool);
        }
    }

    /// Writer side, for a shut socket: whether the reader has finished, so that the writer
    /// must release the connection itself ([`Client::release_locked`]); otherwise the reader
    /// will, and the writer leaves the queue alone ([`Outbound::abandon`]).
    pub(crate) fn should_release(&self) -> bool {
        self.reader_done.fetch_or(false, Ordering::AcqRel)
    }

    /// Frees what a connection that has left no longer needs, whoever still holds the
    /// `Client` (a reader's match cache keeps it until that reader next wakes): the output
    /// still queued, the writer's buffers, the TLS session. Done once, by the connection's
    /// own reader when it finishes after the socket was shut (so that cutting many slow
    /// consumers at once, each with up to `max_pending` queued, costs their idle reader
    /// threads the freeing, not the writers that serve everyone else), or else by the
    /// writer that shuts the socket later ([`Client::release_locked`]).
    pub(crate) fn release(&self, pool: &BatchPool) {
        if !self.released.swap(true, Ordering::AcqRel) {
            // Lock order: `Client::output` → `Client::tls`. A writer holds `output` only for
            // one flush, which never waits for the socket.
            self.release_with(&mut self.output.lock(), pool);
        }
    }

    /// [`Client::release`] by the writer holding the token, which has the output locked
    /// already.
    pub(crate) fn release_locked(&self, st: &mut Output, pool: &BatchPool) {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.release_with(st, pool);
        }
    }

    fn release_with(&self, st: &mut Output, pool: &BatchPool) {
        st.free(&self.outbound, pool);
        if let Some(tls) = &self.tls {
            *tls.lock() = None;
        }
    }

    /// The reason the client was closed, once it is.
    pub fn close_reason(&self) -> Option<CloseReason> {
        CloseReason::from_u8(self.close_reason.load(Ordering::Acquire))
    }

    /// Records `reason` if the client is still open. True for the caller that closed it.
    fn decide_close(&self, reason: CloseReason) -> bool {
        self.close_reason
            .compare_exchange(OPEN, reason as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Queues a batch for this client and wakes a writer if needed.
    ///
    /// Returns the batch to `pool` instead when the client is closing, or when the batch
    /// would push the queue past `max_pending`, which closes the client as a slow consumer.
    pub fn enqueue(self: &Arc<Self>, batch: Batch, pool: &BatchPool) -> Enqueued {
        let (enqueued, token) = self.enqueue_keeping(batch, pool);
        if let Some(token) = token {
            self.ring(token);
        }
        enqueued
    }

    /// [`Client::enqueue`], but the scheduled token, when this push took it, goes to the
    /// caller instead of the writer pool: a publisher's reader may then write the delivery
    /// itself (`writer::Direct`) before handing the client to the pool with
    /// [`Client::ring`].
    pub(crate) fn enqueue_keeping(
        self: &Arc<Self>,
        batch: Batch,
        pool: &BatchPool,
    ) -> (Enqueued, Option<Token>) {
        if self.is_closing() {
            pool.give(batch);
            return (Enqueued::Dropped, None);
        }
        let pending = self.outbound.pending();
        let batch_len = batch.len();
        if pending + batch_len > self.max_pending {
            pool.give(batch);
            if self.abort(CloseReason::SlowConsumerPendingBytes) {
                // The prefix names the client (address, cid, and `"version:lang:name"` as
                // nats-server shows it); the numbers say why: what was queued, and what
                // this message would have made it.
                log::warn!(
                    "{} - Slow Consumer Detected: MaxPending of {} Exceeded ({} bytes pending, \
                     {} with this message)",
                    self.log_prefix(),
                    self.max_pending,
                    pending,
                    pending + batch_len
                );
                return (Enqueued::SlowConsumer { pending }, None);
            }
            return (Enqueued::Dropped, None);
        }
        let (msgs, bytes) = batch.msg_counts();
        if msgs > 0 {
            self.stats.outbound.add(msgs, bytes);
        }
        (Enqueued::Queued, self.outbound.push(batch))
    }

    /// Queues bytes the writer sends as they are, after everything queued before: a
    /// WebSocket control frame (see [`Batch::verbatim`]). Counted against `max_pending` like
    /// any output: a client that floods pings and never reads is a slow consumer.
    pub(crate) fn queue_verbatim(self: &Arc<Self>, bytes: Vec<u8>, pool: &BatchPool) {
        let _ = self.enqueue(Batch::verbatim(bytes), pool);
    }

    /// Wakes a writer for this client even though nothing is queued: a TLS session has
    /// records of its own to send (an alert, a key update). The empty batch takes the
    /// scheduled token like any other, so the usual wake-up protocol applies.
    pub(crate) fn kick(self: &Arc<Self>) {
        if let Some(token) = self.outbound.push(Batch::new()) {
            self.ring(token);
        }
    }

    /// Hands the client, with its scheduled token, to the writer pool.
    pub(crate) fn ring(self: &Arc<Self>, token: Token) {
        self.doorbell.ring(self.clone(), token);
    }

    /// An async producer's wait for this client's queue to drain (backpressure; see
    /// [`crate::outbound::StallWait`]), until `deadline` at the latest.
    pub fn stall_wait(
        &self,
        policy: &StallPolicy,
        deadline: Instant,
    ) -> crate::outbound::StallWait<'_> {
        self.outbound.stall_wait(policy, deadline)
    }

    /// The writer's side of the output, for the holder of the scheduled token. Never
    /// waits in practice (see the `output` field).
    pub(crate) fn output(&self, token: &Token) -> parking_lot::MutexGuard<'_, Output> {
        self.outbound.check(token);
        self.output.lock()
    }

    /// Graceful close: stop accepting output, let the writer flush what is queued, then shut
    /// the socket. Returns true if this call closed the client.
    pub fn close(self: &Arc<Self>, reason: CloseReason) -> bool {
        if !self.decide_close(reason) {
            return false;
        }
        self.outbound.wake_stalled();
        // The marker bypasses the closing check in `enqueue`: it must go after everything
        // queued so far.
        if let Some(token) = self.outbound.push(Batch::close_marker()) {
            self.ring(token);
        }
        true
    }

    /// Abortive close: shut the socket now; queued output is discarded. Returns true if this
    /// call closed the client (it shuts the socket either way).
    pub fn abort(&self, reason: CloseReason) -> bool {
        let first = self.decide_close(reason);
        self.shut_socket();
        first
    }

    /// Shuts the socket down (idempotent). The reader's blocking read then returns.
    pub(crate) fn shut_socket(&self) {
        // AcqRel: see `reader_finished`.
        if !self.shut.swap(true, Ordering::AcqRel) {
            if let Some(socket) = self.socket.read().as_ref() {
                socket.shutdown();
            }
            self.outbound.wake_stalled();
            // Let go of the socket (the descriptor closes when the reader lets go too, as it
            // exits). Waits for a writer that is in the middle of a write to this socket,
            // which the shutdown above has just made fail.
            self.socket.write().take();
        }
    }

    /// Removes the subscription `sid` if it is still `sub` (used when an auto-unsubscribe
    /// limit is reached on another thread). Returns whether it was removed.
    pub(crate) fn remove_sub_if(&self, sid: &[u8], sub: &Arc<Subscription>) -> bool {
        let mut subs = self.subs.lock();
        match subs.get(sid) {
            Some(s) if Arc::ptr_eq(s, sub) => {
                subs.remove(sid);
                true
            }
            _ => false,
        }
    }

    /// A short description for logs: `IP:PORT - cid:N`, nats-server's prefix.
    ///
    /// Once `CONNECT` gave a version, lang or name, nats-server appends them quoted, as
    /// `- "v1.30.0:go:my-service"`; so does beaver.
    pub fn log_prefix(&self) -> String {
        if let Some(kind) = self.server_kind() {
            return format!("{} - {kind}:{}", self.addr, self.cid);
        }
        // nats-server's prefix for WebSocket clients.
        let kind = if self.websocket.is_some() {
            "wid"
        } else {
            "cid"
        };
        let id = self.identity.lock();
        let mut ncs = String::new();
        if !id.version.is_empty() {
            ncs = format!("v{}", id.version);
        }
        for part in [&id.lang, &id.name] {
            if !part.is_empty() {
                if !ncs.is_empty() {
                    ncs.push(':');
                }
                ncs.push_str(part);
            }
        }
        if ncs.is_empty() {
            format!("{} - {kind}:{}", self.addr, self.cid)
        } else {
            format!("{} - {kind}:{} - {:?}", self.addr, self.cid, ncs)
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // The last reference is gone, so every counter update has happened (the reference
        // count's release/acquire orders them before this). Add what `settle` did not see.
        let before = self.settled.get_mut().unwrap_or_default();
        let rest = self.stats.snapshot().since(before);
        self.departed.add(rest);
    }
}

/// What a client said about itself in `CONNECT`.
#[derive(Debug, Default, Clone)]
struct Identity {
    name: String,
    lang: String,
    version: String,
    /// The authorized user (see [`Client::authorized_user`]).
    user: String,
    /// What it authenticated with (see [`Client::credentials`]).
    credentials: Option<Arc<crate::auth::Credentials>>,
    /// TLS version and cipher suite, Go's names.
    tls_version: String,
    tls_cipher: String,
}

/// What the writer pool's ready queue carries (the doorbell's message).
pub enum Ready {
    /// A client with queued output, and its scheduled token: the writer that receives it is
    /// the one that drains it.
    Client(Arc<Client>, Token),
    /// Exit (one per writer, sent when the pool stops).
    Stop,
}

/// What [`Client::enqueue`] did with a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued for writing.
    Queued,
    /// Dropped: the client is closing.
    Dropped,
    /// Dropped, and the client was closed as a slow consumer by this call.
    SlowConsumer {
        /// Bytes that were pending.
        pending: usize,
    },
}
