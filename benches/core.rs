//! Micro-benchmarks of beaver's core pieces (criterion): the parser, the subscription table and
//! its caches (alone and under SUB/UNSUB churn), and the fan-out of one message into many
//! client queues. End-to-end throughput against nats-server is measured separately (see docs/);
//! the per-client queue is compared with other queue crates in `benches/queue.rs`.
//!
//! Run everything (about three and a half minutes on two cores; add `--noplot` to skip the
//! HTML plots):
//!
//! ```text
//! cargo bench --bench core -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! or one group: `cargo bench --bench core -- sublist_churn`. Results and what they mean for
//! the design: docs/benchmarks/micro.md.

use beaver::outbound::{Batch, BatchPool, Outbound, Output, Token};
use beaver::protocol::{write_msg_line, ClientOp, MsgLine, Parser};
use beaver::subjects::{MatchCache, Sublist, Subscriber};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

/// A stream of `n` PUBs with `size`-byte payloads.
fn pub_stream(n: usize, size: usize) -> Vec<u8> {
    let mut v = Vec::new();
    let payload = vec![b'x'; size];
    for i in 0..n {
        v.extend_from_slice(format!("PUB bench.subject.{} {}\r\n", i % 8, size).as_bytes());
        v.extend_from_slice(&payload);
        v.extend_from_slice(b"\r\n");
    }
    v
}

fn hpub_stream(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.extend_from_slice(b"HPUB bench.h 22 32\r\nNATS/1.0\r\nTrace: 1\r\n\r\n0123456789\r\n");
    }
    v
}

fn parse_all(buf: &[u8]) -> usize {
    let mut parser = Parser::new(4096, 1 << 20);
    parser.set_headers(true);
    let mut pos = 0;
    let mut ops = 0;
    while let Ok(step) = parser.parse(&buf[pos..]) {
        pos += step.consumed;
        match step.op {
            Some(ClientOp::Pub(p)) => {
                black_box(p.payload);
                ops += 1;
            }
            Some(_) => ops += 1,
            None if step.pub_line.is_some() => {}
            None => break,
        }
    }
    ops
}

/// Parser throughput over whole read buffers (4,096 or 1,024 operations each). Reported in
/// bytes per second; divide the time by the operation count for the cost per operation.
fn parser(c: &mut Criterion) {
    let mut g = c.benchmark_group("parser");
    for (name, stream) in [
        ("pub_16B", pub_stream(4096, 16)),
        ("pub_1KiB", pub_stream(1024, 1024)),
        ("hpub_10B", hpub_stream(4096)),
    ] {
        g.throughput(Throughput::Bytes(stream.len() as u64));
        g.bench_function(name, |b| b.iter(|| parse_all(black_box(&stream))));
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// Subscription table
// ---------------------------------------------------------------------------------------------

struct Sub {
    subject: String,
    queue: Option<String>,
}

impl Subscriber for Sub {
    fn subject(&self) -> &[u8] {
        self.subject.as_bytes()
    }
    fn queue(&self) -> Option<&[u8]> {
        self.queue.as_deref().map(str::as_bytes)
    }
}

fn sub(subject: &str) -> Arc<Sub> {
    Arc::new(Sub {
        subject: subject.into(),
        queue: None,
    })
}

/// 10,000 literal subscriptions `orders.<i>.created`, plus (if `wildcards`) three wildcard
/// ones, so that matching also walks the trie.
fn table(wildcards: bool) -> Sublist<Sub> {
    let sl = Sublist::new();
    for i in 0..10_000 {
        sl.insert(sub(&format!("orders.{i}.created"))).unwrap();
    }
    if wildcards {
        for s in ["orders.*.shipped", "orders.>", "metrics.*.cpu"] {
            sl.insert(sub(s)).unwrap();
        }
    }
    sl
}

/// Matching, caching, inserting and removing, single-threaded.
fn sublist(c: &mut Criterion) {
    let mut g = c.benchmark_group("sublist");
    // 10,000 literal subscriptions plus a few wildcards (the trie is walked on every match).
    let sl = table(true);
    // Literal hit: one dashmap lookup plus the trie walk (`orders.>` matches too: 2 subs).
    g.bench_function("match_literal_10k", |b| {
        b.iter(|| black_box(sl.matches(black_box(b"orders.4242.created"))))
    });
    // Wildcard hit: `orders.*.shipped` and `orders.>`.
    g.bench_function("match_wildcard_10k", |b| {
        b.iter(|| black_box(sl.matches(black_box(b"orders.4242.shipped"))))
    });
    // Miss: neither index has anything (the dashmap misses, the trie walk stops at the root).
    g.bench_function("match_miss_10k", |b| {
        b.iter(|| black_box(sl.matches(black_box(b"payments.4242.created"))))
    });

    // The same 10,000 literals and no wildcard at all: the trie (and its lock) is skipped.
    let literal_only = table(false);
    g.bench_function("match_literal_10k_no_wildcards", |b| {
        b.iter(|| black_box(literal_only.matches(black_box(b"orders.4242.created"))))
    });
    g.bench_function("match_miss_10k_no_wildcards", |b| {
        b.iter(|| black_box(literal_only.matches(black_box(b"payments.4242.created"))))
    });

    // 10,000 wildcard subscriptions `orders.<i>.*`: every one lives in the trie.
    let wild = Sublist::new();
    for i in 0..10_000 {
        wild.insert(sub(&format!("orders.{i}.*"))).unwrap();
    }
    g.bench_function("match_wildcard_10k_all_in_trie", |b| {
        b.iter(|| black_box(wild.matches(black_box(b"orders.4242.shipped"))))
    });

    // The caches, from cheapest to dearest. `match_literal_10k` above is the full match.
    // L1 hit: the reader's private cache (one atomic load of the generation + an FxHashMap
    // lookup).
    let mut cache = MatchCache::new(1024);
    g.bench_function("cache_hit", |b| {
        b.iter(|| {
            black_box(
                cache
                    .get(&sl)
                    .matches(&sl, black_box(b"orders.4242.created"))
                    .len(),
            )
        })
    });
    // L1 miss that the shared L2 answers, as the reader sees it: a capacity-1 private cache
    // alternating between two subjects misses every time (clear + key allocation + insert)
    // and takes the shared result (dashmap read + Arc clone). Both subjects recur, so any
    // admission filter in front of the private cache lets them in after their first miss.
    let mut tiny = MatchCache::new(1);
    let pair: [&[u8]; 2] = [b"orders.4242.created", b"orders.4243.created"];
    let mut k = 0usize;
    g.bench_function("cache_l1_miss_l2_hit", |b| {
        b.iter(|| {
            k ^= 1;
            black_box(tiny.get(&sl).matches(&sl, black_box(pair[k])).len())
        })
    });
    // The shared cache alone, hit.
    g.bench_function("cache_l2_hit", |b| {
        b.iter(|| black_box(sl.cached_matches(black_box(b"orders.4242.created"), sl.generation())))
    });
    // The shared cache alone, stale entry: full match + Arc + dashmap insert. A generation
    // that changes on every call makes every lookup stale, as churn does.
    let mut gen = 0u64;
    g.bench_function("cache_l2_miss", |b| {
        b.iter(|| {
            gen += 1;
            black_box(sl.cached_matches(black_box(b"orders.4242.created"), gen))
        })
    });

    // 10,000 distinct subjects in turn (each recurs only after 9,999 others): high-cardinality
    // publishing, e.g. replies to per-request inboxes. First a plain match (the table no
    // longer sits in the CPU's L1 cache), then the reader's path, whose private cache cannot
    // hold them: what a message costs when caching does not help.
    let distinct: Vec<Vec<u8>> = (0..10_000)
        .map(|i| format!("orders.{i}.created").into_bytes())
        .collect();
    let mut k = 0usize;
    g.bench_function("match_distinct_10k_subjects", |b| {
        b.iter(|| {
            k = (k + 1) % distinct.len();
            black_box(sl.matches(&distinct[k]).len())
        })
    });
    let mut cache = MatchCache::new(1024);
    g.bench_function("cache_distinct_10k_subjects", |b| {
        b.iter(|| {
            k = (k + 1) % distinct.len();
            black_box(cache.get(&sl).matches(&sl, &distinct[k]).len())
        })
    });

    // SUB then UNSUB of one subscription (one generation bump each).
    g.bench_function("insert_remove", |b| {
        b.iter_batched(
            || sub("orders.new.created"),
            |s| {
                sl.insert(s.clone()).unwrap();
                sl.remove(&s);
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("insert_remove_wildcard", |b| {
        b.iter_batched(
            || sub("orders.new.*"),
            |s| {
                sl.insert(s.clone()).unwrap();
                sl.remove(&s);
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// Subjects the matcher threads publish to, round robin (all hits on the 10k table).
const CHURN_SUBJECTS: [&[u8]; 8] = [
    b"orders.1.created",
    b"orders.17.created",
    b"orders.256.created",
    b"orders.999.created",
    b"orders.4242.created",
    b"orders.5000.created",
    b"orders.7777.created",
    b"orders.9999.created",
];

/// What a matcher thread does per message.
#[derive(Clone, Copy)]
enum MatchPath {
    /// `Sublist::matches`: no caching at all.
    Raw,
    /// The reader's path: private cache, then the shared cache, then a full match.
    Reader,
}

/// Statistics across all samples of one churn benchmark, printed once at the end.
#[derive(Default)]
struct ChurnStats {
    lookups: AtomicU64,
    /// Sum over matchers of how far the generation moved while they matched.
    generation_moved: AtomicU64,
    churn_ops: AtomicU64,
    churn_nanos: AtomicU64,
}

/// How hard the churning thread SUBs and UNSUBs.
#[derive(Clone, Copy, PartialEq)]
enum Churn {
    /// No churning thread.
    Quiet,
    /// 10,000 table changes (SUBs or UNSUBs) per second, spread as evenly as sleeping allows
    /// (every ~100-300 µs, the churner catches up with the schedule): a busy server with
    /// old-style request/reply inboxes.
    Paced,
    /// As fast as one thread can: the worst case (it keeps a core busy).
    Max,
}

impl Churn {
    fn name(self) -> &'static str {
        match self {
            Churn::Quiet => "quiet",
            Churn::Paced => "churn10k",
            Churn::Max => "churnmax",
        }
    }
}

/// The paced churner's rate.
const PACED_CHANGES_PER_SEC: f64 = 10_000.0;

/// `readers` threads match `iters` subjects each while (unless `Quiet`) one more thread SUBs
/// and UNSUBs (alternately a literal and a wildcard subscription, neither of which matches
/// the published subjects). Returns the matchers' mean elapsed time, so criterion reports
/// the latency of one match as one matcher sees it.
fn churn_run(
    sl: &Sublist<Sub>,
    readers: usize,
    churn: Churn,
    path: MatchPath,
    iters: u64,
    stats: &ChurnStats,
) -> Duration {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(readers + usize::from(churn != Churn::Quiet));
    std::thread::scope(|s| {
        let churner = (churn != Churn::Quiet).then(|| {
            s.spawn(|| {
                let lit = sub("orders.churn.created");
                let wc = sub("orders.churn.*");
                start.wait();
                let t = Instant::now();
                let mut ops = 0u64;
                let change = |ops: u64| {
                    let victim = if ops % 4 < 2 { &lit } else { &wc };
                    if ops % 2 == 0 {
                        sl.insert(victim.clone()).unwrap();
                    } else {
                        sl.remove(victim);
                    }
                };
                while !stop.load(Ordering::Relaxed) {
                    if churn == Churn::Paced {
                        let due = (t.elapsed().as_secs_f64() * PACED_CHANGES_PER_SEC) as u64;
                        while ops < due {
                            change(ops);
                            ops += 1;
                        }
                        std::thread::sleep(Duration::from_micros(100));
                    } else {
                        change(ops);
                        ops += 1;
                    }
                }
                // An insert without its remove leaves one subscription behind.
                if ops % 2 == 1 {
                    change(ops);
                }
                stats.churn_ops.fetch_add(ops, Ordering::Relaxed);
                stats
                    .churn_nanos
                    .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            })
        });
        let matchers: Vec<_> = (0..readers)
            .map(|r| {
                let start = &start;
                s.spawn(move || {
                    let mut cache = MatchCache::new(1024);
                    start.wait();
                    let gen_before = sl.generation();
                    let t = Instant::now();
                    for i in 0..iters {
                        let subject = CHURN_SUBJECTS[(i as usize + r) % CHURN_SUBJECTS.len()];
                        let n = match path {
                            MatchPath::Raw => sl.matches(subject).len(),
                            MatchPath::Reader => cache.get(sl).matches(sl, subject).len(),
                        };
                        black_box(n);
                    }
                    let elapsed = t.elapsed();
                    stats.lookups.fetch_add(iters, Ordering::Relaxed);
                    stats
                        .generation_moved
                        .fetch_add(sl.generation() - gen_before, Ordering::Relaxed);
                    elapsed
                })
            })
            .collect();
        let total: Duration = matchers.into_iter().map(|h| h.join().unwrap()).sum();
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = churner {
            h.join().unwrap();
        }
        total / readers as u32
    })
}

/// Match latency while another thread SUBs/UNSUBs: 1 and 2 matcher threads, with no churn,
/// paced churn and unbounded churn. On a 2-core machine, 2 matchers + 1 unbounded churner
/// oversubscribe the CPUs (the matchers then also wait for the scheduler).
fn sublist_churn(c: &mut Criterion) {
    let mut g = c.benchmark_group("sublist_churn");
    let sl = table(true);
    for (name, path) in [("raw", MatchPath::Raw), ("reader", MatchPath::Reader)] {
        for churn in [Churn::Quiet, Churn::Paced, Churn::Max] {
            for readers in [1usize, 2] {
                let id = format!("{name}_{}/readers={readers}", churn.name());
                let stats = ChurnStats::default();
                g.bench_function(&id, |b| {
                    b.iter_custom(|iters| churn_run(&sl, readers, churn, path, iters, &stats))
                });
                let lookups = stats.lookups.load(Ordering::Relaxed);
                if lookups == 0 {
                    continue; // filtered out
                }
                let moved = stats.generation_moved.load(Ordering::Relaxed);
                let ops = stats.churn_ops.load(Ordering::Relaxed);
                let nanos = stats.churn_nanos.load(Ordering::Relaxed).max(1);
                eprintln!(
                    "  {id}: {:.4} table changes per lookup; churn {:.0} k SUB+UNSUB/s",
                    moved as f64 / lookups as f64,
                    ops as f64 * 1e6 / nanos as f64,
                );
            }
        }
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// Fan-out into client queues
// ---------------------------------------------------------------------------------------------

/// N subscribers' queues, the batch pool, and the writers' ready queue, as the server has them
/// (public API only: a `Client` needs a socket, so its `Outbound` stands in for it).
struct FanOut {
    queues: Vec<Outbound>,
    sids: Vec<Vec<u8>>,
    pool: BatchPool,
    ready_tx: crossbeam_channel::Sender<(usize, Token)>,
    ready_rx: crossbeam_channel::Receiver<(usize, Token)>,
    staged: Vec<Batch>,
}

const SUBJECT: &[u8] = b"orders.4242.created";
const PAYLOAD: &[u8; 16] = b"0123456789abcdef";

impl FanOut {
    fn new(n: usize, pool: BatchPool) -> Self {
        let (ready_tx, ready_rx) = crossbeam_channel::unbounded();
        FanOut {
            queues: (0..n).map(|_| Outbound::new()).collect(),
            sids: (0..n).map(|i| (i + 1).to_string().into_bytes()).collect(),
            pool,
            ready_tx,
            ready_rx,
            staged: Vec::with_capacity(n),
        }
    }

    /// One read's worth of `msgs` 16-byte PUBs fanned out to every subscriber: the reader
    /// stages `MSG` line + payload + CRLF per subscriber per message into one pooled batch per
    /// subscriber, pushes each batch once and rings the doorbell when it takes the token;
    /// then a writer drains every rung queue (segments as it would hand them to `writev`),
    /// reports the bytes written, returns the batches to the pool and gives the token back.
    fn round(&mut self, msgs: usize) -> usize {
        for sid in &self.sids {
            let mut b = self.pool.take();
            for _ in 0..msgs {
                write_msg_line(
                    b.buf_mut(),
                    &MsgLine {
                        subject: SUBJECT,
                        sid,
                        reply: None,
                        header_token: None,
                        size_token: b"16",
                    },
                );
                b.push(PAYLOAD);
                b.push(b"\r\n");
                b.count_msg(PAYLOAD.len());
            }
            self.staged.push(b);
        }
        for (i, (q, b)) in self.queues.iter().zip(self.staged.drain(..)).enumerate() {
            if let Some(token) = q.push(b) {
                self.ready_tx.send((i, token)).unwrap();
            }
        }
        let mut written = 0;
        // As a writer does: take what is queued, "write" it all, give the token back.
        let mut out = Output::default();
        while let Ok((i, mut token)) = self.ready_rx.try_recv() {
            let q = &self.queues[i];
            loop {
                out.gather(q, usize::MAX);
                let mut n = 0;
                for b in out.batches() {
                    for seg in b.segments() {
                        black_box(seg);
                    }
                    n += b.len();
                }
                out.advance(q, n, &self.pool);
                written += n;
                match q.release(token) {
                    Some(kept) => token = kept,
                    None => break,
                }
            }
        }
        written
    }
}

/// One 16-byte message to N subscribers (time per published message; throughput in
/// deliveries), then 64 messages per read (one push per subscriber per 64 deliveries).
fn fanout(c: &mut Criterion) {
    let mut g = c.benchmark_group("fanout");
    for n in [1usize, 5, 100, 1000] {
        let mut f = FanOut::new(n, BatchPool::default());
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("msg16", n), &n, |b, _| {
            b.iter(|| black_box(f.round(1)))
        });
    }
    // What the pool is worth here: a pool of one (a fresh batch, buffer growth and free per
    // delivery), and for 1,000 subscribers a pool of 2,048 that surely holds every batch
    // (compare with `msg16/1000`, which uses `BatchPool::default()`). Single-threaded: take
    // and give happen on the same thread here, while in the server readers take and writers
    // give.
    for (name, size, n) in [
        ("msg16_pool1", 1, 100usize),
        ("msg16_pool1", 1, 1000),
        ("msg16_pool2048", 2048, 1000),
    ] {
        let mut f = FanOut::new(n, BatchPool::new(size));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
            b.iter(|| black_box(f.round(1)))
        });
    }
    for n in [1usize, 5, 100, 1000] {
        let mut f = FanOut::new(n, BatchPool::default());
        g.throughput(Throughput::Elements(64 * n as u64));
        g.bench_with_input(BenchmarkId::new("read64_msg16", n), &n, |b, _| {
            b.iter(|| black_box(f.round(64)))
        });
    }
    g.finish();
}

criterion_group!(benches, parser, sublist, sublist_churn, fanout);
criterion_main!(benches);
