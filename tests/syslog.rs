//! `syslog` and `remote_syslog` (`-s`, `-r`), side by side with nats-server: messages of the
//! same form (`<PRI>RFC3339 HOST TAG[PID]: TEXT\n`, the hostname, the priority each line gets)
//! reach a syslog server that the test plays on a loopback UDP socket; beaver's own carry its
//! tag and pid and no level tag in the text.
//!
//! Unix only: on Windows both servers log to the event log instead (see tests/service.rs
//! and `logging::eventlog`).
#![cfg(unix)]

mod common;

use common::{nats_server_path, spawn, Raw, WAIT};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// One syslog message, split as Go's `log/syslog` writes it for a remote server:
/// `<PRI>TIMESTAMP HOST TAG[PID]: TEXT\n`.
#[derive(Debug)]
struct Message {
    priority: u8,
    timestamp: String,
    host: String,
    tag: String,
    pid: u32,
    text: String,
}

fn parse(datagram: &[u8]) -> Message {
    let s = std::str::from_utf8(datagram).expect("UTF-8");
    let body = s
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("ends in a newline: {s:?}"));
    let (pri, rest) = body[1..].split_once('>').expect("<PRI>");
    let mut parts = rest.splitn(4, ' ');
    let timestamp = parts.next().unwrap().to_owned();
    let host = parts.next().unwrap().to_owned();
    let tag_pid = parts.next().unwrap();
    let text = parts.next().unwrap_or_default().to_owned();
    let (tag, pid) = tag_pid
        .strip_suffix("]:")
        .and_then(|t| t.split_once('['))
        .unwrap_or_else(|| panic!("TAG[PID]: in {s:?}"));
    Message {
        priority: pri.parse().unwrap(),
        timestamp,
        host,
        tag: tag.to_owned(),
        pid: pid.parse().unwrap(),
        text,
    }
}

/// A server started with `-r udp://127.0.0.1:PORT`, and the messages it sent.
struct Logged {
    child: Child,
    socket: UdpSocket,
    messages: Vec<Message>,
}

impl Logged {
    fn start(program: &str, extra: &[&str]) -> Logged {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        let url = format!("udp://127.0.0.1:{}", socket.local_addr().unwrap().port());
        let child = spawn(
            Command::new(program)
                .args(["-a", "127.0.0.1", "-p", "-1", "-r", &url])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap();
        let mut logged = Logged {
            child,
            socket,
            messages: Vec::new(),
        };
        logged.until("Server is ready");
        logged
    }

    /// Receives messages until one's text contains `needle`; returns it.
    fn until(&mut self, needle: &str) -> &Message {
        let deadline = Instant::now() + WAIT;
        let mut buf = [0u8; 4096];
        loop {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} in {:?}",
                self.messages
            );
            let n = self.socket.recv(&mut buf).expect("a syslog message");
            self.messages.push(parse(&buf[..n]));
            if self.messages.last().unwrap().text.contains(needle) {
                return self.messages.last().unwrap();
            }
        }
    }

    fn port(&self) -> u16 {
        self.messages
            .iter()
            .find_map(|m| {
                m.text
                    .strip_prefix("Listening for client connections on 127.0.0.1:")
            })
            .and_then(|p| p.parse().ok())
            .expect("the client port in the log")
    }

    fn priority_of(&self, text: &str) -> u8 {
        self.messages
            .iter()
            .find(|m| m.text.starts_with(text))
            .unwrap_or_else(|| panic!("{text:?} in {:?}", self.messages))
            .priority
    }

    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.until("Server Exiting..");
        let _ = self.child.wait();
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Go's `time.RFC3339` to the second: `2026-12-02T03:40:54Z` or `...+01:00`.
fn is_rfc3339_seconds(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && (&t[19..] == "Z" || (t.len() == 25 && matches!(b[19], b'+' | b'-')))
}

#[test]
fn remote_syslog_messages_are_nats_servers() {
    let mut beaver = Logged::start(env!("CARGO_BIN_EXE_beaver"), &["-D"]);
    // A client comes and goes (debug lines), so that there is traffic to log.
    let mut raw = Raw::connect(beaver.port());
    raw.exchange(b"CONNECT {}\r\nPING\r\n");
    drop(raw);
    beaver.terminate();
    for m in &beaver.messages {
        assert_eq!(m.tag, "beaver", "{m:?}");
        assert_eq!(m.pid, beaver.child.id(), "{m:?}");
        assert!(is_rfc3339_seconds(&m.timestamp), "{m:?}");
        assert!(!m.host.is_empty(), "{m:?}");
        assert!(!m.text.starts_with('['), "no level tag in the text: {m:?}");
    }
    // Facility kern (0): notice 5 for info, debug 7.
    assert_eq!(beaver.priority_of("Server is ready"), 5);
    assert_eq!(beaver.priority_of("Listening for client connections on"), 5);
    assert_eq!(beaver.priority_of("Server Exiting.."), 5);
    assert!(
        beaver
            .messages
            .iter()
            .any(|m| m.priority == 7 && m.text.contains("Client connection created")),
        "debug lines at priority 7: {:?}",
        beaver.messages
    );

    let Some(bin) = nats_server_path() else {
        if std::env::var("BEAVER_REQUIRE_NATS_SERVER").as_deref() == Ok("1") {
            panic!("nats-server is required (BEAVER_REQUIRE_NATS_SERVER=1)");
        }
        eprintln!("SKIPPED: the comparison with nats-server (not installed)");
        return;
    };
    let mut reference = Logged::start(&bin, &["-D"]);
    let mut raw = Raw::connect(reference.port());
    raw.exchange(b"CONNECT {}\r\nPING\r\n");
    drop(raw);
    reference.terminate();
    let first = &reference.messages[0];
    assert!(is_rfc3339_seconds(&first.timestamp), "{first:?}");
    assert_eq!(first.host, beaver.messages[0].host, "the same hostname");
    for text in [
        "Server is ready",
        "Listening for client connections on",
        "Server Exiting..",
        "Initiating Shutdown...",
    ] {
        assert_eq!(
            beaver.priority_of(text),
            reference.priority_of(text),
            "{text}"
        );
    }
    let created = |l: &Logged| {
        l.messages
            .iter()
            .find(|m| m.text.contains("Client connection created"))
            .map(|m| m.priority)
    };
    assert_eq!(created(&beaver), created(&reference));
}

/// A `remote_syslog` URL that is not one is refused before anything starts, naming the
/// value (nats-server stops there too, with `error invalid network type`).
#[test]
fn a_bad_remote_syslog_url_is_refused() {
    for args in [
        vec!["-r", "http://logs:514"],
        vec!["-t", "-r", "http://logs:514"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_beaver"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("remote_syslog \"http://logs:514\": invalid network type \"http\""),
            "{err}"
        );
    }
}

/// `syslog_name` must be a plain name (on Windows it is a registry key's); an empty
/// `remote_syslog` is unset, as in nats-server.
#[test]
fn syslog_name_and_an_empty_remote_syslog() {
    let dir = std::env::temp_dir().join(format!("beaver-syslog-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "syslog_name: \"a/b\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_beaver"))
        .args(["-t", "-c", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("syslog_name \"a/b\""), "{err}");
    let empty = dir.join("empty.conf");
    std::fs::write(&empty, "remote_syslog: \"\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_beaver"))
        .args(["-t", "-c", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-s` with no syslog daemon to reach stops the server with nats-server's words.
#[test]
fn syslog_without_a_daemon_is_an_error() {
    if ["/dev/log", "/var/run/syslog", "/var/run/log"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
    {
        eprintln!("SKIPPED: this machine has a syslog socket");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_beaver"))
        .args(["-a", "127.0.0.1", "-p", "-1", "-s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error connecting to syslog"), "{err}");
}

/// Over TCP the messages are the same, each ending in a newline (the frame delimiter).
#[test]
fn remote_syslog_over_tcp() {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("tcp://{}", listener.local_addr().unwrap());
    let mut child = spawn(
        Command::new(env!("CARGO_BIN_EXE_beaver"))
            .args(["-a", "127.0.0.1", "-p", "-1", "-r", &url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .unwrap();
    let (conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    let mut lines = BufReader::new(conn);
    let mut texts = Vec::new();
    while !texts.iter().any(|t: &String| t == "Server is ready") {
        let mut line = Vec::new();
        lines.read_until(b'\n', &mut line).unwrap();
        assert!(!line.is_empty(), "closed after {texts:?}");
        let m = parse(&line);
        assert_eq!(m.tag, "beaver", "{m:?}");
        assert!(m.priority == 5 || m.text != "Server is ready", "{m:?}");
        texts.push(m.text);
    }
    assert_eq!(
        texts[0],
        format!("Starting beaver version {}", env!("CARGO_PKG_VERSION"))
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// `syslog_name` (beaver's own key) is the tag the lines carry.
#[test]
fn syslog_name_names_the_lines() {
    let dir = std::env::temp_dir().join(format!("beaver-syslog-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("named.conf");
    std::fs::write(&conf, "syslog_name: \"nats-east\"\n").unwrap();
    let mut named = Logged::start(
        env!("CARGO_BIN_EXE_beaver"),
        &["-c", conf.to_str().unwrap()],
    );
    named.terminate();
    assert!(
        named.messages.iter().all(|m| m.tag == "nats-east"),
        "{:?}",
        named.messages
    );
    let _ = std::fs::remove_dir_all(&dir);
}
