//! Signals: what the server is asked to do (stop, lame-duck mode, reload, reopen the log),
//! and `--signal`, which asks another beaver process.
//!
//! On Unix (`signal-hook`), as nats-server: SIGINT and SIGTERM stop, SIGUSR2 enters
//! lame-duck mode, SIGHUP reloads the configuration file, SIGUSR1 reopens the log file. On
//! Windows, Ctrl-C or closing the console stops (`ctrlc`), and `beaver --signal
//! COMMAND=PID` from another console asks for any of them through named events (see the
//! `windows` module).
//!
//! The handlers only set flags (the one thing a signal handler may safely do) and the main
//! thread polls them. Polling ten times a second costs nothing and cannot fail the way a
//! blocking wait on a signal pipe can (for instance when a debugger interrupts it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the main thread looks at the flags.
const POLL: Duration = Duration::from_millis(100);

/// What a signal asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// SIGINT (Ctrl-C): stop.
    Interrupt,
    /// SIGTERM: stop (ignored during lame-duck mode, as nats-server does).
    Terminate,
    /// SIGUSR2: lame-duck mode.
    LameDuck,
    /// SIGHUP: reload the configuration file.
    Reload,
    /// SIGUSR1: reopen the log file.
    Reopen,
}

/// The flags the signal handlers set, one per [`Request`]. Each is a `SeqCst` store in the
/// handler and a `SeqCst` swap back to false here: a request is taken once, and one that
/// arrives while another is handled waits for the next poll.
pub struct Signals {
    flags: [(Request, Arc<AtomicBool>); 5],
}

impl Signals {
    /// Installs the handlers. On failure the server still runs; it logs that it can only be
    /// killed.
    pub fn install() -> Signals {
        let s = Signals::new();
        if let Err(e) = s.register() {
            log::error!("Cannot install signal handlers: {e}; stop the server by killing it");
        }
        s
    }

    /// The flags, none set, indexed by `Request` (in declaration order).
    fn new() -> Signals {
        Signals {
            flags: [
                Request::Interrupt,
                Request::Terminate,
                Request::LameDuck,
                Request::Reload,
                Request::Reopen,
            ]
            .map(|r| (r, Arc::new(AtomicBool::new(false)))),
        }
    }

    fn flag(&self, r: Request) -> &Arc<AtomicBool> {
        // Every request has a flag (the array lists them all).
        &self.flags[r as usize].1
    }

    /// Takes `r` if it was signalled.
    pub fn take(&self, r: Request) -> bool {
        self.flag(r).swap(false, Ordering::SeqCst)
    }

    /// Blocks until a signal arrives, and returns it (stop requests first).
    pub fn wait(&self) -> Request {
        loop {
            for (r, flag) in &self.flags {
                if flag.swap(false, Ordering::SeqCst) {
                    log::debug!("Trapped {r:?} signal");
                    return *r;
                }
            }
            std::thread::sleep(POLL);
        }
    }

    #[cfg(unix)]
    fn register(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
        for (sig, r) in [
            (SIGINT, Request::Interrupt),
            (SIGTERM, Request::Terminate),
            (SIGUSR2, Request::LameDuck),
            (SIGHUP, Request::Reload),
            (SIGUSR1, Request::Reopen),
        ] {
            signal_hook::flag::register(sig, self.flag(r).clone())?;
        }
        Ok(())
    }

    #[cfg(windows)]
    fn register(&self) -> std::io::Result<()> {
        let stop = self.flag(Request::Interrupt).clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        windows::listen(|r| self.flag(r).clone())
    }
}

/// Blocks until the process is asked to stop (SIGINT/SIGTERM, Ctrl-C); other signals are
/// ignored. For embedders that need nothing else.
pub fn wait_for_shutdown() {
    let signals = Signals::install();
    while !matches!(signals.wait(), Request::Interrupt | Request::Terminate) {}
    log::debug!("Trapped a stop signal");
}

/// `--signal COMMAND[=PID|PIDFILE]`: sends nats-server's signal for `COMMAND` (`ldm`:
/// SIGUSR2, `stop`: SIGKILL, `quit`: SIGINT, `term`: SIGTERM, `reopen`: SIGUSR1, `reload`:
/// SIGHUP) to the process `PID`, or to the pid read from the file `PIDFILE`, or, with
/// neither, to the only other process with this executable's name (found with `pgrep`).
/// Errors are nats-server's words.
pub fn send(spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split('=').collect();
    if parts.len() > 2 {
        return Err(format!("invalid signal parameters: {:?}", &parts[2..]));
    }
    let pid = match parts.get(1) {
        // A pid file if there is one by that name, else the pid itself; a name that can only
        // be a file's (a path, or `*.pid`) that cannot be read is an error saying so.
        Some(p) => Some(match std::fs::read_to_string(p) {
            Ok(text) => text,
            Err(e) if p.contains(['/', '\\']) || p.ends_with(".pid") => {
                let e = e.to_string();
                let e = e.split(" (os error").next().unwrap_or(&e);
                return Err(format!("cannot read pid file {p}: {e}"));
            }
            Err(_) => (*p).to_owned(),
        }),
        None => None,
    };
    platform::send(parts[0], pid.as_deref().map(str::trim))
}

#[cfg(unix)]
mod platform {
    /// Sends `command`'s signal to `pid` (or the only other process of this name), with
    /// the system's `kill` command (the library forbids `unsafe`, so no `libc::kill`).
    pub(super) fn send(command: &str, pid: Option<&str>) -> Result<(), String> {
        let sig = match command {
            "stop" => "KILL",
            "quit" => "INT",
            "term" => "TERM",
            "reopen" => "USR1",
            "reload" => "HUP",
            "ldm" => "USR2",
            other => return Err(format!("unknown signal {other:?}")),
        };
        let pid: i32 = match pid {
            Some(p) => p.parse().map_err(|_| format!("invalid pid: {p}"))?,
            None => find_pid()?,
        };
        let out = std::process::Command::new("kill")
            .args(["-s", sig, &pid.to_string()])
            .output()
            .map_err(|e| format!("cannot run kill: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&out.stderr).to_ascii_lowercase();
        Err(if err.contains("no such process") {
            "no such process".into()
        } else if err.contains("not permitted") {
            "operation not permitted".into()
        } else {
            err.trim().to_owned()
        })
    }

    /// The pid of the only other running process named like this executable.
    fn find_pid() -> Result<i32, String> {
        let name = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "beaver".into());
        let out = std::process::Command::new("pgrep")
            .arg("-x")
            .arg(&name)
            .output()
            .map_err(|_| "unable to resolve pid, try providing one".to_string())?;
        let me = std::process::id() as i32;
        let pids: Vec<i32> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|p| *p != me)
            .collect();
        match pids.as_slice() {
            [] => Err(format!("no {name} processes running")),
            [pid] => Ok(*pid),
            many => Err(format!(
                "multiple {name} processes running:\n{}",
                many.iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
        }
    }
}

#[cfg(windows)]
#[allow(unsafe_code)] // Win32 calls; see the module docs.
mod windows;

#[cfg(windows)]
use windows as platform;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_pid_file_is_named() {
        // The reason after the colon is the OS's words ("No such file or directory" on
        // Linux, "Path not found." on Windows).
        for (spec, file) in [
            (
                "reload=/missing-beaver-dir/x.pid",
                "/missing-beaver-dir/x.pid",
            ),
            ("reload=missing-beaver.pid", "missing-beaver.pid"),
        ] {
            let e = send(spec).unwrap_err();
            assert!(
                e.starts_with(&format!("cannot read pid file {file}: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn every_request_has_its_own_flag() {
        let s = Signals::new();
        for (i, (r, _)) in s.flags.iter().enumerate() {
            assert_eq!(*r as usize, i, "flags are indexed by Request");
        }
        s.flag(Request::Reload).store(true, Ordering::SeqCst);
        assert!(!s.take(Request::Reopen));
        assert_eq!(s.wait(), Request::Reload);
        assert!(!s.take(Request::Reload), "taken once");
    }
}
