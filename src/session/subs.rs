//! `SUB` and `UNSUB` (client protocol doc, "SUB", "UNSUB"): permission checks, the
//! `max_subscriptions` limit, the subscription table, and the cluster's view of the
//! interest (announced through `Shared::interest_added` / `Shared::unsubscribe`).

use super::*;
use crate::subjects::SublistError;

impl Connection {
    pub(super) fn on_sub(&mut self, subject: &[u8], queue: Option<&[u8]>, sid: &[u8]) {
        self.active = true;
        let mut deny = None;
        if let Some(perms) = &self.perms {
            if !perms.can_subscribe(subject, queue) {
                self.sub_violation(subject, queue, sid);
                return;
            }
            deny = perms.delivery_filter(subject);
        }
        let limit = self.limits.max_subscriptions;
        let mut subs = self.client.subs.lock();
        // nats-server checks the limit before looking at the sid.
        if limit.is_some_and(|limit| subs.len() >= limit) {
            drop(subs);
            log::error!(
                "{} - maximum subscriptions exceeded",
                self.client.log_prefix()
            );
            self.send_traced(err::MAX_SUBSCRIPTIONS, "-ERR");
            return;
        }
        // A sid that is already in use: nats-server keeps the first subscription and still
        // answers +OK.
        if !subs.contains_key(sid) {
            let sub = Arc::new(
                Subscription::new(
                    self.client.clone(),
                    self.account.clone(),
                    subject,
                    queue,
                    sid,
                )
                .with_delivery_filter(deny),
            );
            // Lock order: the client's sid map, then the sublist's locks (documented in
            // docs/architecture.md); nothing else is held here.
            match self.account.sublist.insert(sub.clone()) {
                Ok(()) => {
                    subs.insert(sid.into(), sub.clone());
                    drop(subs);
                    // ROUTES: tell the cluster (after the client's sid map is released).
                    self.shared.interest_added(&sub);
                    if self.opts.verbose {
                        self.send_traced(protocol::OK, "OK");
                    }
                    return;
                }
                Err(SublistError::InvalidSubject) => {
                    drop(subs);
                    self.send_traced(err::INVALID_SUBJECT, "-ERR");
                    return;
                }
            }
        }
        drop(subs);
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
    }

    /// `-ERR 'Permissions Violation for Subscription to "x"'` (with ` using queue "q"` for a
    /// queue subscription), and nats-server's log line. The connection stays open.
    pub(super) fn sub_violation(&mut self, subject: &[u8], queue: Option<&[u8]>, sid: &[u8]) {
        let (err_text, log_text) = match queue {
            None => (
                format!(
                    "Permissions Violation for Subscription to {}",
                    go_quote(subject)
                ),
                format!(
                    "Subscription Violation - User {}, Subject {}, SID {}",
                    go_quote(self.user.as_bytes()),
                    go_quote(subject),
                    String::from_utf8_lossy(sid)
                ),
            ),
            Some(q) => (
                format!(
                    "Permissions Violation for Subscription to {} using queue {}",
                    go_quote(subject),
                    go_quote(q)
                ),
                format!(
                    "Subscription Violation - User {}, Subject {}, Queue: {}, SID {}",
                    go_quote(self.user.as_bytes()),
                    go_quote(subject),
                    go_quote(q),
                    String::from_utf8_lossy(sid)
                ),
            ),
        };
        self.send_err_text(&err_text);
        log::error!("{} - {log_text}", self.client.log_prefix());
    }

    /// After the permissions changed (a reload): see [`apply_permissions`], for this
    /// reader's user and permissions.
    pub(super) fn prune_subscriptions(&mut self) {
        apply_permissions(
            &self.shared,
            &self.client,
            self.perms.as_deref(),
            &self.user,
        );
    }

    pub(super) fn on_unsub(&mut self, sid: &[u8], max: Option<u64>) {
        self.active = true;
        let sub = self.client.subs.lock().get(sid).cloned();
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
        if let Some(sub) = sub {
            let now = match max {
                Some(max) if max > 0 => sub.set_max(max),
                _ => true,
            };
            if now {
                self.shared.unsubscribe(&sub);
            }
        }
    }
}

/// After a user's permissions changed (a reload), on any thread (the reload's, at once, then
/// the client's reader when it wakes; whichever comes first does the work): removes the
/// client's subscriptions `perms` no longer allow, queueing
/// `-ERR 'Permissions Violation for Subscription to "x" (sid "1")'` to the client and
/// logging a notice (nats-server's `processSubsOnConfigReload`), and gives each wildcard
/// subscription whose deny filter changed the new one, by replacing it under the same sid
/// (its auto-unsubscribe count carried over; the new one is in the table before the old one
/// leaves, so no message is missed, though one may arrive twice).
pub(crate) fn apply_permissions(
    shared: &crate::shared::Shared,
    client: &Arc<crate::client::Client>,
    perms: Option<&crate::auth::Permissions>,
    user: &str,
) {
    let subs: Vec<Arc<Subscription>> = client.subs.lock().values().cloned().collect();
    for sub in subs {
        if sub.is_closed() {
            continue;
        }
        let (subject, queue) = (&sub.subject, sub.queue.as_deref());
        if !perms.is_none_or(|p| p.can_subscribe(subject, queue)) {
            // `close` decides who removes it: the reload's thread or the reader.
            if !sub.close() {
                continue;
            }
            client.remove_sub_if(&sub.sid, &sub);
            sub.account.sublist.remove(&sub);
            shared.interest_removed(&[&sub]);
            let line = format!(
                "-ERR 'Permissions Violation for Subscription to {} (sid {})'\r\n",
                go_quote(subject),
                go_quote(&sub.sid)
            );
            let mut batch = shared.pool.take();
            batch.push(line.as_bytes());
            let _ = client.enqueue(batch, &shared.pool);
            log::info!(
                "Removed sub {} (sid {}) for User {} - not authorized",
                go_quote(subject),
                go_quote(&sub.sid),
                go_quote(user.as_bytes())
            );
            continue;
        }
        let deny = perms.and_then(|p| p.delivery_filter(subject));
        if deny.as_deref() == sub.deny.as_deref() {
            continue;
        }
        let renewed = Arc::new(
            Subscription::new(
                client.clone(),
                sub.account.clone(),
                subject,
                queue,
                &sub.sid,
            )
            .with_delivery_filter(deny),
        );
        let max = sub.max();
        if max > 0 && renewed.set_max(max.saturating_sub(sub.delivered())) {
            // Its limit was reached already: it goes with the old one.
            continue;
        }
        {
            // Lock order: the client's sid map, then the sublist's (as in `on_sub`). Only if
            // the old one is still the sid's (the other thread may have renewed it).
            let mut map = client.subs.lock();
            if !map.get(&sub.sid).is_some_and(|s| Arc::ptr_eq(s, &sub)) {
                continue;
            }
            if sub.account.sublist.insert(renewed.clone()).is_err() {
                continue;
            }
            map.insert(sub.sid.clone(), renewed.clone());
        }
        shared.interest_added(&renewed);
        if sub.close() {
            sub.account.sublist.remove(&sub);
            shared.interest_removed(&[&sub]);
        }
    }
}
