//! The stall for a producer that must not block its thread: an async runner's (beaver-async
//! runs client readers as tokio tasks, and a condition-variable wait there would stop every
//! task on that worker). The rules are [`Outbound::stall`]'s; only the waiting differs: the
//! producer's waker joins the condition variable's waiters (the writer's `release_all`
//! wakes both), and the runner's own timer brings it back at the end of each progress
//! window and at the deadline.

use super::{Outbound, StallPolicy};
use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::Instant;

/// One producer's wait for one client's queue to drain; see the module docs. Made by
/// [`Outbound::stall_wait`], driven by [`StallWait::poll`]. Dropping it ends the wait.
pub struct StallWait<'a> {
    outbound: &'a Outbound,
    policy: StallPolicy,
    deadline: Instant,
    /// When the current progress window started; `None` until the first poll.
    window_start: Option<Instant>,
    /// Counted in the stall's `waiters` (from the first poll that waits until drop).
    counted: bool,
}

/// What a [`StallWait::poll`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallPoll {
    /// The wait is over: the queue is at or below the threshold, the client is closing or
    /// wedged, or the deadline has passed.
    Done,
    /// Still waiting: the waker is registered (the writer's progress wakes it); poll again
    /// when woken, or at this instant at the latest (the end of the progress window, or the
    /// deadline).
    Until(Instant),
}

impl Outbound {
    /// An async producer's [`Outbound::stall`]: the same wait, to be driven by
    /// [`StallWait::poll`] until it is [`StallPoll::Done`].
    pub fn stall_wait(&self, policy: &StallPolicy, deadline: Instant) -> StallWait<'_> {
        StallWait {
            outbound: self,
            policy: *policy,
            deadline,
            window_start: None,
            counted: false,
        }
    }
}

impl StallWait<'_> {
    /// Looks at the queue: done, or still waiting (with `waker` registered and the instant
    /// to poll again by). `give_up` says the client is closing.
    pub fn poll(&mut self, waker: &Waker, give_up: impl Fn() -> bool) -> StallPoll {
        let o = self.outbound;
        let now = Instant::now();
        let window_start = match self.window_start {
            Some(start) => start,
            None => {
                // The first look: as `Outbound::stall`, a client already wedged (or found
                // wedged now) is not waited for.
                if o.stuck.load(Ordering::Relaxed) {
                    return StallPoll::Done;
                }
                if o.wedged(&self.policy, now) {
                    o.stuck.store(true, Ordering::Relaxed);
                    return StallPoll::Done;
                }
                // The handshake of `Stall::wait`: count ourselves in `waiters`, then read
                // `pending` with a read-modify-write (below, under the lock).
                o.stall
                    .release_below
                    .store(self.policy.threshold, Ordering::Relaxed);
                o.stall.waiters.fetch_add(1, Ordering::AcqRel);
                self.counted = true;
                self.window_start = Some(now);
                now
            }
        };
        let mut wakers = o.stall.lock.lock();
        if o.pending.fetch_add(0, Ordering::AcqRel) <= self.policy.threshold
            || give_up()
            || o.stuck.load(Ordering::Relaxed)
            || now >= self.deadline
        {
            return StallPoll::Done;
        }
        let mut window_end = window_start + self.policy.progress_window;
        if now >= window_end {
            // A whole window and the queue still over the threshold: as `Outbound::stall`.
            o.start_clock(window_start);
            if o.wedged(&self.policy, now) {
                o.stuck.store(true, Ordering::Relaxed);
                return StallPoll::Done;
            }
            self.window_start = Some(now);
            window_end = now + self.policy.progress_window;
        }
        if !wakers.iter().any(|w| w.will_wake(waker)) {
            wakers.push(waker.clone());
        }
        StallPoll::Until(window_end.min(self.deadline))
    }
}

impl Drop for StallWait<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.outbound.stall.waiters.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
