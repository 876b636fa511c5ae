//! Connection scale: what 1,000 to 20,000 connections cost each server, side by side.
//!
//! For every server (beaver, beaver-async when built, nats-server, and any
//! `--server NAME='command {port}'`), in turn, on a fresh process: it opens connections in steps (1,000, 5,000, 10,000 and
//! 20,000 by default), each sending `CONNECT` and one `SUB` to a subject of its own and
//! confirmed by the `PONG` of a `PING`. At each step, with a few subscribers kept busy by a
//! steady publisher ("some active": 10 connections receiving 1,000 messages a second in
//! all), it reads from `/proc` the server's resident memory, threads and open descriptors,
//! and measures a fresh client: its connect time (TCP connect to the first `PONG`) and the
//! p50/p99 of 1,000 round trips through the server (a `PUB` to its own subscription until
//! the `MSG` is back). Accept time is the wall time of the step's new connections divided by
//! their number. A step the server cannot reach (a refused or failed connection) is
//! reported with how many connections it held and what the next one got.
//!
//! ```text
//! cargo build --release --bin beaver --example scale
//! sudo target/release/examples/scale                      # all steps, beaver and nats-server
//! target/release/examples/scale --steps 1000,5000 --server 'nats215=/path/nats-server -a 127.0.0.1 -p {port}'
//! target/release/examples/scale --json docs/benchmarks/scale-results.json
//! ```
//!
//! 20,000 connections need 20,000 descriptors on each side. The runner spreads its side
//! over holder processes (itself, run with `--hold`, at most 4,000 connections each). It
//! raises its own open-file limit as beaver does (to the hard limit; with
//! `CAP_SYS_RESOURCE`, the hard limit too), and the servers it starts inherit it, so each
//! server gets the same limit. Linux only (`/proc`).
//! Everything listens and connects on 127.0.0.1, and every run ends by itself.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long any single read or connect may wait before the step is declared failed.
const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// Round trips measured per fresh client.
const ROUND_TRIPS: usize = 1000;
/// Active subscribers, and the rate their publisher sends at (messages per second in all).
const ACTIVE: usize = 10;
const ACTIVE_RATE: u64 = 1000;

struct ServerSpec {
    name: String,
    command: Vec<String>,
}

/// Most connections one holder process opens: the runner spreads the clients over
/// processes of its own (`--hold`), as one process may not have descriptors for 20,000.
const PER_HOLDER: usize = 4000;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--hold") {
        hold(&argv[2..]);
        return;
    }
    let mut steps = vec![1000usize, 5000, 10_000, 20_000];
    let mut servers = Vec::new();
    let mut json_out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--steps" => {
                steps = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(|s| s.trim().parse().unwrap_or_else(|_| die("--steps N,N,...")))
                    .collect();
            }
            "--server" => {
                let spec = args.next().unwrap_or_default();
                let (name, cmd) = spec
                    .split_once('=')
                    .unwrap_or_else(|| die("--server NAME='command {port}'"));
                servers.push(ServerSpec {
                    name: name.to_owned(),
                    command: cmd.split_whitespace().map(str::to_owned).collect(),
                });
            }
            "--json" => json_out = args.next(),
            "-h" | "--help" => {
                println!(
                    "scale [--steps 1000,5000,10000,20000] [--server NAME='command {{port}}']... \
                     [--json FILE]\n(beaver from target/release and nats-server from PATH \
                     or /usr/sbin are always measured)"
                );
                return;
            }
            other => die(&format!("unknown argument {other}")),
        }
    }
    let files = beaver::limits::raise_open_file_limit();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = vec![ServerSpec {
        name: "beaver".into(),
        command: vec![
            root.join("target/release/beaver").display().to_string(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            "{port}".into(),
        ],
    }];
    // beaver-async (its clients are tokio tasks), when built: `cargo build --release -p
    // beaver-async`.
    let beaver_async = root.join("target/release/beaver-async");
    if beaver_async.exists() {
        all.push(ServerSpec {
            name: "beaver-async".into(),
            command: vec![
                beaver_async.display().to_string(),
                "-a".into(),
                "127.0.0.1".into(),
                "-p".into(),
                "{port}".into(),
            ],
        });
    }
    if let Some(path) = ["nats-server", "/usr/sbin/nats-server"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
    {
        all.push(ServerSpec {
            name: "nats-server".into(),
            command: vec![
                path.into(),
                "-a".into(),
                "127.0.0.1".into(),
                "-p".into(),
                "{port}".into(),
            ],
        });
    }
    all.extend(servers);
    let max = steps.iter().copied().max().unwrap_or(0);
    eprintln!(
        "open-file limit: {} (servers inherit it); steps {steps:?}",
        files.map_or("none".into(), |f| f.to_string())
    );
    if files.is_some_and(|f| (f as usize) < max + 100) {
        eprintln!("warning: the open-file limit is below the largest step: run as root, or raise `ulimit -Hn`");
    }
    let mut results = Vec::new();
    for spec in &all {
        results.push(run_server(spec, &steps));
    }
    print_table(&results);
    if let Some(path) = json_out {
        let doc = json!({ "machine": machine(), "steps": steps, "servers": results });
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&doc).unwrap_or_default(),
        )
        .unwrap_or_else(|e| die(&format!("{path}: {e}")));
    }
}

fn die(msg: &str) -> ! {
    eprintln!("scale: {msg}");
    std::process::exit(2)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| die(&format!("no free port: {e}")))
}

/// A running server; killed when dropped.
struct Running {
    child: Child,
    port: u16,
    /// The server's first log lines (its start-up banner).
    banner: Vec<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(spec: &ServerSpec) -> Running {
    let port = free_port();
    let args: Vec<String> = spec
        .command
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .collect();
    let mut child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot start {}: {e}", spec.name)));
    // The log is read to the end by a thread (a full pipe would block the server); the
    // lines up to "ready" are kept.
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut banner = Vec::new();
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    let ready = line.contains("Server is ready");
                    banner.push(line);
                    if ready {
                        let _ = tx.send(std::mem::take(&mut banner));
                        sent = true;
                    }
                }
            }
        });
    }
    let banner = rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| die(&format!("{} did not start", spec.name)));
    Running {
        child,
        port,
        banner,
    }
}

/// From `/proc/PID/status`: resident KiB and threads; and the open descriptors.
fn proc_stats(pid: u32) -> (u64, u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    (field("VmRSS:"), field("Threads:"), fds)
}

/// Reads until the bytes read end with `end`; false if the connection ended, errored or
/// timed out first. `got` keeps what was read.
fn read_until(c: &mut TcpStream, end: &[u8], got: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    while !got.ends_with(end) {
        match c.read(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
    true
}

/// Reads until the handshake's `PONG` has come, whatever follows it: when a step takes
/// longer than the server's first keepalive (2 s after `CONNECT`), that `PING` may follow
/// the `PONG` in the same read. False as [`read_until`].
fn read_pong(c: &mut TcpStream, got: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    while !got.windows(6).any(|w| w == b"PONG\r\n") {
        match c.read(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
    true
}

fn connect(port: u16) -> std::io::Result<TcpStream> {
    let c = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), IO_TIMEOUT)?;
    c.set_read_timeout(Some(IO_TIMEOUT))?;
    c.set_nodelay(true)?;
    Ok(c)
}

/// Opens connections `from..to`, each subscribed to `scale.<i>`: all writes first, then
/// every `PONG` read (so the server accepts while the runner writes). `Err` says what the
/// first connection that failed got.
fn open(port: u16, from: usize, to: usize, conns: &mut Vec<TcpStream>) -> Result<(), String> {
    let first = conns.len();
    for i in from..to {
        let mut c = connect(port).map_err(|e| format!("connect {i}: {e}"))?;
        if let Err(e) = write!(
            c,
            "CONNECT {{\"verbose\":false}}\r\nSUB scale.{i} {i}\r\nPING\r\n"
        ) {
            // Closed by the server already: say what it sent first (a refusal's `-ERR`).
            let mut got = Vec::new();
            let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
            let _ = c.read_to_end(&mut got);
            let text = String::from_utf8_lossy(&got);
            let last = text.lines().last().map(str::to_owned);
            return Err(format!(
                "connection {i}: write: {e}; it got {}",
                last.map_or("nothing".into(), |l| format!("{l:?}"))
            ));
        }
        conns.push(c);
    }
    for (k, c) in conns[first..].iter_mut().enumerate() {
        let mut got = Vec::new();
        if !read_pong(c, &mut got) {
            let text = String::from_utf8_lossy(&got);
            let last = text.lines().last().unwrap_or("nothing").to_owned();
            return Err(format!("connection {} got {last:?}", from + k));
        }
    }
    Ok(())
}

/// A fresh client: connect time, then `ROUND_TRIPS` round trips (`PUB` to its own
/// subscription, until the `MSG` is back). Microseconds: (connect, p50, p99).
fn fresh_client(port: u16) -> Result<(f64, f64, f64), String> {
    let started = Instant::now();
    let mut c = connect(port).map_err(|e| e.to_string())?;
    c.write_all(b"CONNECT {\"verbose\":false}\r\nSUB fresh 1\r\nPING\r\n")
        .map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    if !read_pong(&mut c, &mut got) {
        return Err(format!(
            "got {:?}",
            String::from_utf8_lossy(&got)
                .lines()
                .last()
                .unwrap_or("nothing")
        ));
    }
    let connect_us = started.elapsed().as_secs_f64() * 1e6;
    let mut rtts = Vec::with_capacity(ROUND_TRIPS);
    let want = b"MSG fresh 1 2\r\nhi\r\n";
    for _ in 0..ROUND_TRIPS {
        let t = Instant::now();
        c.write_all(b"PUB fresh 2\r\nhi\r\n")
            .map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        while !got.ends_with(want) {
            // A server PING (its keepalive) is answered and skipped.
            if !read_until(&mut c, b"\r\n", &mut got) {
                return Err("closed during round trips".into());
            }
            if got.ends_with(b"PING\r\n") {
                c.write_all(b"PONG\r\n").map_err(|e| e.to_string())?;
                got.clear();
            }
        }
        rtts.push(t.elapsed().as_secs_f64() * 1e6);
    }
    rtts.sort_by(f64::total_cmp);
    let pct = |p: f64| rtts[((rtts.len() - 1) as f64 * p) as usize];
    Ok((connect_us, pct(0.5), pct(0.99)))
}

/// The active part: `ACTIVE` subscribers on `scale.active`, each drained by a thread, and
/// a publisher at `ACTIVE_RATE` messages a second, until `stop`.
fn start_activity(port: u16, stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    for _ in 0..ACTIVE {
        let Ok(mut c) = connect(port) else { continue };
        let _ = c.write_all(b"CONNECT {\"verbose\":false}\r\nSUB scale.active 1\r\nPING\r\n");
        let mut got = Vec::new();
        read_pong(&mut c, &mut got);
        let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !stop.load(Ordering::Relaxed) {
                match c.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if buf[..n].windows(6).any(|w| w == b"PING\r\n") {
                            let _ = c.write_all(b"PONG\r\n");
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
        }));
    }
    if let Ok(mut publisher) = connect(port) {
        let _ = publisher.write_all(b"CONNECT {\"verbose\":false}\r\n");
        threads.push(std::thread::spawn(move || {
            let every = Duration::from_micros(1_000_000 / ACTIVE_RATE);
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if publisher
                    .write_all(b"PUB scale.active 16\r\n0123456789abcdef\r\n")
                    .is_err()
                {
                    break;
                }
                next += every;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        }));
    }
    threads
}

/// Holder mode (`--hold PORT FROM TO`): opens connections `FROM..TO`, prints `ok` (or
/// `failed: why`), and keeps them open until its standard input closes.
fn hold(args: &[String]) {
    let num = |i: usize| -> usize {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| die("--hold PORT FROM TO"))
    };
    let (port, from, to) = (num(0) as u16, num(1), num(2));
    beaver::limits::raise_open_file_limit();
    let mut conns = Vec::with_capacity(to.saturating_sub(from));
    match open(port, from, to, &mut conns) {
        Ok(()) => println!("ok"),
        Err(why) => println!("failed: {why}"),
    }
    let _ = std::io::stdout().flush();
    // Until the runner is done with this step's connections (it closes our stdin).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// A holder process (see [`hold`]): the connections it holds live until it is dropped.
struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// Opens connections `from..to` in holder processes of at most `PER_HOLDER` each.
fn open_in_holders(
    port: u16,
    from: usize,
    to: usize,
    holders: &mut Vec<Holder>,
) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut started = Vec::new();
    let mut at = from;
    while at < to {
        let end = (at + PER_HOLDER).min(to);
        let mut child = Command::new(&exe)
            .args([
                "--hold",
                &port.to_string(),
                &at.to_string(),
                &end.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("holder: {e}"))?;
        let stdout = child.stdout.take();
        holders.push(Holder(child));
        started.push(stdout);
        at = end;
    }
    for stdout in started {
        let mut line = String::new();
        if let Some(out) = stdout {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let line = line.trim();
        if line != "ok" {
            return Err(if line.is_empty() {
                "a holder died".into()
            } else {
                line.trim_start_matches("failed: ").to_owned()
            });
        }
    }
    Ok(())
}

fn run_server(spec: &ServerSpec, steps: &[usize]) -> Value {
    let server = start(spec);
    let pid = server.child.id();
    let (rss0, threads0, fds0) = proc_stats(pid);
    eprintln!(
        "{}: idle {} KiB, {} threads, {} descriptors",
        spec.name, rss0, threads0, fds0
    );
    let caps: Vec<String> = server
        .banner
        .iter()
        .filter(|l| l.contains("Clients:"))
        .cloned()
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let activity = start_activity(server.port, stop.clone());
    let mut holders = Vec::new();
    let mut held = 0;
    let mut rows = Vec::new();
    for &n in steps {
        let from = held;
        if n <= from {
            continue;
        }
        let started = Instant::now();
        let opened = open_in_holders(server.port, from, n, &mut holders);
        held = n;
        let accept_us = started.elapsed().as_secs_f64() * 1e6 / (n - from) as f64;
        std::thread::sleep(Duration::from_millis(500));
        let (rss, threads, fds) = proc_stats(pid);
        let mut row = json!({
            "connections": n,
            "rss_kib": rss,
            "threads": threads,
            "descriptors": fds,
            "accept_us": accept_us,
        });
        match (opened, fresh_client(server.port)) {
            (Ok(()), Ok((connect_us, p50, p99))) => {
                row["connect_us"] = json!(connect_us);
                row["rtt_p50_us"] = json!(p50);
                row["rtt_p99_us"] = json!(p99);
            }
            (opened, fresh) => {
                let why = opened
                    .err()
                    .or(fresh.err().map(|e| format!("fresh client: {e}")))
                    .unwrap_or_default();
                row["failed"] = json!(why);
            }
        }
        eprintln!("{}: {n}: {row}", spec.name);
        let failed = row.get("failed").is_some();
        rows.push(row);
        if failed {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    // The server goes first, so the connections' TIME_WAIT states are on its side.
    drop(server);
    for t in activity {
        let _ = t.join();
    }
    drop(holders);
    json!({
        "server": spec.name,
        "idle": { "rss_kib": rss0, "threads": threads0, "descriptors": fds0 },
        "start_up": caps,
        "steps": rows,
    })
}

fn print_table(results: &[Value]) {
    println!(
        "| server | connections | RSS MiB | KiB per connection | threads | descriptors | accept µs/conn | fresh client connect µs | round trip p50 / p99 µs |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in results {
        let idle_rss = r["idle"]["rss_kib"].as_f64().unwrap_or(0.0);
        for s in r["steps"].as_array().into_iter().flatten() {
            let n = s["connections"].as_f64().unwrap_or(0.0);
            let rss = s["rss_kib"].as_f64().unwrap_or(0.0);
            let tail = match s.get("failed") {
                Some(why) => format!("failed: {} |", why.as_str().unwrap_or("")),
                None => format!(
                    "{:.0} | {:.0} / {:.0} |",
                    s["connect_us"].as_f64().unwrap_or(0.0),
                    s["rtt_p50_us"].as_f64().unwrap_or(0.0),
                    s["rtt_p99_us"].as_f64().unwrap_or(0.0)
                ),
            };
            // Per connection only where the step was reached (else fewer are held).
            let per = if s.get("failed").is_some() {
                "—".to_owned()
            } else {
                format!("{:.1}", (rss - idle_rss) / n.max(1.0))
            };
            println!(
                "| {} | {} | {:.0} | {per} | {} | {} | {:.0} | {tail}",
                r["server"].as_str().unwrap_or(""),
                n,
                rss / 1024.0,
                s["threads"],
                s["descriptors"],
                s["accept_us"].as_f64().unwrap_or(0.0),
            );
        }
    }
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    json!({ "cpu": cpu, "cpus": cpus })
}
