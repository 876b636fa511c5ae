//! The server: shared state, the acceptor thread, start-up and shutdown.
//!
//! Threads (see docs/architecture.md for the whole picture):
//! - the **acceptor** blocks in `accept()` and starts one reader thread per connection;
//! - **reader threads** (one per client) parse and route ([`crate::client`]);
//! - **writer threads** (a fixed pool) drain outbound queues into sockets ([`crate::writer`]).
//!
//! - the **monitor** (`-m`), when enabled, serves the HTTP endpoints ([`crate::monitor`]).
//!
//! ## Departures
//! A connection's reader, when it finishes, calls `Shared::depart`: under the closed-ring
//! lock it unregisters the client, adds the client's counters to the totals of departed
//! connections, and keeps a snapshot of it in the ring of closed connections. Monitoring
//! reads the registry and those totals under the same lock, so a connection that leaves is
//! counted once: never in both, never in neither.
//!
//! ## Shutdown protocol
//! [`Server::shutdown`]: set `shutting_down` (the acceptors drop whatever they still
//! accept), then (1) close every client gracefully (each gets a close marker behind what is
//! already queued, so writers flush accepted output first and then shut the socket, which
//! wakes its reader, which removes its subscriptions and unregisters) and every route;
//! (2) stop monitoring and the accept loops ([`AcceptLoop::stop`]: bounded, never hanging);
//! (3) wait until every reader is gone, up to [`SHUTDOWN_GRACE`], then shut any straggler's
//! socket at once; (4) stop the writer pool.

mod acceptor;

use crate::client::Accounts;
use crate::client::Ready;
use crate::client::StallPolicy;
use crate::client::{Client, ClientStats, Subscription, Traffic};
use crate::close::CloseReason;
use crate::config::Config;
use crate::listen::AcceptLoop;
use crate::monitor::{ClosedConn, ClosedConnections, Monitor};
use crate::outbound::BatchPool;
use crate::protocol::{generate_server_id, ServerInfo, NATS_VERSION, RUNTIME_VERSION};
use crate::writer::WriterPool;
use crossbeam_channel::Sender;
use dashmap::DashMap;
use parking_lot::{Mutex, RwLock};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long shutdown waits for queued output to be written before cutting connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Largest capacity of the writers' ready queue (see `Server::start`).
pub const READY_QUEUE_MAX: usize = 256 * 1024;

/// beaver's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// State shared by every thread of one server.
pub struct Shared {
    /// Client authentication, compiled from `config.authorization`.
    pub auth: crate::client::Authenticator,
    /// The TLS server configuration, when `config.tls` is set.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The current configuration: the one the server started with, replaced by each
    /// successful reload (SIGHUP). Read it with [`Shared::config`]. Readers cache what they
    /// use per connection and refresh it when `config_generation` moves, so the message path
    /// never takes this lock.
    /// When the configuration in use was loaded: the start, then each successful reload
    /// (`/varz` `config_load_time`). A lock only monitoring and reloads take.
    config_load_time: Mutex<SystemTime>,
    config: RwLock<Arc<Config>>,
    /// Bumped (Release) after each reload; readers load it (Acquire) once per read to see
    /// whether their cached limits are stale.
    config_generation: AtomicU64,
    /// Lame-duck mode has started: no new clients; INFO says `"ldm": true`.
    lame_duck: AtomicBool,
    /// `write_deadline` in nanoseconds, shared with the writer pool (see `set_config`).
    write_deadline: Arc<AtomicU64>,
    /// The accounts, each with its subscription table: `$G` (the global account, where
    /// every client is when no accounts are configured) and the configured ones. Fixed at
    /// start (reload refuses account changes), so read without a lock.
    pub accounts: Accounts,
    /// Connected clients by cid.
    pub clients: DashMap<u64, Arc<Client>>,
    /// Client connections admitted under `max_connections` whose reader has not exited yet
    /// (see [`Shared::admit`]). Unlike the registry's size, it never counts a connection
    /// that is being refused.
    admitted: AtomicUsize,
    /// Recycled outbound batches.
    pub pool: Arc<BatchPool>,
    /// The writer pool's ready queue (cloned into every client).
    pub doorbell: Sender<Ready>,
    /// Backpressure on fast producers.
    pub stall: StallPolicy,
    /// This server's id.
    pub server_id: String,
    /// This server's name.
    pub server_name: String,
    /// The address clients connect to.
    pub local_addr: SocketAddr,
    /// When the server started (wall clock: `/varz` `start`).
    pub start: SystemTime,
    /// The same moment on the monotonic clock (uptime).
    pub start_instant: Instant,
    /// Messages and bytes of the connections that have left (see `Shared::depart`); open
    /// connections keep their own counters, summed on request.
    pub departed: Arc<ClientStats>,
    /// The last `max_closed_clients` closed connections (`/connz?state=closed`). Its lock
    /// also makes departures atomic for monitoring (see the module docs). Lock order: this,
    /// then the registry's shard locks, then (in `Shared::depart`) the leaving client's
    /// `settled` lock; nothing else is taken under it.
    pub closed: Mutex<ClosedConnections>,
    /// Connections closed, per [`CloseReason`] (indexed by `CloseReason::index`). Added to
    /// under the `closed` lock, by [`Shared::depart`], so that they agree with the registry
    /// for anyone who took that lock; Relaxed, since the lock orders them.
    closed_by_reason: [AtomicU64; CloseReason::ALL.len()],
    next_cid: AtomicU64,
    shutting_down: AtomicBool,
    /// The cluster (routes, interest counts), when `cluster` is configured.
    pub routes: Option<crate::route::Routes>,
}

impl Shared {
    /// The current configuration (a snapshot: a reload does not change it).
    pub fn config(&self) -> Arc<Config> {
        self.config.read().clone()
    }

    /// Counts configuration reloads; see the field's docs.
    pub fn config_generation(&self) -> u64 {
        self.config_generation.load(Ordering::Acquire)
    }

    /// Installs a reloaded configuration (only its reloadable parts may differ; see
    /// [`crate::reload`]).
    pub fn set_config(&self, config: Config) {
        *self.config_load_time.lock() = SystemTime::now();
        // Relaxed: a setting; the writers read it when a write is stuck.
        self.write_deadline.store(
            duration_nanos(config.effective_write_deadline()),
            Ordering::Relaxed,
        );
        *self.config.write() = Arc::new(config);
        // Release: a reader that sees the new generation sees the new configuration.
        self.config_generation.fetch_add(1, Ordering::Release);
    }

    /// Admits a new client connection if `max_connections` allows it (as nats-server checks
    /// and adds a client in one step, under its lock): a compare-and-swap loop on the count
    /// of admitted connections, so two connections arriving together at `limit - 1` cannot
    /// both be refused (nor both admitted). `None`: refused. The place is given back when
    /// the returned [`Admission`] is dropped (the reader exits).
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admission> {
        let limit = self.config().connection_limit();
        // AcqRel/Acquire: the count is all there is to it; no other data is published.
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                limit.is_none_or(|l| n < l).then_some(n + 1)
            })
            .ok()
            .map(|_| Admission {
                shared: self.clone(),
            })
    }

    /// Whether the acceptor must stop: shutdown or lame-duck mode has started.
    pub fn stops_accepting(&self) -> bool {
        self.is_shutting_down() || self.is_lame_duck()
    }

    /// When the configuration in use was loaded (the start, or the last reload).
    pub fn config_load_time(&self) -> SystemTime {
        *self.config_load_time.lock()
    }

    /// Whether lame-duck mode has started.
    pub fn is_lame_duck(&self) -> bool {
        self.lame_duck.load(Ordering::Acquire)
    }

    /// A new connection id.
    pub fn next_cid(&self) -> u64 {
        // Relaxed: only uniqueness matters.
        self.next_cid.fetch_add(1, Ordering::Relaxed)
    }

    /// Connections accepted since start (`/varz` `total_connections`): every accepted
    /// connection took one cid, refused ones (over `max_connections`) included, as
    /// nats-server counts them.
    pub fn total_connections(&self) -> u64 {
        // Relaxed: a statistic; cids start at 1.
        self.next_cid.load(Ordering::Relaxed).saturating_sub(1)
    }

    /// Connections closed for `reason` so far.
    pub fn closed_count(&self, reason: CloseReason) -> u64 {
        self.closed_by_reason[reason.index()].load(Ordering::Relaxed)
    }

    /// Connections closed as slow consumers (`/varz` `slow_consumers`: by pending bytes or
    /// by write deadline).
    pub fn slow_consumers(&self) -> u64 {
        CloseReason::ALL
            .into_iter()
            .filter(|r| r.is_slow_consumer())
            .map(|r| self.closed_count(r))
            .sum()
    }

    /// Open connections, and the messages and bytes of all connections since start: the
    /// open ones' counters summed, plus the departed ones' totals. Read under the
    /// closed-ring lock, so that a connection leaving meanwhile is counted exactly once.
    pub fn connections_and_traffic(&self) -> (usize, Traffic) {
        let _departures = self.closed.lock();
        let mut total = self.departed.snapshot();
        let mut open = 0;
        for c in self.clients.iter() {
            open += 1;
            total.add(c.value().stats.snapshot());
        }
        // Routes count too (as nats-server's totals do), at once: a route leaves the
        // table and adds its counters to the departed totals under this same lock
        // (`route_departs`), so it is never counted twice nor missed.
        if let Some(routes) = &self.routes {
            for r in routes.all() {
                total.add(r.client.stats.snapshot());
            }
        }
        (open, total)
    }

    /// A route connection leaves: it is removed from the route table and its counters join
    /// the departed totals, both under the closed-ring lock, as a client's departure (see
    /// [`Shared::depart`]). Returns whether it was the registered route to its server.
    pub(crate) fn route_departs(&self, route: &Arc<crate::route::Route>) -> bool {
        let Some(routes) = &self.routes else {
            return false;
        };
        let _departures = self.closed.lock();
        let was_registered = routes.remove(route);
        route.client.settle();
        was_registered
    }

    /// A connection leaves: called once by its reader when it finishes, after its
    /// subscriptions were removed (`subs` are the ones it had). Unregisters the client,
    /// adds its counters to the departed totals and keeps a snapshot of it for
    /// `/connz?state=closed`, all under the closed-ring lock (see the module docs).
    pub(crate) fn depart(
        &self,
        client: &Arc<Client>,
        reason: CloseReason,
        subs: &[Arc<Subscription>],
    ) {
        // Everything that takes the client's own locks happens before the ring lock.
        let mut snapshot = ClosedConn::capture(client, reason, subs, SystemTime::now());
        let mut ring = self.closed.lock();
        self.clients.remove(&client.cid);
        snapshot.set_traffic(client.settle());
        ring.push(snapshot);
        // Counted under the same lock, so that whoever sees the connection gone (under
        // this lock) also sees its close reason counted: `/varz` `connections` and
        // `slow_consumers`, and `/metrics`, agree at every moment.
        self.closed_by_reason[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The connected clients, copied out of the registry: the caller may then take any
    /// lock or wait (e.g. `Client::abort` waits for a write in progress) without holding a
    /// registry shard lock, which a departing reader needs (see the lock order in
    /// docs/architecture.md).
    pub fn client_list(&self) -> Vec<Arc<Client>> {
        self.clients.iter().map(|e| e.value().clone()).collect()
    }

    /// Whether shutdown has started.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// The `INFO` line for `client`.
    pub fn info_line(&self, client: &Client) -> Vec<u8> {
        self.info_line_with(client, false)
    }

    /// The `INFO` line for `client`, with `"ldm": true` when `ldm` (lame-duck mode).
    pub fn info_line_with(&self, client: &Client, ldm: bool) -> Vec<u8> {
        let config = self.config();
        ServerInfo {
            server_id: self.server_id.clone(),
            server_name: self.server_name.clone(),
            version: NATS_VERSION,
            proto: 1,
            go: RUNTIME_VERSION,
            host: config.host.clone(),
            port: self.local_addr.port(),
            headers: true,
            auth_required: self.auth.required(),
            tls_required: self.tls.is_some(),
            tls_verify: config.tls.as_ref().is_some_and(|t| t.verify),
            max_payload: config.max_payload,
            client_id: client.cid,
            client_ip: client.addr.ip().to_string(),
            cluster: self.routes.as_ref().map(|r| r.name()),
            connect_urls: self
                .routes
                .as_ref()
                .map(|r| r.connect_urls(ldm))
                .unwrap_or_default(),
            ldm,
            beaver_version: VERSION,
        }
        .to_line()
    }
}

/// A client connection's place under `max_connections` ([`Shared::admit`]): given back
/// when dropped.
pub(crate) struct Admission {
    shared: Arc<Shared>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.shared.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    acceptor: AcceptLoop,
    /// The route listener thread, when clustering.
    route_acceptor: Option<AcceptLoop>,
    writers: Option<WriterPool>,
    monitor: Option<Monitor>,
}

/// Why [`Server::start`] failed.
#[derive(Debug)]
pub enum StartError {
    /// The client port could not be bound, or a thread not started.
    Listen(io::Error),
    /// The monitoring port could not be bound (nats-server: "Can't start monitoring").
    Monitor(io::Error),
    /// The TLS certificate, key or CA could not be loaded.
    Tls(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Listen(e) => write!(f, "{e}"),
            StartError::Monitor(e) => write!(f, "Can't start monitoring: {e}"),
            StartError::Tls(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {}

impl From<io::Error> for StartError {
    fn from(e: io::Error) -> Self {
        StartError::Listen(e)
    }
}

impl Server {
    /// Binds the client port (and the monitoring port when `http_port` is set), and starts
    /// the acceptor, the writer pool and the monitoring acceptor.
    pub fn start(config: Config) -> Result<Server, StartError> {
        let tls = match &config.tls {
            Some(t) => Some(crate::auth::tls::server_config(t).map_err(StartError::Tls)?),
            None => None,
        };
        let accounts = Accounts::new(config.accounts.iter().map(|a| a.name.as_str()));
        let auth = crate::client::Authenticator::new(&config, &accounts);
        if auth.has_plain_passwords() {
            log::warn!("Plaintext passwords detected, use nkeys or bcrypt");
        }
        let listener = crate::listen::bind(&config.host, config.bind_port())?;
        let local_addr = listener.local_addr()?;
        // Routes: the route port is bound before anything starts, so a bad address fails
        // start-up (as nats-server).
        let route_listener = match &config.cluster {
            Some(c) if c.port != 0 => {
                let port = if c.port < 0 { 0 } else { c.port as u16 };
                let l = crate::listen::bind(&c.host, port)?;
                Some(l)
            }
            _ => None,
        };
        let routes = match &route_listener {
            Some(l) => {
                let addr = l.local_addr()?;
                let cluster = config.cluster.clone().unwrap_or_default();
                Some(crate::route::Routes::new(cluster, addr, local_addr))
            }
            None => None,
        };
        let monitor_listener = if config.monitoring() {
            Some(Monitor::bind(&config).map_err(StartError::Monitor)?)
        } else {
            None
        };
        // The ready queue is bounded, so that handing a client to the writers never
        // allocates (an unbounded channel allocates a block every 31 sends). A connection is
        // in it at most once (it holds its scheduled token meanwhile), so room for every
        // connection the process could ever hold means a send never waits. That number is
        // the system's (descriptors, threads: `limits::connection_ceiling`), not
        // `max_connections`, which a reload may raise. Past `READY_QUEUE_MAX` (or with no
        // known ceiling), a reader's send would wait for a writer to take one: writers
        // themselves never wait for room (`try_send`), so that is a delay, not a deadlock.
        let ready_capacity = crate::limits::connection_ceiling()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(READY_QUEUE_MAX)
            .clamp(1024, READY_QUEUE_MAX);
        let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Ready>(ready_capacity);
        let pool = Arc::new(BatchPool::default());
        let server_id = generate_server_id();
        let stall = StallPolicy {
            // Producers wait once a subscriber has this much queued: enough to keep its
            // socket busy between writer visits (the kernel's socket buffer holds megabytes
            // more), small enough to bound memory long before max_pending. Measured on the
            // 10 publishers : 100 subscribers benchmark (docs/benchmarks.md): 256 KiB peaked
            // at 39-41 MiB, 128 KiB at 37 MiB with more throughput, 64 KiB at 36 MiB but
            // with less fan-out throughput (1:5, 10:1000). So 128 KiB.
            threshold: (config.max_pending / 4).clamp(1, 128 * 1024),
            // ...as long as the subscriber's writer makes progress; a subscriber that takes
            // nothing for this long stops throttling its publishers (and is left to
            // max_pending / write_deadline).
            progress_window: Duration::from_millis(50),
            // nats-server's longest producer stall.
            max_wait: Duration::from_secs(1),
        };
        let write_deadline = Arc::new(AtomicU64::new(duration_nanos(
            config.effective_write_deadline(),
        )));
        let writers = WriterPool::start(
            config.writer_threads(),
            ready_tx.clone(),
            ready_rx,
            pool.clone(),
            write_deadline.clone(),
        )?;
        let start = SystemTime::now();
        let shared = Arc::new(Shared {
            server_name: config
                .server_name
                .clone()
                .unwrap_or_else(|| server_id.clone()),
            server_id,
            accounts,
            clients: DashMap::new(),
            admitted: AtomicUsize::new(0),
            pool,
            doorbell: ready_tx,
            stall,
            local_addr,
            start,
            start_instant: Instant::now(),
            departed: Arc::new(ClientStats::default()),
            closed: Mutex::new(ClosedConnections::new(config.closed_ring_size())),
            closed_by_reason: std::array::from_fn(|_| AtomicU64::new(0)),
            next_cid: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            auth,
            tls,
            config: RwLock::new(Arc::new(config)),
            config_load_time: Mutex::new(start),
            config_generation: AtomicU64::new(0),
            lame_duck: AtomicBool::new(false),
            write_deadline,
            routes,
        });
        let acceptor = acceptor::spawn(shared.clone(), listener)?;
        let route_acceptor = match (route_listener, &shared.routes) {
            (Some(l), Some(r)) => {
                log::info!("Cluster name is {}", r.name());
                if r.is_dynamic() {
                    log::warn!("Cluster name was dynamically generated, consider setting one");
                }
                log::info!(
                    "Listening for route connections on {}",
                    crate::listen::join_host_port(&r.config.host, r.listen_addr.port())
                );
                Some(crate::route::listen::start(&shared, l)?)
            }
            _ => None,
        };
        let mut server = Server {
            shared,
            acceptor,
            route_acceptor,
            writers: Some(writers),
            monitor: None,
        };
        // Started after the acceptor, so that `/healthz` answering means clients can connect.
        // (On failure, dropping `server` shuts down what was started.)
        if let Some(l) = monitor_listener {
            let monitor = Monitor::spawn(l, server.shared.clone()).map_err(StartError::Monitor)?;
            server.monitor = Some(monitor);
        }
        Ok(server)
    }

    /// The bound client address (with the real port when started with port -1).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// The shared state (for monitoring and tests).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The monitoring server, when `http_port` is set.
    pub fn monitor(&self) -> Option<&Monitor> {
        self.monitor.as_ref()
    }

    /// Graceful shutdown; see the module docs.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Stops the acceptor (its stop condition, lame duck or shutdown, is already set) and
    /// closes the listening socket: new connections are refused. Never hangs (see
    /// [`AcceptLoop::stop`]).
    fn stop_accepting(&mut self) {
        self.acceptor.stop();
    }

    /// Lame-duck mode (SIGUSR2), as nats-server's `lameDuckMode`: stop accepting clients,
    /// send every client that takes async INFO (CONNECT protocol 1) an `INFO` with
    /// `"ldm": true`, wait `lame_duck_grace_period`, then close the clients one by one,
    /// spread over the rest of `lame_duck_duration` (at most 1 s apart), and return; the
    /// caller then shuts down. `interrupted` is polled during the waits: when it returns
    /// true (SIGINT) the remaining waits are skipped.
    pub fn lame_duck(&mut self, interrupted: &dyn Fn() -> bool) {
        if self.shared.lame_duck.swap(true, Ordering::AcqRel) {
            return;
        }
        log::info!("Entering lame duck mode, stop accepting new clients");
        self.stop_accepting();
        let config = self.shared.config();
        let clients: Vec<Arc<Client>> = self.shared.client_list();
        if clients.is_empty() {
            return;
        }
        for c in &clients {
            if c.takes_async_info() {
                let mut batch = self.shared.pool.take();
                batch.push(&self.shared.info_line_with(c, true));
                c.enqueue(batch, &self.shared.pool);
            }
        }
        let grace = config.lame_duck_grace_period;
        let spread = config
            .lame_duck_duration
            .checked_sub(grace)
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(1));
        // nats-server: one client per interval, the interval at most 1 s.
        let interval = (spread / clients.len() as u32).min(Duration::from_secs(1));
        if !wait_unless(grace, interrupted) {
            return;
        }
        log::info!("Closing existing clients");
        for (i, c) in clients.iter().enumerate() {
            c.close(CloseReason::ServerShutdown);
            if i + 1 < clients.len() {
                // A random pause of at least half the interval, as nats-server.
                let half = interval / 2;
                let pause = half + half.mul_f64(fastrand::f64());
                if !wait_unless(pause, interrupted) {
                    return;
                }
            }
        }
    }

    fn stop(&mut self) {
        if self.shared.shutting_down.swap(true, Ordering::AcqRel) {
            return;
        }
        // (1) Close every client gracefully, and every route (their readers remove the
        // remote interest and leave). First, so that clients see the end at once: from the
        // `shutting_down` flag on, the acceptors drop whatever they still accept.
        let clients: Vec<Arc<Client>> = self.shared.client_list();
        for c in &clients {
            c.close(CloseReason::ServerShutdown);
        }
        if let Some(routes) = &self.shared.routes {
            routes.close_all();
        }
        // (2) Stop monitoring and the accept loops (each bounded: see `AcceptLoop::stop`).
        if let Some(m) = self.monitor.take() {
            m.stop();
        }
        self.stop_accepting();
        if let Some(a) = self.route_acceptor.as_mut() {
            a.stop();
        }
        // A connection the acceptor was registering while (1) ran is closed now (closing is
        // idempotent), rather than found a straggler after the grace period.
        for c in self.shared.client_list() {
            c.close(CloseReason::ServerShutdown);
        }
        // (3) Wait for the readers to finish (each unregisters once its socket is shut,
        // i.e. after its output was flushed), then cut what is left. Polling (every
        // millisecond) is fine here: shutdown happens once, and clients' harnesses time how
        // soon the process is gone after the sockets close.
        let wait_empty = |limit: Duration| {
            let deadline = Instant::now() + limit;
            while !self.shared.clients.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        wait_empty(SHUTDOWN_GRACE);
        // Collected first (see `client_list`): `abort` may wait for a write to finish.
        let stragglers: Vec<Arc<Client>> = self.shared.client_list();
        for c in &stragglers {
            c.abort(CloseReason::ServerShutdown);
        }
        wait_empty(Duration::from_secs(1));
        if let Some(routes) = &self.shared.routes {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !routes.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            for r in routes.all() {
                r.client.abort(CloseReason::ServerShutdown);
            }
        }
        // (4) Stop the writers.
        if let Some(w) = self.writers.take() {
            w.stop();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A duration in nanoseconds, saturated (durations are at most a year: `MAX_DURATION`).
fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Sleeps `d` in short steps; returns false early (without finishing) if `interrupted`.
fn wait_unless(d: Duration, interrupted: &dyn Fn() -> bool) -> bool {
    let end = Instant::now() + d;
    loop {
        if interrupted() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
