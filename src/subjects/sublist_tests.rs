//! The behaviours nats-server's own sublist tests check (`server/sublist_test.go`), checked
//! against beaver's table. Ported by behaviour, in our own words and shapes.
//!
//! nats-server runs most of its tests twice, with and without its match cache. Beaver always
//! has its caches, but a reader can ask the table three ways ([`Way`]): straight
//! (`matches`), through the shared cache (`cached_matches`), or through a reader's private
//! cache (`MatchCache`, which itself uses the other two). Most tests below run once per way,
//! so a stale cached result shows up as a wrong match.
//!
//! Not ported, and why:
//! - reverse match, subset match, `SubjectsCollide`, mapping destinations (`ValidateMapping`),
//!   interest notifications: features beaver does not have;
//! - the cache switch (`NewSublistNoCache`, `CacheEnabled`, the server/account constructors,
//!   "remove batch does not turn the cache on"): beaver's caches are always on;
//! - queue weights of remote (route) queue subscriptions: beaver keeps a route's weights in
//!   the route's own map, not in the sublist;
//! - the shared empty result (one allocation for every subject that matches nothing): a
//!   memory detail of nats-server's cache, not something a client can see;
//! - `HasInterest`/`NumInterest` cache-hit counts: beaver has no such calls; their interest
//!   answers are checked here as match results instead;
//! - summing stats across sublists (`SublistStats.add`): done by `account.rs`, not here;
//! - the null-byte/UTF-8 check of `isValidSubject(_, true)`: used by nats-server's file
//!   store only (JetStream), which beaver does not have;
//! - benchmarks, and the internals of nats-server's background cache sweep (the bound it
//!   keeps is checked here on beaver's shared cache).
//!
//! The races of SUB, UNSUB and matching from several threads are in
//! `sublist_race_tests.rs`; the subject rules (valid subjects, literal against wildcard
//! subjects, tokens) in `subject_tests.rs`.

use super::{Sublist, SublistError, SHARED_CACHE_MAX};
use crate::subjects::{subject_matches, MatchCache, MatchResult, Subscriber};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[path = "sublist_race_tests.rs"]
mod races;

/// A subscription for tests: a subject, maybe a queue group, and an id to recognise it by.
#[derive(Debug)]
pub(super) struct TestSub {
    pub(super) subject: Vec<u8>,
    pub(super) queue: Option<Vec<u8>>,
    pub(super) id: u32,
}

impl Subscriber for TestSub {
    fn subject(&self) -> &[u8] {
        &self.subject
    }
    fn queue(&self) -> Option<&[u8]> {
        self.queue.as_deref()
    }
}

/// A plain subscription.
pub(super) fn sub(subject: &str, id: u32) -> Arc<TestSub> {
    Arc::new(TestSub {
        subject: subject.into(),
        queue: None,
        id,
    })
}

/// A queue subscription.
pub(super) fn qsub(subject: &str, queue: &str, id: u32) -> Arc<TestSub> {
    Arc::new(TestSub {
        subject: subject.into(),
        queue: Some(queue.into()),
        id,
    })
}

/// The ids of a result's plain subscriptions.
pub(super) fn plain_ids(r: &MatchResult<TestSub>) -> BTreeSet<u32> {
    r.plain.iter().map(|s| s.id).collect()
}

/// What a match shows a test: the plain subscriptions' ids, and each queue group's members'.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    plain: BTreeSet<u32>,
    groups: BTreeMap<String, BTreeSet<u32>>,
}

impl Seen {
    /// Reads a result for `subject`, checking what must hold of any result: every
    /// subscription in it matches the subject, appears once, and queue members sit in the
    /// group of their own queue name, which appears once.
    fn of(subject: &str, r: &MatchResult<TestSub>) -> Seen {
        let mut seen = Seen::default();
        let matches = |s: &TestSub| subject_matches(subject.as_bytes(), &s.subject);
        for s in &r.plain {
            assert!(
                s.queue.is_none() && matches(s),
                "{s:?} in plain of {subject}"
            );
            assert!(seen.plain.insert(s.id), "{s:?} twice in {subject}");
        }
        for g in &r.groups {
            let name = String::from_utf8(g.name.to_vec()).unwrap();
            assert!(!g.members.is_empty(), "empty group {name} for {subject}");
            let mut members = BTreeSet::new();
            for s in &g.members {
                assert_eq!(s.queue.as_deref(), Some(&*g.name), "{s:?} in group {name}");
                assert!(matches(s), "{s:?} in group {name} of {subject}");
                assert!(members.insert(s.id), "{s:?} twice in {subject}");
            }
            assert!(seen.groups.insert(name, members).is_none(), "group twice");
        }
        seen
    }

    /// Plain subscriptions only; queue groups are added with [`Seen::group`].
    fn plain(ids: impl IntoIterator<Item = u32>) -> Seen {
        Seen {
            plain: ids.into_iter().collect(),
            groups: BTreeMap::new(),
        }
    }

    fn group(mut self, name: &str, ids: impl IntoIterator<Item = u32>) -> Seen {
        self.groups.insert(name.into(), ids.into_iter().collect());
        self
    }

    /// nats-server's "interest" in a subject: plain subscriptions, and queue members in all.
    fn interest(&self) -> (usize, usize) {
        let members = self.groups.values().map(BTreeSet::len).sum();
        (self.plain.len(), members)
    }
}

fn nothing() -> Seen {
    Seen::default()
}

/// How a reader asks the table for a subject's subscriptions.
#[derive(Debug, Clone, Copy)]
enum Way {
    /// `Sublist::matches`: no cache at all.
    Direct,
    /// `Sublist::cached_matches`: the cache shared by every reader.
    Shared,
    /// `MatchCache`: one reader's private cache in front of the shared one.
    Private,
}

/// A reader of the table: a way of asking, and its private cache.
struct Reader {
    way: Way,
    cache: MatchCache<TestSub>,
}

impl Reader {
    fn new(way: Way) -> Reader {
        Reader {
            way,
            cache: MatchCache::new(64),
        }
    }

    /// One lookup, as a publisher's reader makes it.
    fn lookup(&mut self, sl: &Sublist<TestSub>, subject: &str) -> Seen {
        let s = subject.as_bytes();
        match self.way {
            Way::Direct => Seen::of(subject, &sl.matches(s)),
            Way::Shared => Seen::of(subject, &sl.cached_matches(s, sl.generation())),
            Way::Private => Seen::of(subject, self.cache.get(sl).matches(sl, s)),
        }
    }

    /// What `subject` matches while nothing changes: looked up three times, so that every
    /// layer of this way answers once (the private cache admits a subject on its second
    /// miss and answers the third time itself); all must agree.
    fn seen(&mut self, sl: &Sublist<TestSub>, subject: &str) -> Seen {
        let first = self.lookup(sl, subject);
        for _ in 0..2 {
            assert_eq!(self.lookup(sl, subject), first, "{:?} again", self.way);
        }
        first
    }

    /// Asserts what `subject` matches.
    fn check(&mut self, sl: &Sublist<TestSub>, subject: &str, want: Seen) {
        assert_eq!(self.seen(sl, subject), want, "{:?}: {subject}", self.way);
    }
}

/// Runs `test` once for each way of asking, each time with a new reader.
fn each_way(mut test: impl FnMut(&mut Reader)) {
    for way in [Way::Direct, Way::Shared, Way::Private] {
        test(&mut Reader::new(way));
    }
}

#[test]
fn insert_counts_subscriptions() {
    let sl = Sublist::new();
    assert_eq!(sl.count(), 0, "a new table is empty");
    for (i, subject) in ["foo", "bar", "foo.bar"].into_iter().enumerate() {
        sl.insert(sub(subject, i as u32)).unwrap();
    }
    assert_eq!(sl.count(), 3);
    assert_eq!(sl.stats().inserts, 3);
}

#[test]
fn literal_subject_reaches_its_subscription() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("foo", 1)).unwrap();
        r.check(&sl, "foo", Seen::plain([1]));
    });
}

#[test]
fn multi_token_literal_subject_reaches_its_subscription() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("foo.bar.baz", 1)).unwrap();
        r.check(&sl, "foo.bar.baz", Seen::plain([1]));
        // A prefix or an extension of the subject is another subject.
        r.check(&sl, "foo.bar", nothing());
        r.check(&sl, "foo.bar.baz.qux", nothing());
    });
}

#[test]
fn partial_wildcard_token_matches_one_token() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("a.b.c", 1)).unwrap();
        sl.insert(sub("a.*.c", 2)).unwrap();
        r.check(&sl, "a.b.c", Seen::plain([1, 2]));
        r.check(&sl, "a.x.c", Seen::plain([2]));
        // `*` stands for exactly one token, never two or none.
        r.check(&sl, "a.x.y.c", nothing());
        r.check(&sl, "a.c", nothing());
    });
}

#[test]
fn partial_wildcard_as_last_token() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("a.b.c", 1)).unwrap();
        sl.insert(sub("a.b.*", 2)).unwrap();
        r.check(&sl, "a.b.c", Seen::plain([1, 2]));
        r.check(&sl, "a.b.z", Seen::plain([2]));
        r.check(&sl, "a.b", nothing());
        r.check(&sl, "a.b.c.d", nothing());
    });
}

#[test]
fn full_wildcard_matches_every_remaining_token() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("a.b.c", 1)).unwrap();
        sl.insert(sub("a.>", 2)).unwrap();
        r.check(&sl, "a.b.c", Seen::plain([1, 2]));
        r.check(&sl, "a.b", Seen::plain([2]));
        // `>` needs at least one token after `a`.
        r.check(&sl, "a", nothing());
        // Publishing to the wildcard subject itself (allowed outside pedantic mode) reaches
        // the `>` subscription, not the literal one.
        r.check(&sl, "a.>", Seen::plain([2]));
    });
}

#[test]
fn remove_takes_out_only_that_subscription() {
    each_way(|r| {
        let sl = Sublist::new();
        let s = sub("a.b.c.d", 1);
        sl.insert(s.clone()).unwrap();
        assert_eq!(sl.count(), 1);
        r.check(&sl, "a.b.c.d", Seen::plain([1]));
        // A subscription never inserted (here on a prefix subject) is not found.
        assert!(!sl.remove(&sub("a.b.c", 2)));
        assert_eq!(sl.count(), 1);
        r.check(&sl, "a.b.c.d", Seen::plain([1]));
        assert!(sl.remove(&s));
        assert_eq!(sl.count(), 0);
        r.check(&sl, "a.b.c.d", nothing());
        assert_eq!(sl.stats().removes, 1, "only the real removal is counted");
    });
}

#[test]
fn remove_wildcard_subscriptions() {
    each_way(|r| {
        let sl = Sublist::new();
        let (lit, pwc, fwc) = (sub("a.b.c.d", 1), sub("a.b.*.d", 2), sub("a.b.>", 3));
        for s in [&lit, &pwc, &fwc] {
            sl.insert(s.clone()).unwrap();
        }
        assert_eq!(sl.count(), 3);
        r.check(&sl, "a.b.c.d", Seen::plain([1, 2, 3]));
        assert!(sl.remove(&lit));
        assert_eq!(sl.count(), 2);
        r.check(&sl, "a.b.c.d", Seen::plain([2, 3]));
        assert!(sl.remove(&fwc));
        assert_eq!(sl.count(), 1);
        r.check(&sl, "a.b.c.d", Seen::plain([2]));
        assert!(sl.remove(&pwc));
        assert_eq!(sl.count(), 0);
        r.check(&sl, "a.b.c.d", nothing());
    });
}

/// nats-server counts the levels left in its trie; beaver keeps literal subjects out of the
/// trie, in a map whose entry must go with its last subscription.
#[test]
fn remove_leaves_no_empty_literal_entry() {
    let sl = Sublist::new();
    let s = sub("a.b.c.d.e.f", 1);
    sl.insert(s.clone()).unwrap();
    assert_eq!(sl.literal.len(), 1);
    assert_eq!(
        sl.trie_node_count(),
        1,
        "a literal subject needs no trie node"
    );
    assert!(sl.remove(&s));
    assert!(sl.literal.is_empty());
    assert_eq!(sl.trie_node_count(), 1);
}

#[test]
fn remove_prunes_the_wildcard_trie() {
    let sl = Sublist::new();
    let s = sub("a.b.*.d.e.>", 1);
    sl.insert(s.clone()).unwrap();
    assert_eq!(
        sl.trie_node_count(),
        1 + 6,
        "the root and one node per token"
    );
    assert!(sl.remove(&s));
    assert_eq!(sl.trie_node_count(), 1, "only the root is left");
    assert!(sl.literal.is_empty());
}

#[test]
fn remove_among_many_subscriptions_on_one_subject() {
    each_way(|r| {
        let sl = Sublist::new();
        // Twice the count above which nats-server keeps an extra list of a subject's
        // subscriptions, which its removals must keep in step.
        let n = 512;
        for id in 0..n {
            sl.insert(sub("foo", id)).unwrap();
        }
        let all = sl.matches(b"foo").plain;
        assert_eq!(all.len(), n as usize);
        // One from the middle, the first and the last of the result.
        let gone = [&all[n as usize / 2], &all[0], &all[n as usize - 1]];
        for s in gone {
            assert!(sl.remove(s));
        }
        let left = r.seen(&sl, "foo");
        assert_eq!(left.plain.len(), n as usize - 3);
        for s in gone {
            assert!(!left.plain.contains(&s.id), "{} was removed", s.id);
        }
    });
}

#[test]
fn invalid_subjects_are_refused_on_insert() {
    let sl = Sublist::new();
    let before = sl.generation();
    for bad in [".foo", "foo.", "foo..bar", "foo.bar..baz", "foo.>.bar"] {
        assert_eq!(
            sl.insert(sub(bad, 1)),
            Err(SublistError::InvalidSubject),
            "{bad}"
        );
    }
    assert_eq!(sl.count(), 0);
    assert_eq!(sl.stats().inserts, 0);
    assert_eq!(
        sl.generation(),
        before,
        "a refused SUB invalidates no cache"
    );
}

#[test]
fn invalid_subjects_are_not_found_on_remove() {
    let sl = Sublist::new();
    let bad = sub("a.b..d", 1);
    assert_eq!(sl.insert(bad.clone()), Err(SublistError::InvalidSubject));
    let before = sl.generation();
    assert!(!sl.remove(&bad));
    assert!(!sl.remove(&sub("a.>.b", 2)));
    assert_eq!(sl.remove_many([&bad]), 0);
    assert_eq!(sl.generation(), before);
    assert_eq!(sl.stats().removes, 0);
}

/// nats-server's batch removal reports an error for a subscription it did not find but
/// still removes the others; beaver's returns how many it found.
#[test]
fn remove_many_removes_those_present() {
    each_way(|r| {
        let sl = Sublist::new();
        let (foo, bar, baz) = (sub("foo", 1), sub("bar", 2), sub("baz", 3));
        for s in [&foo, &bar, &baz] {
            sl.insert(s.clone()).unwrap();
        }
        let absent = sub("not.inserted", 4);
        assert_eq!(sl.remove_many([&absent, &foo, &baz]), 2);
        assert_eq!(sl.count(), 1);
        r.check(&sl, "bar", Seen::plain([2]));
        r.check(&sl, "foo", nothing());
        r.check(&sl, "baz", nothing());
    });
}

#[test]
fn cached_results_follow_inserts_and_removes() {
    each_way(|r| {
        let sl = Sublist::new();
        let (lit, pwc, fwc) = (sub("a.b.c.d", 1), sub("a.b.*.d", 2), sub("a.b.>", 3));
        sl.insert(lit.clone()).unwrap();
        r.check(&sl, "a.b.c.d", Seen::plain([1]));
        // Every change moves the generation on, so a result cached before it is not used.
        let g = sl.generation();
        sl.insert(pwc.clone()).unwrap();
        sl.insert(fwc.clone()).unwrap();
        assert_eq!(sl.generation(), g + 2);
        r.check(&sl, "a.b.c.d", Seen::plain([1, 2, 3]));
        assert!(sl.remove(&lit));
        r.check(&sl, "a.b.c.d", Seen::plain([2, 3]));
        assert!(sl.remove(&fwc));
        r.check(&sl, "a.b.c.d", Seen::plain([2]));
        assert!(sl.remove(&pwc));
        assert_eq!(sl.count(), 0);
        assert_eq!(
            sl.stats().cache_entries,
            0,
            "no current entries after removals"
        );
        r.check(&sl, "a.b.c.d", nothing());

        // A new wildcard subscription shows in results cached for literal subjects.
        let sl = Sublist::new();
        sl.insert(sub("foo.*", 4)).unwrap();
        sl.insert(sub("foo.bar", 5)).unwrap();
        r.check(&sl, "foo.baz", Seen::plain([4]));
        r.check(&sl, "foo.bar", Seen::plain([4, 5]));
        sl.insert(sub("foo.>", 6)).unwrap();
        r.check(&sl, "foo.bar", Seen::plain([4, 5, 6]));
        r.check(&sl, "foo.baz", Seen::plain([4, 6]));
    });
}

#[test]
fn shared_cache_is_bounded() {
    let sl: Sublist<TestSub> = Sublist::new();
    let g = sl.generation();
    for i in 0..2 * SHARED_CACHE_MAX {
        drop(sl.cached_matches(format!("foo-{i}").as_bytes(), g));
    }
    assert!(sl.cache.len() <= SHARED_CACHE_MAX);
    assert!(sl.stats().cache_entries <= SHARED_CACHE_MAX);
}

#[test]
fn queue_groups_and_their_members() {
    each_way(|r| {
        let sl = Sublist::new();
        let plain = sub("foo", 0);
        let (bar1, baz1) = (qsub("foo", "bar", 1), qsub("foo", "baz", 2));
        let (bar2, baz2) = (qsub("foo", "bar", 3), qsub("foo", "baz", 4));

        sl.insert(bar1.clone()).unwrap();
        r.check(&sl, "foo", nothing().group("bar", [1]));
        sl.insert(baz1.clone()).unwrap();
        r.check(&sl, "foo", nothing().group("bar", [1]).group("baz", [2]));
        // A plain subscription on the same subject gets its own copy beside the groups.
        sl.insert(plain.clone()).unwrap();
        let all_firsts = Seen::plain([0]).group("bar", [1]).group("baz", [2]);
        r.check(&sl, "foo", all_firsts);
        sl.insert(bar2.clone()).unwrap();
        sl.insert(baz2.clone()).unwrap();
        let full = Seen::plain([0]).group("bar", [1, 3]).group("baz", [2, 4]);
        r.check(&sl, "foo", full);

        assert!(sl.remove(&plain));
        let groups = nothing().group("bar", [1, 3]).group("baz", [2, 4]);
        r.check(&sl, "foo", groups);
        assert!(sl.remove(&bar1));
        r.check(&sl, "foo", nothing().group("bar", [3]).group("baz", [2, 4]));
        // The group's last member leaves: the group is gone from results.
        assert!(sl.remove(&bar2));
        r.check(&sl, "foo", nothing().group("baz", [2, 4]));
        assert!(sl.remove(&baz1));
        assert!(sl.remove(&baz2));
        r.check(&sl, "foo", nothing());
        assert_eq!(sl.count(), 0);
    });
}

#[test]
fn single_token_subscription_does_not_match_two_tokens() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("foo", 1)).unwrap();
        r.check(&sl, "foo", Seen::plain([1]));
        r.check(&sl, "foo.bar", nothing());
    });
}

/// `*-` and `>-` contain wildcard characters but are not wildcard tokens: they match only
/// themselves.
#[test]
fn tokens_containing_wildcard_characters_are_literal_on_insert() {
    each_way(|r| {
        let sl = Sublist::new();
        for (id, subject) in [(1, "foo.*-"), (2, "foo.>-")] {
            sl.insert(sub(subject, id)).unwrap();
            r.check(&sl, "foo.bar", nothing());
            r.check(&sl, subject, Seen::plain([id]));
        }
        assert_eq!(sl.trie_node_count(), 1, "kept with the literal subjects");
    });
}

#[test]
fn tokens_containing_wildcard_characters_are_literal_on_remove() {
    let sl = Sublist::new();
    for (id, subject) in [(1, "foo.*-"), (2, "foo.>-")] {
        let s = sub(subject, id);
        sl.insert(s.clone()).unwrap();
        assert!(!sl.remove(&sub("foo.bar", 9)), "foo.bar is another subject");
        assert_eq!(sl.count(), 1);
        assert!(sl.remove(&s));
        assert_eq!(sl.count(), 0);
    }
}

#[test]
fn published_subject_with_empty_tokens_matches_nothing() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub(">", 1)).unwrap();
        sl.insert(qsub(">", "queue", 2)).unwrap();
        for subject in [
            ".foo",
            "..foo",
            "foo..",
            "foo.",
            "foo..bar",
            "foo...bar",
            "",
        ] {
            r.check(&sl, subject, nothing());
        }
        r.check(&sl, "foo.bar", Seen::plain([1]).group("queue", [2]));
    });
}

#[test]
fn lookups_without_the_shared_cache_add_no_entries() {
    let sl = Sublist::new();
    for (id, subject) in [(1, "foo"), (2, "bar"), (3, "baz"), (4, "foo.bar.baz")] {
        sl.insert(sub(subject, id)).unwrap();
    }
    let mut scratch = MatchResult::default();
    sl.matches_into(b"a.b.c", &mut scratch);
    assert!(scratch.is_empty());
    sl.matches_into(b"bar", &mut scratch);
    assert_eq!(plain_ids(&scratch), [2].into());
    let st = sl.stats();
    assert_eq!((st.cache_entries, st.matches, st.cache_hits), (0, 2, 0));
}

#[test]
fn shared_cache_hits_are_counted() {
    for subject in ["foo", "bar"] {
        let sl = Sublist::new();
        sl.insert(sub(subject, 1)).unwrap();
        let g = sl.generation();
        for _ in 0..4 {
            assert_eq!(
                plain_ids(&sl.cached_matches(subject.as_bytes(), g)),
                [1].into()
            );
        }
        // The first lookup computes the result, the three after it find it cached.
        let st = sl.stats();
        assert_eq!((st.matches, st.cache_hits, st.cache_entries), (4, 3, 1));
    }
}

#[test]
fn for_each_visits_every_subscription() {
    let sl = Sublist::new();
    let subjects = ["foo.bar.baz", "foo", "baz", "foo.*", "q.>"];
    for (id, subject) in subjects.into_iter().enumerate() {
        sl.insert(sub(subject, id as u32)).unwrap();
    }
    sl.insert(qsub("foo", "workers", 9)).unwrap();
    let mut seen = BTreeSet::new();
    sl.for_each(|s| assert!(seen.insert(s.id), "visited twice"));
    assert_eq!(seen, [0, 1, 2, 3, 4, 9].into());
}

/// nats-server's `HasInterest` and `NumInterest` answers, read off match results: for each
/// shape of subscription, plain and in queue groups, the subjects that reach it.
#[test]
fn interest_follows_subscription_shapes() {
    // (subscription subject, published subject, whether it reaches the subscription)
    let shapes: &[(&str, &[(&str, bool)])] = &[
        ("foo", &[("foo", true), ("foo.bar", false)]),
        (
            "foo.*",
            &[("foo", false), ("foo.bar", true), ("foo.bar.baz", false)],
        ),
        (
            "foo.>",
            &[("foo", false), ("foo.bar", true), ("foo.bar.baz", true)],
        ),
        (
            "*.>",
            &[("foo", false), ("foo.bar", true), ("foo.bar.baz", true)],
        ),
        (
            "*.bar",
            &[("foo", false), ("foo.bar", true), ("foo.baz", false)],
        ),
        ("*", &[("foo", true), ("foo.bar", false)]),
    ];
    each_way(|r| {
        let sl = Sublist::new();
        for &(subject, cases) in shapes {
            let s = sub(subject, 1);
            sl.insert(s.clone()).unwrap();
            for &(published, hit) in cases {
                let want = (usize::from(hit), 0);
                assert_eq!(
                    r.seen(&sl, published).interest(),
                    want,
                    "{subject} {published}"
                );
            }
            assert!(sl.remove(&s));
            // Queue members of two groups, one of them with two members.
            let q = [
                qsub(subject, "bar", 1),
                qsub(subject, "baz", 2),
                qsub(subject, "baz", 3),
            ];
            for (i, m) in q.iter().enumerate() {
                sl.insert(m.clone()).unwrap();
                for &(published, hit) in cases {
                    let want = (0, if hit { i + 1 } else { 0 });
                    assert_eq!(
                        r.seen(&sl, published).interest(),
                        want,
                        "{subject} {published}"
                    );
                }
            }
            for (i, m) in q.iter().enumerate() {
                assert!(sl.remove(m));
                for &(published, hit) in cases {
                    let want = (0, if hit { 2 - i } else { 0 });
                    assert_eq!(
                        r.seen(&sl, published).interest(),
                        want,
                        "{subject} {published}"
                    );
                }
            }
            assert_eq!(sl.count(), 0);
        }
    });
}

/// A literal subscription below a `*` one: each subject reaches exactly its own.
#[test]
fn overlapping_literal_and_wildcard_interest() {
    each_way(|r| {
        let sl = Sublist::new();
        sl.insert(sub("stream.A.child", 1)).unwrap();
        sl.insert(sub("stream.*", 2)).unwrap();
        r.check(&sl, "stream.A.child", Seen::plain([1]));
        r.check(&sl, "stream.A", Seen::plain([2]));
    });
}
