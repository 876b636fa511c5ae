//! The writer pool: a fixed set of threads that drain clients' outbound queues into their
//! sockets.
//!
//! ## How a client reaches a writer
//! A producer that queues a batch and takes the client's scheduled token sends the client
//! (an `Arc`) on one shared, bounded `crossbeam` channel: the ready queue. Any idle writer
//! takes it. Because the token is held until the queue is empty, a client is in the ready
//! queue at most once and is drained by one writer at a time, in order.
//!
//! A client's reader that took an idle plain-text client's token may first write a small
//! batch itself ([`Direct`], the publisher's shortcut); what it cannot write at once comes
//! here the same way.
//!
//! ## One flush
//! The writer pops batches, turns them into one iovec list (up to [`MAX_IOV`] slices and
//! [`WRITE_TARGET`] bytes: many `MSG`s per system call) and calls `write_vectored`. Written
//! batches go back to the batch pool. After [`FAIR_SHARE`] bytes, a client with more to write
//! goes to the back of the ready queue, so one busy subscriber cannot starve the others
//! (bounded batches for fairness).
//!
//! ## A socket that is full
//! A writer never waits for a socket ([`crate::socket::Socket::try_write_vectored`]): one
//! client that stops reading must not delay the others this writer serves. When a write
//! finds the socket full, the writer parks the client in its own retry list and moves on to
//! other clients; the client keeps its scheduled token meanwhile (so producers keep
//! queueing without waking anyone). A write that took part of what it was given means the
//! client reads, only slower than we write: it is retried after [`RETRY_MIN`]. A write that
//! took nothing marks the client *stuck* (producers stop waiting for it) and backs off
//! exponentially, [`RETRY_MIN`] to [`RETRY_MAX`]: a wedged socket costs its writer one
//! non-blocking system call per retry. A client that makes no progress for `write_deadline`
//! is closed as a slow consumer.

use crate::client::{Client, Ready};
use crate::close::CloseReason;
use crate::outbound::{BatchPool, Output, Token};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::io::{ErrorKind, IoSlice};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// First retry delay after a write found the socket full.
pub const RETRY_MIN: Duration = Duration::from_millis(1);
/// Longest retry delay.
pub const RETRY_MAX: Duration = Duration::from_millis(64);
/// Most iovec slices per `write_vectored` (Linux's `IOV_MAX`).
pub const MAX_IOV: usize = 1024;
/// Bytes of queued batches gathered for one write.
pub const WRITE_TARGET: usize = 256 * 1024;
/// Bytes written for one client before it yields to others.
pub const FAIR_SHARE: usize = 1024 * 1024;
/// Stack size of writer threads: writes need little stack.
pub const WRITER_STACK: usize = 256 * 1024;

/// A write found `client`'s socket full, short of the deadline: start its no-progress clock
/// (producers stop waiting for a client that stays blocked for the stall policy's
/// `wedged_after`) and return how long to wait before the next try, doubling the wait each
/// time, from [`RETRY_MIN`] to [`RETRY_MAX`].
fn blocked(client: &Client, st: &mut Output) -> Duration {
    client.outbound.write_blocked();
    let delay = st.retry_delay.max(RETRY_MIN);
    st.retry_delay = (delay * 2).min(RETRY_MAX);
    delay
}

/// Empties a vector and returns its allocation as a vector of another type with the same
/// size and alignment. `IoSlice<'a>` borrows the batches being written, so a writer cannot
/// keep a `Vec<IoSlice<'a>>` between writes; with this it keeps the allocation instead.
/// Safe code: the standard library collects an emptied `vec::IntoIter` into the same
/// allocation when the layouts match (and allocates, correctly, if they ever did not).
fn recycle<'a, 'b>(mut v: Vec<IoSlice<'a>>) -> Vec<IoSlice<'b>> {
    v.clear();
    v.into_iter()
        .map(|_| -> IoSlice<'b> { unreachable!("empty") })
        .collect()
}

/// One non-blocking `writev` of what `st` has in flight for a plain-text `client` (never
/// TLS or WebSocket, whose bytes are encoded first): the result and the bytes attempted, or
/// `None` if the socket was shut meanwhile. `iov` is the caller's iovec allocation, kept
/// between calls (empty between them).
fn write_plain(
    iov: &mut Vec<IoSlice<'static>>,
    client: &Client,
    st: &Output,
) -> Option<(std::io::Result<usize>, usize)> {
    let guard = client.socket.read();
    let socket = guard.as_ref()?;
    // The iovec list borrows the batches, so it cannot outlive this call; its allocation
    // can (see `recycle`).
    let mut list: Vec<IoSlice<'_>> = recycle(std::mem::take(iov));
    let attempted = st.fill_iovecs(&mut list, MAX_IOV);
    let result = socket.try_write_vectored(&list);
    *iov = recycle(list);
    Some((result, attempted))
}

/// Handle to the running pool.
pub struct WriterPool {
    threads: Vec<JoinHandle<()>>,
    ready: Sender<Ready>,
}

/// What one step of a flush came to (see [`Writer::flush`]).
enum Step {
    /// Look again: something changed (a close marker reached, the socket shut, an error
    /// closed the client, ciphertext produced).
    Again,
    /// The socket took this many bytes, all it was given, or (TLS, WebSocket) this many
    /// bytes of batches were encoded: count them against the fair share.
    Wrote(usize),
    /// Nothing left to write: give the token back.
    Idle,
    /// The socket is full: retry after this long, serving other clients meanwhile.
    Park(Duration),
}

/// The step after a write that took `written` of `attempted` bytes: a socket that took
/// part of what it was given is full, but its client reads, only slower than we write:
/// back soon ([`RETRY_MIN`]), serving others meanwhile.
fn sent(written: usize, attempted: usize) -> Step {
    if written < attempted {
        Step::Park(RETRY_MIN)
    } else {
        Step::Wrote(written)
    }
}

struct Retry {
    at: Instant,
    seq: u64,
    client: Arc<Client>,
    token: Token,
}

impl PartialEq for Retry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Retry {}
impl PartialOrd for Retry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Retry {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest retry first.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A writer's means to drain clients: its iovec allocation, the batch pool, the write
/// deadline and its WebSocket compressor. A pool writer thread has one; so does each
/// worker thread of an async runner (beaver-async), whose write tasks drain clients with
/// it between awaits. [`Drainer::drain`] is everything a writer does for one client short
/// of deciding what comes next.
pub struct Drainer {
    /// The iovec list's allocation, kept between writes (empty between them).
    iov: Vec<IoSlice<'static>>,
    pool: Arc<BatchPool>,
    /// `write_deadline` in nanoseconds, shared with the server so that a reload changes it.
    /// Relaxed: a setting read when a write is stuck, publishing nothing else.
    write_deadline: Arc<AtomicU64>,
    /// WebSocket compression's state (see `encoded`).
    deflate: encoded::Deflate,
}

/// Where a [`Drainer::drain`] stopped, and what its caller must do with the token.
pub enum Drained {
    /// The queue is empty (the token is given back) or the client is gone.
    Done,
    /// A fair share ([`FAIR_SHARE`]) was written and more is queued: let other clients have
    /// their turn, then drain again with this token.
    Yield(Token),
    /// The socket is full: drain again with this token once it has room, or after this
    /// long at the latest (the write deadline is checked on each try).
    Blocked(Token, Duration),
}

struct Writer {
    drainer: Drainer,
    ready: Receiver<Ready>,
    requeue: Sender<Ready>,
    retries: BinaryHeap<Retry>,
    seq: u64,
}

impl WriterPool {
    /// Starts `n` writer threads on the ready queue (`ready_tx` is its sending side, used to
    /// re-queue clients for fairness). With `compression` (a WebSocket listener that offers
    /// `permessage-deflate`), each writer gets a compressor, made here: its state is
    /// hundreds of KiB, more than a writer's stack may hold while it is built.
    pub fn start(
        n: usize,
        ready_tx: Sender<Ready>,
        ready_rx: Receiver<Ready>,
        pool: Arc<BatchPool>,
        write_deadline: Arc<AtomicU64>,
        compression: bool,
    ) -> std::io::Result<WriterPool> {
        let mut threads = Vec::with_capacity(n);
        for i in 0..n.max(1) {
            let mut w = Writer {
                drainer: Drainer {
                    iov: Vec::with_capacity(MAX_IOV),
                    pool: pool.clone(),
                    write_deadline: write_deadline.clone(),
                    deflate: encoded::Deflate::new(compression),
                },
                ready: ready_rx.clone(),
                requeue: ready_tx.clone(),
                retries: BinaryHeap::new(),
                seq: 0,
            };
            threads.push(
                std::thread::Builder::new()
                    .name(format!("beaver-writer-{i}"))
                    .stack_size(WRITER_STACK)
                    .spawn(move || w.run())?,
            );
        }
        Ok(WriterPool {
            threads,
            ready: ready_tx,
        })
    }

    /// Stops the writers (after the caller let them drain what it wanted drained) and waits
    /// for them to exit: one `Stop` per writer, behind whatever is already queued.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        for _ in 0..self.threads.len() {
            let _ = self.ready.send(Ready::Stop);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Dropping the pool stops it, so that a server whose start fails after the writers started
/// does not leave them behind. (Each writer holds a sender of the ready queue, to re-queue
/// clients, so the channel never disconnects by itself: they would wait forever.)
impl Drop for WriterPool {
    fn drop(&mut self) {
        self.stop_now();
    }
}

impl Writer {
    // Never inlined: see `session::Connection::run`.
    #[inline(never)]
    fn run(&mut self) {
        loop {
            let timeout = self
                .retries
                .peek()
                .map(|r| r.at.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_secs(3600));
            // One channel, no `select!`: a blocking select registers a heap-allocated waiter
            // each time, and writers go to sleep after nearly every write when traffic is
            // light (request/reply).
            match self.ready.recv_timeout(timeout) {
                Ok(Ready::Client(client, token)) => self.flush(client, token),
                Ok(Ready::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            while self.retries.peek().is_some_and(|r| r.at <= now) {
                if let Some(r) = self.retries.pop() {
                    self.flush(r.client, r.token);
                }
            }
        }
    }

    /// Writes as much of `client`'s queue as the socket takes; see the module docs. `token`
    /// is the client's scheduled token: this writer is the one draining it.
    fn flush(&mut self, client: Arc<Client>, mut token: Token) {
        loop {
            match self.drainer.drain(&client, token) {
                Drained::Done => return,
                // A fair share is out: other clients' turn (the drain has let go of the
                // output, so the writer that takes the client next never waits).
                Drained::Yield(kept) => match self.yield_turn(&client, kept) {
                    Some(kept) => token = kept,
                    None => return,
                },
                Drained::Blocked(kept, delay) => {
                    self.park(client, kept, delay);
                    return;
                }
            }
        }
    }

    /// After a fair share, sends `client` (with its token) to the back of the ready queue so
    /// that other clients get their turn. The caller has let go of the output first: the
    /// writer that receives the client may lock it at once. `try_send`: a writer never waits
    /// for room in the ready queue (only writers empty it); if it is full, the token comes
    /// back and the caller keeps writing.
    fn yield_turn(&self, client: &Arc<Client>, token: Token) -> Option<Token> {
        match self.requeue.try_send(Ready::Client(client.clone(), token)) {
            Ok(()) => None,
            Err(TrySendError::Full(Ready::Client(_, token)))
            | Err(TrySendError::Disconnected(Ready::Client(_, token))) => Some(token),
            // Not what was sent.
            Err(TrySendError::Full(Ready::Stop) | TrySendError::Disconnected(Ready::Stop)) => None,
        }
    }

    /// Puts a client whose socket is full in this writer's retry list; it keeps its
    /// scheduled token meanwhile (producers keep queueing without waking anyone).
    fn park(&mut self, client: Arc<Client>, token: Token, delay: Duration) {
        self.seq += 1;
        self.retries.push(Retry {
            at: Instant::now() + delay,
            seq: self.seq,
            client,
            token,
        });
    }
}

impl Drainer {
    /// A drainer for plain-text clients (no WebSocket compressor): an async runner's.
    /// `write_deadline` is the server's (see [`crate::shared::Shared::write_deadline`]).
    pub fn new(pool: Arc<BatchPool>, write_deadline: Arc<AtomicU64>) -> Drainer {
        Drainer {
            iov: Vec::with_capacity(MAX_IOV),
            pool,
            write_deadline,
            deflate: encoded::Deflate::new(false),
        }
    }

    /// Drains `client`'s queue, holding its scheduled `token`, until the queue is empty
    /// (the token is given back), a fair share is written, or the socket is full: see the
    /// module docs, and [`Drained`] for what the caller does next. Never waits for the
    /// socket.
    pub fn drain(&mut self, client: &Arc<Client>, mut token: Token) -> Drained {
        let mut st = client.output(&token);
        let mut budget = FAIR_SHARE;
        loop {
            if client.is_shut() {
                match self.shut(client, &mut st, token) {
                    Some(kept) => token = kept,
                    None => return Drained::Done,
                }
                continue;
            }
            // One branch for TLS and WebSocket; the plain-text step is unchanged by them.
            let step = if client.tls.is_some() || client.websocket.is_some() {
                self.step_encoded(client, &mut st)
            } else {
                self.step(client, &mut st)
            };
            match step {
                Step::Again => {}
                Step::Wrote(n) => {
                    budget = budget.saturating_sub(n);
                    if budget == 0 {
                        return Drained::Yield(token);
                    }
                }
                Step::Idle => {
                    // Nothing left: give the token back (or keep it if something just
                    // arrived).
                    match client.outbound.release(token) {
                        Some(kept) => token = kept,
                        None => return Drained::Done,
                    }
                }
                Step::Park(delay) => return Drained::Blocked(token, delay),
            }
        }
    }

    /// One plain-text step: gather batches and write what the socket takes now, never
    /// waiting for it (see `Socket`): this writer serves other clients, which must not wait
    /// for one that reads slowly.
    fn step(&mut self, client: &Client, st: &mut Output) -> Step {
        st.gather(&client.outbound, WRITE_TARGET);
        let Some(front) = st.front() else {
            return Step::Idle;
        };
        if front.is_close() {
            // Everything before the marker is written: graceful close done.
            client.shut_socket();
            return Step::Again;
        }
        let Some((result, attempted)) = write_plain(&mut self.iov, client, st) else {
            return Step::Again; // shut meanwhile: the next turn discards
        };
        let pending = client.pending_bytes();
        match self.took(client, st, result, attempted, pending) {
            Ok(written) => {
                st.advance(&client.outbound, written, &self.pool);
                sent(written, attempted)
            }
            Err(step) => step,
        }
    }

    /// What a write that was given `attempted` bytes came to: `Ok` with the bytes the socket
    /// took, for the caller to account (progress resets the retry delay); otherwise the step
    /// it ends: a full socket parks the client (or, past `write_deadline`, closes it as a
    /// slow consumer, with `pending` bytes logged), an error closes it.
    fn took(
        &self,
        client: &Client,
        st: &mut Output,
        result: std::io::Result<usize>,
        attempted: usize,
        pending: usize,
    ) -> Result<usize, Step> {
        match result {
            Ok(0) if attempted > 0 => {
                client.abort(CloseReason::WriteError);
                Err(Step::Again)
            }
            Ok(n) => {
                st.blocked_since = None;
                st.retry_delay = RETRY_MIN;
                Ok(n)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Err(Step::Again),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if self.past_write_deadline(client, st, pending) {
                    return Err(Step::Again);
                }
                Err(Step::Park(blocked(client, st)))
            }
            Err(e) => {
                if client.abort(CloseReason::WriteError) {
                    log::debug!("{} - Write error: {e}", client.log_prefix());
                }
                Err(Step::Again)
            }
        }
    }

    /// A write found `client`'s socket full. Whether it has been blocked, with no progress,
    /// for `write_deadline`: then it is closed as a slow consumer (logged once, with the
    /// `pending` bytes), and the caller's next turn discards its queue.
    fn past_write_deadline(&self, client: &Client, st: &mut Output, pending: usize) -> bool {
        let now = Instant::now();
        let since = *st.blocked_since.get_or_insert(now);
        // Relaxed: a setting, changed by a reload; any recent value will do.
        let deadline = Duration::from_nanos(self.write_deadline.load(Ordering::Relaxed));
        if now.duration_since(since) < deadline {
            return false;
        }
        if client.abort(CloseReason::SlowConsumerWriteDeadline) {
            log::warn!(
                "{} - Slow Consumer Detected: WriteDeadline of {:?} exceeded with {} bytes pending",
                client.log_prefix(),
                deadline,
                pending
            );
        }
        true
    }

    /// A client whose socket is shut: nothing more is written. What it had in flight goes;
    /// the rest of its queue is freed by whoever releases the connection (see
    /// [`Client::release`]): its reader if still there (this writer serves other clients
    /// and must not spend its time freeing megabytes of a slow consumer's queue), else this
    /// writer. Returns the token if the writer still holds it and must look again.
    fn shut(&self, client: &Client, st: &mut Output, token: Token) -> Option<Token> {
        st.discard(&client.outbound, &self.pool);
        if client.should_release() {
            client.release_locked(st, &self.pool);
            // Anything left is what producers pushed as the close was decided: a few batches.
            st.drain_queue(&client.outbound, &self.pool);
            return client.outbound.release(token);
        }
        client.outbound.abandon(token);
        None
    }
}

mod direct;
mod encoded;

pub use direct::{Direct, DIRECT_BUDGET, DIRECT_MAX};

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool that is dropped (say, by a `Server::start` that fails after starting it)
    /// stops its threads: their ends of the ready queue are gone afterwards.
    #[test]
    fn dropping_the_pool_stops_the_writers() {
        let (tx, rx) = crossbeam_channel::bounded::<Ready>(16);
        let pool = WriterPool::start(
            2,
            tx.clone(),
            rx,
            Arc::new(BatchPool::default()),
            Arc::new(AtomicU64::new(0)),
            false,
        )
        .unwrap();
        drop(pool);
        assert!(
            tx.send(Ready::Stop).is_err(),
            "no writer is left to receive"
        );
    }

    #[test]
    fn recycle_keeps_the_allocation() {
        let v: Vec<IoSlice<'static>> = Vec::with_capacity(MAX_IOV);
        let ptr = v.as_ptr() as usize;
        let data = vec![1u8; 4];
        let mut w: Vec<IoSlice<'_>> = recycle(v);
        w.push(IoSlice::new(&data));
        let back: Vec<IoSlice<'static>> = recycle(w);
        assert!(back.is_empty());
        assert!(back.capacity() >= MAX_IOV);
        assert_eq!(back.as_ptr() as usize, ptr, "same allocation");
    }
}
