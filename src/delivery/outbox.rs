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
//! A client's reader may write small deliveries to idle subscribers itself as it queues
//! them, instead of waking a writer ([`Outbox::with_direct_writes`], `writer::direct`):
//! nats-server's in-place flush, which saves a request/reply hop two thread wake-ups.
//!
//! After queueing, a reader whose publishes filled some subscriber's queue past the stall
//! threshold waits (bounded) for it to drain: backpressure on fast producers, as
//! nats-server's "stalled" producers.

use crate::client::{Client, Enqueued};
use crate::outbound::{Batch, BatchPool, StallPolicy};
use crate::writer::Direct;
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
    /// What services (JetStream) answered to the messages being delivered, routed by
    /// [`crate::delivery::deliver_message`] once the message that caused them is done.
    pub(crate) service_replies: Vec<crate::client::ServiceReply>,
    /// A client reader's direct writes (see the module docs); `None` for route, leafnode
    /// and JetStream senders, which always hand deliveries to the writer pool.
    direct: Option<Direct>,
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
            service_replies: Vec::new(),
            direct: None,
        }
    }

    /// An outbox whose [`Outbox::flush`] writes a small batch for an idle plain-text
    /// client (one no writer holds) to its socket at once, within a time budget per flush,
    /// before handing anything left to the writer pool: for a client's reader, where
    /// request/reply latency is made. See `writer::direct`.
    pub fn with_direct_writes() -> Self {
        Outbox {
            direct: Some(Direct::new()),
            ..Self::new()
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

    /// Queues every staged batch, then, with a `stall` policy, applies backpressure: waits
    /// (at most `stall.max_wait` in total) for destinations whose queues passed
    /// `stall.threshold`, except `own_cid`'s (a client is not made to wait for itself).
    /// Route readers pass `None`: as in nats-server, only client producers are stalled, so
    /// that one slow subscriber on this server does not delay all traffic from another.
    pub fn flush(&mut self, pool: &BatchPool, stall: Option<&StallPolicy>, own_cid: u64) {
        if self.queue_all(pool, stall, own_cid) {
            if let Some(stall) = stall {
                let deadline = Instant::now() + stall.max_wait;
                for slot in &self.slots {
                    let c = &slot.client;
                    if c.cid != own_cid && c.pending_bytes() > stall.threshold {
                        c.outbound.stall(stall, deadline, || c.is_closing());
                    }
                }
            }
        }
        self.clear();
    }

    /// [`Outbox::flush`] for a producer that must not wait here (an async runner): the
    /// destinations it would wait for are added to `stalled` instead (each once), for the
    /// caller to wait on without blocking its thread ([`crate::outbound::StallWait`]).
    pub fn flush_deferring_stall(
        &mut self,
        pool: &BatchPool,
        stall: &StallPolicy,
        own_cid: u64,
        stalled: &mut Vec<Arc<Client>>,
    ) {
        if self.queue_all(pool, Some(stall), own_cid) {
            for slot in &self.slots {
                let c = &slot.client;
                if c.cid != own_cid
                    && c.pending_bytes() > stall.threshold
                    && !stalled.iter().any(|s| Arc::ptr_eq(s, c))
                {
                    stalled.push(c.clone());
                }
            }
        }
        self.clear();
    }

    /// Queues every staged batch (see [`Outbox::flush`]); returns whether a destination
    /// other than `own_cid` is now over `stall`'s threshold.
    fn queue_all(&mut self, pool: &BatchPool, stall: Option<&StallPolicy>, own_cid: u64) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let mut must_stall = false;
        if let Some(direct) = &mut self.direct {
            direct.new_round();
        }
        for slot in &mut self.slots {
            let batch = std::mem::take(&mut slot.batch);
            if batch.is_empty() {
                pool.give(batch);
                continue;
            }
            let len = batch.len();
            let (enqueued, token) = slot.client.enqueue_keeping(batch, pool);
            if let Some(token) = token {
                let token = match &mut self.direct {
                    Some(d) if d.applies(&slot.client, len) => d.write(&slot.client, token, pool),
                    _ => Some(token),
                };
                if let Some(token) = token {
                    slot.client.ring(token);
                }
            }
            if enqueued == Enqueued::Queued
                && slot.client.cid != own_cid
                && stall.is_some_and(|s| slot.client.pending_bytes() > s.threshold)
            {
                must_stall = true;
            }
        }
        must_stall
    }

    /// Forgets the slots, once their batches are queued.
    fn clear(&mut self) {
        self.slots.clear();
        self.index.clear();
        self.last = usize::MAX;
        self.staged = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::Account;
    use crate::socket::Socket;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    /// A client whose writer never runs (nothing takes its doorbell): what is queued for it
    /// stays pending.
    fn idle_client(
        cid: u64,
    ) -> (
        Arc<Client>,
        TcpStream,
        crossbeam_channel::Receiver<crate::client::Ready>,
    ) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, addr) = l.accept().unwrap();
        let (doorbell, rung) = crossbeam_channel::bounded(16);
        let client = Arc::new(Client::new(
            cid,
            addr,
            Arc::new(Socket::new(s).unwrap()),
            doorbell,
            1 << 30,
            Arc::default(),
            None,
            Arc::new(Account::new("$G")),
        ));
        (client, peer, rung)
    }

    /// Reads what `peer` has been sent, until `want` bytes or a second without more.
    fn read_peer(peer: &mut TcpStream, want: usize) -> Vec<u8> {
        use std::io::Read;
        peer.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        while got.len() < want {
            match peer.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        got
    }

    /// A client reader's outbox writes a small delivery to an idle client's socket itself:
    /// no writer is woken, the bytes arrive, and the scheduled token is free again (the
    /// next push takes it).
    #[test]
    fn a_small_delivery_to_an_idle_client_is_written_directly() {
        let (client, mut peer, rung) = idle_client(7);
        let pool = BatchPool::default();
        let mut outbox = Outbox::with_direct_writes();
        outbox
            .batch_for(&client, &pool)
            .push(b"MSG reply 1 2\r\nok\r\n");
        outbox.flush(&pool, None, 1);
        assert!(rung.try_recv().is_err(), "no writer woken");
        assert_eq!(read_peer(&mut peer, 20), b"MSG reply 1 2\r\nok\r\n");
        assert_eq!(client.pending_bytes(), 0);
        let mut batch = pool.take();
        batch.push(b"PING\r\n");
        let (_, token) = client.enqueue_keeping(batch, &pool);
        assert!(token.is_some(), "the token was given back");
    }

    /// What the shortcut leaves to the writer pool: a batch over `DIRECT_MAX`, and any
    /// batch from an outbox without direct writes (routes, leafnodes, JetStream).
    #[test]
    fn large_deliveries_and_other_senders_wake_a_writer() {
        let pool = BatchPool::default();
        let big = vec![b'x'; crate::writer::DIRECT_MAX + 1];
        for direct in [true, false] {
            let (client, _peer, rung) = idle_client(7);
            let mut outbox = if direct {
                Outbox::with_direct_writes()
            } else {
                Outbox::new()
            };
            let payload: &[u8] = if direct { &big } else { b"hi" };
            outbox.batch_for(&client, &pool).push(payload);
            outbox.flush(&pool, None, 1);
            assert!(
                matches!(rung.try_recv(), Ok(crate::client::Ready::Client(..))),
                "a writer was woken (direct outbox: {direct})"
            );
            assert_eq!(client.pending_bytes(), payload.len(), "left to the writer");
        }
    }

    /// A socket that does not take everything: what is left goes to the writer pool with
    /// the token (rung once), and later batches queue behind it without ringing again.
    #[test]
    fn a_full_socket_hands_the_rest_to_a_writer() {
        let (client, mut peer, rung) = idle_client(7);
        let pool = BatchPool::default();
        let mut outbox = Outbox::with_direct_writes();
        let chunk = vec![b'y'; crate::writer::DIRECT_MAX];
        let mut sent = 0;
        // The peer reads nothing: the kernel's buffers fill up within a few MiB.
        while rung.try_recv().is_err() {
            assert!(sent < 256 << 20, "the socket never filled");
            outbox.batch_for(&client, &pool).push(&chunk);
            outbox.flush(&pool, None, 1);
            sent += chunk.len();
        }
        let left = client.pending_bytes();
        assert!(left > 0 && left <= chunk.len(), "{left} bytes left");
        outbox.batch_for(&client, &pool).push(&chunk);
        outbox.flush(&pool, None, 1);
        assert!(
            rung.try_recv().is_err(),
            "the writer holds the token: no second ring"
        );
        assert_eq!(client.pending_bytes(), left + chunk.len());
        let written = sent - left;
        assert_eq!(read_peer(&mut peer, written).len(), written);
    }

    /// Without a stall policy (a route reader's flush), queueing past the threshold never
    /// waits for the destination's writer; with one (a client reader's), it does.
    #[test]
    fn route_flushes_never_stall() {
        let (client, _peer, _rung) = idle_client(7);
        let policy = StallPolicy {
            threshold: 16,
            progress_window: Duration::from_secs(3600),
            wedged_after: Duration::ZERO,
            max_wait: Duration::from_secs(3600),
        };
        let pool = BatchPool::default();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let waiter = {
            let client = client.clone();
            std::thread::spawn(move || {
                let mut outbox = Outbox::new();
                outbox.batch_for(&client, &pool).push(&[b'x'; 1000]);
                outbox.flush(&pool, None, 1);
                let _ = done_tx.send(client.pending_bytes());
            })
        };
        let pending = done_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a flush without a stall policy returns at once");
        assert_eq!(pending, 1000, "queued, not written: no writer runs");
        waiter.join().unwrap();
        // The same with the client policy waits (here until its progress window ends).
        let short = StallPolicy {
            progress_window: Duration::from_millis(50),
            ..policy
        };
        let pool = BatchPool::default();
        let mut outbox = Outbox::new();
        outbox.batch_for(&client, &pool).push(&[b'y'; 1000]);
        let started = Instant::now();
        outbox.flush(&pool, Some(&short), 1);
        assert!(
            started.elapsed() >= short.progress_window,
            "a client producer stalls"
        );
    }
}
