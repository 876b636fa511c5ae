//! The synchronisation primitives of beaver's lock-free handoffs, in one place so that they
//! can be model-checked: from `std`, `parking_lot` and `crossbeam` normally, and from
//! [`loom`](https://docs.rs/loom) when the crate is built with `RUSTFLAGS="--cfg beaver_loom"`.
//! Under loom, the `loom_models` tests of `outbound`, `client::subscription` and
//! `jetstream::consumer::mailbox` explore
//! every interleaving (within loom's bounds) of:
//! - the scheduled-token handoff between producers and the writer (no lost wake-up, no
//!   batch written twice or never);
//! - the stall handshake between a stalled producer and the writer (a producer is always
//!   woken once the queue drains);
//! - the auto-unsubscribe claim (`UNSUB <sid> <max>` never overshot, always removed);
//! - a JetStream consumer's mailbox (`jetstream::consumer::mailbox`: what a reader posts
//!   always wakes the consumer's thread).
//!
//! Run them with (CI does, in `.ci/run`):
//!
//! ```text
//! RUSTFLAGS="--cfg beaver_loom" cargo test --release --lib --target-dir target/loom loom_models
//! ```
//!
//! Only what those handoffs use is here: the atomics, the stall's mutex and condition
//! variable (with `parking_lot`'s API), and the outbound queue (crossbeam's `SegQueue`; under
//! loom a locked `VecDeque`: the model checks our protocol around the queue, crossbeam's own
//! tests check the queue).

#[cfg(not(beaver_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

#[cfg(beaver_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

#[cfg(not(beaver_loom))]
pub(crate) use parking_lot::{Condvar, Mutex};

#[cfg(not(beaver_loom))]
pub(crate) type Queue<T> = crossbeam_queue::SegQueue<T>;

#[cfg(beaver_loom)]
pub(crate) use self::loom_impl::{Condvar, Mutex, Queue};

#[cfg(beaver_loom)]
mod loom_impl {
    use std::collections::VecDeque;
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    /// loom's mutex with `parking_lot`'s API (no poisoning to unwrap).
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Mutex(loom::sync::Mutex::new(T::default()))
        }
    }

    /// A guard of [`Mutex`]; the `Option` lets [`Condvar`] hand the inner guard to loom's
    /// `wait` and take it back.
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().expect("loom mutex")))
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("held")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("held")
        }
    }

    /// loom's condition variable with `parking_lot`'s API. loom has no time: a timed wait
    /// is an untimed one (it never reports a timeout), so the models check that every wait
    /// ends by a notification, the property that matters.
    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Default for Condvar {
        fn default() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
    }

    /// Whether a wait timed out (never, under loom).
    pub(crate) struct WaitTimeoutResult;

    impl WaitTimeoutResult {
        pub(crate) fn timed_out(&self) -> bool {
            false
        }
    }

    impl Condvar {
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> WaitTimeoutResult {
            let inner = guard.0.take().expect("held");
            guard.0 = Some(self.0.wait(inner).expect("loom condvar"));
            WaitTimeoutResult
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("held");
            guard.0 = Some(self.0.wait(inner).expect("loom condvar"));
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// The outbound queue under loom: a locked `VecDeque` with `SegQueue`'s API.
    #[derive(Debug)]
    pub(crate) struct Queue<T>(loom::sync::Mutex<VecDeque<T>>);

    impl<T> Default for Queue<T> {
        fn default() -> Self {
            Queue(loom::sync::Mutex::new(VecDeque::new()))
        }
    }

    impl<T> Queue<T> {
        pub(crate) fn push(&self, v: T) {
            self.0.lock().expect("loom queue").push_back(v);
        }
        pub(crate) fn pop(&self) -> Option<T> {
            self.0.lock().expect("loom queue").pop_front()
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().expect("loom queue").is_empty()
        }
    }
}
