//! A client session driven by a runner other than a reader thread: beaver-async's tokio
//! tasks. [`Session`] is the reader thread's own state machine (`Connection`), with its I/O
//! left to the caller: the thread's loop is
//!
//! ```text
//! greet; loop { before_read; read (blocking, up to the read timeout); after_read }; finish
//! ```
//!
//! and an async runner runs the same steps, waiting for readiness (up to
//! [`Session::read_timeout`]) where the thread blocks in `read`, and waiting on
//! [`Session::take_stalled`]'s clients where the thread waits in `after_read` (the stall,
//! see [`crate::outbound::StallWait`]). Everything else (parsing, routing, delivery, the
//! ping and authentication timers, closing) is the same code.

use super::Connection;
use crate::client::{Client, Doorbell, StallPolicy};
use crate::close::CloseReason;
use crate::shared::Shared;
use crate::socket::Socket;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A plain-text client connection's session, for a runner that does its own waiting (see
/// the module docs). Dropping it unfinished (a panicking task) still cleans up, as a reader
/// thread that panics does.
pub struct Session {
    conn: Connection,
}

impl Session {
    /// Registers a connection accepted on the client port and prepares its session, as the
    /// acceptor does for a reader thread. `socket` must be non-blocking
    /// ([`Socket::set_nonblocking`]): [`Session::read`] never waits. `doorbell` is how the
    /// client's output reaches its writer.
    ///
    /// `Ok(None)`: refused and closed at once (over `max_connections`, with no room left to
    /// tell it so). Errors: the client port has TLS (its handshake blocks; a runner that
    /// must not block serves plain-text clients only), or the registration failed; the
    /// connection is closed either way.
    pub fn accept(
        shared: &Arc<Shared>,
        socket: Arc<Socket>,
        addr: SocketAddr,
        doorbell: Doorbell,
    ) -> io::Result<Option<Session>> {
        if shared.tls().is_some() {
            socket.shutdown();
            return Err(io::Error::other(
                "TLS clients need a reader thread (the handshake blocks): use beaver",
            ));
        }
        let conn = Connection::accept(shared, socket, addr, None, None, doorbell)?;
        Ok(conn.map(|mut conn| {
            conn.stalled = Some(Vec::new());
            Session { conn }
        }))
    }

    /// The connection's shared part.
    pub fn client(&self) -> &Arc<Client> {
        &self.conn.client
    }

    /// Logs the new connection and sends `INFO` (or, over `max_connections`, the refusal).
    /// `Err`: the connection ends, for this reason; call [`Session::finish`].
    pub fn greet(&mut self) -> Result<(), CloseReason> {
        self.conn.open()
    }

    /// Before each read: the authentication timer. `Err`: call [`Session::finish`].
    pub fn before_read(&mut self) -> Result<(), CloseReason> {
        self.conn.before_read()
    }

    /// One non-blocking read into the session's buffer: `WouldBlock` when nothing has
    /// arrived (the caller waits for readiness and reads again), `Ok(0)` at the end of the
    /// stream.
    pub fn read(&mut self) -> io::Result<usize> {
        self.conn.read()
    }

    /// How long to wait for data before calling [`Session::after_read`] with a timeout
    /// anyway: when the next timer (ping, authentication, JWT expiry) is due.
    pub fn read_timeout(&self) -> Duration {
        self.conn.socket.read_timeout()
    }

    /// After each read, with its result (a timeout is `TimedOut`): handles what was read,
    /// runs the timers and queues the output. `Err`: call [`Session::finish`].
    pub fn after_read(&mut self, read: io::Result<usize>) -> Result<(), CloseReason> {
        self.conn.after_read(read)
    }

    /// The subscribers the last steps' publishes pushed over the stall threshold: the
    /// caller waits for each (see [`crate::outbound::Outbound::stall_wait`], with
    /// [`Session::stall_policy`] and one deadline `max_wait` away), before the next read, as
    /// a reader thread waits for them in `after_read`.
    pub fn take_stalled(&mut self) -> Vec<Arc<Client>> {
        self.conn
            .stalled
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The server's backpressure rules.
    pub fn stall_policy(&self) -> StallPolicy {
        self.conn.stall
    }

    /// Ends the connection, as a reader thread does when its loop ends: the last output is
    /// flushed, the subscriptions removed, the client unregistered.
    pub fn finish(mut self, reason: CloseReason) {
        self.conn.finish(reason);
    }
}
