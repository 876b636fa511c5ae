//! A small blocking HTTP/1.1 server: the transport of the monitoring port.
//!
//! It knows nothing of NATS. It reads requests, hands each to a [`Handler`] and writes the
//! [`Response`] back, and it is built to survive any bytes a client sends, with bounded
//! memory, threads and time. Request heads are parsed by `httparse`; everything around it
//! (limits, timeouts, bodies, connections) is here. Where a request is wrong, the answer is
//! the one Go's `net/http` gives (nats-server's HTTP server), byte for byte.
//!
//! ## Threads
//! - One **acceptor** thread accepts connections.
//! - One **connection** thread per connection, up to [`Limits::max_connections`] (64), with
//!   a small stack ([`Limits::stack_size`]). It reads a request, calls the handler, writes
//!   the response, and waits for the next request on the same connection (keep-alive).
//!
//! When every slot is taken, the acceptor makes room for the new connection by shutting
//! down another one: the one that has waited longest for a request (idle keep-alive
//! connections first), otherwise the one whose current request started first. So a
//! liveness probe always gets an answer, even while thousands of idle or slow sockets are
//! open, and one client cannot hold more than its own thread. The socket is shared as an
//! `Arc<TcpStream>` between the connection's thread and the slot table, so the acceptor
//! (and [`HttpServer::stop`]) can `shutdown()` it without a second file descriptor. On
//! Unix that wakes the thread's blocking read or write at once; the new connection's
//! thread starts once the evicted one has ended (and been joined), so there are never more
//! than 64 connection threads. Windows does not wake a blocked `recv` on `shutdown()`
//! (rust-lang/rust#121594): there, reads wait in 100 ms slices and look at the
//! connection's cancel flag between them, and up to 64 evicted connections may still be
//! ending while new ones take their slots, so that a flood of sockets is not served at one
//! eviction per 100 ms ([`Limits::read_slice`], [`Limits::max_evicting`]).
//!
//! Why threads and not a readiness poller: the rest of beaver is blocking `std::net`, a
//! poller is not in `std`, and 64 threads of 512 KiB (virtual; the resident part is a few
//! pages each) are cheap. Why evict instead of refusing: a refused probe is a failed probe;
//! an evicted keep-alive connection costs its client a reconnect.
//!
//! ## Limits (see [`Limits`] for the values)
//! - **Request head**: at most [`MAX_HEADER_BYTES`] (1 MiB) plus Go's 4 KiB of slack, as
//!   Go's `http.Server` with nats-server's settings (`MaxHeaderBytes` 1 MiB). Longer heads
//!   get Go's `431 Request Header Fields Too Large` and the connection is closed. The buffer
//!   grows only as bytes arrive and shrinks back after the request, so an idle connection
//!   holds a few KiB. At most [`MAX_HEADERS`] header fields (also a 431).
//! - **Bodies are never buffered.** The monitoring endpoints take no body. A declared
//!   `Content-Length` below 256 KiB (Go's `maxPostHandlerReadBytes`) is read and discarded
//!   in 8 KiB pieces, so the connection stays usable, as Go does; a longer one, a chunked
//!   body, or a body behind `Expect: 100-continue` is not read: the response says
//!   `Connection: close`, the write side is shut, and what the client still sends is
//!   drained for at most [`Limits::linger`] before the socket is closed (so the client gets
//!   the response rather than a reset; Go waits the same 500 ms). No allocation ever
//!   depends on a declared length. `100 Continue` is never sent, as in nats-server (its
//!   handlers never read a body).
//! - **Time**: the whole head must arrive within [`Limits::header_timeout`] of its first
//!   byte (a client sending a byte a second is cut there, without an answer, as Go's
//!   `ReadHeaderTimeout` does); a keep-alive connection may wait
//!   [`Limits::idle_timeout`] for its next request; a response must be written within
//!   [`Limits::write_timeout`] plus one second per MiB. nats-server sets none of these (a
//!   slow client holds a goroutine forever); beaver needs them because a thread is dearer
//!   than a goroutine.
//!
//! ## What is answered as Go answers
//! Heads are checked in Go's order and refused with Go's exact bytes (`HTTP/1.1 400 Bad
//! Request`, `400 Bad Request: missing required Host header`, `505 HTTP Version Not
//! Supported: unsupported protocol version`, `501 Not Implemented` for a transfer coding
//! other than `chunked`, `417 Expectation Failed`, `431`). A bad `Content-Length`
//! (not decimal, above 2^63-1, or two different ones) is a 400. The request target is read
//! as Go's `url.ParseRequestURI` reads it (origin form, absolute form, `*`), and its path
//! decoded; a bad `%` escape is a 400. Responses carry Go's headers: `Content-Type` (set by
//! the handler), `Date`, `Content-Length`, and `Connection: close` when the connection is
//! closed after an HTTP/1.1 request. Known differences: versions `HTTP/1.2` to `1.9` are
//! served as 1.1 (Go too), but a request target with raw bytes that are not UTF-8 is a 400
//! (Go accepts it), more than [`MAX_HEADERS`] fields is a 431 (Go has no count limit), and
//! chunked request bodies close the connection (Go reads up to 256 KiB of them).
//!
//! ## Robustness
//! A panic in the handler is caught: the request gets a 500 and the connection goes on. A
//! panic anywhere else in a connection thread ends that thread only; its slot is released
//! by a guard. [`HttpServer::stop`] shuts every connection down, wakes the acceptor with a
//! connection to itself, and waits for all of them for at most [`Limits::stop_wait`].

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Largest request head (request line and header fields), in bytes: nats-server's
/// `MaxHeaderBytes` (1 MiB). Go reads [`HEADER_SLACK`] more before refusing.
pub const MAX_HEADER_BYTES: usize = 1 << 20;

/// What Go's `net/http` reads beyond `MaxHeaderBytes` before it answers 431
/// (`initialReadLimitSize`).
pub const HEADER_SLACK: usize = 4096;

/// Most header fields in one request (beyond: 431). `httparse` needs a fixed array; 128
/// fields is far more than any monitoring client sends.
pub const MAX_HEADERS: usize = 128;

/// Largest declared request body that is read and thrown away to keep the connection
/// alive: Go's `maxPostHandlerReadBytes` (256 KiB). Anything longer closes the connection.
pub const MAX_DISCARD: u64 = 256 << 10;

/// Size of the pieces a body is discarded in, and of a connection's first read buffer.
const CHUNK: usize = 8 << 10;

/// A connection's head buffer above this size is given back after its request.
const KEEP_BUFFER: usize = 16 << 10;

/// Responses up to this size go out in one write with their head.
const COALESCE: usize = 64 << 10;

/// The limits of an [`HttpServer`]. [`Limits::default`] is what the monitoring port uses;
/// tests shorten the times.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most connections at once (each with its thread); beyond, one is evicted (see the
    /// module docs). Default 64.
    pub max_connections: usize,
    /// Largest request head in bytes before [`HEADER_SLACK`]. Default [`MAX_HEADER_BYTES`].
    pub max_header_bytes: usize,
    /// Time from the first byte of a request to the end of its head. Default 5 s.
    pub header_timeout: Duration,
    /// Time a keep-alive connection may wait for its next request. Default 60 s.
    pub idle_timeout: Duration,
    /// Time to write a response, plus one second per [`Limits::min_write_rate`] bytes.
    /// Default 10 s.
    pub write_timeout: Duration,
    /// Bytes per second a slow reader is granted on top of `write_timeout`. Default 1 MiB.
    pub min_write_rate: u64,
    /// Time spent draining what a client still sends after the write side was shut before
    /// a close (Go's `rstAvoidanceDelay`). Default 500 ms.
    pub linger: Duration,
    /// How long the acceptor waits for a thread to end (an evicted connection's, when
    /// [`Limits::max_evicting`] of them are still ending) before it drops the new
    /// connection instead. Default 1 s.
    pub evict_wait: Duration,
    /// How many evicted connections may still be ending, their threads alive, while new
    /// connections take their slots; the threads are at most `max_connections` plus this.
    /// Default 0 on Unix, where `shutdown()` wakes the evicted thread at once, so it ends
    /// before the next one starts; 64 on Windows, where an evicted thread notices only
    /// within a [`Limits::read_slice`] (or at its write deadline).
    pub max_evicting: usize,
    /// How long a blocking read waits before it looks whether its connection was evicted
    /// or the server is stopping (`None`: as long as its deadline). Default `None` on Unix,
    /// where `shutdown()` from another thread wakes a blocked read; 100 ms on Windows,
    /// where it does not (rust-lang/rust#121594).
    pub read_slice: Option<Duration>,
    /// How long [`HttpServer::stop`] waits for the threads to end. Default 2 s.
    pub stop_wait: Duration,
    /// Stack size of a connection thread, in bytes. Default 512 KiB.
    pub stack_size: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 64,
            max_header_bytes: MAX_HEADER_BYTES,
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(10),
            min_write_rate: 1 << 20,
            linger: Duration::from_millis(500),
            evict_wait: Duration::from_secs(1),
            max_evicting: if cfg!(unix) { 0 } else { 64 },
            read_slice: if cfg!(unix) {
                None
            } else {
                Some(Duration::from_millis(100))
            },
            stop_wait: Duration::from_secs(2),
            stack_size: 512 << 10,
        }
    }
}

impl Limits {
    /// Bytes read for a request head before it is refused with 431.
    fn read_limit(&self) -> usize {
        self.max_header_bytes.saturating_add(HEADER_SLACK)
    }

    /// The deadline for writing `len` bytes, from `now`.
    fn write_deadline(&self, now: Instant, len: usize) -> Instant {
        let rate = self.min_write_rate.max(1);
        let extra = Duration::from_secs((len as u64) / rate);
        now + self.write_timeout + extra
    }
}

/// Names used by an [`HttpServer`] for its threads and log lines.
#[derive(Debug, Clone)]
pub struct Config {
    /// Prefix of log lines, e.g. `Monitoring`.
    pub log_name: &'static str,
    /// Name of the acceptor thread.
    pub acceptor_thread: &'static str,
    /// Name of the connection threads.
    pub connection_thread: &'static str,
    /// The limits.
    pub limits: Limits,
}

/// A parsed request, as the handler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method token (`GET`, `HEAD`, `POST`, ...), as sent (case-sensitive).
    pub method: &'a str,
    /// The request target as sent (`/connz?subs=1`, `*`, `http://host/varz`).
    pub target: &'a str,
    /// The decoded path (Go's `URL.Path`): `%XX` escapes decoded, `+` kept. Empty for an
    /// absolute target without a path; `*` for the target `*`.
    pub path: Cow<'a, [u8]>,
    /// The query, undecoded, without the `?` (Go's `URL.RawQuery`).
    pub raw_query: &'a str,
    /// The minor HTTP version: 0 for HTTP/1.0, 1 for HTTP/1.1 (and 1.2 to 1.9).
    pub minor_version: u8,
}

/// A response from the handler. The server adds `Date`, `Content-Length` and, when needed,
/// `Connection`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields, written in this order (`Content-Type` first, by convention). CR and
    /// LF in a value are written as spaces, as Go does.
    pub headers: Vec<(&'static str, String)>,
    /// The body (not sent for `HEAD`; its length is).
    pub body: Vec<u8>,
}

/// Computes responses. Called from several connection threads at once.
pub trait Handler: Send + Sync + 'static {
    /// The response to `request`. A panic here is caught and answered with a 500.
    fn handle(&self, request: &Request<'_>) -> Response;
}

mod exchange;
mod head;
#[cfg(test)]
mod tests;

pub use exchange::{http_date, serve_script};
use exchange::{serve, Transport};
pub use head::*;

// ---------------------------------------------------------------------------------------
// The server: acceptor, slots, connection threads
// ---------------------------------------------------------------------------------------

/// A running HTTP server (see the module docs). Stopped by [`HttpServer::stop`] or drop.
pub struct HttpServer {
    state: Arc<State>,
    acceptor: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// What the acceptor, the connection threads and `stop` share.
struct State {
    config: Config,
    handler: Arc<dyn Handler>,
    /// The connection slots. One `parking_lot::Mutex`, taken briefly by the acceptor (admit,
    /// evict), by each connection thread when it goes idle or busy and when it ends, and by
    /// `stop`. Nothing else is locked under it, and no socket I/O is done under it (the
    /// acceptor shuts a victim down after unlocking).
    table: Mutex<Table>,
    /// Signalled when a slot is released, the acceptor ends, or stopping begins.
    changed: Condvar,
}

#[derive(Default)]
struct Table {
    stopping: bool,
    acceptor_done: bool,
    next_id: u64,
    /// The open connections (at most `max_connections`).
    slots: Vec<Slot>,
    /// Connections shut down to make room, whose threads have not ended yet (at most
    /// `max_evicting`, or one).
    evicted: Vec<Slot>,
    /// Threads that have ended (released their slot): they are joined before another
    /// thread starts, so that the number of threads, not only of slots, stays bounded.
    finished: Vec<JoinHandle<()>>,
}

/// One connection: its socket (shared with its thread) and what eviction looks at.
struct Slot {
    id: u64,
    stream: Arc<TcpStream>,
    /// Waiting for a request (rather than reading, computing or writing one).
    idle: bool,
    /// When `idle` last changed (or the connection was accepted).
    since: Instant,
    /// Set when the connection is evicted or the server stops; its thread looks at it
    /// between read slices (see [`Limits::read_slice`]). Relaxed: it publishes nothing,
    /// and the `shutdown()` that follows it is what wakes the thread where it can.
    cancel: Arc<AtomicBool>,
    /// The connection's thread, once started.
    thread: Option<JoinHandle<()>>,
}

impl Slot {
    /// Tells the connection's thread to end, and shuts its socket down (which wakes it at
    /// once on Unix). Called without the table lock held.
    fn cancel(cancel: &AtomicBool, stream: &TcpStream) {
        cancel.store(true, Ordering::Relaxed);
        let _ = stream.shutdown(Shutdown::Both);
    }
}

impl Table {
    /// Evicts a connection, the longest idle one, else the longest busy one: moves it to
    /// `evicted` and returns what is needed to cancel it.
    fn evict(&mut self) -> Option<(Arc<AtomicBool>, Arc<TcpStream>)> {
        let i = self
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| (!s.idle, s.since))
            .map(|(i, _)| i)?;
        let victim = self.slots.swap_remove(i);
        let handles = (victim.cancel.clone(), victim.stream.clone());
        self.evicted.push(victim);
        Some(handles)
    }
}

/// Admission of a new connection.
enum Admit {
    /// Registered under this id, with this cancel flag.
    Slot(u64, Arc<AtomicBool>),
    /// No slot came free in time: drop the connection.
    NoRoom,
    /// The server is stopping.
    Stopping,
}

impl State {
    /// Registers `stream`, evicting another connection if every slot is taken (see
    /// [`Limits::max_evicting`] for when the new connection waits for the evicted one's
    /// thread to end). Returns the new connection's id and its cancel flag.
    fn admit(&self, stream: &Arc<TcpStream>) -> Admit {
        let limits = &self.config.limits;
        let max = limits.max_connections.max(1);
        let deadline = Instant::now() + limits.evict_wait;
        let mut table = self.table.lock();
        loop {
            if table.stopping {
                return Admit::Stopping;
            }
            let threads = table.slots.len() + table.evicted.len();
            if table.slots.len() < max && threads < max + limits.max_evicting {
                let id = table.next_id;
                table.next_id += 1;
                let cancel = Arc::new(AtomicBool::new(false));
                table.slots.push(Slot {
                    id,
                    stream: stream.clone(),
                    idle: true,
                    since: Instant::now(),
                    cancel: cancel.clone(),
                    thread: None,
                });
                return Admit::Slot(id, cancel);
            }
            // Full: evict one connection, unless as many as allowed are still ending; then
            // wait for a thread to end.
            if table.slots.len() >= max && table.evicted.len() < limits.max_evicting.max(1) {
                if let Some((cancel, victim)) = table.evict() {
                    MutexGuard::unlocked(&mut table, || Slot::cancel(&cancel, &victim));
                    continue;
                }
            }
            if self.changed.wait_until(&mut table, deadline).timed_out() {
                return Admit::NoRoom;
            }
        }
    }

    fn set_idle(&self, id: u64, idle: bool) {
        let mut table = self.table.lock();
        if let Some(s) = table.slots.iter_mut().find(|s| s.id == id) {
            if s.idle != idle {
                s.idle = idle;
                s.since = Instant::now();
            }
        }
    }

    /// Called by a connection's thread as it ends (see [`SlotGuard`]).
    fn release(&self, id: u64) {
        let slot = {
            let mut table = self.table.lock();
            let mut slot = match table.slots.iter().position(|s| s.id == id) {
                Some(i) => Some(table.slots.swap_remove(i)),
                None => {
                    let i = table.evicted.iter().position(|s| s.id == id);
                    i.map(|i| table.evicted.swap_remove(i))
                }
            };
            if let Some(thread) = slot.as_mut().and_then(|s| s.thread.take()) {
                table.finished.push(thread);
            }
            self.changed.notify_all();
            slot
        };
        // The socket is closed (if this was its last handle) outside the lock.
        drop(slot);
    }

    /// Records the thread of connection `id`; joins it later if it already ended.
    fn started(&self, id: u64, thread: JoinHandle<()>) {
        let mut table = self.table.lock();
        let Table {
            slots,
            evicted,
            finished,
            ..
        } = &mut *table;
        match slots
            .iter_mut()
            .chain(evicted.iter_mut())
            .find(|s| s.id == id)
        {
            Some(slot) => slot.thread = Some(thread),
            None => finished.push(thread),
        }
    }

    /// Joins the threads whose slot was released. They are past their last line, so each
    /// join returns at once.
    fn reap(&self) {
        let finished = std::mem::take(&mut self.table.lock().finished);
        for thread in finished {
            let _ = thread.join();
        }
    }
}

/// Releases a connection's slot when its thread ends, normally or by a panic.
struct SlotGuard {
    state: Arc<State>,
    id: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.state.release(self.id);
    }
}

/// A connection thread's socket.
struct Tcp {
    stream: Arc<TcpStream>,
    state: Arc<State>,
    id: u64,
    /// Set when the connection is evicted or the server stops (see [`Slot::cancel`]).
    cancel: Arc<AtomicBool>,
    /// [`Limits::read_slice`].
    read_slice: Option<Duration>,
}

impl Tcp {
    /// The error a cancelled connection's I/O returns.
    fn cancelled(&self) -> Option<io::Error> {
        self.cancel
            .load(Ordering::Relaxed)
            .then(|| io::ErrorKind::ConnectionAborted.into())
    }
}

/// Whether an I/O error is a timeout of the socket's read or write timeout.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Transport for Tcp {
    fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
        loop {
            if let Some(e) = self.cancelled() {
                return Err(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            let wait = self.read_slice.map_or(left, |slice| left.min(slice));
            self.stream.set_read_timeout(Some(wait))?;
            match (&*self.stream).read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => {}
                r => return r,
            }
        }
    }

    // Writes are not cut into slices: after a send times out, Windows leaves the socket in
    // an undefined state. A cancelled connection blocked in a write on Windows ends at its
    // write deadline; `max_evicting` bounds how many may be doing that.
    fn write_all_by(&mut self, mut buf: &[u8], deadline: Instant) -> io::Result<()> {
        while !buf.is_empty() {
            if let Some(e) = self.cancelled() {
                return Err(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.stream.set_write_timeout(Some(left))?;
            match (&*self.stream).write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn close_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    fn set_idle(&mut self, idle: bool) {
        self.state.set_idle(self.id, idle);
    }
}

impl HttpServer {
    /// Starts serving `listener` with `handler`: the acceptor thread starts now, connection
    /// threads as connections come. Errors: the acceptor thread could not be started.
    pub fn spawn(
        listener: TcpListener,
        handler: Arc<dyn Handler>,
        config: Config,
    ) -> io::Result<HttpServer> {
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            config,
            handler,
            table: Mutex::new(Table::default()),
            changed: Condvar::new(),
        });
        let acceptor = {
            let state = state.clone();
            std::thread::Builder::new()
                .name(state.config.acceptor_thread.into())
                .spawn(move || accept_loop(&state, &listener))?
        };
        Ok(HttpServer {
            state,
            acceptor: Some(acceptor),
            addr,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections open now (each has its thread; evicted ones still ending not counted).
    pub fn connections(&self) -> usize {
        self.state.table.lock().slots.len()
    }

    /// Stops accepting, shuts every connection down (a response being written is cut), and
    /// waits at most [`Limits::stop_wait`] for the threads to end; a thread still busy then
    /// (a handler that does not return) is left to finish on its own.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        let conns: Vec<(Arc<AtomicBool>, Arc<TcpStream>)> = {
            let mut table = self.state.table.lock();
            table.stopping = true;
            self.state.changed.notify_all();
            let all = table.slots.iter().chain(table.evicted.iter());
            all.map(|s| (s.cancel.clone(), s.stream.clone())).collect()
        };
        for (cancel, stream) in conns {
            Slot::cancel(&cancel, &stream);
        }
        // The acceptor is blocked in accept(): a connection to ourselves wakes it.
        let _ = TcpStream::connect_timeout(&wake_addr(self.addr), Duration::from_secs(1));
        let name = self.state.config.log_name;
        let deadline = Instant::now() + self.state.config.limits.stop_wait;
        let mut table = self.state.table.lock();
        while !(table.acceptor_done && table.slots.is_empty() && table.evicted.is_empty()) {
            if self
                .state
                .changed
                .wait_until(&mut table, deadline)
                .timed_out()
            {
                break;
            }
        }
        let (done, left) = (table.acceptor_done, table.slots.len() + table.evicted.len());
        drop(table);
        self.state.reap();
        if done {
            let _ = acceptor.join();
        } else {
            log::warn!("{name}: the HTTP acceptor did not stop in time");
        }
        if left > 0 {
            log::warn!("{name}: {left} HTTP connections still busy at shutdown");
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Where to connect to reach a listener bound to `local` (loopback for a wildcard).
fn wake_addr(local: SocketAddr) -> SocketAddr {
    let mut a = local;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

fn accept_loop(state: &Arc<State>, listener: &TcpListener) {
    let name = state.config.log_name;
    // After an accept error (e.g. out of file descriptors) back off from 10 ms doubling up
    // to 1 s, instead of spinning.
    let mut backoff = Duration::from_millis(10);
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                if state.table.lock().stopping {
                    break;
                }
                if e.kind() != io::ErrorKind::Interrupted {
                    log::error!(
                        "{name}: error accepting a connection: {e}; retrying in {backoff:?}"
                    );
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                continue;
            }
        };
        backoff = Duration::from_millis(10);
        let stream = Arc::new(stream);
        let (id, cancel) = match state.admit(&stream) {
            Admit::Slot(id, cancel) => (id, cancel),
            Admit::NoRoom => {
                log::debug!("{name}: no connection slot came free; connection dropped");
                continue;
            }
            Admit::Stopping => break,
        };
        // Threads of released slots end before a new one starts: at most
        // `max_connections` connection threads exist at any time.
        state.reap();
        // Small responses should not wait for the client's delayed ACK (Nagle).
        let _ = stream.set_nodelay(true);
        let guard = SlotGuard {
            state: state.clone(),
            id,
        };
        let spawned = {
            let shared = state.clone();
            let handler = state.handler.clone();
            std::thread::Builder::new()
                .name(state.config.connection_thread.into())
                .stack_size(state.config.limits.stack_size)
                .spawn(move || {
                    let _guard = guard;
                    let mut tcp = Tcp {
                        stream,
                        state: shared.clone(),
                        id,
                        cancel,
                        read_slice: shared.config.limits.read_slice,
                    };
                    serve(&mut tcp, &*handler, &shared.config);
                })
        };
        match spawned {
            Ok(thread) => state.started(id, thread),
            // The closure (and the guard in it) is dropped: the slot is released.
            Err(e) => log::error!("{name}: error starting a connection thread: {e}"),
        }
    }
    let mut table = state.table.lock();
    table.acceptor_done = true;
    state.changed.notify_all();
}
