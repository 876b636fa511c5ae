//! A reader thread's outbox: what one read's worth of operations sends, per destination.
//!
//! Routing a `PUB` does not touch the subscribers' queues directly. Each reader stages output
//! in one [`Batch`] per destination client (its own client included, for `PONG`/`+OK`/`-ERR`),
//! and [`Outbox::flush`] queues every batch once, after the whole read buffer has been
//! processed (or earlier if the staged bytes grow large). So:
//! - a subscriber's queue sees one push and its writer one wake-up per read, however many
//!   messages that read carried ("woken once per batch of work");
//! - per message there is no atomic operation and no lock: a hash lookup of the destination
//!   (skipped when it is the same as the last one) and a few `memcpy`s;
//! - output to one destination stays in the order the operations were processed, including
//!   a client's own `+OK` before the `MSG` its `PUB` produced, as nats-server orders them.
//!
//! After queueing, a reader whose publishes filled some subscriber's queue past the stall
//! threshold waits (bounded) for it to drain: backpressure on fast producers, as
//! nats-server's "stalled" producers.

use super::{Client, Enqueued};
use crate::outbound::{Batch, BatchPool, StallPolicy};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Instant;

struct Slot {
    client: Arc<Client>,
    batch: Batch,
}

/// See the module docs.
pub struct Outbox {
    slots: Vec<Slot>,
    /// cid -> index in `slots`.
    index: FxHashMap<u64, usize>,
    /// Index of the slot used last (most messages go where the previous one went).
    last: usize,
    /// Bytes copied into the staged batches (shared payloads excluded).
    staged: usize,
}

impl Default for Outbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Outbox {
    /// An empty outbox.
    pub fn new() -> Self {
        Outbox {
            slots: Vec::new(),
            index: FxHashMap::default(),
            last: usize::MAX,
            staged: 0,
        }
    }

    /// The batch staged for `client`, created (from `pool`) on first use.
    #[inline]
    pub fn batch_for(&mut self, client: &Arc<Client>, pool: &BatchPool) -> &mut Batch {
        if self.slots.get(self.last).map(|s| s.client.cid) != Some(client.cid) {
            let slots = &mut self.slots;
            self.last = *self.index.entry(client.cid).or_insert_with(|| {
                slots.push(Slot {
                    client: client.clone(),
                    batch: pool.take(),
                });
                slots.len() - 1
            });
        }
        &mut self.slots[self.last].batch
    }

    /// Records `n` more bytes copied into staged batches.
    #[inline]
    pub fn add_staged(&mut self, n: usize) {
        self.staged += n;
    }

    /// Bytes copied into staged batches since the last flush.
    #[inline]
    pub fn staged(&self) -> usize {
        self.staged
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Queues every staged batch, then applies backpressure: waits (at most
    /// `stall.max_wait` in total) for destinations whose queues passed `stall.threshold`,
    /// except `own_cid`'s (a client is not made to wait for itself).
    pub fn flush(&mut self, pool: &BatchPool, stall: &StallPolicy, own_cid: u64) {
        if self.slots.is_empty() {
            return;
        }
        let mut must_stall = false;
        for slot in &mut self.slots {
            let batch = std::mem::take(&mut slot.batch);
            if batch.is_empty() {
                pool.give(batch);
                continue;
            }
            if slot.client.enqueue(batch, pool) == Enqueued::Queued
                && slot.client.cid != own_cid
                && slot.client.pending_bytes() > stall.threshold
            {
                must_stall = true;
            }
        }
        if must_stall {
            let deadline = Instant::now() + stall.max_wait;
            for slot in &self.slots {
                let c = &slot.client;
                if c.cid != own_cid && c.pending_bytes() > stall.threshold {
                    c.outbound.stall(stall, deadline, || c.is_closing());
                }
            }
        }
        self.slots.clear();
        self.index.clear();
        self.last = usize::MAX;
        self.staged = 0;
    }
}
