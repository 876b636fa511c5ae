//! A reader thread's private cache of match results (nats-server's per-client "L1" cache).
//!
//! Publishers usually publish to a handful of subjects over and over, so each reader thread
//! keeps the results it used, keyed by subject. The cache is owned by one thread (no lock,
//! no shared cache lines); the only shared access per message is one atomic load of the
//! table's generation. The results themselves are `Arc`s from the sublist's shared cache
//! (the "L2"), so a large result exists once, not once per publisher. When the generation
//! moved (any SUB or UNSUB anywhere), the whole private cache is dropped at once: every entry
//! is stale then, and clearing promptly also releases the subscriptions (and the
//! connections behind them) that the stale entries kept alive.
//!
//! **Admission.** A subject is cached only the second time it misses here (a small "door
//! keeper" table of subject hashes remembers the first time, as TinyLFU caches do). A subject
//! seen once is matched into a reused scratch result instead. That is the common case for
//! request/reply: every reply goes to a new inbox subject (`_INBOX.<id>.<n>`), and caching
//! each one would cost four allocations for a result used once.

use super::sublist::Sublist;
use super::subs::{MatchResult, Subscriber};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::Hasher;
use std::sync::Arc;

/// Entries kept before the cache is cleared (nats-server keeps 512 per client and prunes).
pub const DEFAULT_CAPACITY: usize = 1024;

/// Slots of the door keeper (a power of two; 8 KiB, allocated on the first miss, so a
/// connection that never publishes does not pay for it).
const DOORKEEPER_SLOTS: usize = 1024;

/// See the module docs.
pub struct MatchCache<S> {
    generation: u64,
    /// The table the entries come from (its address): a reader delivers into other
    /// accounts too (services' answers, imports), and two tables may be at the same
    /// generation, so the generation alone does not say the entries are this table's.
    table: usize,
    map: FxHashMap<Box<[u8]>, Arc<MatchResult<S>>>,
    capacity: usize,
    /// Hashes of subjects that missed once (0: empty slot); empty until the first miss.
    doorkeeper: Vec<u64>,
    /// The result for a subject seen once, reused from one such subject to the next.
    scratch: MatchResult<S>,
}

impl<S: Subscriber> MatchCache<S> {
    /// An empty cache holding at most `capacity` subjects.
    pub fn new(capacity: usize) -> Self {
        MatchCache {
            generation: u64::MAX,
            table: 0,
            map: FxHashMap::default(),
            capacity: capacity.max(1),
            doorkeeper: Vec::new(),
            scratch: MatchResult::default(),
        }
    }

    /// The subscriptions matching `subject`, from the cache if still valid.
    pub fn get(&mut self, sublist: &Sublist<S>) -> CacheLookup<'_, S> {
        // Read the generation before any matching: a result computed now is tagged with a
        // generation no newer than the table state it reflects, so it can only be too old,
        // never wrongly current.
        let generation = sublist.generation();
        let table = std::ptr::from_ref(sublist) as usize;
        if generation != self.generation || table != self.table {
            self.map.clear();
            self.scratch.clear();
            self.generation = generation;
            self.table = table;
        }
        CacheLookup { cache: self }
    }

    /// Drops the cached results if the table changed since they were computed. The reader
    /// calls this whenever it wakes up, so that even an idle publisher does not keep closed
    /// subscriptions (and their connections) alive for long.
    pub fn refresh(&mut self, sublist: &Sublist<S>) {
        let _ = self.get(sublist);
    }

    /// Number of cached subjects.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A validated view of the cache for one lookup (see [`MatchCache::get`]).
pub struct CacheLookup<'a, S> {
    cache: &'a mut MatchCache<S>,
}

impl<'a, S: Subscriber> CacheLookup<'a, S> {
    /// The result for `subject`: cached here, or taken from the sublist's shared cache.
    pub fn matches(self, sublist: &Sublist<S>, subject: &[u8]) -> &'a MatchResult<S> {
        let cache = self.cache;
        if !cache.map.contains_key(subject) {
            // First miss of this subject (as far as the door keeper remembers): match it
            // without caching.
            let mut h = FxHasher::default();
            h.write(subject);
            let hash = h.finish() | 1; // never 0, the empty slot
            if cache.doorkeeper.is_empty() {
                cache.doorkeeper.resize(DOORKEEPER_SLOTS, 0);
            }
            let slot = &mut cache.doorkeeper[hash as usize & (DOORKEEPER_SLOTS - 1)];
            if *slot != hash {
                *slot = hash;
                sublist.matches_into(subject, &mut cache.scratch);
                return &cache.scratch;
            }
            if cache.map.len() >= cache.capacity {
                cache.map.clear();
            }
            let result = sublist.cached_matches(subject, cache.generation);
            cache.map.insert(subject.into(), result);
        }
        &cache.map[subject]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct S(&'static str);
    impl Subscriber for S {
        fn subject(&self) -> &[u8] {
            self.0.as_bytes()
        }
        fn queue(&self) -> Option<&[u8]> {
            None
        }
    }

    #[test]
    fn cache_follows_generation() {
        let sl = Sublist::new();
        let mut cache = MatchCache::new(16);
        assert!(cache.get(&sl).matches(&sl, b"foo").is_empty());
        let a = Arc::new(S("foo"));
        sl.insert(a.clone()).unwrap();
        assert_eq!(cache.get(&sl).matches(&sl, b"foo").plain.len(), 1);
        sl.remove(&a);
        assert!(cache.get(&sl).matches(&sl, b"foo").is_empty());
        assert_eq!(Arc::strong_count(&a), 1, "stale results are dropped");
    }

    #[test]
    fn one_cache_two_tables_at_the_same_generation() {
        // Two accounts' tables with one change each: the same generation. A reader that
        // delivers into both (a service's answer into another account) must not take one
        // table's cached result for the other's.
        let (a, b) = (Sublist::new(), Sublist::new());
        a.insert(Arc::new(S("x"))).unwrap();
        b.insert(Arc::new(S("y"))).unwrap();
        assert_eq!(a.generation(), b.generation());
        let mut cache = MatchCache::new(16);
        for _ in 0..2 {
            assert_eq!(cache.get(&a).matches(&a, b"x").plain.len(), 1);
        }
        assert!(cache.get(&b).matches(&b, b"x").is_empty());
        assert_eq!(cache.get(&a).matches(&a, b"x").plain.len(), 1);
    }

    #[test]
    fn cache_is_bounded() {
        let sl: Sublist<S> = Sublist::new();
        let mut cache = MatchCache::new(4);
        for i in 0..100 {
            for _ in 0..2 {
                cache.get(&sl).matches(&sl, format!("s{i}").as_bytes());
            }
            assert!(cache.len() <= 4);
        }
    }

    #[test]
    fn subjects_seen_once_are_not_cached() {
        let sl = Sublist::new();
        sl.insert(Arc::new(S("inbox.*"))).unwrap();
        let mut cache = MatchCache::new(16);
        for i in 0..100 {
            let r = cache.get(&sl).matches(&sl, format!("inbox.{i}").as_bytes());
            assert_eq!(r.plain.len(), 1);
        }
        assert_eq!(cache.len(), 0, "one-off subjects stay out of the cache");
        assert_eq!(cache.get(&sl).matches(&sl, b"inbox.7").plain.len(), 1);
        assert_eq!(cache.len(), 1, "a subject seen twice is cached");
    }
}
