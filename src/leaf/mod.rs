//! Leafnodes: a beaver server extends a NATS system as a leaf of a hub (it solicits the
//! connections listed in `leafnodes { remotes }`), or is the hub leafs connect to (it
//! listens on `leafnodes { port }`), speaking nats-server 2.9's leafnode protocol (see
//! [`crate::protocol::leaf`] for the bytes), with nats-server and with beaver.
//!
//! A leafnode connection is one more kind of connection, built like a route
//! ([`crate::route`]): its shared half is an ordinary [`Client`] marked as a leaf
//! (`Client::into_leaf`), so its output goes through the same lock-free queue and writer
//! pool, and a slow leaf is a slow consumer like any other. Its reader thread ([`conn`])
//! parses leafnode operations. One thread listens on the leafnode port, one thread per
//! remote dials and redials it ([`listen`]).
//!
//! Unlike a route, a leafnode connection is bound to **one account**: on the hub the
//! account the leaf authenticated into (`$G` by default), on the leaf the remote's
//! `account`. Nothing on the wire names an account.
//!
//! ## Roles
//! The side that solicits is the *spoke* ([`Client::is_spoke_leaf`]); the side that accepts
//! is the hub. What crosses depends on the role, as in nats-server (`updateSmap`,
//! `initLeafNodeSmapAndSendSubs`, `processMsgResults`):
//! - a spoke tells its hub of its *local* interest only: its clients' (and services')
//!   subscriptions and those of leafs connected to it, never what it heard from the hub or
//!   from routes;
//! - a hub tells a leaf of all interest in the account (clients, routes, other leafs),
//!   except the leaf's own;
//! - messages follow interest (see `delivery`): a message from the hub goes to local
//!   subscribers and to leafs connected to us, not to routes; a queue group prefers a local
//!   member to one behind a leafnode connection.
//!
//! ## Interest, and the table lock
//! `Leafnodes::table` (a `parking_lot::Mutex`) holds every leafnode connection and the
//! interest counts: per (account, subject, queue), how many subscriptions are *local* (what
//! a spoke connection tells its hub) and how many there are in *all*, and per connection
//! how many are its own and what it was last told. Every change of interest in an account
//! (`shared::Leafnodes`, called after the subscription is in or out of the table) updates
//! the counts and queues `LS+`/`LS-` to the registered connections it concerns *under the
//! lock*; a connection registers and is sent its whole view under it too. So each subject's
//! changes reach every connection in order, and a new connection sees each exactly once
//! (the routes' argument, `crate::route`). Queueing never blocks (a lock-free push and a
//! doorbell on a bounded channel with room for everyone). Lock order: a client's `subs` →
//! sublist locks, released; then the table. Nothing is taken under the table but a
//! connection's socket and stall lock (queueing to a leaf that is a slow consumer closes
//! it), as under the route table. The registry's departure lock → the table (departures and
//! `/varz` sums).
//!
//! ## Loop detection
//! Each server sends `LS+ $LDS.<random>` when a connection registers. A server that
//! receives its own subject back is in a loop (the interest went round): it answers
//! `-ERR 'Loop detected ...'` and closes; a soliciting side then waits 30 s before
//! redialling (nats-server's `leafNodeReconnectDelayAfterLoopDetected`).

pub mod conn;
pub mod listen;

use crate::client::{Account, Client, Subscription, Traffic};
use crate::close::CloseReason;
use crate::config::LeafNodes as LeafConfig;
use crate::outbound::BatchPool;
use crate::protocol::route as protocol;
use crate::shared::Registry;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// (subject, queue): one line of leafnode interest.
pub type LeafKey = (Box<[u8]>, Option<Box<[u8]>>);

/// What the other server told us about itself.
#[derive(Debug, Clone, Default)]
pub struct Remote {
    /// Its server id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its cluster name, if it has one.
    pub cluster: String,
}

/// One leafnode connection: the shared [`Client`] plus what is particular to leafnodes.
pub struct Leaf {
    /// The connection's shared half; `client.cid` is the leaf id (`lid`).
    pub client: Arc<Client>,
    /// The account the connection is bound to.
    pub account: Arc<Account>,
    /// We solicited it (a remote of ours): we are the spoke.
    pub spoke: bool,
    /// The URL we dialled (solicited connections).
    pub url: Option<String>,
    /// The other server (from its `INFO` or `CONNECT`). Locked briefly, never while taking
    /// another lock.
    pub remote: Mutex<Remote>,
    /// Remote interest: each `LS+` as a subscription of this connection in the account's
    /// sublist. Only the connection's reader writes it; monitoring reads it.
    pub subs: Mutex<HashMap<LeafKey, Arc<Subscription>>>,
    /// A remote's `deny_imports`: interest in these subjects is not sent to it.
    pub imports_denied: Option<Arc<crate::auth::PermissionSet>>,
}

impl Leaf {
    /// Whether the other side may hear of interest in `subject` (not in `deny_imports`).
    fn may_hear(&self, subject: &[u8]) -> bool {
        !self
            .imports_denied
            .as_ref()
            .is_some_and(|d| d.matches(subject))
    }
}

/// Interest counts of one (account, subject, queue) (see the module docs).
#[derive(Default, Clone, Copy)]
struct Counts {
    /// Subscriptions of local clients and services, and of leafs connected to us.
    local: u32,
    /// Every subscription (routes' and our hub's too).
    all: u32,
}

/// A registered connection's view: its own interest, and what it was last told.
#[derive(Default)]
struct View {
    /// Its own subscriptions (remote interest it sent), per key.
    own: HashMap<LeafKey, u32>,
    /// The count we last sent it per key (`LS+`), absent once `LS-` was sent.
    sent: HashMap<LeafKey, u32>,
}

#[derive(Default)]
struct Table {
    /// Every registered leafnode connection by lid (a connection joins once its
    /// handshake is done; before, its reader ends it on its own deadline or at shutdown).
    all: HashMap<u64, Arc<Leaf>>,
    /// Registered connections' views, by lid.
    views: HashMap<u64, View>,
    /// Interest per account name, then key.
    interest: HashMap<String, HashMap<LeafKey, Counts>>,
}

/// Leafnode state of one server: the connections, the interest counts, the settings.
pub struct Leafnodes {
    /// The `leafnodes` settings at start.
    pub config: LeafConfig,
    /// See the module docs ("Interest, and the table lock").
    table: Mutex<Table>,
    /// The bound leafnode listen address, when listening.
    pub listen_addr: Option<SocketAddr>,
    /// Our loop-detection subject (`$LDS.<random>`), the same for every account.
    pub lds: String,
    /// Set at shutdown: no more dialing.
    stopping: AtomicBool,
    /// The server's batch pool, for the interest lines queued to connections.
    pool: Arc<BatchPool>,
}

impl Leafnodes {
    /// Leafnode state for `config`, listening on `listen_addr` if any; `pool` is the
    /// server's batch pool.
    pub fn new(config: LeafConfig, listen_addr: Option<SocketAddr>, pool: Arc<BatchPool>) -> Self {
        Leafnodes {
            config,
            table: Mutex::new(Table::default()),
            listen_addr,
            lds: format!(
                "{}{}",
                crate::protocol::leaf::LOOP_DETECTION_PREFIX,
                &crate::protocol::generate_server_id()[..22]
            ),
            stopping: AtomicBool::new(false),
            pool,
        }
    }

    /// Every registered leafnode connection, by lid.
    pub fn all(&self) -> Vec<Arc<Leaf>> {
        let mut v: Vec<Arc<Leaf>> = self.table.lock().all.values().cloned().collect();
        v.sort_by_key(|l| l.client.cid);
        v
    }

    /// Registers `leaf` once its handshake is done, and queues it its whole view of the
    /// account's interest and our loop-detection subject, under the table lock.
    pub(crate) fn register(&self, leaf: &Arc<Leaf>) {
        let mut table = self.table.lock();
        let mut view = View::default();
        let mut buf = Vec::new();
        if let Some(keys) = table.interest.get(&leaf.account.name) {
            for (key, counts) in keys {
                let n = if leaf.spoke { counts.local } else { counts.all };
                if n > 0 && leaf.may_hear(&key.0) {
                    view.sent.insert(key.clone(), n);
                    write_sub(&mut buf, key, n);
                }
            }
        }
        protocol::write_leaf_sub(&mut buf, self.lds.as_bytes(), None);
        table.views.insert(leaf.client.cid, view);
        table.all.insert(leaf.client.cid, leaf.clone());
        self.queue(&leaf.client, &buf);
    }

    /// A connection leaves: removed from the table, its counters joining the departed
    /// totals, both under the registry's departure lock (as a route's departure).
    pub(crate) fn depart(&self, registry: &Registry, leaf: &Arc<Leaf>) {
        registry.consistent(|_| {
            let mut table = self.table.lock();
            table.all.remove(&leaf.client.cid);
            table.views.remove(&leaf.client.cid);
            drop(table);
            leaf.client.settle();
        });
    }

    fn queue(&self, client: &Arc<Client>, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut batch = self.pool.take();
        batch.push(bytes);
        client.enqueue(batch, &self.pool);
    }

    /// Counts `subs` added or removed and queues the `LS+`/`LS-` each registered
    /// connection must hear (see the module docs).
    fn update(&self, subs: &[&Subscription], add: bool) {
        let mut table = self.table.lock();
        let table = &mut *table;
        let mut out: HashMap<u64, Vec<u8>> = HashMap::new();
        for sub in subs {
            let key: LeafKey = (sub.subject.clone(), sub.queue.clone());
            let c = &sub.client;
            let is_local = !c.is_route() && !c.is_spoke_leaf();
            let counts = table
                .interest
                .entry(sub.account.name.clone())
                .or_default()
                .entry(key.clone())
                .or_default();
            let step = |n: u32| if add { n + 1 } else { n.saturating_sub(1) };
            counts.all = step(counts.all);
            if is_local {
                counts.local = step(counts.local);
            }
            let counts = *counts;
            if counts.all == 0 {
                if let Some(a) = table.interest.get_mut(&*sub.account.name) {
                    a.remove(&key);
                }
            }
            if c.is_leaf() {
                if let Some(view) = table.views.get_mut(&c.cid) {
                    let own = view.own.entry(key.clone()).or_default();
                    *own = step(*own);
                    if *own == 0 {
                        view.own.remove(&key);
                    }
                }
            }
            for leaf in table.all.values() {
                if !Arc::ptr_eq(&leaf.account, &sub.account)
                    && leaf.account.name != sub.account.name
                {
                    continue;
                }
                if !leaf.may_hear(&key.0) {
                    continue;
                }
                let Some(view) = table.views.get_mut(&leaf.client.cid) else {
                    continue;
                };
                let own = view.own.get(&key).copied().unwrap_or(0);
                let want = if leaf.spoke {
                    counts.local
                } else {
                    counts.all.saturating_sub(own)
                };
                let had = view.sent.get(&key).copied().unwrap_or(0);
                if want == had {
                    continue;
                }
                let buf = out.entry(leaf.client.cid).or_default();
                if want == 0 {
                    view.sent.remove(&key);
                    protocol::write_leaf_unsub(buf, &key.0, key.1.as_deref());
                } else {
                    view.sent.insert(key.clone(), want);
                    // A plain subject changes nothing remotely except 0↔1; a queue
                    // group's weight is re-sent on every change, as nats-server does.
                    if had == 0 || key.1.is_some() {
                        write_sub(buf, &key, want);
                    }
                }
            }
        }
        for (cid, buf) in out {
            if let Some(leaf) = table.all.get(&cid) {
                self.queue(&leaf.client, &buf);
            }
        }
    }

    /// Closes every leafnode connection (shutdown).
    pub fn close_all(&self) {
        // Release: dialers that see it stop.
        self.stopping.store(true, Ordering::Release);
        for l in self.all() {
            l.client.close(CloseReason::ServerShutdown);
        }
    }

    /// Whether there is no connection left.
    pub fn is_empty(&self) -> bool {
        self.table.lock().all.is_empty()
    }

    /// Whether shutdown began.
    pub fn is_stopping(&self) -> bool {
        // Acquire: pairs with `close_all`'s Release (a flag; nothing else is published).
        self.stopping.load(Ordering::Acquire)
    }
}

/// `LS+ <subject>` or `LS+ <subject> <queue> <weight>`.
fn write_sub(buf: &mut Vec<u8>, key: &LeafKey, n: u32) {
    protocol::write_leaf_sub(buf, &key.0, key.1.as_deref().map(|q| (q, n)));
}

/// The core's view of leafnodes (see [`crate::shared::Leafnodes`]).
impl crate::shared::Leafnodes for Leafnodes {
    fn interest_added(&self, sub: &Subscription) {
        self.update(&[sub], true);
    }

    fn interest_removed(&self, subs: &[&Subscription]) {
        self.update(subs, false);
    }

    fn traffic(&self) -> Traffic {
        let mut total = Traffic::default();
        for l in self.all() {
            total.add(l.client.stats.snapshot());
        }
        total
    }
}
