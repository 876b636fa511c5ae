//! The real `beaver` binary from the outside: command line, configuration file, log output,
//! signals and process exit.
//!
//! One-shot runs (`--version`, `-t`, bad configurations) go through [`run`], which kills the
//! process and fails the test if it does not exit within [`WAIT`]. Servers are started either
//! with the shared [`ServerProcess`] helper or, where the test needs the child process itself
//! (exit status, signals other than SIGTERM, `-l FILE`), with [`Spawned`]. Every wait is
//! bounded.

mod common;

use common::{show, Frame, Raw, ServerProcess, WAIT};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_beaver");
const VERSION: &str = env!("CARGO_PKG_VERSION");
const REPO_CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/Config.toml");

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// What a one-shot run of the binary produced.
struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Output {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Runs `beaver args...` to completion (stdin closed), failing the test if it is still
/// running after [`WAIT`].
fn run(args: &[&str]) -> Output {
    let mut child = common::spawn(
        Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .expect("spawn beaver");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("beaver {args:?} did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A file under Cargo's per-target temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    /// An unused path (the file is removed first if a previous run left it).
    fn new(name: &str) -> TempFile {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }

    /// A file holding `text`.
    fn with(name: &str, text: &str) -> TempFile {
        let f = TempFile::new(name);
        std::fs::write(&f.0, text).expect("write temp file");
        f
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A server started with `Command` directly, so the test owns the child (exit status,
/// signals). Its stderr lines are collected; it is killed when dropped.
struct Spawned {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Spawned {
    /// Starts `beaver args...` without waiting for anything.
    fn spawn(args: &[&str]) -> Spawned {
        let mut child = common::spawn(
            Command::new(BIN)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )
        .expect("spawn beaver");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Spawned {
            child,
            log,
            reader: Some(reader),
        }
    }

    /// Starts `beaver -a HOST -p -1 args...` and waits until it listens; returns the server
    /// and its port.
    fn listening(host: &str, args: &[&str]) -> (Spawned, u16) {
        let mut all = vec!["-a", host, "-p", "-1"];
        all.extend_from_slice(args);
        let s = Spawned::spawn(&all);
        let line = s
            .wait_for_log("Listening for client connections on ")
            .unwrap_or_else(|| panic!("beaver did not start; log: {:?}", s.log_lines()));
        (s, listening_port(&line))
    }

    fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (up to [`WAIT`]) for a stderr line containing `needle`; returns it.
    fn wait_for_log(&self, needle: &str) -> Option<String> {
        wait_until(|| {
            self.log
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.contains(needle))
                .cloned()
        })
    }

    /// Sends `SIG<name>` (e.g. "TERM", "INT") with kill(1).
    #[cfg(unix)]
    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{name} failed");
    }

    /// Waits (up to [`WAIT`]) for the process to exit, then for the end of its stderr, so
    /// [`Spawned::log_lines`] is complete afterwards.
    fn wait_exit(&mut self) -> ExitStatus {
        let child = &mut self.child;
        let status = wait_until(|| child.try_wait().expect("wait"))
            .unwrap_or_else(|| panic!("beaver did not exit within {WAIT:?}"));
        if let Some(reader) = self.reader.take() {
            reader.join().expect("stderr reader");
        }
        status
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` every 10 ms until it returns `Some`, for at most [`WAIT`].
fn wait_until<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The port in a "Listening for client connections on HOST:PORT" line.
fn listening_port(line: &str) -> u16 {
    line.rsplit(':')
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

/// If `line` starts with nats-server's timestamp, `YYYY/MM/DD HH:MM:SS.ffffff ` (local
/// time, microseconds), returns the rest of the line.
fn strip_timestamp(line: &str) -> Option<&str> {
    const SHAPE: &[u8] = b"dddd/dd/dd dd:dd:dd.dddddd ";
    let bytes = line.as_bytes();
    if bytes.len() < SHAPE.len() {
        return None;
    }
    for (b, s) in bytes.iter().zip(SHAPE) {
        let ok = match s {
            b'd' => b.is_ascii_digit(),
            other => b == other,
        };
        if !ok {
            return None;
        }
    }
    let num = |r: std::ops::Range<usize>| line[r].parse::<u32>().unwrap();
    let plausible = (2000..=2999).contains(&num(0..4))
        && (1..=12).contains(&num(5..7))
        && (1..=31).contains(&num(8..10))
        && num(11..13) < 24
        && num(14..16) < 60
        && num(17..19) < 61;
    plausible.then(|| &line[SHAPE.len()..])
}

/// The level tag of a log line without timestamp: `[INF] ...` -> "INF".
fn tag(rest: &str) -> Option<&str> {
    let t = rest.strip_prefix('[')?.get(..3)?;
    (rest.get(4..6) == Some("] ")).then_some(t)
}

/// SUB, PUB and PING on a raw connection: the message comes back.
fn assert_round_trip(raw: &mut Raw) {
    let frames = raw.exchange(b"CONNECT {\"verbose\":false}\r\nSUB rt 1\r\nPUB rt 5\r\nhello\r\n");
    assert_eq!(
        frames,
        vec![
            Frame::Msg("MSG rt 1 5".into(), b"hello".to_vec()),
            Frame::Pong
        ],
        "round trip: {}",
        show(&frames)
    );
}

/// Every log line matching `needle`.
fn matching(lines: &[String], needle: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.contains(needle))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------
// Version, help, unknown flags
// ---------------------------------------------------------------------------------------

#[test]
fn version_flags_print_the_crate_version() {
    for flag in ["--version", "-v"] {
        let out = run(&[flag]);
        assert_eq!(out.code(), Some(0), "{flag}: {}", out.stderr);
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{flag} prints one line: {:?}", out.stdout);
        assert!(
            lines[0].contains(VERSION) && lines[0].starts_with("beaver"),
            "{flag}: {:?}",
            lines[0]
        );
        // nats-server's shape: "nats-server: v2.9.10".
        assert!(
            lines[0].starts_with(&format!("beaver: v{VERSION}")),
            "{flag}: {:?}",
            lines[0]
        );
    }
}

#[test]
fn help_lists_every_flag() {
    for flag in ["--help", "-h"] {
        let out = run(&[flag]);
        assert_eq!(out.code(), Some(0), "{flag}: {}", out.stderr);
        for expected in [
            "-a, --addr",
            "-p, --port",
            "-c, --config",
            "-n, --name",
            "-m, --http_port",
            "-l, --log",
            "-D, --debug",
            "-V, --trace",
            "-T, --logtime",
            "-t ",
            "--writers",
            "-v, --version",
        ] {
            assert!(
                out.stdout.contains(expected),
                "{flag} lists {expected:?}:\n{}",
                out.stdout
            );
        }
    }
}

#[test]
fn unknown_flag_is_an_error() {
    let out = run(&["--no-such-flag"]);
    assert_ne!(out.code(), Some(0));
    assert!(out.code().is_some(), "exited, not killed");
    assert!(
        out.stderr.contains("--no-such-flag"),
        "stderr names the flag: {:?}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", out.stdout);
    // A stray positional argument is refused too.
    let out = run(&["extra"]);
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr.contains("extra"), "{:?}", out.stderr);
}

#[test]
fn out_of_range_flags_are_errors() {
    for args in [
        &["-p", "70000"][..],
        &["-p", "-2"],
        &["-m", "70000"],
        &["--writers", "5000"],
        &["--writers", "-1"],
    ] {
        for t in [true, false] {
            let mut all = args.to_vec();
            if t {
                all.push("-t");
            }
            let out = run(&all);
            assert_eq!(out.code(), Some(1), "{all:?}: {}", out.stderr);
            assert!(
                out.stderr.contains(args[1]) && out.stderr.contains("out of range"),
                "{all:?}: {:?}",
                out.stderr
            );
        }
    }
    // Not a number at all: clap's usage error.
    let out = run(&["-p", "abc"]);
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr.contains("abc"), "{:?}", out.stderr);
}

#[test]
fn repeated_flag_last_value_wins_like_nats_server() {
    let out = run(&[
        "-a",
        "0.0.0.0",
        "-a",
        "127.0.0.1",
        "-p",
        "4222",
        "-p",
        "-1",
        "-t",
    ]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let server = ServerProcess::beaver(&["-n", "first", "-n", "second"]);
    assert_eq!(server.raw().info["server_name"], "second");
}

// ---------------------------------------------------------------------------------------
// Configuration file
// ---------------------------------------------------------------------------------------

#[test]
fn repository_config_is_valid() {
    let out = run(&["-c", REPO_CONFIG, "-t"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("valid") && out.stderr.contains("Config.toml"),
        "{:?}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("Listening"),
        "-t does not start the server"
    );
    // -t without a file checks the defaults.
    let out = run(&["-t"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("valid"), "{:?}", out.stderr);
}

#[test]
fn repository_config_starts_and_serves() {
    // The file says host 0.0.0.0 and port 4222; the flags -a 127.0.0.1 -p -1 win.
    let server = ServerProcess::beaver(&["-c", REPO_CONFIG]);
    assert_ne!(server.port, 4222);
    let mut raw = server.raw();
    assert_eq!(raw.info["host"], "127.0.0.1");
    assert_eq!(raw.info["max_payload"], 1048576);
    assert_round_trip(&mut raw);
    assert!(server.wait_for_log("Server is ready"));
}

/// Runs a bad configuration with and without `-t`: both exit 1, and the message (on stderr)
/// contains every string in `expected`.
fn assert_bad_config(name: &str, text: &str, expected: &[&str]) {
    let file = TempFile::with(name, text);
    for t in [true, false] {
        let mut args = vec!["-a", "127.0.0.1", "-p", "-1", "-c", file.path()];
        if t {
            args.push("-t");
        }
        let out = run(&args);
        assert_eq!(
            out.code(),
            Some(1),
            "{name} {args:?}: stderr {:?}",
            out.stderr
        );
        for e in expected {
            assert!(
                out.stderr.contains(e),
                "{name} {args:?}: the message mentions {e:?}: {:?}",
                out.stderr
            );
        }
        assert!(
            out.stderr.contains(file.path()),
            "{name}: the message names the file: {:?}",
            out.stderr
        );
        assert!(!out.stderr.contains("Listening"), "{name}: did not start");
    }
}

#[test]
fn unknown_key_is_an_error_with_its_line() {
    assert_bad_config(
        "unknown.toml",
        "port = 4222\nno_such_key = 1\n",
        &["no_such_key", "line 2"],
    );
    // A table is an unknown key too.
    assert_bad_config(
        "table.toml",
        "port = 4222\n\n[gateway]\nport = 7222\n",
        &["gateway", "line 3"],
    );
}

#[test]
fn wrong_type_is_an_error_naming_the_key() {
    // The TOML parser's message quotes the offending line (with the key) and its number.
    assert_bad_config("type-port.toml", "port = \"x\"\n", &["port", "line 1"]);
    assert_bad_config(
        "type-debug.toml",
        "port = 4222\ndebug = \"yes\"\n",
        &["debug", "line 2"],
    );
    assert_bad_config(
        "type-size.toml",
        "\nmax_payload = true\n",
        &["max_payload", "line 2"],
    );
}

#[test]
fn out_of_range_value_is_an_error_with_key_and_line() {
    assert_bad_config(
        "range-port.toml",
        "# comment\nhost = \"127.0.0.1\"\nport = 70000\n",
        &["line 3", "key `port`", "70000", "out of range"],
    );
    assert_bad_config(
        "range-writers.toml",
        "writers = 5000\n",
        &["line 1", "key `writers`"],
    );
    assert_bad_config(
        "range-payload.toml",
        "max_payload = \"65MB\"\n",
        &["line 1", "key `max_payload`"],
    );
}

#[test]
fn bad_size_string_is_an_error_with_key_and_line() {
    assert_bad_config(
        "size.toml",
        "port = 4222\nmax_payload = \"1XB\"\n",
        &["line 2", "key `max_payload`", "1XB"],
    );
}

#[test]
fn bad_duration_is_an_error_with_key_and_line() {
    assert_bad_config(
        "duration.toml",
        "\n\n\nping_interval = \"soon\"\n",
        &["line 4", "key `ping_interval`", "soon"],
    );
    assert_bad_config(
        "duration-neg.toml",
        "write_deadline = -1\n",
        &["line 1", "key `write_deadline`"],
    );
}

#[test]
fn max_payload_above_max_pending_is_an_error() {
    // The order of the keys in the file does not matter.
    for (name, text) in [
        ("pending-a.toml", "max_payload = 2048\nmax_pending = 1024\n"),
        ("pending-b.toml", "max_pending = 1024\nmax_payload = 2048\n"),
    ] {
        assert_bad_config(name, text, &["max_payload", "max_pending", "2048", "1024"]);
    }
}

#[test]
fn missing_config_file_is_an_error() {
    let missing = TempFile::new("missing.toml");
    for t in [true, false] {
        let mut args = vec!["-a", "127.0.0.1", "-p", "-1", "-c", missing.path()];
        if t {
            args.push("-t");
        }
        let out = run(&args);
        assert_eq!(out.code(), Some(1), "{args:?}: {:?}", out.stderr);
        assert!(out.stderr.contains(missing.path()), "{:?}", out.stderr);
        assert!(!out.stderr.contains("Listening"));
    }
}

#[test]
fn command_line_overrides_the_file() {
    let file = TempFile::with(
        "override.toml",
        "host = \"0.0.0.0\"\nport = 1234\nserver_name = \"from-file\"\nmax_payload = \"2KB\"\n",
    );
    // -a 127.0.0.1 -p -1 (from the helper) beat host and port; -n beats server_name; what
    // no flag overrides (max_payload) comes from the file.
    let server = ServerProcess::beaver(&["-c", file.path(), "-n", "from-flag"]);
    assert_ne!(server.port, 1234, "-p -1 wins over the file's port");
    let mut raw = server.raw();
    assert_eq!(raw.info["server_name"], "from-flag");
    assert_eq!(raw.info["host"], "127.0.0.1");
    assert_eq!(raw.info["port"], server.port);
    assert_eq!(raw.info["max_payload"], 2048);
    assert_round_trip(&mut raw);
    assert!(server.wait_for_log("Name:     from-flag"));
}

#[test]
fn server_name_from_the_file_is_announced() {
    let file = TempFile::with("name.toml", "server_name = \"from-file\"\n");
    let server = ServerProcess::beaver(&["-c", file.path()]);
    let raw = server.raw();
    assert_eq!(raw.info["server_name"], "from-file");
    assert_ne!(raw.info["server_id"], "from-file");
    assert!(server.wait_for_log("Name:     from-file"));
}

#[test]
fn default_server_name_is_the_server_id() {
    let server = ServerProcess::beaver(&[]);
    let raw = server.raw();
    let id = raw.info["server_id"]
        .as_str()
        .expect("server_id")
        .to_string();
    assert_eq!(raw.info["server_name"].as_str(), Some(id.as_str()));
    // nats-server's ids: 56 characters of base32, starting with 'N'.
    assert_eq!(id.len(), 56, "{id}");
    assert!(id.starts_with('N'), "{id}");
    assert!(
        id.chars()
            .all(|c| c.is_ascii_uppercase() || ('2'..='7').contains(&c)),
        "{id}"
    );
    assert!(server.wait_for_log(&format!("Name:     {id}")));
    assert!(server.wait_for_log(&format!("ID:       {id}")));
    // A second server gets another id.
    let other = ServerProcess::beaver(&[]);
    assert_ne!(other.raw().info["server_id"].as_str(), Some(id.as_str()));
}

#[test]
fn settings_from_the_file_take_effect() {
    // debug and logtime from the file (no flags for them).
    let file = TempFile::with(
        "settings.toml",
        "debug = true\nlogtime = false\nwriters = 2\nmax_payload = 100\n",
    );
    let server = ServerProcess::beaver(&["-c", file.path()]);
    let mut raw = server.raw();
    assert_eq!(raw.info["max_payload"], 100);
    let cid = raw.info["client_id"].clone();
    raw.exchange(b"CONNECT {\"verbose\":false}\r\n");
    assert!(server.wait_for_log(&format!("cid:{cid} - Client connection created")));
    assert!(server.wait_for_log("Writers:  2"));
    for line in server.log_lines() {
        assert!(
            line.starts_with('['),
            "no timestamp with logtime = false: {line:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Logging
// ---------------------------------------------------------------------------------------

#[test]
fn default_log_lines_have_nats_server_shape() {
    let server = ServerProcess::beaver(&[]);
    assert!(server.wait_for_log("Server is ready"));
    // A client that comes and goes logs nothing without -D.
    let mut raw = server.raw();
    raw.exchange(b"CONNECT {\"verbose\":false}\r\nSUB a 1\r\n");
    drop(raw);
    let lines = server.log_lines();
    let find = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {lines:#?}"))
    };
    let starting = find(&format!("Starting beaver version {VERSION}"));
    let listening = find("Listening for client connections on");
    let ready = find("Server is ready");
    assert!(starting < listening && listening < ready, "{lines:#?}");
    let rest = |i: usize| {
        strip_timestamp(&lines[i])
            .unwrap_or_else(|| panic!("timestamp on {:?}", lines[i]))
            .to_string()
    };
    assert_eq!(
        rest(starting),
        format!("[INF] Starting beaver version {VERSION}")
    );
    assert_eq!(
        rest(listening),
        format!(
            "[INF] Listening for client connections on 127.0.0.1:{}",
            server.port
        )
    );
    assert_eq!(rest(ready), "[INF] Server is ready");
    for line in &lines {
        let r = strip_timestamp(line).unwrap_or_else(|| panic!("timestamp on {line:?}"));
        assert_eq!(tag(r), Some("INF"), "only [INF] lines by default: {line:?}");
    }
}

#[test]
fn logtime_false_removes_the_timestamp() {
    let server = ServerProcess::beaver(&["-T=false"]);
    assert!(server.wait_for_log("Server is ready"));
    let lines = server.log_lines();
    assert!(
        lines.contains(&"[INF] Server is ready".to_string()),
        "{lines:#?}"
    );
    assert!(lines.contains(&format!(
        "[INF] Listening for client connections on 127.0.0.1:{}",
        server.port
    )));
    for line in &lines {
        assert!(strip_timestamp(line).is_none(), "{line:?}");
        assert!(tag(line).is_some(), "{line:?}");
    }
    // -T and -T=true keep it.
    for flag in ["-T", "-T=true"] {
        let server = ServerProcess::beaver(&[flag]);
        assert!(server.wait_for_log("Server is ready"));
        for line in server.log_lines() {
            assert!(strip_timestamp(&line).is_some(), "{flag}: {line:?}");
        }
    }
}

#[test]
fn debug_logs_connections_and_close_reasons() {
    let server = ServerProcess::beaver(&["-D"]);
    let mut raw = server.raw();
    let cid = raw.info["client_id"].as_u64().unwrap();
    let addr = raw.stream.local_addr().unwrap();
    raw.exchange(b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\n");
    let needle = format!("cid:{cid} - Client connection created");
    assert!(server.wait_for_log(&needle), "{:#?}", server.log_lines());
    let created = matching(&server.log_lines(), &needle).remove(0);
    assert_eq!(
        strip_timestamp(&created),
        Some(format!("[DBG] {addr} - cid:{cid} - Client connection created").as_str())
    );
    drop(raw);
    let closed = format!("[DBG] {addr} - cid:{cid} - Client connection closed: Client Closed");
    assert!(
        server.wait_for_log(&closed),
        "{closed:?} in {:#?}",
        server.log_lines()
    );

    // A client that breaks max_payload: -ERR, closed, and the reason in the log.
    let mut bad = server.raw();
    let bad_cid = bad.info["client_id"].as_u64().unwrap();
    bad.send(b"CONNECT {\"verbose\":false}\r\nPUB foo 2000000\r\n");
    let frames = bad.until_closed();
    assert_eq!(
        frames,
        vec![Frame::Err("-ERR 'Maximum Payload Violation'".into())]
    );
    let reason =
        format!("cid:{bad_cid} - Client connection closed: Maximum Message Payload Exceeded");
    assert!(
        server.wait_for_log(&reason),
        "{reason:?} in {:#?}",
        server.log_lines()
    );

    // An unknown operation: closed as a protocol violation (nats-server's reason too).
    let mut junk = server.raw();
    let junk_cid = junk.info["client_id"].as_u64().unwrap();
    junk.send(b"FOO BAR\r\n");
    junk.until_closed();
    assert!(server.wait_for_log(&format!(
        "cid:{junk_cid} - Client connection closed: Protocol Violation"
    )));

    // -D alone does not trace.
    let lines = server.log_lines();
    assert!(
        lines.iter().all(|l| !l.contains("[TRC]")),
        "no trace without -V: {lines:#?}"
    );
}

#[test]
fn trace_logs_protocol_and_redacts_passwords() {
    let server = ServerProcess::beaver(&["-V"]);
    let mut raw = server.raw();
    let cid = raw.info["client_id"].as_u64().unwrap();
    let addr = raw.stream.local_addr().unwrap();
    let frames = raw.exchange(
        b"CONNECT {\"verbose\":true,\"user\":\"alice\",\"pass\":\"s3cr3t-pw\"}\r\nSUB foo 1\r\n\
          PUB foo 2\r\nhi\r\n",
    );
    assert_eq!(
        frames,
        vec![
            Frame::Ok,
            Frame::Ok,
            Frame::Ok,
            Frame::Msg("MSG foo 1 2".into(), b"hi".to_vec()),
            Frame::Pong
        ]
    );
    let p = format!("[TRC] {addr} - cid:{cid} - ");
    assert!(
        server.wait_for_log(&format!("{p}->> [PONG]")),
        "{:#?}",
        server.log_lines()
    );
    let lines = server.log_lines();
    let rests: Vec<&str> = lines.iter().filter_map(|l| strip_timestamp(l)).collect();
    for expected in [
        format!("{p}<<- [SUB foo 1]"),
        format!("{p}->> [OK]"),
        format!("{p}<<- [PUB foo 2]"),
        format!("{p}<<- MSG_PAYLOAD: [\"hi\"]"),
        format!("{p}->> [MSG foo 1 2]"),
        format!("{p}<<- [PING]"),
        format!("{p}->> [PONG]"),
    ] {
        assert!(
            rests.contains(&expected.as_str()),
            "{expected:?} in {lines:#?}"
        );
    }
    let connect = matching(&lines, "<<- [CONNECT ");
    assert_eq!(connect.len(), 1, "{lines:#?}");
    assert!(connect[0].contains(&p), "{connect:?}");
    assert!(
        connect[0].contains("\"pass\":\"[REDACTED]\"") && connect[0].contains("\"user\":\"alice\""),
        "{connect:?}"
    );
    assert!(
        lines.iter().all(|l| !l.contains("s3cr3t-pw")),
        "the password never appears: {lines:#?}"
    );
    // auth_token is redacted too.
    let mut tok = server.raw();
    tok.exchange(b"CONNECT {\"auth_token\":\"tok-s3cr3t\"}\r\n");
    assert!(server.wait_for_log("\"auth_token\":\"[REDACTED]\""));
    // -V does not imply -D (nats-server's rule).
    let lines = server.log_lines();
    assert!(lines.iter().all(|l| !l.contains("tok-s3cr3t")));
    assert!(
        lines.iter().all(|l| !l.contains("[DBG]")),
        "no debug lines with -V alone: {lines:#?}"
    );
}

/// Every spelling of a secret's key that the CONNECT decoder reads (Go's case folding,
/// JSON escapes) is redacted in the trace: the login succeeds, so the decoder did read the
/// secret, and the secret never reaches the log.
#[test]
fn trace_redacts_every_spelling_the_decoder_reads() {
    let cases: [(&[&str], &[u8], &str); 6] = [
        (
            &["--user", "alice", "--pass", "pw-1"],
            br#"{"user":"alice","PASS":"pw-1"}"#,
            "pw-1",
        ),
        (
            &["--user", "alice", "--pass", "pw-2"],
            br#"{"user":"alice","Pass":"pw-2"}"#,
            "pw-2",
        ),
        (
            &["--user", "alice", "--pass", "pw-3"],
            br#"{"user":"alice","p\u0061ss":"pw-3"}"#,
            "pw-3",
        ),
        (
            &["--user", "alice", "--pass", "pw-4"],
            "{\"user\":\"alice\",\"pa\u{17f}\u{17f}\":\"pw-4\"}".as_bytes(),
            "pw-4",
        ),
        (&["--auth", "tok-5"], br#"{"AUTH_TOKEN":"tok-5"}"#, "tok-5"),
        (
            &["--auth", "tok-6"],
            br#"{"auth_\u0074oken" : "tok-6"}"#,
            "tok-6",
        ),
    ];
    for (args, json, secret) in cases {
        let mut all = vec!["-V"];
        all.extend_from_slice(args);
        let server = ServerProcess::beaver(&all);
        let mut raw = server.raw();
        let mut connect = b"CONNECT ".to_vec();
        connect.extend_from_slice(json);
        connect.extend_from_slice(b"\r\n");
        assert_eq!(
            raw.exchange(&connect),
            vec![Frame::Ok, Frame::Pong],
            "{secret}: logged in"
        );
        assert!(
            server.wait_for_log("[REDACTED]"),
            "{:#?}",
            server.log_lines()
        );
        assert!(server.wait_for_log("->> [PONG]"));
        let lines = server.log_lines();
        assert!(
            lines.iter().all(|l| !l.contains(secret)),
            "{secret} never appears: {lines:#?}"
        );
    }
}

#[test]
fn debug_and_trace_together() {
    let server = ServerProcess::beaver(&["-DV"]);
    let mut raw = server.raw();
    let cid = raw.info["client_id"].as_u64().unwrap();
    raw.exchange(b"CONNECT {\"verbose\":false}\r\nSUB foo 7\r\n");
    assert!(server.wait_for_log(&format!("cid:{cid} - Client connection created")));
    assert!(server.wait_for_log(&format!("cid:{cid} - <<- [SUB foo 7]")));
    drop(raw);
    assert!(server.wait_for_log(&format!(
        "cid:{cid} - Client connection closed: Client Closed"
    )));
    let lines = server.log_lines();
    assert!(matching(&lines, "[DBG]").len() >= 2, "{lines:#?}");
    assert!(matching(&lines, "[TRC]").len() >= 3, "{lines:#?}");
}

#[test]
fn log_file_replaces_stderr() {
    let file = TempFile::new("beaver.log");
    let mut server = Spawned::spawn(&["-a", "127.0.0.1", "-p", "-1", "-D", "-l", file.path()]);
    let read = || std::fs::read_to_string(&file.0).unwrap_or_default();
    let text = wait_until(|| Some(read()).filter(|t| t.contains("Server is ready")))
        .unwrap_or_else(|| {
            panic!(
                "no 'Server is ready' in {:?}; stderr {:?}",
                read(),
                server.log_lines()
            )
        });
    let listening = text
        .lines()
        .find(|l| l.contains("Listening for client connections on 127.0.0.1:"))
        .expect("listening line in the file");
    let port = listening_port(listening);
    for line in text.lines() {
        let rest = strip_timestamp(line).unwrap_or_else(|| panic!("timestamp on {line:?}"));
        assert!(tag(rest).is_some(), "{line:?}");
    }
    let mut raw = Raw::connect(port);
    let cid = raw.info["client_id"].as_u64().unwrap();
    assert_round_trip(&mut raw);
    drop(raw);
    let closed = format!("cid:{cid} - Client connection closed: Client Closed");
    assert!(
        wait_until(|| read().contains(&closed).then_some(())).is_some(),
        "{closed:?} in {:?}",
        read()
    );
    #[cfg(unix)]
    {
        server.signal("TERM");
        assert!(server.wait_exit().success());
        assert!(read().contains("[INF] Server Exiting"), "{:?}", read());
    }
    #[cfg(not(unix))]
    {
        let _ = server.child.kill();
        server.wait_exit();
    }
    assert!(
        server.log_lines().is_empty(),
        "nothing on stderr with -l: {:?}",
        server.log_lines()
    );
}

#[test]
fn unwritable_log_file_is_an_error() {
    let dir = TempFile::new("no-such-dir");
    let path = format!("{}/beaver.log", dir.path());
    let out = run(&["-a", "127.0.0.1", "-p", "-1", "-l", &path]);
    assert_eq!(out.code(), Some(1), "{:?}", out.stderr);
    assert!(out.stderr.contains(&path), "{:?}", out.stderr);
}

// ---------------------------------------------------------------------------------------
// Writers, addresses
// ---------------------------------------------------------------------------------------

#[test]
fn writers_flag_sets_the_pool_size() {
    for n in ["1", "3"] {
        let server = ServerProcess::beaver(&["--writers", n]);
        assert!(
            server.wait_for_log(&format!("Writers:  {n}")),
            "{:#?}",
            server.log_lines()
        );
        // Several connections so more than one writer has work.
        let mut subs: Vec<Raw> = (0..4).map(|_| server.raw()).collect();
        for (i, s) in subs.iter_mut().enumerate() {
            s.exchange(format!("CONNECT {{\"verbose\":false}}\r\nSUB w.{i} 1\r\n").as_bytes());
        }
        let mut publisher = server.raw();
        assert_round_trip(&mut publisher);
        for i in 0..4 {
            publisher.send(format!("PUB w.{i} 3\r\nw-{i}\r\n").as_bytes());
        }
        publisher.sync();
        for (i, s) in subs.iter_mut().enumerate() {
            let frames = s.wait_frames(s.received.len(), 1);
            assert_eq!(
                frames.last(),
                Some(&Frame::Msg(
                    format!("MSG w.{i} 1 3"),
                    format!("w-{i}").into_bytes()
                )),
                "--writers {n}: {}",
                show(&frames)
            );
        }
    }
}

#[test]
fn ipv6_loopback() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("SKIPPED: no IPv6 loopback on this machine");
        return;
    }
    let (server, port) = Spawned::listening("::1", &[]);
    assert!(
        server
            .wait_for_log(&format!("Listening for client connections on [::1]:{port}"))
            .is_some(),
        "{:#?}",
        server.log_lines()
    );
    let stream = TcpStream::connect(("::1", port)).expect("connect to [::1]");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let json = line
        .strip_prefix("INFO ")
        .unwrap_or_else(|| panic!("INFO first: {line:?}"));
    let info: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(info["host"], "::1");
    assert_eq!(info["port"], port);
    assert_eq!(info["client_ip"], "::1");
    (&stream)
        .write_all(b"CONNECT {\"verbose\":false}\r\nSUB six 1\r\nPUB six 2\r\nv6\r\nPING\r\n")
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let mut l = String::new();
        reader.read_line(&mut l).unwrap();
        got.push(l);
    }
    assert_eq!(got, ["MSG six 1 2\r\n", "v6\r\n", "PONG\r\n"]);
}

// ---------------------------------------------------------------------------------------
// Signals and shutdown
// ---------------------------------------------------------------------------------------

#[cfg(unix)]
fn exits_cleanly_on(signal: &str) {
    let (mut server, port) = Spawned::listening("127.0.0.1", &["-D"]);
    let mut raw = Raw::connect(port);
    assert_round_trip(&mut raw);
    server.signal(signal);
    // The client is closed by the shutdown.
    raw.until_closed();
    let status = server.wait_exit();
    assert!(status.success(), "SIG{signal}: {status:?}");
    assert_eq!(status.code(), Some(0));
    let lines = server.log_lines();
    assert!(
        !matching(&lines, "[INF] Server Exiting").is_empty(),
        "{lines:#?}"
    );
    assert!(
        !matching(&lines, "Initiating Shutdown").is_empty(),
        "{lines:#?}"
    );
    assert!(
        !matching(&lines, "Client connection closed: Server Shutdown").is_empty(),
        "{lines:#?}"
    );
}

#[cfg(unix)]
#[test]
fn sigterm_exits_zero() {
    exits_cleanly_on("TERM");
}

#[cfg(unix)]
#[test]
fn sigint_exits_zero() {
    exits_cleanly_on("INT");
}

#[cfg(unix)]
#[test]
fn sigterm_flushes_queued_messages() {
    // 8,000 messages of 1 KiB: loopback's kernel buffers take up to ~4 MB (tcp_wmem's
    // maximum on Linux) of a subscriber that does not read, so with fewer messages
    // everything would already sit in the kernel at SIGTERM; with 8 MB, beaver's own
    // queue still holds megabytes that the shutdown must flush.
    const COUNT: usize = 8000;
    const SIZE: usize = 1024;
    let payload = |i: usize| -> Vec<u8> {
        let mut p = format!("{i:06}:").into_bytes();
        p.extend((p.len()..SIZE).map(|j| b'a' + ((i + j) % 26) as u8));
        p
    };
    let (mut server, port) = Spawned::listening("127.0.0.1", &["-D"]);
    let mut sub = Raw::connect(port);
    let sub_cid = sub.info["client_id"].as_u64().unwrap();
    assert_eq!(
        sub.exchange(b"CONNECT {\"verbose\":false}\r\nSUB big 1\r\n"),
        vec![Frame::Pong]
    );
    let mut publisher = Raw::connect(port);
    let mut bytes = b"CONNECT {\"verbose\":false}\r\n".to_vec();
    for i in 0..COUNT {
        bytes.extend_from_slice(format!("PUB big {SIZE}\r\n").as_bytes());
        bytes.extend_from_slice(&payload(i));
        bytes.extend_from_slice(b"\r\n");
    }
    // The PONG means beaver has taken every PUB and queued the messages for `sub`, which
    // has not read anything yet.
    assert_eq!(publisher.exchange(&bytes), vec![Frame::Pong]);
    server.signal("TERM");
    let frames = sub.until_closed();
    let msgs: Vec<&Frame> = frames
        .iter()
        .filter(|f| matches!(f, Frame::Msg(..)))
        .collect();
    assert_eq!(
        msgs.len(),
        COUNT,
        "every accepted message is delivered before the close; other frames: {:?}",
        frames
            .iter()
            .filter(|f| !matches!(f, Frame::Msg(..)))
            .collect::<Vec<_>>()
    );
    assert_eq!(frames.len(), COUNT, "nothing but the messages");
    for (i, f) in msgs.iter().enumerate() {
        let Frame::Msg(line, p) = f else {
            unreachable!()
        };
        assert_eq!(line, &format!("MSG big 1 {SIZE}"), "message {i}");
        assert!(p == &payload(i), "message {i} intact and in order");
    }
    publisher.until_closed();
    let status = server.wait_exit();
    assert!(status.success(), "{status:?}");
    let lines = server.log_lines();
    assert!(!matching(&lines, "Server Exiting").is_empty(), "{lines:#?}");
    let closed = format!("cid:{sub_cid} - Client connection closed: Server Shutdown");
    assert!(!matching(&lines, &closed).is_empty(), "{lines:#?}");
}

// ---------------------------------------------------------------------------------------
// nats-server's process flags
// ---------------------------------------------------------------------------------------

#[test]
fn store_dir_alone_does_not_turn_jetstream_on() {
    // As nats-server: `-sd` names JetStream's directory; `-js` turns JetStream on.
    let dir = std::env::temp_dir().join(format!("beaver-sd-alone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for flag in ["--store_dir", "-sd"] {
        let (server, port) = Spawned::listening("127.0.0.1", &[flag, dir.to_str().unwrap()]);
        let mut raw = Raw::connect(port);
        assert!(raw.info.get("jetstream").is_none(), "{}", raw.info);
        assert_round_trip(&mut raw);
        drop(server);
    }
    assert!(!dir.exists(), "nothing is written without -js");
}

#[test]
fn pid_file_holds_the_process_id() {
    let pid = TempFile::new("pid");
    let (server, _) = Spawned::listening("127.0.0.1", &["-P", pid.path()]);
    server.wait_for_log("Server is ready").expect("ready");
    assert_eq!(
        std::fs::read_to_string(pid.path()).expect("pid file written before ready"),
        server.child.id().to_string()
    );
}

#[cfg(unix)]
#[test]
fn signal_without_a_running_server_is_an_error() {
    let out = run(&["--signal", "reload=2147483646"]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("no such process"), "{}", out.stderr);
}

#[cfg(windows)]
#[test]
fn signal_errors_on_windows() {
    // No process listens for this pid's events.
    let out = run(&["--signal", "reload=4294967295"]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("no beaver process 4294967295 to signal"),
        "{}",
        out.stderr
    );
    // Without a pid, `--signal` addresses the service named as the executable (none is
    // installed here), as nats-server's addresses the service `nats-server`.
    let out = run(&["--signal", "reload"]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("could not access service: "),
        "{}",
        out.stderr
    );
}
