//! A consumer's configuration: the `config` object of `CONSUMER.CREATE` (nats-server's
//! `ConsumerConfig`), read as Go reads it (unknown fields ignored, a wrong type or an
//! unknown policy word is "invalid JSON"), completed with nats-server's defaults
//! (`setConsumerConfigDefaults`) and checked with its rules and words (`checkConsumerCfg`,
//! `checkNewConsumerConfig` for updates), written back in its field order.

use crate::jetstream::config::{Retention, StreamConfig};
use crate::jetstream::errors::{self, ApiError};
use crate::subjects::{is_valid_subscription_subject, subject_matches};
use serde::{Deserialize, Serialize};

/// Ack wait when none is given (explicit and all acks): 30 s, in nanoseconds.
pub const DEFAULT_ACK_WAIT: i64 = 30_000_000_000;
/// `max_ack_pending` when none is given (explicit and all acks), nats-server 2.9's.
pub const DEFAULT_MAX_ACK_PENDING: i64 = 1000;
/// `max_waiting` of a pull consumer when none is given.
pub const DEFAULT_MAX_WAITING: i64 = 512;
/// `inactive_threshold` an ephemeral gets when none is given: 5 s.
pub const DEFAULT_INACTIVE_THRESHOLD: i64 = 5_000_000_000;
/// Longest description.
const MAX_DESCRIPTION_LEN: usize = 4096;
/// Longest consumer name.
pub const MAX_NAME_LEN: usize = 255;

/// `deliver_policy`: where a new consumer starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DeliverPolicy {
    /// From the first message.
    #[default]
    All,
    /// From the last message (of the filter).
    Last,
    /// Only what is stored after it is created.
    New,
    /// From `opt_start_seq`.
    ByStartSequence,
    /// From `opt_start_time`.
    ByStartTime,
    /// The last message of each subject, then what comes.
    LastPerSubject,
}

impl<'de> Deserialize<'de> for DeliverPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "all" | "undefined" => DeliverPolicy::All,
            "last" => DeliverPolicy::Last,
            "new" => DeliverPolicy::New,
            "by_start_sequence" => DeliverPolicy::ByStartSequence,
            "by_start_time" => DeliverPolicy::ByStartTime,
            "last_per_subject" => DeliverPolicy::LastPerSubject,
            other => {
                return Err(serde::de::Error::custom(format!(
                    "can not unmarshal {other:?}"
                )))
            }
        })
    }
}

/// `ack_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AckPolicy {
    /// Nothing to acknowledge: delivered is done (Go's zero value: what a configuration
    /// without the field gets).
    #[default]
    None,
    /// Acknowledging a message acknowledges every one before it.
    All,
    /// Each message acknowledged on its own.
    Explicit,
}

/// `replay_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReplayPolicy {
    /// As fast as the consumer takes them.
    #[default]
    Instant,
    /// With the gaps they were stored with.
    Original,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}
fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}
fn is_false(v: &bool) -> bool {
    !*v
}

/// A consumer's configuration, fields in nats-server's order. Durations are nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ConsumerConfig {
    /// Durable name (kept until deleted).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub durable_name: String,
    /// Name (ephemerals get a random one).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// See [`DeliverPolicy`].
    #[serde(default)]
    pub deliver_policy: DeliverPolicy,
    /// First stream sequence (`by_start_sequence`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub opt_start_seq: u64,
    /// First time (`by_start_time`), RFC 3339 as Go writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<String>,
    /// See [`AckPolicy`]. Go's zero value is `none`, which is what a missing field reads as.
    #[serde(default = "ack_none")]
    pub ack_policy: AckPolicy,
    /// How long a delivery waits for its ack before it is delivered again.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub ack_wait: i64,
    /// Deliveries of one message at most (-1 unlimited).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_deliver: i64,
    /// Waits before each redelivery (replaces `ack_wait`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backoff: Vec<i64>,
    /// Only messages on these subjects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    /// See [`ReplayPolicy`].
    #[serde(default)]
    pub replay_policy: ReplayPolicy,
    /// Push delivery rate, bits per second.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub rate_limit_bps: u64,
    /// Ack sampling (`"30%"`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sample_freq: String,
    /// Pull requests waiting at most.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_waiting: i64,
    /// Deliveries awaiting their ack at most.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_ack_pending: i64,
    /// Idle heartbeat interval of a push consumer.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub idle_heartbeat: i64,
    /// Push flow control.
    #[serde(default, skip_serializing_if = "is_false")]
    pub flow_control: bool,
    /// Deliver headers only (`Nats-Msg-Size` says the body's size).
    #[serde(default, skip_serializing_if = "is_false")]
    pub headers_only: bool,
    /// Largest `batch` of a pull request.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_batch: i64,
    /// Longest `expires` of a pull request.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_expires: i64,
    /// Largest `max_bytes` of a pull request.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_bytes: i64,
    /// Push consumers deliver to this subject.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deliver_subject: String,
    /// Queue group of the push subscribers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deliver_group: String,
    /// Deleted after this long without interest.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub inactive_threshold: i64,
    /// Replicas (0: the stream's).
    #[serde(default)]
    pub num_replicas: i64,
    /// State kept in memory only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mem_storage: bool,
    /// Internal (mirrors, sources): accepted, treated as any consumer.
    #[serde(default, skip_serializing_if = "is_false")]
    pub direct: bool,
}

fn ack_none() -> AckPolicy {
    AckPolicy::None
}

/// The request body of `CONSUMER.CREATE`.
#[derive(Debug, Deserialize, Default)]
pub struct CreateRequest {
    /// The stream, which must match the subject's.
    #[serde(default)]
    pub stream_name: String,
    /// The configuration.
    #[serde(default)]
    pub config: Option<ConsumerConfig>,
}

impl ConsumerConfig {
    /// Whether it is a push consumer (it has a deliver subject).
    pub fn is_push(&self) -> bool {
        !self.deliver_subject.is_empty()
    }

    /// Whether deliveries wait for acks.
    pub fn acks(&self) -> bool {
        self.ack_policy != AckPolicy::None
    }

    /// nats-server's defaults (`setConsumerConfigDefaults`).
    pub fn apply_defaults(&mut self) {
        if self.deliver_subject.is_empty() && self.max_waiting == 0 {
            self.max_waiting = DEFAULT_MAX_WAITING;
        }
        if self.ack_wait == 0 && self.acks() {
            self.ack_wait = DEFAULT_ACK_WAIT;
        }
        if self.max_deliver == 0 {
            self.max_deliver = -1;
        }
        if let Some(&first) = self.backoff.first() {
            self.ack_wait = first;
        }
        if self.acks() && self.max_ack_pending == 0 {
            self.max_ack_pending = DEFAULT_MAX_ACK_PENDING;
        }
        if let Some(t) = &self.opt_start_time {
            // Written back as Go writes times (UTC, nanoseconds trimmed).
            if let Some(ns) = crate::jetstream::json::parse_go_time(t) {
                self.opt_start_time = Some(crate::jetstream::json::go_time(ns));
            }
        }
    }

    /// nats-server's `checkConsumerCfg`, its errors in its order (after the defaults). An
    /// `opt_start_time` that is not an RFC 3339 time is "invalid JSON", as Go fails to read
    /// it.
    pub fn check(&self, stream: &StreamConfig) -> Result<(), ApiError> {
        if let Some(t) = &self.opt_start_time {
            if crate::jetstream::json::parse_go_time(t).is_none() {
                return Err(errors::INVALID_JSON);
            }
        }
        if self.num_replicas > 0 && self.num_replicas > stream.num_replicas.max(1) {
            return Err(errors::e(
                400,
                10126,
                "consumer config replica count exceeds parent stream",
            ));
        }
        if self.num_replicas < 0 {
            return Err(errors::e(400, 10133, "replicas count cannot be negative"));
        }
        if !self.backoff.is_empty() && self.max_deliver <= self.backoff.len() as i64 {
            return Err(errors::e(
                400,
                10116,
                "max deliver is required to be > length of backoff values",
            ));
        }
        if self.description.len() > MAX_DESCRIPTION_LEN {
            return Err(errors::f(
                400,
                10107,
                format!(
                    "consumer description is too long, maximum allowed is {MAX_DESCRIPTION_LEN}"
                ),
            ));
        }
        if self.is_push() {
            let d = self.deliver_subject.as_bytes();
            if d.contains(&b'*') || d.split(|&b| b == b'.').any(|t| t == b">") {
                return Err(errors::e(
                    400,
                    10079,
                    "consumer deliver subject has wildcards",
                ));
            }
            if !is_valid_subscription_subject(d) {
                return Err(errors::e(
                    400,
                    10112,
                    "invalid push consumer deliver subject",
                ));
            }
            if stream
                .subjects
                .iter()
                .any(|s| subject_matches(d, s.as_bytes()))
            {
                return Err(errors::e(
                    400,
                    10081,
                    "consumer deliver subject forms a cycle",
                ));
            }
            if self.max_waiting != 0 {
                return Err(errors::e(
                    400,
                    10080,
                    "consumer in push mode can not set max waiting",
                ));
            }
            if self.max_ack_pending > 0 && self.ack_policy == AckPolicy::None {
                return Err(errors::e(
                    400,
                    10082,
                    "consumer requires ack policy for max ack pending",
                ));
            }
            if self.idle_heartbeat > 0 && self.idle_heartbeat < 100_000_000 {
                return Err(errors::e(
                    400,
                    10083,
                    "consumer idle heartbeat needs to be >= 100ms",
                ));
            }
        } else {
            if self.ack_policy == AckPolicy::None && stream.retention == Retention::Workqueue {
                return Err(errors::e(
                    400,
                    10084,
                    "consumer in pull mode requires ack policy",
                ));
            }
            if self.rate_limit_bps > 0 {
                return Err(errors::e(
                    400,
                    10086,
                    "consumer in pull mode can not have rate limit set",
                ));
            }
            if self.max_waiting < 0 {
                return Err(errors::e(
                    400,
                    10087,
                    "consumer max waiting needs to be positive",
                ));
            }
            if self.idle_heartbeat > 0 {
                return Err(errors::e(
                    400,
                    10088,
                    "consumer idle heartbeat requires a push based consumer",
                ));
            }
            if self.flow_control {
                return Err(errors::e(
                    400,
                    10089,
                    "consumer flow control requires a push based consumer",
                ));
            }
            if self.max_batch < 0 {
                return Err(errors::e(
                    400,
                    10114,
                    "consumer max request batch needs to be > 0",
                ));
            }
            if self.max_expires != 0 && self.max_expires < 1_000_000 {
                return Err(errors::e(
                    400,
                    10115,
                    "consumer max request expires needs to be >= 1ms",
                ));
            }
        }
        if self.direct {
            if !self.is_push() {
                return Err(errors::e(
                    400,
                    10090,
                    "consumer direct requires a push based consumer",
                ));
            }
            if !self.durable_name.is_empty() {
                return Err(errors::e(
                    400,
                    10091,
                    "consumer direct requires an ephemeral consumer",
                ));
            }
        }
        if !self.filter_subject.is_empty() && !valid_filter(&self.filter_subject, stream) {
            return Err(errors::e(
                400,
                10093,
                "consumer filter subject is not a valid subset of the interest subjects",
            ));
        }
        self.check_start()?;
        if !self.sample_freq.is_empty() {
            let s = self.sample_freq.trim_end_matches('%');
            match s.parse::<i64>() {
                Ok(n) if n >= 0 => {}
                Ok(_) => {
                    return Err(errors::f(
                        400,
                        10095,
                        "failed to parse consumer sampling configuration: <nil>".into(),
                    ))
                }
                Err(_) => {
                    return Err(errors::f(
                        400,
                        10095,
                        format!(
                            "failed to parse consumer sampling configuration: strconv.Atoi: parsing {s:?}: invalid syntax"
                        ),
                    ))
                }
            }
        }
        if self.flow_control && self.idle_heartbeat == 0 {
            return Err(errors::e(
                400,
                10108,
                "consumer with flow control also needs heartbeats",
            ));
        }
        if !self.durable_name.is_empty() && !self.name.is_empty() && self.name != self.durable_name
        {
            return Err(errors::e(
                400,
                10132,
                "Consumer Durable and Name have to be equal if both are provided",
            ));
        }
        Ok(())
    }

    /// The start options against the deliver policy (nats-server's wording).
    fn check_start(&self) -> Result<(), ApiError> {
        let bad_start = |dp: &str, start: &str| {
            Err(errors::f(
                400,
                10094,
                format!("consumer delivery policy is deliver {dp}, but optional start {start} is also set"),
            ))
        };
        let not_set = |dp: &str, what: &str| {
            Err(errors::f(
                400,
                10094,
                format!("consumer delivery policy is deliver {dp}, but optional {what} is not set"),
            ))
        };
        let seq = self.opt_start_seq > 0;
        let time = self.opt_start_time.is_some();
        match self.deliver_policy {
            DeliverPolicy::All | DeliverPolicy::Last | DeliverPolicy::New => {
                let dp = match self.deliver_policy {
                    DeliverPolicy::All => "all",
                    DeliverPolicy::Last => "last",
                    _ => "new",
                };
                if seq {
                    return bad_start(dp, "sequence");
                }
                if time {
                    return bad_start(dp, "time");
                }
            }
            DeliverPolicy::LastPerSubject => {
                if seq {
                    return bad_start("last per subject", "sequence");
                }
                if time {
                    return bad_start("last per subject", "time");
                }
                if self.filter_subject.is_empty() {
                    return not_set("last per subject", "filter subject");
                }
            }
            DeliverPolicy::ByStartSequence => {
                if !seq {
                    return not_set("by start sequence", "start sequence");
                }
                if time {
                    return bad_start("by start sequence", "time");
                }
            }
            DeliverPolicy::ByStartTime => {
                if !time {
                    return not_set("by start time", "start time");
                }
                if seq {
                    return bad_start("by start time", "start sequence");
                }
            }
        }
        Ok(())
    }

    /// What an update of an existing consumer may change (`checkNewConsumerConfig`); the
    /// reason is reported as nats-server reports it (code 500, err_code 10012).
    pub fn check_update(&self, new: &ConsumerConfig) -> Result<(), ApiError> {
        if self == new {
            return Ok(());
        }
        let fail = |why: &str| Err(errors::f(500, 10012, why.to_string()));
        if self.deliver_policy != new.deliver_policy {
            return fail("deliver policy can not be updated");
        }
        if self.opt_start_seq != new.opt_start_seq {
            return fail("start sequence can not be updated");
        }
        if self.opt_start_time != new.opt_start_time {
            return fail("start time can not be updated");
        }
        if self.ack_policy != new.ack_policy {
            return fail("ack policy can not be updated");
        }
        if self.replay_policy != new.replay_policy {
            return fail("replay policy can not be updated");
        }
        if self.idle_heartbeat != new.idle_heartbeat {
            return fail("heart beats can not be updated");
        }
        if self.flow_control != new.flow_control {
            return fail("flow control can not be updated");
        }
        if self.max_waiting != new.max_waiting {
            return fail("max waiting can not be updated");
        }
        if self.deliver_subject != new.deliver_subject {
            if self.deliver_subject.is_empty() {
                return fail("can not update pull consumer to push based");
            }
            if new.deliver_subject.is_empty() {
                return fail("can not update push consumer to pull based");
            }
        }
        if !new.backoff.is_empty() && new.max_deliver <= new.backoff.len() as i64 {
            return Err(errors::e(
                400,
                10116,
                "max deliver is required to be > length of backoff values",
            ));
        }
        Ok(())
    }
}

/// Whether `filter` selects some of the stream's subjects (nats-server's
/// `validFilteredSubject`): inside one of them, or, with wildcards, wider than one. A
/// mirror or a stream with sources takes any valid filter (their subjects come from
/// elsewhere).
fn valid_filter(filter: &str, stream: &StreamConfig) -> bool {
    let f = filter.as_bytes();
    if !is_valid_subscription_subject(f) {
        return false;
    }
    if stream.mirror.is_some() || !stream.sources.is_empty() {
        return true;
    }
    let wild = f.contains(&b'*') || f.split(|&b| b == b'.').any(|t| t == b">");
    stream
        .subjects
        .iter()
        .any(|s| is_subset(f, s.as_bytes()) || (wild && is_subset(s.as_bytes(), f)))
}

/// Whether every subject `a` matches is also matched by `b` (wildcards in both; nats-server's
/// `subjectIsSubsetMatch`).
pub fn is_subset(a: &[u8], b: &[u8]) -> bool {
    let at: Vec<&[u8]> = a.split(|&c| c == b'.').collect();
    for (i, t2) in b.split(|&c| c == b'.').enumerate() {
        let Some(&t1) = at.get(i) else { return false };
        if t2 == b">" {
            return true;
        }
        if t1 == b">" {
            return false;
        }
        if t2 == b"*" {
            continue;
        }
        if t1 == b"*" || t1 != t2 {
            return false;
        }
    }
    at.len() == b.split(|&c| c == b'.').count()
}

/// Whether `name` may name a consumer (nats-server's `isValidName`).
pub fn is_valid_name(name: &str) -> bool {
    crate::jetstream::config::is_valid_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(subjects: &[&str]) -> StreamConfig {
        StreamConfig {
            name: "S".into(),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
            num_replicas: 1,
            ..StreamConfig::default()
        }
    }

    #[test]
    fn defaults_as_nats_server_fills_them() {
        let mut c: ConsumerConfig =
            serde_json::from_str(r#"{"durable_name":"D","ack_policy":"explicit"}"#).unwrap();
        c.apply_defaults();
        assert_eq!(
            (c.ack_wait, c.max_deliver, c.max_waiting, c.max_ack_pending),
            (DEFAULT_ACK_WAIT, -1, 512, 1000)
        );
        let mut push: ConsumerConfig = serde_json::from_str(r#"{"deliver_subject":"d"}"#).unwrap();
        push.apply_defaults();
        assert_eq!(
            (push.ack_policy, push.ack_wait, push.max_waiting),
            (AckPolicy::None, 0, 0)
        );
        assert!(
            serde_json::from_str::<ConsumerConfig>(r#"{"deliver_policy":"sometimes"}"#).is_err()
        );
    }

    #[test]
    fn filters_and_policies() {
        let s = stream(&["foo.>", "bar"]);
        let check = |json: &str| {
            let mut c: ConsumerConfig = serde_json::from_str(json).unwrap();
            c.apply_defaults();
            c.check(&s).map_err(|e| e.err_code)
        };
        assert_eq!(check(r#"{"filter_subject":"foo.a"}"#), Ok(()));
        assert_eq!(check(r#"{"filter_subject":">"}"#), Ok(()));
        assert_eq!(check(r#"{"filter_subject":"baz"}"#), Err(10093));
        assert_eq!(
            check(r#"{"deliver_policy":"by_start_sequence"}"#),
            Err(10094)
        );
        assert_eq!(check(r#"{"deliver_subject":"foo.x"}"#), Err(10081));
        assert_eq!(
            check(r#"{"flow_control":true,"deliver_subject":"d"}"#),
            Err(10108)
        );
        assert_eq!(check(r#"{"flow_control":true}"#), Err(10089));
        assert!(is_subset(b"foo.*", b"foo.>"));
        assert!(!is_subset(b"foo.>", b"foo.*"));
        assert!(is_subset(b"a.b", b"a.*"));
        assert!(!is_subset(b"a", b"a.>"));
    }
}
