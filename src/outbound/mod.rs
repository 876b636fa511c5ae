//! A client's outbound queue: lock-free, many producers, one writer at a time.
//!
//! Producers are reader threads (any client's, routing a publish; or the client's own, sending
//! `PONG`, `+OK`, `-ERR`). Each pushes whole [`Batch`]es onto a `crossbeam` `SegQueue` and adds
//! their size to an atomic `pending` byte count. The consumer is whichever writer thread holds
//! the client's **scheduled** token.
//!
//! ## The scheduled token (the doorbell)
//! `scheduled` is true from the moment a producer hands the client to the writer pool until a
//! writer finds the queue empty and gives the token back. Only the producer that flips it from
//! false to true rings the doorbell (sends the client to the pool), so a client is in the
//! writers' ready channel at most once, however many batches pile up, and at most one writer
//! drains a client at a time (so bytes go out in queue order without a lock).
//!
//! The race to avoid is a lost wake-up: a writer sees the queue empty and is about to give the
//! token back just as a producer pushes and sees the token still taken. Both sides use an
//! atomic read-modify-write (`swap`) on the token:
//! - producer: `push(batch)`, then `scheduled.swap(true, AcqRel)`;
//! - writer: `scheduled.swap(false, AcqRel)`, then checks the queue once more.
//!
//! The two swaps are ordered in the token's modification order. If the producer's comes
//! first, the writer's swap reads it (a swap always reads the latest value) and, by
//! Acquire/Release, also sees the push: its re-check finds the batch and it takes the token
//! back. If the writer's comes first, the producer's swap returns false and the producer rings
//! the doorbell itself. Either way the batch is written.
//!
//! The token is a value, [`Token`]: `push` returns it to the producer that took it, the
//! producer sends it with the client to the writer pool, and the writer gives it back with
//! [`Outbound::release`] or [`Outbound::abandon`], which consume it. Batches leave the queue
//! only through [`Output`], the writer's side, which the client hands out only to a holder of
//! the token (and, once, to whoever frees a departed connection): the compiler, not a
//! comment, keeps a second thread from draining the queue.

mod batch;
mod output;
mod stall_wait;

pub use batch::{Batch, BatchPool, MAX_POOLED_CAPACITY, POOL_BYTES, POOL_SIZE, SHARE_MIN};
pub use output::Output;
pub use stall_wait::{StallPoll, StallWait};

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Queue};
use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Proof that its holder took one client's scheduled token (see the module docs).
///
/// Only [`Outbound::push`] and [`Outbound::release`] make one, for the thread that flipped the
/// token to taken; it is neither `Clone` nor `Copy`, and [`Outbound::release`] and
/// [`Outbound::abandon`] consume it. So at most one value exists per queue, and whoever holds
/// it is the one thread that may drain the queue. In debug builds it remembers its queue and
/// [`Outbound::check`] asserts that it is used with that one.
#[must_use = "a token dropped without being given back leaves the client unscheduled for good"]
#[derive(Debug)]
pub struct Token {
    #[cfg(debug_assertions)]
    queue: usize,
}

/// One client's outbound queue. See the module docs.
///
/// A producer's push takes the scheduled token when it is free; whoever holds it drains
/// the queue (through an [`Output`]) and gives it back:
///
/// ```
/// use beaver::outbound::{Batch, BatchPool, Outbound, Output};
///
/// let queue = Outbound::new();
/// let mut batch = Batch::new();
/// batch.push(b"PONG\r\n");
/// let token = queue.push(batch).expect("the first push takes the token");
/// assert!(queue.push(Batch::new()).is_none(), "already scheduled: no second wake-up");
/// assert_eq!(queue.pending(), 6);
///
/// // The token's holder (a writer) takes what is queued and writes it.
/// let (mut output, pool) = (Output::default(), BatchPool::default());
/// output.gather(&queue, 256 * 1024);
/// let bytes: usize = output.batches().map(|b| b.len()).sum();
/// output.advance(&queue, bytes, &pool); // the socket took all of it
/// assert_eq!(queue.pending(), 0);
/// assert!(queue.release(token).is_none(), "empty: the token is free again");
/// ```
#[derive(Default)]
pub struct Outbound {
    /// A crossbeam `SegQueue` (see `crate::sync`).
    queue: Queue<Batch>,
    // The two counters every producer and the writer touch get a cache line each, apart from
    // the read-mostly fields of the client around them.
    pending: CachePadded<AtomicUsize>,
    scheduled: CachePadded<AtomicBool>,
    /// Bytes written (or discarded) so far: how stalled producers see progress.
    written_total: AtomicU64,
    /// When the client's writes stopped making progress, in nanoseconds after [`epoch`]
    /// plus one; 0 while they make progress. Started by its writer, when a write finds the
    /// socket full, or by a producer that waited a whole progress window; stopped once
    /// [`WEDGE_PROGRESS`] bytes have been written since it started, or the queue is empty.
    /// A slow client's clock keeps stopping; a wedged client's, or one that takes only a
    /// trickle, runs on.
    blocked_since: AtomicU64,
    /// `written_total` when the clock above started.
    blocked_mark: AtomicU64,
    /// Set once the clock above has run for [`StallPolicy::wedged_after`]: producers do not
    /// stall on a wedged client (it must not throttle its publishers for long; it becomes a
    /// slow consumer instead). Cleared by the next byte written; while the clock runs on, the
    /// next stall sets it again at once.
    stuck: AtomicBool,
    stall: Stall,
}

/// Bytes a client must take, after its no-progress clock started, to stop it: what counts
/// as progress. Less, and the client is wedged once the clock has run for
/// [`StallPolicy::wedged_after`], whatever it took meanwhile; otherwise a client reading a
/// byte now and then would keep its publishers waiting for good. 64 KiB per half second
/// (beaver's `wedged_after`) is 128 KiB/s: a reader slower than that is treated as wedged.
pub const WEDGE_PROGRESS: u64 = 64 * 1024;

/// The instant that [`Outbound`]'s clock counts from (the first time anyone asks).
fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// `at` on [`Outbound`]'s clock: nanoseconds after [`epoch`], plus one so that 0 means
/// "not blocked". Saturates after 584 years.
fn clock(at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(epoch()).as_nanos())
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

/// Backpressure on fast producers: when and how long a producer waits for a subscriber's
/// queue to drain (nats-server's "stalled" producers, with progress-based bounds).
#[derive(Debug, Clone, Copy)]
pub struct StallPolicy {
    /// Pending bytes above which producers wait.
    pub threshold: usize,
    /// How often a waiting producer checks that the writer still makes progress.
    pub progress_window: Duration,
    /// A client that took less than [`WEDGE_PROGRESS`] bytes in this long, with its queue
    /// never empty, is *wedged*: producers stop waiting for it (until it makes progress
    /// again), so that it costs its publishers this
    /// long once, and it is left to `max_pending` and `write_deadline`. Shorter pauses,
    /// such as a CPU-starved client's, keep its publishers waiting, which is what bounds
    /// memory under slow subscribers.
    pub wedged_after: Duration,
    /// Longest a producer waits per flush, whatever the progress.
    pub max_wait: Duration,
}

impl Outbound {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The token of this queue, for the caller that has just flipped it to taken.
    #[inline]
    fn token(&self) -> Token {
        Token {
            #[cfg(debug_assertions)]
            queue: self as *const Outbound as usize,
        }
    }

    /// Asserts (in debug builds) that `token` is this queue's.
    #[inline]
    pub fn check(&self, token: &Token) {
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            token.queue, self as *const Outbound as usize,
            "another queue's token"
        );
        let _ = token;
    }

    /// Queues a batch. Returns the scheduled token if the caller took it: it must then hand
    /// the client, with the token, to the writer pool.
    #[inline]
    #[must_use = "the token, if taken, must go to the writer pool with the client"]
    pub fn push(&self, batch: Batch) -> Option<Token> {
        // Count before pushing, so the writer (which subtracts after popping) never sees the
        // count go below zero. Relaxed: `pending` is a statistic and a limit, it does not
        // publish data; the queue itself synchronises the batch's contents.
        self.pending.fetch_add(batch.len(), Ordering::Relaxed);
        self.queue.push(batch);
        (!self.scheduled.swap(true, Ordering::AcqRel)).then(|| self.token())
    }

    /// Bytes queued and not yet accepted by the socket.
    #[inline]
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// The next batch, if any: for [`Output`], whose holder has the token.
    #[inline]
    fn pop(&self) -> Option<Batch> {
        self.queue.pop()
    }

    /// Writer side: `n` bytes were written (or discarded).
    #[inline]
    fn written(&self, n: usize) {
        // AcqRel: this decrement and the read-modify-write of `waiters` in `maybe_release`
        // are the writer's half of the stall handshake (see `Stall::wait`). Once per write
        // call, not per message.
        let left = self.pending.fetch_sub(n, Ordering::AcqRel) - n;
        // Relaxed: progress is a heuristic for stalled producers, who re-check `pending`
        // under the stall lock anyway.
        let total = self.written_total.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        // Relaxed, load before store: the clock and the flag are heuristics too (a race
        // with a clock being started costs one wrong guess, corrected by the next write or
        // window), and most writes find them clear, so they do not dirty the cache line.
        // An empty queue stops it too: a client that took everything is not wedged, and a
        // clock left running would deny it backpressure at its next burst.
        if self.blocked_since.load(Ordering::Relaxed) != 0
            && (left == 0
                || total.wrapping_sub(self.blocked_mark.load(Ordering::Relaxed)) >= WEDGE_PROGRESS)
        {
            self.blocked_since.store(0, Ordering::Relaxed);
        }
        if n > 0 && self.stuck.load(Ordering::Relaxed) {
            self.stuck.store(false, Ordering::Relaxed);
        }
        self.stall.maybe_release(left);
    }

    /// Writer side: gives the token back. Returns it again if batches arrived meanwhile
    /// *and* the caller took it back: the caller must keep draining.
    #[must_use = "a token taken back means the queue must be drained again"]
    pub fn release(&self, token: Token) -> Option<Token> {
        self.check(&token);
        self.scheduled.swap(false, Ordering::AcqRel);
        // See the module docs: this re-check cannot miss a push whose producer saw `true`.
        (!self.queue.is_empty() && !self.scheduled.swap(true, Ordering::AcqRel))
            .then(|| self.token())
    }

    /// Writer side, for a client whose socket is shut and whose queue someone else frees
    /// (`Client::release`): gives the token back without looking at the queue again. A
    /// producer that pushes later takes the token and rings, and the writer that gets it
    /// finds the socket shut again; nothing is lost that anyone would write.
    pub fn abandon(&self, token: Token) {
        self.check(&token);
        self.scheduled.store(false, Ordering::Release);
    }

    /// Producer side: waits while more than `policy.threshold` bytes are pending, at most
    /// until `deadline`, or until `give_up()` (the client is closing), or until the client
    /// is wedged: it took less than [`WEDGE_PROGRESS`] bytes in `policy.wedged_after` (then
    /// it is marked wedged and later calls return at once until it makes progress). Returns the time spent waiting.
    pub fn stall(
        &self,
        policy: &StallPolicy,
        deadline: Instant,
        give_up: impl Fn() -> bool,
    ) -> Duration {
        if self.stuck.load(Ordering::Relaxed) {
            return Duration::ZERO;
        }
        if self.wedged(policy, Instant::now()) {
            self.stuck.store(true, Ordering::Relaxed);
            return Duration::ZERO;
        }
        let start = Instant::now();
        let wedged = self.stall.wait(
            &self.pending,
            policy.threshold,
            policy.progress_window,
            deadline,
            |window_start| {
                // A whole window and the queue still over the threshold: the clock starts
                // then, if no one (the writer, another producer) started it earlier.
                self.start_clock(window_start);
                self.wedged(policy, Instant::now())
            },
            || give_up() || self.stuck.load(Ordering::Relaxed),
        );
        if wedged {
            self.stuck.store(true, Ordering::Relaxed);
        }
        start.elapsed()
    }

    /// Whether the client's no-progress clock has run for `policy.wedged_after` at `now`.
    fn wedged(&self, policy: &StallPolicy, now: Instant) -> bool {
        let since = self.blocked_since.load(Ordering::Relaxed);
        since != 0
            && clock(now).saturating_sub(since)
                >= u64::try_from(policy.wedged_after.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Writer side: a write to this client found its socket full. Starts the client's
    /// no-progress clock unless it runs already; [`WEDGE_PROGRESS`] bytes written, or an
    /// empty queue, stop it. Starting it here, not only when a producer waits, means that
    /// many wedged clients found at once are all wedged after one `wedged_after`, not one
    /// after the other.
    pub fn write_blocked(&self) {
        if self.blocked_since.load(Ordering::Relaxed) == 0 {
            self.start_clock(Instant::now());
        }
    }

    /// Starts the no-progress clock at `at` unless it runs already.
    fn start_clock(&self, at: Instant) {
        // The mark first, so that a writer that sees the clock running rarely measures
        // from an old mark. Relaxed: a heuristic (see `written`); if another thread's start
        // wins the race, the mark is a little later than its clock, which asks a little
        // more progress of the client, once.
        self.blocked_mark.store(
            self.written_total.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        let _ =
            self.blocked_since
                .compare_exchange(0, clock(at), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Wakes every stalled producer (used when the client closes).
    pub fn wake_stalled(&self) {
        self.stall.release_all();
    }

    /// Whether any batch is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Producers waiting for a client's queue to drain (backpressure).
///
/// A condition variable needs a mutex; here it guards nothing but the wait itself, and is
/// touched only when a producer actually stalls (the writer checks the atomic `waiters` count
/// first, so it takes the lock only when someone waits).
#[derive(Default)]
struct Stall {
    waiters: AtomicUsize,
    /// The level under which waiters are released: the threshold the last waiter asked for
    /// (all producers use the server's one stall policy).
    release_below: AtomicUsize,
    /// Guards the wait itself, and holds the wakers of async waiters ([`StallWait`]), which
    /// are woken with the condition variable's waiters.
    lock: Mutex<Vec<std::task::Waker>>,
    cv: Condvar,
}

impl Stall {
    /// Waits as described in [`Outbound::stall`]. After each window that ends with the
    /// queue still over `threshold`, asks `wedged` (passing the window's start), and stops
    /// if it says so. Returns true if it stopped that way.
    fn wait(
        &self,
        pending: &AtomicUsize,
        threshold: usize,
        window: Duration,
        deadline: Instant,
        wedged: impl Fn(Instant) -> bool,
        give_up: impl Fn() -> bool,
    ) -> bool {
        // The handshake: we increment `waiters`, then read `pending`; the writer decrements
        // `pending` (`Outbound::written`), then reads `waiters`. Each side *reads the other's
        // variable with a read-modify-write* (`fetch_add(0)`), AcqRel, rather than with a load:
        // read-modify-writes of one variable are totally ordered whatever their ordering, so
        // either our read of `pending` comes after the writer's decrement (we see it and do
        // not wait), or the decrement comes after our read and, reading from it, acquires our
        // earlier increment of `waiters`, which its read of `waiters` then sees (it
        // notifies, under the lock, so after we wait). A plain SeqCst store-then-load
        // (Dekker) pattern would also be correct, but `loom`, which checks this
        // (`loom_models` below), models SeqCst as AcqRel and cannot verify it.
        self.release_below.store(threshold, Ordering::Relaxed);
        self.waiters.fetch_add(1, Ordering::AcqRel);
        let mut stuck = false;
        {
            let mut guard = self.lock.lock();
            // After the first read, the others happen under the lock, after a notify that
            // the writer sends under it too, so they see its decrements.
            while pending.fetch_add(0, Ordering::AcqRel) > threshold && !give_up() {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                let window_end = (now + window).min(deadline);
                // `give_up` is checked here too: a close notifies the waiters *because* they
                // should stop waiting; going back to sleep until the window's end would cost
                // a publisher one window per closing subscriber.
                while pending.load(Ordering::Acquire) > threshold
                    && !give_up()
                    && !self.cv.wait_until(&mut guard, window_end).timed_out()
                {}
                if pending.load(Ordering::Acquire) > threshold && wedged(now) {
                    stuck = true;
                    break;
                }
            }
        }
        self.waiters.fetch_sub(1, Ordering::AcqRel);
        stuck
    }

    /// The writer's half of the handshake (see `wait`): after decrementing `pending` to
    /// `pending`, wake the waiters if any and the queue is low enough. Relaxed for
    /// `release_below`: the read-modify-write of `waiters` that finds a waiter acquires the
    /// increment that the waiter made after storing it.
    #[inline]
    fn maybe_release(&self, pending: usize) {
        if self.waiters.fetch_add(0, Ordering::AcqRel) > 0
            && pending <= self.release_below.load(Ordering::Relaxed)
        {
            self.release_all();
        }
    }

    fn release_all(&self) {
        // Taking the lock orders this notify after a waiter's check-then-wait.
        let mut wakers = self.lock.lock();
        self.cv.notify_all();
        if wakers.is_empty() {
            return;
        }
        let wakers = std::mem::take(&mut *wakers);
        // (The lock is still held: a waker only schedules its task, which then locks again
        // to look.)
        for w in wakers {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, beaver_loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicBool as LoomBool;
    use loom::sync::Arc;

    fn batch(n: usize) -> Batch {
        let mut b = Batch::new();
        b.push(&vec![b'x'; n]);
        b
    }

    /// Drains as the writer holding the token does: pop until empty, give the token back,
    /// and go on if `release` took it back. Asserts no other drainer runs meanwhile.
    fn drain(q: &Outbound, mut token: Token, draining: &LoomBool) -> usize {
        assert!(
            !draining.swap(true, Ordering::SeqCst),
            "two drainers at once"
        );
        let mut bytes = 0;
        loop {
            while let Some(b) = q.pop() {
                bytes += b.len();
                q.written(b.len());
            }
            draining.store(false, Ordering::SeqCst);
            match q.release(token) {
                Some(kept) => token = kept,
                None => return bytes,
            }
            assert!(
                !draining.swap(true, Ordering::SeqCst),
                "two drainers at once"
            );
        }
    }

    /// Two producers push while the token moves between them: whoever takes the token
    /// drains (as the writer it would wake). Every batch is drained once, by one drainer at a
    /// time, and the token ends free with the queue empty: no lost wake-up.
    #[test]
    fn the_scheduled_token_loses_no_wake_up() {
        loom::model(|| {
            let q = Arc::new(Outbound::new());
            let draining = Arc::new(LoomBool::new(false));
            let producers: Vec<_> = [1usize, 2]
                .into_iter()
                .map(|n| {
                    let (q, draining) = (q.clone(), draining.clone());
                    loom::thread::spawn(move || match q.push(batch(n)) {
                        Some(token) => drain(&q, token, &draining),
                        None => 0,
                    })
                })
                .collect();
            let drained: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();
            assert_eq!(drained, 3, "every batch drained once");
            assert!(q.is_empty());
            assert_eq!(q.pending(), 0);
            assert!(q.push(batch(1)).is_some(), "the token is free at the end");
        });
    }

    /// The publisher's shortcut (`writer::direct`): a producer whose push took the token
    /// writes part of the queue itself, then hands the token to the writer pool (a channel
    /// here) while another producer pushes. Every batch is drained once, by one drainer at a
    /// time, and the token ends free: handing it over loses no wake-up either.
    #[test]
    fn a_direct_write_then_the_pool_loses_no_wake_up() {
        loom::model(|| {
            let q = Arc::new(Outbound::new());
            let draining = Arc::new(LoomBool::new(false));
            // The ready queue; `None` stops the writer once every sender is done.
            let (pool, ready) = loom::sync::mpsc::channel::<Option<Token>>();
            let writer = {
                let (q, draining) = (q.clone(), draining.clone());
                loom::thread::spawn(move || {
                    let mut drained = 0;
                    while let Ok(Some(token)) = ready.recv() {
                        drained += drain(&q, token, &draining);
                    }
                    drained
                })
            };
            let other = {
                let (q, pool) = (q.clone(), pool.clone());
                loom::thread::spawn(move || {
                    if let Some(token) = q.push(batch(2)) {
                        pool.send(Some(token)).unwrap();
                    }
                })
            };
            let mut direct = 0;
            if let Some(token) = q.push(batch(1)) {
                assert!(
                    !draining.swap(true, Ordering::SeqCst),
                    "two drainers at once"
                );
                if let Some(b) = q.pop() {
                    direct += b.len();
                    q.written(b.len());
                }
                draining.store(false, Ordering::SeqCst);
                // Whatever the direct write left (or what came meanwhile) is the pool's.
                if let Some(token) = q.release(token) {
                    pool.send(Some(token)).unwrap();
                }
            }
            other.join().unwrap();
            pool.send(None).unwrap();
            let drained = direct + writer.join().unwrap();
            assert_eq!(drained, 3, "every batch drained once");
            assert!(q.is_empty());
            assert_eq!(q.pending(), 0);
            assert!(q.push(batch(1)).is_some(), "the token is free at the end");
        });
    }

    fn policy() -> StallPolicy {
        StallPolicy {
            threshold: 0,
            progress_window: Duration::from_secs(3600),
            wedged_after: Duration::from_secs(3600),
            max_wait: Duration::from_secs(3600),
        }
    }

    /// A producer stalls on a queue while the writer drains it: the producer is always woken
    /// (the store-then-load handshake of `waiters` and `pending`), never left waiting.
    #[test]
    fn a_stalled_producer_is_woken_when_the_queue_drains() {
        loom::model(|| {
            let q = Arc::new(Outbound::new());
            let _token = q.push(batch(10));
            let writer = {
                let q = q.clone();
                loom::thread::spawn(move || {
                    if let Some(b) = q.pop() {
                        q.written(b.len());
                    }
                })
            };
            q.stall(
                &policy(),
                Instant::now() + Duration::from_secs(3600),
                || false,
            );
            writer.join().unwrap();
            assert_eq!(q.pending(), 0);
        });
    }

    /// An async producer's stall ([`StallWait`]): the writer's progress wakes its waker
    /// (the same handshake of `waiters` and `pending`, with the waker registered under the
    /// stall lock), so a task that sleeps until woken is never left asleep.
    #[test]
    fn an_async_stalled_producer_is_woken_when_the_queue_drains() {
        // The task's waker: loom's park/unpark (a task that is never woken is a deadlock,
        // which loom reports).
        struct Woken(loom::sync::Notify);
        impl std::task::Wake for Woken {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.notify();
            }
        }
        loom::model(|| {
            let q = Arc::new(Outbound::new());
            let _token = q.push(batch(10));
            let writer = {
                let q = q.clone();
                loom::thread::spawn(move || {
                    if let Some(b) = q.pop() {
                        q.written(b.len());
                    }
                })
            };
            let woken = std::sync::Arc::new(Woken(loom::sync::Notify::new()));
            let waker = std::task::Waker::from(woken.clone());
            let mut wait = q.stall_wait(&policy(), Instant::now() + Duration::from_secs(3600));
            while let StallPoll::Until(_) = wait.poll(&waker, || false) {
                // A task sleeps here until woken: the writer must wake it.
                woken.0.wait();
            }
            drop(wait);
            writer.join().unwrap();
            assert_eq!(q.pending(), 0);
        });
    }

    /// A producer stalls on a client that closes instead of draining:
    /// it stops waiting once told to give up.
    #[test]
    fn a_stalled_producer_gives_up_when_the_client_closes() {
        loom::model(|| {
            let q = Arc::new(Outbound::new());
            let _token = q.push(batch(10));
            let closing = Arc::new(LoomBool::new(false));
            let closer = {
                let (q, closing) = (q.clone(), closing.clone());
                loom::thread::spawn(move || {
                    closing.store(true, Ordering::SeqCst);
                    q.wake_stalled();
                })
            };
            let give_up = || closing.load(Ordering::SeqCst);
            q.stall(
                &policy(),
                Instant::now() + Duration::from_secs(3600),
                give_up,
            );
            closer.join().unwrap();
        });
    }
}
