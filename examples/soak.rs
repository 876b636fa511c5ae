//! A bounded soak of a small beaver cluster: everything at once for a few minutes, with the
//! server's resources sampled over time and checks at the end.
//!
//! Two beaver nodes, A and B, routed to each other, each with monitoring on, and a third, C,
//! that joins A and leaves again every few seconds (route flaps). Meanwhile:
//! - **ordered traffic**: a publisher on A sends numbered messages; a subscriber on A must
//!   get every one, once, in order (nothing a server delivers to a healthy subscriber on
//!   its own node may be lost); a subscriber on B must get them in order, without
//!   duplicates (core NATS is at-most-once across a route, so none is asserted lost there,
//!   but they are counted);
//! - **request/reply** from A to a responder on B, counted;
//! - **connection churn**: clients that connect, subscribe, publish and leave, on A and B;
//! - **slow consumers**: now and then a subscriber on A that never reads, fed by a flood
//!   until A cuts it (`max_pending` in the configuration file);
//! - **reloads**: the configuration file of A rewritten (`ping_interval`, `max_pending`) and
//!   A told to reload (`beaver --signal reload=PID`);
//! - **monitoring polls** of `/varz`, `/connz`, `/subsz`, `/routez`, `/healthz` on A and B,
//!   every one of which must answer 200.
//!
//! Every `--report` seconds it prints A's and B's resident memory, threads and open
//! descriptors. At the end it checks that both are up (`/healthz`, a fresh client's
//! PING/PONG) and that the checks above held; it exits 1 otherwise.
//!
//! ```text
//! cargo build --release --bin beaver --example soak
//! target/release/examples/soak --duration 180                 # three minutes
//! cargo run --example soak -- --duration 20 --bin target/debug/beaver   # CI's short run
//! ```
//!
//! Linux only (it reads `/proc`); loopback only; it stops everything it starts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Options {
    bin: PathBuf,
    duration: Duration,
    report: Duration,
}

fn parse() -> Options {
    let mut o = Options {
        bin: PathBuf::from("target/release/beaver"),
        duration: Duration::from_secs(120),
        report: Duration::from_secs(10),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--bin" => o.bin = value().into(),
            "--duration" => o.duration = Duration::from_secs(value().parse().unwrap_or(120)),
            "--report" => o.report = Duration::from_secs(value().parse().unwrap_or(10)),
            "-h" | "--help" => {
                println!("usage: soak [--bin PATH] [--duration SECS] [--report SECS]");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other}")),
        }
    }
    o
}

fn die(msg: &str) -> ! {
    eprintln!("soak: {msg}");
    std::process::exit(2)
}

/// Failures seen by any thread.
#[derive(Default)]
struct Failures(Mutex<Vec<String>>);

impl Failures {
    fn add(&self, what: String) {
        eprintln!("soak: FAILURE: {what}");
        self.0.lock().unwrap().push(what);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A server process; killed when dropped.
struct Node {
    name: &'static str,
    child: Child,
    port: u16,
    http: u16,
    cluster: u16,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path, name: &'static str, conf: &Path, routes: &[u16], log: &Path) -> Node {
    let (port, http, cluster) = (free_port(), free_port(), free_port());
    let mut cmd = Command::new(bin);
    cmd.args([
        "-a",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-m",
        &http.to_string(),
    ])
    .args(["-n", name, "--cluster_name", "soak"])
    .arg("--cluster")
    .arg(format!("nats://127.0.0.1:{cluster}"))
    .arg("-c")
    .arg(conf)
    .arg("-l")
    .arg(log);
    if !routes.is_empty() {
        let r: Vec<String> = routes
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect();
        cmd.arg("--routes").arg(r.join(","));
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| die(&format!("start {}: {e}", bin.display())));
    let node = Node {
        name,
        child,
        port,
        http,
        cluster,
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while http_get(http, "/healthz").map(|(s, _)| s) != Some(200) {
        if Instant::now() > deadline {
            die(&format!("{name} did not start (log: {})", log.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    node
}

/// `GET path` over HTTP/1.0: the status and the body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((status, body))
}

/// A raw client: INFO read, CONNECT sent, its PONG received.
struct Client {
    r: BufReader<TcpStream>,
}

impl Client {
    fn connect(port: u16) -> std::io::Result<Client> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut c = Client {
            r: BufReader::new(s),
        };
        let mut info = String::new();
        c.r.read_line(&mut info)?;
        c.send(b"CONNECT {\"verbose\":false,\"headers\":true,\"protocol\":1}\r\n")?;
        c.ping()?;
        Ok(c)
    }

    fn send(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.r.get_mut().write_all(b)
    }

    /// Sends PING and reads until its PONG, answering server PINGs; returns the messages
    /// received meanwhile (subject, payload).
    fn ping(&mut self) -> std::io::Result<Vec<(String, Vec<u8>)>> {
        self.send(b"PING\r\n")?;
        self.read_until_pong()
    }

    fn read_until_pong(&mut self) -> std::io::Result<Vec<(String, Vec<u8>)>> {
        let mut msgs = Vec::new();
        loop {
            match self.next()? {
                Frame::Pong => return Ok(msgs),
                Frame::Msg(s, _, p) => msgs.push((s, p)),
                Frame::Other => {}
            }
        }
    }

    /// The next frame (server PINGs answered).
    fn next(&mut self) -> std::io::Result<Frame> {
        loop {
            let mut line = String::new();
            if self.r.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let line = line.trim_end();
            if line == "PING" {
                self.send(b"PONG\r\n")?;
                continue;
            }
            if line == "PONG" {
                return Ok(Frame::Pong);
            }
            if let Some(rest) = line.strip_prefix("MSG ") {
                let parts: Vec<&str> = rest.split(' ').collect();
                let n: usize = parts.last().and_then(|n| n.parse().ok()).unwrap_or(0);
                let reply = (parts.len() == 4).then(|| parts[2].to_owned());
                let mut p = vec![0u8; n + 2];
                self.r.read_exact(&mut p)?;
                p.truncate(n);
                return Ok(Frame::Msg(parts[0].to_owned(), reply, p));
            }
            return Ok(Frame::Other);
        }
    }
}

enum Frame {
    Pong,
    /// Subject, reply subject, payload.
    Msg(String, Option<String>, Vec<u8>),
    Other,
}

/// `VmRSS` (KiB), `Threads` and open descriptors of `pid`.
fn resources(pid: u32) -> (u64, u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    (field("VmRSS:"), field("Threads:"), fds)
}

fn main() {
    let o = parse();
    if !o.bin.exists() {
        die(&format!("{} not found (build it first)", o.bin.display()));
    }
    let dir = std::env::temp_dir().join(format!("beaver-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf_a = dir.join("a.conf");
    let conf_b = dir.join("b.conf");
    // A ring of 1,000 closed connections (beaver's `max_closed_clients`; default 10,000):
    // with ~100 connections a second coming and going, the default ring takes a couple of
    // minutes to fill, and its growth would hide any other in the memory samples.
    std::fs::write(
        &conf_a,
        "max_pending: 4MB\nping_interval: \"2m\"\nmax_closed_clients: 1000\n",
    )
    .unwrap();
    std::fs::write(&conf_b, "max_pending: 64MB\nmax_closed_clients: 1000\n").unwrap();
    let a = start(&o.bin, "A", &conf_a, &[], &dir.join("a.log"));
    let b = start(&o.bin, "B", &conf_b, &[a.cluster], &dir.join("b.log"));
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Failures::default());
    let counts: Arc<[AtomicU64; 8]> = Arc::new(Default::default());
    // counts: 0 published, 1 received on A, 2 received on B, 3 requests answered,
    // 4 requests unanswered, 5 churned connections, 6 monitoring polls, 7 reloads.
    let mut threads = Vec::new();
    // Sockets of the clients that block in reads: shut at the end to stop their threads.
    let mut readers: Vec<TcpStream> = Vec::new();

    // Ordered traffic: subscribers first, then wait until B's interest reached A.
    let mut sub_a = Client::connect(a.port).expect("subscriber on A");
    let mut sub_b = Client::connect(b.port).expect("subscriber on B");
    sub_a.send(b"SUB soak.seq 1\r\n").unwrap();
    sub_a.ping().unwrap();
    sub_b
        .send(b"SUB soak.seq 1\r\nSUB soak.probe 2\r\n")
        .unwrap();
    sub_b.ping().unwrap();
    let mut probe = Client::connect(a.port).expect("probe");
    let crossed = (0..500).any(|_| {
        probe.send(b"PUB soak.probe 1\r\np\r\n").unwrap();
        probe.ping().unwrap();
        std::thread::sleep(Duration::from_millis(10));
        sub_b.ping().map(|m| !m.is_empty()).unwrap_or(false)
    });
    if !crossed {
        die("B's interest never reached A");
    }
    sub_b.send(b"UNSUB 2\r\n").unwrap();
    for (mut sub, index, strict) in [(sub_a, 1usize, true), (sub_b, 2, false)] {
        let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
        sub.r.get_ref().set_read_timeout(None).unwrap();
        readers.push(sub.r.get_ref().try_clone().unwrap());
        threads.push(std::thread::spawn(move || {
            let mut last = 0u64;
            loop {
                match sub.next() {
                    Ok(Frame::Msg(_, _, p)) => {
                        let n: u64 = String::from_utf8_lossy(&p).parse().unwrap_or(0);
                        let ok = if strict { n == last + 1 } else { n > last };
                        if !ok {
                            failures.add(format!(
                                "subscriber {index}: message {n} after {last}{}",
                                if strict {
                                    " (lost or out of order)"
                                } else {
                                    ""
                                }
                            ));
                        }
                        last = n;
                        counts[index].fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(_) if stop.load(Ordering::Relaxed) => return,
                    Err(e) => {
                        failures.add(format!("subscriber {index} lost its connection: {e}"));
                        return;
                    }
                }
            }
        }));
    }
    {
        let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
        let port = a.port;
        threads.push(std::thread::spawn(move || {
            let mut p = Client::connect(port).expect("publisher");
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = Vec::new();
                for _ in 0..100 {
                    n += 1;
                    let body = n.to_string();
                    batch.extend_from_slice(
                        format!("PUB soak.seq {}\r\n{body}\r\n", body.len()).as_bytes(),
                    );
                }
                if let Err(e) = p.send(&batch).and_then(|_| p.ping().map(|_| ())) {
                    failures.add(format!("publisher lost its connection: {e}"));
                    return;
                }
                counts[0].store(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
    }

    // Request/reply: a responder on B, a requester on A.
    {
        let stop_responder = stop.clone();
        let port = b.port;
        let mut r = Client::connect(port).expect("responder");
        r.send(b"SUB soak.svc 1\r\n").unwrap();
        r.ping().unwrap();
        r.r.get_ref().set_read_timeout(None).unwrap();
        readers.push(r.r.get_ref().try_clone().unwrap());
        threads.push(std::thread::spawn(move || {
            while let Ok(frame) = r.next() {
                if let Frame::Msg(_, Some(reply), p) = frame {
                    let mut out = format!("PUB {reply} {}\r\n", p.len()).into_bytes();
                    out.extend_from_slice(&p);
                    out.extend_from_slice(b"\r\n");
                    if r.send(&out).is_err() {
                        return;
                    }
                }
                if stop_responder.load(Ordering::Relaxed) {
                    return;
                }
            }
        }));
        let (stop, counts) = (stop.clone(), counts.clone());
        let port = a.port;
        threads.push(std::thread::spawn(move || {
            let mut q = Client::connect(port).expect("requester");
            q.send(b"SUB soak.inbox.* 1\r\n").unwrap();
            q.ping().unwrap();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let req = format!("PUB soak.svc soak.inbox.{i} 2\r\nhi\r\n");
                if q.send(req.as_bytes()).is_err() {
                    return;
                }
                let deadline = Instant::now() + Duration::from_secs(2);
                let mut answered = false;
                while !answered && Instant::now() < deadline {
                    match q.ping() {
                        Ok(msgs) => {
                            answered = msgs.iter().any(|(s, _)| s == &format!("soak.inbox.{i}"))
                        }
                        Err(_) => return,
                    }
                    if !answered {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
                counts[if answered { 3 } else { 4 }].fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    // Connection churn on A and B.
    for port in [a.port, b.port] {
        let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
        threads.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                match Client::connect(port) {
                    Ok(mut c) => {
                        let ops =
                            format!("SUB churn.{i} 1\r\nSUB churn.> 2\r\nPUB churn.{i} 1\r\nx\r\n");
                        if let Err(e) = c.send(ops.as_bytes()).and_then(|_| c.ping().map(|_| ())) {
                            failures.add(format!("churn client on {port}: {e}"));
                        }
                        counts[5].fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => failures.add(format!("churn connect to {port}: {e}")),
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }));
    }

    // Slow consumers on A: a subscriber that never reads, and a flood until A cuts it (its
    // `/varz` `slow_consumers` goes up).
    {
        let stop = stop.clone();
        let (port, http) = (a.port, a.http);
        let slow_consumers = move || -> u64 {
            http_get(http, "/varz")
                .and_then(|(_, b)| serde_json::from_str::<serde_json::Value>(&b).ok())
                .and_then(|v| v["slow_consumers"].as_u64())
                .unwrap_or(0)
        };
        threads.push(std::thread::spawn(move || {
            let payload = vec![b'f'; 1024];
            let mut chunk = Vec::new();
            for _ in 0..64 {
                chunk.extend_from_slice(b"PUB soak.flood 1024\r\n");
                chunk.extend_from_slice(&payload);
                chunk.extend_from_slice(b"\r\n");
            }
            while !stop.load(Ordering::Relaxed) {
                let before = slow_consumers();
                let socket =
                    socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                        .expect("socket");
                let _ = socket.set_recv_buffer_size(4096);
                let addr: SocketAddr = ([127, 0, 0, 1], port).into();
                if socket.connect(&addr.into()).is_err() {
                    continue;
                }
                let mut stuck: TcpStream = socket.into();
                let _ =
                    stuck.write_all(b"CONNECT {\"verbose\":false}\r\nSUB soak.flood 1\r\nPING\r\n");
                let Ok(mut f) = Client::connect(port) else {
                    continue;
                };
                let _ = f.ping();
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                    if f.send(&chunk).is_err() || f.ping().is_err() {
                        break;
                    }
                    if slow_consumers() > before {
                        break; // cut
                    }
                }
                drop(stuck);
                std::thread::sleep(Duration::from_secs(2));
            }
        }));
    }

    // Reloads of A.
    {
        let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
        let (bin, conf, pid) = (o.bin.clone(), conf_a.clone(), a.child.id());
        threads.push(std::thread::spawn(move || {
            let mut flip = false;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(3));
                flip = !flip;
                let text = if flip {
                    "max_pending: 4MB\nping_interval: \"90s\"\nmax_closed_clients: 1000\n"
                } else {
                    "max_pending: 4MB\nping_interval: \"2m\"\nmax_closed_clients: 1000\n"
                };
                std::fs::write(&conf, text).unwrap();
                match Command::new(&bin)
                    .arg("--signal")
                    .arg(format!("reload={pid}"))
                    .status()
                {
                    Ok(s) if s.success() => {
                        counts[7].fetch_add(1, Ordering::Relaxed);
                    }
                    other => failures.add(format!("reload: {other:?}")),
                }
            }
        }));
    }

    // Monitoring polls of A and B.
    for (name, http) in [("A", a.http), ("B", b.http)] {
        let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for path in ["/varz", "/connz?subs=1", "/subsz", "/routez", "/healthz"] {
                    match http_get(http, path) {
                        Some((200, body))
                            if serde_json::from_str::<serde_json::Value>(&body).is_ok() =>
                        {
                            counts[6].fetch_add(1, Ordering::Relaxed);
                        }
                        other => failures.add(format!("{name} {path}: {other:?}")),
                    }
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }));
    }

    // Route flaps: C joins A and leaves again.
    let conf_c = dir.join("c.conf");
    std::fs::write(&conf_c, "max_pending: 64MB\n").unwrap();
    {
        let (stop, bin, dir) = (stop.clone(), o.bin.clone(), dir.clone());
        let a_cluster = a.cluster;
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let c = start(&bin, "C", &conf_c, &[a_cluster], &dir.join("c.log"));
                std::thread::sleep(Duration::from_secs(3));
                drop(c);
                std::thread::sleep(Duration::from_secs(2));
            }
        }));
    }

    // Sampling, until the end.
    let started = Instant::now();
    println!(
        "{:>6}  {:>10} {:>7} {:>5}   {:>10} {:>7} {:>5}   {:>9} {:>9} {:>9}",
        "time",
        "A RSS KiB",
        "threads",
        "fds",
        "B RSS KiB",
        "threads",
        "fds",
        "published",
        "recv A",
        "recv B"
    );
    loop {
        let (ra, ta, fa) = resources(a.child.id());
        let (rb, tb, fb) = resources(b.child.id());
        println!(
            "{:>5}s  {ra:>10} {ta:>7} {fa:>5}   {rb:>10} {tb:>7} {fb:>5}   {:>9} {:>9} {:>9}",
            started.elapsed().as_secs(),
            counts[0].load(Ordering::Relaxed),
            counts[1].load(Ordering::Relaxed),
            counts[2].load(Ordering::Relaxed),
        );
        if started.elapsed() >= o.duration {
            break;
        }
        std::thread::sleep(
            o.report
                .min(o.duration.saturating_sub(started.elapsed()))
                .max(Duration::from_millis(100)),
        );
    }
    stop.store(true, Ordering::Relaxed);
    // Let the ordered subscribers take what is on its way, then stop the blocked readers.
    std::thread::sleep(Duration::from_millis(500));
    for r in &readers {
        let _ = r.shutdown(std::net::Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }

    // Both nodes are up and serve.
    for n in [&a, &b] {
        if http_get(n.http, "/healthz").map(|(s, _)| s) != Some(200) {
            failures.add(format!(
                "{}: /healthz does not answer 200 at the end",
                n.name
            ));
        }
        if Client::connect(n.port).and_then(|mut c| c.ping()).is_err() {
            failures.add(format!("{}: a new client gets no PONG at the end", n.name));
        }
    }
    let published = counts[0].load(Ordering::Relaxed);
    let got_a = counts[1].load(Ordering::Relaxed);
    if got_a != published {
        failures.add(format!(
            "subscriber on A got {got_a} of {published} messages"
        ));
    }
    let slow = http_get(a.http, "/varz")
        .and_then(|(_, b)| serde_json::from_str::<serde_json::Value>(&b).ok())
        .and_then(|v| v["slow_consumers"].as_u64())
        .unwrap_or(0);
    println!(
        "published {published}; received on A {got_a}, on B {}; requests answered {}, \
         unanswered {}; churned connections {}; slow consumers cut on A {slow}; reloads {}; \
         monitoring polls {}",
        counts[2].load(Ordering::Relaxed),
        counts[3].load(Ordering::Relaxed),
        counts[4].load(Ordering::Relaxed),
        counts[5].load(Ordering::Relaxed),
        counts[7].load(Ordering::Relaxed),
        counts[6].load(Ordering::Relaxed),
    );
    if slow == 0 {
        failures.add("no slow consumer was cut on A".into());
    }
    drop((a, b));
    let failed = failures.0.lock().unwrap().len();
    if failed > 0 {
        eprintln!("soak: {failed} failure(s); logs in {}", dir.display());
        std::process::exit(1);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("soak: OK");
}
