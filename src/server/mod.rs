//! The server: start-up, the acceptor thread, lame-duck mode and shutdown. What the
//! threads share is in [`crate::shared`].
//!
//! Threads (see docs/architecture.md for the whole picture):
//! - the **acceptor** blocks in `accept()` and starts one reader thread per connection;
//! - **reader threads** (one per client) parse and route ([`crate::client`]);
//! - **writer threads** (a fixed pool) drain outbound queues into sockets ([`crate::writer`]).
//!
//! - the **monitor** (`-m`), when enabled, serves the HTTP endpoints ([`crate::monitor`]).
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
/// How a client connection is started: see [`Server::start_with`].
pub use acceptor::Start as ClientStart;

use crate::client::{Accounts, Client, Ready, StallPolicy};
use crate::close::CloseReason;
use crate::config::Config;
use crate::jetstream::JetStream;
use crate::leaf::Leafnodes;
use crate::listen::AcceptLoop;
use crate::monitor::Monitor;
use crate::outbound::BatchPool;
use crate::protocol::generate_server_id;
use crate::route::Routes;
use crate::shared::{duration_nanos, Parts, Shared};
use crate::writer::WriterPool;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::shared::VERSION;

/// The authentication of a WebSocket listener with credentials of its own (nats-server's
/// "auth override"): with the server's `users`, its `no_auth_user` replaces the server's;
/// without, its `user`/`password` or `token` replace the server's `authorization`. Its
/// `timeout`, when set, replaces the server's authentication timeout.
fn websocket_authenticator(
    config: &Config,
    ws: &crate::config::WebSocket,
    accounts: &Accounts,
) -> crate::client::Authenticator {
    let mut c = config.clone();
    let server_timeout = c
        .authorization
        .as_ref()
        .map_or(crate::config::DEFAULT_AUTH_TIMEOUT, |a| {
            a.effective_timeout()
        });
    let timeout = match ws.authorization.as_ref().map(|a| a.timeout) {
        Some(t) if !t.is_zero() => t,
        _ => server_timeout,
    };
    let has_users = c
        .authorization
        .as_ref()
        .is_some_and(|a| !a.users.is_empty())
        || c.accounts.iter().any(|a| !a.users.is_empty());
    if has_users {
        c.no_auth_user = ws.no_auth_user.clone();
        if let Some(a) = c.authorization.as_mut() {
            a.timeout = timeout;
        }
    } else {
        let a = ws.authorization.clone().unwrap_or_default();
        c.authorization = Some(crate::config::Authorization {
            user: a.user,
            password: a.password,
            token: a.token,
            users: Vec::new(),
            nkeys: Vec::new(),
            timeout,
        });
        c.no_auth_user = None;
    }
    crate::client::Authenticator::new(&c, accounts)
}

/// How long shutdown waits for queued output to be written before cutting connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Largest capacity of the writers' ready queue (see `Server::start`).
pub const READY_QUEUE_MAX: usize = 256 * 1024;

/// How long a subscriber's writes may make no progress before it stops throttling its
/// publishers (`StallPolicy::wedged_after`). Measured with Go's subscribers in 10:100
/// 1000 B (docs/benchmarks.md): 50 ms let one run reach 65 MiB, 150 ms to 2 s all gave
/// 35-37 MiB; half a second is well inside that and costs a wedged subscriber's publishers
/// half a second once.
pub const WEDGED_AFTER: Duration = Duration::from_millis(500);

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    /// The cluster, when `cluster` is configured.
    routes: Option<Arc<Routes>>,
    acceptor: AcceptLoop,
    /// The route listener thread, when clustering.
    route_acceptor: Option<AcceptLoop>,
    /// Leafnodes, when `leafnodes` is configured.
    leafs: Option<Arc<Leafnodes>>,
    /// The leafnode listener thread, when listening for leafs.
    leaf_acceptor: Option<AcceptLoop>,
    /// The WebSocket listener thread and its bound address, when `websocket` is set.
    ws_acceptor: Option<(AcceptLoop, SocketAddr)>,
    writers: Option<WriterPool>,
    monitor: Option<Monitor>,
    /// JetStream, when enabled.
    jetstream: Option<Arc<JetStream>>,
    /// Without JetStream, in a cluster: clients' API requests to the nodes that have it.
    _js_forward: Option<Arc<crate::jetstream::forward::Forwarder>>,
    /// The system account's request subjects, when there is a system account.
    _system: Option<Arc<crate::system::System>>,
    /// The bridges of the accounts' imports, when there are any; replaced by a reload that
    /// changes them, or a pushed account JWT. A leaf lock, held while they are rebuilt.
    imports: Arc<parking_lot::Mutex<Option<Arc<crate::imports::Imports>>>>,
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
    /// JetStream could not start (its store directory).
    JetStream(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Listen(e) => write!(f, "{e}"),
            StartError::Monitor(e) => write!(f, "Can't start monitoring: {e}"),
            StartError::Tls(e) => write!(f, "{e}"),
            StartError::JetStream(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {}

impl From<io::Error> for StartError {
    fn from(e: io::Error) -> Self {
        StartError::Listen(e)
    }
}

/// Replaces the accounts' import bridges with those of the accounts now configured (or,
/// in operator mode, trusted).
fn restart_imports(
    shared: &Arc<Shared>,
    imports: &parking_lot::Mutex<Option<Arc<crate::imports::Imports>>>,
) {
    let mut imports = imports.lock();
    let old = imports.take();
    if let Some(old) = &old {
        old.stop(shared);
    }
    *imports = crate::imports::Imports::start(shared, old.as_deref());
}

impl Server {
    /// Applies what a reload changed beyond the configuration and the authentication
    /// (`crate::reload` did those): JetStream in the accounts it added, and the bridges of
    /// the accounts' exports and imports, rebuilt when they changed.
    pub fn after_reload(&self, reloaded: &crate::reload::Reloaded) {
        if let Some(js) = &self.jetstream {
            js.add_new_accounts(&self.shared);
        }
        if let (Some(urls), Some(routes)) = (&reloaded.routes, &self.routes) {
            crate::route::listen::reconfigure(&self.shared, routes, urls);
        }
        if reloaded.sharing_changed {
            restart_imports(&self.shared, &self.imports);
        }
    }

    /// Binds the client port (and the monitoring port when `http_port` is set), and starts
    /// the acceptor, the writer pool and the monitoring acceptor.
    pub fn start(config: Config) -> Result<Server, StartError> {
        Server::start_with(config, None)
    }

    /// [`Server::start`], with the client port's connections run by `clients` (each one
    /// accepted is handed to it, on the acceptor thread) instead of a reader thread each:
    /// how beaver-async runs them as tokio tasks ([`crate::session::Session`]). Routes,
    /// leafnodes, WebSocket clients and monitoring are unchanged.
    pub fn start_with(config: Config, clients: Option<ClientStart>) -> Result<Server, StartError> {
        let tls = match &config.tls {
            Some(t) => Some(crate::auth::tls::server_config(t).map_err(StartError::Tls)?),
            None => None,
        };
        // A clustered server without JetStream has nats-server's system account, where the
        // cluster's JetStream API lives (see `jetstream::forward`).
        let system = (config.cluster.is_some() && config.jetstream.is_none())
            .then_some(crate::jetstream::forward::SYSTEM_ACCOUNT);
        let accounts = Accounts::new(
            config
                .accounts
                .iter()
                .map(|a| a.name.as_str())
                // Operator mode: the preloaded accounts, named by their public keys.
                .chain(config.resolver_preload.iter().map(|(key, _)| key.as_str()))
                .chain(system),
        );
        // Built before the system account is looked up: in operator mode the full
        // resolver's directory adds accounts to the registry.
        let auth = crate::client::Authenticator::new(&config, &accounts);
        if let Some(system) = config.system_account_name() {
            if accounts.get(&system).is_some() {
                log::info!("System account {system:?}: answers $SYS.REQ.SERVER requests");
            } else {
                log::warn!("System account {system:?} is not an account: no $SYS services");
            }
        }
        if auth.has_plain_passwords() {
            log::warn!("Plaintext passwords detected, use nkeys or bcrypt");
        }
        let pool = Arc::new(BatchPool::default());
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
                Some(Arc::new(
                    Routes::new(cluster, addr, local_addr, pool.clone())
                        .map_err(StartError::Tls)?,
                ))
            }
            None => None,
        };
        // Leafnodes: the leafnode port is bound before anything starts, as the route port.
        let leaf_listener = match &config.leafnodes {
            Some(l) if l.port != 0 => {
                let port = if l.port < 0 { 0 } else { l.port as u16 };
                Some(crate::listen::bind(&l.host, port)?)
            }
            _ => None,
        };
        let leafs = match &config.leafnodes {
            Some(l) => {
                let addr = match &leaf_listener {
                    Some(listener) => Some(listener.local_addr()?),
                    None => None,
                };
                Some(Arc::new(Leafnodes::new(l.clone(), addr, pool.clone())))
            }
            None => None,
        };
        // WebSocket: bound before anything starts, like the other ports.
        let ws_listener = match &config.websocket {
            Some(ws) => {
                let tls = match &ws.tls {
                    Some(t) => Some(
                        crate::auth::tls::server_config(t)
                            .map_err(|e| StartError::Tls(format!("websocket: {e}")))?,
                    ),
                    None => None,
                };
                let origins = crate::websocket::Origins::new(ws.same_origin, &ws.allowed_origins)
                    .map_err(|e| {
                    StartError::Listen(io::Error::other(format!("websocket: {e}")))
                })?;
                let l = crate::listen::bind(&ws.host, ws.bind_port())?;
                let context = Arc::new(crate::session::WebSocketListener {
                    tls,
                    origins,
                    handshake_timeout: ws.effective_handshake_timeout(),
                    compression: ws.compression,
                    // In operator mode WebSocket clients log in with JWTs too, through the
                    // server's authentication (one trust chain, one count per account).
                    auth: (ws.auth_override() && config.operators.is_empty())
                        .then(|| Arc::new(websocket_authenticator(&config, ws, &accounts))),
                });
                Some((l, context, ws.host.clone()))
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
        let server_id = generate_server_id();
        let stall = StallPolicy {
            // Producers wait once a subscriber has this much queued: enough to keep its
            // socket busy between writer visits (the kernel's socket buffer holds megabytes
            // more), small enough to bound memory long before max_pending. Measured on the
            // 10 publishers : 100 subscribers benchmark (docs/benchmarks.md): 256 KiB peaked
            // at 39-41 MiB, 128 KiB at 37 MiB with more throughput, 64 KiB at 36 MiB but
            // with less fan-out throughput (1:5, 10:1000). So 128 KiB.
            threshold: (config.max_pending / 4).clamp(1, 128 * 1024),
            // Waiting producers look at the subscriber's progress this often...
            progress_window: Duration::from_millis(50),
            // ...and a subscriber that takes nothing for this long stops throttling its
            // publishers (it is left to max_pending and write_deadline). Shorter pauses keep
            // them waiting: Go subscribers starved of CPU pause for tens to hundreds of
            // milliseconds, and letting publishers pour into their queues meanwhile cost
            // hundreds of MiB (docs/benchmarks.md, "Memory under slow subscribers").
            wedged_after: WEDGED_AFTER,
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
            config.websocket.as_ref().is_some_and(|w| w.compression),
        )?;
        let cluster: Option<Arc<dyn crate::shared::Cluster>> =
            routes.clone().map(|r| r as Arc<dyn crate::shared::Cluster>);
        let shared = Arc::new(Shared::new(
            config,
            Parts {
                auth,
                tls,
                accounts,
                pool,
                doorbell: ready_tx,
                stall,
                write_deadline,
                server_id,
                local_addr,
                websocket_addr: match &ws_listener {
                    Some((l, _, _)) => Some(l.local_addr()?),
                    None => None,
                },
                cluster,
                leafnodes: leafs
                    .clone()
                    .map(|l| l as Arc<dyn crate::shared::Leafnodes>),
            },
        ));
        // JetStream first: its streams are recovered and subscribed before any client can
        // publish to them.
        let jetstream =
            JetStream::start(&shared).map_err(|e| StartError::JetStream(e.to_string()))?;
        let js_forward = match (&jetstream, system) {
            (None, Some(_)) => crate::jetstream::forward::Forwarder::start(&shared),
            _ => None,
        };
        // The monitoring reports: served over HTTP (when `http_port` is set) and, to the
        // system account, over NATS.
        let reports = Arc::new(crate::monitor::Reports::new(
            shared.clone(),
            routes.clone(),
            leafs.clone(),
            jetstream.clone(),
            // The monitoring host as configured (what the listener binds), also when there
            // is no monitoring port.
            shared.config().monitor_host().to_owned(),
        ));
        let system_services = shared
            .config()
            .system_account_name()
            .and_then(|name| shared.accounts.get(&name))
            .map(|account| crate::system::System::start(&shared, reports.clone(), account));
        if let Some(system) = &system_services {
            shared.set_events(system.clone());
        }
        // Imports between accounts: bridged before any client can publish.
        let imports = Arc::new(parking_lot::Mutex::new(crate::imports::Imports::start(
            &shared, None,
        )));
        {
            // A pushed account JWT: new accounts get JetStream, and the bridges follow the
            // accounts' exports and imports. Weak: the hook lives in `Shared`, which must
            // not keep itself (or JetStream) alive.
            let (weak, js, imports) = (
                Arc::downgrade(&shared),
                jetstream.as_ref().map(Arc::downgrade),
                imports.clone(),
            );
            shared.set_on_accounts_changed(Box::new(move |sharing| {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                if let Some(js) = js.as_ref().and_then(std::sync::Weak::upgrade) {
                    js.add_new_accounts(&shared);
                }
                if sharing {
                    restart_imports(&shared, &imports);
                }
            }));
        }
        let acceptor = acceptor::spawn(shared.clone(), listener, clients)?;
        let route_acceptor = match (route_listener, &routes) {
            (Some(l), Some(r)) => {
                log::info!("Cluster name is {}", r.name());
                if r.is_dynamic() {
                    log::warn!("Cluster name was dynamically generated, consider setting one");
                }
                log::info!(
                    "Listening for route connections on {}",
                    crate::listen::join_host_port(&r.config.host, r.listen_addr.port())
                );
                Some(crate::route::listen::start(&shared, r, l)?)
            }
            _ => None,
        };
        let leaf_acceptor = match &leafs {
            Some(l) => {
                if let Some(addr) = l.listen_addr {
                    log::info!(
                        "Listening for leafnode connections on {}",
                        crate::listen::join_host_port(&l.config.host, addr.port())
                    );
                }
                crate::leaf::listen::start(&shared, l, leaf_listener)?
            }
            None => None,
        };
        let ws_acceptor = match ws_listener {
            Some((l, context, host)) => {
                let addr = l.local_addr()?;
                let scheme = if context.tls.is_some() { "wss" } else { "ws" };
                log::info!(
                    "Listening for websocket clients on {scheme}://{}",
                    crate::listen::join_host_port(&host, addr.port())
                );
                if context.tls.is_none() {
                    log::warn!("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!");
                }
                let start: acceptor::Start = Box::new(move |shared, stream, peer| {
                    crate::session::spawn_websocket(shared, &context, stream, peer)
                });
                let a = acceptor::spawn_with("beaver-ws-acceptor", shared.clone(), l, start)?;
                Some((a, addr))
            }
            None => None,
        };
        let mut server = Server {
            shared,
            routes,
            acceptor,
            route_acceptor,
            leafs,
            leaf_acceptor,
            ws_acceptor,
            writers: Some(writers),
            monitor: None,
            jetstream,
            _js_forward: js_forward,
            _system: system_services,
            imports,
        };
        // Started after the acceptor, so that `/healthz` answering means clients can connect.
        // (On failure, dropping `server` shuts down what was started.)
        if let Some(l) = monitor_listener {
            let monitor = Monitor::spawn(l, reports.clone()).map_err(StartError::Monitor)?;
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

    /// The bound WebSocket listen address, when `websocket` is set.
    pub fn websocket_addr(&self) -> Option<SocketAddr> {
        self.ws_acceptor.as_ref().map(|(_, addr)| *addr)
    }

    /// The bound route listen address, when clustering.
    pub fn cluster_addr(&self) -> Option<SocketAddr> {
        self.routes.as_ref().map(|r| r.listen_addr)
    }

    /// The bound leafnode listen address, when listening for leafs.
    pub fn leafnode_addr(&self) -> Option<SocketAddr> {
        self.leafs.as_ref().and_then(|l| l.listen_addr)
    }

    /// Leafnodes, when configured (for monitoring and tests).
    pub fn leafnodes(&self) -> Option<&Arc<Leafnodes>> {
        self.leafs.as_ref()
    }

    /// JetStream, when enabled.
    pub fn jetstream(&self) -> Option<&Arc<JetStream>> {
        self.jetstream.as_ref()
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
        if let Some((a, _)) = self.ws_acceptor.as_mut() {
            a.stop();
        }
    }

    /// Lame-duck mode (SIGUSR2), as nats-server's `lameDuckMode`: stop accepting clients,
    /// send every client that takes async INFO (CONNECT protocol 1) an `INFO` with
    /// `"ldm": true`, wait `lame_duck_grace_period`, then close the clients one by one,
    /// spread over the rest of `lame_duck_duration` (at most 1 s apart), and return; the
    /// caller then shuts down. `interrupted` is polled during the waits: when it returns
    /// true (SIGINT) the remaining waits are skipped.
    pub fn lame_duck(&mut self, interrupted: &dyn Fn() -> bool) {
        if !self.shared.begin_lame_duck() {
            return;
        }
        log::info!("Entering lame duck mode, stop accepting new clients");
        self.stop_accepting();
        let config = self.shared.config();
        let clients: Vec<Arc<Client>> = self.shared.registry.client_list();
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
        if !self.shared.begin_shutdown() {
            return;
        }
        // (1) Close every client gracefully, and every route (their readers remove the
        // remote interest and leave). First, so that clients see the end at once: from the
        // `shutting_down` flag on, the acceptors drop whatever they still accept.
        let clients: Vec<Arc<Client>> = self.shared.registry.client_list();
        for c in &clients {
            c.close(CloseReason::ServerShutdown);
        }
        if let Some(routes) = &self.routes {
            routes.close_all();
        }
        if let Some(leafs) = &self.leafs {
            leafs.close_all();
        }
        // (2) Stop monitoring and the accept loops (each bounded: see `AcceptLoop::stop`).
        if let Some(m) = self.monitor.take() {
            m.stop();
        }
        self.stop_accepting();
        if let Some(a) = self.route_acceptor.as_mut() {
            a.stop();
        }
        if let Some(a) = self.leaf_acceptor.as_mut() {
            a.stop();
        }
        // A connection the acceptor was registering while (1) ran is closed now (closing is
        // idempotent), rather than found a straggler after the grace period.
        for c in self.shared.registry.client_list() {
            c.close(CloseReason::ServerShutdown);
        }
        // (3) Wait for the readers to finish (each unregisters once its socket is shut,
        // i.e. after its output was flushed), then cut what is left. Polling (every
        // millisecond) is fine here: shutdown happens once, and clients' harnesses time how
        // soon the process is gone after the sockets close.
        let wait_empty = |limit: Duration| {
            let deadline = Instant::now() + limit;
            while !self.shared.registry.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        wait_empty(SHUTDOWN_GRACE);
        // Collected first (see `client_list`): `abort` may wait for a write to finish.
        let stragglers: Vec<Arc<Client>> = self.shared.registry.client_list();
        for c in &stragglers {
            c.abort(CloseReason::ServerShutdown);
        }
        wait_empty(Duration::from_secs(1));
        if let Some(routes) = &self.routes {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !routes.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            for r in routes.all() {
                r.client.abort(CloseReason::ServerShutdown);
            }
        }
        if let Some(leafs) = &self.leafs {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !leafs.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            for l in leafs.all() {
                l.client.abort(CloseReason::ServerShutdown);
            }
        }
        // (4) JetStream: no client can publish any more; its stores are synced.
        if let Some(js) = self.jetstream.take() {
            js.stop();
        }
        // (5) Stop the writers.
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
