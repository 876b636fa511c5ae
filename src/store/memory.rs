//! The memory store: a stream's messages in the process's memory (`storage: memory`), lost
//! at exit. All the rules are the shared index's (`store::index`); the index entry holds
//! the message's headers and body.

use super::index::{Entry, Index};
use super::{memory_msg_size, Limits, Purge, Store, StoreError, StoredMsg, StreamState};
use bytes::Bytes;

/// Headers and body of a message held in memory.
#[derive(Debug, Clone)]
struct Body {
    headers: Bytes,
    data: Bytes,
}

/// A stream's messages in memory. Sizes count as nats-server's memory store counts them
/// ([`memory_msg_size`]).
#[derive(Debug)]
pub struct MemoryStore {
    index: Index<Body>,
}

impl MemoryStore {
    /// An empty store enforcing `limits`.
    pub fn new(limits: Limits) -> MemoryStore {
        MemoryStore {
            index: Index::new(limits),
        }
    }

    fn msg(&self, seq: u64, e: &Entry<Body>) -> StoredMsg {
        StoredMsg {
            subject: self.index.subject_name(e.subject).clone(),
            seq,
            ts: e.ts,
            headers: e.loc.headers.clone(),
            data: e.loc.data.clone(),
        }
    }
}

impl Store for MemoryStore {
    fn store_msg(
        &mut self,
        subject: &[u8],
        headers: &[u8],
        data: &[u8],
        ts: i64,
    ) -> Result<u64, StoreError> {
        let size = memory_msg_size(subject.len(), headers.len(), data.len());
        self.index.check(subject, size)?;
        let seq = self.index.next_seq();
        let body = Body {
            headers: Bytes::copy_from_slice(headers),
            data: Bytes::copy_from_slice(data),
        };
        self.index.insert(seq, subject, ts, size, body);
        self.index.enforce(Some(subject));
        Ok(seq)
    }

    fn skip_to(&mut self, seq: u64) -> Result<(), StoreError> {
        self.index.skip_to(seq);
        Ok(())
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), StoreError> {
        self.index.set_limits(limits);
        Ok(())
    }

    fn expire(&mut self, now: i64) -> Result<u64, StoreError> {
        Ok(self.index.expire(now).len() as u64)
    }

    fn load(&self, seq: u64) -> Result<StoredMsg, StoreError> {
        let e = self.index.get(seq).ok_or(StoreError::NotFound)?;
        Ok(self.msg(seq, e))
    }

    fn load_next(&self, filter: Option<&[u8]>, start: u64) -> Result<StoredMsg, StoreError> {
        let (seq, e) = self
            .index
            .next_match(filter, start)
            .ok_or(StoreError::NotFound)?;
        Ok(self.msg(seq, e))
    }

    fn load_last(&self, filter: &[u8]) -> Result<StoredMsg, StoreError> {
        let (seq, e) = self.index.last_match(filter).ok_or(StoreError::NotFound)?;
        Ok(self.msg(seq, e))
    }

    fn remove(&mut self, seq: u64, _erase: bool) -> Result<bool, StoreError> {
        // Nothing to overwrite: the bytes are freed with the entry.
        Ok(self.index.remove(seq).is_some())
    }

    fn purge(&mut self, purge: &Purge) -> Result<u64, StoreError> {
        Ok(self.index.purge(purge).len() as u64)
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
        Ok(())
    }

    fn footprint(&self) -> u64 {
        // What nats-server reports as a memory stream's usage: the counted bytes.
        self.index.state().bytes
    }

    fn destroy(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}
