//! A consumer thread's mailbox: a lock-free queue of what readers hand it (acks, pull
//! requests, flow control answers) and a doorbell (a flag under a mutex, and a condition
//! variable) that wakes the thread for those and for new messages in its stream.
//!
//! The handoff: a sender pushes, then rings; the thread, each time its wait returns, clears
//! the flag and only then drains the queue. A ring that comes after the drain leaves the flag
//! set, so the next wait returns at once: nothing pushed is left waiting for a timeout. The
//! `loom_models` test below checks it under every interleaving (within loom's bounds; run
//! with `RUSTFLAGS="--cfg beaver_loom"`, see `crate::sync`).

use crate::sync::{Condvar, Mutex, Queue};
use std::time::Instant;

/// See the module docs.
pub struct Mailbox<T> {
    queue: Queue<T>,
    rung: Mutex<bool>,
    cv: Condvar,
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Mailbox {
            queue: Queue::default(),
            rung: Mutex::default(),
            cv: Condvar::default(),
        }
    }
}

impl<T> Mailbox<T> {
    /// Queues `m` and wakes the thread.
    pub fn post(&self, m: T) {
        self.queue.push(m);
        self.ring();
    }

    /// Wakes the thread (at once if it waits, else its next wait returns at once). A leaf
    /// lock: publishes ring with their stream locked.
    pub fn ring(&self) {
        let mut rung = self.rung.lock();
        if !*rung {
            *rung = true;
            self.cv.notify_all();
        }
    }

    /// Waits until rung or `until`, then clears the flag. The caller drains after this.
    pub fn wait(&self, until: Option<Instant>) {
        let mut rung = self.rung.lock();
        if !*rung {
            match until {
                Some(t) => {
                    self.cv.wait_until(&mut rung, t);
                }
                None => self.cv.wait(&mut rung),
            }
        }
        *rung = false;
    }

    /// The next queued message.
    pub fn take(&self) -> Option<T> {
        self.queue.pop()
    }
}

#[cfg(all(test, beaver_loom))]
mod loom_models {
    use super::*;
    use std::sync::Arc;

    /// Two readers post while the thread drains and waits: every message is taken, and the
    /// thread's last wait ends (no lost wake-up; an untimed wait under loom).
    #[test]
    fn nothing_posted_waits_for_a_timeout() {
        loom::model(|| {
            let mb: Arc<Mailbox<u32>> = Arc::new(Mailbox::default());
            let senders: Vec<_> = (0..2)
                .map(|i| {
                    let mb = mb.clone();
                    loom::thread::spawn(move || mb.post(i))
                })
                .collect();
            let mut got = 0;
            while got < 2 {
                mb.wait(None);
                while mb.take().is_some() {
                    got += 1;
                }
            }
            for s in senders {
                s.join().unwrap();
            }
            assert_eq!(got, 2);
        });
    }
}
