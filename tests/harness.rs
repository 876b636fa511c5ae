//! beaver driven the way client test suites drive nats-server: started with
//! `-a 127.0.0.1 -p -1 --ports_file_dir DIR -c FILE.conf -l FILE -P FILE -m PORT`, waited for
//! through the ports file, the log file's "Server is ready" and `/varz` answering 200, used
//! by a real client (async-nats), then signalled with `--signal reload|reopen|ldm=PIDFILE`
//! until it exits. On Unix that sends SIGHUP, SIGUSR1 and SIGUSR2; on Windows it sets the
//! server's named events (see `src/signals/windows.rs`), so the same test runs there, with
//! Windows paths (backslashes) in `-c`, `-l`, `-P` and `--ports_file_dir`.
//!
//! Every wait is bounded by [`WAIT`]; nothing sleeps to synchronise.

mod common;

use bytes::Bytes;
use common::{Frame, Raw, WAIT};
use futures::StreamExt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_beaver");

/// The ports file beaver writes into `dir`: `<exe>_<pid>.ports`, where `<exe>` is the file
/// name it was started as, as nats-server names it (`beaver.exe_<pid>.ports` on Windows).
fn ports_file_in(dir: &Path, pid: u32) -> PathBuf {
    let exe = Path::new(BIN)
        .file_name()
        .expect("the binary has a file name");
    dir.join(format!("{}_{pid}.ports", exe.to_string_lossy()))
}

/// Polls `f` until it returns `Some`, for at most [`WAIT`].
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A free loopback port for `-m` (as harnesses pick one).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` on the monitoring port: the status line and the body.
fn http_get(port: u16, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(WAIT)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_owned(), body.to_owned()))
}

/// `beaver --signal SPEC` (sends a signal to the server, through its pid file).
fn signal(spec: &str) {
    let status = Command::new(BIN)
        .args(["--signal", spec])
        .status()
        .expect("run beaver --signal");
    assert!(status.success(), "beaver --signal {spec}: {status:?}");
}

struct Harness {
    dir: PathBuf,
    child: Child,
    conf: PathBuf,
    log: PathBuf,
    pid_file: PathBuf,
    ports_file: PathBuf,
    http_port: u16,
}

impl Harness {
    fn start(conf_text: &str) -> Harness {
        // The system's temporary directory: on Windows a path with backslashes.
        let dir = std::env::temp_dir().join(format!(
            "beaver-harness-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("server.conf");
        std::fs::write(&conf, conf_text).unwrap();
        let (log, pid_file) = (dir.join("server.log"), dir.join("server.pid"));
        let http_port = free_port();
        let child = Command::new(BIN)
            .args(["-a", "127.0.0.1", "-p", "-1", "--ports_file_dir"])
            .arg(&dir)
            .arg("-c")
            .arg(&conf)
            .arg("-l")
            .arg(&log)
            .arg("-P")
            .arg(&pid_file)
            .args(["-m", &http_port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn beaver");
        let ports_file = ports_file_in(&dir, child.id());
        Harness {
            dir,
            child,
            conf,
            log,
            pid_file,
            ports_file,
            http_port,
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_log(&self, needle: &str) {
        wait_for(&format!("{needle:?} in the log file"), || {
            self.log_text().contains(needle).then_some(())
        });
    }

    /// The `nats` and `monitoring` URLs of the ports file, once it exists.
    fn ports(&self) -> serde_json::Value {
        wait_for("the ports file", || {
            let text = std::fs::read_to_string(&self.ports_file).ok()?;
            serde_json::from_str(&text).ok()
        })
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        wait_for("the server to exit", || {
            self.child.try_wait().expect("wait")
        })
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const CONF: &str = "# written by tests/harness.rs\n\
                    server_name: harness\n\
                    debug: false\n\
                    max_payload: 1MB\n\
                    lame_duck_duration: \"30s\"\n\
                    lame_duck_grace_period: \"200ms\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_waited_for_and_signalled_like_nats_server() {
    let mut h = Harness::start(CONF);

    // What harnesses wait for: the ports file, the log line, /varz.
    let ports = h.ports();
    let url = ports["nats"][0].as_str().expect("a nats URL").to_owned();
    let port: u16 = url.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap();
    assert_eq!(
        ports,
        serde_json::json!({
            "nats": [format!("nats://127.0.0.1:{port}")],
            "monitoring": [format!("http://127.0.0.1:{}", h.http_port)],
        })
    );
    h.wait_log("Server is ready");
    let log = h.log_text();
    assert!(
        log.contains(&format!(
            "[INF] Listening for client connections on 127.0.0.1:{port}"
        )),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(&h.pid_file).unwrap(),
        h.child.id().to_string()
    );
    let (status, body) = http_get(h.http_port, "/varz").expect("/varz answers");
    assert!(status.contains("200"), "{status}");
    let varz: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(varz["port"], port);
    assert_eq!(varz["server_name"], "harness");

    // A real client.
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let client = async_nats::ConnectOptions::new()
        .event_callback(move |e| {
            let tx = events_tx.clone();
            async move {
                let _ = tx.send(e);
            }
        })
        .connect(&url)
        .await
        .expect("async-nats connects");
    let mut sub = client.subscribe("harness.>").await.unwrap();
    client
        .publish("harness.hello", Bytes::from_static(b"hi"))
        .await
        .unwrap();
    let msg = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(msg.payload, Bytes::from_static(b"hi"));
    assert_eq!(client.server_info().max_payload, 1 << 20);

    // Reload (SIGHUP through `--signal reload=PIDFILE`): debug on, a smaller max_payload.
    std::fs::write(
        &h.conf,
        CONF.replace("debug: false", "debug: true")
            .replace("max_payload: 1MB", "max_payload: 512KB"),
    )
    .unwrap();
    signal(&format!("reload={}", h.pid_file.display()));
    h.wait_log("Reloaded server configuration");
    let log = h.log_text();
    assert!(log.contains("[INF] Reloaded: debug = true"), "{log}");
    assert!(
        log.contains("[INF] Reloaded: max_payload = 524288"),
        "{log}"
    );
    // New connections are told the new limit; debug logging is on.
    let raw = Raw::connect(port);
    assert_eq!(raw.info["max_payload"], 512 << 10);
    h.wait_log("[DBG]");
    let (_, body) = http_get(h.http_port, "/varz").expect("/varz answers");
    let varz: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(varz["max_payload"], 512 << 10);
    drop(raw);

    // An option that cannot change fails the whole reload, as in nats-server.
    std::fs::write(
        &h.conf,
        CONF.replace("server_name: harness", "server_name: other")
            .replace("debug: false", "debug: true")
            .replace("max_payload: 1MB", "max_payload: 256KB"),
    )
    .unwrap();
    signal(&format!("reload={}", h.pid_file.display()));
    h.wait_log("Failed to reload server configuration: config reload not supported for ServerName");
    assert_eq!(Raw::connect(port).info["max_payload"], 512 << 10);

    // Log rotation: move the file away, SIGUSR1 (`--signal reopen`), a new file appears.
    let rotated = h.dir.join("server.log.1");
    std::fs::rename(&h.log, &rotated).unwrap();
    signal(&format!("reopen={}", h.pid_file.display()));
    h.wait_log("File log re-opened");

    // Lame-duck mode (SIGUSR2, `--signal ldm`): a raw client that sent CONNECT protocol 1 gets an INFO with
    // "ldm": true and is closed; async-nats reports lame-duck mode; the server exits 0,
    // removes the ports file and keeps the pid file (as nats-server does).
    let mut raw = Raw::connect(port);
    let frames = raw.exchange(b"CONNECT {\"verbose\":false,\"protocol\":1}\r\n");
    assert!(frames.iter().all(|f| *f == Frame::Pong), "{frames:?}");
    signal(&format!("ldm={}", h.pid_file.display()));
    let frames = raw.until_closed();
    let ldm = frames.iter().find_map(|f| match f {
        Frame::Info(json) => serde_json::from_str::<serde_json::Value>(json).ok(),
        _ => None,
    });
    assert_eq!(
        ldm.as_ref().map(|i| &i["ldm"]),
        Some(&serde_json::json!(true)),
        "{frames:?}"
    );
    let saw_ldm = tokio::time::timeout(WAIT, async {
        while let Some(e) = events.recv().await {
            if matches!(e, async_nats::Event::LameDuckMode) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(saw_ldm, Ok(true), "async-nats saw the lame-duck INFO");
    let status = h.wait_exit();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let log = h.log_text();
    for line in [
        "[INF] Entering lame duck mode, stop accepting new clients",
        "[INF] Closing existing clients",
        "[INF] Server Exiting..",
    ] {
        assert!(log.contains(line), "{line:?} in {log}");
    }
    assert!(!h.ports_file.exists(), "the ports file is removed at exit");
    assert!(
        h.pid_file.exists(),
        "the pid file stays, as with nats-server"
    );
    drop(client);
}

#[test]
fn signal_errors_are_nats_servers() {
    let out = Command::new(BIN)
        .args(["--signal", "nope=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "beaver: unknown signal \"nope\"\n"
    );
    let out = Command::new(BIN)
        .args(["-sl", "ldm=not-a-pid"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    // On Windows a name is a service's, as for nats-server there.
    if cfg!(windows) {
        assert!(
            err.starts_with("beaver: could not access service: "),
            "{err}"
        );
    } else {
        assert_eq!(err, "beaver: invalid pid: not-a-pid\n");
    }
}

#[test]
fn ipv6_loopback_with_a_ports_file() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("SKIPPED: no IPv6 loopback on this machine");
        return;
    }
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("harness6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(BIN)
        .args(["-a", "::1", "-p", "-1", "--ports_file_dir"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ports_file = ports_file_in(&dir, child.id());
    let ports: serde_json::Value = wait_for("the ports file", || {
        serde_json::from_str(&std::fs::read_to_string(&ports_file).ok()?).ok()
    });
    let url = ports["nats"][0].as_str().unwrap().to_owned();
    assert!(url.starts_with("nats://[::1]:"), "{ports}");
    assert!(ports.get("monitoring").is_none(), "{ports}");
    let port: u16 = url.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap();
    // A socket address, not ("::1", port): no name resolution (Wine resolves "::1" oddly).
    let mut s = TcpStream::connect(std::net::SocketAddr::from((
        std::net::Ipv6Addr::LOCALHOST,
        port,
    )))
    .unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = [0; 5];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"INFO ");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `program -a HOST -p -1 -m -1 --ports_file_dir DIR` and returns its ports file's
/// JSON with every port replaced by `PORT` (the ports are random).
fn ports_file_of(program: &str, file_prefix: &str, host: &str) -> Option<String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "ports-{file_prefix}-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir).ok()?;
    let mut child = Command::new(program)
        .args(["-a", host, "-p", "-1", "-m", "-1", "--ports_file_dir"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let path = dir.join(format!("{file_prefix}_{}.ports", child.id()));
    let text = wait_for("the ports file", || {
        let t = std::fs::read_to_string(&path).ok()?;
        // Complete JSON only (nats-server writes it from a goroutine).
        serde_json::from_str::<serde_json::Value>(&t)
            .ok()
            .map(|_| t)
    });
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let mut out = String::new();
    let mut rest = text.as_str();
    // Replace ":<digits>\"" by ":PORT\"".
    while let Some(i) = rest.find("\"") {
        let (head, tail) = rest.split_at(i);
        match head.rsplit_once(':') {
            Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                out.push_str(h);
                out.push_str(":PORT");
            }
            _ => out.push_str(head),
        }
        out.push('"');
        rest = &tail[1..];
    }
    out.push_str(rest);
    Some(out)
}

#[test]
fn ports_file_matches_nats_servers() {
    let Some(nats) = common::nats_server_path() else {
        if std::env::var("BEAVER_REQUIRE_NATS_SERVER").as_deref() == Ok("1") {
            panic!("nats-server is required (BEAVER_REQUIRE_NATS_SERVER=1) but missing");
        }
        println!("SKIPPED: nats-server is not installed");
        return;
    };
    for host in ["127.0.0.1", "0.0.0.0"] {
        let theirs = ports_file_of(&nats, "nats-server", host).expect("nats-server's ports file");
        let ours = ports_file_of(BIN, "beaver", host).expect("beaver's ports file");
        // nats-server also lists IPv6 link-local addresses, which refuse connections
        // without their interface's zone (a URL cannot carry it portably); beaver lists only
        // addresses that accept. Otherwise the same URLs, in the same order.
        let mut theirs: serde_json::Value = serde_json::from_str(&theirs).unwrap();
        for urls in theirs.as_object_mut().unwrap().values_mut() {
            urls.as_array_mut()
                .unwrap()
                .retain(|u| !u.as_str().unwrap().contains("://[fe80:"));
        }
        let ours: serde_json::Value = serde_json::from_str(&ours).unwrap();
        assert_eq!(ours, theirs, "-a {host}");
    }
}

/// On Windows, `--signal stop=PID` (and `quit`) stop the server gracefully: it exits 0
/// (nats-server's `stop` is SIGKILL on Unix, which Windows has no equivalent of to send).
#[cfg(windows)]
#[test]
fn signal_stop_exits_cleanly_on_windows() {
    let mut h = Harness::start("server_name: stopper\n");
    let _ = h.ports();
    h.wait_log("Server is ready");
    signal(&format!("stop={}", h.child.id()));
    let status = h.wait_exit();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        h.log_text().contains("Server Exiting.."),
        "{}",
        h.log_text()
    );
}

/// With no host given, nats-server listens on every IPv4 and IPv6 address (Go's dual-stack
/// socket), and its ports file has `nats`, `monitoring` and `cluster` entries. beaver does
/// the same, and every address its ports file lists accepts connections (checked here for
/// the loopback ones: tests talk to loopback only); no IPv6 link-local address, which no
/// client can use without its zone, is listed.
#[test]
fn without_a_host_every_listed_address_accepts() {
    let dir = std::env::temp_dir().join(format!("beaver-dual-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut servers = vec![(BIN.to_owned(), "beaver")];
    if let Some(n) = common::nats_server_path() {
        servers.push((n, "nats-server"));
    } else {
        common::ServerProcess::nats_server(&[]); // skips, or fails under CI
    }
    /// Kills the server when the test ends, panicking or not.
    struct Killed(Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    for (bin, name) in servers {
        let child = Command::new(&bin)
            .args(["-p", "-1", "-m", "-1", "--cluster", "nats://0.0.0.0:-1"])
            .arg("--ports_file_dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let child = Killed(child);
        let exe = Path::new(&bin)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let file = dir.join(format!("{exe}_{}.ports", child.0.id()));
        let ports: serde_json::Value = wait_for("the ports file", || {
            serde_json::from_str(&std::fs::read_to_string(&file).ok()?).ok()
        });
        let mut keys: Vec<&String> = ports.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["cluster", "monitoring", "nats"], "{name}: {ports}");
        let mut checked = 0;
        for url in ports
            .as_object()
            .unwrap()
            .values()
            .flat_map(|v| v.as_array().unwrap())
        {
            let url = url.as_str().unwrap();
            let hp = url.split("://").nth(1).unwrap();
            let addr: std::net::SocketAddr = hp.parse().unwrap();
            if name == "beaver" {
                assert!(
                    !hp.starts_with("[fe80:"),
                    "{name}: link-local listed: {ports}"
                );
            }
            if addr.ip().is_loopback() {
                TcpStream::connect_timeout(&addr, WAIT)
                    .unwrap_or_else(|e| panic!("{name}: {url} listed but refused: {e}"));
                checked += 1;
            }
        }
        assert!(checked >= 3, "{name}: {ports}");
        if name == "beaver" {
            // An IPv6 client sees its own address; an IPv4 one its IPv4 address (not an
            // IPv4-mapped IPv6 one).
            let nats = ports["nats"].as_array().unwrap();
            let port: u16 = nats[0]
                .as_str()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let raw = Raw::connect(port);
            assert_eq!(raw.info["client_ip"], "127.0.0.1");
            assert_eq!(raw.info["host"], "0.0.0.0");
            if nats
                .iter()
                .any(|u| u.as_str().unwrap().starts_with("nats://[::1]"))
            {
                let mut s = TcpStream::connect(("::1", port)).unwrap();
                s.set_read_timeout(Some(WAIT)).unwrap();
                let mut line = String::new();
                std::io::BufRead::read_line(&mut std::io::BufReader::new(&mut s), &mut line)
                    .unwrap();
                assert!(line.contains("\"client_ip\":\"::1\""), "{line}");
            }
        }
        drop(child);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
