//! Publish and subscribe permissions, with nats-server's semantics (`canSubscribe`,
//! `pubAllowed`, `checkDenySub`).
//!
//! - **Publish** to a literal subject: allowed if some `allow` pattern matches it (or there
//!   is no `allow` list) and no `deny` pattern does.
//! - **Subscribe** to a subject that may hold wildcards: the subject is matched against the
//!   patterns token by token, its `*`/`>` tokens being taken literally (as nats-server's
//!   sublist does): a pattern `foo.*` matches a `SUB foo.*`, a pattern `foo.bar` does not.
//!   Entries may name a queue group (`"foo.* workers"`); a `SUB` with a queue group is then
//!   allowed (or denied) by whether its group is among those of the matching entries.
//! - A wildcard `SUB` that passes but covers a denied subject (`SUB foo.>` with
//!   `deny = ["foo.secret"]`) is accepted; messages on denied subjects are filtered out when
//!   delivered to it ([`Permissions::delivery_filter`]).
//!
//! Matching reuses [`crate::subjects::subject_matches`]: a user's lists are short, and a
//! linear scan allocates nothing. Publish decisions are cached per connection
//! ([`PubCache`]), so the steady state is one hash lookup per message.

use crate::config::{split_queue, SubjectPermission};
use crate::subjects::{has_wildcard, subject_matches};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// A subject pattern restricted to a queue group: (pattern, queue group).
type QueueEntry = (Box<[u8]>, Box<[u8]>);

/// A list of subject patterns, some of them restricted to a queue group.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PermissionSet {
    /// Patterns without a queue group.
    plain: Vec<Box<[u8]>>,
    /// (pattern, queue group) entries.
    queues: Vec<QueueEntry>,
}

impl PermissionSet {
    /// Compiles a list of entries; `queues` says whether `"subject queue"` entries are
    /// split (subscribe lists) or taken whole (publish lists).
    fn new(entries: &[String], queues: bool) -> Option<PermissionSet> {
        if entries.is_empty() {
            return None;
        }
        let mut set = PermissionSet::default();
        for e in entries {
            match split_queue(e) {
                (subject, Some(queue)) if queues => set
                    .queues
                    .push((subject.as_bytes().into(), queue.as_bytes().into())),
                (subject, _) => set.plain.push(subject.as_bytes().into()),
            }
        }
        Some(set)
    }

    /// A plain list of subject patterns (a leafnode remote's `deny_imports` or
    /// `deny_exports`); `None` for an empty list.
    pub fn of_subjects(entries: &[String]) -> Option<Arc<PermissionSet>> {
        PermissionSet::new(entries, false).map(Arc::new)
    }

    /// Whether a pattern without a queue group matches `subject` (nats-server: the match
    /// result has plain subscriptions).
    #[inline]
    pub fn matches(&self, subject: &[u8]) -> bool {
        self.plain.iter().any(|p| subject_matches(subject, p))
    }

    /// Whether queue entries match `subject` at all and, if so, whether one of them names
    /// `queue` (nats-server's `queueMatches`; a queue name with wildcards matches as a
    /// subject).
    fn queue_matches(&self, subject: &[u8], queue: &[u8]) -> Option<bool> {
        let mut any = false;
        for (p, q) in &self.queues {
            if subject_matches(subject, p) {
                any = true;
                if **q == *queue || (has_wildcard(q) && is_subset_match(queue, q)) {
                    return Some(true);
                }
            }
        }
        any.then_some(false)
    }

    /// Every subject of the set (for the subset test of wildcard subscriptions).
    fn subjects(&self) -> impl Iterator<Item = &[u8]> {
        self.plain
            .iter()
            .map(|p| &**p)
            .chain(self.queues.iter().map(|(p, _)| &**p))
    }
}

/// Allow and deny lists for one direction.
#[derive(Debug, Default)]
struct Rule {
    allow: Option<PermissionSet>,
    deny: Option<Arc<PermissionSet>>,
}

impl Rule {
    fn new(p: &SubjectPermission, queues: bool) -> Rule {
        Rule {
            allow: PermissionSet::new(&p.allow, queues),
            deny: PermissionSet::new(&p.deny, queues).map(Arc::new),
        }
    }
}

/// A user's compiled permissions. Built once at start, shared by the user's connections.
#[derive(Debug, Default)]
pub struct Permissions {
    publish: Option<Rule>,
    subscribe: Option<Rule>,
    /// `allow_responses`: replies to received messages are allowed beyond `publish`.
    response: Option<crate::config::ResponsePermission>,
}

impl Permissions {
    /// Compiles the configured permissions.
    pub fn new(p: &crate::config::Permissions) -> Permissions {
        let rule = |r: &Option<SubjectPermission>, queues| {
            r.as_ref()
                .map(|r| Rule::new(r, queues))
                .filter(|r| r.allow.is_some() || r.deny.is_some())
        };
        let mut publish = rule(&p.publish, false);
        if p.response.is_some() {
            // nats-server's `validateResponsePermissions`: with responses allowed and no
            // `publish.allow`, nothing else may be published (an empty allow list).
            let rule = publish.get_or_insert_with(Rule::default);
            if rule.allow.is_none() {
                rule.allow = Some(PermissionSet::default());
            }
        }
        Permissions {
            publish,
            subscribe: rule(&p.subscribe, true),
            response: p.response,
        }
    }

    /// `allow_responses`, if the user has it: the reply subjects of the messages it
    /// receives are tracked (see [`Replies`]).
    pub fn response(&self) -> Option<crate::config::ResponsePermission> {
        self.response
    }

    /// Whether publishing to `subject` is restricted at all (if not, no check is needed).
    pub fn restricts_publish(&self) -> bool {
        self.publish.is_some()
    }

    /// Whether publishing to `subject` is allowed (nats-server's `pubAllowed`).
    pub fn can_publish(&self, subject: &[u8]) -> bool {
        let Some(rule) = &self.publish else {
            return true;
        };
        let allowed = rule.allow.as_ref().is_none_or(|a| a.matches(subject));
        allowed && !rule.deny.as_ref().is_some_and(|d| d.matches(subject))
    }

    /// Whether `SUB subject [queue]` is allowed (nats-server's `canSubscribe`).
    pub fn can_subscribe(&self, subject: &[u8], queue: Option<&[u8]>) -> bool {
        let Some(rule) = &self.subscribe else {
            return true;
        };
        let mut allowed = true;
        if let Some(allow) = &rule.allow {
            allowed = allow.matches(subject);
            if let Some(q) = queue {
                if let Some(m) = allow.queue_matches(subject, q) {
                    // The queue group appears in the allow list: it decides.
                    allowed = m;
                }
            }
        }
        if allowed {
            if let Some(deny) = &rule.deny {
                allowed = !deny.matches(subject);
                if let Some(q) = queue {
                    if let Some(m) = deny.queue_matches(subject, q) {
                        allowed = !m;
                    }
                }
            }
        }
        allowed
    }

    /// For an allowed wildcard subscription to `subject` that covers a denied subject, the
    /// deny list to filter its deliveries with (nats-server loads its delivery deny filter
    /// in the same case: a deny entry that is a subset of the subscription's subject).
    pub fn delivery_filter(&self, subject: &[u8]) -> Option<Arc<PermissionSet>> {
        let deny = self.subscribe.as_ref()?.deny.as_ref()?;
        if !has_wildcard(subject) {
            return None;
        }
        deny.subjects()
            .any(|d| is_subset_match(d, subject))
            .then(|| deny.clone())
    }
}

pub use crate::subjects::is_subset_match;

/// The reply subjects a client with `allow_responses` may publish to: those of the messages
/// it received, each for `max` responses within `expires` of its arrival (nats-server's
/// `client.replies`). Written by whoever delivers to the client, read by its reader when a
/// publish is not otherwise allowed.
#[derive(Debug)]
pub struct Replies {
    permission: crate::config::ResponsePermission,
    /// Reply subject → (arrival, responses sent).
    seen: FxHashMap<Box<[u8]>, (std::time::Instant, usize)>,
    /// Inserts since the expired entries were last swept.
    inserts: usize,
}

/// Reply subjects tracked before the expired ones are swept (nats-server's
/// `replyPermLimit`).
const REPLIES_SWEEP_AT: usize = 4096;

impl Replies {
    /// Tracking for `permission`.
    pub fn new(permission: crate::config::ResponsePermission) -> Replies {
        Replies {
            permission,
            seen: FxHashMap::default(),
            inserts: 0,
        }
    }

    /// A message with the reply subject `reply` was delivered.
    pub fn delivered(&mut self, reply: &[u8], now: std::time::Instant) {
        // Swept once every `REPLIES_SWEEP_AT` inserts, not on each one (nats-server's
        // pruning is amortised the same way).
        self.inserts += 1;
        if self.inserts >= REPLIES_SWEEP_AT {
            self.inserts = 0;
            let expires = self.permission.expires;
            self.seen
                .retain(|_, (at, _)| now.duration_since(*at) <= expires);
        }
        self.seen.insert(reply.into(), (now, 0));
    }

    /// Whether a response to `subject` may go out now; counts it if so (the entry goes once
    /// `max` responses were sent, or when it has expired).
    pub fn respond(&mut self, subject: &[u8], now: std::time::Instant) -> bool {
        let Some((at, sent)) = self.seen.get_mut(subject) else {
            return false;
        };
        *sent += 1;
        let allowed =
            *sent <= self.permission.max && now.duration_since(*at) <= self.permission.expires;
        if !allowed || *sent >= self.permission.max {
            self.seen.remove(subject);
        }
        allowed
    }
}

/// Most publish decisions a connection caches (nats-server keeps 128, then prunes).
pub const PUB_CACHE_MAX: usize = 256;

/// A connection's cache of publish decisions (nats-server's `pcache`). Owned by the reader
/// thread, so never locked. A hit costs one hash of the subject and allocates nothing; a
/// miss allocates the key once; when full the cache is emptied and refilled.
#[derive(Debug, Default)]
pub struct PubCache {
    map: FxHashMap<Box<[u8]>, bool>,
}

impl PubCache {
    /// Whether `perms` allow publishing to `subject`, from the cache when possible.
    #[inline]
    pub fn can_publish(&mut self, perms: &Permissions, subject: &[u8]) -> bool {
        if let Some(&allowed) = self.map.get(subject) {
            return allowed;
        }
        let allowed = perms.can_publish(subject);
        if self.map.len() >= PUB_CACHE_MAX {
            self.map.clear();
        }
        self.map.insert(subject.into(), allowed);
        allowed
    }

    /// Forgets every decision (new permissions after a new `CONNECT`).
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Permissions as Conf;

    fn perm(allow: &[&str], deny: &[&str]) -> Option<SubjectPermission> {
        Some(SubjectPermission {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        })
    }

    #[test]
    fn publish() {
        let p = Permissions::new(&Conf {
            publish: perm(&["foo.>", "bar"], &["foo.secret"]),
            subscribe: None,
            response: None,
        });
        assert!(p.can_publish(b"foo.a"));
        assert!(p.can_publish(b"bar"));
        assert!(!p.can_publish(b"foo.secret"));
        assert!(!p.can_publish(b"baz"));
        assert!(!p.can_publish(b"foo"));
        let mut cache = PubCache::default();
        for _ in 0..2 {
            assert!(cache.can_publish(&p, b"foo.a"));
            assert!(!cache.can_publish(&p, b"baz"));
        }
    }

    /// The cases checked against nats-server 2.9.10 (see tests/auth.rs).
    #[test]
    fn subscribe_as_nats_server() {
        let p = Permissions::new(&Conf {
            publish: None,
            subscribe: perm(&["foo.>", "q.* grp", "_INBOX.>"], &["foo.*.private"]),
            response: None,
        });
        assert!(!p.can_subscribe(b"foo.a.private", None));
        assert!(p.can_subscribe(b"foo.*", None));
        assert!(p.can_subscribe(b"foo.>", None));
        assert!(!p.can_subscribe(b"baz", None));
        assert!(!p.can_subscribe(b"q.x", None));
        assert!(p.can_subscribe(b"q.x", Some(b"grp")));
        assert!(!p.can_subscribe(b"q.x", Some(b"other")));
        assert!(!p.can_subscribe(b"foo.*.private", None));
        // A wildcard subscription covering the denied subjects gets a delivery filter.
        let f = p.delivery_filter(b"foo.>").unwrap();
        assert!(f.matches(b"foo.x.private"));
        assert!(!f.matches(b"foo.x.public"));
        assert!(p.delivery_filter(b"foo.*").is_none());
        assert!(p.delivery_filter(b"foo.a").is_none());

        let p = Permissions::new(&Conf {
            publish: None,
            subscribe: perm(&[], &["foo.>"]),
            response: None,
        });
        assert!(!p.can_subscribe(b"foo.a", None));
        assert!(p.can_subscribe(b"bar", None));
        assert!(p.can_subscribe(b">", None));
        assert!(p.delivery_filter(b">").is_some());
    }

    #[test]
    fn replies_are_allowed_max_times_within_expires() {
        use crate::config::ResponsePermission;
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let mut r = Replies::new(ResponsePermission {
            max: 2,
            expires: Duration::from_secs(10),
        });
        assert!(!r.respond(b"_INBOX.1", t0));
        r.delivered(b"_INBOX.1", t0);
        assert!(r.respond(b"_INBOX.1", t0));
        assert!(r.respond(b"_INBOX.1", t0));
        assert!(!r.respond(b"_INBOX.1", t0));
        r.delivered(b"_INBOX.2", t0);
        assert!(!r.respond(b"_INBOX.2", t0 + Duration::from_secs(11)));
        // Responses only: nothing else may be published.
        let p = Permissions::new(&crate::config::Permissions {
            response: Some(ResponsePermission::default()),
            ..crate::config::Permissions::default()
        });
        assert!(p.restricts_publish());
        assert!(!p.can_publish(b"anything"));
    }

    #[test]
    fn subsets() {
        assert!(is_subset_match(b"foo.*", b">"));
        assert!(is_subset_match(b"foo.*", b"*.*"));
        assert!(is_subset_match(b"foo.*", b"foo.*"));
        assert!(!is_subset_match(b"foo.*", b"foo.bar"));
        assert!(is_subset_match(b"foo.*.private", b"foo.>"));
        assert!(!is_subset_match(b"foo.*.private", b"foo.*"));
        assert!(!is_subset_match(b"foo.>", b"foo.*"));
    }
}
