//! The monitoring port under abuse: requests that used to take beaver down (issue 12) and
//! clients that hold connections open. Each test starts the real `beaver` binary with `-m`,
//! and, where the reference is installed, Debian's nats-server too: its answers are what
//! beaver must give, and its numbers are printed beside beaver's (run with `--nocapture`
//! to see them; the README's table comes from here).
//!
//! What every attack must leave intact: the process, a NATS client connected before (it
//! still gets its `PONG`), and `/healthz`.
//!
//! Memory and thread counts are read from `/proc/<pid>/status` (`VmRSS`, `Threads`) on
//! Linux; elsewhere those assertions are skipped. There are no timing assertions: waits are
//! bounded by [`common::WAIT`] (or a few times it) and fail the test when they run out.

mod common;

use common::{Frame, Raw, ServerProcess, WAIT};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A server with monitoring on, its monitoring port, and a NATS client connected to it.
struct Target {
    server: ServerProcess,
    http: u16,
    client: Raw,
}

impl Target {
    fn beaver() -> Target {
        Target::of(ServerProcess::beaver(&["-m", "-1"]))
    }

    /// nats-server, or `None` (and a SKIPPED line) when it is not installed.
    fn reference() -> Option<Target> {
        ServerProcess::nats_server(&["-m", "-1"]).map(Target::of)
    }

    fn of(server: ServerProcess) -> Target {
        let http = server.monitor_port();
        let mut client = server.raw();
        let got = client.exchange(b"CONNECT {\"verbose\":false}\r\n");
        assert_eq!(got, vec![Frame::Pong], "{}: CONNECT", server.name);
        Target {
            server,
            http,
            client,
        }
    }

    fn name(&self) -> &'static str {
        self.server.name
    }

    /// The process is up, the client connected before the attack still gets its PONG, and
    /// `/healthz` answers.
    fn assert_alive(&mut self, after: &str) {
        let got = self.client.sync();
        assert!(
            !self.client.closed && got == vec![Frame::Pong],
            "{}: the NATS client was disconnected by {after}: {got:?}",
            self.name()
        );
        let r = common::http_get(self.http, "/healthz");
        assert_eq!(
            (r.status, r.body.as_str()),
            (200, "{\"status\":\"ok\"}"),
            "{}: /healthz after {after}",
            self.name()
        );
    }

    fn status(&self, field: &str) -> Option<u64> {
        proc_status(self.server.pid(), field)
    }

    /// The thread count, read again (up to five times, 20 ms apart) while it is above
    /// `bound`. A connection thread that has ended and been joined (before its successor
    /// starts) can still be listed for a moment as the kernel tears its task down: the join
    /// returns when the thread clears its id, early in its exit. A thread that is really
    /// there stays in every reading.
    fn threads_settled(&self, bound: u64) -> Option<u64> {
        let mut n = self.status("Threads");
        for _ in 0..5 {
            if n.is_none_or(|n| n <= bound) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            n = self.status("Threads");
        }
        n
    }
}

/// A field of `/proc/<pid>/status` (`VmRSS` in KiB, `Threads`), on Linux only (under Wine a
/// Windows process id could name an unrelated Linux process).
fn proc_status(pid: u32, field: &str) -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Sends `request` on a new connection (ignoring a write the server cut short), then reads
/// until the server closes, or until [`WAIT`] passes; returns what it read.
fn exchange(port: u16, request: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the monitor");
    s.set_read_timeout(Some(WAIT)).unwrap();
    let _ = s.write_all(request);
    read_until_closed(&mut s)
}

/// Reads until EOF, a reset or a timeout; returns what arrived.
fn read_until_closed(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// The status code and the `Connection` header of a response (0 and "" if none came).
fn status_and_connection(response: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(response);
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let connection = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("connection"))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    (status, connection)
}

/// A response without its `Date` line (the only part that differs between two servers'
/// answers of the same request).
fn without_date(response: &[u8]) -> String {
    String::from_utf8_lossy(response)
        .split("\r\n")
        .filter(|l| !l.starts_with("Date: "))
        .collect::<Vec<_>>()
        .join("\r\n")
}

// ---------------------------------------------------------------------------------------
// Issue 12, items 1 and 2: declared bodies
// ---------------------------------------------------------------------------------------

/// The requests that took beaver down, and the status nats-server answers each with.
const BODY_ATTACKS: [(&str, &[u8], u16); 4] = [
    (
        "a POST declaring a 93 GiB body",
        b"POST /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nabc",
        200,
    ),
    (
        "a GET declaring 2^64-1 bytes",
        b"GET /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n",
        400,
    ),
    (
        "a 93 GiB body behind Expect: 100-continue",
        b"POST /varz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\
          Content-Length: 99999999999\r\n\r\n",
        200,
    ),
    (
        "an unknown path declaring a 93 GiB body",
        b"PUT /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nabc",
        404,
    ),
];

#[test]
fn declared_bodies_are_never_allocated() {
    let mut ours = Target::beaver();
    let mut reference = Target::reference();
    for (what, request, status) in BODY_ATTACKS {
        let got = status_and_connection(&exchange(ours.http, request));
        ours.assert_alive(what);
        assert_eq!(got.0, status, "beaver's answer to {what}");
        assert_eq!(got.1, "close", "beaver closes after {what}");
        if let Some(reference) = reference.as_mut() {
            let want = status_and_connection(&exchange(reference.http, request));
            reference.assert_alive(what);
            assert_eq!(got, want, "{what}: beaver and nats-server answer alike");
        }
    }
    // The 400 is Go's, byte for byte.
    let got = exchange(ours.http, BODY_ATTACKS[1].1);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Connection: close\r\n\r\n400 Bad Request"
    );
    // A small body is read and thrown away: the connection goes on to the next request.
    let mut s = TcpStream::connect(("127.0.0.1", ours.http)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(
        b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\
          GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let both = String::from_utf8_lossy(&read_until_closed(&mut s)).into_owned();
    assert_eq!(both.matches("HTTP/1.1 200 OK").count(), 2, "{both}");
}

// ---------------------------------------------------------------------------------------
// Issue 12, item 3: header size, idle sockets, slow clients
// ---------------------------------------------------------------------------------------

/// Sends a request whose one header line is `size` bytes long (in 1 MiB writes), while
/// another thread reads the answer; returns the answer. The write fails once the server
/// closes, which ends the attack.
fn long_header_line(port: u16, size: usize) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the monitor");
    s.set_read_timeout(Some(WAIT * 2)).unwrap();
    let mut reader = s.try_clone().unwrap();
    let answer = std::thread::spawn(move || read_until_closed(&mut reader));
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0;
    let _ = s.write_all(b"GET /varz HTTP/1.1\r\nHost: x\r\nX-Big: ");
    while sent < size {
        if s.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    let _ = s.write_all(b"\r\n\r\n");
    answer.join().expect("the reader")
}

/// Runs `attack` while sampling the server's resident memory every 5 ms; returns the
/// attack's result and the growth of the peak over the start, in KiB (`None` off Linux).
fn peak_growth<T>(target: &Target, attack: impl FnOnce() -> T) -> (T, Option<u64>) {
    let pid = target.server.pid();
    let Some(before) = proc_status(pid, "VmRSS") else {
        return (attack(), None);
    };
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(rss) = proc_status(pid, "VmRSS") {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let result = attack();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    if let Some(rss) = proc_status(pid, "VmRSS") {
        peak.fetch_max(rss, Ordering::Relaxed);
    }
    (
        result,
        Some(peak.load(Ordering::Relaxed).saturating_sub(before)),
    )
}

const MIB: u64 = 1024;

#[test]
fn a_64_mib_header_line_is_refused_without_using_memory() {
    let mut ours = Target::beaver();
    let mut reference = Target::reference();
    let refused = "HTTP/1.1 431 Request Header Fields Too Large\r\n\
                   Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n\
                   431 Request Header Fields Too Large";
    let mut report = Vec::new();
    for target in std::iter::once(&mut ours).chain(reference.as_mut()) {
        // Warm up: the first requests allocate what every request needs.
        for path in ["/varz", "/healthz", "/connz"] {
            common::http_get(target.http, path);
        }
        let (answer, one) = peak_growth(target, || long_header_line(target.http, 64 << 20));
        assert_eq!(
            String::from_utf8_lossy(&answer),
            refused,
            "{}: Go's 431",
            target.name()
        );
        target.assert_alive("a 64 MiB header line");
        // Twenty at once.
        let port = target.http;
        let (answers, twenty) = peak_growth(target, || {
            let attackers: Vec<_> = (0..20)
                .map(|_| std::thread::spawn(move || long_header_line(port, 64 << 20)))
                .collect();
            attackers
                .into_iter()
                .map(|a| a.join().expect("attacker"))
                .collect::<Vec<_>>()
        });
        for a in answers {
            assert_eq!(String::from_utf8_lossy(&a), refused, "{}", target.name());
        }
        target.assert_alive("twenty 64 MiB header lines");
        report.push((target.name(), one, twenty));
    }
    for (name, one, twenty) in &report {
        println!(
            "{name}: resident memory growth under one 64 MiB header line: {} KiB; \
             under twenty at once: {} KiB",
            one.map_or("?".into(), |v| v.to_string()),
            twenty.map_or("?".into(), |v| v.to_string()),
        );
    }
    // beaver reads at most 1 MiB + 4 KiB of a head per connection, and gives it back
    // after. Twenty at once: twenty such buffers, and room for the allocator's slack (the
    // unfixed beaver grew by 712 MiB).
    if let (_, Some(one), Some(twenty)) = report[0] {
        assert!(one <= 8 * MIB, "one long line grew beaver by {one} KiB");
        assert!(twenty <= 64 * MIB, "twenty grew beaver by {twenty} KiB");
    } else {
        eprintln!("SKIPPED: no /proc: the memory of the attack was not measured");
    }
}

/// How many sockets the test process may open for the idle-socket test: 2,000, or fewer
/// if its open-file limit is lower (read from `/proc/self/limits` on Linux).
fn idle_socket_count() -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse::<usize>().ok())
        })
        .unwrap_or(usize::MAX);
    let n = 2000.min(limit.saturating_sub(200));
    if n < 2000 {
        eprintln!("the open-file limit is {limit}: {n} idle sockets instead of 2,000");
    }
    n
}

#[test]
fn idle_sockets_take_no_thread_each_and_healthz_answers() {
    let ours = Target::beaver();
    let reference = Target::reference();
    let n = idle_socket_count();
    let mut report = Vec::new();
    for target in std::iter::once(&ours).chain(reference.as_ref()) {
        let before = target.status("Threads");
        // At most 64 connection threads.
        let bound = before.map_or(u64::MAX, |b| b + 64);
        let mut most = before;
        let mut sockets = Vec::with_capacity(n);
        for i in 0..n {
            sockets.push(TcpStream::connect(("127.0.0.1", target.http)).expect("connect"));
            if i % 100 == 99 {
                most = most.max(target.threads_settled(bound));
            }
        }
        // Probes while they are all open: each gets an answer.
        for _ in 0..3 {
            let r = common::http_get(target.http, "/healthz");
            assert_eq!(
                r.status,
                200,
                "{}: /healthz with {n} idle sockets",
                target.name()
            );
            most = most.max(target.threads_settled(bound));
        }
        report.push((target.name(), before, most));
        drop(sockets);
    }
    for (name, before, most) in &report {
        println!(
            "{name}: threads before: {}; at most, with {n} idle monitoring sockets open: {}",
            before.map_or("?".into(), |v| v.to_string()),
            most.map_or("?".into(), |v| v.to_string()),
        );
    }
    match report[0] {
        (_, Some(before), Some(most)) => {
            // At most 64 connection threads.
            assert!(
                most <= before + 64,
                "beaver went from {before} to {most} threads"
            );
        }
        _ => eprintln!("SKIPPED: no /proc: the thread count was not checked"),
    }
}

/// Opens a socket to `port` with a tiny receive buffer, so that a large response fills
/// the server's send buffer quickly when it is not read.
fn tiny_window(port: u16) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    socket
        .connect(&addr.into())
        .expect("connect to the monitor");
    socket.into()
}

#[test]
fn a_client_that_never_reads_a_large_connz_holds_only_its_own_thread() {
    let mut ours = Target::beaver();
    // A connection with 60,000 subscriptions makes /connz?subs=detail about 10 MB: more
    // than the kernel buffers of a connection that is not read (Linux's default send
    // buffer grows to 4 MiB; the client's receive window is kept tiny).
    let mut subs = String::new();
    for i in 0..60_000 {
        subs.push_str(&format!(
            "SUB monitoring.abuse.a.rather.long.subject.name.{i} {i}\r\n"
        ));
    }
    ours.client.exchange(subs.as_bytes());
    let size = common::http_get(ours.http, "/connz?subs=detail").body.len();
    assert!(size > 8 << 20, "/connz is only {size} bytes");

    // Two clients ask for it and never read.
    let stuck: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = tiny_window(ours.http);
            s.write_all(b"GET /connz?subs=detail HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    // Everything else is answered meanwhile.
    for _ in 0..5 {
        ours.assert_alive("a client that does not read /connz");
        let varz = common::get_json(ours.http, "/varz");
        assert_eq!(varz["connections"], 1);
    }
    drop(stuck);
}

#[test]
fn a_slow_head_is_cut_at_the_header_deadline() {
    let mut ours = Target::beaver();
    let reference = Target::reference();
    let mut slow = TcpStream::connect(("127.0.0.1", ours.http)).unwrap();
    slow.write_all(b"GET /varz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    let mut theirs = reference.as_ref().map(|r| {
        let mut s = TcpStream::connect(("127.0.0.1", r.http)).unwrap();
        s.write_all(b"GET /varz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .unwrap();
        s.set_nonblocking(true).unwrap();
        s
    });
    // One byte per 100 ms (the read timeout paces the loop), for at most 3 × WAIT.
    slow.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let start = Instant::now();
    let mut answer = Vec::new();
    let cut = loop {
        if start.elapsed() > WAIT * 3 {
            break false;
        }
        if slow.write_all(b"a").is_err() {
            break true;
        }
        if let Some(s) = theirs.as_mut() {
            let _ = s.write_all(b"a");
        }
        let mut buf = [0u8; 1024];
        match slow.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break true,
        }
    };
    assert!(cut, "a head sent a byte per 100 ms was never cut");
    assert!(
        answer.is_empty(),
        "cut without an answer, as Go's ReadHeaderTimeout"
    );
    println!(
        "beaver: a head sent a byte per 100 ms was cut after {:.1} s",
        start.elapsed().as_secs_f64()
    );
    if let Some(mut s) = theirs {
        // nats-server sets no header timeout: its connection is still open.
        let mut buf = [0u8; 16];
        let open = matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        println!("nats-server: the same connection still open then: {open}");
    }
    ours.assert_alive("a slow head");
}

// ---------------------------------------------------------------------------------------
// Issue 11: paths and query bytes, as nats-server
// ---------------------------------------------------------------------------------------

#[test]
fn unclean_paths_redirect_and_bad_query_bytes_filter_nothing() {
    let ours = Target::beaver();
    let reference = Target::reference();
    // Two more clients, so that a filter that lets everything through shows.
    let _more: Vec<Raw> = (0..2).map(|_| ours.server.raw()).collect();
    let get = |port: u16, path: &str| {
        exchange(
            port,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    };
    let r = get(ours.http, "//connz");
    assert_eq!(
        without_date(&r),
        "HTTP/1.1 301 Moved Permanently\r\nContent-Type: text/html; charset=utf-8\r\n\
         Location: /connz\r\nContent-Length: 41\r\nConnection: close\r\n\r\n\
         <a href=\"/connz\">Moved Permanently</a>.\n\n"
    );
    // No connection has that user; `total` still counts them all, as nats-server's does.
    let connz = common::get_json(ours.http, "/connz?user=%ff");
    assert_eq!(
        (&connz["num_connections"], &connz["total"]),
        (&0.into(), &3.into()),
        "{connz}"
    );
    assert_eq!(common::get_json(ours.http, "/connz")["num_connections"], 3);

    let Some(reference) = reference else { return };
    let _theirs: Vec<Raw> = (0..2).map(|_| reference.server.raw()).collect();
    for path in ["//connz", "/./varz?a=1", "/a/../healthz", "//", "/varz/"] {
        let (a, b) = (get(reference.http, path), get(ours.http, path));
        assert_eq!(
            status_and_connection(&b),
            status_and_connection(&a),
            "{path}"
        );
        if status_and_connection(&a).0 == 301 {
            assert_eq!(without_date(&b), without_date(&a), "{path}");
        }
    }
    let theirs = common::get_json(reference.http, "/connz?user=%ff");
    assert_eq!(
        (&connz["num_connections"], &connz["total"]),
        (&theirs["num_connections"], &theirs["total"])
    );
}

/// Malformed requests get Go's exact answer (these have no `Date`, so they compare whole).
#[test]
fn malformed_requests_are_answered_as_nats_server_answers_them() {
    let Some(reference) = Target::reference() else {
        return;
    };
    let ours = Target::beaver();
    let mut big = b"GET /varz HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    big.resize(2 << 20, b'a');
    big.extend_from_slice(b"\r\n\r\n");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("no Host", b"GET /healthz HTTP/1.1\r\n\r\n".to_vec()),
        (
            "HTTP/2.0",
            b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "HTTP/0.9",
            b"GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "bad version",
            b"GET /healthz HTTX/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        ("no version", b"GET /healthz\r\n\r\n".to_vec()),
        (
            "bad method",
            b"G(T /healthz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "relative target",
            b"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "bad escape",
            b"GET /bad%zz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "two Hosts",
            b"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n".to_vec(),
        ),
        ("bad Host", b"GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n".to_vec()),
        (
            "gzip body",
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(),
        ),
        (
            "two lengths",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"
                .to_vec(),
        ),
        (
            "signed length",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\na".to_vec(),
        ),
        (
            "empty line first",
            b"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        ("2 MiB head", big),
    ];
    for (what, request) in &cases {
        let (a, b) = (
            exchange(reference.http, request),
            exchange(ours.http, request),
        );
        assert_eq!(
            String::from_utf8_lossy(&b),
            String::from_utf8_lossy(&a),
            "{what}"
        );
    }
    // Answers with a Date: an Expect beaver does not know, HEAD, HTTP/1.0 keep-alive.
    for (what, request) in [
        (
            "Expect",
            &b"GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: x\r\n\r\n"[..],
        ),
        (
            "HEAD",
            b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ),
        (
            "a redirected POST",
            b"POST //healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ),
    ] {
        let (a, b) = (
            exchange(reference.http, request),
            exchange(ours.http, request),
        );
        assert_eq!(
            status_and_connection(&b),
            status_and_connection(&a),
            "{what}: {:?}",
            String::from_utf8_lossy(&b)
        );
    }
}
