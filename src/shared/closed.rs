//! The ring of recently closed connections behind `/connz?state=closed`
//! (nats-server's `closedRingBuffer`).
//!
//! A connection's reader takes a snapshot of it when it finishes ([`ClosedConn`]) and the
//! registry keeps the last `max_closed_clients` of them (default 10,000), oldest dropped
//! first. The ring sits behind the registry's departure lock, which is also what makes a
//! departure atomic for monitoring; see [`super::Registry`].

use crate::client::{ClientSnapshot, SubSnapshot};
use crate::close::CloseReason;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

/// A closed connection: its last state and counters, when and why it closed, and its
/// subscriptions at that moment (listed by `/connz` with `subs=1` / `subs=detail`).
#[derive(Debug, Clone)]
pub struct ClosedConn {
    /// The connection as it was when it closed, with its final counters.
    pub client: ClientSnapshot,
    /// When it closed.
    pub stop: SystemTime,
    /// Why.
    pub reason: CloseReason,
    /// Its subscriptions when it closed.
    pub subs: Vec<SubSnapshot>,
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
