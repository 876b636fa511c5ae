//! Routes: beaver nodes form a NATS cluster with each other and with nats-server 2.9, over
//! nats-server's route protocol (see [`crate::protocol::route`] for the bytes).
//!
//! A route is one more kind of connection. Its shared half is an ordinary
//! [`Client`] (marked as a route), so its output goes through the same
//! lock-free outbound queue and the same writer pool as clients: a slow route is a slow
//! consumer like any other and cannot stall the writers. Its reader thread ([`conn`]) parses
//! route operations. One thread listens for routes ([`listen`]), one thread per configured
//! route dials and redials it, and gossiped (implicit) routes get a dialing thread each.
//!
//! ## Interest
//! - **Local interest** is counted here, per (account, subject, queue): the first local
//!   subscription on a subject sends `RS+` to every route, the last one `RS-`; a queue
//!   group's `RS+` carries its weight (local members), re-sent whenever it changes. A route
//!   that registers gets all of it at once.
//! - **Remote interest** (`RS+` received) is a [`Subscription`] of the route's `Client` in
//!   the account's sublist, the way nats-server keeps it. So a client's publish matches
//!   local and remote interest in one lookup, and a queue group's members on other servers
//!   compete with local ones (see `delivery`, which forwards to routes).
//!
//! ## The table lock
//! `Routes::table` (a `parking_lot::Mutex`) holds the registered routes, every route
//! connection, and the local interest counts. A subscription change updates the count and
//! queues the `RS+`/`RS-` to every registered route *under the lock*; a route registers and
//! queues the whole interest under it too. So every route sees each subject's changes in
//! order, and a new route sees each change exactly once (in the snapshot or after it).
//! Queueing never blocks (a push on a lock-free queue and a non-blocking doorbell), which is
//! why it may be done under the lock. Lock order: a client's `subs` → sublist locks, released;
//! then the table; nothing is taken under the table except a route's `remote` lock and the
//! pool's lock-free queue.
//!
//! ## Accounts
//! Every piece of route state is keyed by account *name*, as the protocol is: a local
//! subscription's interest goes out under its account's name, and [`account_for`] maps a
//! name on the wire to the account (and so the sublist) it concerns. Accounts must be
//! configured alike on every node, as with nats-server.

pub mod conn;
pub(crate) mod link;
pub mod listen;

use crate::auth::tls::RouteTlsConfig;
use crate::auth::Permissions;
use crate::client::Account;
use crate::client::{Client, Subscription};
use crate::close::CloseReason;
use crate::config::Cluster;
use crate::outbound::BatchPool;
use crate::protocol::route as protocol;
use crate::shared::{Registry, Shared};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use crate::account::GLOBAL_ACCOUNT;

/// The account named `account` on the wire, `None` for an account this server does not
/// have (nats-server ignores routed interest and messages for those: e.g. its own `$SYS`).
#[inline]
pub fn account_for(shared: &Shared, account: &[u8]) -> Option<Arc<Account>> {
    std::str::from_utf8(account)
        .ok()
        .and_then(|name| shared.accounts.get(name))
}

/// (account, subject, queue): one line of interest on the route protocol.
pub type InterestKey = (Box<[u8]>, Box<[u8]>, Option<Box<[u8]>>);

/// What the other server told us about itself (its `INFO`), once it arrived.
#[derive(Debug, Clone, Default)]
pub struct Remote {
    /// Its server id (empty until its `INFO`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its route port (from `INFO`).
    pub port: u16,
    /// Its client URLs, advertised to our clients.
    pub connect_urls: Vec<String>,
    /// Registered (its `INFO` accepted; not a duplicate).
    pub registered: bool,
}

/// One route connection: the shared [`Client`] (outbound queue, counters, close state) plus
/// what is particular to routes.
pub struct Route {
    /// The connection's shared half; `client.cid` is the route id (`rid`).
    pub client: Arc<Client>,
    /// We dialled it.
    pub did_solicit: bool,
    /// It is one of our configured (`routes`) URLs.
    pub configured: bool,
    /// The URL we dialled.
    pub url: Option<String>,
    /// The other server, as its `INFO` described it. Locked briefly by the reader (at
    /// `INFO`) and by monitoring and the table (to read it); never while taking another lock.
    pub remote: Mutex<Remote>,
    /// Remote interest: each `RS+` as a subscription of this route in the account's sublist,
    /// with its queue weight. Only the route's reader writes it (and removes it all when the
    /// route closes); monitoring reads it.
    pub subs: Mutex<HashMap<InterestKey, (Arc<Subscription>, u32)>>,
}

impl Route {
    /// The remote server's id (empty before its `INFO`).
    pub fn remote_id(&self) -> String {
        self.remote.lock().id.clone()
    }
}

#[derive(Default)]
struct Table {
    /// Registered routes by remote server id: at most one per server pair.
    by_id: HashMap<String, Arc<Route>>,
    /// Every route connection by rid, registered or not (for shutdown and monitoring).
    all: HashMap<u64, Arc<Route>>,
    /// Local interest: (account, subject, queue) → local subscriptions (see module docs).
    local: HashMap<InterestKey, u32>,
    /// A registered route brought other servers' client URLs: from then on client `INFO`
    /// has `connect_urls` (see [`Routes::connect_urls`]).
    urls_learned: bool,
}

/// The cluster's name and whether it was made up.
struct ClusterName {
    name: String,
    dynamic: bool,
}

/// Cluster state of one server: the route table, the local interest counts, the cluster's
/// name and the route listen address.
pub struct Routes {
    /// The cluster settings at start.
    pub config: Cluster,
    /// See the module docs ("The table lock").
    table: Mutex<Table>,
    /// The cluster name, and whether it was made up (no `name` configured): one lock, so
    /// that deciding to take a remote's name and taking it is one step (see
    /// [`Routes::reconcile_name`]).
    name: RwLock<ClusterName>,
    /// The bound route listen address (set once at start).
    pub listen_addr: SocketAddr,
    /// Our clients' URLs (`HOST:PORT`), as other servers advertise them.
    pub client_urls: Vec<String>,
    /// Set at shutdown: no more dialing.
    pub(crate) stopping: AtomicBool,
    /// Servers an implicit-route thread is dialing (by id), so gossip repeated by several
    /// routes starts one dialer.
    pub(crate) dialing: Mutex<Vec<String>>,
    /// The configured URLs that have a dialer: a reload that removes a URL and adds it
    /// back before its dialer noticed keeps that dialer rather than starting a second one.
    /// Taken before `configured` when both are (the dialer's decision to end).
    pub(crate) dialers: Mutex<Vec<String>>,
    /// The configured route URLs in force (`cluster.routes`): set at start, changed by a
    /// reload ([`Routes::reconfigure`]). A dialer stops when its URL leaves it. A leaf lock.
    configured: Mutex<Vec<String>>,
    /// The server's batch pool, for the interest lines queued to routes.
    pool: Arc<BatchPool>,
    /// TLS on routes (`cluster.tls`): both sides' rustls configurations; `None`: plain text.
    tls: Option<RouteTlsConfig>,
    /// The name a dialled route's certificate must carry when its URL has an IP address
    /// (nats-server's `routeTLSName`): the host name of the first configured route that has
    /// one; without it, the IP address itself.
    tls_name: Option<String>,
    /// The cluster's `permissions`, compiled as a user's are (nats-server's way: `import` is
    /// the publish side, `export` the subscribe side); `None`: everything crosses.
    perms: Option<Permissions>,
}

/// What every route thread needs: the server's shared state and the cluster's.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) shared: Arc<Shared>,
    pub(crate) routes: Arc<Routes>,
}

impl Routes {
    /// Cluster state for `config`, listening on `listen_addr`; `client_addr` is the bound
    /// client address (its URLs are advertised to other servers); `pool` is the server's
    /// batch pool.
    ///
    /// Errors: the `cluster.tls` files cannot be loaded (the message names the key and
    /// file).
    pub fn new(
        config: Cluster,
        listen_addr: SocketAddr,
        client_addr: SocketAddr,
        pool: Arc<BatchPool>,
    ) -> Result<Routes, String> {
        let tls = match &config.tls {
            Some(t) => {
                if t.insecure {
                    // nats-server's warning.
                    log::warn!(
                        "TLS certificate chain and hostname of solicited routes will not be \
                         verified. DO NOT USE IN PRODUCTION!"
                    );
                }
                Some(crate::auth::tls::route_configs(t)?)
            }
            None => None,
        };
        let configured = config.routes.clone();
        let tls_name = config.routes.iter().find_map(|u| {
            let (_, host, _) = crate::config::parse_route_url(u).ok()?;
            host.parse::<std::net::IpAddr>().is_err().then_some(host)
        });
        let perms = config
            .permissions
            .as_ref()
            .map(|p| Permissions::new(&p.as_user_permissions()));
        let (name, dynamic) = match &config.name {
            Some(n) => (n.clone(), false),
            None => (
                crate::protocol::generate_server_id()[..23].to_string(),
                true,
            ),
        };
        // As nats-server: an unspecified client host advertises the interfaces' global
        // unicast addresses (loopback only if that is all there is).
        let client_urls = crate::listen::advertised_host_ports(client_addr);
        Ok(Routes {
            config,
            table: Mutex::new(Table::default()),
            name: RwLock::new(ClusterName { name, dynamic }),
            listen_addr,
            client_urls,
            stopping: AtomicBool::new(false),
            dialing: Mutex::new(Vec::new()),
            dialers: Mutex::new(Vec::new()),
            configured: Mutex::new(configured),
            pool,
            tls,
            tls_name,
            perms,
        })
    }

    /// A new route connection's TLS session, if routes use TLS: the server side for an
    /// accepted route (`dialed_host` `None`), the client side for one we dial, expecting a
    /// certificate for `dialed_host` (or for [`Routes::tls_name`] when that is an IP
    /// address, as nats-server).
    pub(crate) fn tls_session(
        &self,
        dialed_host: Option<&str>,
    ) -> Result<Option<rustls::Connection>, String> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let mut session = match dialed_host {
            None => rustls::Connection::Server(
                rustls::ServerConnection::new(tls.server.clone()).map_err(|e| e.to_string())?,
            ),
            Some(host) => {
                let host = match &self.tls_name {
                    Some(name) if host.parse::<std::net::IpAddr>().is_ok() => name.as_str(),
                    _ => host,
                };
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| format!("{host:?}: {e}"))?;
                rustls::Connection::Client(
                    rustls::ClientConnection::new(tls.client.clone(), name)
                        .map_err(|e| e.to_string())?,
                )
            }
        };
        // The writer bounds what it hands over (one gather at a time); rustls must take all
        // of it.
        session.set_buffer_limit(None);
        Ok(Some(session))
    }

    /// Whether routes use TLS.
    pub fn tls_required(&self) -> bool {
        self.tls.is_some()
    }

    /// The longest TLS handshake of a route (`cluster.tls.timeout`, default 2 s).
    pub(crate) fn tls_timeout(&self) -> std::time::Duration {
        self.config
            .tls
            .as_ref()
            .map_or(crate::config::DEFAULT_TLS_TIMEOUT, |t| {
                t.tls.effective_timeout()
            })
    }

    /// The cluster's permissions, if any (see the `perms` field).
    pub(crate) fn permissions(&self) -> Option<&Permissions> {
        self.perms.as_ref()
    }

    /// Whether local interest in `subject` is sent to routes (nats-server's `canImport`).
    fn can_import(&self, subject: &[u8]) -> bool {
        self.perms.as_ref().is_none_or(|p| p.can_publish(subject))
    }

    /// The cluster name.
    pub fn name(&self) -> String {
        self.name.read().name.clone()
    }

    /// Whether the cluster name was made up.
    pub fn is_dynamic(&self) -> bool {
        self.name.read().dynamic
    }

    /// A route says its cluster is `theirs` (`theirs_dynamic`: made up): `Ok` if that is
    /// ours, or if ours was made up and we take theirs, as nats-server does (a configured
    /// name wins; between two made-up ones, the greater); otherwise `Err` with our name, and
    /// the route is refused. Decided and done under one lock, so that two routes arriving
    /// together with different names cannot both be taken (the second is then compared with
    /// the first's).
    pub(crate) fn reconcile_name(&self, theirs: &str, theirs_dynamic: bool) -> Result<(), String> {
        let mut ours = self.name.write();
        if ours.name == theirs {
            return Ok(());
        }
        if ours.dynamic && (!theirs_dynamic || ours.name.as_str() < theirs) {
            *ours = ClusterName {
                name: theirs.to_owned(),
                dynamic: false,
            };
            return Ok(());
        }
        Err(ours.name.clone())
    }

    /// Every route connection (registered or not).
    pub fn all(&self) -> Vec<Arc<Route>> {
        self.table.lock().all.values().cloned().collect()
    }

    /// The registered routes.
    pub fn registered(&self) -> Vec<Arc<Route>> {
        self.table.lock().by_id.values().cloned().collect()
    }

    /// Whether a route to server `id` is registered.
    pub fn is_connected(&self, id: &str) -> bool {
        self.table.lock().by_id.contains_key(id)
    }

    /// Remembers a route connection (before its `INFO`), so that shutdown finds it.
    pub(crate) fn track(&self, route: &Arc<Route>) {
        self.table
            .lock()
            .all
            .insert(route.client.cid, route.clone());
    }

    /// Every client URL of the cluster for client `INFO` (`connect_urls`): ours, then the
    /// registered routes' (none of theirs with `no_advertise`); in lame-duck mode (`ldm`)
    /// only theirs, as clients must move elsewhere.
    ///
    /// As nats-server, the list is empty (and `INFO` has no `connect_urls`) until a route
    /// first brought URLs of other servers; from then on it has at least ours, even once
    /// those routes are gone.
    pub fn connect_urls(&self, ldm: bool) -> Vec<String> {
        let table = self.table.lock();
        if !table.urls_learned {
            return Vec::new();
        }
        let mut urls = if ldm {
            Vec::new()
        } else {
            self.client_urls.clone()
        };
        if self.config.no_advertise {
            return urls;
        }
        for r in table.by_id.values() {
            for u in &r.remote.lock().connect_urls {
                if !urls.contains(u) {
                    urls.push(u.clone());
                }
            }
        }
        urls
    }

    /// Registers `route` after its `INFO` (nats-server's `addRoute`): `false` if a route to
    /// the same server is already registered (the caller closes this one as a duplicate).
    /// On success, queues our whole local interest to it, under the table lock (see the
    /// module docs), and returns the other registered routes (for gossip).
    pub(crate) fn register(&self, route: &Arc<Route>, id: &str) -> Option<Vec<Arc<Route>>> {
        let mut table = self.table.lock();
        if table.by_id.contains_key(id) {
            return None;
        }
        table.by_id.insert(id.to_owned(), route.clone());
        {
            let mut remote = route.remote.lock();
            remote.registered = true;
            table.urls_learned |= !remote.connect_urls.is_empty();
        }
        let mut buf = Vec::with_capacity(table.local.len() * 32);
        for ((account, subject, queue), n) in &table.local {
            protocol::write_sub(
                &mut buf,
                account,
                subject,
                queue.as_deref().map(|q| (q, *n)),
            );
        }
        if !buf.is_empty() {
            let mut batch = self.pool.take();
            batch.push(&buf);
            route.client.enqueue(batch, &self.pool);
        }
        Some(
            table
                .by_id
                .values()
                .filter(|r| !Arc::ptr_eq(r, route))
                .cloned()
                .collect(),
        )
    }

    /// A route connection leaves: it is removed from the route table and its counters join
    /// the departed totals, both under the registry's departure lock, as a client's
    /// departure (see [`Registry::depart`]). Returns whether it was the registered route to
    /// its server.
    pub(crate) fn depart(&self, registry: &Registry, route: &Arc<Route>) -> bool {
        registry.consistent(|_| {
            let was_registered = self.remove(route);
            route.client.settle();
            was_registered
        })
    }

    /// Forgets a closed route. Returns whether it was the registered route to its server.
    fn remove(&self, route: &Arc<Route>) -> bool {
        let id = route.remote_id();
        let mut table = self.table.lock();
        table.all.remove(&route.client.cid);
        match table.by_id.get(&id) {
            Some(r) if Arc::ptr_eq(r, route) => {
                table.by_id.remove(&id);
                true
            }
            _ => false,
        }
    }

    /// Counts local subscriptions added (`delta` > 0) or removed, and queues the `RS+`/`RS-`
    /// each change calls for to every registered route (see the module docs).
    fn update_local(&self, changes: &[&Subscription], add: bool) {
        let mut buf = Vec::new();
        let mut table = self.table.lock();
        for sub in changes {
            if !self.can_import(&sub.subject) {
                // Not imported: never counted, so never announced (not even to a route
                // that registers later).
                continue;
            }
            let key: InterestKey = (
                sub.account.name.as_bytes().into(),
                sub.subject.clone(),
                sub.queue.clone(),
            );
            let n = table.local.get(&key).copied().unwrap_or(0);
            let now = if add { n + 1 } else { n.saturating_sub(1) };
            if now == 0 {
                if table.local.remove(&key).is_some() {
                    protocol::write_unsub(&mut buf, &key.0, &key.1, key.2.as_deref());
                }
                continue;
            }
            // A plain subject's count changes nothing remotely except 0↔1; a queue group's
            // weight is re-sent on every change, as nats-server does.
            if n == 0 || key.2.is_some() {
                protocol::write_sub(&mut buf, &key.0, &key.1, key.2.as_deref().map(|q| (q, now)));
            }
            table.local.insert(key, now);
        }
        if buf.is_empty() {
            return;
        }
        for r in table.by_id.values() {
            let mut batch = self.pool.take();
            batch.push(&buf);
            r.client.enqueue(batch, &self.pool);
        }
    }

    /// Whether `url` is one of the configured routes in force.
    pub fn is_configured(&self, url: &str) -> bool {
        self.configured.lock().iter().any(|u| u == url)
    }

    /// The configured routes in force.
    pub fn configured(&self) -> Vec<String> {
        self.configured.lock().clone()
    }

    /// A reload's new `cluster.routes` (nats-server's `routesOption`): returns the URLs
    /// added, for the caller to dial, after closing the connections dialled to the URLs
    /// removed (`Route Removed`, not redialled: their dialers see the URL gone).
    pub fn reconfigure(&self, routes: &[String]) -> Vec<String> {
        let (added, removed) = {
            let mut configured = self.configured.lock();
            let added: Vec<String> = routes
                .iter()
                .filter(|u| !configured.contains(u))
                .cloned()
                .collect();
            let removed: Vec<String> = configured
                .iter()
                .filter(|u| !routes.contains(u))
                .cloned()
                .collect();
            *configured = routes.to_vec();
            (added, removed)
        };
        for url in &removed {
            for r in self.all() {
                if r.url.as_deref() == Some(url.as_str()) {
                    r.client.close(CloseReason::RouteRemoved);
                }
            }
            log::info!("Removed route {url}");
        }
        added
    }

    /// Closes every route connection (shutdown).
    pub fn close_all(&self) {
        // Release: dialers that see it stop.
        self.stopping.store(true, Ordering::Release);
        for r in self.all() {
            r.client.close(CloseReason::ServerShutdown);
        }
    }

    /// Whether the route table is empty of connections.
    pub fn is_empty(&self) -> bool {
        self.table.lock().all.is_empty()
    }

    /// Whether shutdown began.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }
}

/// The core's view of the cluster (see [`crate::shared::Cluster`]).
impl crate::shared::Cluster for Routes {
    /// Sends `RS+` to the routes when the cluster needs to hear of the subscription.
    fn interest_added(&self, sub: &Subscription) {
        self.update_local(&[sub], true);
    }

    /// Sends `RS-` (or a lower queue weight) when the cluster needs to hear of it.
    fn interest_removed(&self, subs: &[&Subscription]) {
        self.update_local(subs, false);
    }

    fn name(&self) -> String {
        Routes::name(self)
    }

    fn connect_urls(&self, ldm: bool) -> Vec<String> {
        Routes::connect_urls(self, ldm)
    }

    fn traffic(&self) -> crate::client::Traffic {
        let mut total = crate::client::Traffic::default();
        for r in self.all() {
            total.add(r.client.stats.snapshot());
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Cluster;
    use std::sync::Barrier;

    fn routes(name: Option<&str>) -> Routes {
        let addr: SocketAddr = "127.0.0.1:4222".parse().unwrap();
        Routes::new(
            Cluster {
                name: name.map(str::to_owned),
                ..Cluster::default()
            },
            addr,
            addr,
            Arc::new(BatchPool::default()),
        )
        .expect("routes without TLS")
    }

    /// Routes arriving together with different configured names: a made-up name is given
    /// up for exactly one of them, and the others are refused (they are compared with the
    /// name taken, not with the made-up one).
    #[test]
    fn a_made_up_name_is_given_up_once() {
        let r = Arc::new(routes(None));
        assert!(r.is_dynamic());
        let start = Arc::new(Barrier::new(8));
        let taken: Vec<bool> = (0..8)
            .map(|i| {
                let (r, start) = (r.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    r.reconcile_name(&format!("configured-{i}"), false).is_ok()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert_eq!(taken.iter().filter(|t| **t).count(), 1, "{taken:?}");
        assert!(!r.is_dynamic());
        let name = r.name();
        assert_eq!(r.reconcile_name(&name, false), Ok(()));
        assert_eq!(r.reconcile_name("other", true), Err(name));
    }

    #[test]
    fn configured_names_are_kept() {
        let r = routes(Some("mine"));
        assert_eq!(r.reconcile_name("theirs", false), Err("mine".into()));
        assert_eq!(r.reconcile_name("mine", false), Ok(()));
        // Two made-up names: the greater is kept.
        let a = routes(None);
        let ours = a.name();
        let greater = format!("{ours}z");
        assert_eq!(a.reconcile_name(&greater, true), Ok(()));
        assert_eq!(a.name(), greater);
    }
}
