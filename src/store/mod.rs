//! JetStream's message store: the messages of one stream, in memory ([`MemoryStore`]) or in
//! files under the stream's directory ([`FileStore`]), behind one interface ([`Store`]).
//!
//! The store numbers messages (stream sequences, from 1, never reused), keeps them in order
//! with their subject, headers and time, and enforces the stream's limits ([`Limits`]) as it
//! stores: nats-server's `StreamStore` (server/store.go) does the same job. Everything above
//! it (the JetStream API, deduplication, expected-sequence headers, acks) lives in
//! `crate::jetstream`; this module knows nothing of NATS besides subjects.
//!
//! A leaf module: it depends on `crate::subjects` only (subject filters).

pub mod file;
mod index;
pub mod memory;
mod seqmap;

#[cfg(test)]
mod tests;

pub use file::FileStore;
pub use memory::MemoryStore;

use bytes::Bytes;
use std::fmt;
use std::time::Duration;

/// One stored message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMsg {
    /// The subject it was published to, exactly.
    pub subject: Bytes,
    /// Its stream sequence (1-based).
    pub seq: u64,
    /// When it was stored: nanoseconds since the Unix epoch (UTC).
    pub ts: i64,
    /// The raw header block as published (`NATS/1.0\r\n...\r\n\r\n`), empty if none.
    pub headers: Bytes,
    /// The body (the payload after the headers).
    pub data: Bytes,
}

/// The limits a store enforces on every store (a stream's configuration; nats-server's
/// `StreamConfig` limits). Negative or zero means unlimited, as in nats-server's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many messages (`max_msgs`, -1 unlimited).
    pub max_msgs: i64,
    /// At most this many bytes, counted as the store counts them ([`file_msg_size`],
    /// [`memory_msg_size`]) (`max_bytes`, -1 unlimited).
    pub max_bytes: i64,
    /// Messages older than this are removed (`max_age`; zero: kept forever).
    pub max_age: Duration,
    /// At most this many messages per subject (`max_msgs_per_subject`, -1 unlimited).
    pub max_msgs_per_subject: i64,
    /// `discard: new`: a store that would go over `max_msgs`/`max_bytes` is refused
    /// ([`StoreError::MaxMsgs`], [`StoreError::MaxBytes`]) instead of removing the oldest.
    pub discard_new: bool,
    /// With `discard_new`, also refuse a store over `max_msgs_per_subject`
    /// ([`StoreError::MaxMsgsPerSubject`]) instead of removing that subject's oldest.
    pub discard_new_per_subject: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_msgs: -1,
            max_bytes: -1,
            max_age: Duration::ZERO,
            max_msgs_per_subject: -1,
            discard_new: false,
            discard_new_per_subject: false,
        }
    }
}

/// The bytes a message counts for in a file store (against `max_bytes`, and in `bytes` of the
/// stream state): nats-server 2.9.10's `fileStoreMsgSize`, that is 22 bytes of record, the
/// subject, the body and an 8-byte hash, and with headers 4 bytes of header length and the
/// headers, so that the same stream reports the same `bytes` on both servers. Measured on
/// nats-server 2.9.10 (`bytes` of `STREAM.INFO` after one publish of `hello` to `foo`): 38
/// without headers (30 + 3 + 5), 60 with an 18-byte header block (34 + 3 + 18 + 5).
pub fn file_msg_size(subject: usize, headers: usize, data: usize) -> u64 {
    let headers = if headers > 0 { headers + 4 } else { 0 };
    (22 + subject + headers + data + 8) as u64
}

/// The bytes a message counts for in a memory store: nats-server 2.9.10's `memStoreMsgSize`,
/// subject + headers + body + 16. Measured as for [`file_msg_size`]: `hello` to `foo` 24
/// without headers, 42 with an 18-byte header block.
pub fn memory_msg_size(subject: usize, headers: usize, data: usize) -> u64 {
    (subject + headers + data + 16) as u64
}

/// A stream's state (nats-server's `StreamState`, the `state` of `STREAM.INFO`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamState {
    /// Messages stored.
    pub msgs: u64,
    /// Their size, summed with the store's size function ([`file_msg_size`],
    /// [`memory_msg_size`]).
    pub bytes: u64,
    /// The first sequence still stored (last + 1 when empty; 0 for a new stream).
    pub first_seq: u64,
    /// Its time, nanoseconds since the Unix epoch (0 when empty).
    pub first_ts: i64,
    /// The last sequence assigned (0 for a new stream).
    pub last_seq: u64,
    /// Its time (0 when nothing was ever stored).
    pub last_ts: i64,
    /// Sequences between first and last that are gone (deleted or skipped).
    pub num_deleted: u64,
    /// Distinct subjects stored.
    pub num_subjects: u64,
}

/// When a file store makes its writes durable (`sync_interval`/`sync_always` in nats-server's
/// `jetstream {}` block). Either way every write reaches the operating system before
/// [`Store::store_msg`] returns, so a killed process (`kill -9`) loses nothing that was
/// acknowledged; only a machine crash can lose what was not yet synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `fsync` (sync_data) after every write.
    Always,
    /// `fsync` when [`Store::sync`] is called (by the JetStream timer, every interval).
    Interval(Duration),
}

/// Why a store operation failed.
#[derive(Debug)]
pub enum StoreError {
    /// No message with that sequence (never stored, or removed).
    NotFound,
    /// `discard: new` and the stream is at `max_msgs`.
    MaxMsgs,
    /// `discard: new` and the stream is at `max_bytes`.
    MaxBytes,
    /// `discard: new` with `discard_new_per_subject`, and the subject is at its maximum.
    MaxMsgsPerSubject,
    /// A file operation failed.
    Io(std::io::Error),
    /// A file was not what the store writes (a path and what was wrong).
    Corrupt(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound => f.write_str("no message found"),
            StoreError::MaxMsgs => f.write_str("maximum messages exceeded"),
            StoreError::MaxBytes => f.write_str("maximum bytes exceeded"),
            StoreError::MaxMsgsPerSubject => f.write_str("maximum messages per subject exceeded"),
            StoreError::Io(e) => write!(f, "{e}"),
            StoreError::Corrupt(what) => write!(f, "corrupt store: {what}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Io(e)
    }
}

/// What to purge (`STREAM.PURGE`'s request: `filter`, `seq`, `keep`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Purge {
    /// Only messages whose subject matches this filter (wildcards allowed).
    pub filter: Option<Bytes>,
    /// Only messages with a sequence below this one (exclusive, as nats-server's `seq`).
    /// 0 and 1 mean no bound, as in nats-server (a purge with `seq: 1` removes everything
    /// it matches).
    pub up_to: Option<u64>,
    /// Keep this many of the newest (matching) messages.
    pub keep: Option<u64>,
}

/// The messages of one stream. Methods take `&mut self`: the stream holds its store under
/// its own lock, and one caller at a time works on it.
pub trait Store: Send {
    /// Stores a message with the next sequence and returns that sequence. `ts` is
    /// nanoseconds since the Unix epoch. Limits apply first: with `discard: new` a store
    /// over a limit fails; otherwise the oldest messages (of the stream, or of the subject
    /// for `max_msgs_per_subject`) are removed to make room.
    fn store_msg(
        &mut self,
        subject: &[u8],
        headers: &[u8],
        data: &[u8],
        ts: i64,
    ) -> Result<u64, StoreError>;

    /// Marks `seq` as used without a message (a mirror skipping its origin's gaps): the
    /// next stored message gets `seq + 1`. `seq` must be past the last sequence; when the
    /// store is empty the first sequence moves past it.
    fn skip_to(&mut self, seq: u64) -> Result<(), StoreError>;

    /// New limits (a stream update); applied at once (may remove messages).
    fn set_limits(&mut self, limits: Limits) -> Result<(), StoreError>;

    /// Removes the messages older than `max_age` at `now` (nanoseconds since the epoch).
    /// Returns how many went.
    fn expire(&mut self, now: i64) -> Result<u64, StoreError>;

    /// The message with sequence `seq`.
    fn load(&self, seq: u64) -> Result<StoredMsg, StoreError>;

    /// The first message with a sequence at or after `start` whose subject matches `filter`
    /// (wildcards allowed; `None` matches all).
    fn load_next(&self, filter: Option<&[u8]>, start: u64) -> Result<StoredMsg, StoreError>;

    /// The newest message whose subject matches `filter` (wildcards allowed).
    fn load_last(&self, filter: &[u8]) -> Result<StoredMsg, StoreError>;

    /// Removes one message. With `erase`, its bytes are overwritten on disk as well.
    /// Returns false if there was no such message.
    fn remove(&mut self, seq: u64, erase: bool) -> Result<bool, StoreError>;

    /// Removes what `purge` selects; returns how many messages went. A purge of everything
    /// leaves the first sequence at last + 1.
    fn purge(&mut self, purge: &Purge) -> Result<u64, StoreError>;

    /// The state now.
    fn state(&self) -> StreamState;

    /// The deleted sequences between first and last, ascending (`STREAM.INFO` with
    /// `deleted_details`).
    fn deleted(&self) -> Vec<u64>;

    /// Messages per subject, for subjects matching `filter` (`subjects_filter` of
    /// `STREAM.INFO`).
    fn subjects(&self, filter: &[u8]) -> Vec<(Bytes, u64)>;

    /// Messages at or after `start` whose subject matches `filter` (a consumer's
    /// `num_pending`).
    fn count_from(&self, filter: Option<&[u8]>, start: u64) -> u64;

    /// The last sequence of each subject matching `filter`, ascending (a consumer with
    /// `deliver_policy: last_per_subject`).
    fn last_per_subject(&self, filter: &[u8]) -> Vec<u64>;

    /// The first sequence stored at or after `ts` (nanoseconds since the epoch), or
    /// last + 1 when none was (`deliver_policy: by_start_time`).
    fn seq_from_time(&self, ts: i64) -> u64;

    /// Makes everything written so far durable (fsync). A no-op for memory.
    fn sync(&mut self) -> Result<(), StoreError>;

    /// Bytes this store holds on disk (file store: its segment files, so reclaimed space
    /// shows) or counts for its messages (memory store).
    fn footprint(&self) -> u64;

    /// Deletes the store and everything it wrote (stream deletion).
    fn destroy(self: Box<Self>) -> Result<(), StoreError>;
}
