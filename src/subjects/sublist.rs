//! The subscription table: which subscriptions does a published subject reach?
//!
//! Two indexes, chosen by the shape of the subscription's subject:
//! - **literal subjects** (no `*`/`>` token, by far the common case) live in a `DashMap` keyed by
//!   the subject. A lookup hashes the subject once and read-locks one shard, so matching a
//!   literal subject never scans other subscriptions, and SUB/UNSUB on different subjects
//!   rarely contend;
//! - **wildcard subjects** live in a token [`Trie`] behind one `parking_lot::RwLock`. Matching
//!   read-locks it; it is skipped entirely while no wildcard subscription exists.
//!
//! Every insert and remove bumps a **generation** counter *after* the change. Readers cache
//! match results ([`super::MatchCache`]) tagged with the generation they read *before*
//! matching, so a cached result is used only while no SUB/UNSUB has happened since. This is
//! nats-server's `genid` scheme for its per-client L1 cache.

use super::subs::{MatchResult, Subs, Subscriber};
use super::trie::Trie;
use super::{has_wildcard, is_matchable_publish_subject, is_valid_subscription_subject};
use crossbeam_utils::CachePadded;
use dashmap::DashMap;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Errors from [`Sublist::insert`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SublistError {
    /// The subject has an empty token or a `>` that is not last: nats-server answers such a
    /// `SUB` with `-ERR 'Invalid Subject'`.
    InvalidSubject,
}

/// The subscription table (see the module docs). Shared by every reader thread.
///
/// ```
/// use beaver::subjects::{Sublist, Subscriber};
/// use std::sync::Arc;
///
/// /// A subscription as the table sees it: a subject and maybe a queue group.
/// struct Sub(&'static str, Option<&'static str>);
///
/// impl Subscriber for Sub {
///     fn subject(&self) -> &[u8] {
///         self.0.as_bytes()
///     }
///     fn queue(&self) -> Option<&[u8]> {
///         self.1.map(str::as_bytes)
///     }
/// }
///
/// let table = Sublist::new();
/// let literal = Arc::new(Sub("orders.eu.new", None));
/// table.insert(literal.clone()).unwrap();
/// table.insert(Arc::new(Sub("orders.*.new", None))).unwrap();
/// table.insert(Arc::new(Sub("orders.>", Some("workers")))).unwrap();
/// table.insert(Arc::new(Sub("orders.>", Some("workers")))).unwrap();
/// assert!(table.insert(Arc::new(Sub("orders..new", None))).is_err(), "empty token");
///
/// let result = table.matches(b"orders.eu.new");
/// assert_eq!(result.plain.len(), 2, "the literal and the `*` subscription");
/// assert_eq!(result.groups.len(), 1, "one queue group...");
/// assert_eq!(result.groups[0].members.len(), 2, "...whose two members both match");
///
/// assert!(table.remove(&literal));
/// assert_eq!(table.matches(b"orders.eu.new").plain.len(), 1);
/// assert!(table.matches(b"orders").is_empty(), "`>` needs at least one more token");
/// ```
pub struct Sublist<S> {
    literal: DashMap<Box<[u8]>, Subs<S>>,
    wildcard: RwLock<Trie<S>>,
    /// Number of wildcard subscriptions; matching skips the trie (and its lock) while zero.
    wildcard_count: AtomicUsize,
    /// Total number of subscriptions.
    count: AtomicUsize,
    /// Bumped after every change; see the module docs.
    generation: AtomicU64,
    /// Match results shared by all readers, tagged with the generation they were computed
    /// for (see [`Sublist::cached_matches`]).
    cache: DashMap<Box<[u8]>, CachedMatch<S>>,
    /// Counters for monitoring (`/subsz`). On a cache line of their own: `generation`, next
    /// to `count`, is loaded by every reader for every message, and a counter bumped on a
    /// match must not invalidate that line in the other readers' caches.
    counters: CachePadded<Counters>,
}

/// The sublist's monitoring counters (nats-server's `inserts`, `removes`, `matches`,
/// `cacheHits`). Relaxed atomics: statistics, read on request, publishing nothing.
#[derive(Default)]
struct Counters {
    inserts: AtomicU64,
    removes: AtomicU64,
    matches: AtomicU64,
    cache_hits: AtomicU64,
}

/// The sublist's statistics, as `/subsz` shows them (nats-server's `SublistStats`).
///
/// A *match* is a lookup that reached this shared table: a reader's private cache missed
/// (see [`super::MatchCache`]) and the reader asked the table, either straight
/// ([`Sublist::matches_into`], a subject seen once) or through the shared cache
/// ([`Sublist::cached_matches`]). Lookups answered by a reader's private cache are not
/// counted: counting them would put a shared atomic on every message. nats-server counts
/// the same thing, for the same reason: its per-client caches are not counted either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SublistStats {
    /// Subscriptions in the table.
    pub subscriptions: usize,
    /// Subjects in the shared match cache with a result for the current generation.
    pub cache_entries: usize,
    /// Subscriptions ever inserted.
    pub inserts: u64,
    /// Subscriptions ever removed.
    pub removes: u64,
    /// Lookups that reached the table (see above).
    pub matches: u64,
    /// Of those, the ones answered by the shared cache.
    pub cache_hits: u64,
    /// Largest fan-out among the current cache entries: plain subscriptions plus queue
    /// groups (a group counts once, as in nats-server).
    pub max_fanout: usize,
    /// Sum of the fan-outs of the current cache entries.
    pub total_fanout: usize,
}

/// A shared cache entry: the generation it was computed for, and the result.
type CachedMatch<S> = (u64, Arc<MatchResult<S>>);

/// Most subjects kept in the shared match cache.
pub const SHARED_CACHE_MAX: usize = 64 * 1024;

impl<S> Default for Sublist<S> {
    fn default() -> Self {
        Sublist {
            literal: DashMap::new(),
            wildcard: RwLock::new(Trie::default()),
            wildcard_count: AtomicUsize::new(0),
            count: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            cache: DashMap::new(),
            counters: CachePadded::new(Counters::default()),
        }
    }
}

impl<S: Subscriber> Sublist<S> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current generation. Read it *before* matching and tag the cached result with it.
    ///
    /// Acquire pairs with the Release increment in `bump`: a reader that sees
    /// generation `g` also sees every table change made before `g` was published.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn bump(&self) {
        // Release: publishes the change just made to whoever Acquire-loads the new value.
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Adds a subscription. Errors if its subject is not a valid subscription subject.
    pub fn insert(&self, sub: Arc<S>) -> Result<(), SublistError> {
        let subject = sub.subject();
        if !is_valid_subscription_subject(subject) {
            return Err(SublistError::InvalidSubject);
        }
        if has_wildcard(subject) {
            let subject: Box<[u8]> = subject.into();
            let queue: Option<Box<[u8]>> = sub.queue().map(Into::into);
            self.wildcard
                .write()
                .insert(&subject, queue.as_deref(), sub);
            // Relaxed: the generation bump below publishes it.
            self.wildcard_count.fetch_add(1, Ordering::Relaxed);
        } else {
            let queue: Option<Box<[u8]>> = sub.queue().map(Into::into);
            // `entry` write-locks one shard for the insert only.
            self.literal
                .entry(subject.into())
                .or_default()
                .add(queue.as_deref(), sub);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.counters.inserts.fetch_add(1, Ordering::Relaxed);
        self.bump();
        Ok(())
    }

    /// Removes a subscription (by identity). Returns whether it was present.
    pub fn remove(&self, sub: &Arc<S>) -> bool {
        let removed = self.remove_one(sub);
        if removed {
            self.bump_after_removal();
        }
        removed
    }

    /// Removes many subscriptions (a closing connection's) with one generation bump, so
    /// readers' caches are invalidated once rather than once per subscription. Returns how
    /// many were present.
    pub fn remove_many<'a>(&self, subs: impl IntoIterator<Item = &'a Arc<S>>) -> usize
    where
        S: 'a,
    {
        let removed = subs.into_iter().filter(|s| self.remove_one(s)).count();
        if removed > 0 {
            self.bump_after_removal();
        }
        removed
    }

    /// After a removal: bumps the generation, then empties the shared cache. Every entry is
    /// stale from the bump on (a reader recomputes it at its next lookup), and the stale
    /// ones may hold the subscriptions just removed, and with them departed connections and
    /// their buffers, until the same subject is looked up again. (An entry a reader inserts
    /// for the old generation after this clear is removed by that reader: see
    /// `cached_matches`.)
    fn bump_after_removal(&self) {
        self.bump();
        self.cache.clear();
    }

    fn remove_one(&self, sub: &Arc<S>) -> bool {
        let subject = sub.subject();
        let queue = sub.queue();
        let removed = if has_wildcard(subject) {
            let removed = self.wildcard.write().remove(subject, queue, sub);
            if removed {
                self.wildcard_count.fetch_sub(1, Ordering::Relaxed);
            }
            removed
        } else {
            let mut removed = false;
            // Remove the sub, and the subject's entry with it if that was the last one; both
            // under the shard's write lock, so no other SUB can slip in between.
            self.literal.remove_if_mut(subject, |_, subs| {
                removed = subs.remove(queue, sub);
                subs.is_empty()
            });
            removed
        };
        if removed {
            self.count.fetch_sub(1, Ordering::Relaxed);
            self.counters.removes.fetch_add(1, Ordering::Relaxed);
        }
        removed
    }

    /// Every subscription matching the published subject `subject`, in nats-server's order
    /// (see the trie module).
    ///
    /// A subject that is empty or has an empty token matches nothing, as in nats-server.
    pub fn matches(&self, subject: &[u8]) -> MatchResult<S> {
        let mut result = MatchResult::default();
        self.matches_into(subject, &mut result);
        result
    }

    /// Like [`Sublist::matches`], into `result` (cleared first), reusing its vectors' capacity.
    ///
    /// Counts one match for monitoring (see [`SublistStats`]). Readers call this only when
    /// their private cache missed, so the count is off the per-message path.
    pub fn matches_into(&self, subject: &[u8], result: &mut MatchResult<S>) {
        self.counters.matches.fetch_add(1, Ordering::Relaxed);
        self.match_uncounted(subject, result);
    }

    /// The matching itself, not counted (for monitoring's own lookups).
    fn match_uncounted(&self, subject: &[u8], result: &mut MatchResult<S>) {
        result.clear();
        if !is_matchable_publish_subject(subject) {
            return;
        }
        let mut literal = |r: &mut MatchResult<S>| {
            if let Some(subs) = self.literal.get(subject) {
                subs.add_to(r);
            }
        };
        // Relaxed is enough: if this races with the first wildcard SUB, the caller's
        // generation tag (read before this call) is already stale and the result is
        // recomputed on the next message.
        if self.wildcard_count.load(Ordering::Relaxed) > 0 {
            self.wildcard.read().collect(subject, result, &mut literal);
        } else {
            literal(result);
        }
    }

    /// The shared, cached result for `subject`, valid for `generation` (read before calling).
    ///
    /// Results are shared between reader threads through this cache (an `Arc` each), so a
    /// result with thousands of subscriptions exists once, however many publishers use it.
    /// An entry computed for an older generation is recomputed. The cache holds at most
    /// `SHARED_CACHE_MAX` subjects; past that it is cleared (stale entries for subjects no
    /// longer published go with it).
    pub fn cached_matches(&self, subject: &[u8], generation: u64) -> Arc<MatchResult<S>> {
        if let Some(entry) = self.cache.get(subject) {
            if entry.0 == generation {
                self.counters.matches.fetch_add(1, Ordering::Relaxed);
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                return entry.1.clone();
            }
        }
        // Counted as a match (a miss of the shared cache) by `matches`.
        let result = Arc::new(self.matches(subject));
        if self.cache.len() >= SHARED_CACHE_MAX {
            self.cache.clear();
        }
        self.cache
            .insert(subject.into(), (generation, result.clone()));
        // A removal since `generation` was read may have cleared the cache before this
        // insert: then this entry is stale already and may hold what was removed. Take it
        // out again. (The shard lock orders the clear, hence the bump before it, before
        // this insert, so the Acquire load below sees that bump.)
        if self.generation() != generation {
            self.cache.remove_if(subject, |_, (g, _)| *g == generation);
        }
        result
    }

    /// Number of subscriptions in the table.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Calls `f` on every subscription (for monitoring; takes the locks shard by shard).
    pub fn for_each(&self, mut f: impl FnMut(&Arc<S>)) {
        for entry in self.literal.iter() {
            entry.value().for_each(&mut f);
        }
        self.wildcard.read().for_each(f);
    }

    /// The statistics `/subsz` shows (see [`SublistStats`]). Walks the shared cache, one
    /// shard read lock at a time; meant for monitoring requests, not for the hot path.
    pub fn stats(&self) -> SublistStats {
        let generation = self.generation();
        let mut st = SublistStats {
            subscriptions: self.count(),
            inserts: self.counters.inserts.load(Ordering::Relaxed),
            removes: self.counters.removes.load(Ordering::Relaxed),
            matches: self.counters.matches.load(Ordering::Relaxed),
            cache_hits: self.counters.cache_hits.load(Ordering::Relaxed),
            ..SublistStats::default()
        };
        for entry in self.cache.iter() {
            let (tag, result) = entry.value();
            // Entries of older generations are stale: they would be recomputed on use.
            if *tag != generation {
                continue;
            }
            let fanout = result.plain.len() + result.groups.len();
            st.cache_entries += 1;
            st.total_fanout += fanout;
            st.max_fanout = st.max_fanout.max(fanout);
        }
        st
    }

    /// Number of live trie nodes (root included); 1 when no wildcard subscription exists.
    pub fn trie_node_count(&self) -> usize {
        self.wildcard.read().node_count()
    }
}

/// The behaviours nats-server's own sublist tests check, and the test subscription type.
#[cfg(test)]
#[path = "sublist_tests.rs"]
mod reference_tests;

#[cfg(test)]
mod tests {
    use super::reference_tests::{plain_ids, qsub, sub, TestSub};
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn literal_and_wildcards() {
        let sl = Sublist::new();
        let subs = [
            sub("foo.bar", 1),
            sub("foo.*", 2),
            sub("foo.>", 3),
            sub(">", 4),
            sub("*.bar", 5),
            sub("*.*", 6),
            sub("foo", 7),
            sub("foo.bar.baz", 8),
            sub("*.bar.>", 9),
            sub("foo*.bar", 10),
        ];
        for s in &subs {
            sl.insert(s.clone()).unwrap();
        }
        let cases: &[(&str, &[u32])] = &[
            ("foo.bar", &[1, 2, 3, 4, 5, 6]),
            ("foo", &[4, 7]),
            ("foo.bar.baz", &[3, 4, 8, 9]),
            ("foo.baz", &[2, 3, 4, 6]),
            ("bar.bar", &[4, 5, 6]),
            ("foo*.bar", &[4, 5, 6, 10]),
            ("x.bar.y.z", &[4, 9]),
            // Publishing to a wildcard subject (allowed without pedantic) matches the
            // wildcard tokens literally against the trie's wildcard slots.
            ("foo.*", &[2, 3, 4, 6]),
            ("foo..bar", &[]),
            ("foo.", &[]),
            ("", &[]),
        ];
        for (subject, want) in cases {
            let got = plain_ids(&sl.matches(subject.as_bytes()));
            assert_eq!(got, want.iter().copied().collect(), "subject {subject}");
        }
        assert_eq!(sl.count(), subs.len());
    }

    fn ids(subs: &[Arc<TestSub>]) -> Vec<u32> {
        subs.iter().map(|s| s.id).collect()
    }

    #[test]
    fn order_follows_nats_server() {
        // Orders observed from nats-server 2.9.10 for subscriptions on different trie nodes
        // (one connection, one subscription per subject): at each level `>` first, then
        // what is below `*`, then the literal path; at the end the literal subject before
        // the last `*`.
        let sl = Sublist::new();
        for (subject, id) in [("foo", 1), ("f*", 2), ("*", 3), (">", 4)] {
            sl.insert(sub(subject, id)).unwrap();
        }
        assert_eq!(ids(&sl.matches(b"foo").plain), [4, 1, 3]);
        let sl = Sublist::new();
        sl.insert(sub("r.*", 1)).unwrap();
        sl.insert(sub("r.x", 2)).unwrap();
        assert_eq!(ids(&sl.matches(b"r.x").plain), [2, 1]);
        let sl = Sublist::new();
        for (subject, id) in [
            ("foo.*", 1),
            ("foo.>", 2),
            (">", 3),
            ("foo.bar", 4),
            ("*.bar", 5),
        ] {
            sl.insert(sub(subject, id)).unwrap();
        }
        assert_eq!(ids(&sl.matches(b"foo.bar").plain), [3, 5, 2, 4, 1]);
    }

    #[test]
    fn remove_many_bumps_once() {
        let sl = Sublist::new();
        let subs: Vec<_> = (0..1000).map(|i| sub("many", i)).collect();
        for s in &subs {
            sl.insert(s.clone()).unwrap();
        }
        let g = sl.generation();
        assert_eq!(sl.remove_many(subs.iter()), 1000);
        assert_eq!(sl.generation(), g + 1);
        assert_eq!(sl.count(), 0);
    }

    /// A removed subscription is not kept alive by the shared cache (it held, through each
    /// subscription, a departed connection and its buffers until the subject was looked up
    /// again).
    #[test]
    fn removal_releases_what_the_shared_cache_held() {
        let sl = Sublist::new();
        let a = sub("gone", 1);
        let b = sub("gone.*", 2);
        sl.insert(a.clone()).unwrap();
        sl.insert(b.clone()).unwrap();
        let g = sl.generation();
        drop(sl.cached_matches(b"gone", g));
        drop(sl.cached_matches(b"gone.x", g));
        assert_eq!(Arc::strong_count(&a), 3, "the table and the cache hold it");
        sl.remove(&a);
        sl.remove_many([&b]);
        assert_eq!(
            Arc::strong_count(&a),
            1,
            "nothing else holds it after removal"
        );
        assert_eq!(Arc::strong_count(&b), 1);
    }

    #[test]
    fn shared_cache_is_shared_and_follows_generation() {
        let sl = Sublist::new();
        sl.insert(sub("c", 1)).unwrap();
        let g = sl.generation();
        let a = sl.cached_matches(b"c", g);
        let b = sl.cached_matches(b"c", g);
        assert!(Arc::ptr_eq(&a, &b), "one result for everyone");
        sl.insert(sub("c", 2)).unwrap();
        let c = sl.cached_matches(b"c", sl.generation());
        assert_eq!(c.plain.len(), 2, "recomputed for the new generation");
    }

    #[test]
    fn monitoring_counters() {
        let sl = Sublist::new();
        let a = sub("s.a", 1);
        let b = sub("s.*", 2);
        let q = qsub("s.a", "q", 3);
        for s in [&a, &b, &q] {
            sl.insert(s.clone()).unwrap();
        }
        let mut scratch = MatchResult::default();
        sl.matches_into(b"s.a", &mut scratch); // a lookup of a subject seen once
        let g = sl.generation();
        sl.cached_matches(b"s.a", g); // shared-cache miss
        sl.cached_matches(b"s.a", g); // hit
        sl.cached_matches(b"s.b", g); // miss
        let st = sl.stats();
        assert_eq!(
            st,
            SublistStats {
                subscriptions: 3,
                cache_entries: 2,
                inserts: 3,
                removes: 0,
                matches: 4,
                cache_hits: 1,
                // s.a: two plain subscriptions and one queue group; s.b: one.
                max_fanout: 3,
                total_fanout: 4,
            }
        );
        sl.remove_many([&a, &q]);
        let st = sl.stats();
        assert_eq!((st.subscriptions, st.inserts, st.removes), (1, 3, 2));
        assert_eq!(
            st.cache_entries, 0,
            "entries of older generations are stale"
        );
    }

    #[test]
    fn full_wildcard_needs_a_token() {
        let sl = Sublist::new();
        sl.insert(sub("foo.>", 1)).unwrap();
        assert!(sl.matches(b"foo").is_empty());
        assert_eq!(plain_ids(&sl.matches(b"foo.a.b.c")), [1].into());
    }

    #[test]
    fn invalid_subjects_are_refused() {
        let sl = Sublist::new();
        for bad in ["", "foo..bar", "foo.", ".foo", "foo.>.bar", ">.>"] {
            assert_eq!(
                sl.insert(sub(bad, 1)),
                Err(SublistError::InvalidSubject),
                "{bad}"
            );
        }
        assert_eq!(sl.count(), 0);
    }

    #[test]
    fn queue_groups_merge_across_indexes() {
        let sl = Sublist::new();
        sl.insert(qsub("foo.bar", "q", 1)).unwrap();
        sl.insert(qsub("foo.*", "q", 2)).unwrap();
        sl.insert(qsub("foo.bar", "r", 3)).unwrap();
        sl.insert(sub("foo.bar", 4)).unwrap();
        let r = sl.matches(b"foo.bar");
        assert_eq!(plain_ids(&r), [4].into());
        let mut groups: Vec<(String, BTreeSet<u32>)> = r
            .groups
            .iter()
            .map(|g| {
                (
                    String::from_utf8(g.name.to_vec()).unwrap(),
                    g.members.iter().map(|s| s.id).collect(),
                )
            })
            .collect();
        groups.sort();
        assert_eq!(
            groups,
            vec![("q".into(), [1, 2].into()), ("r".into(), [3].into())]
        );
    }

    #[test]
    fn remove_prunes_and_bumps_generation() {
        let sl = Sublist::new();
        let a = sub("a.b.c.*.e", 1);
        let b = sub("a.b.>", 2);
        let c = sub("a.b", 3);
        let g0 = sl.generation();
        for s in [&a, &b, &c] {
            sl.insert(s.clone()).unwrap();
        }
        assert!(sl.generation() > g0);
        assert!(sl.trie_node_count() > 1);
        let g1 = sl.generation();
        assert!(sl.remove(&a));
        assert!(!sl.remove(&a), "second remove finds nothing");
        assert!(sl.generation() > g1);
        assert!(sl.remove(&b));
        assert_eq!(
            sl.trie_node_count(),
            1,
            "the trie is pruned back to its root"
        );
        assert!(sl.remove(&c));
        assert_eq!(sl.count(), 0);
        assert!(sl.literal.is_empty(), "empty literal entries are removed");
        // Removing one of two identical-looking subscriptions removes exactly that one.
        let x = sub("x", 1);
        let y = sub("x", 2);
        sl.insert(x.clone()).unwrap();
        sl.insert(y.clone()).unwrap();
        assert!(sl.remove(&x));
        assert_eq!(plain_ids(&sl.matches(b"x")), [2].into());
    }

    #[test]
    fn deep_subjects_do_not_recurse() {
        // ~2,000 tokens: the most a 4 KiB control line can carry. Runs on a small stack to
        // prove insert, match and remove are iterative.
        let handle = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| {
                let sl = Sublist::new();
                let deep_wild = vec!["*"; 2000].join(".");
                let deep_lit = vec!["a"; 2000].join(".");
                let s = sub(&deep_wild, 1);
                sl.insert(s.clone()).unwrap();
                assert_eq!(plain_ids(&sl.matches(deep_lit.as_bytes())), [1].into());
                assert!(sl.remove(&s));
                assert_eq!(sl.trie_node_count(), 1);
            })
            .unwrap();
        handle.join().unwrap();
    }

    #[test]
    fn concurrent_sub_unsub_and_match() {
        // Writers churn subscriptions while readers match; a stable subscription must be seen
        // by every match, and the table must end empty of the churned ones.
        let sl = Arc::new(Sublist::new());
        let stable = sub("churn.stable", 0);
        sl.insert(stable.clone()).unwrap();
        let mut handles = Vec::new();
        for t in 0..4u32 {
            let sl = sl.clone();
            handles.push(std::thread::spawn(move || {
                for i in 0..2_000u32 {
                    let subject = if i % 2 == 0 {
                        "churn.*"
                    } else {
                        "churn.stable"
                    };
                    let s = sub(subject, 1 + t * 10_000 + i);
                    sl.insert(s.clone()).unwrap();
                    assert!(sl.remove(&s));
                }
            }));
        }
        for _ in 0..2 {
            let sl = sl.clone();
            handles.push(std::thread::spawn(move || {
                for _ in 0..5_000 {
                    let r = sl.matches(b"churn.stable");
                    assert!(r.plain.iter().any(|s| s.id == 0));
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(sl.count(), 1);
        assert_eq!(plain_ids(&sl.matches(b"churn.stable")), [0].into());
        assert_eq!(sl.trie_node_count(), 1);
    }
}
