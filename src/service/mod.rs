//! How the process is hosted: from a console, or as a Windows service under the service
//! control manager (SCM), as nats-server runs there (`server/service_windows.go`).
//!
//! `main` asks [`started_by_service_manager`] first. From a console (and on every other
//! system) it runs the server on the main thread with [`Host::Console`], whose hooks do
//! nothing. Under the SCM it calls `run_service` (Windows only): the main thread becomes
//! the SCM's dispatcher, and the server runs on the thread the SCM calls back on, with
//! `Host::Service` (Windows only), whose hooks report the service's state and turn the
//! SCM's control requests into the requests signals raise on Unix:
//!
//! | control | request |
//! |---|---|
//! | stop, shutdown (the machine shuts down) | stop (`Request::Interrupt`: clients get what was queued) |
//! | parameter change (`sc.exe control beaver paramchange`) | reload the configuration |
//! | user control 128 | reopen the log file |
//! | user control 129 | lame-duck mode, then stop |
//!
//! The states reported: *start pending* at once (with a wait hint of `NATS_STARTUP_DELAY`,
//! default 10 s, Go's duration syntax), *running* when the server is ready for clients
//! ([`Host::ready`]), *stop pending* when it starts to shut down ([`Host::stopping`]),
//! *stopped* with the exit code when it is done. A server that is not ready within
//! `NATS_STARTUP_DELAY` is reported stopped with exit code 1, as nats-server reports it,
//! and the process exits (nats-server's lives on, unmanaged). `NATS_STARTUP_DELAY` is
//! nats-server 2.10's; 2.9.10 always allows 10 s. `NATS_DOCKERIZED=1` makes a process never
//! a service, as it does nats-server.

use crate::signals::Signals;

#[cfg(windows)]
#[allow(unsafe_code)] // the SCM's entry point and a process snapshot; see the module docs.
mod windows;

#[cfg(windows)]
pub use windows::{run_service, started_by_service_manager, ServiceHost};

/// Whether the process was started by the service control manager. Always false off
/// Windows.
#[cfg(not(windows))]
pub fn started_by_service_manager() -> bool {
    false
}

/// Where the server runs, and what it tells its host.
pub enum Host {
    /// A console, a terminal, a harness: nothing to report.
    Console,
    /// A Windows service.
    #[cfg(windows)]
    Service(ServiceHost),
}

impl Host {
    /// Whether the process runs as a Windows service (it then logs to the event log unless
    /// told otherwise: `logging::init_service`).
    pub fn is_service(&self) -> bool {
        !matches!(self, Host::Console)
    }

    /// Connects the host's control requests to `signals` (before the server starts: no
    /// control is accepted until [`Host::ready`]).
    pub fn attach(&self, signals: &Signals) {
        #[cfg(windows)]
        if let Host::Service(s) = self {
            s.attach(signals);
        }
        let _ = signals;
    }

    /// The server is ready for clients (the service is *running*).
    pub fn ready(&self) {
        #[cfg(windows)]
        if let Host::Service(s) = self {
            s.ready();
        }
    }

    /// The server starts to shut down (the service is *stop pending*).
    pub fn stopping(&self) {
        #[cfg(windows)]
        if let Host::Service(s) = self {
            s.stopping();
        }
    }
}
