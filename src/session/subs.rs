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
        if limit > 0 && subs.len() >= limit {
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
