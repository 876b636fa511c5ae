//! A connection's message and byte counters, and copies of them ([`Traffic`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// Message and byte counters of one connection (nats-server's `in_msgs`, `in_bytes`,
/// `out_msgs`, `out_bytes`). Bytes count payloads (headers included), not protocol lines.
///
/// The `in_*` pair is written only by the client's own reader, the `out_*` pair by whichever
/// reader queues a batch to it (once per batch, not per message). Each pair has its own cache
/// line so that counting outbound traffic does not slow the client's own reader.
#[derive(Default, Debug)]
pub struct ClientStats {
    /// Messages received from this client, and their payload bytes.
    pub inbound: crossbeam_utils::CachePadded<MsgCounter>,
    /// Messages delivered to this client, and their payload bytes.
    pub outbound: crossbeam_utils::CachePadded<MsgCounter>,
}

/// A messages/bytes counter pair. Relaxed atomics: they are statistics, read on request.
#[derive(Default, Debug)]
pub struct MsgCounter {
    /// Messages.
    pub msgs: AtomicU64,
    /// Payload bytes.
    pub bytes: AtomicU64,
}

impl MsgCounter {
    /// Adds `msgs` messages of `bytes` payload bytes in total.
    #[inline]
    pub fn add(&self, msgs: u64, bytes: u64) {
        self.msgs.fetch_add(msgs, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// (messages, bytes).
    pub fn get(&self) -> (u64, u64) {
        (
            self.msgs.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

/// A copy of a [`ClientStats`] at one moment: messages and payload bytes in each direction.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// Messages received from the client(s).
    pub in_msgs: u64,
    /// Their payload bytes (headers included).
    pub in_bytes: u64,
    /// Messages delivered to the client(s).
    pub out_msgs: u64,
    /// Their payload bytes (headers included).
    pub out_bytes: u64,
}

impl Traffic {
    /// Adds `other` to these counts (saturating: the sums are statistics).
    pub fn add(&mut self, other: Traffic) {
        self.in_msgs = self.in_msgs.saturating_add(other.in_msgs);
        self.in_bytes = self.in_bytes.saturating_add(other.in_bytes);
        self.out_msgs = self.out_msgs.saturating_add(other.out_msgs);
        self.out_bytes = self.out_bytes.saturating_add(other.out_bytes);
    }

    /// What `self` has more than `earlier` (counters only grow).
    pub(super) fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            in_msgs: self.in_msgs.saturating_sub(earlier.in_msgs),
            in_bytes: self.in_bytes.saturating_sub(earlier.in_bytes),
            out_msgs: self.out_msgs.saturating_sub(earlier.out_msgs),
            out_bytes: self.out_bytes.saturating_sub(earlier.out_bytes),
        }
    }
}

impl ClientStats {
    /// The counters now (each read Relaxed: the four values may be from slightly different
    /// moments while traffic flows, as with nats-server's separate atomics).
    pub fn snapshot(&self) -> Traffic {
        let (in_msgs, in_bytes) = self.inbound.get();
        let (out_msgs, out_bytes) = self.outbound.get();
        Traffic {
            in_msgs,
            in_bytes,
            out_msgs,
            out_bytes,
        }
    }

    /// Adds `t` to the counters.
    pub fn add(&self, t: Traffic) {
        if t.in_msgs > 0 || t.in_bytes > 0 {
            self.inbound.add(t.in_msgs, t.in_bytes);
        }
        if t.out_msgs > 0 || t.out_bytes > 0 {
            self.outbound.add(t.out_msgs, t.out_bytes);
        }
    }
}
