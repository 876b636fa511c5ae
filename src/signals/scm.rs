//! `--signal COMMAND=SERVICE` on Windows: a control request to a service through the
//! service control manager, as nats-server's `ProcessSignal` sends it
//! (`server/signal_windows.go`).
//!
//! | command | control | waits for |
//! |---|---|---|
//! | `stop`, `quit` | `SERVICE_CONTROL_STOP` | stopped |
//! | `reload` | `SERVICE_CONTROL_PARAMCHANGE` | running |
//! | `reopen` | user control [`REOPEN_LOG`] (128) | running |
//! | `ldm` | user control [`LAME_DUCK`] (129) | running, or stopping or stopped |
//!
//! The wait is at most ten seconds, polling every 300 ms, and the errors are nats-server's
//! words. Lame-duck mode with no clients ends at once and the service stops, often before
//! the first look: a stopping or stopped service is the request done too (nats-server waits
//! for "running" only, and so times out in that race). `term` is not a service command (nats-server refuses it too).

use std::io;
use std::time::{Duration, Instant};
use windows_service::service::{ServiceAccess, ServiceState, UserEventCode};
use windows_service::service_manager::{ServiceManager, ServiceManagerAccess};
use windows_sys::Win32::System::Services::{
    ControlService, SERVICE_CONTROL_PARAMCHANGE, SERVICE_CONTROL_STOP, SERVICE_STATUS,
};

/// The user-defined service control that reopens the log file (nats-server's code).
pub const REOPEN_LOG: u32 = 128;
/// The user-defined service control that enters lame-duck mode (nats-server's code).
pub const LAME_DUCK: u32 = 129;

/// How long `--signal` waits for the service to reach the state its command leads to.
const WAIT: Duration = Duration::from_secs(10);
/// How often it looks.
const POLL: Duration = Duration::from_millis(300);

/// The Win32 error inside the crate's error (its own text is "IO error in winapi call").
fn text(e: &windows_service::Error) -> String {
    match e {
        windows_service::Error::Winapi(io) => io_text(io),
        other => other.to_string(),
    }
}

/// An OS error without Rust's ` (os error N)` suffix, as Go prints them.
fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).trim().to_owned()
}

/// Sends `command`'s control to the service `service` and waits for its state.
pub(super) fn control(service: &str, command: &str) -> Result<(), String> {
    let (code, to) = match command {
        "stop" | "quit" => (SERVICE_CONTROL_STOP, ServiceState::Stopped),
        "reopen" => (REOPEN_LOG, ServiceState::Running),
        "reload" => (SERVICE_CONTROL_PARAMCHANGE, ServiceState::Running),
        "ldm" => (LAME_DUCK, ServiceState::Running),
        other => return Err(format!("unknown signal {other:?}")),
    };
    let manager = ServiceManager::local_computer(None::<&str>, ServiceManagerAccess::CONNECT)
        .map_err(|e| text(&e))?;
    let svc = manager
        .open_service(
            service,
            ServiceAccess::QUERY_STATUS
                | ServiceAccess::STOP
                | ServiceAccess::PAUSE_CONTINUE
                | ServiceAccess::USER_DEFINED_CONTROL,
        )
        .map_err(|e| format!("could not access service: {}", text(&e)))?;
    let sent = match code {
        SERVICE_CONTROL_STOP => svc.stop().map(drop).map_err(|e| text(&e)),
        SERVICE_CONTROL_PARAMCHANGE => {
            // The crate has no method for PARAMCHANGE: ControlService on its handle.
            let mut status = SERVICE_STATUS::default();
            // SAFETY: `svc.raw_handle()` is the open service handle (PAUSE_CONTINUE access,
            // which PARAMCHANGE needs), alive for the call; `status` is a valid place for
            // the answer.
            let ok = unsafe { ControlService(svc.raw_handle(), code, &mut status) } != 0;
            if ok {
                Ok(())
            } else {
                Err(io_text(&io::Error::last_os_error()))
            }
        }
        user => UserEventCode::from_raw(user)
            .map_err(|e| e.to_string())
            .and_then(|c| svc.notify(c).map(drop).map_err(|e| text(&e))),
    };
    sent.map_err(|e| format!("could not send control={code}: {e}"))?;
    let deadline = Instant::now() + WAIT;
    loop {
        let status = svc
            .query_status()
            .map_err(|e| format!("could not retrieve service status: {}", text(&e)))?;
        let lame_duck_done = code == LAME_DUCK
            && matches!(
                status.current_state,
                ServiceState::StopPending | ServiceState::Stopped
            );
        if status.current_state == to || lame_duck_done {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "timeout waiting for service to go to state={}",
                to as u32
            ));
        }
        std::thread::sleep(POLL);
    }
}
