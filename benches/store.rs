//! # JetStream's message store, compared with an embedded database
//!
//! The same scenarios on the store chosen by the environment variable `STORE`, so that
//! criterion, run once per store with the same benchmark ids, prints the change from one to
//! the next (as `benches/queue.rs` does for queues):
//!
//! | `STORE`  | store                                                                    |
//! | -------- | ------------------------------------------------------------------------ |
//! | `file`   | beaver's `FileStore`, the segment log (default)                          |
//! | `memory` | beaver's `MemoryStore`                                                   |
//! | `redb`   | a `redb` database, one table sequence -> record, one transaction a store |
//!
//! `SYNC=always` makes every store durable before it returns: `SyncPolicy::Always` (one
//! `fdatasync` a write) for the file store, `Durability::Immediate` for redb. Without it
//! (the default) the file store writes each record to the OS and syncs only on
//! `Store::sync` (`SyncPolicy::Interval`, what nats-server does by default), and redb
//! commits with `Durability::None` (no fsync; redb's own docs: such commits may be lost
//! until a durable one follows).
//!
//! ```text
//! for s in file redb memory; do
//!     STORE=$s cargo bench --bench store -- --save-baseline $s
//! done
//! STORE=redb cargo bench --bench store -- --baseline file   # redb vs file
//! SYNC=always STORE=file cargo bench --bench store -- store_msg
//! ```
//!
//! Scenarios:
//! - `store_msg/16B`, `store_msg/1KiB`: one message to `bench.orders` with a body of that
//!   size, no headers. Each sample starts from a new, empty store in a new directory (so the
//!   disk holds one sample's messages at a time); time per message.
//! - `load/16B`, `load/1KiB`: loading a random sequence among 100,000 stored messages
//!   (the pages are in the OS cache: what a consumer reading recent messages sees).

use beaver::store::{FileStore, Limits, MemoryStore, Store, StoredMsg, SyncPolicy};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use redb::{Database, Durability, TableDefinition};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the bench needs of a store.
trait BenchStore {
    fn store(&mut self, subject: &[u8], headers: &[u8], data: &[u8], ts: i64) -> u64;
    fn load(&self, seq: u64) -> StoredMsg;
}

impl BenchStore for Box<dyn Store> {
    fn store(&mut self, subject: &[u8], headers: &[u8], data: &[u8], ts: i64) -> u64 {
        self.store_msg(subject, headers, data, ts).expect("store")
    }
    fn load(&self, seq: u64) -> StoredMsg {
        Store::load(self.as_ref(), seq).expect("load")
    }
}

/// The redb adapter: table `msgs`, sequence -> record (ts, subject length, header length,
/// subject, headers, body), one write transaction per message.
struct Redb {
    db: Database,
    durability: Durability,
    last: u64,
}

const MSGS: TableDefinition<u64, &[u8]> = TableDefinition::new("msgs");

impl Redb {
    fn open(dir: &Path, durable: bool) -> Redb {
        std::fs::create_dir_all(dir).expect("dir");
        let db = Database::create(dir.join("store.redb")).expect("redb");
        let durability = if durable {
            Durability::Immediate
        } else {
            Durability::None
        };
        Redb {
            db,
            durability,
            last: 0,
        }
    }
}

impl BenchStore for Redb {
    fn store(&mut self, subject: &[u8], headers: &[u8], data: &[u8], ts: i64) -> u64 {
        let seq = self.last + 1;
        let mut rec = Vec::with_capacity(16 + subject.len() + headers.len() + data.len());
        rec.extend_from_slice(&ts.to_le_bytes());
        rec.extend_from_slice(&(subject.len() as u32).to_le_bytes());
        rec.extend_from_slice(&(headers.len() as u32).to_le_bytes());
        rec.extend_from_slice(subject);
        rec.extend_from_slice(headers);
        rec.extend_from_slice(data);
        let mut tx = self.db.begin_write().expect("tx");
        tx.set_durability(self.durability);
        {
            let mut t = tx.open_table(MSGS).expect("table");
            t.insert(seq, rec.as_slice()).expect("insert");
        }
        tx.commit().expect("commit");
        self.last = seq;
        seq
    }

    fn load(&self, seq: u64) -> StoredMsg {
        let tx = self.db.begin_read().expect("tx");
        let t = tx.open_table(MSGS).expect("table");
        let guard = t.get(seq).expect("get").expect("stored");
        let rec = Bytes::copy_from_slice(guard.value());
        let u32_at = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&rec[i..i + 4]);
            u32::from_le_bytes(b) as usize
        };
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&rec[..8]);
        let (s, h) = (u32_at(8), u32_at(12));
        StoredMsg {
            subject: rec.slice(16..16 + s),
            seq,
            ts: i64::from_le_bytes(ts),
            headers: rec.slice(16 + s..16 + s + h),
            data: rec.slice(16 + s + h..),
        }
    }
}

/// A directory for one store, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(n: u64) -> Dir {
        // Under target/ (a real disk), not /tmp (often tmpfs).
        let base = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target"));
        let dir = base.join(format!("store-bench-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens the store `STORE` names in `dir`.
fn open(kind: &str, durable: bool, dir: &Path) -> Box<dyn BenchStore> {
    let sync = if durable {
        SyncPolicy::Always
    } else {
        SyncPolicy::Interval(Duration::from_secs(1))
    };
    match kind {
        "file" => {
            let s = FileStore::open(dir, Limits::default(), sync).expect("open");
            Box::new(Box::new(s) as Box<dyn Store>)
        }
        "memory" => Box::new(Box::new(MemoryStore::new(Limits::default())) as Box<dyn Store>),
        "redb" => Box::new(Redb::open(dir, durable)),
        other => panic!("unknown STORE `{other}`: use file, memory or redb"),
    }
}

fn stores(c: &mut Criterion) {
    let kind = std::env::var("STORE").unwrap_or_else(|_| "file".into());
    let durable = std::env::var("SYNC").is_ok_and(|s| s == "always");
    println!(
        "current store: {kind}, sync: {}",
        if durable { "always" } else { "none" }
    );
    let sizes: [(&str, usize); 2] = [("16B", 16), ("1KiB", 1024)];
    let mut n = 0;

    let mut g = c.benchmark_group("store_msg");
    g.throughput(Throughput::Elements(1));
    if durable {
        g.sample_size(10).measurement_time(Duration::from_secs(10));
    }
    for (name, size) in sizes {
        let body = vec![b'x'; size];
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                n += 1;
                let dir = Dir::new(n);
                let mut s = open(&kind, durable, &dir.0);
                let start = Instant::now();
                for i in 0..iters {
                    black_box(s.store(b"bench.orders", b"", &body, i as i64));
                }
                let took = start.elapsed();
                drop(s);
                took
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("load");
    g.throughput(Throughput::Elements(1));
    for (name, size) in sizes {
        let body = vec![b'x'; size];
        n += 1;
        let dir = Dir::new(n);
        let mut s = open(&kind, false, &dir.0);
        let count = 100_000;
        for i in 0..count {
            s.store(b"bench.orders", b"", &body, i as i64);
        }
        let mut rng = fastrand::Rng::with_seed(7);
        g.bench_function(name, |b| b.iter(|| black_box(s.load(rng.u64(1..=count)))));
        drop(s);
    }
    g.finish();
}

criterion_group!(benches, stores);
criterion_main!(benches);
