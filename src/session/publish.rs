//! `PUB` and `HPUB` (client protocol doc, "PUB", "HPUB"): tracing and pedantic checks of the
//! control line, publish permissions, `verbose`'s `+OK`, then delivery ([`crate::delivery`],
//! where the path of a message continues) and, for a request nobody answered, the
//! no-responders status message.

use super::*;
use crate::delivery::{deliver_message, DeliveryContext, Message, Origin};
use crate::protocol::{PubLine, Publish};
use crate::subjects::is_valid_literal_subject;

impl Connection {
    /// A `PUB`/`HPUB` control line, as soon as it is parsed (its payload may still be on
    /// its way): traced, and checked in pedantic mode, when nats-server does both.
    pub(super) fn on_pub_line(&mut self, line: &PubLine<'_>) {
        if self.trace {
            let op = if line.headers { "HPUB" } else { "PUB" };
            log::trace!(
                "{} - <<- [{op} {}]",
                self.client.log_prefix(),
                String::from_utf8_lossy(line.args)
            );
        }
        if self.opts.pedantic && !is_valid_literal_subject(line.subject) {
            // nats-server complains but still delivers.
            self.send_traced(err::INVALID_PUBLISH_SUBJECT, "-ERR");
        }
    }

    pub(super) fn on_pub(
        &mut self,
        p: &Publish<'_>,
        chunk: &Bytes,
        start: usize,
    ) -> Result<(), Closing> {
        self.active = true;
        self.in_msgs += 1;
        self.in_bytes += p.payload.len() as u64;
        if let Some(perms) = &self.perms {
            // One cached lookup per message; nothing allocated once the subject is cached.
            if perms.restricts_publish()
                && !self.pub_cache.can_publish(perms, p.subject)
                && !(perms.response().is_some() && self.client.may_respond(p.subject))
            {
                self.pub_violation(p.subject);
                return Ok(());
            }
        }
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
        let mut msg = Message::new(p, chunk, start + p.payload_offset);
        let delivered = self.deliver(&mut msg);
        if !delivered && self.opts.no_responders {
            if let Some(reply) = p.reply {
                self.no_responders(reply);
            }
        }
        Ok(())
    }

    /// `-ERR 'Permissions Violation for Publish to "x"'` and nats-server's log line. The
    /// message is dropped; the connection stays open.
    pub(super) fn pub_violation(&mut self, subject: &[u8]) {
        let text = format!("Permissions Violation for Publish to {}", go_quote(subject));
        self.send_err_text(&text);
        log::error!(
            "{} - Publish Violation - User {}, Subject {}",
            self.client.log_prefix(),
            go_quote(self.user.as_bytes()),
            go_quote(subject)
        );
    }

    /// Delivers a message to every matching subscription, local or on a route; returns
    /// whether anyone got it.
    pub(super) fn deliver(&mut self, msg: &mut Message<'_, '_>) -> bool {
        let shared = &*self.shared;
        // The publisher's account: its table, and its name on routes. Subjects do not
        // cross accounts.
        let account = &self.account;
        let ctx = DeliveryContext {
            publisher: self.client.cid,
            echo: self.opts.echo,
            trace: self.trace,
            origin: Origin::Client {
                account: &account.name,
            },
        };
        deliver_message(
            shared,
            &account.sublist,
            &mut self.cache,
            &mut self.outbox,
            msg,
            &ctx,
        )
    }

    /// A request nobody can answer: tell the requester with a 503 status message, sent to
    /// the requester's own subscription on the reply subject (client protocol doc,
    /// "no_responders"; nats-server's exact bytes).
    pub(super) fn no_responders(&mut self, reply: &[u8]) {
        let shared = &*self.shared;
        let sublist = &self.account.sublist;
        let result = self.cache.get(sublist).matches(sublist, reply);
        let Some(sub) = result
            .plain
            .iter()
            .find(|s| s.client.cid == self.client.cid)
        else {
            return;
        };
        let batch = self.outbox.batch_for(&self.client, &shared.pool);
        let before = batch.len();
        let buf = batch.buf_mut();
        buf.extend_from_slice(b"HMSG ");
        buf.extend_from_slice(reply);
        buf.push(b' ');
        buf.extend_from_slice(&sub.sid);
        buf.extend_from_slice(b" 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
        let added = batch.len() - before;
        self.outbox.add_staged(added);
    }
}
