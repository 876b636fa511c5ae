//! The file store: a stream's messages in an append-only log of segment files under the
//! stream's directory (`storage: file`), with the index in memory.
//!
//! # On-disk layout
//!
//! The directory holds segment files named by a 64-bit id in 16 hex digits,
//! `0000000000000001.seg`, `0000000000000002.seg`, ...; ids only grow, and the highest is the
//! *active* segment, the only one appended to. Other files in the directory are ignored.
//! Integers are little-endian.
//!
//! A segment starts with a 40-byte header:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `BVRSTOR1` |
//! | 8..16 | the stream's first sequence when the segment was made |
//! | 16..24 | the stream's last sequence then |
//! | 24..32 | the last sequence's time (ns since the Unix epoch) |
//! | 32..36 | CRC-32 (IEEE) of bytes 0..32 |
//! | 36..40 | zero |
//!
//! then records, back to back:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | `len`: bytes of the body that follows (at least 25) |
//! | 4..8 | CRC-32 (IEEE) of the body |
//! | body 0 | kind: 1 message, 2 erased message, 3 delete, 4 floor, 5 skip |
//! | body 1..9 | sequence |
//! | body 9..17 | time (ns since the Unix epoch; 0 in markers) |
//! | body 17..21 | subject length `s` |
//! | body 21..25 | header length `h` |
//! | body 25.. | subject (`s` bytes), headers (`h` bytes), body (the rest) |
//!
//! What each kind means when the log is replayed in order (segments by id, records by
//! offset):
//!
//! - **message**: stored with its sequence, which is above every sequence before it;
//! - **erased message**: a message removed with `erase`: the record was overwritten in
//!   place with this kind and zeros after the fixed part (its sequence counts as used);
//! - **delete** `seq`: that message was removed;
//! - **floor** `seq`: every message below `seq` was removed (purges, limits and expiry
//!   remove the oldest messages with one floor record); a floor past the last sequence + 1
//!   moves the last sequence to `seq - 1` (a purge up to a future sequence);
//! - **skip** `seq`: sequences up to `seq` are used (a mirror's skip).
//!
//! The state after the replay (first and last sequence, deleted sequences, per-subject
//! counts) is the state before the restart: the replay runs the same index operations
//! the store ran (`store::index`).
//!
//! # Durability
//!
//! Every record is written with one positional `write` to the file (no user-space buffer)
//! before the operation returns, so a killed process loses nothing it acknowledged. With
//! [`SyncPolicy::Always`] every write is also `sync_data`ed; with
//! [`SyncPolicy::Interval`] that happens on [`Store::sync`].
//!
//! A segment is synced when the next one starts, whatever the policy, so only the last
//! segment can end torn, after a power loss as after a kill.
//!
//! On open, a record that is cut short or fails its checksum is looked past: if good
//! records follow it (damage in the middle, a flipped bit), it is skipped with an error in
//! the log and the records after it are kept; if none follows, it is the end of a write the
//! process did not finish, cut off the last segment with a warning (in another segment, the
//! damaged tail is skipped with an error). A damaged record is never served. A record whose
//! checksum matches but whose content is not one we write, or a damaged segment header, is
//! [`StoreError::Corrupt`] naming the file. A last segment shorter than its header (a roll
//! that did not finish) is removed.
//!
//! # Space
//!
//! The active segment rolls to a new one once it holds `segment_size` bytes (8 MiB by
//! default). A segment none of whose messages is live any more is deleted, unless it is
//! the active one or its tombstones still matter: a delete or floor record in segment B
//! that removed a message of an older segment A keeps B until A is gone (else a restart
//! would bring the message back). Every header carries the first and last sequence at
//! its making, so deleting old segments never loses the sequence state. Removing with
//! `erase` overwrites the message's record in place (zeros, kind 2).

mod recover;
mod segment;
#[cfg(test)]
mod tests;

use super::index::{Entry, Index, Removed};
use super::{file_msg_size, Limits, Purge, Store, StoreError, StoredMsg, StreamState, SyncPolicy};
use bytes::Bytes;
use segment::{Header, Kind, Record, Segment, PREFIX_LEN};
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

/// Where a message's record is: segment id, offset and length (prefix included). The
/// offset fits 32 bits because a segment rolls at `segment_size` (8 MiB) before an append
/// takes it further; 16 bytes per message in the index, not 24.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Loc {
    seg: u64,
    off: u32,
    len: u32,
}

impl Loc {
    /// A location, if the offset and length fit (a segment past 4 GiB is not one we wrote).
    fn new(seg: u64, off: u64, len: usize) -> Option<Loc> {
        Some(Loc {
            seg,
            off: u32::try_from(off).ok()?,
            len: u32::try_from(len).ok()?,
        })
    }

    fn off(&self) -> u64 {
        u64::from(self.off)
    }
}

/// The default size at which the active segment rolls: 8 MiB.
pub const DEFAULT_SEGMENT_SIZE: u64 = 8 << 20;

/// A stream's messages in segment files under one directory (layout in the module doc).
/// Sizes count as nats-server's file store counts them ([`file_msg_size`]).
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    index: Index<Loc>,
    /// The open segments by id; the last is the active one.
    segs: BTreeMap<u64, Segment>,
    sync: SyncPolicy,
    segment_size: u64,
    /// A segment lost its last live message: look for segments to delete.
    reclaim: bool,
}

impl FileStore {
    /// Opens the store in `dir`, creating the directory if it is missing and recovering what
    /// is there (segments of [`DEFAULT_SEGMENT_SIZE`]).
    ///
    /// # Errors
    /// [`StoreError::Io`] if the directory or a segment cannot be read or written;
    /// [`StoreError::Corrupt`] (naming the file) for a segment that is not what this store
    /// writes, beyond a torn tail of the last segment, which is cut off.
    pub fn open(dir: &Path, limits: Limits, sync: SyncPolicy) -> Result<FileStore, StoreError> {
        Self::open_sized(dir, limits, sync, DEFAULT_SEGMENT_SIZE)
    }

    /// As [`FileStore::open`], rolling segments at `segment_size` bytes (tests use small ones
    /// to have many segments).
    ///
    /// # Errors
    /// As [`FileStore::open`].
    pub fn open_sized(
        dir: &Path,
        limits: Limits,
        sync: SyncPolicy,
        segment_size: u64,
    ) -> Result<FileStore, StoreError> {
        fs::create_dir_all(dir)?;
        let (index, segs) = recover::recover(dir, limits)?;
        let mut store = FileStore {
            dir: dir.to_path_buf(),
            index,
            segs,
            sync,
            segment_size: segment_size.max(segment::HEADER_LEN + 1),
            reclaim: true,
        };
        if store.segs.is_empty() {
            store.new_segment(1)?;
        }
        // The limits may be lower than when the store was written.
        let removed = store.index.enforce(None);
        store.log_removed(removed)?;
        store.reclaim_segments()?;
        Ok(store)
    }

    /// How many segment files the store has (one at least).
    pub fn segment_count(&self) -> usize {
        self.segs.len()
    }

    /// Creates segment `id` with a header holding the state now, and makes it active.
    fn new_segment(&mut self, id: u64) -> Result<(), StoreError> {
        let path = self.dir.join(segment::file_name(id));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let (last_seq, last_ts) = self.index.last();
        let header = Header {
            first_seq: self.index.first_seq(),
            last_seq,
            last_ts,
        };
        let written = segment::write_all_at(&file, &header.encode(), 0)
            .map_err(StoreError::from)
            .and_then(|()| {
                if self.sync == SyncPolicy::Always {
                    file.sync_data()?;
                    sync_dir(&self.dir)?;
                }
                Ok(())
            });
        if let Err(e) = written {
            // No half-made segment stays behind (the disk may be full): the next roll makes
            // it again. The handle is closed first (Windows cannot remove an open file).
            drop(file);
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        let seg = Segment {
            id,
            path,
            file,
            size: segment::HEADER_LEN,
            live: 0,
            targets: Default::default(),
            dirty: self.sync != SyncPolicy::Always,
        };
        self.segs.insert(id, seg);
        Ok(())
    }

    /// The active segment, rolled first if `len` more bytes would take it past the size.
    fn active_for(&mut self, len: usize) -> Result<&mut Segment, StoreError> {
        let (id, size) = match self.segs.last_key_value() {
            Some((id, s)) => (*id, s.size),
            None => {
                return Err(StoreError::Corrupt(format!(
                    "{}: no segment",
                    self.dir.display()
                )))
            }
        };
        if size > segment::HEADER_LEN && size + len as u64 > self.segment_size {
            // The segment being closed goes to disk first, whatever the sync policy: so only
            // the last segment can ever end torn (after a power loss as after a kill), which
            // is the one place recovery cuts records. One sync per segment's worth of writes.
            if let Some(closing) = self.segs.get_mut(&id) {
                if closing.dirty {
                    closing.file.sync_data()?;
                    closing.dirty = false;
                }
            }
            self.new_segment(id + 1)?;
            // The segment just closed may hold only removed messages.
            self.reclaim = true;
        }
        self.segs
            .values_mut()
            .next_back()
            .ok_or_else(|| StoreError::Corrupt(format!("{}: no segment", self.dir.display())))
    }

    /// Appends records to the active segment with one write; returns its id and the offset.
    fn append(&mut self, buf: &[u8]) -> Result<(u64, u64), StoreError> {
        let always = self.sync == SyncPolicy::Always;
        let seg = self.active_for(buf.len())?;
        let off = seg.size;
        if let Err(e) = segment::write_all_at(&seg.file, buf, off) {
            // A write cut short (a full disk) must not leave part of a record in the log: a
            // later record after it would make it corruption in the middle, not a torn end.
            let _ = seg.file.set_len(off);
            return Err(e.into());
        }
        seg.size += buf.len() as u64;
        if always {
            seg.file.sync_data()?;
        } else {
            seg.dirty = true;
        }
        Ok((seg.id, off))
    }

    /// Logs what an index operation removed and lets their segments go: one floor record
    /// when they were the oldest messages, else a delete record each.
    fn log_removed(&mut self, removed: Removed<Loc>) -> Result<(), StoreError> {
        let Some(&(newest, _)) = removed.last() else {
            return Ok(());
        };
        let mut buf = Vec::new();
        if self.index.is_empty() || newest < self.index.first_seq() {
            segment::marker(&mut buf, Kind::Floor, self.index.first_seq());
        } else {
            for (seq, _) in &removed {
                segment::marker(&mut buf, Kind::Delete, *seq);
            }
        }
        let (at, _) = self.append(&buf)?;
        self.forget(&removed, Some(at));
        self.reclaim_segments()
    }

    /// Counts removed messages out of their segments (see [`segment::forget`]).
    fn forget(&mut self, removed: &[(u64, Entry<Loc>)], at: Option<u64>) {
        self.reclaim |= segment::forget(&mut self.segs, removed, at);
    }

    /// Deletes the segments that hold nothing live and whose tombstones no longer matter
    /// (never the active one). Targets are always older segments, so one pass in id order
    /// sees every deletion a later segment depends on.
    fn reclaim_segments(&mut self) -> Result<(), StoreError> {
        if !std::mem::take(&mut self.reclaim) {
            return Ok(());
        }
        let ids: Vec<u64> = self.segs.keys().copied().collect();
        let Some((_, older)) = ids.split_last() else {
            return Ok(());
        };
        let mut deleted = false;
        for id in older {
            let gone = match self.segs.get(id) {
                Some(s) => s.live == 0 && s.targets.iter().all(|t| !self.segs.contains_key(t)),
                None => false,
            };
            if gone {
                if let Some(seg) = self.segs.remove(id) {
                    // Close the handle first: Windows cannot delete an open file.
                    let Segment { path, file, .. } = seg;
                    drop(file);
                    fs::remove_file(&path)?;
                    deleted = true;
                }
            }
        }
        if deleted && self.sync == SyncPolicy::Always {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Reads and checks the record of a live message.
    fn read(&self, seq: u64, e: &Entry<Loc>) -> Result<StoredMsg, StoreError> {
        let seg = self.segs.get(&e.loc.seg).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "{}: segment {} is gone",
                self.dir.display(),
                e.loc.seg
            ))
        })?;
        let mut buf = vec![0u8; e.loc.len as usize];
        segment::read_exact_at(&seg.file, &mut buf, e.loc.off())?;
        let corrupt = |what: &str| {
            StoreError::Corrupt(format!("{} at {}: {what}", seg.path.display(), e.loc.off))
        };
        let (kind, rseq, ts, s, h, d) = match segment::decode(&buf) {
            Ok((r, _)) => (
                r.kind,
                r.seq,
                r.ts,
                r.subject.len(),
                r.headers.len(),
                r.data.len(),
            ),
            Err(_) => return Err(corrupt("bad record")),
        };
        if kind != Kind::Msg || rseq != seq {
            return Err(corrupt("not the message indexed there"));
        }
        let body = Bytes::from(buf);
        let start = PREFIX_LEN + segment::FIXED_LEN;
        Ok(StoredMsg {
            subject: self.index.subject_name(e.subject).clone(),
            seq,
            ts,
            headers: body.slice(start + s..start + s + h),
            data: body.slice(start + s + h..start + s + h + d),
        })
    }
}

/// Makes a directory's entries (created or deleted files) durable; Windows has no such call.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

impl Store for FileStore {
    fn store_msg(
        &mut self,
        subject: &[u8],
        headers: &[u8],
        data: &[u8],
        ts: i64,
    ) -> Result<u64, StoreError> {
        let size = file_msg_size(subject.len(), headers.len(), data.len());
        self.index.check(subject, size)?;
        let seq = self.index.next_seq();
        let mut buf = Vec::new();
        let rec = Record {
            kind: Kind::Msg,
            seq,
            ts,
            subject,
            headers,
            data,
        };
        segment::encode(&mut buf, &rec);
        let (seg, off) = self.append(&buf)?;
        if let Some(s) = self.segs.get_mut(&seg) {
            s.live += 1;
        }
        let loc = Loc::new(seg, off, buf.len()).ok_or_else(|| {
            StoreError::Corrupt(format!("{}: a segment past 4 GiB", self.dir.display()))
        })?;
        self.index.insert(seq, subject, ts, size, loc);
        let removed = self.index.enforce(Some(subject));
        self.log_removed(removed)?;
        Ok(seq)
    }

    fn skip_to(&mut self, seq: u64) -> Result<(), StoreError> {
        if self.index.skip_to(seq) {
            let mut buf = Vec::new();
            segment::marker(&mut buf, Kind::Skip, seq);
            self.append(&buf)?;
        }
        Ok(())
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), StoreError> {
        let removed = self.index.set_limits(limits);
        self.log_removed(removed)
    }

    fn expire(&mut self, now: i64) -> Result<u64, StoreError> {
        let removed = self.index.expire(now);
        let n = removed.len() as u64;
        self.log_removed(removed)?;
        Ok(n)
    }

    fn load(&self, seq: u64) -> Result<StoredMsg, StoreError> {
        let e = self.index.get(seq).ok_or(StoreError::NotFound)?;
        self.read(seq, e)
    }

    fn load_next(&self, filter: Option<&[u8]>, start: u64) -> Result<StoredMsg, StoreError> {
        let (seq, e) = self
            .index
            .next_match(filter, start)
            .ok_or(StoreError::NotFound)?;
        self.read(seq, e)
    }

    fn load_last(&self, filter: &[u8]) -> Result<StoredMsg, StoreError> {
        let (seq, e) = self.index.last_match(filter).ok_or(StoreError::NotFound)?;
        self.read(seq, e)
    }

    fn remove(&mut self, seq: u64, erase: bool) -> Result<bool, StoreError> {
        let Some(e) = self.index.remove(seq) else {
            return Ok(false);
        };
        if !erase {
            self.log_removed(vec![(seq, e)])?;
            return Ok(true);
        }
        // Overwritten in place: the erased record itself says the sequence is gone.
        let always = self.sync == SyncPolicy::Always;
        if let Some(seg) = self.segs.get_mut(&e.loc.seg) {
            let rec = segment::erased(seq, e.ts, e.loc.len as usize);
            segment::write_all_at(&seg.file, &rec, e.loc.off())?;
            if always {
                seg.file.sync_data()?;
            } else {
                seg.dirty = true;
            }
        }
        self.forget(&[(seq, e)], None);
        self.reclaim_segments()?;
        Ok(true)
    }

    fn purge(&mut self, purge: &Purge) -> Result<u64, StoreError> {
        let before = (self.index.first_seq(), self.index.last());
        let removed = self.index.purge(purge);
        let n = removed.len() as u64;
        if removed.is_empty() && before != (self.index.first_seq(), self.index.last()) {
            // Nothing went but the sequences moved (a new stream's purge, or one past the end).
            let mut buf = Vec::new();
            segment::marker(&mut buf, Kind::Floor, self.index.first_seq());
            self.append(&buf)?;
        }
        self.log_removed(removed)?;
        Ok(n)
    }

    fn state(&self) -> StreamState {
        self.index.state()
    }

    fn deleted(&self) -> Vec<u64> {
        self.index.deleted()
    }

    fn subjects(&self, filter: &[u8]) -> Vec<(Bytes, u64)> {
        self.index.subjects(filter)
    }

    fn count_from(&self, filter: Option<&[u8]>, start: u64) -> u64 {
        self.index.count_from(filter, start)
    }

    fn last_per_subject(&self, filter: &[u8]) -> Vec<u64> {
        self.index.last_per_subject(filter)
    }

    fn seq_from_time(&self, ts: i64) -> u64 {
        self.index.seq_from_time(ts)
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        for seg in self.segs.values_mut().filter(|s| s.dirty) {
            seg.file.sync_data()?;
            seg.dirty = false;
        }
        sync_dir(&self.dir)
    }

    fn footprint(&self) -> u64 {
        self.segs.values().map(|s| s.size).sum()
    }

    fn destroy(self: Box<Self>) -> Result<(), StoreError> {
        let FileStore { dir, segs, .. } = *self;
        // Close every handle before removing (Windows).
        drop(segs);
        fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
