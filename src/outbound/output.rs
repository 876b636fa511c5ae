//! The writer's side of a client's output: the batches taken off the queue and not yet
//! fully written, and the writer's bookkeeping for that client (retry delays, TLS
//! ciphertext).
//!
//! Kept with the client (`Client::output`), not with a writer thread, so that whichever
//! writer of the pool gets the client next carries on where the last one stopped. The client
//! hands it out only to the holder of the queue's [`Token`](super::Token) (and, once, to
//! whoever frees a departed connection), and batches leave the queue only through it: see
//! the module docs of [`super`].

use super::{Batch, BatchPool, Outbound};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::{Duration, Instant};

/// One client's output in the writer's hands. See the module docs.
#[derive(Default)]
pub struct Output {
    /// Batches popped from the queue and not fully written; the first is partly written.
    inflight: VecDeque<Batch>,
    /// Bytes of `inflight[0]` already written.
    offset: usize,
    /// Bytes in `inflight`, counting from `offset`.
    inflight_bytes: usize,
    /// When writes to this client last stopped making progress.
    pub blocked_since: Option<Instant>,
    /// Next retry delay after a write found the socket full.
    pub retry_delay: Duration,
    /// TLS and WebSocket clients: the bytes made from batches taken off the queue
    /// (ciphertext, frames) and not yet on the socket.
    pub wire: Vec<u8>,
    /// Bytes of `wire` already written.
    pub wire_off: usize,
    /// The last bytes of a graceful close (a TLS `close_notify`, a WebSocket close frame)
    /// are in `wire`: once it is written, the socket is shut.
    pub wire_close_sent: bool,
}

impl Output {
    /// Moves batches from `queue` to the in-flight list until `target` bytes are in flight
    /// (what one write may take) or the queue is empty.
    pub fn gather(&mut self, queue: &Outbound, target: usize) {
        while self.inflight_bytes < target {
            match queue.pop() {
                Some(b) => {
                    self.inflight_bytes += b.len();
                    self.inflight.push_back(b);
                }
                None => break,
            }
        }
    }

    /// The first batch in flight (partly written if `offset` is not 0).
    pub fn front(&self) -> Option<&Batch> {
        self.inflight.front()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.inflight.is_empty()
    }

    /// The batches in flight, in order (for TLS, which hands them whole to the session).
    pub fn batches(&self) -> impl Iterator<Item = &Batch> {
        self.inflight.iter()
    }

    /// Appends what is left to write of the batches in flight to `iov`, up to `max_iov`
    /// slices, stopping at a close marker. Returns the bytes added.
    pub fn fill_iovecs<'a>(&'a self, iov: &mut Vec<IoSlice<'a>>, max_iov: usize) -> usize {
        let mut skip = self.offset;
        for b in &self.inflight {
            if b.is_close() || !b.fill_iovecs(skip, iov, max_iov) {
                break;
            }
            skip = 0;
        }
        iov.iter().map(|s| s.len()).sum()
    }

    /// Accounts for `written` bytes of plain text (the socket's, or what TLS encrypted):
    /// `queue` learns the progress, completed batches go back to `pool`.
    pub fn advance(&mut self, queue: &Outbound, written: usize, pool: &BatchPool) {
        queue.written(written);
        self.inflight_bytes -= written;
        let mut left = written + self.offset;
        while let Some(front) = self.inflight.front() {
            if front.is_close() || left < front.len() {
                break;
            }
            left -= front.len();
            if let Some(b) = self.inflight.pop_front() {
                pool.give(b);
            }
        }
        self.offset = left;
    }

    /// Drops the batches in flight (and TLS ciphertext not yet written), back to `pool`,
    /// counting them as written in `queue`: the socket is shut.
    pub fn discard(&mut self, queue: &Outbound, pool: &BatchPool) {
        let dropped = self.inflight_bytes;
        for b in self.inflight.drain(..) {
            pool.give(b);
        }
        self.offset = 0;
        self.inflight_bytes = 0;
        self.wire.clear();
        self.wire_off = 0;
        queue.written(dropped);
    }

    /// Empties `queue` into `pool`, counting what it held as written: the socket is shut
    /// and nobody will write it.
    pub fn drain_queue(&mut self, queue: &Outbound, pool: &BatchPool) {
        let mut dropped = 0;
        while let Some(b) = queue.pop() {
            dropped += b.len();
            pool.give(b);
        }
        queue.written(dropped);
    }

    /// Frees everything of a connection that has left: what is in flight, what is queued,
    /// and the buffers themselves.
    pub fn free(&mut self, queue: &Outbound, pool: &BatchPool) {
        self.discard(queue, pool);
        self.drain_queue(queue, pool);
        *self = Output::default();
    }
}
