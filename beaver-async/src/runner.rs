//! Client connections as tokio tasks.
//!
//! - **Accepting** stays beaver's acceptor thread; for each connection it makes the socket
//!   non-blocking, registers it with tokio's reactor ([`AsyncFd`]) and spawns the reader
//!   task ([`read`]).
//! - **Reading**: the task runs the reader thread's steps ([`Session`]); where the thread
//!   blocks in `read()` up to its read timeout, the task awaits readiness up to the same
//!   timeout. Where the thread waits in its flush for subscribers over the stall threshold
//!   (backpressure), the task awaits them ([`stall`]): nothing here blocks a worker.
//! - **Writing**: a producer that takes a client's scheduled token rings the client's
//!   doorbell ([`Bell`]), which spawns a write task ([`write`]) holding the token. It drains
//!   the queue with the writer threads' own code ([`Drainer`]); where a pool writer parks a
//!   client whose socket is full and retries it later, the task awaits writability, bounded
//!   by the same retry delay (so the write deadline is checked as often); where a pool writer
//!   sends a client to the back of the ready queue after a fair share, the task yields.

use beaver::client::{Client, Doorbell, Ring};
use beaver::outbound::{BatchPool, StallPolicy, StallPoll, Token};
use beaver::server::ClientStart;
use beaver::session::Session;
use beaver::socket::Socket;
use beaver::writer::{Drained, Drainer, RETRY_MIN};
use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::pin;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::task::Poll;
use std::time::Instant;
use tokio::io::unix::AsyncFd;
use tokio::runtime::Handle;

/// A connection's socket as tokio's reactor sees it: the descriptor that beaver's
/// [`Socket`] reads and writes (one descriptor per connection, as in beaver).
struct Fd(Arc<Socket>);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// What every write task needs of the server (the same for all connections).
struct Writing {
    pool: Arc<BatchPool>,
    write_deadline: Arc<AtomicU64>,
}

thread_local! {
    /// Each worker thread's [`Drainer`] (its iovec allocation), as each pool writer thread
    /// has one: a write task borrows it between awaits only, so no two tasks share it at once.
    static DRAINER: RefCell<Option<Drainer>> = const { RefCell::new(None) };
}

/// The client starter that runs connections as tasks on `handle`'s runtime.
pub fn clients(handle: Handle) -> ClientStart {
    Box::new(move |shared, stream, addr| {
        let socket = Arc::new(Socket::new(stream)?);
        socket.set_nonblocking()?;
        // Registering with the reactor needs the runtime's context (this is the acceptor
        // thread, not a worker).
        let _runtime = handle.enter();
        // SAFETY: `Fd` holds an `Arc` of the socket, so the descriptor stays open (and the
        // same) for as long as the registration: shutting the socket down does not close
        // it, only the last `Arc`'s drop does.
        let fd = unsafe { AsyncFd::register(Fd(socket.clone())) }.map_err(|e| e.into_parts().1)?;
        let fd = Arc::new(fd);
        let bell = Bell {
            handle: handle.clone(),
            fd: Arc::downgrade(&fd),
            writing: Arc::new(Writing {
                pool: shared.pool.clone(),
                write_deadline: shared.write_deadline(),
            }),
        };
        let doorbell = Doorbell::custom(Arc::new(bell));
        let Some(session) = Session::accept(shared, socket, addr, doorbell)? else {
            return Ok(()); // refused and closed at once
        };
        handle.spawn(read(session, fd));
        Ok(())
    })
}

/// A client's doorbell: a producer that took its scheduled token spawns its write task.
struct Bell {
    handle: Handle,
    /// The reader task owns the registration; write tasks borrow it while the reader lives
    /// (after that the socket is shut, and a write task only discards).
    fd: Weak<AsyncFd<Fd>>,
    writing: Arc<Writing>,
}

impl Ring for Bell {
    fn ring(&self, client: Arc<Client>, token: Token) {
        self.handle.spawn(write(
            client,
            token,
            self.fd.upgrade(),
            self.writing.clone(),
        ));
    }
}

/// The reader task: beaver's reader loop, awaiting where the thread blocks.
async fn read(mut session: Session, fd: Arc<AsyncFd<Fd>>) {
    let reason = match session.greet() {
        Ok(()) => read_loop(&mut session, &fd).await,
        Err(reason) => reason,
    };
    session.finish(reason);
    // `fd` goes now: the descriptor leaves the reactor, and closes once the client (which
    // let go of it when the socket was shut) and any write task have let go too.
}

async fn read_loop(s: &mut Session, fd: &AsyncFd<Fd>) -> beaver::close::CloseReason {
    loop {
        if let Err(reason) = s.before_read() {
            return reason;
        }
        // Where the thread's `read` blocks for at most the read timeout (the next timer).
        let deadline = tokio::time::Instant::now() + s.read_timeout();
        let read = loop {
            match tokio::time::timeout_at(deadline, fd.readable()).await {
                Err(_elapsed) => break Err(io::ErrorKind::TimedOut.into()),
                Ok(Err(e)) => break Err(e),
                // A read that finds nothing clears the readiness: wait again.
                Ok(Ok(mut ready)) => match ready.try_io(|_| s.read()) {
                    Ok(read) => break read,
                    Err(_would_block) => continue,
                },
            }
        };
        if let Err(reason) = s.after_read(read) {
            return reason;
        }
        let stalled = s.take_stalled();
        if !stalled.is_empty() {
            stall(&stalled, s.stall_policy()).await;
        }
    }
}

/// Backpressure: waits, as a reader thread does in its flush, for each subscriber that
/// this task's publishes pushed over the threshold (at most `max_wait` in all; the rules are
/// `Outbound::stall`'s). The writer's progress wakes the task; tokio's timer ends each
/// progress window.
async fn stall(clients: &[Arc<Client>], policy: StallPolicy) {
    let deadline = Instant::now() + policy.max_wait;
    for c in clients {
        let mut wait = c.stall_wait(&policy, deadline);
        let mut timer = pin!(tokio::time::sleep_until(deadline.into()));
        poll_fn(|cx| loop {
            match wait.poll(cx.waker(), || c.is_closing()) {
                StallPoll::Done => return Poll::Ready(()),
                StallPoll::Until(at) => {
                    timer.as_mut().reset(at.into());
                    if timer.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    // The window ended: look again (the clock, the deadline).
                }
            }
        })
        .await;
    }
}

/// A write task: holds `client`'s scheduled token and drains its queue with beaver's
/// writer code until the queue is empty; see the module docs.
async fn write(
    client: Arc<Client>,
    mut token: Token,
    fd: Option<Arc<AsyncFd<Fd>>>,
    writing: Arc<Writing>,
) {
    // How long to wait for writability before trying anyway: the pool writer's retry
    // delay after a full socket (each try checks the write deadline).
    let mut bound = RETRY_MIN;
    loop {
        // Readiness is taken before the write, so that clearing it after a full socket
        // forgets nothing that arrived after the write (tokio's readiness ticks).
        let mut ready = match &fd {
            Some(fd) => match tokio::time::timeout(bound, fd.writable()).await {
                Ok(Ok(ready)) => Some(ready),
                _ => None,
            },
            None => None,
        };
        let drained = DRAINER.with(|d| {
            let mut d = d.borrow_mut();
            let d = d.get_or_insert_with(|| {
                Drainer::new(writing.pool.clone(), writing.write_deadline.clone())
            });
            d.drain(&client, token)
        });
        match drained {
            Drained::Done => return,
            Drained::Yield(kept) => {
                token = kept;
                bound = RETRY_MIN;
                tokio::task::yield_now().await;
            }
            Drained::Blocked(kept, delay) => {
                token = kept;
                bound = delay;
                match ready.as_mut() {
                    Some(ready) => ready.clear_ready(),
                    // No readiness to wait for: the pool writer's retry.
                    None if fd.is_none() => tokio::time::sleep(delay).await,
                    None => {}
                }
            }
        }
    }
}
