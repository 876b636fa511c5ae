//! beaver as a Windows service, as an administrator runs it: registered and started with
//! `sc.exe`, serving clients, reloading, reopening its log, entering lame-duck mode and
//! stopping on `beaver --signal COMMAND=SERVICE` (the service control manager's requests),
//! removed with `sc.exe delete`.
//!
//! Windows only. Under Wine (`.ci/windows-check.sh`) Wine's own service control manager
//! hosts the service; it keeps it alive while a Windows process (this test) runs. What Wine
//! cannot show, the event log, is covered by `logging::eventlog`'s unit test and the README's
//! manual check.
#![cfg(windows)]

mod common;

use common::{Raw, WAIT};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A path as the service control manager needs it: a Windows path (under Wine the test
/// knows the binary by its Unix path, which is drive `Z:`).
fn windows_path(p: &Path) -> String {
    let s = p.display().to_string();
    if s.starts_with('/') {
        format!("Z:{}", s.replace('/', "\\"))
    } else {
        s
    }
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"))
}

fn beaver(args: &[&str]) -> Output {
    run(env!("CARGO_BIN_EXE_beaver"), args)
}

/// `sc.exe query NAME`'s STATE line contains `state`.
fn state_is(name: &str, state: &str) -> bool {
    let out = run("sc.exe", &["query", name]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.contains("STATE") && l.contains(state))
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The service's configuration and log, and the service itself, removed when dropped.
struct Installed {
    name: String,
    dir: PathBuf,
    port: u16,
}

impl Installed {
    fn new(tag: &str) -> Installed {
        let name = format!("beaver-test-{tag}-{}", std::process::id());
        let dir = std::env::temp_dir().join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let s = Installed { name, dir, port };
        s.write_config(1024 * 1024);
        let bin_path = format!(
            "{} -c {}",
            windows_path(Path::new(env!("CARGO_BIN_EXE_beaver"))),
            windows_path(&s.conf())
        );
        let out = run("sc.exe", &["create", &s.name, "binPath=", &bin_path]);
        assert!(out.status.success(), "sc create: {out:?}");
        s
    }

    fn conf(&self) -> PathBuf {
        self.dir.join("beaver.conf")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("beaver.log")).unwrap_or_default()
    }

    fn write_config(&self, max_payload: u32) {
        let log = self.dir.join("beaver.log").display().to_string();
        std::fs::write(
            self.conf(),
            format!(
                "listen: \"127.0.0.1:{}\"\nlogfile: \"{}\"\ndebug: true\nmax_payload: {max_payload}\n",
                self.port,
                log.replace('\\', "\\\\")
            ),
        )
        .unwrap();
    }

    fn start(&self) {
        let out = run("sc.exe", &["start", &self.name]);
        assert!(out.status.success(), "sc start: {out:?}");
        wait_for("the service to run", || state_is(&self.name, "RUNNING"));
        assert!(self.log().contains("Server is ready"), "{}", self.log());
    }

    fn signal(&self, command: &str) {
        let out = beaver(&["--signal", &format!("{command}={}", self.name)]);
        assert!(
            out.status.success(),
            "--signal {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The `max_payload` a new client is told.
    fn max_payload(&self) -> u64 {
        let raw = Raw::connect(self.port);
        let info = raw.info.clone();
        drop(raw);
        info["max_payload"].as_u64().expect("max_payload in INFO")
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = run("sc.exe", &["stop", &self.name]);
        let _ = run("sc.exe", &["delete", &self.name]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_service_serves_reloads_reopens_and_stops_on_request() {
    let service = Installed::new("life");
    service.start();
    assert!(
        !service.log().contains("[ERR]"),
        "a clean start: {}",
        service.log()
    );

    // It serves clients.
    let mut sub = Raw::connect(service.port);
    sub.exchange(b"CONNECT {\"verbose\":false}\r\nSUB svc 1\r\nPING\r\n");
    let mut publisher = Raw::connect(service.port);
    publisher.exchange(b"CONNECT {\"verbose\":false}\r\nPUB svc 5\r\nhello\r\nPING\r\n");
    sub.received.clear();
    sub.expect_bytes(b"MSG svc 1 5\r\nhello\r\n");

    // `--signal reload=SERVICE` is the SCM's parameter-change request: the file is read
    // again and new clients see the new limit.
    assert_eq!(service.max_payload(), 1024 * 1024);
    service.write_config(2048);
    service.signal("reload");
    wait_for("the reload", || {
        service.log().contains("Reloaded server configuration")
    });
    assert_eq!(service.max_payload(), 2048);

    // `--signal reopen=SERVICE`: user control 128.
    service.signal("reopen");
    wait_for("the reopen", || {
        service.log().contains("File log re-opened")
    });

    // `--signal stop=SERVICE` returns once the service is stopped, having shut down
    // cleanly: the client's connection is closed, the log ends as on a console.
    service.signal("stop");
    assert!(state_is(&service.name, "STOPPED"));
    let after = sub.until_closed();
    assert!(
        sub.closed && after.is_empty(),
        "closed, nothing more: {after:?}"
    );
    let log = service.log();
    assert!(log.contains("Initiating Shutdown..."), "{log}");
    assert!(log.trim_end().ends_with("Server Exiting.."), "{log}");
    let query =
        String::from_utf8_lossy(&run("sc.exe", &["query", &service.name]).stdout).into_owned();
    assert!(
        query
            .lines()
            .any(|l| l.contains("WIN32_EXIT_CODE") && l.contains(": 0")),
        "exit code 0: {query}"
    );

    // Started again, `--signal ldm=SERVICE` (user control 129) enters lame-duck mode, which
    // with no clients ends at once, and the service stops.
    std::fs::remove_file(service.dir.join("beaver.log")).unwrap();
    service.start();
    service.signal("ldm");
    wait_for("the service to stop", || state_is(&service.name, "STOPPED"));
    let log = service.log();
    assert!(log.contains("Entering lame duck mode"), "{log}");
    assert!(log.contains("Server Exiting.."), "{log}");
}

/// `--signal` to a service that does not exist says so, in nats-server's words; a command
/// the service manager has no request for is refused as nats-server refuses it.
#[test]
fn signals_to_services_fail_as_nats_servers_do() {
    let out = beaver(&["--signal", "reload=beaver-no-such-service"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not access service: "), "{err}");

    let out = beaver(&["--signal", "term=beaver-no-such-service"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown signal \"term\""), "{err}");
}
