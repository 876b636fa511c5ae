//! The acceptor threads: `accept()` in a loop, one reader thread per connection; one for
//! the client port, one for the WebSocket port.

use super::Shared;
use crate::listen::AcceptLoop;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// What an acceptor does with a connection: start its reader. An error is logged (the
/// connection is the starter's to close).
pub type Start = Box<dyn Fn(&Arc<Shared>, TcpStream, SocketAddr) -> io::Result<()> + Send>;

/// Starts the client acceptor. It exits when the server is shutting down or enters lame-duck
/// mode (woken by [`AcceptLoop::stop`]). `start` runs each client connection: a reader
/// thread's (`session::spawn`) unless the caller has its own runner.
pub(super) fn spawn(
    shared: Arc<Shared>,
    listener: TcpListener,
    start: Option<Start>,
) -> io::Result<AcceptLoop> {
    let start = start.unwrap_or_else(|| Box::new(crate::session::spawn));
    spawn_with("beaver-acceptor", shared, listener, start)
}

/// Starts an acceptor thread named `name` that hands each connection to `start`.
pub(super) fn spawn_with(
    name: &'static str,
    shared: Arc<Shared>,
    listener: TcpListener,
    start: Start,
) -> io::Result<AcceptLoop> {
    AcceptLoop::spawn(name, 256 * 1024, listener, move |l| run(shared, l, &start))
}

fn run(shared: Arc<Shared>, listener: &TcpListener, start: &Start) {
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
                if let Err(e) = start(&shared, stream, addr) {
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
