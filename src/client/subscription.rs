//! A subscription: one `SUB` of one client.

use super::Client;
use crate::subjects::Subscriber;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    pub account: Arc<crate::account::Account>,
    /// Subject, possibly with wildcards.
    pub subject: Box<[u8]>,
    /// Queue group name.
    pub queue: Option<Box<[u8]>>,
    /// Subscription id chosen by the client.
    pub sid: Box<[u8]>,
    /// Messages delivered so far.
    delivered: AtomicU64,
    /// Auto-unsubscribe limit (0: none).
    max: AtomicU64,
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
        account: Arc<crate::account::Account>,
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
            delivered: AtomicU64::new(0),
            max: AtomicU64::new(0),
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
        self.delivered.load(Ordering::SeqCst)
    }

    /// The auto-unsubscribe limit (`UNSUB <sid> <max>`), 0 when there is none.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::SeqCst)
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

    /// Counts one delivery and checks the auto-unsubscribe limit.
    ///
    /// SeqCst on the counter and the limit (here and in [`Self::set_max`]) makes this the
    /// store-then-load handshake: either this delivery sees the limit, or `set_max` sees this
    /// delivery in its re-check. So no limit is ever overshot, and the subscription is always
    /// removed once reached (possibly by both sides; removal is idempotent).
    #[inline]
    pub fn claim(&self) -> Claim {
        let n = self.delivered.fetch_add(1, Ordering::SeqCst) + 1;
        let max = self.max.load(Ordering::SeqCst);
        if max == 0 || n < max {
            Claim::Deliver
        } else if n == max {
            Claim::DeliverLast
        } else {
            Claim::Exhausted
        }
    }

    /// Applies `UNSUB <sid> <max>`; returns true if the subscription must be removed now
    /// (the limit is already reached), as nats-server's `processUnsub`.
    pub fn set_max(&self, max: u64) -> bool {
        if max == 0 || max <= self.delivered() {
            return true;
        }
        self.max.store(max, Ordering::SeqCst);
        self.delivered() >= max
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
