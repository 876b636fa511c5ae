//! Waiting for a Windows socket to become readable or writable, with `WSAPoll`: how the
//! reader waits for data, bounded by its timers, without the socket timeouts that
//! Microsoft documents as leaving a socket in an indeterminate state once they expire (see
//! the parent module). One Win32 call, with its safety conditions written next to it.
#![allow(unsafe_code)]

use std::io;
use std::net::TcpStream;
use std::os::windows::io::AsRawSocket;
use std::time::Duration;
use windows_sys::Win32::Networking::WinSock::{
    WSAGetLastError, WSAPoll, POLLRDNORM, POLLWRNORM, SOCKET, SOCKET_ERROR, WSAPOLLFD,
};

/// Waits until `stream` has data to read (or is closed, or in error: the next read says
/// which), at most `timeout`. Returns whether it is ready.
pub(super) fn wait_readable(stream: &TcpStream, timeout: Duration) -> io::Result<bool> {
    poll(stream, POLLRDNORM, timeout)
}

/// Waits until `stream` has room to write (or is in error), at most `timeout`.
pub(super) fn wait_writable(stream: &TcpStream, timeout: Duration) -> io::Result<()> {
    poll(stream, POLLWRNORM, timeout).map(|_| ())
}

fn poll(stream: &TcpStream, events: i16, timeout: Duration) -> io::Result<bool> {
    let mut fd = WSAPOLLFD {
        fd: stream.as_raw_socket() as SOCKET,
        events,
        revents: 0,
    };
    // Whole milliseconds, rounded up (a 0 timeout would not wait at all), and below
    // i32::MAX (a negative one would wait forever).
    let millis = timeout
        .as_nanos()
        .div_ceil(1_000_000)
        .clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `fd` is a valid, initialised WSAPOLLFD that lives across the call, and the
    // count passed (1) is the number of entries it points to. The socket handle belongs to
    // `stream`, which the caller borrows for the whole call, so it stays open. WSAPoll only
    // writes `revents` of that entry.
    let n = unsafe { WSAPoll(&mut fd, 1, millis) };
    if n == SOCKET_ERROR {
        // SAFETY: no arguments; reads this thread's last Winsock error.
        let code = unsafe { WSAGetLastError() };
        return Err(io::Error::from_raw_os_error(code));
    }
    // Readiness, or a hang-up / error that the next read or write reports.
    Ok(n > 0)
}
