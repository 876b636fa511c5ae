//! A reader thread's read buffer, shared by client sessions and route connections.
//!
//! A `BytesMut`. Before parsing, the filled part is frozen into a `Bytes` ([`ReadBuffer::take`],
//! no copy). Parsed arguments are slices of it; a payload that is shared with subscribers
//! (see [`crate::outbound::SHARE_MIN`]) is a `Bytes::slice` of it: a reference count, no
//! copy, no allocation. An operation cut off by the end of the read is copied back to the
//! (empty) buffer to be completed by the next read ([`ReadBuffer::keep`]); that is at most
//! one operation, and a large payload is not parsed (nor copied) again until all of it has
//! arrived. The cut-off part is copied out *before* the frozen chunk is dropped, so that when
//! nothing else retains the chunk the buffer owns its allocation again and the next
//! `reserve` reuses it: steady traffic allocates nothing.
//!
//! The read size adapts: it doubles while reads fill it (up to [`MAX_READ`]) and halves
//! after four short reads in a row (down to [`MIN_READ`]), so an idle connection costs little
//! memory; a large idle buffer is dropped ([`ReadBuffer::shrink_when_idle`]).

use super::Socket;
use bytes::{Bytes, BytesMut};
use std::io;

/// Smallest read: idle connections stay small.
pub const MIN_READ: usize = 512;
/// Initial read size.
pub const START_READ: usize = 1024;
/// Largest read.
pub const MAX_READ: usize = 128 * 1024;

/// See the module docs.
#[derive(Debug)]
pub struct ReadBuffer {
    buf: BytesMut,
    /// Scratch space for an operation cut off by the end of a read (see [`ReadBuffer::keep`]).
    tail: Vec<u8>,
    read_size: usize,
    short_reads: u32,
    /// The smallest and largest read.
    min_read: usize,
    max_read: usize,
}

impl Default for ReadBuffer {
    fn default() -> Self {
        ReadBuffer::new()
    }
}

impl ReadBuffer {
    /// An empty buffer for a client: reads from [`MIN_READ`] to [`MAX_READ`] bytes, the
    /// first one [`START_READ`].
    pub fn new() -> ReadBuffer {
        ReadBuffer::with_sizes(MIN_READ, START_READ, MAX_READ)
    }

    /// An empty buffer whose reads go from `min` to `max` bytes, the first one `start`
    /// (routes, which carry many clients' traffic, read more at a time).
    pub fn with_sizes(min: usize, start: usize, max: usize) -> ReadBuffer {
        ReadBuffer {
            buf: BytesMut::new(),
            tail: Vec::new(),
            read_size: start.clamp(min, max),
            short_reads: 0,
            min_read: min,
            max_read: max,
        }
    }

    /// Bytes read and not yet taken.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing is waiting to be parsed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// How much the next read asks for. `need`: the bytes the operation at the front takes
    /// in all, when the parser knows (a message whose payload is on its way): then the read
    /// goes straight towards its end, within the largest read.
    pub fn want(&self, need: Option<usize>) -> usize {
        let len = self.buf.len();
        match need {
            Some(need) if need > len => (need - len).clamp(self.read_size, self.max_read),
            _ => self.read_size,
        }
    }

    /// One blocking read from `socket`, appended to what is waiting (see [`ReadBuffer::want`]
    /// for `need`). Returns what the socket returned: 0 at the end of the stream.
    pub fn read_from(&mut self, socket: &Socket, need: Option<usize>) -> io::Result<usize> {
        let len = self.buf.len();
        let want = self.want(need);
        self.buf.reserve(want);
        // Safe code initialises what it reads into: at most the largest read's zeroes.
        self.buf.resize(len + want, 0);
        let result = socket.read(&mut self.buf[len..]);
        let n = *result.as_ref().unwrap_or(&0);
        self.buf.truncate(len + n);
        self.adapt(n, want);
        result
    }

    /// The buffer itself, for a reader that fills it by other means (TLS plaintext); it then
    /// reports what it added with [`ReadBuffer::adapt`].
    pub fn bytes_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Adapts the read size to how much of `want` bytes a read brought (`n`).
    pub fn adapt(&mut self, n: usize, want: usize) {
        if n >= want {
            self.read_size = (self.read_size * 2).min(self.max_read);
            self.short_reads = 0;
        } else if n > 0 && n < want / 4 {
            self.short_reads += 1;
            if self.short_reads >= 4 {
                self.read_size = (self.read_size / 2).max(self.min_read);
                self.short_reads = 0;
            }
        }
    }

    /// Everything read so far, frozen for parsing (no copy); the buffer is left empty.
    pub fn take(&mut self) -> Bytes {
        self.buf.split().freeze()
    }

    /// Puts the part of `chunk` from `pos` on, an operation the next read completes, back at
    /// the front of the (empty) buffer. Copied out before `chunk` is dropped (see the module
    /// docs).
    pub fn keep(&mut self, chunk: Bytes, pos: usize) {
        if pos < chunk.len() {
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[pos..]);
            drop(chunk);
            self.buf.extend_from_slice(&self.tail);
        }
    }

    /// Drops a large idle buffer (the next read allocates a small one).
    pub fn shrink_when_idle(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 4 * self.read_size.max(START_READ) {
            self.buf = BytesMut::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_size_doubles_when_full_and_halves_after_short_reads() {
        let mut b = ReadBuffer::new();
        assert_eq!(b.want(None), START_READ);
        b.adapt(START_READ, START_READ);
        assert_eq!(b.want(None), 2 * START_READ);
        for _ in 0..3 {
            b.adapt(1, 2 * START_READ);
        }
        assert_eq!(
            b.want(None),
            2 * START_READ,
            "three short reads are not enough"
        );
        b.adapt(1, 2 * START_READ);
        assert_eq!(b.want(None), START_READ);
        for _ in 0..100 {
            b.adapt(MAX_READ, MAX_READ);
        }
        assert_eq!(b.want(None), MAX_READ);
        assert_eq!(b.want(Some(10 * MAX_READ)), MAX_READ, "bounded by MAX_READ");
    }

    #[test]
    fn a_known_need_reads_towards_its_end() {
        let mut b = ReadBuffer::new();
        b.bytes_mut().extend_from_slice(&[b'x'; 100]);
        assert_eq!(b.want(Some(50)), START_READ, "already here");
        assert_eq!(b.want(Some(100 + 4 * START_READ)), 4 * START_READ);
    }

    /// The cut-off operation goes back to the front, and the buffer gets its allocation
    /// back for the next read.
    #[test]
    fn keep_puts_the_rest_back_and_reuses_the_allocation() {
        let mut b = ReadBuffer::new();
        b.bytes_mut().reserve(4096);
        b.bytes_mut().extend_from_slice(b"PING\r\nPUB a 5\r\nhe");
        let chunk = b.take();
        let at = chunk.as_ptr() as usize;
        assert!(b.is_empty());
        b.keep(chunk, 6);
        assert_eq!(&b.take()[..], b"PUB a 5\r\nhe");
        b.bytes_mut().reserve(4096);
        assert_eq!(b.bytes_mut().as_ptr() as usize, at, "same allocation");
    }
}
