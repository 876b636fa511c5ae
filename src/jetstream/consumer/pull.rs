//! Pull consumers' requests (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`, and `+NXT`
//! on an ack; nats-server's `processNextMsgRequest`, `nextWaiting`, `processWaiting`): a
//! request waits in the consumer's queue until it got its `batch` (or its `max_bytes`), its
//! `expires` passed (408), its inbox lost its subscriber (dropped, as nats-server does), or,
//! with `no_wait`, the stream had nothing more (404 before any message, 408 after some).
//! Requests that cannot be taken are answered at once with nats-server's statuses.

use super::deliver::{has_interest, Outgoing};
use super::{Consumer, ConsumerState, Waiting};
use crate::client::Subscription;
use crate::store::Store;
use crate::subjects::MatchCache;
use bytes::Bytes;
use std::time::{Duration, Instant};

/// The shortest heartbeat interval of a pull request.
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);

impl ConsumerState {
    /// The waiting request a message of `size` bytes goes to, if any (nats-server's
    /// `nextWaiting`): requests whose `max_bytes` it would pass are ended (409), those whose
    /// inbox lost its subscriber dropped. A request with more to take moves to the back.
    pub(super) fn next_waiting(&mut self, size: i64, send: &mut Vec<Outgoing>) -> Option<Bytes> {
        while let Some(mut w) = self.waiting.pop_front() {
            if w.b > 0 {
                if size <= w.b {
                    w.b -= size;
                    if w.b == 0 {
                        w.n = 1;
                    }
                } else {
                    send.push(Outgoing::status(
                        &w.reply,
                        409,
                        "Message Size Exceeds MaxBytes",
                        &pending_headers(&w),
                    ));
                    continue;
                }
            }
            w.d = w.d.saturating_add(1);
            w.n = w.n.saturating_sub(1);
            let reply = w.reply.clone();
            if w.n > 0 {
                if let Some((every, _)) = w.hb {
                    w.hb = Some((every, Instant::now() + every));
                }
                self.waiting.push_back(w);
            }
            return Some(reply);
        }
        None
    }

    /// Ends expired requests (408 Request Timeout), drops those without interest (when
    /// `interest` is given to check it), sends their heartbeats; at the end of the stream
    /// (`eos`), `no_wait` requests are answered: 408 after some messages, 404 before any.
    pub(super) fn expire_waiting(
        &mut self,
        now: Instant,
        eos: bool,
        mut interest: Option<(&Consumer, &mut MatchCache<Subscription>)>,
    ) {
        let mut keep = std::collections::VecDeque::with_capacity(self.waiting.len());
        while let Some(mut w) = self.waiting.pop_front() {
            if w.expires.is_some_and(|t| now >= t) || (eos && w.no_wait && w.d > 0) {
                self.outgoing.push(Outgoing::status(
                    &w.reply,
                    408,
                    "Request Timeout",
                    &pending_headers(&w),
                ));
                continue;
            }
            if eos && w.no_wait && w.expires.is_none() {
                // nats-server would keep it (until a message comes); answering is what
                // the client waits for.
                self.outgoing
                    .push(Outgoing::status(&w.reply, 404, "No Messages", &[]));
                continue;
            }
            if let Some((c, cache)) = interest.as_mut() {
                if !has_interest(c, cache, &w.reply) {
                    continue;
                }
            }
            if let Some((every, at)) = w.hb {
                if now >= at {
                    let reply = w.reply.clone();
                    let hb = self.heartbeat(&reply);
                    self.outgoing.push(hb);
                    w.hb = Some((every, now + every));
                }
            }
            keep.push_back(w);
        }
        self.waiting = keep;
    }

    /// Tells the waiting requests that the consumer is gone (409 Consumer Deleted).
    pub(super) fn release_waiting(&mut self) {
        for w in std::mem::take(&mut self.waiting) {
            self.outgoing
                .push(Outgoing::status(&w.reply, 409, "Consumer Deleted", &[]));
        }
    }

    /// A pull request (`CONSUMER.MSG.NEXT`, or `+NXT` on an ack): checked, then queued;
    /// what must be answered at once is returned (nats-server's `processNextMsgRequest`).
    pub(crate) fn pull_request(
        &mut self,
        reply: &[u8],
        body: &[u8],
        store: &dyn Store,
    ) -> Option<Outgoing> {
        let to = Bytes::copy_from_slice(reply);
        if self.config.is_push() {
            return Some(Outgoing::status(&to, 409, "Consumer is push based", &[]));
        }
        let req = match parse_next(body) {
            Ok(r) => r,
            Err(why) => {
                return Some(Outgoing::status(
                    &to,
                    400,
                    &format!("Bad Request - {why}"),
                    &[],
                ));
            }
        };
        let c = &self.config;
        if c.max_batch > 0 && req.batch > c.max_batch {
            return Some(Outgoing::status(
                &to,
                409,
                &format!("Exceeded MaxRequestBatch of {}", c.max_batch),
                &[],
            ));
        }
        if req.expires > 0 && c.max_expires > 0 && req.expires > c.max_expires {
            return Some(Outgoing::status(
                &to,
                409,
                &format!(
                    "Exceeded MaxRequestExpires of {}",
                    super::super::json::go_duration(c.max_expires)
                ),
                &[],
            ));
        }
        if req.max_bytes > 0 && c.max_bytes > 0 && req.max_bytes > c.max_bytes {
            return Some(Outgoing::status(
                &to,
                409,
                &format!("Exceeded MaxRequestMaxBytes of {}", c.max_bytes),
                &[],
            ));
        }
        let now = Instant::now();
        if self.waiting.len() as i64 >= c.max_waiting.max(1) {
            self.expire_waiting(now, false, None);
        }
        if req.no_wait {
            let pending = self.num_pending(store) + self.rdq.len() as u64;
            if pending == 0 && req.expires == 0 {
                self.last_activity = now;
                return Some(Outgoing::status(&to, 404, "No Messages", &[]));
            }
            if pending > 0 {
                let asked = self.waiting.iter().fold(0i64, |a, w| a.saturating_add(w.n));
                if (pending as i64) < asked {
                    self.last_activity = now;
                    return Some(Outgoing::status(&to, 408, "Requests Pending", &[]));
                }
            }
        }
        if self.waiting.len() as i64 >= self.config.max_waiting.max(1) {
            return Some(Outgoing::status(&to, 409, "Exceeded MaxWaiting", &[]));
        }
        let hb = (req.idle_heartbeat > 0).then(|| {
            // At most ten a second, whatever was asked: a request for a heartbeat every
            // nanosecond would keep the thread sending nothing else (nats-server 2.9
            // accepts any value; clients ask for seconds).
            let every = Duration::from_nanos(req.idle_heartbeat as u64).max(MIN_HEARTBEAT);
            (every, now + every)
        });
        self.waiting.push_back(Waiting {
            reply: to,
            n: req.batch,
            d: 0,
            b: req.max_bytes,
            expires: (req.expires > 0).then(|| now + Duration::from_nanos(req.expires as u64)),
            hb,
            no_wait: req.no_wait,
        });
        self.last_activity = now;
        None
    }
}

/// `Nats-Pending-Messages` and `Nats-Pending-Bytes` of a request being ended.
fn pending_headers(w: &Waiting) -> Vec<(&'static str, String)> {
    vec![
        ("Nats-Pending-Messages", w.n.to_string()),
        ("Nats-Pending-Bytes", w.b.to_string()),
    ]
}

/// A pull request's body (`JSApiConsumerGetNextRequest`).
#[derive(Debug, Default, serde::Deserialize)]
struct NextRequest {
    #[serde(default)]
    expires: i64,
    #[serde(default)]
    batch: i64,
    #[serde(default)]
    max_bytes: i64,
    #[serde(default)]
    no_wait: bool,
    #[serde(default)]
    idle_heartbeat: i64,
}

/// Reads a pull request as nats-server does (`nextReqFromMsg`): empty is one message, a
/// number is a batch, JSON is the full request; anything else is one message.
fn parse_next(body: &[u8]) -> Result<NextRequest, String> {
    let body = body.trim_ascii();
    if body.is_empty() {
        return Ok(NextRequest {
            batch: 1,
            ..NextRequest::default()
        });
    }
    if body[0] == b'{' {
        let r: NextRequest = serde_json::from_slice(body).map_err(|e| format!("{e}"))?;
        if r.idle_heartbeat > 0 && r.idle_heartbeat.saturating_mul(2) > r.expires {
            return Err("heartbeat value too large".into());
        }
        return Ok(r);
    }
    let batch = std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(1);
    Ok(NextRequest {
        batch,
        ..NextRequest::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_bodies() {
        assert_eq!(parse_next(b"").unwrap().batch, 1);
        assert_eq!(parse_next(b" 5 ").unwrap().batch, 5);
        assert_eq!(parse_next(b"junk").unwrap().batch, 1);
        let r = parse_next(br#"{"batch":3,"no_wait":true,"expires":100}"#).unwrap();
        assert_eq!((r.batch, r.no_wait, r.expires), (3, true, 100));
        assert_eq!(
            parse_next(br#"{"batch":1,"idle_heartbeat":60,"expires":100}"#).unwrap_err(),
            "heartbeat value too large"
        );
    }
}
