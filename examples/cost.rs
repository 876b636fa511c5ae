//! The cost of beaver's code per message: heap allocations (counted with `dhat`) and, under
//! `valgrind --tool=callgrind`, instructions.
//!
//! Runs a beaver server *in this process* on a loopback port, with raw-protocol clients on
//! their own threads, for one scenario:
//!
//! - `one-to-one`: 1 publisher, 1 subscriber, 16-byte messages;
//! - `fanout-100`: 1 publisher, 100 subscribers on the subject, 16-byte messages;
//! - `queue`: 1 publisher, 5 members of one queue group, 16-byte messages;
//! - `reqrep`: 1 requester, 1 responder, sequential requests and replies of 16 bytes.
//!
//! It sends `--warmup` messages, then `--msgs` more, and waits until all are delivered. With
//! `--allocs` it counts the allocations made while the measured messages flowed (the
//! clients here allocate nothing once connected, so they are the server's) and prints them
//! per published and per delivered message as one JSON line. Instructions per message come
//! from running it twice under callgrind with different `--msgs` and dividing the
//! difference (the setup cancels out): `benches/cost.sh` does that and prints the table.
//!
//! ```text
//! cargo run --release --example cost -- --scenario fanout-100 --msgs 100000 --allocs
//! ```

use beaver::{Config, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const PAYLOAD: &[u8] = b"0123456789abcdef";

struct Args {
    scenario: String,
    msgs: u64,
    warmup: u64,
    allocs: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        scenario: "one-to-one".into(),
        msgs: 100_000,
        warmup: 20_000,
        allocs: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| die(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--scenario" => a.scenario = value(),
            "--msgs" => a.msgs = value().parse().unwrap_or_else(|_| die("--msgs: a number")),
            "--warmup" => {
                a.warmup = value()
                    .parse()
                    .unwrap_or_else(|_| die("--warmup: a number"))
            }
            "--allocs" => a.allocs = true,
            "-h" | "--help" => {
                println!(
                    "usage: cost [--scenario one-to-one|fanout-100|queue|reqrep] [--msgs N] \
                     [--warmup N] [--allocs]"
                );
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other}")),
        }
    }
    a
}

fn die(msg: &str) -> ! {
    eprintln!("cost: {msg}");
    std::process::exit(2)
}

/// A raw client connection: INFO read, CONNECT sent.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap_or_else(|e| die(&format!("connect: {e}")));
    stream.set_nodelay(true).ok();
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let mut info = String::new();
    BufReader::new(&stream)
        .read_line(&mut info)
        .unwrap_or_else(|e| die(&format!("INFO: {e}")));
    (&stream)
        .write_all(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n")
        .unwrap_or_else(|e| die(&format!("CONNECT: {e}")));
    stream
}

/// Reads server frames, counting `MSG`s (and answering PINGs); no allocation per frame.
struct Reader {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// One frame, borrowed from the reader's buffer.
enum Frame<'a> {
    /// A `MSG` line (without CR LF) and its payload.
    Msg(&'a [u8], &'a [u8]),
    Pong,
    Other,
}

impl Reader {
    fn new(stream: TcpStream) -> Self {
        Reader {
            stream,
            buf: vec![0; 256 * 1024],
            start: 0,
            end: 0,
        }
    }

    /// The next frame, blocking until it is complete.
    fn next(&mut self) -> Frame<'_> {
        loop {
            let avail = &self.buf[self.start..self.end];
            if let Some(lf) = memchr::memchr(b'\n', avail) {
                let line = &avail[..lf.saturating_sub(1)];
                if line.starts_with(b"MSG ") {
                    let size: usize = line
                        .rsplit(|&b| b == b' ')
                        .next()
                        .and_then(|s| std::str::from_utf8(s).ok())
                        .and_then(|s| s.parse().ok())
                        .unwrap_or_else(|| die("bad MSG line"));
                    if avail.len() >= lf + 1 + size + 2 {
                        let (s, l) = (self.start, lf);
                        self.start += lf + 1 + size + 2;
                        let line = &self.buf[s..s + l - 1];
                        let payload = &self.buf[s + l + 1..s + l + 1 + size];
                        return Frame::Msg(line, payload);
                    }
                } else {
                    let kind = if line == b"PONG" {
                        Frame::Pong
                    } else {
                        if line == b"PING" {
                            let _ = (&self.stream).write_all(b"PONG\r\n");
                        }
                        Frame::Other
                    };
                    self.start += lf + 1;
                    return kind;
                }
            }
            // Need more bytes: compact, then read.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let n = self
                .stream
                .read(&mut self.buf[self.end..])
                .unwrap_or_else(|e| die(&format!("read: {e}")));
            if n == 0 {
                die("server closed the connection");
            }
            self.end += n;
        }
    }

    /// Sends PING and waits for its PONG (no MSG expected meanwhile).
    fn sync(&mut self) {
        (&self.stream).write_all(b"PING\r\n").expect("PING");
        while !matches!(self.next(), Frame::Pong) {}
    }
}

/// Starts a subscriber thread that counts `expect` messages, then returns.
fn subscriber(addr: SocketAddr, sub: &[u8], delivered: Arc<AtomicU64>) -> thread::JoinHandle<()> {
    let mut r = Reader::new(connect(addr));
    (&r.stream).write_all(sub).expect("SUB");
    r.sync();
    thread::spawn(move || loop {
        if let Frame::Msg(..) = r.next() {
            delivered.fetch_add(1, Ordering::Relaxed);
        }
    })
}

/// Publishes `n` messages in large writes.
fn publish(stream: &TcpStream, subject: &str, n: u64) {
    let mut one = format!("PUB {subject} {}\r\n", PAYLOAD.len()).into_bytes();
    one.extend_from_slice(PAYLOAD);
    one.extend_from_slice(b"\r\n");
    let per_write = 1000u64;
    let chunk: Vec<u8> = one.repeat(per_write as usize);
    let mut left = n;
    while left > 0 {
        let k = left.min(per_write);
        (&*stream)
            .write_all(&chunk[..one.len() * k as usize])
            .expect("PUB");
        left -= k;
    }
}

fn wait_for(counter: &AtomicU64, target: u64) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while counter.load(Ordering::Relaxed) < target {
        if Instant::now() > deadline {
            die("timed out waiting for deliveries");
        }
        thread::sleep(Duration::from_micros(200));
    }
}

/// A pub/sub scenario: `subs` subscribers with the given SUB line; returns deliveries made
/// while the measured messages flowed, with `measure` called around them.
fn pubsub(
    addr: SocketAddr,
    subs: usize,
    sub_line: &[u8],
    per_msg: u64,
    args: &Args,
    measure: &mut dyn FnMut(bool),
) -> u64 {
    let delivered = Arc::new(AtomicU64::new(0));
    for _ in 0..subs {
        subscriber(addr, sub_line, delivered.clone());
    }
    let publisher = connect(addr);
    publish(&publisher, "cost", args.warmup);
    wait_for(&delivered, args.warmup * per_msg);
    measure(true);
    let before = delivered.load(Ordering::Relaxed);
    publish(&publisher, "cost", args.msgs);
    wait_for(&delivered, (args.warmup + args.msgs) * per_msg);
    measure(false);
    delivered.load(Ordering::Relaxed) - before
}

fn reqrep(addr: SocketAddr, args: &Args, measure: &mut dyn FnMut(bool)) -> u64 {
    // The responder answers every request on its reply subject.
    let mut responder = Reader::new(connect(addr));
    (&responder.stream)
        .write_all(b"SUB cost.svc 1\r\n")
        .expect("SUB");
    responder.sync();
    thread::spawn(move || {
        let mut out = Vec::with_capacity(256);
        loop {
            if let Frame::Msg(line, payload) = responder.next() {
                // MSG cost.svc 1 <reply> 16
                let reply = line
                    .split(|&b| b == b' ')
                    .nth(3)
                    .unwrap_or_else(|| die("no reply"));
                out.clear();
                out.extend_from_slice(b"PUB ");
                out.extend_from_slice(reply);
                out.extend_from_slice(b" 16\r\n");
                out.extend_from_slice(payload);
                out.extend_from_slice(b"\r\n");
                (&responder.stream).write_all(&out).expect("reply");
            }
        }
    });
    let mut requester = Reader::new(connect(addr));
    (&requester.stream)
        .write_all(b"SUB _INBOX.cost.* 1\r\n")
        .expect("SUB");
    requester.sync();
    // A new reply subject per request, as the official clients make them (one wildcard
    // inbox subscription, a unique last token per request).
    let mut request = Vec::with_capacity(128);
    let mut seq = 0u64;
    let mut round_trips = |n: u64| {
        for _ in 0..n {
            seq += 1;
            request.clear();
            write!(request, "PUB cost.svc _INBOX.cost.{seq} 16\r\n").expect("format");
            request.extend_from_slice(PAYLOAD);
            request.extend_from_slice(b"\r\n");
            (&requester.stream).write_all(&request).expect("request");
            while !matches!(requester.next(), Frame::Msg(..)) {}
        }
    };
    round_trips(args.warmup);
    measure(true);
    round_trips(args.msgs);
    measure(false);
    // Each request is delivered to the responder and each reply to the requester.
    args.msgs * 2
}

fn main() {
    let args = parse_args();
    let _profiler = args.allocs.then(|| {
        dhat::Profiler::builder()
            .file_name("/tmp/dhat-heap.json")
            .trim_backtraces(Some(14))
            .build()
    });
    let config = Config {
        host: "127.0.0.1".into(),
        port: -1,
        ..Config::default()
    };
    let server = Server::start(config).unwrap_or_else(|e| die(&format!("server: {e}")));
    let addr = server.local_addr();
    let mut allocs_before = 0u64;
    let mut allocs_measured = 0u64;
    let mut started = Instant::now();
    let mut elapsed = Duration::ZERO;
    let mut measure = |start: bool| {
        let blocks = if args.allocs {
            dhat::HeapStats::get().total_blocks
        } else {
            0
        };
        if start {
            allocs_before = blocks;
            started = Instant::now();
        } else {
            allocs_measured = blocks - allocs_before;
            elapsed = started.elapsed();
        }
    };
    let deliveries = match args.scenario.as_str() {
        "one-to-one" => pubsub(addr, 1, b"SUB cost 1\r\n", 1, &args, &mut measure),
        "fanout-100" => pubsub(addr, 100, b"SUB cost 1\r\n", 100, &args, &mut measure),
        "queue" => pubsub(addr, 5, b"SUB cost workers 1\r\n", 1, &args, &mut measure),
        "reqrep" => reqrep(addr, &args, &mut measure),
        other => die(&format!("unknown scenario {other}")),
    };
    let published = if args.scenario == "reqrep" {
        args.msgs * 2
    } else {
        args.msgs
    };
    println!(
        "{}",
        serde_json::json!({
            "scenario": args.scenario,
            "msgs": args.msgs,
            "published": published,
            "deliveries": deliveries,
            "seconds": elapsed.as_secs_f64(),
            "allocs": args.allocs.then_some(allocs_measured),
            "allocs_per_published": args.allocs.then(|| allocs_measured as f64 / published.max(1) as f64),
            "allocs_per_delivery": args.allocs.then(|| allocs_measured as f64 / deliveries.max(1) as f64),
        })
    );
    drop(_profiler);
    std::process::exit(0);
}
