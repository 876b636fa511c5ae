//! The publisher's shortcut: a reader writes a small delivery to an idle subscriber's
//! socket itself, instead of waking a writer.
//!
//! A request/reply round trip crosses two hops (requester → responder → requester), and
//! through the writer pool each hop costs two thread wake-ups: the publisher's reader wakes a
//! writer, which writes the subscriber's socket. On an idle machine the wake-up is most of
//! the hop's latency. nats-server avoids it: a client's read loop flushes the
//! subscribers' output in place when it can (`flushClients` with a time budget, in
//! nats-server's `client.go`). beaver does the same, within its token protocol:
//!
//! - A reader that queues a batch and **takes the subscriber's scheduled token** (no writer
//!   holds the client: it was idle) may, if the batch is at most [`DIRECT_MAX`] bytes and the
//!   client is plain text (TLS and WebSocket output is encoded by the writers), write the
//!   queue itself with one non-blocking `writev`, exactly as a writer's step would.
//! - If the socket took everything, the reader gives the token back
//!   ([`crate::outbound::Outbound::release`]). Otherwise (a partial write, a full socket,
//!   an error, more batches that arrived meanwhile, a close marker) it hands the client with
//!   its token to the writer pool as it would have without the shortcut: the pool does
//!   everything else (parking, slow consumers, closing, fairness).
//! - A reader spends at most [`DIRECT_BUDGET`] per read on others' sockets, so a publisher
//!   that fans out to many idle subscribers is not slowed for long; past it, the pool
//!   writes as before.
//!
//! Holding the token is what makes this safe: the token holder is the one thread that may
//! drain the queue (the compiler enforces it through [`crate::client::Client::output`]), and
//! a reader that took it is such a holder, as a writer would be. No new handoff exists: the
//! token still moves only by `push` (taken), `release` (given back, or kept if more came)
//! and the ready queue (`loom_models::the_scheduled_token_loses_no_wake_up` drains as any
//! token holder does).
//!
//! Under load the shortcut rarely applies: busy subscribers' tokens are held by writers, and
//! a read of many publishes stages batches larger than [`DIRECT_MAX`].

use super::{write_plain, RETRY_MIN};
use crate::client::Client;
use crate::outbound::{BatchPool, Token};
use std::io::IoSlice;
use std::time::{Duration, Instant};

/// Largest queued batch a reader writes itself, in bytes: a request, a reply, a few small
/// messages. Larger ones go to the writer pool, which batches and paces them.
pub const DIRECT_MAX: usize = 16 * 1024;

/// Most time a reader spends writing to other clients' sockets per read (nats-server's
/// in-place flush budget for a client's read loop is 1 ms as well).
pub const DIRECT_BUDGET: Duration = Duration::from_millis(1);

/// A reader's means to write deliveries itself: its iovec allocation and its time budget
/// for the current read. See the module docs.
pub struct Direct {
    iov: Vec<IoSlice<'static>>,
    /// Time spent writing directly since [`Direct::new_round`].
    spent: Duration,
}

impl Default for Direct {
    fn default() -> Self {
        Self::new()
    }
}

impl Direct {
    /// A direct writer with a full budget. Its iovec list is allocated on first use.
    pub fn new() -> Self {
        Direct {
            iov: Vec::new(),
            spent: Duration::ZERO,
        }
    }

    /// Starts a read's worth of direct writes: the budget is full again.
    pub fn new_round(&mut self) {
        self.spent = Duration::ZERO;
    }

    /// Whether a batch of `len` bytes, just queued for `client` by a push that took its
    /// scheduled token, may be written here: small, plain text, budget left.
    pub fn applies(&self, client: &Client, len: usize) -> bool {
        len <= DIRECT_MAX
            && self.spent < DIRECT_BUDGET
            && client.tls.is_none()
            && client.websocket.is_none()
    }

    /// Writes what `client` has queued, holding its scheduled `token` (the caller's push
    /// took it). Returns `None` when everything was written and the token given back;
    /// otherwise the token, and the caller must hand the client to the writer pool
    /// (`Client::ring`).
    pub fn write(&mut self, client: &Client, token: Token, pool: &BatchPool) -> Option<Token> {
        if client.is_shut() {
            return Some(token);
        }
        let started = Instant::now();
        let done = self.write_all(client, &token, pool);
        self.spent += started.elapsed();
        if done {
            // Batches pushed meanwhile keep the token with us: the pool writes them.
            client.outbound.release(token)
        } else {
            Some(token)
        }
    }

    /// One gather and one non-blocking write, as a writer's step; true if nothing is left
    /// in flight afterwards (the queue may have grown meanwhile: `release` sees that).
    fn write_all(&mut self, client: &Client, token: &Token, pool: &BatchPool) -> bool {
        let mut st = client.output(token);
        st.gather(&client.outbound, super::WRITE_TARGET);
        match st.front() {
            None => return true,
            // A graceful close is the pool's (it shuts the socket once all is written).
            Some(front) if front.is_close() => return false,
            Some(_) => {}
        }
        let Some((Ok(written), attempted)) = write_plain(&mut self.iov, client, &st) else {
            // Shut meanwhile, or an error (`WouldBlock` included): the writer that gets the
            // client writes again and handles what it finds, as for any write.
            return false;
        };
        if written == 0 {
            return false;
        }
        st.blocked_since = None;
        st.retry_delay = RETRY_MIN;
        st.advance(&client.outbound, written, pool);
        written == attempted && st.is_empty()
    }
}
