//! What both stores keep in memory about their messages, and the rules they share: sequence
//! numbering, per-subject state, the limits (`max_msgs`, `max_bytes`, `max_age`,
//! `max_msgs_per_subject`, discard old/new), purges, and the stream state derived from it.
//!
//! [`Index<T>`] holds one [`Entry<T>`] per live message, keyed by sequence; `T` is where the
//! message itself is: the headers and body for the memory store, a place in a segment file
//! for the file store. The index decides *what* goes (every operation that removes returns
//! the removed entries); the store then frees or logs it. Replaying a file store's log goes
//! through the same operations, so a restarted store reaches the same state by construction.
//!
//! The deleted set is not kept: the deleted sequences are exactly those between the first and
//! the last sequence with no entry, so `num_deleted` and `deleted()` derive from the map.

use super::seqmap::SeqMap;
use super::{Limits, Purge, StoreError, StreamState};
use crate::subjects::{has_wildcard, subject_matches};
use bytes::Bytes;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// The most deleted sequences [`Index::deleted`] lists.
pub const MAX_DELETED_DETAILS: usize = 100_000;

/// Whether a filter selects every subject (`>`, or empty as nats-server takes it).
fn is_all(filter: &[u8]) -> bool {
    filter.is_empty() || filter == b">"
}

/// A subject's number in its index: entries hold it instead of the subject's bytes (four
/// bytes against a 32-byte `Bytes` per message; a million messages on a hundred subjects
/// keep a hundred copies of the names, not a million handles).
pub(crate) type SubjectId = u32;

/// One live message as the index knows it.
#[derive(Debug, Clone)]
pub(crate) struct Entry<T> {
    /// Its subject ([`Index::subject_name`]).
    pub subject: SubjectId,
    /// When it was stored (nanoseconds since the epoch).
    pub ts: i64,
    /// What it counts for against `max_bytes` (the store's size function).
    pub size: u32,
    /// Where the message is (store-specific).
    pub loc: T,
}

/// A subject of the index: its name and its live sequences.
#[derive(Debug, Default)]
struct SubjectSlot {
    name: Bytes,
    seqs: VecDeque<u64>,
}

/// Entries an operation removed, ascending by sequence (their subject ids may be free
/// already: use their sequences and locations only).
pub(crate) type Removed<T> = Vec<(u64, Entry<T>)>;

/// The in-memory index of one stream's live messages (see the module doc).
#[derive(Debug)]
pub(crate) struct Index<T> {
    msgs: SeqMap<Entry<T>>,
    /// The subjects of live messages, by name.
    subject_ids: FxHashMap<Bytes, SubjectId>,
    /// By id: the subject's name and its live sequences ascending (count, first and last are
    /// the deque's length, front and back; a deque because the common removal is a
    /// subject's oldest). A slot whose deque is empty is free, listed in `free_ids`.
    subjects: Vec<SubjectSlot>,
    free_ids: Vec<SubjectId>,
    bytes: u64,
    last_seq: u64,
    last_ts: i64,
    /// The first sequence reported while no message is live: 0 for a stream that never had
    /// one, last + 1 once anything was removed, purged or skipped.
    empty_first: u64,
    limits: Limits,
}

impl<T> Index<T> {
    /// An empty index (a new stream: first and last sequence 0).
    pub fn new(limits: Limits) -> Self {
        Index {
            msgs: SeqMap::default(),
            subject_ids: FxHashMap::default(),
            subjects: Vec::new(),
            free_ids: Vec::new(),
            bytes: 0,
            last_seq: 0,
            last_ts: 0,
            empty_first: 0,
            limits,
        }
    }

    /// The name of subject `id` (of a live message).
    pub fn subject_name(&self, id: SubjectId) -> &Bytes {
        &self.subjects[id as usize].name
    }

    /// The live sequences of `subject`, if it has any.
    fn seqs_of(&self, subject: &[u8]) -> Option<&VecDeque<u64>> {
        let id = *self.subject_ids.get(subject)?;
        Some(&self.subjects[id as usize].seqs)
    }

    /// The id of `subject`, given it if new.
    fn subject_id(&mut self, subject: &[u8]) -> SubjectId {
        if let Some(&id) = self.subject_ids.get(subject) {
            return id;
        }
        let name = Bytes::copy_from_slice(subject);
        let slot = SubjectSlot {
            name: name.clone(),
            seqs: VecDeque::new(),
        };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.subjects[id as usize] = slot;
                id
            }
            None => {
                self.subjects.push(slot);
                (self.subjects.len() - 1) as SubjectId
            }
        };
        self.subject_ids.insert(name, id);
        id
    }

    /// `seq` of subject `id` is gone; frees the subject with its last message.
    fn forget_seq(&mut self, id: SubjectId, seq: u64) {
        let slot = &mut self.subjects[id as usize];
        if slot.seqs.front() == Some(&seq) {
            slot.seqs.pop_front();
        } else if let Ok(i) = slot.seqs.binary_search(&seq) {
            slot.seqs.remove(i);
        }
        if slot.seqs.is_empty() {
            let name = std::mem::take(&mut slot.name);
            self.subject_ids.remove(&name);
            self.free_ids.push(id);
        }
    }

    /// The sequence the next stored message gets.
    pub fn next_seq(&self) -> u64 {
        self.last_seq + 1
    }

    /// The last sequence assigned, and its time.
    pub fn last(&self) -> (u64, i64) {
        (self.last_seq, self.last_ts)
    }

    /// Whether no message is live.
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// The first live sequence, or what the state reports when none is live.
    pub fn first_seq(&self) -> u64 {
        self.msgs.first().map_or(self.empty_first, |(s, _)| s)
    }

    /// Whether a message of `size` to `subject` may be stored under `discard: new`.
    ///
    /// # Errors
    /// [`StoreError::MaxMsgsPerSubject`], [`StoreError::MaxMsgs`] or [`StoreError::MaxBytes`]
    /// when `discard: new` forbids it; always `Ok` under `discard: old`.
    pub fn check(&self, subject: &[u8], size: u64) -> Result<(), StoreError> {
        let l = &self.limits;
        if !l.discard_new {
            return Ok(());
        }
        if l.discard_new_per_subject && l.max_msgs_per_subject > 0 {
            let n = self.seqs_of(subject).map_or(0, |s| s.len() as u64);
            if n >= l.max_msgs_per_subject as u64 {
                return Err(StoreError::MaxMsgsPerSubject);
            }
        }
        if l.max_msgs > 0 && self.msgs.len() as u64 >= l.max_msgs as u64 {
            return Err(StoreError::MaxMsgs);
        }
        if l.max_bytes > 0 && self.bytes + size > l.max_bytes as u64 {
            return Err(StoreError::MaxBytes);
        }
        Ok(())
    }

    /// Adds a message with sequence `seq` (past the last one: stores give [`Self::next_seq`],
    /// a replayed log its recorded sequence) on `subject`, stored at `loc`. Limits are not
    /// applied: see [`Self::enforce`].
    pub fn insert(&mut self, seq: u64, subject: &[u8], ts: i64, size: u64, loc: T) {
        debug_assert!(seq > self.last_seq || self.msgs.is_empty());
        if seq > self.last_seq {
            self.last_seq = seq;
            self.last_ts = ts;
        }
        // A message's size is bounded by max_payload (at most 64 MiB): 32 bits are plenty.
        let size = u32::try_from(size).unwrap_or(u32::MAX);
        self.bytes += u64::from(size);
        let id = self.subject_id(subject);
        self.subjects[id as usize].seqs.push_back(seq);
        self.msgs.push(
            seq,
            Entry {
                subject: id,
                ts,
                size,
                loc,
            },
        );
    }

    /// Moves the last sequence forward to `seq` (a replayed segment header, which carries the
    /// stream's last sequence when the segment was made, or an erased message).
    pub fn advance_last(&mut self, seq: u64, ts: i64) {
        if seq > self.last_seq {
            self.last_seq = seq;
            self.last_ts = ts;
        }
    }

    /// Ends a replay. Segments deleted since may have held the removals that emptied the
    /// stream, so an empty stream's first sequence is set from the rule that holds for any
    /// empty stream: last + 1, or, when no sequence was ever used, what the oldest segment's
    /// header or a replayed purge said (0 for a new stream, 1 for a purged new stream).
    pub fn recovered(&mut self, header_first: u64) {
        if self.msgs.is_empty() {
            self.empty_first = if self.last_seq > 0 {
                self.last_seq + 1
            } else {
                self.empty_first.max(header_first)
            };
        }
    }

    /// Marks everything up to `seq` as used (a mirror's skip). Returns false, changing
    /// nothing, when `seq` is not past the last sequence.
    pub fn skip_to(&mut self, seq: u64) -> bool {
        if seq <= self.last_seq {
            return false;
        }
        self.last_seq = seq;
        if self.msgs.is_empty() {
            self.empty_first = seq + 1;
        }
        true
    }

    /// Takes one message out, keeping bytes, per-subject state and the first sequence right.
    fn take(&mut self, seq: u64) -> Option<Entry<T>> {
        let entry = self.msgs.remove(seq)?;
        self.bytes -= u64::from(entry.size);
        self.forget_seq(entry.subject, seq);
        if self.msgs.is_empty() {
            self.empty_first = self.last_seq + 1;
        }
        Some(entry)
    }

    /// Removes one message; `None` if it is not live.
    pub fn remove(&mut self, seq: u64) -> Option<Entry<T>> {
        self.take(seq)
    }

    /// Takes out the oldest live message.
    fn take_first(&mut self, out: &mut Removed<T>) -> bool {
        match self.msgs.first().map(|(s, _)| s) {
            Some(seq) => {
                if let Some(e) = self.take(seq) {
                    out.push((seq, e));
                }
                true
            }
            None => false,
        }
    }

    /// Removes what the limits no longer allow, oldest first: the per-subject limit (for
    /// `subject`, or every subject when `None`), then `max_msgs`, then `max_bytes` (the order
    /// of nats-server's stores). Runs after every store and on new limits.
    pub fn enforce(&mut self, subject: Option<&[u8]>) -> Removed<T> {
        let mut out = Vec::new();
        let per = self.limits.max_msgs_per_subject;
        if per > 0 {
            let over: Vec<u64> = match subject {
                Some(s) => self.seqs_of(s).map_or_else(Vec::new, |seqs| {
                    let n = seqs.len().saturating_sub(per as usize);
                    seqs.iter().take(n).copied().collect()
                }),
                None => {
                    let mut v: Vec<u64> = self
                        .subject_ids
                        .values()
                        .flat_map(|&id| {
                            let seqs = &self.subjects[id as usize].seqs;
                            let n = seqs.len().saturating_sub(per as usize);
                            seqs.iter().take(n).copied()
                        })
                        .collect();
                    v.sort_unstable();
                    v
                }
            };
            for seq in over {
                if let Some(e) = self.take(seq) {
                    out.push((seq, e));
                }
            }
        }
        if self.limits.max_msgs > 0 {
            while self.msgs.len() as u64 > self.limits.max_msgs as u64 {
                self.take_first(&mut out);
            }
        }
        if self.limits.max_bytes > 0 {
            while self.bytes > self.limits.max_bytes as u64 && self.take_first(&mut out) {}
        }
        if subject.is_none() {
            out.sort_unstable_by_key(|(seq, _)| *seq);
        }
        out
    }

    /// New limits, applied at once (`max_age` is applied by the next [`Self::expire`]).
    pub fn set_limits(&mut self, limits: Limits) -> Removed<T> {
        self.limits = limits;
        self.enforce(None)
    }

    /// Removes the messages older than `max_age` at `now`: nats-server's rule, from the first
    /// message on while its time is at or before `now - max_age`.
    pub fn expire(&mut self, now: i64) -> Removed<T> {
        let mut out = Vec::new();
        let max_age = self.limits.max_age.as_nanos();
        if max_age == 0 {
            return out;
        }
        let cutoff = now.saturating_sub(i64::try_from(max_age).unwrap_or(i64::MAX));
        while let Some((seq, e)) = self.msgs.first() {
            if e.ts > cutoff {
                break;
            }
            if let Some(e) = self.take(seq) {
                out.push((seq, e));
            }
        }
        out
    }

    /// Removes every message below `floor`. A `floor` past the last sequence + 1 moves the
    /// sequences on, as nats-server's `Compact`: the next message gets `floor`. When nothing
    /// is left the first sequence is last + 1.
    pub fn compact(&mut self, floor: u64) -> Removed<T> {
        let gone = self.msgs.drain_below(floor);
        let mut out = Vec::with_capacity(gone.len());
        for (seq, e) in gone {
            self.bytes -= u64::from(e.size);
            // A subject's messages below the floor are its oldest: each leaves from the front.
            self.forget_seq(e.subject, seq);
            out.push((seq, e));
        }
        if floor > self.last_seq + 1 {
            self.last_seq = floor - 1;
        }
        if self.msgs.is_empty() {
            self.empty_first = self.last_seq + 1;
        }
        out
    }

    /// Removes what `purge` selects (nats-server's `PurgeEx`): with no filter (or `>`) and no
    /// `keep`, everything below `up_to` (everything when `None`); otherwise the matching
    /// messages, oldest first, except the newest `keep` of them, and only below `up_to`.
    pub fn purge(&mut self, purge: &Purge) -> Removed<T> {
        let filter = purge.filter.as_deref().filter(|f| !is_all(f));
        // nats-server takes a `seq` of 0 or 1 as no bound at all (checked on 2.9.10: a purge
        // with seq 1 empties the stream).
        let up_to = purge.up_to.filter(|&u| u > 1);
        let out = match (filter, purge.keep) {
            (None, None) => self.compact(up_to.unwrap_or(self.last_seq + 1)),
            _ => {
                let matching = self.matching(filter);
                let n = matching
                    .len()
                    .saturating_sub(purge.keep.unwrap_or(0) as usize);
                let below = |s: &u64| up_to.is_none_or(|u| *s < u);
                let mut out = Vec::new();
                for seq in matching.into_iter().take(n).take_while(below) {
                    if let Some(e) = self.take(seq) {
                        out.push((seq, e));
                    }
                }
                out
            }
        };
        if self.msgs.is_empty() {
            self.empty_first = self.last_seq + 1;
        }
        out
    }

    /// The live sequences whose subject matches `filter` (all when `None`), ascending.
    fn matching(&self, filter: Option<&[u8]>) -> Vec<u64> {
        match filter {
            None => self.msgs.iter().map(|(s, _)| s).collect(),
            Some(f) if !has_wildcard(f) => self
                .seqs_of(f)
                .map_or_else(Vec::new, |s| s.iter().copied().collect()),
            Some(f) => self
                .msgs
                .iter()
                .filter(|(_, e)| subject_matches(self.subject_name(e.subject), f))
                .map(|(s, _)| s)
                .collect(),
        }
    }

    /// The live message `seq`.
    pub fn get(&self, seq: u64) -> Option<&Entry<T>> {
        self.msgs.get(seq)
    }

    /// The first live message at or after `start` matching `filter` (all when `None`).
    pub fn next_match(&self, filter: Option<&[u8]>, start: u64) -> Option<(u64, &Entry<T>)> {
        let found = match filter {
            Some(f) if !is_all(f) && !has_wildcard(f) => {
                let seqs = self.seqs_of(f)?;
                let i = seqs.partition_point(|&s| s < start);
                seqs.get(i).copied()
            }
            Some(f) if !is_all(f) => self
                .msgs
                .iter_from(start)
                .find(|(_, e)| subject_matches(self.subject_name(e.subject), f))
                .map(|(s, _)| s),
            _ => self.msgs.iter_from(start).next().map(|(s, _)| s),
        }?;
        self.msgs.get(found).map(|e| (found, e))
    }

    /// Live messages at or after `start` matching `filter` (all when `None`): a consumer's
    /// pending count.
    pub fn count_from(&self, filter: Option<&[u8]>, start: u64) -> u64 {
        match filter {
            Some(f) if !is_all(f) && !has_wildcard(f) => self.seqs_of(f).map_or(0, |seqs| {
                (seqs.len() - seqs.partition_point(|&s| s < start)) as u64
            }),
            Some(f) if !is_all(f) => self
                .subject_ids
                .iter()
                .filter(|(s, _)| subject_matches(s, f))
                .map(|(_, &id)| {
                    let seqs = &self.subjects[id as usize].seqs;
                    (seqs.len() - seqs.partition_point(|&s| s < start)) as u64
                })
                .sum(),
            _ => self.msgs.count_from(start) as u64,
        }
    }

    /// The last sequence of each subject matching `filter`, ascending.
    pub fn last_per_subject(&self, filter: &[u8]) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .subject_ids
            .iter()
            .filter(|(s, _)| is_all(filter) || subject_matches(s, filter))
            .filter_map(|(_, &id)| self.subjects[id as usize].seqs.back().copied())
            .collect();
        out.sort_unstable();
        out
    }

    /// The first live message stored at or after `ts` (nanoseconds), or last + 1.
    pub fn seq_from_time(&self, ts: i64) -> u64 {
        self.msgs
            .first_at_least(ts, |e| e.ts)
            .unwrap_or(self.last_seq + 1)
    }

    /// The newest live message matching `filter`.
    pub fn last_match(&self, filter: &[u8]) -> Option<(u64, &Entry<T>)> {
        let found = if is_all(filter) {
            self.msgs.last().map(|(s, _)| s)
        } else if !has_wildcard(filter) {
            self.seqs_of(filter)?.back().copied()
        } else {
            self.msgs
                .iter()
                .rev()
                .find(|(_, e)| subject_matches(self.subject_name(e.subject), filter))
                .map(|(s, _)| s)
        }?;
        self.msgs.get(found).map(|e| (found, e))
    }

    /// The stream state.
    pub fn state(&self) -> StreamState {
        let first = self.msgs.first();
        let first_seq = first.map_or(self.empty_first, |(s, _)| s);
        let msgs = self.msgs.len() as u64;
        StreamState {
            msgs,
            bytes: self.bytes,
            first_seq,
            first_ts: first.map_or(0, |(_, e)| e.ts),
            last_seq: self.last_seq,
            last_ts: self.last_ts,
            num_deleted: if msgs == 0 {
                0
            } else {
                (self.last_seq - first_seq + 1) - msgs
            },
            num_subjects: self.subject_ids.len() as u64,
        }
    }

    /// The sequences between the first and the last with no live message, ascending, at
    /// most [`MAX_DELETED_DETAILS`] of them (a mirror that skipped a gap of billions would
    /// otherwise ask for a list of billions).
    pub fn deleted(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut next = match self.msgs.first() {
            Some((s, _)) => s,
            None => return out,
        };
        let room = |out: &Vec<u64>| MAX_DELETED_DETAILS.saturating_sub(out.len()) as u64;
        for (seq, _) in self.msgs.iter() {
            out.extend(next..seq.min(next.saturating_add(room(&out))));
            next = seq + 1;
        }
        let end = self.last_seq.saturating_add(1);
        out.extend(next..end.min(next.saturating_add(room(&out))));
        out
    }

    /// Live messages per subject, for subjects matching `filter`, sorted by subject.
    pub fn subjects(&self, filter: &[u8]) -> Vec<(Bytes, u64)> {
        let mut out: Vec<(Bytes, u64)> = self
            .subject_ids
            .iter()
            .filter(|(s, _)| is_all(filter) || subject_matches(s, filter))
            .map(|(s, &id)| (s.clone(), self.subjects[id as usize].seqs.len() as u64))
            .collect();
        out.sort_unstable();
        out
    }
}
