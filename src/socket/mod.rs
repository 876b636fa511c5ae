//! A connection's socket, shared by its reader thread and the writer pool, with the only
//! two ways beaver uses it:
//!
//! - the **reader** blocks in [`Socket::read`] for at most its current read timeout
//!   ([`Socket::set_read_timeout`]: the ping or authentication timer), and writes directly
//!   (INFO and the TLS handshake, before any writer is involved) with
//!   [`Socket::write_all_until`];
//! - a **writer** never blocks on it: [`Socket::try_write_vectored`] writes what the kernel
//!   takes at once and returns `WouldBlock` when the socket is full. A writer serves many
//!   clients, so one client that stops reading must not make the others wait (a blocking
//!   write to a full socket, even bounded by a 1 ms timeout, cost every other client that
//!   slice, and 50 subscribers filling up at once stalled everyone for hundreds of
//!   milliseconds; see docs/benchmarks.md, "Mass slow-consumer cut").
//!
//! One descriptor serves both: `Read`/`Write` are implemented for `&TcpStream`, and the
//! kernel keeps the two directions apart.
//!
//! ## Unix and Windows
//! A socket's blocking mode is shared by both directions, so the reader's blocking reads and
//! the writers' non-blocking writes need care:
//! - **Unix**: the socket stays blocking. Reads use the socket's receive timeout
//!   (`SO_RCVTIMEO`); writes pass `MSG_DONTWAIT`, which makes that one call non-blocking.
//! - **Windows** has no per-call flag, and Microsoft documents that a socket whose
//!   `SO_RCVTIMEO`/`SO_SNDTIMEO` expired is in an indeterminate state, so beaver relies on
//!   neither timeout there: the socket is non-blocking, the reader waits for data with
//!   `WSAPoll` (bounded by its read timeout) before each read, and direct writes wait for
//!   room the same way (`socket::windows`, the only unsafe code besides the signal events).

#[cfg(windows)]
mod windows;

mod read_buffer;
pub use read_buffer::{ReadBuffer, MAX_READ, MIN_READ, START_READ};

use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The shortest timeout set on a socket (a zero timeout would mean "none").
const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// A connected TCP socket, shared (in an `Arc`) by one reader and the writers; see the
/// module docs for who calls what.
#[derive(Debug)]
pub struct Socket {
    stream: TcpStream,
    /// The reader's read timeout in nanoseconds (0: none): on Windows what `WSAPoll` waits;
    /// elsewhere what an async runner waits for readiness ([`Socket::read_timeout`]; a
    /// blocking reader's wait is the socket's own `SO_RCVTIMEO`). Relaxed: written and read
    /// by the reader only.
    read_timeout: AtomicU64,
}

impl Socket {
    /// Prepares an accepted or dialled connection: Nagle off (Go's default, which NATS
    /// clients expect) and, on Windows, non-blocking mode (see the module docs).
    pub fn new(stream: TcpStream) -> io::Result<Socket> {
        stream.set_nodelay(true)?;
        #[cfg(windows)]
        stream.set_nonblocking(true)?;
        Ok(Socket {
            stream,
            read_timeout: AtomicU64::new(0),
        })
    }

    /// For a reader that never blocks in [`Socket::read`] (an async runner, which waits for
    /// readiness itself): makes reads return `WouldBlock` at once when nothing has arrived.
    /// Writers are unaffected (theirs never block anyway); [`Socket::write_all_until`] then
    /// spins until its deadline on a full socket, so such a reader must not use it (only
    /// TLS does).
    pub fn set_nonblocking(&self) -> io::Result<()> {
        self.stream.set_nonblocking(true)
    }

    /// The read timeout last set (see [`Socket::set_read_timeout`]); zero before the first.
    pub fn read_timeout(&self) -> Duration {
        Duration::from_nanos(self.read_timeout.load(Ordering::Relaxed))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.stream.peer_addr()
    }

    /// Reader only: the longest a [`Socket::read`] waits (at least 1 ms) before it fails with
    /// `WouldBlock` or `TimedOut`.
    pub fn set_read_timeout(&self, timeout: Duration) -> io::Result<()> {
        let timeout = timeout.max(MIN_TIMEOUT);
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        self.read_timeout.store(nanos, Ordering::Relaxed);
        #[cfg(windows)]
        {
            Ok(())
        }
        #[cfg(not(windows))]
        self.stream.set_read_timeout(Some(timeout))
    }

    /// Reader only: reads what has arrived, waiting at most the read timeout. `Ok(0)` is the
    /// end of the stream; a timeout is `WouldBlock` or `TimedOut` (as the platform says).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(windows)]
        {
            let timeout = Duration::from_nanos(self.read_timeout.load(Ordering::Relaxed));
            let deadline = Instant::now() + timeout;
            loop {
                match (&self.stream).read(buf) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() || !windows::wait_readable(&self.stream, left)? {
                            return Err(ErrorKind::TimedOut.into());
                        }
                    }
                    other => return other,
                }
            }
        }
        #[cfg(not(windows))]
        (&self.stream).read(buf)
    }

    /// A writer's write: as much of `iov` as the socket takes now, never waiting. A full
    /// socket is `Err(WouldBlock)`.
    pub fn try_write_vectored(&self, iov: &[IoSlice<'_>]) -> io::Result<usize> {
        #[cfg(unix)]
        {
            // `sendmsg` with MSG_DONTWAIT: this one call is non-blocking, the socket's mode
            // (the reader's blocking reads) is unchanged. MSG_NOSIGNAL: a peer that is gone
            // is an error, not a SIGPIPE (std ignores SIGPIPE, a library user may not).
            #[cfg(any(target_os = "linux", target_os = "android"))]
            const FLAGS: libc::c_int = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            const FLAGS: libc::c_int = libc::MSG_DONTWAIT;
            socket2::SockRef::from(&self.stream).send_vectored_with_flags(iov, FLAGS)
        }
        #[cfg(not(unix))]
        // The socket is non-blocking (see `Socket::new`).
        (&self.stream).write_vectored(iov)
    }

    /// Reader only: writes all of `bytes`, waiting for room until `deadline` (INFO and the
    /// TLS handshake, written before any writer touches the socket). Past the deadline:
    /// `TimedOut`.
    pub fn write_all_until(&self, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
        while !bytes.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ErrorKind::TimedOut.into());
            }
            #[cfg(windows)]
            let result = match (&self.stream).write(bytes) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    windows::wait_writable(&self.stream, left)?;
                    continue;
                }
                other => other,
            };
            #[cfg(not(windows))]
            let result = {
                // Only the reader writes before the writers take over, so the socket's send
                // timeout is this call's to set (writers never block: see the module docs).
                self.stream.set_write_timeout(Some(left.max(MIN_TIMEOUT)))?;
                (&self.stream).write(bytes)
            };
            match result {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Shuts both directions down: the reader's blocking read returns, writes fail. Errors
    /// mean the socket is already gone, which is what the caller wants: ignored.
    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

/// The descriptor, for a runner that waits for readiness itself (beaver-async registers it
/// with tokio's reactor).
#[cfg(unix)]
impl std::os::fd::AsRawFd for Socket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.stream.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (Socket, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        (Socket::new(server).unwrap(), client)
    }

    /// A writer's write never waits: once the peer stops reading and the buffers are full,
    /// it says `WouldBlock` at once, and the reader side keeps working.
    #[test]
    fn writes_never_block_and_reads_time_out() {
        let (s, mut peer) = pair();
        let chunk = vec![7u8; 64 * 1024];
        let mut total = 0usize;
        let full = loop {
            match s.try_write_vectored(&[IoSlice::new(&chunk)]) {
                Ok(n) => total += n,
                Err(e) => break e,
            }
            assert!(total < 1 << 30, "a socket buffer is not a gigabyte");
        };
        assert_eq!(full.kind(), ErrorKind::WouldBlock);
        s.set_read_timeout(Duration::from_millis(20)).unwrap();
        let mut buf = [0u8; 16];
        let e = s.read(&mut buf).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{e}"
        );
        peer.write_all(b"PING\r\n").unwrap();
        assert_eq!(s.read(&mut buf).unwrap(), 6);
        // The peer drains; the socket takes data again.
        let mut sink = vec![0u8; 1 << 20];
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut drained = 0;
        while drained < total {
            drained += peer.read(&mut sink).unwrap();
        }
        assert!(s.try_write_vectored(&[IoSlice::new(b"x")]).unwrap() == 1);
        s.shutdown();
    }

    #[test]
    fn direct_writes_wait_until_the_deadline() {
        let (s, mut peer) = pair();
        s.write_all_until(b"INFO {}\r\n", Instant::now() + Duration::from_secs(5))
            .unwrap();
        let mut buf = [0u8; 9];
        peer.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"INFO {}\r\n");
        // A peer that never reads: the write gives up at the deadline.
        let big = vec![0u8; 64 << 20];
        let e = s
            .write_all_until(&big, Instant::now() + Duration::from_millis(200))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
    }
}
