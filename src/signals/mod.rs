//! Signals: what the server is asked to do (stop, lame-duck mode, reload, reopen the log),
//! and `--signal`, which asks another beaver process.
//!
//! On Unix (`signal-hook`), as nats-server: SIGINT and SIGTERM stop, SIGUSR2 enters
//! lame-duck mode, SIGHUP reloads the configuration file, SIGUSR1 reopens the log file. On
//! Windows, Ctrl-C or closing the console stops (`ctrlc`), `beaver --signal COMMAND=PID`
//! from another console asks for any of them through named events (see the `windows`
//! module), and `beaver --signal COMMAND[=SERVICE]` sends a service its control request
//! (the `scm` module), which the `service` module turns into a request here.
//!
//! Each request has a flag; whoever raises it (a thread that receives the signal, the
//! Ctrl-C handler, the Windows events thread) then rings a doorbell (a one-slot channel) on
//! which the main thread waits, so a stop request is acted on at once (client harnesses time
//! how quickly a server goes away). On Unix the signals are received by `signal-hook`'s
//! iterator (its own async-signal-safe handler and self-pipe) on a thread,
//! `beaver-signals`. The main thread also looks at the flags once a second whatever
//! happens, so a lost doorbell could only delay a request, never lose it.

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the main thread waits for the doorbell before looking at the flags anyway.
const FALLBACK_POLL: Duration = Duration::from_secs(1);

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

/// The flags the signal sources raise, one per [`Request`], and the doorbell. Each flag is
/// a `SeqCst` store by its source and a `SeqCst` swap back to false here: a request is taken
/// once; the store happens before the ring, so a woken main thread sees it.
pub struct Signals {
    flags: [(Request, Arc<AtomicBool>); 5],
    ring: Sender<()>,
    doorbell: Receiver<()>,
    /// [`FALLBACK_POLL`] (tests set a longer one, to see the doorbell alone at work).
    fallback_poll: Duration,
}

/// Raises one request: sets its flag, then rings the main thread's doorbell. What every
/// signal source holds.
#[derive(Clone)]
pub(crate) struct Raise {
    flag: Arc<AtomicBool>,
    ring: Sender<()>,
}

impl Raise {
    pub(crate) fn raise(&self) {
        self.flag.store(true, Ordering::SeqCst);
        // One slot: if it is full the main thread is about to look at the flags anyway.
        let _ = self.ring.try_send(());
    }
}

impl Signals {
    /// Installs the handlers. On failure the server still runs; it logs that it can only be
    /// killed.
    pub fn install() -> Signals {
        Signals::install_for(true)
    }

    /// [`Signals::install`] for a Windows service (`console: false`): no console control
    /// handler, because a service also receives the console's log-off event whenever any
    /// user logs off, which must not stop it (the service control manager's stop and
    /// shutdown requests do). Elsewhere the same as `install`.
    pub fn install_for(console: bool) -> Signals {
        let s = Signals::new();
        if let Err(e) = s.register(console) {
            log::error!("Cannot install signal handlers: {e}; stop the server by killing it");
        }
        s
    }

    /// The flags, none set, indexed by `Request` (in declaration order).
    fn new() -> Signals {
        let (ring, doorbell) = crossbeam_channel::bounded(1);
        Signals {
            flags: [
                Request::Interrupt,
                Request::Terminate,
                Request::LameDuck,
                Request::Reload,
                Request::Reopen,
            ]
            .map(|r| (r, Arc::new(AtomicBool::new(false)))),
            ring,
            doorbell,
            fallback_poll: FALLBACK_POLL,
        }
    }

    fn flag(&self, r: Request) -> &Arc<AtomicBool> {
        // Every request has a flag (the array lists them all).
        &self.flags[r as usize].1
    }

    /// What a signal source holds to raise `r`.
    pub(crate) fn raiser(&self, r: Request) -> Raise {
        Raise {
            flag: self.flag(r).clone(),
            ring: self.ring.clone(),
        }
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
            let _ = self.doorbell.recv_timeout(self.fallback_poll);
        }
    }

    #[cfg(unix)]
    fn register(&self, _console: bool) -> std::io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
        let table = [
            (SIGINT, self.raiser(Request::Interrupt)),
            (SIGTERM, self.raiser(Request::Terminate)),
            (SIGUSR2, self.raiser(Request::LameDuck)),
            (SIGHUP, self.raiser(Request::Reload)),
            (SIGUSR1, self.raiser(Request::Reopen)),
        ];
        let mut incoming = signal_hook::iterator::Signals::new(table.iter().map(|(s, _)| *s))?;
        std::thread::Builder::new()
            .name("beaver-signals".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for sig in incoming.forever() {
                    if let Some((_, raise)) = table.iter().find(|(s, _)| *s == sig) {
                        raise.raise();
                    }
                }
            })?;
        Ok(())
    }

    #[cfg(windows)]
    fn register(&self, console: bool) -> std::io::Result<()> {
        if console {
            let stop = self.raiser(Request::Interrupt);
            ctrlc::set_handler(move || stop.raise())
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        windows::listen(|r| self.raiser(r))
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
/// On Windows `COMMAND=SERVICE` (or `COMMAND` alone: the service named as the executable)
/// sends a service control request instead (see the `scm` module). Errors are
/// nats-server's words.
pub fn send(spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split('=').collect();
    if parts.len() > 2 {
        return Err(format!("invalid signal parameters: {:?}", &parts[2..]));
    }
    let pid = match parts.get(1) {
        // A pid file if there is one by that name, else the pid itself; a name that can only
        // be a file's (a path, or `*.pid`) that cannot be read is an error saying so.
        Some(p) => Some(match std::fs::read_to_string(p) {
            // A pid file holds a number (on Windows, a name would address a service).
            Ok(text) => match text.trim().parse::<u32>() {
                Ok(_) => text,
                Err(_) => return Err(format!("invalid pid: {}", text.trim())),
            },
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
#[allow(unsafe_code)] // one Win32 call (ControlService); see the module docs.
pub mod scm;

/// The name the process goes by: the executable's name as started, without its extension
/// (`beaver`), as nats-server's `GetSysLoggerTag` takes it. Syslog's tag and the event
/// log's source unless `syslog_name` says otherwise; on Windows, the service `--signal`
/// addresses by default.
pub fn program_name() -> String {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "beaver".to_owned())
}

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
        s.raiser(Request::Reload).raise();
        assert!(!s.take(Request::Reopen));
        assert_eq!(s.wait(), Request::Reload);
        assert!(!s.take(Request::Reload), "taken once");
    }

    /// A raised request wakes a waiting main thread through the doorbell (it used to be
    /// noticed at the next 100 ms poll): with the fallback poll set to an hour, only the
    /// doorbell can wake it.
    #[test]
    fn a_raised_request_wakes_the_waiter() {
        let s = Arc::new(Signals {
            fallback_poll: Duration::from_secs(3600),
            ..Signals::new()
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || {
                for _ in 0..10 {
                    let _ = tx.send(s.wait());
                }
            })
        };
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(20));
            s.raiser(Request::Terminate).raise();
            assert_eq!(
                rx.recv_timeout(Duration::from_secs(30)),
                Ok(Request::Terminate)
            );
        }
        waiter.join().unwrap();
    }
}
