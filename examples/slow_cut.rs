//! A mass slow-consumer cut, measured side by side: how long do the *other* clients wait
//! while a server cuts many slow consumers at the same moment?
//!
//! For each server named on the command line, in one run: a fresh server process on a
//! loopback port with `max_pending: 16MB`; `--stuck` subscribers (50) that subscribe and
//! never read (4 KiB receive buffers); `--probes` clients (4) that each send `PING` and time
//! the `PONG`, over and over; a connector that opens a new connection every 20 ms and times
//! its `INFO` + `CONNECT` + `PING` → `PONG`; and one publisher that sends `--mb` MiB (48) of
//! 1 KiB messages to the stuck subscribers' subject as fast as it can. Every stuck
//! subscriber reaches `max_pending` at about the same moment and is cut then. The run
//! reports, for the probes and the connector, the median and the worst round trip during
//! the publishing and the two seconds after it, and how many stuck subscribers were cut.
//! A baseline run without stuck subscribers is measured first.
//!
//! ```text
//! cargo build --release --bin beaver --example slow_cut
//! target/release/examples/slow_cut --server beaver=target/release/beaver --server nats-server=nats-server
//! ```
//!
//! Loopback only; everything it starts stops by itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Options {
    servers: Vec<(String, String)>,
    stuck: usize,
    probes: usize,
    mb: usize,
}

fn parse() -> Options {
    let mut o = Options {
        servers: Vec::new(),
        stuck: 50,
        probes: 4,
        mb: 48,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--server" => {
                let v = value();
                let (name, cmd) = v.split_once('=').expect("--server NAME=PROGRAM");
                o.servers.push((name.into(), cmd.into()));
            }
            "--stuck" => o.stuck = value().parse().expect("--stuck N"),
            "--probes" => o.probes = value().parse().expect("--probes N"),
            "--mb" => o.mb = value().parse().expect("--mb N"),
            other => panic!("unknown argument {other}"),
        }
    }
    if o.servers.is_empty() {
        o.servers
            .push(("beaver".into(), "target/release/beaver".into()));
    }
    o
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(program: &str, conf: &std::path::Path) -> Server {
    let port = free_port();
    let child = Command::new(program)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-c"])
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{program} did not listen");
        std::thread::sleep(Duration::from_millis(10));
    }
    Server { child, port }
}

/// A connected client that sent CONNECT and got its PONG; returns it and how long it took.
fn connect(port: u16) -> std::io::Result<(BufReader<TcpStream>, Duration)> {
    let t = Instant::now();
    let s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?; // INFO
    r.get_mut()
        .write_all(b"CONNECT {\"verbose\":false}\r\nPING\r\n")?;
    wait_pong(&mut r)?;
    Ok((r, t.elapsed()))
}

/// Reads lines until PONG, answering PINGs.
fn wait_pong(r: &mut BufReader<TcpStream>) -> std::io::Result<()> {
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        match line.as_str() {
            "PONG\r\n" => return Ok(()),
            "PING\r\n" => r.get_mut().write_all(b"PONG\r\n")?,
            _ => {}
        }
    }
}

/// A subscriber that never reads, with a small receive buffer.
fn stuck_subscriber(port: u16) -> TcpStream {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    socket.connect(&addr.into()).expect("connect");
    let mut s: TcpStream = socket.into();
    let mut info = [0u8; 4096];
    let _ = s.read(&mut info);
    s.write_all(b"CONNECT {\"verbose\":false}\r\nSUB cut 1\r\nPING\r\n")
        .expect("subscribe");
    s
}

#[derive(Default)]
struct Samples {
    probe: Vec<Duration>,
    connect: Vec<Duration>,
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// One measurement: returns (samples, stuck subscribers cut, publish time).
fn run(port: u16, o: &Options, stuck: usize) -> (Samples, usize, Duration) {
    let subs: Vec<TcpStream> = (0..stuck).map(|_| stuck_subscriber(port)).collect();
    // Let every SUB be processed: a round trip on another connection after them is not a
    // proof across connections, so wait for the interest to be there with a probe message.
    {
        let (mut c, _) = connect(port).expect("setup client");
        let (mut w, _) = connect(port).expect("watcher");
        w.get_mut().write_all(b"SUB cut 1\r\nPING\r\n").unwrap();
        wait_pong(&mut w).unwrap();
        c.get_mut()
            .write_all(b"PUB cut 1\r\nx\r\nPING\r\n")
            .unwrap();
        wait_pong(&mut c).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    let samples = Arc::new(Mutex::new(Samples::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..o.probes {
        let (samples, stop) = (samples.clone(), stop.clone());
        let (mut c, _) = connect(port).expect("probe");
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                if c.get_mut().write_all(b"PING\r\n").is_err() || wait_pong(&mut c).is_err() {
                    break;
                }
                samples.lock().unwrap().probe.push(t.elapsed());
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
    }
    {
        let (samples, stop) = (samples.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok((_, took)) = connect(port) {
                    samples.lock().unwrap().connect.push(took);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
    }
    // The publisher: 1 KiB messages, written in 64 KiB chunks.
    let (mut publisher, _) = connect(port).expect("publisher");
    let payload = vec![b'p'; 1024];
    let mut chunk = Vec::new();
    while chunk.len() < 64 * 1024 {
        chunk.extend_from_slice(b"PUB cut 1024\r\n");
        chunk.extend_from_slice(&payload);
        chunk.extend_from_slice(b"\r\n");
    }
    let t = Instant::now();
    let mut sent = 0;
    while sent < o.mb << 20 {
        publisher.get_mut().write_all(&chunk).expect("publish");
        sent += chunk.len();
    }
    publisher.get_mut().write_all(b"PING\r\n").unwrap();
    let _ = wait_pong(&mut publisher);
    let publish_time = t.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    // Which stuck subscribers were cut: their socket reaches EOF (or a reset) once read.
    let mut cut = 0;
    for mut s in subs {
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match s.read(&mut buf) {
                Ok(0) => {
                    cut += 1;
                    break;
                }
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => break,
                Err(_) => {
                    cut += 1;
                    break;
                }
            }
        }
    }
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    (samples, cut, publish_time)
}

fn main() {
    let o = parse();
    let conf = std::env::temp_dir().join(format!("slow-cut-{}.conf", std::process::id()));
    std::fs::write(&conf, "max_pending: 16MB\n").expect("write the configuration");
    println!(
        "{:<12} {:<9} {:>5} {:>9} {:>11} {:>11} {:>11} {:>11}",
        "server", "run", "cut", "publish", "probe p50", "probe max", "conn p50", "conn max"
    );
    for (name, program) in &o.servers {
        for (label, stuck) in [("baseline", 0), ("mass cut", o.stuck)] {
            let server = start(program, &conf);
            let (mut s, cut, publish) = run(server.port, &o, stuck);
            let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
            println!(
                "{:<12} {:<9} {:>5} {:>9} {:>11} {:>11} {:>11} {:>11}",
                name,
                label,
                format!("{cut}/{stuck}"),
                ms(publish),
                ms(percentile(&mut s.probe, 0.5)),
                ms(percentile(&mut s.probe, 1.0)),
                ms(percentile(&mut s.connect, 0.5)),
                ms(percentile(&mut s.connect, 1.0)),
            );
            drop(server);
        }
    }
    let _ = std::fs::remove_file(&conf);
}
