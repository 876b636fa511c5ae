//! The acceptor thread: `accept()` in a loop, one reader thread per connection.

use super::Shared;
use crate::listen::AcceptLoop;
use std::io;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

/// Starts the acceptor. It exits when the server is shutting down or enters lame-duck mode
/// (woken by [`AcceptLoop::stop`]).
pub(super) fn spawn(shared: Arc<Shared>, listener: TcpListener) -> io::Result<AcceptLoop> {
    AcceptLoop::spawn("beaver-acceptor", 256 * 1024, listener, move |l| {
        run(shared, l)
    })
}

fn run(shared: Arc<Shared>, listener: &TcpListener) {
    // After an accept error (e.g. out of file descriptors) back off, as nats-server does,
    // from 10 ms doubling up to 1 s, instead of spinning.
    let mut backoff = Duration::from_millis(10);
    loop {
        match listener.accept() {
            Ok((stream, addr)) => {
                let addr = crate::listen::canonical(addr);
                if shared.stops_accepting() {
                    return;
                }
                backoff = Duration::from_millis(10);
                if let Err(e) = crate::session::spawn(&shared, stream, addr) {
                    log::error!("Error starting client connection from {addr}: {e}");
                }
            }
            Err(e) => {
                if shared.stops_accepting() {
                    return;
                }
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                log::error!("Error accepting client connection: {e}; retrying in {backoff:?}");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
