//! Micro-benchmarks of beaver's core pieces (criterion): the parser and the subscription
//! table. Run with `cargo bench --bench core`. End-to-end throughput against nats-server is
//! measured separately (see docs/).

use beaver::protocol::{ClientOp, Parser};
use beaver::subjects::{MatchCache, Sublist, Subscriber};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use std::sync::Arc;

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

fn sublist(c: &mut Criterion) {
    let mut g = c.benchmark_group("sublist");
    // 10,000 literal subscriptions plus a few wildcards.
    let sl = Sublist::new();
    for i in 0..10_000 {
        sl.insert(sub(&format!("orders.{}.created", i))).unwrap();
    }
    for s in ["orders.*.shipped", "orders.>", "metrics.*.cpu"] {
        sl.insert(sub(s)).unwrap();
    }
    g.bench_function("match_literal_10k", |b| {
        b.iter(|| black_box(sl.matches(black_box(b"orders.4242.created"))))
    });
    g.bench_function("match_wildcard_10k", |b| {
        b.iter(|| black_box(sl.matches(black_box(b"orders.4242.shipped"))))
    });
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
    g.finish();
}

criterion_group!(benches, parser, sublist);
criterion_main!(benches);
