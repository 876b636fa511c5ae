//! The registry of connections: who is connected, who has left, and the counts monitoring
//! reports about both.
//!
//! ## Departures
//! A connection's reader, when it finishes, calls [`Registry::depart`]: under the departure
//! lock it unregisters the client, adds the client's counters to the totals of departed
//! connections, keeps a snapshot of it in the ring of closed connections and counts its
//! close reason. Monitoring reads the registry and those totals under the same lock
//! ([`Registry::consistent`]), so a connection that leaves is counted once: never in both,
//! never in neither. Routes leave the same way ([`Registry::consistent`] again, around the
//! route table's removal).
//!
//! Lock order: the departure lock, then the registry's shard locks, then (in `depart`) the
//! leaving client's `settled` lock; nothing else is taken under it.

use super::closed::{ClosedConn, ClosedConnections};
use crate::client::{Client, ClientSnapshot, ClientStats, SubSnapshot, Subscription, Traffic};
use crate::close::CloseReason;
use dashmap::DashMap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// The connections of one server. See the module docs.
pub struct Registry {
    /// Connected clients by cid.
    clients: DashMap<u64, Arc<Client>>,
    /// Client connections admitted under `max_connections` whose reader has not exited yet
    /// (see `Shared::admit`). Unlike the registry's size, it never counts a connection that
    /// is being refused.
    pub(super) admitted: AtomicUsize,
    /// Refused connections whose reader is still telling them so (see
    /// [`super::Shared::refuse`]).
    pub(super) refusing: AtomicUsize,
    /// Messages and bytes of the connections that have left; open connections keep their
    /// own counters, summed on request.
    departed: Arc<ClientStats>,
    /// The last `max_closed_clients` closed connections (`/connz?state=closed`). Its lock
    /// is the departure lock (see the module docs).
    closed: Mutex<ClosedConnections>,
    /// Connections closed, per [`CloseReason`] (indexed by `CloseReason::index`). Added to
    /// under the departure lock, so that they agree with the registry for anyone who took
    /// that lock; Relaxed, since the lock orders them.
    closed_by_reason: [AtomicU64; CloseReason::ALL.len()],
    next_cid: AtomicU64,
}

impl Registry {
    /// An empty registry whose ring keeps `closed_ring_size` closed connections.
    pub fn new(closed_ring_size: usize) -> Registry {
        Registry {
            clients: DashMap::new(),
            admitted: AtomicUsize::new(0),
            refusing: AtomicUsize::new(0),
            departed: Arc::new(ClientStats::default()),
            closed: Mutex::new(ClosedConnections::new(closed_ring_size)),
            closed_by_reason: std::array::from_fn(|_| AtomicU64::new(0)),
            next_cid: AtomicU64::new(1),
        }
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

    /// The totals of departed connections, which a new connection's counters join when it
    /// leaves (see `Client::settle`).
    pub fn departed(&self) -> &Arc<ClientStats> {
        &self.departed
    }

    /// Registers a client connection.
    pub fn register(&self, client: Arc<Client>) {
        self.clients.insert(client.cid, client);
    }

    /// Unregisters a client that never started (refused before its reader ran).
    pub fn unregister(&self, cid: u64) {
        self.clients.remove(&cid);
    }

    /// The client `cid`, if connected.
    pub fn get(&self, cid: u64) -> Option<Arc<Client>> {
        self.clients.get(&cid).map(|c| c.value().clone())
    }

    /// Connected clients.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// The connected clients, copied out of the registry: the caller may then take any
    /// lock or wait (e.g. `Client::abort` waits for a write in progress) without holding a
    /// registry shard lock, which a departing reader needs (see the lock order in
    /// docs/architecture.md).
    pub fn client_list(&self) -> Vec<Arc<Client>> {
        self.clients.iter().map(|e| e.value().clone()).collect()
    }

    /// Runs `f` with the departure lock held: no connection leaves meanwhile, so what `f`
    /// reads of the registry (`self`) and of the ring (its argument) agrees. `f` must take
    /// no other lock than the registry's shards (see the module docs).
    pub fn consistent<R>(&self, f: impl FnOnce(&ClosedConnections) -> R) -> R {
        let ring = self.closed.lock();
        f(&ring)
    }

    /// Open connections, and the messages and bytes of all connections since start: the
    /// open ones' counters summed, plus `others` (the routes', summed under the same lock
    /// by the caller's closure), plus the departed ones' totals. Read under the departure
    /// lock, so that a connection leaving meanwhile is counted exactly once.
    pub fn connections_and_traffic(&self, others: impl FnOnce() -> Traffic) -> (usize, Traffic) {
        self.consistent(|_| {
            let mut total = self.departed.snapshot();
            let mut open = 0;
            for c in self.clients.iter() {
                open += 1;
                total.add(c.value().stats.snapshot());
            }
            total.add(others());
            (open, total)
        })
    }

    /// A connection leaves: called once by its reader when it finishes, after its
    /// subscriptions were removed (`subs` are the ones it had). Unregisters the client,
    /// adds its counters to the departed totals and keeps a snapshot of it for
    /// `/connz?state=closed`, all under the departure lock (see the module docs).
    pub fn depart(&self, client: &Arc<Client>, reason: CloseReason, subs: &[Arc<Subscription>]) {
        // Everything that takes the client's own locks happens before the departure lock.
        let mut snapshot = ClosedConn {
            client: ClientSnapshot::of(client),
            stop: SystemTime::now(),
            reason,
            subs: subs.iter().map(|s| SubSnapshot::of(s)).collect(),
        };
        let mut ring = self.closed.lock();
        self.clients.remove(&client.cid);
        snapshot.client.traffic = client.settle();
        ring.push(snapshot);
        // Counted under the same lock, so that whoever sees the connection gone (under
        // this lock) also sees its close reason counted: `/varz` `connections` and
        // `slow_consumers`, and `/metrics`, agree at every moment.
        self.closed_by_reason[reason.index()].fetch_add(1, Ordering::Relaxed);
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
}
