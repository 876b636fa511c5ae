//! A batch of outbound protocol bytes for one client, and the pool that recycles batches.
//!
//! A reader thread routing a read buffer's worth of `PUB`s builds one [`Batch`] per
//! destination client and queues each batch once (see `client::outbox`). Small things (the
//! `MSG` line, small payloads, `PONG`, `+OK`) are copied into the batch's byte buffer; a
//! payload of at least [`SHARE_MIN`] bytes is not copied but *spliced* in by reference, as a
//! `Bytes` shared by every subscriber it fans out to. The writer turns a batch into an iovec
//! list (`buf` pieces interleaved with shared payloads) for one vectored write.
//!
//! Why a threshold: copying 16 bytes is far cheaper than an extra iovec plus an atomic
//! reference count touched by every writer thread; for a large payload, copying it once per
//! subscriber costs memory bandwidth and memory. `benches/` measures where the two meet.

use bytes::Bytes;
use crossbeam_queue::ArrayQueue;
use std::io::IoSlice;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Payloads at least this large are shared between subscribers rather than copied.
pub const SHARE_MIN: usize = 512;

/// Batches whose buffer grew past this are freed instead of pooled. A reader flushes its
/// outbox once 256 KiB are staged (`FLUSH_STAGED`), so a batch rarely grows past that;
/// bigger ones come from bursts of large messages and would pin memory for nothing.
pub const MAX_POOLED_CAPACITY: usize = 1280 * 1024;

/// How many idle batches the pool keeps at most.
pub const POOL_SIZE: usize = 16 * 1024;

/// Total buffer capacity the pool keeps at most: idle memory stays bounded whatever the
/// mix of batch sizes. Small on purpose: peak memory under fan-out counts, and a batch
/// that finds the pool empty costs one allocation per few hundred messages.
pub const POOL_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug)]
struct Splice {
    /// Position in `buf` where the payload goes.
    at: usize,
    payload: Bytes,
}

/// Protocol bytes for one client, in wire order. See the module docs.
#[derive(Debug, Default)]
pub struct Batch {
    buf: Vec<u8>,
    splices: Vec<Splice>,
    spliced_len: usize,
    msgs: u64,
    msg_bytes: u64,
    close: bool,
    verbatim: bool,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// A batch that tells the writer to close the connection once everything queued before it
    /// has been written (graceful close).
    pub fn close_marker() -> Self {
        Batch {
            close: true,
            ..Self::default()
        }
    }

    /// Whether this is a close marker.
    pub fn is_close(&self) -> bool {
        self.close
    }

    /// A batch of bytes already in their final form, which a writer that encodes output
    /// (WebSocket framing) sends as they are: a WebSocket control frame. For other
    /// connections it is an ordinary batch.
    pub fn verbatim(bytes: Vec<u8>) -> Self {
        Batch {
            buf: bytes,
            verbatim: true,
            ..Self::default()
        }
    }

    /// Whether this batch is [`Batch::verbatim`].
    pub fn is_verbatim(&self) -> bool {
        self.verbatim
    }

    /// Bytes this batch puts on the wire.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() + self.spliced_len
    }

    /// Whether the batch carries no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The byte buffer, to append protocol bytes to.
    #[inline]
    pub fn buf_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Appends protocol bytes.
    #[inline]
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Appends a shared payload by reference (no copy).
    pub fn push_shared(&mut self, payload: Bytes) {
        self.spliced_len += payload.len();
        self.splices.push(Splice {
            at: self.buf.len(),
            payload,
        });
    }

    /// Counts one delivered message of `bytes` payload bytes (for `out_msgs`/`out_bytes`).
    #[inline]
    pub fn count_msg(&mut self, bytes: usize) {
        self.msgs += 1;
        self.msg_bytes += bytes as u64;
    }

    /// Messages and payload bytes counted in this batch.
    pub fn msg_counts(&self) -> (u64, u64) {
        (self.msgs, self.msg_bytes)
    }

    /// Bytes of buffer capacity this batch holds.
    fn capacity(&self) -> usize {
        self.buf.capacity() + self.splices.capacity() * std::mem::size_of::<Splice>()
    }

    /// Empties the batch, keeping its buffers' capacity.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.splices.clear();
        self.spliced_len = 0;
        self.msgs = 0;
        self.msg_bytes = 0;
        self.close = false;
        self.verbatim = false;
    }

    /// The batch's wire bytes as consecutive non-empty pieces.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> {
        let mut prev = 0;
        self.splices
            .iter()
            .flat_map(move |s| {
                let head = &self.buf[prev..s.at];
                prev = s.at;
                [head, &s.payload[..]]
            })
            .chain(std::iter::once_with(move || {
                let tail_start = self.splices.last().map_or(0, |s| s.at);
                &self.buf[tail_start..]
            }))
            .filter(|s| !s.is_empty())
    }

    /// Appends this batch's bytes to `iov` as slices, skipping the first `skip` bytes, until
    /// `iov` holds `max` slices. Returns false if it ran out of room before the batch did.
    pub fn fill_iovecs<'a>(
        &'a self,
        mut skip: usize,
        iov: &mut Vec<IoSlice<'a>>,
        max: usize,
    ) -> bool {
        for seg in self.segments() {
            if skip >= seg.len() {
                skip -= seg.len();
                continue;
            }
            if iov.len() == max {
                return false;
            }
            iov.push(IoSlice::new(&seg[skip..]));
            skip = 0;
        }
        true
    }

    /// Copies the wire bytes into one vector (for tests).
    pub fn to_vec(&self) -> Vec<u8> {
        self.segments().flat_map(|s| s.iter().copied()).collect()
    }
}

/// A lock-free pool of empty batches shared by all threads, so that steady-state traffic
/// allocates no batch buffers: readers take, writers give back.
pub struct BatchPool {
    free: ArrayQueue<Batch>,
    /// Capacity of the idle batches, in bytes. Relaxed: a soft budget (a race can overshoot
    /// it by a few batches, never unboundedly).
    bytes: AtomicUsize,
}

impl Default for BatchPool {
    fn default() -> Self {
        Self::new(POOL_SIZE)
    }
}

impl BatchPool {
    /// A pool keeping at most `size` idle batches.
    pub fn new(size: usize) -> Self {
        BatchPool {
            free: ArrayQueue::new(size.max(1)),
            bytes: AtomicUsize::new(0),
        }
    }

    /// An empty batch, recycled if one is available.
    #[inline]
    pub fn take(&self) -> Batch {
        match self.free.pop() {
            Some(b) => {
                self.bytes.fetch_sub(b.capacity(), Ordering::Relaxed);
                b
            }
            None => Batch::default(),
        }
    }

    /// Returns a batch for reuse (dropped if it grew too large, or the pool is full).
    #[inline]
    pub fn give(&self, mut batch: Batch) {
        let cap = batch.capacity();
        if cap > MAX_POOLED_CAPACITY || self.bytes.load(Ordering::Relaxed) + cap > POOL_BYTES {
            return;
        }
        batch.clear();
        self.bytes.fetch_add(cap, Ordering::Relaxed);
        if self.free.push(batch).is_err() {
            // A full pool just drops the batch.
            self.bytes.fetch_sub(cap, Ordering::Relaxed);
        }
    }

    /// Idle batches in the pool.
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_interleave_shared_payloads() {
        let mut b = Batch::new();
        b.push(b"MSG a 1 3\r\n");
        b.push_shared(Bytes::from_static(b"xyz"));
        b.push(b"\r\nPONG\r\n");
        b.push_shared(Bytes::from_static(b"tail"));
        assert_eq!(b.to_vec(), b"MSG a 1 3\r\nxyz\r\nPONG\r\ntail");
        assert_eq!(b.len(), b.to_vec().len());
        assert_eq!(b.segments().count(), 4);
    }

    #[test]
    fn iovecs_skip_written_bytes() {
        let mut b = Batch::new();
        b.push(b"hello ");
        b.push_shared(Bytes::from_static(b"world"));
        b.push(b"!");
        let whole = b.to_vec();
        for skip in 0..whole.len() {
            let mut iov = Vec::new();
            assert!(b.fill_iovecs(skip, &mut iov, 8));
            let got: Vec<u8> = iov.iter().flat_map(|s| s.iter().copied()).collect();
            assert_eq!(got, &whole[skip..]);
        }
        let mut tiny = Vec::new();
        assert!(!b.fill_iovecs(0, &mut tiny, 1));
        assert_eq!(tiny.len(), 1);
    }

    #[test]
    fn pool_recycles_and_bounds() {
        let pool = BatchPool::new(2);
        let mut b = pool.take();
        b.push(b"abc");
        pool.give(b);
        let b = pool.take();
        assert!(b.is_empty());
        assert!(b.buf.capacity() >= 3, "capacity is kept");
        let mut big = Batch::new();
        big.buf.reserve(MAX_POOLED_CAPACITY + 1);
        pool.give(big);
        assert_eq!(pool.len(), 0, "oversized batches are not pooled");
    }
}
