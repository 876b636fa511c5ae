//! Signals on Windows: service controls, and named events.
//!
//! Windows has no SIGHUP, SIGUSR1 or SIGUSR2. nats-server's `--signal` there talks to the
//! service control manager, which only reaches a server running as a service; beaver does
//! that too (`--signal reload=SERVICE`, or `--signal reload` for the service named as the
//! executable, `beaver`: the `scm` module). For a server started from a console it uses
//! what Windows offers any process: **named events**. At start-up the server
//! creates one auto-reset event per request, named `Local\beaver-<pid>-<command>` (`stop`,
//! `quit`, `term`, `ldm`, `reload`, `reopen`), and a thread, `beaver-signals`, waits on all
//! of them; `beaver --signal reload=<pid>` opens the event by name and sets it. The thread
//! then raises the request as a Unix signal would, so everything after that is shared with
//! Unix.
//!
//! Events in the `Local\` namespace are visible to the processes of the same login session,
//! and the default security descriptor lets only the creator's account (and
//! administrators) set them: the same people who could kill the process anyway.
//!
//! This is the one module of beaver with `unsafe` code: calls into the Win32 API
//! (`windows-sys`). Each call's safety condition is stated where it is made.

use super::{Raise, Request};
use std::io;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{
    CreateEventW, OpenEventW, SetEvent, WaitForMultipleObjects, EVENT_MODIFY_STATE, INFINITE,
};

/// The commands of `--signal` and what each asks the server for. `stop` and `quit` stop
/// gracefully (there is no SIGKILL to send: use the Task Manager or `taskkill /F` for that).
pub(super) const COMMANDS: [(&str, Request); 6] = [
    ("stop", Request::Interrupt),
    ("quit", Request::Interrupt),
    ("term", Request::Terminate),
    ("ldm", Request::LameDuck),
    ("reload", Request::Reload),
    ("reopen", Request::Reopen),
];

/// The event name for `command` of process `pid`, NUL-terminated UTF-16.
fn event_name(pid: u32, command: &str) -> Vec<u16> {
    format!("Local\\beaver-{pid}-{command}")
        .encode_utf16()
        .chain(std::iter::once(0))
        .collect()
}

/// Creates this process's events and starts the thread that waits on them; a signalled
/// event raises its request with what `raiser` gives.
pub(super) fn listen(raiser: impl Fn(Request) -> Raise) -> io::Result<()> {
    let pid = std::process::id();
    let mut handles: Vec<HANDLE> = Vec::with_capacity(COMMANDS.len());
    let mut flags = Vec::with_capacity(COMMANDS.len());
    for (command, request) in COMMANDS {
        let name = event_name(pid, command);
        // SAFETY: `name` is a NUL-terminated UTF-16 string that outlives the call; a null
        // security-attributes pointer asks for the default descriptor; FALSE, FALSE: an
        // auto-reset event, not signalled.
        let h = unsafe { CreateEventW(std::ptr::null(), 0, 0, name.as_ptr()) };
        if h.is_null() {
            let e = io::Error::last_os_error();
            close_all(&handles);
            return Err(e);
        }
        handles.push(h);
        flags.push(raiser(request));
    }
    // Handles are process-wide: the waiting thread may use them. `Events` carries them
    // there (a raw pointer is not `Send` by default).
    let events = Events(handles);
    std::thread::Builder::new()
        .name("beaver-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || events.wait_forever(&flags))?;
    Ok(())
}

/// The event handles, owned by the waiting thread for the life of the process.
struct Events(Vec<HANDLE>);

// SAFETY: a Win32 event handle is a process-wide kernel object reference, usable from any
// thread; `Events` is only moved to the one thread that waits on it.
unsafe impl Send for Events {}

impl Events {
    fn wait_forever(self, flags: &[Raise]) {
        let count = u32::try_from(self.0.len()).unwrap_or(u32::MAX);
        loop {
            // SAFETY: `self.0` holds `count` valid event handles (at most 64, Windows'
            // limit; there are six), alive as long as `self`; FALSE: wake on any one.
            let r = unsafe { WaitForMultipleObjects(count, self.0.as_ptr(), 0, INFINITE) };
            let i = r.wrapping_sub(WAIT_OBJECT_0) as usize;
            match flags.get(i) {
                Some(raise) => raise.raise(),
                None => {
                    log::error!(
                        "Waiting for --signal requests failed: {}; use Ctrl-C to stop",
                        io::Error::last_os_error()
                    );
                    return;
                }
            }
        }
    }
}

fn close_all(handles: &[HANDLE]) {
    for &h in handles {
        // SAFETY: each handle came from a successful `CreateEventW` and is closed once.
        unsafe { CloseHandle(h) };
    }
}

/// `--signal command[=target]` on Windows: a number (or a pid file's) is a process started
/// from a console, whose named event for `command` is set; another name is a service's;
/// no target is the service named as this executable (`beaver`), as nats-server's
/// `--signal` addresses the service `nats-server`.
pub(super) fn send(command: &str, target: Option<&str>) -> Result<(), String> {
    match target {
        Some(t) => match t.parse::<u32>() {
            Ok(pid) => send_to_process(command, pid),
            Err(_) => super::scm::control(t, command),
        },
        // The service named as the executable.
        None => super::scm::control(&super::program_name(), command),
    }
}

/// Sets process `pid`'s named event for `command`.
fn send_to_process(command: &str, pid: u32) -> Result<(), String> {
    if !COMMANDS.iter().any(|(c, _)| *c == command) {
        return Err(format!("unknown signal {command:?}"));
    }
    let name = event_name(pid, command);
    // SAFETY: `name` is NUL-terminated UTF-16 and outlives the call; FALSE: the handle is
    // not inherited.
    let h = unsafe { OpenEventW(EVENT_MODIFY_STATE, 0, name.as_ptr()) };
    if h.is_null() {
        return Err(format!(
            "no beaver process {pid} to signal ({})",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: `h` is the valid event handle just opened, with EVENT_MODIFY_STATE access.
    let ok = unsafe { SetEvent(h) } != 0;
    let e = io::Error::last_os_error();
    // SAFETY: `h` is valid and closed once.
    unsafe { CloseHandle(h) };
    if ok {
        Ok(())
    } else {
        Err(format!("cannot signal process {pid}: {e}"))
    }
}
