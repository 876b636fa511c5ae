//! A stream's configuration: the `config` object of the stream API (nats-server's
//! `StreamConfig`), read as Go reads it (unknown fields ignored, a wrong type or an unknown
//! enum word is "invalid JSON"), completed with nats-server's defaults and checked with its
//! rules and words (`checkStreamCfg`), and written back in its field order.

use super::errors::{self, ApiError};
use crate::subjects::{is_valid_subscription_subject, subject_matches};
use serde::{Deserialize, Serialize};

/// nats-server's default `duplicate_window`: two minutes, in nanoseconds.
pub const DEFAULT_DUPLICATE_WINDOW: i64 = 120_000_000_000;
/// Longest stream name.
pub const MAX_NAME_LEN: usize = 255;

/// `retention`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Retention {
    /// Kept until a limit removes them.
    #[default]
    Limits,
    /// Kept while a consumer is interested (consumers come with part 2).
    Interest,
    /// Removed once acknowledged by a consumer.
    Workqueue,
}

/// `discard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Discard {
    /// Remove the oldest to make room.
    #[default]
    Old,
    /// Refuse the new message.
    New,
}

/// `storage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// Files under the store directory.
    #[default]
    File,
    /// Memory only (gone at restart).
    Memory,
}

/// `placement` (accepted and kept; one server places everything on itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Placement {
    /// Cluster name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// Server tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// A `mirror` or one of `sources`: another stream of this server feeding this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StreamSource {
    /// The origin stream.
    pub name: String,
    /// Start at this origin sequence.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub opt_start_seq: u64,
    /// Start at this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<String>,
    /// Only the origin's messages on these subjects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    /// Another domain's API prefix: not supported (refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<serde_json::Value>,
}

/// `republish`: stored messages are also published to `dest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RePublish {
    /// Which stored subjects (default: all, `>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub src: String,
    /// Where to (a subject mapping of `src`: `*`/`>` carried over as `$1`... or literal).
    pub dest: String,
    /// Headers only (the body's size in `Nats-Msg-Size`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub headers_only: bool,
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
fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// A stream's configuration, fields in nats-server's order. Numbers as in its JSON:
/// durations in nanoseconds, -1 (or 0 on input) for unlimited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StreamConfig {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Subjects it captures (wildcards allowed); default: its name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    /// See [`Retention`].
    #[serde(default)]
    pub retention: Retention,
    /// Consumers allowed (-1 unlimited).
    #[serde(default)]
    pub max_consumers: i64,
    /// Messages kept (-1 unlimited).
    #[serde(default)]
    pub max_msgs: i64,
    /// Bytes kept (-1 unlimited).
    #[serde(default)]
    pub max_bytes: i64,
    /// Oldest kept, nanoseconds (0 forever).
    #[serde(default)]
    pub max_age: i64,
    /// Messages kept per subject (-1 unlimited).
    #[serde(default)]
    pub max_msgs_per_subject: i64,
    /// Largest message (-1 unlimited).
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub max_msg_size: i32,
    /// See [`Discard`].
    #[serde(default)]
    pub discard: Discard,
    /// See [`Storage`].
    #[serde(default)]
    pub storage: Storage,
    /// Replicas: 1 on a server without a cluster.
    #[serde(default)]
    pub num_replicas: i64,
    /// No PubAck for publishes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_ack: bool,
    /// Stream templates (deprecated): kept as given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub template_owner: String,
    /// Window for `Nats-Msg-Id` deduplication, nanoseconds.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub duplicate_window: i64,
    /// See [`Placement`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Mirror of another stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<StreamSource>,
    /// Fed from other streams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<StreamSource>,
    /// See [`RePublish`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub republish: Option<RePublish>,
    /// `DIRECT.GET` answers for this stream.
    #[serde(default)]
    pub allow_direct: bool,
    /// `DIRECT.GET` on the origin answered by this mirror too.
    #[serde(default)]
    pub mirror_direct: bool,
    /// With `discard: new`, also per subject.
    #[serde(default, skip_serializing_if = "is_false")]
    pub discard_new_per_subject: bool,
    /// No more changes: no publish, delete or purge.
    #[serde(default)]
    pub sealed: bool,
    /// `STREAM.MSG.DELETE` refused.
    #[serde(default)]
    pub deny_delete: bool,
    /// `STREAM.PURGE` refused.
    #[serde(default)]
    pub deny_purge: bool,
    /// `Nats-Rollup` headers honoured.
    #[serde(default)]
    pub allow_rollup_hdrs: bool,
}

/// Whether `name` is a valid stream (or consumer) name: not empty, and none of `.`, `*`,
/// `>`, whitespace or control characters (nats-server's `isValidName`, control characters
/// added: a name becomes a directory's and a subscription id's).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['.', '*', '>']) && !name.bytes().any(is_blank_or_control)
}

/// Whitespace and control characters: never in a name or a subject (a subject with a CR LF
/// would end a protocol line when its interest crosses a route).
fn is_blank_or_control(b: u8) -> bool {
    b <= b' ' || b == 0x7f
}

/// Whether `subject` is a valid subject or filter for a stream: a valid subscription subject
/// without whitespace or control characters (nats-server's "invalid subject").
pub fn is_valid_stream_subject(subject: &str) -> bool {
    is_valid_subscription_subject(subject.as_bytes()) && !subject.bytes().any(is_blank_or_control)
}

/// The wildcard tokens of `subject`.
fn wildcards(subject: &str) -> usize {
    crate::subjects::tokens(subject.as_bytes())
        .filter(|t| *t == b"*" || *t == b">")
        .count()
}

/// Whether two subject filters can match a common subject.
pub fn subjects_overlap(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let ta: Vec<&[u8]> = crate::subjects::tokens(a).collect();
    let tb: Vec<&[u8]> = crate::subjects::tokens(b).collect();
    let mut i = 0;
    loop {
        match (ta.get(i), tb.get(i)) {
            (Some(x), _) if *x == b">" => return tb.len() > i,
            (_, Some(y)) if *y == b">" => return ta.len() > i,
            (Some(x), Some(y)) => {
                if *x != b"*" && *y != b"*" && x != y {
                    return false;
                }
            }
            (None, None) => return true,
            _ => return false,
        }
        i += 1;
    }
}

/// Whether every subject matching `inner` also matches `outer` (a filter within another).
pub fn subject_is_subset(inner: &str, outer: &str) -> bool {
    let ti: Vec<&[u8]> = crate::subjects::tokens(inner.as_bytes()).collect();
    let to: Vec<&[u8]> = crate::subjects::tokens(outer.as_bytes()).collect();
    for (i, o) in to.iter().enumerate() {
        if *o == b">" {
            return ti.len() > i;
        }
        match ti.get(i) {
            None => return false,
            Some(t) if *o == b"*" => {
                if *t == b">" {
                    return false;
                }
            }
            Some(t) if t == o => {}
            Some(_) => return false,
        }
    }
    ti.len() == to.len()
}

impl StreamConfig {
    /// Fills in nats-server's defaults and checks its rules (`checkStreamCfg`), in its
    /// order, with its words. `clustered`: whether replicas may be more than one.
    pub fn normalize(mut self) -> Result<StreamConfig, ApiError> {
        if self.name.is_empty() || !is_valid_name(&self.name) {
            return Err(errors::invalid_config(
                "stream name is required and can not contain '.', '*', '>'",
            ));
        }
        if self.name.len() > MAX_NAME_LEN {
            return Err(errors::invalid_config(format!(
                "stream name is too long, maximum allowed is {MAX_NAME_LEN}"
            )));
        }
        if self.num_replicas == 0 {
            self.num_replicas = 1;
        }
        if self.num_replicas > 5 {
            return Err(errors::invalid_config("maximum replicas is 5"));
        }
        if self.num_replicas < 0 {
            return Err(errors::REPLICAS_NEGATIVE);
        }
        if self.max_msgs == 0 {
            self.max_msgs = -1;
        }
        if self.max_msgs_per_subject == 0 {
            self.max_msgs_per_subject = -1;
        }
        if self.max_bytes == 0 {
            self.max_bytes = -1;
        }
        if self.max_msg_size == 0 {
            self.max_msg_size = -1;
        }
        if self.max_consumers == 0 {
            self.max_consumers = -1;
        }
        if self.duplicate_window == 0 && self.mirror.is_none() {
            self.duplicate_window = if self.max_age != 0 && self.max_age < DEFAULT_DUPLICATE_WINDOW
            {
                self.max_age
            } else {
                DEFAULT_DUPLICATE_WINDOW
            };
        }
        if self.duplicate_window < 0 || self.max_age < 0 {
            return Err(errors::invalid_config(
                "duplicates window can not be negative",
            ));
        }
        if self.max_age != 0 && self.duplicate_window > self.max_age {
            return Err(errors::invalid_config(
                "duplicates window can not be larger then max age",
            ));
        }
        if self.discard_new_per_subject {
            if self.discard != Discard::New {
                return Err(errors::invalid_config(
                    "discard new per subject requires discard new policy to be set",
                ));
            }
            if self.max_msgs_per_subject <= 0 {
                return Err(errors::invalid_config(
                    "discard new per subject requires max msgs per subject > 0",
                ));
            }
        }
        if self.mirror_direct && self.mirror.is_none() {
            return Err(errors::invalid_config(
                "stream has no mirror but does have mirror direct",
            ));
        }
        if self.allow_rollup_hdrs && self.deny_purge {
            return Err(errors::invalid_config(
                "roll-ups require the purge permission",
            ));
        }
        for src in self.mirror.iter().chain(&self.sources) {
            if !src.filter_subject.is_empty() && !is_valid_stream_subject(&src.filter_subject) {
                return Err(errors::invalid_config("invalid subject"));
            }
            if let Some(t) = &src.opt_start_time {
                if super::json::parse_go_time(t).is_none() {
                    // Go fails to read such a time: the whole request is invalid JSON.
                    return Err(errors::INVALID_JSON);
                }
            }
        }
        if let Some(m) = &self.mirror {
            if !self.subjects.is_empty() {
                return Err(errors::MIRROR_WITH_SUBJECTS);
            }
            if !self.sources.is_empty() {
                return Err(errors::MIRROR_WITH_SOURCES);
            }
            if m.opt_start_seq > 0 && m.opt_start_time.is_some() {
                return Err(errors::MIRROR_START_SEQ_AND_TIME);
            }
            if m.external.is_some() || self.sources.iter().any(|s| s.external.is_some()) {
                return Err(errors::invalid_config(
                    "external streams (other domains) are not supported by beaver yet",
                ));
            }
            // A mirror keeps its origin's sequences: no deduplication window of its own.
            return Ok(self);
        }
        if self.sources.iter().any(|s| s.external.is_some()) {
            return Err(errors::invalid_config(
                "external streams (other domains) are not supported by beaver yet",
            ));
        }
        if self.subjects.is_empty() && self.sources.is_empty() {
            self.subjects.push(self.name.clone());
        }
        let mut seen = std::collections::HashSet::new();
        for s in &self.subjects {
            if !seen.insert(s.as_str()) {
                return Err(errors::invalid_config("duplicate subjects detected"));
            }
        }
        for s in &self.subjects {
            if !is_valid_stream_subject(s) {
                return Err(errors::invalid_config("invalid subject"));
            }
        }
        for (i, a) in self.subjects.iter().enumerate() {
            for b in &self.subjects[i + 1..] {
                if subjects_overlap(a, b) {
                    return Err(errors::invalid_config(format!(
                        "subject {a:?} overlaps with {b:?}"
                    )));
                }
            }
        }
        if let Some(rp) = &mut self.republish {
            if rp.src.is_empty() {
                rp.src = ">".into();
            }
            if !is_valid_stream_subject(&rp.src)
                || !is_valid_stream_subject(&rp.dest)
                || wildcards(&rp.dest) > wildcards(&rp.src)
            {
                return Err(errors::invalid_config(
                    "stream configuration for republish not valid",
                ));
            }
            if !self
                .subjects
                .iter()
                .any(|s| subject_is_subset(&rp.src, s) || subject_is_subset(s, &rp.src))
            {
                return Err(errors::invalid_config(
                    "stream configuration for republish source is not valid subset of subjects",
                ));
            }
            if self.subjects.iter().any(|s| subjects_overlap(s, &rp.dest)) {
                return Err(errors::invalid_config(
                    "stream configuration for republish destination forms a cycle",
                ));
            }
        }
        Ok(self)
    }

    /// The store's limits for this configuration.
    pub fn limits(&self) -> crate::store::Limits {
        crate::store::Limits {
            max_msgs: self.max_msgs,
            max_bytes: self.max_bytes,
            max_age: std::time::Duration::from_nanos(self.max_age.max(0) as u64),
            max_msgs_per_subject: self.max_msgs_per_subject,
            discard_new: self.discard == Discard::New,
            discard_new_per_subject: self.discard_new_per_subject,
        }
    }

    /// Whether a message on `subject` belongs to this stream.
    pub fn captures(&self, subject: &[u8]) -> bool {
        self.subjects
            .iter()
            .any(|s| subject_matches(subject, s.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_and_subsets() {
        assert!(subjects_overlap("foo", "foo"));
        assert!(subjects_overlap("bar.>", "bar.x"));
        assert!(subjects_overlap(">", "foo"));
        assert!(subjects_overlap("a.*", "*.b"));
        assert!(!subjects_overlap("a.*", "a"));
        assert!(!subjects_overlap("a.>", "a"));
        assert!(subjects_overlap("$JS.API.>", "$JS.>"));
        assert!(subject_is_subset("a.b", "a.*"));
        assert!(subject_is_subset("a.b.c", "a.>"));
        assert!(!subject_is_subset("a.>", "a.*"));
        assert!(!subject_is_subset("other.>", "rps.>"));
    }

    #[test]
    fn defaults_are_nats_servers() {
        let c: StreamConfig =
            serde_json::from_str(r#"{"name":"S","subjects":["foo","bar.>"]}"#).unwrap();
        let c = c.normalize().unwrap();
        let json = String::from_utf8(super::super::json::to_go_json(&c)).unwrap();
        assert_eq!(
            json,
            r#"{"name":"S","subjects":["foo","bar.\u003e"],"retention":"limits","max_consumers":-1,"max_msgs":-1,"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old","storage":"file","num_replicas":1,"duplicate_window":120000000000,"allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,"allow_rollup_hdrs":false}"#
        );
    }
}
