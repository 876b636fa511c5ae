//! The ring of recently closed connections behind `/connz?state=closed`
//! (nats-server's `closedRingBuffer`).
//!
//! A connection's reader takes a snapshot of it when it finishes ([`ClosedConn::capture`])
//! and the server keeps the last `max_closed_clients` of them (default 10,000), oldest
//! dropped first. The ring sits behind `Shared::closed`, a `parking_lot::Mutex` that is also
//! what makes a departure atomic for monitoring; see `Shared::depart`.

use super::connz::{ConnInfo, SubDetail};
use crate::client::{Client, Subscription, Traffic};
use crate::close::CloseReason;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

/// A closed connection as `/connz` shows it: its last counters, when and why it closed, and
/// its subscriptions at that moment (listed with `subs=1` / `subs=detail`).
#[derive(Debug, Clone)]
pub struct ClosedConn {
    /// The connection, with `stop` and `reason` set and no subscription lists.
    pub info: ConnInfo,
    /// Its subscriptions when it closed.
    pub subs: Vec<SubDetail>,
}

impl ClosedConn {
    /// A snapshot of `client`, closed at `stop` for `reason`, that had the subscriptions
    /// `subs`. Its counters are filled in by [`ClosedConn::set_traffic`].
    pub fn capture(
        client: &Client,
        reason: CloseReason,
        subs: &[Arc<Subscription>],
        stop: SystemTime,
    ) -> ClosedConn {
        let mut info = ConnInfo::of(client, stop, subs.len());
        info.stop = Some(super::json::GoTime(stop));
        info.reason = reason.as_str();
        let mut subs: Vec<SubDetail> = subs
            .iter()
            // nats-server fills the account in for a closed connection's subscriptions
            // (`newSubDetail`), not for an open one's (`newClientSubDetail`).
            .map(|s| SubDetail::of(s, true))
            .collect();
        super::connz::sort_subs(&mut subs);
        ClosedConn { info, subs }
    }

    /// Records the connection's final counters.
    pub fn set_traffic(&mut self, t: Traffic) {
        self.info.set_traffic(t);
    }
}

/// The ring (see the module docs).
#[derive(Debug)]
pub struct ClosedConnections {
    capacity: usize,
    conns: VecDeque<Arc<ClosedConn>>,
}

impl ClosedConnections {
    /// An empty ring keeping at most `capacity` connections (at least one).
    pub fn new(capacity: usize) -> Self {
        ClosedConnections {
            capacity: capacity.max(1),
            conns: VecDeque::new(),
        }
    }

    /// Adds a closed connection, dropping the oldest when full.
    pub fn push(&mut self, conn: ClosedConn) {
        if self.conns.len() >= self.capacity {
            self.conns.pop_front();
        }
        self.conns.push_back(Arc::new(conn));
    }

    /// The connections kept, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ClosedConn>> {
        self.conns.iter()
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }
}
