//! Acknowledgements (nats-server's `processAck` and what it calls): a message published to a
//! delivery's reply subject, `$JS.ACK.<stream>.<consumer>.<deliveries>.<stream seq>.
//! <consumer seq>.<time>.<pending>`, with one of these bodies (JetStream doc,
//! "Consumer Acknowledgements"):
//!
//! | body | effect |
//! |------|--------|
//! | empty, `+ACK`, `+OK` | acknowledged (with `ack_policy: all`, everything before it too) |
//! | `-NAK`, `-NAK <duration>`, `-NAK {"delay":ns}` | delivered again, at once or after the delay |
//! | `+WPI` | still in progress: its ack wait starts again |
//! | `+NXT`, `+NXT <pull request>` | acknowledged, and a pull request for more |
//! | `+TERM` | never delivered again |
//!
//! An ack with a reply subject gets an empty message there once it is recorded ("AckAck",
//! what `AckSync`/`double_ack` wait for); a durable's state is written first.
//!
//! The reader that receives an ack only queues it ([`Inbound`], nats-server's `ackMsgs`
//! queue): the consumer's thread records it at the start of its next round, under its lock,
//! so acks never wait for a round in progress. Interest and work-queue streams then drop
//! what no consumer waits for any more ([`super::super::stream::Stream::acked`]).

use super::deliver::Outgoing;
use super::{AckPolicy, Consumer, ConsumerState};
use crate::client::{ServiceMsg, ServiceReply};
use crate::jetstream::json::{go_time, now_nanos, to_go_json};
use crate::jetstream::JsAccount;
use bytes::Bytes;
use std::time::{Duration, Instant};

/// The sequences an ack subject carries: (stream seq, consumer seq, deliveries); zeros when
/// the subject is not a 9-token ack subject (nats-server's `ackReplyInfo`).
pub fn ack_reply_info(subject: &[u8]) -> (u64, u64, u64) {
    let tokens: Vec<&[u8]> = subject.split(|&b| b == b'.').collect();
    if tokens.len() != 9 || tokens[0] != b"$JS" || tokens[1] != b"ACK" {
        return (0, 0, 0);
    }
    let num = |t: &[u8]| -> u64 {
        std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    (num(tokens[5]), num(tokens[6]), num(tokens[4]))
}

/// Handles a message on a consumer's ack subscription (`$JS.ACK.<stream>.<consumer>.>`):
/// queued for the consumer's thread, which records it and answers (the acker's reader
/// takes no consumer lock: acks arrive while the thread delivers).
pub fn handle(acc: &JsAccount, msg: &ServiceMsg<'_>, _replies: &mut Vec<ServiceReply>) {
    let tokens: Vec<&[u8]> = msg.subject.splitn(5, |&b| b == b'.').collect();
    if tokens.len() < 5 {
        return;
    }
    let (Ok(stream), Ok(name)) = (
        std::str::from_utf8(tokens[2]),
        std::str::from_utf8(tokens[3]),
    ) else {
        return;
    };
    let Some(c) = acc.consumer(stream, name) else {
        return;
    };
    let (sseq, dseq, dc) = ack_reply_info(msg.subject);
    c.post(Inbound::Ack {
        sseq,
        dseq,
        dc,
        body: Bytes::copy_from_slice(msg.data),
        reply: msg.reply.map(Bytes::copy_from_slice),
    });
}

/// Handles a flow control answer on `$JS.FC.<stream>.<consumer>.<id>`.
pub fn flow_control(acc: &JsAccount, subject: &[u8]) {
    let tokens: Vec<&[u8]> = subject.split(|&b| b == b'.').collect();
    if tokens.len() != 5 {
        return;
    }
    let (Ok(stream), Ok(name)) = (
        std::str::from_utf8(tokens[2]),
        std::str::from_utf8(tokens[3]),
    ) else {
        return;
    };
    if let Some(c) = acc.consumer(stream, name) {
        c.post(Inbound::FlowControl(Bytes::copy_from_slice(subject)));
    }
}

/// What readers hand a consumer's thread (through [`Consumer::post`]).
#[derive(Debug)]
pub enum Inbound {
    /// An ack: the sequences of its subject, its body and reply.
    Ack {
        /// Stream sequence (0: not an ack subject).
        sseq: u64,
        /// Consumer sequence of the delivery acked.
        dseq: u64,
        /// Deliveries so far.
        dc: u64,
        /// `+ACK`, `-NAK`, ...
        body: Bytes,
        /// Answered once recorded, if given.
        reply: Option<Bytes>,
    },
    /// A pull request (`CONSUMER.MSG.NEXT`): its inbox and body.
    Next {
        /// Where the messages go.
        reply: Bytes,
        /// The request (empty, a number, or JSON).
        body: Bytes,
    },
    /// A flow control answer, by its subject.
    FlowControl(Bytes),
}

/// What handling the inbound messages of a round leaves to do once the locks are released.
#[derive(Default)]
pub(super) struct Handled {
    /// Stream sequences acknowledged (interest and work-queue retention).
    pub(super) acked: Vec<u64>,
    /// Answers to acks that asked for one (sent after a durable's state is written).
    pub(super) ack_replies: Vec<Outgoing>,
}

impl ConsumerState {
    /// Handles one inbound message under the consumer's (and its stream's) lock.
    pub(super) fn inbound(
        &mut self,
        c: &Consumer,
        m: Inbound,
        store: &dyn crate::store::Store,
        done: &mut Handled,
    ) {
        match m {
            Inbound::Ack {
                sseq,
                dseq,
                dc,
                body,
                reply,
            } => {
                let mut skip_reply = sseq == 0;
                let body = &body[..];
                if body.is_empty() || body == b"+ACK" || body == b"+OK" {
                    done.acked.extend(self.ack(sseq, dseq));
                } else if let Some(rest) = body.strip_prefix(b"+NXT") {
                    done.acked.extend(self.ack(sseq, dseq));
                    skip_reply = true;
                    if let Some(reply) = &reply {
                        if let Some(now) = self.pull_request(reply, rest, store) {
                            self.outgoing.push(now);
                        }
                    }
                } else if let Some(arg) = body.strip_prefix(b"-NAK") {
                    self.nak(c, sseq, dseq, dc, arg);
                } else if body == b"+WPI" {
                    if let Some(p) = self.pending.get_mut(&sseq) {
                        p.ts = now_nanos();
                        self.dirty = true;
                    }
                } else if body == b"+TERM" {
                    done.acked.extend(self.ack(sseq, dseq));
                    self.outgoing.push(terminated_advisory(c, sseq, dseq, dc));
                }
                if let (Some(reply), false) = (reply, skip_reply) {
                    done.ack_replies.push(Outgoing::plain(
                        String::from_utf8_lossy(&reply).into_owned(),
                        Vec::new(),
                    ));
                }
            }
            Inbound::Next { reply, body } => {
                if let Some(now) = self.pull_request(&reply, &body, store) {
                    self.outgoing.push(now);
                }
            }
            Inbound::FlowControl(subject) => {
                let Some(fc) = self.fc.as_mut() else { return };
                if fc.id.as_deref().map(str::as_bytes) != Some(&subject[..]) {
                    return;
                }
                if fc.window < fc.limit {
                    fc.window = (fc.window * 2).min(fc.limit);
                }
                fc.bytes = (fc.bytes - fc.covered).max(0);
                fc.id = None;
                fc.covered = 0;
            }
        }
    }
    /// An ack of stream sequence `sseq` delivered as `dseq` (nats-server's `processAckMsg`).
    /// Returns the stream sequences it acknowledged.
    pub(super) fn ack(&mut self, sseq: u64, dseq: u64) -> Vec<u64> {
        let mut acked = Vec::new();
        if self.journaled && sseq > 0 && self.config.acks() {
            self.journal.push(super::persist::Entry::Acked(sseq, dseq));
        }
        match self.config.ack_policy {
            AckPolicy::Explicit => {
                let mut dseq = dseq;
                if let Some(p) = self.pending.remove(&sseq) {
                    // The first delivery's sequence counts for the floor.
                    dseq = p.dseq;
                    acked.push(sseq);
                }
                if self.pending.is_empty() {
                    self.adflr = self.dseq - 1;
                    self.asflr = self.sseq.saturating_sub(1);
                } else if dseq == self.adflr + 1 {
                    self.adflr = dseq;
                    self.asflr = sseq;
                    if let Some((&s, p)) = self.pending.range(sseq + 1..).next() {
                        self.adflr = p.dseq.saturating_sub(1);
                        self.asflr = s - 1;
                    }
                }
                self.rdc.remove(&sseq);
                self.unqueue_redelivery(sseq);
            }
            AckPolicy::All => {
                if dseq <= self.adflr || sseq <= self.asflr {
                    return acked;
                }
                let from = self.asflr + 1;
                self.adflr = dseq;
                self.asflr = sseq;
                let done: Vec<u64> = self.pending.range(from..=sseq).map(|(&s, _)| s).collect();
                for &s in &done {
                    self.pending.remove(&s);
                    self.rdc.remove(&s);
                    self.unqueue_redelivery(s);
                }
                // What this consumer was waiting on: its pending deliveries up to `sseq`.
                acked.extend(done);
            }
            AckPolicy::None => return acked,
        }
        self.last_ack = now_nanos();
        self.dirty = true;
        acked
    }

    /// A negative ack: delivered again at once, or after the delay it names (nats-server's
    /// `processNak`).
    fn nak(&mut self, c: &Consumer, sseq: u64, dseq: u64, dc: u64, arg: &[u8]) {
        if dseq <= self.adflr || dseq >= self.dseq {
            return;
        }
        if !self.pending.is_empty() && !self.pending.contains_key(&sseq) {
            return;
        }
        self.outgoing.push(nak_advisory(c, sseq, dseq, dc));
        let arg = arg.trim_ascii();
        if !arg.is_empty() {
            let delay = if arg[0] == b'{' {
                #[derive(serde::Deserialize)]
                struct Nak {
                    #[serde(default)]
                    delay: i64,
                }
                serde_json::from_slice::<Nak>(arg).ok().map(|n| n.delay)
            } else {
                std::str::from_utf8(arg).ok().and_then(parse_go_duration)
            };
            match delay {
                Some(d) => {
                    self.unqueue_redelivery(sseq);
                    let wait = self.config.ack_wait;
                    if let Some(p) = self.pending.get_mut(&sseq) {
                        // Due when the delay ends: "now - ack wait" would be due now.
                        p.ts = now_nanos().saturating_sub(wait).saturating_add(d);
                        self.next_check = Some(Instant::now() + Duration::from_millis(10));
                        self.dirty = true;
                    }
                    return;
                }
                None => log::warn!(
                    "JetStream consumer '{} > {}' bad NAK delay value: {:?}",
                    c.stream_name,
                    c.name,
                    String::from_utf8_lossy(arg)
                ),
            }
        }
        self.queue_redelivery(sseq);
    }
}

/// Parses Go's duration syntax (`1.5s`, `300ms`, `1m30s`) into nanoseconds.
pub fn parse_go_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    if s == "0" {
        return Some(0);
    }
    let mut total: f64 = 0.0;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale = match unit {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += n * scale;
    }
    Some(total as i64)
}

/// `{"type":T,"id":..,"timestamp":..,"stream":..,"consumer":..}` plus the rest, as
/// nats-server's advisories.
fn advisory<T: serde::Serialize>(kind: &str, c: &Consumer, rest: T) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct A<'a, T> {
        #[serde(rename = "type")]
        kind: &'a str,
        id: String,
        timestamp: String,
        stream: &'a str,
        consumer: &'a str,
        #[serde(flatten)]
        rest: T,
    }
    to_go_json(&A {
        kind,
        id: nuid(),
        timestamp: go_time(now_nanos()),
        stream: &c.stream_name,
        consumer: &c.name,
        rest,
    })
}

/// A 22-character id, as nats-server's NUIDs look.
fn nuid() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..22)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

#[derive(serde::Serialize)]
struct Seqs {
    consumer_seq: u64,
    stream_seq: u64,
    deliveries: u64,
}

/// The body of a consumer created/deleted advisory (`io.nats.jetstream.advisory.v1.
/// consumer_action`).
pub(super) fn consumer_action_advisory(c: &Consumer, action: &str) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct R<'a> {
        action: &'a str,
    }
    advisory(
        "io.nats.jetstream.advisory.v1.consumer_action",
        c,
        R { action },
    )
}

/// `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`.
pub(super) fn max_deliveries_advisory(c: &Consumer, sseq: u64, deliveries: u64) -> Outgoing {
    #[derive(serde::Serialize)]
    struct R {
        stream_seq: u64,
        deliveries: u64,
    }
    Outgoing::plain(
        format!(
            "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.{}",
            c.stream_name, c.name
        ),
        advisory(
            "io.nats.jetstream.advisory.v1.max_deliver",
            c,
            R {
                stream_seq: sseq,
                deliveries,
            },
        ),
    )
}

/// `$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.<stream>.<consumer>`.
fn nak_advisory(c: &Consumer, sseq: u64, dseq: u64, dc: u64) -> Outgoing {
    Outgoing::plain(
        format!(
            "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.{}.{}",
            c.stream_name, c.name
        ),
        advisory(
            "io.nats.jetstream.advisory.v1.nak",
            c,
            Seqs {
                consumer_seq: dseq,
                stream_seq: sseq,
                deliveries: dc,
            },
        ),
    )
}

/// `$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<consumer>`.
fn terminated_advisory(c: &Consumer, sseq: u64, dseq: u64, dc: u64) -> Outgoing {
    Outgoing::plain(
        format!(
            "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.{}.{}",
            c.stream_name, c.name
        ),
        advisory(
            "io.nats.jetstream.advisory.v1.terminated",
            c,
            Seqs {
                consumer_seq: dseq,
                stream_seq: sseq,
                deliveries: dc,
            },
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_subjects_and_durations() {
        assert_eq!(
            ack_reply_info(b"$JS.ACK.S.C.2.10.7.1700000000.3"),
            (10, 7, 2)
        );
        assert_eq!(ack_reply_info(b"$JS.ACK.S.C.2.10"), (0, 0, 0));
        assert_eq!(parse_go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_go_duration("1m30s"), Some(90_000_000_000));
        assert_eq!(parse_go_duration("300ms"), Some(300_000_000));
        assert_eq!(parse_go_duration("soon"), None);
    }
}
