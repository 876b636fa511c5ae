//! A consumer's thread (nats-server's `loopAndGatherMsgs`, `checkPending`,
//! `processWaiting`): it wakes on its doorbell (a message stored, an ack, a pull request)
//! or at its next deadline (an ack wait ending, a pull request expiring, a heartbeat due),
//! picks what to send under the consumer's lock, and sends it after releasing it, through
//! `crate::delivery` like any publish, with its own match cache and outbox. Its flush does
//! not stall on a slow subscriber (as a route's reader does not): one consumer serves many
//! pull clients, and one that does not read must not hold up the others. What bounds the
//! output is the consumer's own `max_ack_pending`, flow control, the pull requests' sizes,
//! and, past those, the subscriber's `max_pending` (a slow consumer is cut, as by
//! nats-server).
//!
//! What is sent, as nats-server 2.9.10 writes it:
//! - a delivery: the stored subject, headers and body, routed to the deliver subject (push)
//!   or the request's inbox (pull), with the reply subject
//!   `$JS.ACK.<stream>.<consumer>.<deliveries>.<stream seq>.<consumer seq>.<time ns>.<pending>`;
//! - `NATS/1.0 100 Idle Heartbeat` with `Nats-Last-Consumer`, `Nats-Last-Stream` (and
//!   `Nats-Consumer-Stalled` while a flow control request is unanswered);
//! - `NATS/1.0 100 FlowControl Request` with the reply subject `$JS.FC.<stream>.<consumer>.<id>`;
//! - to pull requests: `404 No Messages`, `408 Request Timeout` (with
//!   `Nats-Pending-Messages`, `Nats-Pending-Bytes`), `409 Message Size Exceeds MaxBytes`,
//!   `409 Consumer Deleted`.

use super::{Consumer, ConsumerState, Pending};
use crate::client::Subscription;
use crate::delivery::{deliver_internal, InternalMsg, Outbox};
use crate::shared::Shared;
use crate::store::{Store, StoredMsg};
use crate::subjects::MatchCache;
use bytes::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Deliveries picked under the lock at most, before they are sent.
const BATCH_MSGS: usize = 256;
/// Bytes picked under the lock at most, before they are sent.
const BATCH_BYTES: usize = 1 << 20;
/// How often a durable's changed state is snapshot (its journal says what happened in
/// between; see `persist`).
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// One message a consumer sends.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// Routed to the subscribers of this subject.
    pub deliver: Bytes,
    /// Shown with this subject.
    pub subject: Bytes,
    /// Its reply subject (the ack subject of a delivery).
    pub reply: Option<Bytes>,
    /// Its header block.
    pub headers: Bytes,
    /// Its body.
    pub data: Bytes,
    /// Not sent before (`replay_policy: original`, `rate_limit_bps`).
    pub not_before: Option<Instant>,
}

impl Outgoing {
    /// A status message (`NATS/1.0 <code> <text>` plus `extra` headers) to `to`.
    pub fn status(to: &Bytes, code: u16, text: &str, extra: &[(&str, String)]) -> Outgoing {
        let mut h = format!("NATS/1.0 {code} {text}\r\n");
        for (k, v) in extra {
            h.push_str(k);
            h.push_str(": ");
            h.push_str(v);
            h.push_str("\r\n");
        }
        h.push_str("\r\n");
        Outgoing {
            deliver: to.clone(),
            subject: to.clone(),
            reply: None,
            headers: Bytes::from(h),
            data: Bytes::new(),
            not_before: None,
        }
    }

    /// A plain message (advisories).
    pub fn plain(subject: String, data: Vec<u8>) -> Outgoing {
        let s = Bytes::from(subject);
        Outgoing {
            deliver: s.clone(),
            subject: s,
            reply: None,
            headers: Bytes::new(),
            data: Bytes::from(data),
            not_before: None,
        }
    }
}

/// What the thread does between two waits.
struct Round {
    /// Sent after the lock is released.
    send: Vec<Outgoing>,
    /// Stream sequences now acknowledged (by acks, or by delivery with `ack_policy: none`
    /// on interest and work-queue streams), for the stream to remove.
    acked: Vec<u64>,
    /// Answers to acks that asked for one: sent once a durable's journal has them.
    ack_replies: Vec<Outgoing>,
    /// Journal records of the round (durables), written before anything is sent.
    journal: Vec<super::persist::Entry>,
    /// When to wake up at the latest.
    deadline: Option<Instant>,
    /// No interest for longer than its threshold: the consumer deletes itself.
    expired: bool,
}

/// The thread's body; returns when the consumer is stopped or its stream is gone.
pub(super) fn run(c: Arc<Consumer>) {
    let Some(shared) = c.js.upgrade().and_then(|a| a.shared.upgrade()) else {
        return;
    };
    let mut cache: MatchCache<Subscription> = MatchCache::new(64);
    let mut outbox = Outbox::new();
    let mut last_save = Instant::now();
    let mut journal = c.dir.as_deref().map(super::persist::Journal::new);
    loop {
        let Some(stream) = c.stream() else { break };
        let closed;
        let round = {
            let mut st = c.state.lock();
            closed = st.closed;
            if closed {
                st.release_waiting();
                Round {
                    send: std::mem::take(&mut st.outgoing),
                    acked: Vec::new(),
                    ack_replies: Vec::new(),
                    journal: std::mem::take(&mut st.journal),
                    deadline: None,
                    expired: false,
                }
            } else {
                st.round(&c, &stream, &mut cache)
            }
        };
        let busy = round.send.iter().any(|o| o.reply.is_some()) || !round.ack_replies.is_empty();
        if let Some(j) = &mut journal {
            // Recorded before anything goes out: deliveries and acks are in the journal
            // (the operating system's hands) before the messages and ack answers leave.
            if let Err(e) = j.append(&round.journal) {
                log::error!(
                    "JetStream: consumer '{} > {}': could not write its journal: {e}",
                    c.stream_name,
                    c.name
                );
            }
        }
        // Interest and work-queue streams drop what the acks released before the acks are
        // answered, as nats-server's `processAckMsg` does: a client that waited for its
        // ack's answer (`double_ack`) and then asks the stream finds the message gone.
        if !round.acked.is_empty() {
            stream.acked(&round.acked);
        }
        let mut out = round.ack_replies;
        out.extend(round.send);
        send(&shared, &c, &mut cache, &mut outbox, out);
        if closed {
            break;
        }
        if round.expired {
            if let Some(acc) = c.js.upgrade() {
                log::debug!(
                    "JetStream: consumer '{} > {}' inactive: deleted",
                    c.stream_name,
                    c.name
                );
                acc.delete_consumer(&c.stream_name, &c.name);
            }
            continue;
        }
        let journal_full = journal
            .as_ref()
            .is_some_and(|j| j.len >= super::persist::JOURNAL_MAX);
        if c.dir.is_some() && (last_save.elapsed() >= SAVE_EVERY || journal_full) {
            last_save = Instant::now();
            c.save_state();
            if let Some(j) = &mut journal {
                j.len = 0;
            }
        }
        if !busy {
            let mut deadline = round.deadline;
            if c.dir.is_some() && c.state.lock().dirty {
                let save = last_save + SAVE_EVERY;
                deadline = Some(deadline.map_or(save, |d| d.min(save)));
            }
            c.bell.wait(deadline);
        }
    }
}

/// Sends `msgs` in order (waiting for each one's `not_before`), then flushes.
fn send(
    shared: &Shared,
    c: &Consumer,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
    msgs: Vec<Outgoing>,
) {
    if msgs.is_empty() {
        return;
    }
    for m in &msgs {
        if let Some(t) = m.not_before {
            outbox.flush(&shared.pool, None, 0);
            // Paced: wait on the doorbell, so that a stop does not wait for the pace (a
            // ring in between only ends the wait early: the next round looks again).
            while Instant::now() < t {
                if c.state.lock().closed {
                    return;
                }
                c.bell.wait(Some(t));
            }
        }
        deliver_internal(
            shared,
            cache,
            outbox,
            &InternalMsg {
                account: &c.account,
                deliver: &m.deliver,
                subject: &m.subject,
                reply: m.reply.as_deref(),
                headers: &m.headers,
                data: &m.data,
            },
        );
        if outbox.staged() >= crate::delivery::FLUSH_STAGED {
            outbox.flush(&shared.pool, None, 0);
        }
    }
    outbox.flush(&shared.pool, None, 0);
}

/// Whether anyone subscribes to `subject` in `c`'s account.
pub(super) fn has_interest(
    c: &Consumer,
    cache: &mut MatchCache<Subscription>,
    subject: &[u8],
) -> bool {
    let sublist = &c.account.sublist;
    !cache.get(sublist).matches(sublist, subject).is_empty()
}

/// The next message for a consumer.
enum Next {
    /// A message and how many times it will have been delivered.
    Msg(StoredMsg, u64),
    /// `max_ack_pending` reached.
    Stalled,
    /// Nothing now.
    None,
}

impl ConsumerState {
    /// One round of the thread, under the consumer's lock (the stream's taken inside).
    fn round(
        &mut self,
        c: &Consumer,
        stream: &super::Stream,
        cache: &mut MatchCache<Subscription>,
    ) -> Round {
        let now = Instant::now();
        let push = self.config.is_push();
        let mut handled = super::ack::Handled::default();
        let mut send = Vec::new();
        let first_seq;
        let mut eos = false;
        {
            let sst = stream.lock();
            let store = sst.store.as_ref();
            // What readers posted since the last round, in order.
            while let Some(m) = c.bell.take() {
                self.inbound(c, m, store, &mut handled);
            }
            let state = store.state();
            first_seq = state.first_seq;
            if self.next_check.is_some_and(|t| now >= t) {
                self.check_pending(first_seq, now);
            }
            if push {
                let interest = if self.config.deliver_group.is_empty() {
                    has_interest(c, cache, self.config.deliver_subject.as_bytes())
                } else {
                    // With a deliver group, only members of that queue group count.
                    let sublist = &c.account.sublist;
                    let group = self.config.deliver_group.as_bytes();
                    cache
                        .get(sublist)
                        .matches(sublist, self.config.deliver_subject.as_bytes())
                        .groups
                        .iter()
                        .any(|g| &*g.name == group)
                };
                self.active = interest;
                if interest {
                    self.last_activity = now;
                }
            } else {
                self.expire_waiting(now, false, Some((c, &mut *cache)));
            }
            // Counted once a message is picked (a round woken by acks alone counts nothing),
            // then kept by subtraction.
            let mut npc: Option<u64> = None;
            let mut bytes = 0;
            // A push consumer's deliver subject, made once per round (a reference count per
            // delivery, not an allocation).
            let push_to = push.then(|| Bytes::from(self.config.deliver_subject.clone()));
            let interest_or_wq = sst.config.retention != super::super::config::Retention::Limits;
            while send.len() < BATCH_MSGS && bytes < BATCH_BYTES {
                if push {
                    if !self.active || self.fc.as_ref().is_some_and(|f| f.bytes > f.window) {
                        break;
                    }
                } else if self.waiting.is_empty() {
                    break;
                }
                let (m, dc) = match self.next_msg(c, store) {
                    Next::Msg(m, dc) => (m, dc),
                    Next::Stalled => break,
                    Next::None => {
                        eos = true;
                        break;
                    }
                };
                // Counted after the pick moved the next sequence: what is left after it.
                let left = npc.get_or_insert_with(|| self.num_pending(store) + u64::from(dc == 1));
                if dc == 1 {
                    *left = left.saturating_sub(1);
                }
                let npc = *left;
                let now_ns = super::now();
                let reply = format!(
                    "$JS.ACK.{}.{}.{dc}.{}.{}.{}.{npc}",
                    c.stream_name, c.name, m.seq, self.dseq, m.ts
                );
                let (headers, data) = if self.config.headers_only {
                    let size = m.data.len().to_string();
                    let h = super::super::headers::with_headers(
                        &m.headers,
                        &[("Nats-Msg-Size", size.as_str())],
                    );
                    (Bytes::from(h), Bytes::new())
                } else {
                    (m.headers.clone(), m.data.clone())
                };
                let size = (m.subject.len() + reply.len() + headers.len() + data.len()) as i64;
                let target = if let Some(to) = &push_to {
                    to.clone()
                } else {
                    match self.next_waiting(size, &mut send) {
                        Some(reply) => reply,
                        None => {
                            self.undo(m.seq, dc);
                            break;
                        }
                    }
                };
                let not_before = self.pace(&m, size, now);
                let dseq = self.dseq;
                self.dseq += 1;
                self.track(m.seq, dseq, dc, now_ns);
                if self.config.ack_policy == super::AckPolicy::None && interest_or_wq {
                    handled.acked.push(m.seq);
                }
                bytes += size as usize;
                send.push(Outgoing {
                    deliver: target.clone(),
                    subject: m.subject.clone(),
                    reply: Some(Bytes::from(reply)),
                    headers,
                    data,
                    not_before,
                });
                if let Some(fc) = &mut self.fc {
                    let psz = target.len() as i64 + size - m.subject.len() as i64;
                    fc.bytes += psz;
                    if fc.id.is_none() && fc.bytes > fc.window / 2 {
                        let id = format!("$JS.FC.{}.{}.{}", c.stream_name, c.name, fc_token());
                        fc.covered = fc.bytes;
                        fc.id = Some(id.clone());
                        let mut fcm = Outgoing::status(&target, 100, "FlowControl Request", &[]);
                        fcm.reply = Some(Bytes::from(id));
                        send.push(fcm);
                    } else if fc.id.is_some() && fc.bytes - fc.covered >= fc.window {
                        fc.covered += psz;
                    }
                }
                if not_before.is_some() {
                    // Paced: one at a time, so that the lock is not held while waiting.
                    break;
                }
            }
        }
        if !push && eos {
            self.expire_waiting(now, true, None);
        }
        let delivered = !send.is_empty();
        // Idle heartbeats of push consumers.
        if push && self.config.idle_heartbeat > 0 {
            let every = Duration::from_nanos(self.config.idle_heartbeat as u64);
            if delivered || self.next_hb.is_none() {
                self.next_hb = Some(now + every);
            } else if self.next_hb.is_some_and(|t| now >= t) {
                if self.active {
                    let to = Bytes::from(self.config.deliver_subject.clone());
                    let hb = self.heartbeat(&to);
                    send.push(hb);
                }
                self.next_hb = Some(now + every);
            }
        }
        send.append(&mut self.outgoing);
        // Inactivity.
        let mut expired = false;
        let mut deadline = self.next_check;
        let mut soonest = |t: Option<Instant>| {
            if let Some(t) = t {
                deadline = Some(deadline.map_or(t, |d: Instant| d.min(t)));
            }
        };
        soonest(self.next_hb);
        for w in &self.waiting {
            soonest(w.expires);
            soonest(w.hb.map(|(_, t)| t));
        }
        if push && !self.active {
            // Interest is not announced to consumers: look again shortly, very shortly
            // just after it went (a client creates its consumer, then subscribes).
            let idle = now.saturating_duration_since(self.last_activity);
            let poll = if idle < Duration::from_secs(2) { 2 } else { 50 };
            soonest(Some(now + Duration::from_millis(poll)));
        }
        if let Some(threshold) = self.threshold {
            let idle = if push {
                !self.active
            } else {
                self.waiting.is_empty()
            };
            if idle {
                let due = self.last_activity + threshold;
                if now >= due {
                    expired = true;
                } else {
                    soonest(Some(due));
                }
            }
        }
        if !push && delivered {
            self.last_activity = now;
        }
        Round {
            send,
            acked: handled.acked,
            ack_replies: handled.ack_replies,
            journal: std::mem::take(&mut self.journal),
            deadline,
            expired,
        }
    }

    /// The next message: redeliveries first, then the skip list of `last_per_subject`, then
    /// the stream from `sseq` (nats-server's `getNextMsg`).
    fn next_msg(&mut self, c: &Consumer, store: &dyn Store) -> Next {
        while let Some(seq) = self.rdq.pop_front() {
            self.rdqi.remove(&seq);
            let count = self.rdc.entry(seq).or_insert(0);
            *count += 1;
            let dc = *count + 1;
            let max = self.config.max_deliver;
            if max > 0 && dc > max as u64 {
                if dc == max as u64 + 1 {
                    let adv = super::ack::max_deliveries_advisory(c, seq, dc - 1);
                    self.outgoing.push(adv);
                }
                self.pending.remove(&seq);
                continue;
            }
            match store.load(seq) {
                Ok(m) => return Next::Msg(m, dc),
                Err(_) => {
                    self.pending.remove(&seq);
                    self.rdc.remove(&seq);
                }
            }
        }
        if self.config.acks()
            && self.config.max_ack_pending > 0
            && self.pending.len() >= self.config.max_ack_pending as usize
        {
            return Next::Stalled;
        }
        let mut seq = self.sseq;
        if let Some(skip) = &mut self.skip {
            match skip.seqs.pop_front() {
                Some(s) => {
                    seq = s;
                    if skip.seqs.is_empty() {
                        self.sseq = skip.resume;
                        self.skip = None;
                    }
                }
                None => self.skip = None,
            }
        }
        let filter = (!self.config.filter_subject.is_empty())
            .then(|| self.config.filter_subject.as_bytes().to_vec());
        match store.load_next(filter.as_deref(), seq) {
            Ok(m) => {
                if m.seq >= self.sseq {
                    self.sseq = m.seq + 1;
                }
                Next::Msg(m, 1)
            }
            Err(_) => {
                let last = store.state().last_seq;
                if last + 1 > self.sseq {
                    self.sseq = last + 1;
                }
                Next::None
            }
        }
    }

    /// A message picked but not sent (no request could take it): picked again next time.
    fn undo(&mut self, seq: u64, dc: u64) {
        if dc == 1 {
            self.sseq = self.sseq.min(seq);
        } else {
            if let Some(n) = self.rdc.get_mut(&seq) {
                *n = n.saturating_sub(1);
            }
            if self.rdqi.insert(seq) {
                self.rdq.push_front(seq);
            }
        }
    }

    /// When a delivery may go: `replay_policy: original` keeps the stored gaps,
    /// `rate_limit_bps` spaces deliveries by their size.
    fn pace(&mut self, m: &StoredMsg, size: i64, now: Instant) -> Option<Instant> {
        let mut at: Option<Instant> = None;
        if let Some((last, lts)) = self.replay {
            if lts > 0 && m.ts > lts {
                let gap = Duration::from_nanos((m.ts - lts) as u64);
                if gap > Duration::from_millis(1) {
                    at = Some(now + gap);
                }
            }
            self.replay = (m.seq < last).then_some((last, m.ts));
        }
        if self.config.rate_limit_bps > 0 {
            let secs = (size as f64 * 8.0) / self.config.rate_limit_bps as f64;
            let start = self.rate_next.map_or(now, |t| t.max(now));
            self.rate_next = Some(start + Duration::from_secs_f64(secs.min(3600.0)));
            if start > now {
                at = Some(at.map_or(start, |a| a.max(start)));
            }
        }
        at
    }

    /// Records a delivery: pending for its ack, or acknowledged already (`ack_policy:
    /// none`).
    fn track(&mut self, seq: u64, dseq: u64, dc: u64, now_ns: i64) {
        if self.journaled {
            self.journal
                .push(super::persist::Entry::Delivered(seq, dseq, dc, now_ns));
        }
        if self.config.acks() {
            self.pending
                .entry(seq)
                .and_modify(|p| p.ts = now_ns)
                .or_insert(Pending { dseq, ts: now_ns });
            if self.next_check.is_none() {
                self.next_check =
                    Some(Instant::now() + self.ack_wait(0) + Duration::from_millis(1));
            }
        } else {
            self.adflr = dseq;
            self.asflr = seq;
        }
        self.last_delivered = now_ns;
        self.dirty = true;
    }

    /// The wait before delivery `redeliveries + 1` of a message is redelivered: `backoff`'s
    /// entry for it (its last one beyond), else `ack_wait`.
    fn ack_wait(&self, redeliveries: u64) -> Duration {
        let b = &self.config.backoff;
        let ns = if b.is_empty() {
            self.config.ack_wait
        } else {
            b[(redeliveries as usize).min(b.len() - 1)]
        };
        Duration::from_nanos(ns.max(1) as u64)
    }

    /// Queues for redelivery what waited longer than its ack wait (nats-server's
    /// `checkPending`), and drops what the stream no longer has.
    fn check_pending(&mut self, first_seq: u64, now: Instant) {
        let now_ns = super::now();
        let mut next = self.ack_wait(u64::MAX);
        let mut expired = Vec::new();
        let gone: Vec<u64> = self.pending.range(..first_seq).map(|(&s, _)| s).collect();
        for s in gone {
            self.pending.remove(&s);
            self.rdc.remove(&s);
            self.unqueue_redelivery(s);
            self.dirty = true;
        }
        for (&seq, p) in &self.pending {
            let wait = self.ack_wait(self.rdc.get(&seq).copied().unwrap_or(0));
            let elapsed = Duration::from_nanos(now_ns.saturating_sub(p.ts).max(0) as u64);
            if elapsed >= wait {
                if !self.rdqi.contains(&seq) {
                    expired.push(seq);
                }
            } else {
                next = next.min(wait - elapsed);
            }
        }
        for seq in expired {
            self.queue_redelivery(seq);
        }
        self.next_check = (!self.pending.is_empty()).then(|| now + next + Duration::from_millis(1));
    }

    /// An idle heartbeat to `to`.
    pub(super) fn heartbeat(&self, to: &Bytes) -> Outgoing {
        let mut extra = vec![
            ("Nats-Last-Consumer", (self.dseq - 1).to_string()),
            ("Nats-Last-Stream", self.sseq.saturating_sub(1).to_string()),
        ];
        if let Some(id) = self.fc.as_ref().and_then(|f| f.id.clone()) {
            extra.push(("Nats-Consumer-Stalled", id));
        }
        Outgoing::status(to, 100, "Idle Heartbeat", &extra)
    }
}

/// The four characters ending a flow control subject.
fn fc_token() -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..4)
        .map(|_| DIGITS[fastrand::usize(..DIGITS.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_messages_as_nats_server_writes_them() {
        let to = Bytes::from_static(b"inbox");
        let m = Outgoing::status(
            &to,
            408,
            "Request Timeout",
            &[
                ("Nats-Pending-Messages", "2".into()),
                ("Nats-Pending-Bytes", "0".into()),
            ],
        );
        assert_eq!(
            &m.headers[..],
            b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 0\r\n\r\n"
        );
    }
}
