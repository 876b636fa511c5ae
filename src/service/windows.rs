//! The Windows side of `service`: the SCM's entry point, the control handler, the state
//! reports, and how a process knows it is a service.
//!
//! `windows-service` wraps the SCM's API. Its `define_windows_service!` macro writes the
//! `extern "system"` entry point the SCM calls (with `unsafe` inside, hence this module's
//! allowance), and the process snapshot that finds the parent process is Win32
//! (`windows-sys`); each of those calls states its safety condition.
//!
//! The handoffs: `run_service` (main thread) leaves the server's body in [`BODY`] for
//! `service_main` (the thread the SCM starts) to take; `service_main` leaves the exit code
//! in [`EXIT`] for `run_service` to return once the dispatcher returns. The dispatcher (the
//! main thread) calls the control handler; it only raises requests (`Raise`: an atomic flag
//! and a doorbell) once [`ServiceHost::attach`] has set them.

use super::Host;
use crate::config::units::parse_duration;
use crate::signals::scm::{LAME_DUCK, REOPEN_LOG};
use crate::signals::{program_name, Raise, Request, Signals};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use std::ffi::OsString;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use windows_service::service::{
    ServiceControl, ServiceControlAccept, ServiceExitCode, ServiceState, ServiceStatus, ServiceType,
};
use windows_service::service_control_handler::{
    self, ServiceControlHandlerResult, ServiceStatusHandle,
};
use windows_service::{define_windows_service, service_dispatcher};
use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};

/// nats-server's default for `NATS_STARTUP_DELAY`.
const DEFAULT_STARTUP_DELAY: Duration = Duration::from_secs(10);
/// The wait hint while stopping: how long the SCM should allow between reports.
const STOP_WAIT_HINT: Duration = Duration::from_secs(30);

/// The server, from `main` to the SCM's thread.
type Body = Box<dyn FnOnce(&Host) -> u8 + Send>;

/// Set once by `run_service`, taken once by `service_main` (a mutex, not a channel: there
/// is one value, and the SCM calls `service_main` at most once per process).
static BODY: Mutex<Option<Body>> = Mutex::new(None);

/// The service's exit code. `service_main` stores it before it reports the service
/// stopped, which is what lets the dispatcher return to `run_service` (so the store
/// happens before the load); `SeqCst`, though the report's own synchronization would do.
static EXIT: AtomicU8 = AtomicU8::new(1);

define_windows_service!(ffi_service_main, service_main);

/// Runs `body` as the service the SCM started: blocks until the service stops, and returns
/// the exit code `body` returned (1 if the SCM never called back). Call it from the main
/// thread, only when [`started_by_service_manager`] is true. Errors: the SCM could not be
/// reached (the process is not a service after all).
pub fn run_service(body: impl FnOnce(&Host) -> u8 + Send + 'static) -> Result<u8, String> {
    *BODY.lock() = Some(Box::new(body));
    // For a service of its own process the SCM ignores the name given here.
    service_dispatcher::start(program_name(), ffi_service_main).map_err(|e| match e {
        windows_service::Error::Winapi(io) => {
            format!("cannot connect to the service control manager: {io}")
        }
        other => other.to_string(),
    })?;
    Ok(EXIT.load(Ordering::SeqCst))
}

/// What the control handler raises, once attached.
struct Raisers {
    stop: Raise,
    reload: Raise,
    reopen: Raise,
    lame_duck: Raise,
}

/// The SCM's view of the server: its status handle, and what the control handler needs.
pub struct ServiceHost {
    status: ServiceStatusHandle,
    raisers: Arc<OnceLock<Raisers>>,
    /// Rung by [`ServiceHost::ready`]; the start-up watchdog waits on the other end.
    ready: Sender<()>,
    /// `NATS_STARTUP_DELAY` could not be read: said once logging is set up.
    delay_error: Option<String>,
}

impl ServiceHost {
    pub(super) fn attach(&self, signals: &Signals) {
        if let Some(e) = &self.delay_error {
            log::error!("{e}");
        }
        let _ = self.raisers.set(Raisers {
            stop: signals.raiser(Request::Interrupt),
            reload: signals.raiser(Request::Reload),
            reopen: signals.raiser(Request::Reopen),
            lame_duck: signals.raiser(Request::LameDuck),
        });
    }

    pub(super) fn ready(&self) {
        let _ = self.ready.try_send(());
        report(
            self.status,
            ServiceState::Running,
            ServiceControlAccept::STOP
                | ServiceControlAccept::SHUTDOWN
                | ServiceControlAccept::PARAM_CHANGE,
            0,
            Duration::ZERO,
        );
    }

    pub(super) fn stopping(&self) {
        report(
            self.status,
            ServiceState::StopPending,
            ServiceControlAccept::empty(),
            0,
            STOP_WAIT_HINT,
        );
    }
}

/// Tells the SCM the service's state (errors are ignored: the SCM is the only one to tell).
fn report(
    status: ServiceStatusHandle,
    state: ServiceState,
    accepts: ServiceControlAccept,
    exit: u32,
    wait_hint: Duration,
) {
    let _ = status.set_service_status(ServiceStatus {
        service_type: ServiceType::OWN_PROCESS,
        current_state: state,
        controls_accepted: accepts,
        exit_code: ServiceExitCode::Win32(exit),
        checkpoint: 0,
        // The hint is a DWORD of milliseconds (the crate panics on a longer one).
        wait_hint: wait_hint.min(Duration::from_millis(u64::from(u32::MAX))),
        process_id: None,
    });
}

/// `NATS_STARTUP_DELAY` (Go's duration syntax), or the default with the reason it was not
/// used.
fn startup_delay() -> (Duration, Option<String>) {
    startup_delay_of(std::env::var("NATS_STARTUP_DELAY").ok())
}

/// [`startup_delay`] for the variable's value, if set.
fn startup_delay_of(value: Option<String>) -> (Duration, Option<String>) {
    match value {
        None => (DEFAULT_STARTUP_DELAY, None),
        Some(v) => match parse_duration(&v) {
            Ok(d) => (d, None),
            Err(e) => (
                DEFAULT_STARTUP_DELAY,
                Some(format!(
                    "Failed to parse {v:?} as a duration for startup: {e}"
                )),
            ),
        },
    }
}

/// The control handler: a request for the server, or nothing.
fn on_control(raisers: &OnceLock<Raisers>, control: ServiceControl) -> ServiceControlHandlerResult {
    let Some(r) = raisers.get() else {
        // Not attached yet: the service reports no accepted controls until it runs.
        return match control {
            ServiceControl::Interrogate => ServiceControlHandlerResult::NoError,
            _ => ServiceControlHandlerResult::NotImplemented,
        };
    };
    let raise = match control {
        ServiceControl::Interrogate => return ServiceControlHandlerResult::NoError,
        ServiceControl::Stop | ServiceControl::Shutdown => &r.stop,
        ServiceControl::ParamChange => &r.reload,
        ServiceControl::UserEvent(code) if code.to_raw() == REOPEN_LOG => &r.reopen,
        ServiceControl::UserEvent(code) if code.to_raw() == LAME_DUCK => &r.lame_duck,
        other => {
            log::debug!("Unexpected control request: {other:?}");
            return ServiceControlHandlerResult::NotImplemented;
        }
    };
    raise.raise();
    ServiceControlHandlerResult::NoError
}

/// Called by the SCM on its own thread (through `ffi_service_main`): registers the control
/// handler, reports *start pending*, runs the body, reports *stopped*.
fn service_main(args: Vec<OsString>) {
    // The SCM passes the service's name first.
    let name = args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(program_name);
    let raisers: Arc<OnceLock<Raisers>> = Arc::default();
    let handler = {
        let raisers = raisers.clone();
        move |control| on_control(&raisers, control)
    };
    let status = match service_control_handler::register(&name, handler) {
        Ok(status) => status,
        Err(e) => {
            // Without a status handle nothing can be reported, and the dispatcher would wait
            // for a report that never comes: say why where an administrator will look.
            if crate::logging::init_service(&crate::config::Config::default()).is_ok() {
                log::error!("Cannot register with the service control manager: {e}");
            }
            std::process::exit(1);
        }
    };
    let (delay, delay_error) = startup_delay();
    report(
        status,
        ServiceState::StartPending,
        ServiceControlAccept::empty(),
        0,
        delay,
    );
    let (ready, readiness) = crossbeam_channel::bounded(1);
    watch_start(status, delay, readiness);
    let body = BODY.lock().take();
    let code = match body {
        Some(body) => body(&Host::Service(ServiceHost {
            status,
            raisers,
            ready,
            delay_error,
        })),
        None => 1,
    };
    EXIT.store(code, Ordering::SeqCst);
    report(
        status,
        ServiceState::Stopped,
        ServiceControlAccept::empty(),
        u32::from(code),
        Duration::ZERO,
    );
}

/// Gives the server `delay` to be ready: if it is not (and has not returned), reports the
/// service stopped with exit code 1 and ends the process, as nats-server does.
fn watch_start(status: ServiceStatusHandle, delay: Duration, readiness: Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name("beaver-service-start".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = readiness.recv_timeout(delay) {
                log::error!(
                    "Not ready for connections within {} (NATS_STARTUP_DELAY): stopping",
                    humantime::format_duration(delay)
                );
                report(
                    status,
                    ServiceState::Stopped,
                    ServiceControlAccept::empty(),
                    1,
                    Duration::ZERO,
                );
                std::process::exit(1);
            }
        });
    if let Err(e) = spawned {
        log::error!("Cannot watch the service's start-up: {e}");
    }
}

/// Whether the service control manager started this process: its parent is
/// `services.exe` (Go's `svc.IsWindowsService` asks the same), unless `NATS_DOCKERIZED=1`.
pub fn started_by_service_manager() -> bool {
    if std::env::var_os("NATS_DOCKERIZED").is_some_and(|v| v == "1") {
        return false;
    }
    parent_image().is_some_and(|name| {
        let name = name.to_ascii_lowercase();
        name == "services.exe" || name.ends_with("\\services.exe")
    })
}

/// The executable name of this process's parent, from a snapshot of the processes.
fn parent_image() -> Option<String> {
    // SAFETY: no pointers; the handle is checked and closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if snapshot == INVALID_HANDLE_VALUE || snapshot.is_null() {
        return None;
    }
    let mut processes = Vec::new(); // (pid, parent pid, executable)
    let mut entry = PROCESSENTRY32W {
        dwSize: std::mem::size_of::<PROCESSENTRY32W>() as u32,
        ..Default::default()
    };
    // SAFETY: `snapshot` is a valid process snapshot; `entry` is a PROCESSENTRY32W whose
    // `dwSize` is set, as both calls require.
    let mut more = unsafe { Process32FirstW(snapshot, &mut entry) } != 0;
    while more {
        let len = entry
            .szExeFile
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(entry.szExeFile.len());
        processes.push((
            entry.th32ProcessID,
            entry.th32ParentProcessID,
            String::from_utf16_lossy(&entry.szExeFile[..len]),
        ));
        // SAFETY: as for Process32FirstW.
        more = unsafe { Process32NextW(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot handle is valid and closed once.
    unsafe { CloseHandle(snapshot) };
    let me = std::process::id();
    let parent = processes.iter().find(|(pid, ..)| *pid == me)?.1;
    processes
        .iter()
        .find(|(pid, ..)| *pid == parent)
        .map(|(_, _, name)| name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_delay_is_read_as_nats_server_reads_it() {
        assert_eq!(startup_delay_of(None), (DEFAULT_STARTUP_DELAY, None));
        assert_eq!(
            startup_delay_of(Some("1m30s".into())),
            (Duration::from_secs(90), None)
        );
        let (d, e) = startup_delay_of(Some("soon".into()));
        assert_eq!(d, DEFAULT_STARTUP_DELAY);
        assert!(e
            .unwrap()
            .starts_with("Failed to parse \"soon\" as a duration for startup: "),);
    }

    /// A test process is not a service: its parent is the test harness (under Wine, a Unix
    /// process the snapshot does not list).
    #[test]
    fn a_console_process_is_not_a_service() {
        assert!(!started_by_service_manager());
        assert!(!parent_image().is_some_and(|p| p.eq_ignore_ascii_case("services.exe")));
    }
}
