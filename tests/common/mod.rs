//! Helpers shared by the integration tests: start the real `beaver` binary (and Debian's
//! `nats-server`, the reference) on an ephemeral loopback port, and talk the raw protocol.
#![allow(dead_code)] // each test file uses a different subset

pub mod jwt;

use beaver::protocol::{ClientOp, Parser};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any single wait in a test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// Spawns `cmd`, trying again (three times in all, 100 ms apart) when the system fails for
/// a reason of its own: Wine's process creation now and then answers "Internal error"
/// (1359), which is not the program's doing. A missing program or a refusal is not retried.
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Ok(c) => return Ok(c),
            Err(e)
                if tries < 2
                    && !matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                    ) =>
            {
                tries += 1;
                eprintln!("spawn failed ({e}); trying again");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A fresh JetStream store directory under the system's temp dir (removed when dropped).
pub struct StoreDir(pub std::path::PathBuf);

impl StoreDir {
    /// A new, not yet created, directory for test `tag`.
    pub fn new(tag: &str) -> StoreDir {
        let dir = std::env::temp_dir().join(format!(
            "beaver-js-{tag}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        StoreDir(dir)
    }

    /// The path, as an argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 temp dir")
    }
}

impl Drop for StoreDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checks the configuration file `path` with `beaver -t`, which must refuse it; returns
/// what it said on stderr (for the caller to find the key, line and words in).
pub fn refused_config(path: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_beaver"))
        .args(["-c", path.to_str().expect("UTF-8 path"), "-t"])
        .output()
        .expect("run beaver -t");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "accepted: {}", path.display());
    stderr
}

/// A server process listening on 127.0.0.1; killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// `beaver` or `nats-server`.
    pub name: &'static str,
    /// The client port it listens on.
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts the `beaver` binary built for this test run (or the one `BEAVER_BIN` names:
    /// `.ci/run` runs the core protocol suites against beaver-async that way), with
    /// `-a 127.0.0.1 -p -1` and `args`, and waits until it listens.
    pub fn beaver(args: &[&str]) -> ServerProcess {
        let mut all = vec!["-a", "127.0.0.1", "-p", "-1"];
        all.extend_from_slice(args);
        let program =
            std::env::var("BEAVER_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_beaver").to_owned());
        Self::start(&program, &all, "beaver").expect("beaver starts and listens")
    }

    /// Starts Debian's `nats-server` the same way, if it is installed. When it is not:
    /// returns `None` (the caller skips and says so), unless `BEAVER_REQUIRE_NATS_SERVER=1`
    /// (set by `.ci/run`), in which case the test fails: CI must not skip the comparison.
    pub fn nats_server(args: &[&str]) -> Option<ServerProcess> {
        let bin = nats_server_path();
        let mut all = vec!["-a", "127.0.0.1", "-p", "-1"];
        all.extend_from_slice(args);
        match bin.and_then(|b| Self::start(&b, &all, "nats-server")) {
            Some(s) => Some(s),
            None => {
                if std::env::var("BEAVER_REQUIRE_NATS_SERVER").as_deref() == Ok("1") {
                    panic!(
                        "nats-server is required (BEAVER_REQUIRE_NATS_SERVER=1) but cannot be run"
                    );
                }
                eprintln!(
                    "SKIPPED: Debian's nats-server is not installed (apt-get install nats-server); \
                     the comparison with the reference did not run"
                );
                None
            }
        }
    }

    /// Starts `program args...`, capturing stderr, and waits for the
    /// "Listening for client connections on HOST:PORT" line both servers print.
    pub fn start(program: &str, args: &[&str], name: &'static str) -> Option<ServerProcess> {
        let mut child = spawn(
            Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )
        .ok()?;
        let stderr = child.stderr.take()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel::<u16>();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                // Every byte is read, whatever it is (`lines()` would stop at the first line
                // that is not UTF-8 and leave the server blocked on a full pipe).
                let mut stderr = BufReader::new(stderr);
                let mut raw = Vec::new();
                loop {
                    raw.clear();
                    match stderr.read_until(b'\n', &mut raw) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let line = String::from_utf8_lossy(&raw)
                        .trim_end_matches(['\r', '\n'])
                        .to_owned();
                    if let Some(rest) = line.split("Listening for client connections on ").nth(1) {
                        if let Some(port) =
                            rest.rsplit(':').next().and_then(|p| p.trim().parse().ok())
                        {
                            let _ = tx.send(port);
                        }
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        match rx.recv_timeout(WAIT) {
            Ok(port) => Some(ServerProcess {
                child,
                name,
                port,
                log,
            }),
            Err(_) => {
                let exited = child.try_wait().ok().flatten();
                let _ = child.kill();
                let _ = child.wait();
                eprintln!(
                    "{name} did not start within {WAIT:?} ({}); its log:\n{}",
                    match exited {
                        Some(status) => format!("it exited: {status}"),
                        None => "still running".to_owned(),
                    },
                    log.lock().unwrap().join("\n")
                );
                None
            }
        }
    }

    /// The WebSocket port, from the "Listening for websocket clients on ws[s]://HOST:PORT"
    /// line both servers log (before they listen for clients, so it is there by now).
    pub fn websocket_port(&self) -> Option<u16> {
        self.log_lines().iter().find_map(|l| {
            let rest = l.split("Listening for websocket clients on ").nth(1)?;
            rest.rsplit(':').next()?.trim().parse().ok()
        })
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits until a log line contains `needle`.
    pub fn wait_for_log(&self, needle: &str) -> bool {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if self.log.lock().unwrap().iter().any(|l| l.contains(needle)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Sends SIGTERM and waits for the exit status (Unix only).
    #[cfg(unix)]
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit after SIGTERM",
                self.name
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the process at once (SIGKILL on Unix, TerminateProcess on Windows): nothing
    /// of it runs after this, no buffer is flushed, no file closed by it.
    pub fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A raw protocol connection that has read the server's INFO.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows what its servers logged (cargo test prints a failing test's
        // output, and CI keeps it): the first thing anyone needs to find out why.
        if std::thread::panicking() {
            eprintln!(
                "--- {} (port {}) logged:\n{}\n---",
                self.name,
                self.port,
                self.log.lock().map(|l| l.join("\n")).unwrap_or_default()
            );
        }
    }
}

/// Where Debian's nats-server is, if anywhere: `NATS_SERVER_BIN`, Debian's paths (not on
/// Windows: under Wine they lead to the Linux binary, which Wine would start with Windows
/// paths in its arguments), or `nats-server` on `PATH`.
pub fn nats_server_path() -> Option<String> {
    if let Ok(p) = std::env::var("NATS_SERVER_BIN") {
        return Some(p);
    }
    let debian_paths: &[&str] = if cfg!(windows) {
        &[]
    } else {
        &[
            "/usr/sbin/nats-server",
            "/usr/bin/nats-server",
            "/usr/local/bin/nats-server",
        ]
    };
    debian_paths
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| p.to_string())
        .or_else(|| {
            Command::new("nats-server")
                .arg("--version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| "nats-server".to_string())
        })
}

/// A frame sent by a server.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Frame {
    /// `INFO {json}`: the JSON text.
    Info(String),
    /// `MSG`/`HMSG` control line (without CR LF) and the payload.
    Msg(String, Vec<u8>),
    /// `PING`.
    Ping,
    /// `PONG`.
    Pong,
    /// `+OK`.
    Ok,
    /// `-ERR ...`: the whole line without CR LF.
    Err(String),
}

/// Splits the complete frames off the front of `buf`; returns them and how many bytes they
/// used. Panics on bytes no NATS server sends.
pub fn split_frames(buf: &[u8]) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &buf[pos..];
        let Some(lf) = rest.windows(2).position(|w| w == b"\r\n") else {
            break;
        };
        let line = String::from_utf8_lossy(&rest[..lf]).into_owned();
        let mut used = lf + 2;
        let frame = if let Some(json) = line.strip_prefix("INFO ") {
            Frame::Info(json.trim().to_string())
        } else if line.starts_with("MSG ") || line.starts_with("HMSG ") {
            let size: usize = line
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad MSG line {line:?}"));
            if rest.len() < used + size + 2 {
                break;
            }
            let payload = rest[used..used + size].to_vec();
            assert_eq!(
                &rest[used + size..used + size + 2],
                b"\r\n",
                "payload ends with CR LF"
            );
            used += size + 2;
            Frame::Msg(line, payload)
        } else if line == "PING" {
            Frame::Ping
        } else if line == "PONG" {
            Frame::Pong
        } else if line == "+OK" {
            Frame::Ok
        } else if line.starts_with("-ERR") {
            Frame::Err(line)
        } else {
            panic!("unexpected line from server: {line:?}");
        };
        frames.push(frame);
        pos += used;
    }
    (frames, pos)
}

/// A raw protocol connection.
pub struct Raw {
    /// The socket.
    pub stream: TcpStream,
    /// The server's first INFO, parsed.
    pub info: serde_json::Value,
    /// The server's first INFO's JSON as sent (field order kept).
    pub info_json: String,
    /// Bytes received and not yet returned.
    pending: Vec<u8>,
    /// Every frame received, in order (INFO excluded).
    pub received: Vec<Frame>,
    /// The parser following what we sent, to count our PINGs.
    out_parser: Parser,
    out_buf: Vec<u8>,
    out_broken: bool,
    pings_sent: usize,
    pongs_seen: usize,
    /// The server closed the connection.
    pub closed: bool,
    /// Keep the server's `PING`s in `received` and leave them unanswered (for tests of the
    /// server's keepalive). Otherwise (the default) each is answered with `PONG` and left
    /// out, as a real client does: both servers PING a client about 2 s after its
    /// `CONNECT`, which a slow test run would otherwise see among the frames it compares.
    pub server_pings: bool,
}

impl Raw {
    /// Connects and reads the INFO line.
    pub fn connect(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(WAIT)).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut out_parser = Parser::new(usize::MAX / 2, usize::MAX / 2);
        out_parser.set_headers(true);
        let mut raw = Raw {
            stream,
            info: serde_json::Value::Null,
            info_json: String::new(),
            pending: Vec::new(),
            received: Vec::new(),
            out_parser,
            out_buf: Vec::new(),
            out_broken: false,
            pings_sent: 0,
            pongs_seen: 0,
            closed: false,
            server_pings: false,
        };
        while raw.received.is_empty() && !raw.closed {
            raw.fill();
        }
        match raw.received.remove(0) {
            Frame::Info(json) => {
                raw.info = serde_json::from_str(&json).expect("INFO is JSON");
                raw.info_json = json;
            }
            other => panic!("expected INFO first, got {other:?}"),
        }
        raw
    }

    /// Sends bytes (counting the PINGs in them, so [`Raw::sync`] knows which PONG is the
    /// last).
    pub fn send(&mut self, bytes: &[u8]) {
        if let Err(e) = self.stream.write_all(bytes) {
            // The server may already have closed the connection; reads will show it.
            eprintln!("send failed: {e}");
        }
        if self.out_broken {
            return;
        }
        self.out_buf.extend_from_slice(bytes);
        let mut pos = 0;
        loop {
            match self.out_parser.parse(&self.out_buf[pos..]) {
                Ok(step) => {
                    pos += step.consumed;
                    match step.op {
                        Some(ClientOp::Ping) => self.pings_sent += 1,
                        Some(_) => {}
                        None if step.pub_line.is_some() => {}
                        None => break,
                    }
                }
                Err(_) => {
                    // Deliberately bad input: the server will close.
                    self.out_broken = true;
                    break;
                }
            }
        }
        self.out_buf.drain(..pos);
    }

    /// Reads once (blocking up to [`WAIT`]) and splits frames.
    fn fill(&mut self) {
        let mut tmp = [0u8; 65536];
        match self.stream.read(&mut tmp) {
            Ok(0) => self.closed = true,
            Ok(n) => {
                self.pending.extend_from_slice(&tmp[..n]);
                let (mut frames, used) = split_frames(&self.pending);
                self.pending.drain(..used);
                self.pongs_seen += frames.iter().filter(|f| **f == Frame::Pong).count();
                if !self.server_pings && frames.contains(&Frame::Ping) {
                    frames.retain(|f| *f != Frame::Ping);
                    // (Best effort: a server that has closed will show it on the next read.)
                    let _ = self.stream.write_all(b"PONG\r\n");
                }
                self.received.extend(frames);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!("timed out waiting for the server");
            }
            Err(_) => self.closed = true, // reset by the server
        }
    }

    /// Sends `PING` and returns every frame received until its `PONG` (included), or until
    /// the server closes the connection.
    pub fn sync(&mut self) -> Vec<Frame> {
        let start = self.received.len();
        if !self.closed {
            self.send(b"PING\r\n");
        }
        while !self.closed && (self.out_broken || self.pongs_seen < self.pings_sent) {
            self.fill();
        }
        self.received[start..].to_vec()
    }

    /// Sends `bytes` then syncs: the frames the server sent in response.
    pub fn exchange(&mut self, bytes: &[u8]) -> Vec<Frame> {
        let start = self.received.len();
        self.send(bytes);
        self.sync();
        self.received[start..].to_vec()
    }

    /// Reads until the server closes the connection; returns the frames received meanwhile.
    pub fn until_closed(&mut self) -> Vec<Frame> {
        let start = self.received.len();
        while !self.closed {
            self.fill();
        }
        self.received[start..].to_vec()
    }

    /// Reads until `n` frames have arrived in total since `from` (an index into `received`).
    pub fn wait_frames(&mut self, from: usize, n: usize) -> Vec<Frame> {
        while self.received.len() < from + n && !self.closed {
            self.fill();
        }
        self.received[from..].to_vec()
    }

    /// Reads the exact bytes `expected` (and nothing else that is pending).
    pub fn expect_bytes(&mut self, expected: &[u8]) {
        let mut got = std::mem::take(&mut self.pending);
        // Frames already split are re-encoded for the comparison.
        let mut pre = Vec::new();
        for f in self.received.drain(..) {
            pre.extend_from_slice(&encode(&f));
        }
        pre.extend_from_slice(&got);
        got = pre;
        let mut tmp = [0u8; 65536];
        while got.len() < expected.len() {
            let n = self.stream.read(&mut tmp).expect("read");
            assert!(
                n > 0,
                "closed; got so far {:?}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&tmp[..n]);
        }
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "exact bytes from the server"
        );
    }
}

/// A frame back to bytes.
pub fn encode(f: &Frame) -> Vec<u8> {
    match f {
        Frame::Info(j) => format!("INFO {j} \r\n").into_bytes(),
        Frame::Msg(line, payload) => {
            let mut v = format!("{line}\r\n").into_bytes();
            v.extend_from_slice(payload);
            v.extend_from_slice(b"\r\n");
            v
        }
        Frame::Ping => b"PING\r\n".to_vec(),
        Frame::Pong => b"PONG\r\n".to_vec(),
        Frame::Ok => b"+OK\r\n".to_vec(),
        Frame::Err(l) => format!("{l}\r\n").into_bytes(),
    }
}

/// Frames as readable text (for assertions and failure messages).
pub fn show(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|f| String::from_utf8_lossy(&encode(f)).into_owned())
        .collect()
}

impl ServerProcess {
    /// The port at the end of the first log line containing `needle` (`Listening for route
    /// connections on HOST:PORT`), waiting for it.
    pub fn port_in_log(&self, needle: &str) -> u16 {
        assert!(
            self.wait_for_log(needle),
            "{}: no {needle:?} in its log",
            self.name
        );
        self.log_lines()
            .iter()
            .find_map(|l| {
                l.split(needle)
                    .nth(1)?
                    .trim()
                    .rsplit(':')
                    .next()?
                    .parse()
                    .ok()
            })
            .expect("the line ends with :PORT")
    }

    /// The monitoring port, from the `Starting http monitor on HOST:PORT` line both servers
    /// log before they listen for clients (so it is already there once started).
    pub fn monitor_port(&self) -> u16 {
        let needle = "Starting http monitor on ";
        assert!(
            self.wait_for_log(needle),
            "{} did not start its monitor; log: {:?}",
            self.name,
            self.log_lines()
        );
        self.log_lines()
            .iter()
            .find_map(|l| l.split(needle).nth(1))
            .and_then(|addr| addr.trim().rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("the monitor line ends with :PORT")
    }
}

/// An HTTP response, read whole.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The `Content-Type` header (empty when absent).
    pub content_type: String,
    /// The body as text.
    pub body: String,
}

/// `GET path` on 127.0.0.1:`port` with a plain HTTP/1.0 request over a `TcpStream`: the
/// server answers with the whole body and closes (no chunked encoding, no keep-alive), so
/// reading to the end is the whole response.
pub fn http_get(port: u16, path: &str) -> HttpResponse {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the monitor");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("reading the response to GET {path}: {e}"));
    let text = String::from_utf8(raw).expect("the response is UTF-8");
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {text:?}"));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    let mut content_type = String::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            assert!(
                !(k.eq_ignore_ascii_case("transfer-encoding")),
                "unexpected {line:?} in a response to HTTP/1.0"
            );
            if k.eq_ignore_ascii_case("content-type") {
                content_type = v.trim().to_string();
            }
        }
    }
    HttpResponse {
        status,
        content_type,
        body: body.to_string(),
    }
}

/// `GET path`, which must be a 200 with a JSON body; the body parsed.
pub fn get_json(port: u16, path: &str) -> serde_json::Value {
    let r = http_get(port, path);
    assert_eq!(r.status, 200, "GET {path}: {}", r.body);
    assert_eq!(r.content_type, "application/json", "GET {path}");
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("GET {path}: {e}: {}", r.body))
}

/// Polls `GET path` until `done` holds for the document (a counter has reached its value),
/// up to [`WAIT`]; returns that document, or fails showing the last one. Polling, not a
/// fixed sleep: counters are updated by other threads than the one that answered the
/// client, so "the client got its reply" does not order the counter's update before it.
pub fn poll_json(
    port: u16,
    path: &str,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let doc = get_json(port, path);
        if done(&doc) {
            return doc;
        }
        assert!(
            Instant::now() < deadline,
            "GET {path}: timed out waiting for {what}; last: {doc:#}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A round trip through the server on `client`'s connection: a message to a fresh inbox
/// that `client` subscribes to, received back. Once it returns, the server has processed
/// everything `client` sent before (one connection's operations are handled in order).
/// async-nats's own `flush()` only writes the socket, so it is no such barrier.
pub async fn round_trip(client: &async_nats::Client) {
    use futures::StreamExt;
    let inbox = client.new_inbox();
    let mut sub = client.subscribe(inbox.clone()).await.expect("subscribe");
    client.publish(inbox, "sync".into()).await.expect("publish");
    let got = tokio::time::timeout(WAIT, sub.next()).await;
    assert!(
        matches!(got, Ok(Some(_))),
        "no round trip through the server within {WAIT:?}"
    );
    let _ = sub.unsubscribe().await;
}

/// The keys of a JSON object, in the order they appear in `json`.
pub fn json_keys_in_order(json: &str) -> Vec<String> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = m.next_key::<String>()? {
                m.next_value::<IgnoredAny>()?;
                keys.push(k);
            }
            Ok(keys)
        }
    }
    serde_json::Deserializer::from_str(json)
        .deserialize_map(Keys)
        .expect("a JSON object")
}

/// Asserts that beaver's `INFO` JSON (`got`) has exactly the fields of nats-server's
/// (`want`), in nats-server's order, plus `beaver_version` at the end; `git_commit` is not
/// compared (Debian's nats-server has none). Clients read these fields: nats.py's
/// `nats-core` cannot connect without `go`.
pub fn assert_info_fields_match(got: &str, want: &str, what: &str) {
    let mut got = json_keys_in_order(got);
    assert_eq!(
        got.pop().as_deref(),
        Some("beaver_version"),
        "{what}: beaver_version last"
    );
    let want: Vec<String> = json_keys_in_order(want)
        .into_iter()
        .filter(|k| k != "git_commit")
        .collect();
    assert_eq!(
        got, want,
        "{what}: INFO field names, in nats-server's order"
    );
}
