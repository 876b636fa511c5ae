//! What every thread of one server shares: the configuration, the accounts, the registry of
//! connections, the writer pool's doorbell and batch pool, and a hook to the cluster.
//!
//! This module sits below every feature: client sessions, delivery, routes, monitoring and
//! the server's start-up all reach the core through [`Shared`], and none of them is reached
//! from here except through the [`Cluster`] trait, which the route module implements. So
//! dependencies point down (see docs/architecture.md, "Modules").

mod closed;
mod registry;

pub use closed::{ClosedConn, ClosedConnections};
pub use registry::Registry;

use crate::client::{Accounts, Authenticator, Client, Ready, StallPolicy, Subscription, Traffic};
use crate::config::Config;
use crate::outbound::BatchPool;
use crate::protocol::{ServerInfo, NATS_VERSION, RUNTIME_VERSION};
use crossbeam_channel::Sender;
use parking_lot::{Mutex, RwLock};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// beaver's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the core needs from clustering, implemented by `route::Routes`: it is told of
/// changes of local interest (nats-server's `updateRouteSubscriptionMap`, called from
/// `addSub`/`removeSub`), and asked what client `INFO` advertises and what the routes'
/// counters add to the server's totals. The core calls it through `Shared::cluster`; the
/// route module, which sits above the core, is never named here.
pub trait Cluster: Send + Sync {
    /// A local client subscription was added to its account's table.
    fn interest_added(&self, sub: &Subscription);
    /// Local client subscriptions were removed from their tables (each exactly once).
    fn interest_removed(&self, subs: &[&Subscription]);
    /// The cluster's name (client `INFO` `cluster`).
    fn name(&self) -> String;
    /// The client URLs of the cluster's servers (client `INFO` `connect_urls`); with
    /// `ldm`, for a lame-duck `INFO`.
    fn connect_urls(&self, ldm: bool) -> Vec<String>;
    /// The route connections' counters, summed (they count in `/varz` totals).
    fn traffic(&self) -> Traffic;
}

/// What the core needs from leafnodes, implemented by `leaf::Leafnodes`: it is told of
/// every change of interest in the accounts' tables (local clients', routes' and leafnode
/// connections' alike: each leafnode connection decides what its other side must hear,
/// as nats-server's `updateLeafNodes` does), and asked for the leafnode connections'
/// counters. The leaf module, above the core, is never named here.
pub trait Leafnodes: Send + Sync {
    /// A subscription was added to its account's table.
    fn interest_added(&self, sub: &Subscription);
    /// Subscriptions were removed from their tables (each exactly once).
    fn interest_removed(&self, subs: &[&Subscription]);
    /// The leafnode connections' counters, summed (they count in `/varz` totals).
    fn traffic(&self) -> Traffic;
}

/// `n` random letters and digits: the unique part of the server's own reply subjects
/// (`_R_.<token>.`), not a secret.
pub fn random_token(n: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// What the system account hears about clients (nats-server's events), implemented by
/// `crate::system` when there is a system account. Called on the client's reader thread.
pub trait Events: Send + Sync {
    /// A client logged in (its first successful `CONNECT`).
    fn connected(&self, client: &Client);
    /// A client that had logged in left, for `reason`.
    fn disconnected(&self, client: &Client, reason: crate::close::CloseReason);
    /// A client was refused (`Authorization Violation`); `user` is who it said it was.
    fn auth_failed(&self, client: &Client, user: &str);
}

/// State shared by every thread of one server.
pub struct Shared {
    /// Client authentication, compiled from `config.authorization` (and the accounts'
    /// users), replaced by a reload that changes them: read with [`Shared::auth`]. A leaf
    /// lock, held only to clone or replace the `Arc` (readers take it at `CONNECT`, never
    /// on the message path).
    auth: RwLock<Arc<Authenticator>>,
    /// Bumped (Release) after a reload replaced `auth`; readers load it (Acquire) with the
    /// configuration generation, and then take their user's new permissions.
    auth_generation: AtomicU64,
    /// The TLS server configuration, when `config.tls` is set; replaced by a reload that
    /// changes certificates (new handshakes use the new one). A leaf lock, as `auth`.
    tls: RwLock<Option<Arc<rustls::ServerConfig>>>,
    /// The digest of the TLS files in use (`auth::tls::files_digest`; 0 without TLS).
    tls_digest: AtomicU64,
    /// When the configuration in use was loaded: the start, then each successful reload
    /// (`/varz` `config_load_time`). A lock only monitoring and reloads take.
    config_load_time: Mutex<SystemTime>,
    /// The current configuration: the one the server started with, replaced by each
    /// successful reload (SIGHUP). Read it with [`Shared::config`]. Readers cache what they
    /// use per connection and refresh it when `config_generation` moves, so the message path
    /// never takes this lock.
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
    /// The connections: who is connected, who left (see [`Registry`]).
    pub registry: Registry,
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
    /// The bound WebSocket address, when `websocket` is set.
    pub websocket_addr: Option<SocketAddr>,
    /// When the server started (wall clock: `/varz` `start`).
    pub start: SystemTime,
    /// The same moment on the monotonic clock (uptime).
    pub start_instant: Instant,
    shutting_down: AtomicBool,
    /// The cluster, when `cluster` is configured (see [`Cluster`]).
    pub cluster: Option<Arc<dyn Cluster>>,
    /// Leafnodes, when `leafnodes` is configured (see [`Leafnodes`]).
    pub leafnodes: Option<Arc<dyn Leafnodes>>,
    /// The system account's events, once it is running (see [`Events`]).
    events: std::sync::OnceLock<Arc<dyn Events>>,
    /// What the server rebuilds when the accounts change while running without a reload
    /// (an account JWT pushed to the full resolver): set once at start (see
    /// [`Shared::accounts_changed`]).
    on_accounts_changed: std::sync::OnceLock<AccountsChanged>,
}

/// See [`Shared::set_on_accounts_changed`].
pub type AccountsChanged = Box<dyn Fn(bool) + Send + Sync>;

/// What [`Shared::new`] needs besides the configuration: what the server built first.
pub struct Parts {
    /// Authentication, compiled from the configuration against `accounts`.
    pub auth: Authenticator,
    /// The TLS server configuration, if any.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The account registry.
    pub accounts: Accounts,
    /// The batch pool the writers give batches back to.
    pub pool: Arc<BatchPool>,
    /// The writers' ready queue.
    pub doorbell: Sender<Ready>,
    /// Backpressure on fast producers.
    pub stall: StallPolicy,
    /// `write_deadline` in nanoseconds, as the writers read it.
    pub write_deadline: Arc<AtomicU64>,
    /// This server's id.
    pub server_id: String,
    /// The bound client address.
    pub local_addr: SocketAddr,
    /// The bound WebSocket address, when `websocket` is set.
    pub websocket_addr: Option<SocketAddr>,
    /// The cluster, if any.
    pub cluster: Option<Arc<dyn Cluster>>,
    /// Leafnodes, if any.
    pub leafnodes: Option<Arc<dyn Leafnodes>>,
}

impl Shared {
    /// The shared state of a server starting now with `config`.
    pub fn new(config: Config, parts: Parts) -> Shared {
        let start = SystemTime::now();
        Shared {
            server_name: config
                .server_name
                .clone()
                .unwrap_or_else(|| parts.server_id.clone()),
            server_id: parts.server_id,
            accounts: parts.accounts,
            registry: Registry::new(config.closed_ring_size()),
            pool: parts.pool,
            doorbell: parts.doorbell,
            stall: parts.stall,
            local_addr: parts.local_addr,
            websocket_addr: parts.websocket_addr,
            start,
            start_instant: Instant::now(),
            shutting_down: AtomicBool::new(false),
            auth: RwLock::new(Arc::new(parts.auth)),
            auth_generation: AtomicU64::new(0),
            tls_digest: AtomicU64::new(
                config
                    .tls
                    .as_ref()
                    .map_or(0, crate::auth::tls::files_digest),
            ),
            tls: RwLock::new(parts.tls),
            config: RwLock::new(Arc::new(config)),
            config_load_time: Mutex::new(start),
            config_generation: AtomicU64::new(0),
            lame_duck: AtomicBool::new(false),
            write_deadline: parts.write_deadline,
            cluster: parts.cluster,
            leafnodes: parts.leafnodes,
            events: std::sync::OnceLock::new(),
            on_accounts_changed: std::sync::OnceLock::new(),
        }
    }

    /// The current configuration (a snapshot: a reload does not change it).
    pub fn config(&self) -> Arc<Config> {
        self.config.read().clone()
    }

    /// The system account's events, if it has started (see [`Events`]).
    pub fn events(&self) -> Option<&Arc<dyn Events>> {
        self.events.get()
    }

    /// Sets what [`Shared::accounts_changed`] runs (once, at start: the server rebuilds the
    /// accounts' import bridges and starts JetStream in new accounts).
    pub fn set_on_accounts_changed(&self, f: AccountsChanged) {
        let _ = self.on_accounts_changed.set(f);
    }

    /// The accounts or what they share changed while running (an account JWT was pushed):
    /// runs what the server set with [`Shared::set_on_accounts_changed`]. Called on the
    /// pushing client's reader thread, with no lock held.
    /// `sharing`: whether what the accounts share (exports, imports) changed too.
    pub fn accounts_changed(&self, sharing: bool) {
        if let Some(f) = self.on_accounts_changed.get() {
            f(sharing);
        }
    }

    /// Starts sending events to `events` (once, at start).
    pub fn set_events(&self, events: Arc<dyn Events>) {
        let _ = self.events.set(events);
    }

    /// The client authentication in force (a snapshot: a reload does not change it).
    pub fn auth(&self) -> Arc<Authenticator> {
        self.auth.read().clone()
    }

    /// Counts the reloads that replaced the authentication; see the field's docs.
    pub fn auth_generation(&self) -> u64 {
        self.auth_generation.load(Ordering::Acquire)
    }

    /// Installs the authentication of a reloaded configuration. Call before
    /// [`Shared::set_config`], whose generation readers check first.
    pub fn set_auth_arc(&self, auth: Arc<Authenticator>) {
        *self.auth.write() = auth;
        // Release: a reader that sees the new generation gets the new authenticator.
        self.auth_generation.fetch_add(1, Ordering::Release);
    }

    /// `write_deadline` in nanoseconds, as writers read it (Relaxed; a reload stores the
    /// new value): for writers outside the pool ([`crate::writer::Drainer::new`]).
    pub fn write_deadline(&self) -> Arc<AtomicU64> {
        self.write_deadline.clone()
    }

    /// The TLS server configuration in force, if TLS is on.
    pub fn tls(&self) -> Option<Arc<rustls::ServerConfig>> {
        self.tls.read().clone()
    }

    /// Installs the TLS configuration of a reloaded configuration (new certificates), built
    /// from files whose digest is `digest`.
    pub fn set_tls(&self, tls: Option<Arc<rustls::ServerConfig>>, digest: u64) {
        *self.tls.write() = tls;
        // Relaxed: only reloads read it, one at a time.
        self.tls_digest.store(digest, Ordering::Relaxed);
    }

    /// The digest of the TLS files in use (see [`Shared::set_tls`]).
    pub fn tls_digest(&self) -> u64 {
        self.tls_digest.load(Ordering::Relaxed)
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
    ///
    /// The limit is also never above what the system lets this process hold
    /// ([`crate::limits::client_ceiling`]): past it, a connection is refused with
    /// nats-server's error rather than failing for want of a descriptor or a thread.
    pub fn admit(self: &Arc<Self>) -> Option<Admission> {
        let limit = match (
            self.config().connection_limit(),
            crate::limits::client_ceiling(),
        ) {
            (Some(l), Some(c)) => Some(l.min(c as usize)),
            (l, c) => l.or(c.map(|c| c as usize)),
        };
        // AcqRel/Acquire: the count is all there is to it; no other data is published.
        self.registry
            .admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                limit.is_none_or(|l| n < l).then_some(n + 1)
            })
            .ok()
            .map(|_| Admission {
                shared: self.clone(),
            })
    }

    /// A place for a connection that [`Shared::admit`] refused, whose reader thread then
    /// sends INFO and `-ERR 'maximum connections exceeded'`: at most [`MAX_REFUSING`] at
    /// once. Past the connection ceiling, the threads that are left are few
    /// (`limits::client_ceiling` keeps a reserve); a flood of connections there must not
    /// spend them all, so beyond this many the acceptor closes a connection at once,
    /// without a word. `None`: close it so. Given back when dropped.
    pub fn refuse(self: &Arc<Self>) -> Option<Refusal> {
        // AcqRel/Acquire: a count, publishing nothing else.
        self.registry
            .refusing
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_REFUSING).then_some(n + 1)
            })
            .ok()
            .map(|_| Refusal {
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

    /// Starts lame-duck mode; false if it had started already.
    pub fn begin_lame_duck(&self) -> bool {
        !self.lame_duck.swap(true, Ordering::AcqRel)
    }

    /// Whether shutdown has started.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Starts shutdown; false if it had started already.
    pub fn begin_shutdown(&self) -> bool {
        !self.shutting_down.swap(true, Ordering::AcqRel)
    }

    /// Open connections, and the messages and bytes of all connections (routes included)
    /// since start; see [`Registry::connections_and_traffic`].
    pub fn connections_and_traffic(&self) -> (usize, Traffic) {
        self.registry.connections_and_traffic(|| {
            let mut t = self
                .cluster
                .as_ref()
                .map_or_else(Traffic::default, |c| c.traffic());
            if let Some(l) = &self.leafnodes {
                t.add(l.traffic());
            }
            t
        })
    }

    /// A subscription was added to its account's table: the cluster hears of it if it is
    /// local (a client's, or a leaf's that connected to us: nats-server forwards those to
    /// routes as a client's; routes' own subscriptions are remote interest and are not
    /// announced back), and leafnodes hear of every one (they filter per connection).
    #[inline]
    pub fn interest_added(&self, sub: &Subscription) {
        if let Some(cluster) = &self.cluster {
            if !sub.client.is_route() && !sub.client.is_spoke_leaf() {
                cluster.interest_added(sub);
            }
        }
        if let Some(leafs) = &self.leafnodes {
            leafs.interest_added(sub);
        }
    }

    /// Subscriptions were removed from their tables (each exactly once: the caller won its
    /// `Subscription::close`): the cluster and leafnodes hear of it, as in
    /// [`Shared::interest_added`].
    pub fn interest_removed(&self, subs: &[&Arc<Subscription>]) {
        if let Some(cluster) = &self.cluster {
            let local: Vec<&Subscription> = subs
                .iter()
                .filter(|s| !s.client.is_route() && !s.client.is_spoke_leaf())
                .map(|s| &***s)
                .collect();
            if !local.is_empty() {
                cluster.interest_removed(&local);
            }
        }
        if let Some(leafs) = &self.leafnodes {
            let all: Vec<&Subscription> = subs.iter().map(|s| &***s).collect();
            if !all.is_empty() {
                leafs.interest_removed(&all);
            }
        }
    }

    /// Removes a subscription from its client and its account's table, and withdraws its
    /// interest from the cluster (idempotent; any thread: its own client's reader at
    /// `UNSUB`, or a publisher's when an auto-unsubscribe limit is reached).
    pub fn unsubscribe(&self, sub: &Arc<Subscription>) {
        if sub.close() {
            sub.client.remove_sub_if(&sub.sid, sub);
            sub.account.sublist.remove(sub);
            self.interest_removed(&[sub]);
        }
    }

    /// Subscribes a service of the server (`client::Service`: JetStream's forwarder, the
    /// system account, imports) to `subject` in `account` under `sid`, through a client of
    /// its own; with `announce`, routes learn the interest. Returns that client, which the
    /// service keeps (dropping it does not unsubscribe: the subscription lives as long as
    /// the server). `None` if the subject is not a valid subscription subject.
    pub fn subscribe_service(
        &self,
        account: &Arc<crate::client::Account>,
        subject: &[u8],
        sid: &[u8],
        service: Arc<dyn crate::client::Service>,
        announce: bool,
    ) -> Option<Arc<Client>> {
        let client = Arc::new(Client::new_service(
            self.registry.next_cid(),
            self.doorbell.clone(),
            account.clone(),
            service,
        ));
        let sub = Arc::new(crate::client::Subscription::new(
            client.clone(),
            account.clone(),
            subject,
            None,
            sid,
        ));
        account.sublist.insert(sub.clone()).ok()?;
        client.subs.lock().insert(sid.into(), sub.clone());
        if announce {
            self.interest_added(&sub);
        }
        Some(client)
    }

    /// Removes what [`Shared::subscribe_service`] subscribed for `client` (`announced` as
    /// it was subscribed): a service that stops, such as an import bridge a reload
    /// replaces. Publishers holding a cached match skip the closed subscriptions.
    pub fn unsubscribe_service(&self, client: &Arc<Client>, announced: bool) {
        let subs: Vec<Arc<crate::client::Subscription>> =
            client.subs.lock().drain().map(|(_, s)| s).collect();
        for s in &subs {
            s.close();
            s.account.sublist.remove(s);
        }
        if announced {
            self.interest_removed(&subs.iter().collect::<Vec<_>>());
        }
    }

    /// Sends every client that takes async `INFO` a new one: the cluster's client URLs
    /// changed (a route registered or left), as nats-server's `sendAsyncInfoToClients`.
    pub fn send_info_to_clients(&self) {
        for c in self.registry.client_list() {
            if c.takes_async_info() && !c.is_closing() {
                let mut batch = self.pool.take();
                batch.push(&self.info_line(&c));
                c.enqueue(batch, &self.pool);
            }
        }
    }

    /// The `INFO` line for `client`.
    pub fn info_line(&self, client: &Client) -> Vec<u8> {
        self.info_line_with(client, false)
    }

    /// The `INFO` line for `client`, with `"ldm": true` when `ldm` (lame-duck mode).
    pub fn info_line_with(&self, client: &Client, ldm: bool) -> Vec<u8> {
        self.info_line_auth(client, ldm, self.auth().required(), None)
    }

    /// The `INFO` line for `client` with `auth_required` as given (a WebSocket listener's
    /// own credentials decide it for its clients).
    pub fn info_line_auth(
        &self,
        client: &Client,
        ldm: bool,
        auth_required: bool,
        nonce: Option<&str>,
    ) -> Vec<u8> {
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
            auth_required,
            tls_required: self.tls.read().is_some(),
            tls_verify: config.tls.as_ref().is_some_and(|t| t.verify),
            max_payload: config.max_payload,
            jetstream: config.jetstream.is_some(),
            client_id: client.cid,
            client_ip: client.addr.ip().to_string(),
            nonce: nonce.map(str::to_owned),
            cluster: self.cluster.as_ref().map(|c| c.name()),
            // The cluster's client URLs are TCP ones: a WebSocket client gets none (beaver
            // does not gossip WebSocket URLs yet).
            connect_urls: self
                .cluster
                .as_ref()
                .filter(|_| !client.is_websocket())
                .map(|c| c.connect_urls(ldm))
                .unwrap_or_default(),
            ldm,
            beaver_version: VERSION,
        }
        .to_line()
    }
}

/// A client connection's place under `max_connections` ([`Shared::admit`]): given back
/// when dropped.
pub struct Admission {
    shared: Arc<Shared>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.shared.registry.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Most refused connections told so at once (see [`Shared::refuse`]).
pub const MAX_REFUSING: usize = 32;

/// A refused connection's reader thread, counted under [`MAX_REFUSING`] until dropped.
pub struct Refusal {
    shared: Arc<Shared>,
}

impl Drop for Refusal {
    fn drop(&mut self) {
        self.shared.registry.refusing.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A duration in nanoseconds, saturated (durations are at most a year: `MAX_DURATION`).
pub fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
