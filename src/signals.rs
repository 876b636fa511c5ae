//! Waiting for the signal to stop: SIGINT or SIGTERM on Unix (`signal-hook`), Ctrl-C or
//! console close on Windows (`ctrlc`).

/// Blocks until the process is asked to stop.
#[cfg(unix)]
pub fn wait_for_shutdown() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;
    match Signals::new([SIGINT, SIGTERM]) {
        Ok(mut signals) => {
            if let Some(sig) = signals.forever().next() {
                log::debug!("Trapped signal {sig}");
            }
        }
        Err(e) => {
            log::error!("Cannot install signal handlers: {e}; stop with SIGKILL");
            loop {
                std::thread::park();
            }
        }
    }
}

/// Blocks until the process is asked to stop.
#[cfg(windows)]
pub fn wait_for_shutdown() {
    let (tx, rx) = std::sync::mpsc::channel();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = tx.send(());
    }) {
        log::error!("Cannot install the Ctrl-C handler: {e}");
        loop {
            std::thread::park();
        }
    }
    let _ = rx.recv();
    log::debug!("Trapped Ctrl-C");
}
