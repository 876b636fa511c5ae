//! [`SeqMap`]: the live messages of a stream by sequence, in one deque.
//!
//! Sequences only grow and messages mostly leave oldest first, so a deque of
//! `(sequence, entry)` in sequence order does everything a `BTreeMap` did for the index at a
//! fraction of its memory (a B-tree filled by appends keeps its nodes about half full, which
//! doubled the index of a million-message stream). A message removed from the middle leaves
//! a hole (`None`) that lookups skip; holes at either end are dropped at once, and the deque
//! is compacted when holes outnumber live entries, so every operation stays amortized
//! O(1) or O(log n) (lookups bisect).

use std::collections::VecDeque;

/// Live entries by sequence (see the module doc).
#[derive(Debug)]
pub(crate) struct SeqMap<V> {
    slots: VecDeque<(u64, Option<V>)>,
    live: usize,
}

impl<V> Default for SeqMap<V> {
    fn default() -> Self {
        SeqMap {
            slots: VecDeque::new(),
            live: 0,
        }
    }
}

impl<V> SeqMap<V> {
    /// Live entries.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Adds `v` under `seq`, which must be above every sequence held.
    pub fn push(&mut self, seq: u64, v: V) {
        debug_assert!(self.slots.back().is_none_or(|(s, _)| *s < seq));
        self.slots.push_back((seq, Some(v)));
        self.live += 1;
    }

    fn position(&self, seq: u64) -> Option<usize> {
        self.slots.binary_search_by_key(&seq, |(s, _)| *s).ok()
    }

    /// The live entry `seq`.
    pub fn get(&self, seq: u64) -> Option<&V> {
        self.position(seq).and_then(|i| self.slots[i].1.as_ref())
    }

    /// Takes out the live entry `seq`.
    pub fn remove(&mut self, seq: u64) -> Option<V> {
        let i = self.position(seq)?;
        let v = self.slots[i].1.take()?;
        self.live -= 1;
        self.tidy();
        Some(v)
    }

    /// Drops holes at the ends (so both ends are live), and compacts once holes outnumber
    /// the live entries (plus some slack, so that small maps do not compact all the time).
    fn tidy(&mut self) {
        while matches!(self.slots.front(), Some((_, None))) {
            self.slots.pop_front();
        }
        while matches!(self.slots.back(), Some((_, None))) {
            self.slots.pop_back();
        }
        if self.slots.len() > 2 * self.live + 1024 {
            self.slots.retain(|(_, v)| v.is_some());
        }
    }

    /// The oldest live entry.
    pub fn first(&self) -> Option<(u64, &V)> {
        // The ends are always live (`tidy`).
        self.slots
            .front()
            .and_then(|(s, v)| v.as_ref().map(|v| (*s, v)))
    }

    /// The newest live entry.
    pub fn last(&self) -> Option<(u64, &V)> {
        self.slots
            .back()
            .and_then(|(s, v)| v.as_ref().map(|v| (*s, v)))
    }

    /// Live entries, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &V)> {
        self.slots
            .iter()
            .filter_map(|(s, v)| v.as_ref().map(|v| (*s, v)))
    }

    /// Live entries from sequence `start` on.
    pub fn iter_from(&self, start: u64) -> impl Iterator<Item = (u64, &V)> {
        let i = self.slots.partition_point(|(s, _)| *s < start);
        self.slots
            .range(i..)
            .filter_map(|(s, v)| v.as_ref().map(|v| (*s, v)))
    }

    /// Live entries at or after `start`: O(log n) without holes; with holes, a walk of the
    /// shorter side of `start` (a consumer's next sequence is usually near one end: the
    /// front for a work queue that keeps up, the back for a stream read as it grows).
    pub fn count_from(&self, start: u64) -> usize {
        let i = self.slots.partition_point(|(s, _)| *s < start);
        if self.live == self.slots.len() {
            // No holes at all: the common case, without a walk.
            return self.slots.len() - i;
        }
        if i <= self.slots.len() / 2 {
            let live_before = self.slots.range(..i).filter(|(_, v)| v.is_some()).count();
            self.live - live_before
        } else {
            self.slots.range(i..).filter(|(_, v)| v.is_some()).count()
        }
    }

    /// The first live entry whose `key` is at least `min` (entries' keys must ascend with
    /// their sequences, as stored times do).
    pub fn first_at_least(&self, min: i64, key: impl Fn(&V) -> i64) -> Option<u64> {
        let i = self
            .slots
            .partition_point(|(_, v)| v.as_ref().is_some_and(|v| key(v) < min) || v.is_none());
        // Holes made the bisection approximate: walk back over any live entry that
        // qualifies, then forward to the first live one.
        let mut j = i;
        while j > 0 {
            match &self.slots[j - 1].1 {
                Some(v) if key(v) >= min => j -= 1,
                None => j -= 1,
                Some(_) => break,
            }
        }
        self.slots
            .range(j..)
            .find(|(_, v)| v.as_ref().is_some_and(|v| key(v) >= min))
            .map(|(s, _)| *s)
    }

    /// Takes out every live entry below `floor`, oldest first.
    pub fn drain_below(&mut self, floor: u64) -> Vec<(u64, V)> {
        let i = self.slots.partition_point(|(s, _)| *s < floor);
        let out: Vec<(u64, V)> = self
            .slots
            .drain(..i)
            .filter_map(|(s, v)| v.map(|v| (s, v)))
            .collect();
        self.live -= out.len();
        self.tidy();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_are_skipped_and_ends_stay_live() {
        let mut m = SeqMap::default();
        for s in 1..=10u64 {
            m.push(s, s * 10);
        }
        assert_eq!(m.remove(5), Some(50));
        assert_eq!(m.remove(5), None);
        assert_eq!(m.get(5), None);
        assert_eq!(m.get(6), Some(&60));
        assert_eq!(m.remove(1), Some(10));
        assert_eq!(m.first(), Some((2, &20)));
        assert_eq!(m.remove(10), Some(100));
        assert_eq!(m.last(), Some((9, &90)));
        assert_eq!(m.len(), 7);
        let from: Vec<u64> = m.iter_from(4).map(|(s, _)| s).collect();
        assert_eq!(from, [4, 6, 7, 8, 9]);
        let gone: Vec<u64> = m.drain_below(7).into_iter().map(|(s, _)| s).collect();
        assert_eq!(gone, [2, 3, 4, 6]);
        assert_eq!((m.len(), m.first()), (3, Some((7, &70))));
    }

    #[test]
    fn counts_from_either_side_of_holes() {
        let mut m = SeqMap::default();
        for s in 1..=20u64 {
            m.push(s, ());
        }
        m.remove(3);
        m.remove(17);
        for start in 0..=22u64 {
            let want = m.iter().filter(|(s, _)| *s >= start).count();
            assert_eq!(m.count_from(start), want, "from {start}");
        }
    }

    #[test]
    fn many_holes_are_compacted() {
        let mut m = SeqMap::default();
        for s in 1..=100_000u64 {
            m.push(s, ());
        }
        // Keep the two ends, remove everything between: the deque shrinks.
        for s in 2..100_000u64 {
            m.remove(s);
        }
        assert_eq!(m.len(), 2);
        assert!(m.slots.len() <= 2 * 2 + 1024);
        assert_eq!(m.iter().map(|(s, _)| s).collect::<Vec<_>>(), [1, 100_000]);
    }
}
