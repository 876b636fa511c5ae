//! Waiting for the signal to stop: SIGINT or SIGTERM on Unix (`signal-hook`), Ctrl-C or
//! console close on Windows (`ctrlc`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the main thread looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// Blocks until the process is asked to stop.
///
/// The handler only sets a flag (the one thing a signal handler may safely do) and the main
/// thread polls it. Polling ten times a second costs nothing and cannot fail the way a
/// blocking wait on a signal pipe can (for instance when a debugger interrupts it).
pub fn wait_for_shutdown() {
    let stop = Arc::new(AtomicBool::new(false));
    if let Err(e) = install(&stop) {
        log::error!("Cannot install signal handlers: {e}; stop the server by killing it");
    }
    // SeqCst pairs with the handler's store; a missed wake-up costs one poll period.
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(POLL);
    }
    log::debug!("Trapped a stop signal");
}

#[cfg(unix)]
fn install(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(())
}

#[cfg(windows)]
fn install(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    let stop = stop.clone();
    ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
        .map_err(|e| std::io::Error::other(e.to_string()))
}
