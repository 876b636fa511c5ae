//! The doorbell: how a client with queued output reaches whatever writes it.
//!
//! A producer that takes a client's scheduled [`Token`] (see [`crate::outbound`]) must hand
//! the client, with the token, to a writer. In `beaver` that is always the writer pool's
//! ready queue ([`Doorbell::pool`]: one bounded `crossbeam` channel, see
//! [`crate::writer`]). A runner with its own notion of a writer (beaver-async's tokio
//! tasks, which must be woken rather than sent to a thread) gives its clients a
//! [`Doorbell::custom`] instead; the token protocol, and so who may write when, is the same.

use super::{Client, Ready};
use crate::outbound::Token;
use crossbeam_channel::Sender;
use std::sync::Arc;

/// A writer other than the pool: it receives each client whose token a producer took, and
/// must drain it (with the writer's code: [`crate::writer::Drainer`]) until it gives the
/// token back.
pub trait Ring: Send + Sync {
    /// Takes `client`, with its scheduled `token`, for writing. Must not block: producers
    /// call it from their read path (a reader thread or an async task).
    fn ring(&self, client: Arc<Client>, token: Token);
}

/// Where a client goes when it has output (see the module docs). One per client; cloning
/// it is cheap (a channel sender or an `Arc`).
#[derive(Clone)]
pub struct Doorbell(Inner);

#[derive(Clone)]
enum Inner {
    /// The writer pool's ready queue: the blocking server's only writer.
    Pool(Sender<Ready>),
    Custom(Arc<dyn Ring>),
}

impl Doorbell {
    /// The writer pool's ready queue.
    pub fn pool(ready: Sender<Ready>) -> Doorbell {
        Doorbell(Inner::Pool(ready))
    }

    /// Another writer (see [`Ring`]).
    pub fn custom(ring: Arc<dyn Ring>) -> Doorbell {
        Doorbell(Inner::Custom(ring))
    }

    /// Hands `client`, with its scheduled token, to its writer.
    #[inline]
    pub(crate) fn ring(&self, client: Arc<Client>, token: Token) {
        match &self.0 {
            // The pool outlives every client; if it is gone the server is exiting anyway.
            Inner::Pool(ready) => {
                let _ = ready.send(Ready::Client(client, token));
            }
            Inner::Custom(ring) => ring.ring(client, token),
        }
    }
}

impl From<Sender<Ready>> for Doorbell {
    fn from(ready: Sender<Ready>) -> Doorbell {
        Doorbell::pool(ready)
    }
}
