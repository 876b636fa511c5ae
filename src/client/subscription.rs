//! A subscription: one `SUB` of one client.

use super::Client;
use crate::subjects::Subscriber;
use crate::sync::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One `SUB <subject> [queue] <sid>` of one client (client protocol doc, "SUB").
///
/// Lives in the subscription table and in its client's sid map. Publishers on any thread
/// count deliveries on it, which is what `UNSUB <sid> <max_msgs>` needs: nats-server counts
/// every delivered message, so a later `UNSUB 1 5` on a subscription that already got 5
/// messages unsubscribes at once.
pub struct Subscription {
    /// The subscriber.
    pub client: Arc<Client>,
    /// The account whose subscription table holds it (its client's account).
    pub account: Arc<crate::client::Account>,
    /// Subject, possibly with wildcards.
    pub subject: Box<[u8]>,
    /// Queue group name.
    pub queue: Option<Box<[u8]>>,
    /// Subscription id chosen by the client.
    pub sid: Box<[u8]>,
    /// Deliveries counted against the auto-unsubscribe limit.
    limit: DeliveryLimit,
    /// Set when unsubscribed; publishers holding a cached match skip it.
    closed: AtomicBool,
    /// For a wildcard subscription that covers subjects its user may not subscribe to
    /// (`SUB foo.>` with `deny = ["foo.secret"]`): messages on those subjects are not
    /// delivered to it (nats-server's delivery deny filter). Set once, at `SUB`.
    pub deny: Option<Arc<crate::auth::PermissionSet>>,
}

/// The outcome of counting one delivery against the auto-unsubscribe limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Deliver.
    Deliver,
    /// Deliver: this is the last message before the limit; then unsubscribe.
    DeliverLast,
    /// Over the limit: do not deliver; unsubscribe.
    Exhausted,
}

impl Subscription {
    /// A new subscription of `client`, in `account`'s table.
    pub fn new(
        client: Arc<Client>,
        account: Arc<crate::client::Account>,
        subject: &[u8],
        queue: Option<&[u8]>,
        sid: &[u8],
    ) -> Self {
        Subscription {
            client,
            account,
            subject: subject.into(),
            queue: queue.map(Into::into),
            sid: sid.into(),
            limit: DeliveryLimit::default(),
            closed: AtomicBool::new(false),
            deny: None,
        }
    }

    /// Adds a delivery deny filter (see the `deny` field).
    pub fn with_delivery_filter(mut self, deny: Option<Arc<crate::auth::PermissionSet>>) -> Self {
        self.deny = deny;
        self
    }

    /// Whether this subscription has been removed.
    #[inline]
    pub fn is_closed(&self) -> bool {
        // Relaxed: a publisher racing with the UNSUB may deliver one more message, as it
        // could have a moment earlier (the writer's queue order is what clients see).
        self.closed.load(Ordering::Relaxed)
    }

    /// Marks the subscription removed. Returns true for the first caller.
    pub fn close(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    /// Messages delivered so far.
    pub fn delivered(&self) -> u64 {
        self.limit.delivered()
    }

    /// The auto-unsubscribe limit (`UNSUB <sid> <max>`), 0 when there is none.
    pub fn max(&self) -> u64 {
        self.limit.max()
    }

    /// Messages delivered so far, as monitoring shows them (nats-server's `msgs`): the
    /// delivered count, which never passes the auto-unsubscribe limit. (`delivered` may
    /// briefly count a claim over the limit that was not delivered.)
    pub fn msgs(&self) -> u64 {
        let delivered = self.delivered();
        match self.max() {
            0 => delivered,
            max => delivered.min(max),
        }
    }

    /// Counts one delivery and checks the auto-unsubscribe limit (see `DeliveryLimit`).
    #[inline]
    pub fn claim(&self) -> Claim {
        self.limit.claim()
    }

    /// Applies `UNSUB <sid> <max>`; returns true if the subscription must be removed now
    /// (the limit is already reached), as nats-server's `processUnsub`.
    pub fn set_max(&self, max: u64) -> bool {
        self.limit.set_max(max)
    }
}

/// A subscription's delivery count and auto-unsubscribe limit (`UNSUB <sid> <max>`),
/// updated by every publisher delivering to it and by its reader.
///
/// A handshake between [`DeliveryLimit::claim`] (increment the count, then read the limit)
/// and [`DeliveryLimit::set_max`] (store the limit, then re-read the count): either a
/// delivery sees the limit, or `set_max` sees the delivery in its re-check. So no limit is
/// ever overshot, and the subscription is always removed once reached (possibly by both
/// sides; removal is idempotent). Both sides touch the count with a read-modify-write
/// (AcqRel): those are totally ordered, so either `set_max`'s re-read comes after the
/// increment (and sees it), or the increment comes after it and, reading from it, acquires
/// the limit stored before it. (A SeqCst store-then-load would be correct too, but `loom`,
/// which checks this in `loom_models` below, cannot verify SeqCst.)
#[derive(Debug, Default)]
pub struct DeliveryLimit {
    /// Messages delivered (claimed) so far.
    delivered: AtomicU64,
    /// Auto-unsubscribe limit (0: none).
    max: AtomicU64,
}

impl DeliveryLimit {
    /// Messages delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Acquire)
    }

    /// The limit, 0 when there is none.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Acquire)
    }

    /// Counts one delivery and checks the limit.
    #[inline]
    pub fn claim(&self) -> Claim {
        let n = self.delivered.fetch_add(1, Ordering::AcqRel) + 1;
        let max = self.max.load(Ordering::Acquire);
        if max == 0 || n < max {
            Claim::Deliver
        } else if n == max {
            Claim::DeliverLast
        } else {
            Claim::Exhausted
        }
    }

    /// Sets the limit; returns true if it is reached already (remove now).
    pub fn set_max(&self, max: u64) -> bool {
        if max == 0 || max <= self.delivered() {
            return true;
        }
        self.max.store(max, Ordering::Release);
        // The re-read is a read-modify-write: see the type's docs.
        self.delivered.fetch_add(0, Ordering::AcqRel) >= max
    }
}

#[cfg(all(test, beaver_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;

    /// Two publishers deliver twice each while the reader applies `UNSUB 1 2`. Unless the
    /// limit was reached already when it was set (the reader then removes the subscription
    /// itself, as nats-server does), at most two messages are delivered; and either way
    /// someone sees the limit reached, so the subscription is removed.
    #[test]
    fn auto_unsubscribe_is_never_overshot_and_always_removed() {
        loom::model(|| {
            let limit = Arc::new(DeliveryLimit::default());
            let publishers: Vec<_> = (0..2)
                .map(|_| {
                    let limit = limit.clone();
                    loom::thread::spawn(move || {
                        let mut delivered = 0;
                        let mut saw_last = false;
                        for _ in 0..2 {
                            match limit.claim() {
                                Claim::Deliver => delivered += 1,
                                Claim::DeliverLast => {
                                    delivered += 1;
                                    saw_last = true;
                                }
                                Claim::Exhausted => saw_last = true,
                            }
                        }
                        (delivered, saw_last)
                    })
                })
                .collect();
            let remove_now = limit.set_max(2);
            let mut delivered = 0;
            let mut someone_removes = remove_now;
            for p in publishers {
                let (d, last) = p.join().unwrap();
                delivered += d;
                someone_removes |= last;
            }
            if !remove_now {
                assert!(delivered <= 2, "delivered {delivered} with a limit of 2");
            }
            assert!(someone_removes, "four claims against a limit of 2: removed");
        });
    }
}

impl Subscriber for Subscription {
    fn subject(&self) -> &[u8] {
        &self.subject
    }

    fn queue(&self) -> Option<&[u8]> {
        self.queue.as_deref()
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("cid", &self.client.cid)
            .field("subject", &String::from_utf8_lossy(&self.subject))
            .field("queue", &self.queue.as_deref().map(String::from_utf8_lossy))
            .field("sid", &String::from_utf8_lossy(&self.sid))
            .finish()
    }
}
