//! # The per-client outbound queue, compared across crates
//!
//! beaver queues a client's outbound batches on a `crossbeam_queue::SegQueue` (see
//! `src/outbound/`). This bench runs the same scenarios on the queue chosen by the environment
//! variable `QUEUE_CRATE`, so that criterion, run once per queue with the same benchmark ids,
//! prints the change from one queue to the next:
//!
//! | `QUEUE_CRATE`    | queue                                                    |
//! | ---------------- | -------------------------------------------------------- |
//! | `segqueue`       | `crossbeam_queue::SegQueue` (beaver's choice; default)   |
//! | `arrayqueue`     | `crossbeam_queue::ArrayQueue`, bounded to 1024           |
//! | `channel`        | `crossbeam_channel::unbounded`                           |
//! | `mpsc`           | `std::sync::mpsc::channel`                               |
//! | `mutex-vecdeque` | `parking_lot::Mutex<VecDeque>` (the lock-based baseline) |
//!
//! ```text
//! QUEUE_CRATE=segqueue cargo bench --bench queue
//! QUEUE_CRATE=mpsc cargo bench --bench queue     # "change:" is now mpsc vs segqueue
//! ```
//!
//! Each run compares with the previous one. To keep every queue's numbers, and to compare any
//! two later, save a named baseline per queue (shorter runs: add
//! `--warm-up-time 1 --measurement-time 3`):
//!
//! ```text
//! for q in segqueue arrayqueue channel mpsc mutex-vecdeque; do
//!     QUEUE_CRATE=$q cargo bench --bench queue -- --save-baseline $q
//! done
//! QUEUE_CRATE=mpsc cargo bench --bench queue -- --baseline segqueue   # mpsc vs segqueue
//! ```
//!
//! Medians are then in `target/criterion/queue/<bench>/<queue>/estimates.json`.
//!
//! Scenarios (the item is a 64-byte struct, about the size of a `Batch`):
//! - `spsc_batch64`: one thread pushes 64 items then pops them (a reader queues, a writer
//!   drains; no contention). Time per 64 items.
//! - `mpsc_4p1c`: 4 producer threads push while 1 consumer pops: several publishers' readers
//!   queueing to one subscriber while its writer drains. Time per item, from the start
//!   until the consumer has taken everything (thread start-up excluded).
//! - `spsc_2threads`: 1 producer thread, 1 consumer thread (one publisher, one writer). Time
//!   per item.
//!
//! A consumer that finds the queue empty, and a producer that finds the bounded queue full,
//! back off (spin, then yield) the same way for every queue.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use crossbeam_utils::Backoff;
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The queued item: 64 bytes, moved by value like a `Batch`.
#[derive(Clone, Copy)]
#[repr(align(8))]
struct Item([u64; 8]);

impl Item {
    fn new(i: u64) -> Self {
        Item([i; 8])
    }
}

/// A producer's end of a queue.
trait Tx: Clone + Send + 'static {
    fn push(&self, item: Item);
}

/// The consumer's end of a queue.
trait Rx: Send + 'static {
    fn pop(&self) -> Option<Item>;
}

/// A queue implementation: creates a connected (producer, consumer) pair.
trait Queue {
    type Tx: Tx;
    type Rx: Rx;
    fn pair() -> (Self::Tx, Self::Rx);
}

/// Pushes onto a bounded queue, backing off while it is full.
fn push_bounded(q: &crossbeam_queue::ArrayQueue<Item>, mut item: Item) {
    let backoff = Backoff::new();
    while let Err(back) = q.push(item) {
        item = back;
        backoff.snooze();
    }
}

struct Seg;
impl Tx for Arc<crossbeam_queue::SegQueue<Item>> {
    fn push(&self, item: Item) {
        crossbeam_queue::SegQueue::push(self, item)
    }
}
impl Rx for Arc<crossbeam_queue::SegQueue<Item>> {
    fn pop(&self) -> Option<Item> {
        crossbeam_queue::SegQueue::pop(self)
    }
}
impl Queue for Seg {
    type Tx = Arc<crossbeam_queue::SegQueue<Item>>;
    type Rx = Arc<crossbeam_queue::SegQueue<Item>>;
    fn pair() -> (Self::Tx, Self::Rx) {
        let q = Arc::new(crossbeam_queue::SegQueue::new());
        (q.clone(), q)
    }
}

/// Capacity of the bounded queue.
const ARRAY_CAPACITY: usize = 1024;

struct Array;
impl Tx for Arc<crossbeam_queue::ArrayQueue<Item>> {
    fn push(&self, item: Item) {
        push_bounded(self, item)
    }
}
impl Rx for Arc<crossbeam_queue::ArrayQueue<Item>> {
    fn pop(&self) -> Option<Item> {
        crossbeam_queue::ArrayQueue::pop(self)
    }
}
impl Queue for Array {
    type Tx = Arc<crossbeam_queue::ArrayQueue<Item>>;
    type Rx = Arc<crossbeam_queue::ArrayQueue<Item>>;
    fn pair() -> (Self::Tx, Self::Rx) {
        let q = Arc::new(crossbeam_queue::ArrayQueue::new(ARRAY_CAPACITY));
        (q.clone(), q)
    }
}

struct Channel;
impl Tx for crossbeam_channel::Sender<Item> {
    fn push(&self, item: Item) {
        self.send(item).unwrap()
    }
}
impl Rx for crossbeam_channel::Receiver<Item> {
    fn pop(&self) -> Option<Item> {
        self.try_recv().ok()
    }
}
impl Queue for Channel {
    type Tx = crossbeam_channel::Sender<Item>;
    type Rx = crossbeam_channel::Receiver<Item>;
    fn pair() -> (Self::Tx, Self::Rx) {
        crossbeam_channel::unbounded()
    }
}

struct StdMpsc;
impl Tx for std::sync::mpsc::Sender<Item> {
    fn push(&self, item: Item) {
        self.send(item).unwrap()
    }
}
impl Rx for std::sync::mpsc::Receiver<Item> {
    fn pop(&self) -> Option<Item> {
        self.try_recv().ok()
    }
}
impl Queue for StdMpsc {
    type Tx = std::sync::mpsc::Sender<Item>;
    type Rx = std::sync::mpsc::Receiver<Item>;
    fn pair() -> (Self::Tx, Self::Rx) {
        std::sync::mpsc::channel()
    }
}

struct MutexDeque;
impl Tx for Arc<parking_lot::Mutex<VecDeque<Item>>> {
    fn push(&self, item: Item) {
        self.lock().push_back(item)
    }
}
impl Rx for Arc<parking_lot::Mutex<VecDeque<Item>>> {
    fn pop(&self) -> Option<Item> {
        self.lock().pop_front()
    }
}
impl Queue for MutexDeque {
    type Tx = Arc<parking_lot::Mutex<VecDeque<Item>>>;
    type Rx = Arc<parking_lot::Mutex<VecDeque<Item>>>;
    fn pair() -> (Self::Tx, Self::Rx) {
        let q = Arc::new(parking_lot::Mutex::new(VecDeque::new()));
        (q.clone(), q)
    }
}

/// Items per round in the single-threaded scenario.
const SPSC_BATCH: usize = 64;

/// Pops one item, backing off while the queue is empty.
fn pop_wait<R: Rx>(rx: &R, backoff: &Backoff) -> Item {
    loop {
        if let Some(item) = rx.pop() {
            backoff.reset();
            return item;
        }
        backoff.snooze();
    }
}

/// `producers` threads push `iters` items in all while the calling thread pops them. Returns
/// the time from the start signal until the last item was popped, scaled to `iters` items.
fn producers_consumer<Q: Queue>(producers: u64, iters: u64) -> Duration {
    let per_producer = iters.div_ceil(producers).max(1);
    let total = per_producer * producers;
    let (tx, rx) = Q::pair();
    let start = Arc::new(Barrier::new(producers as usize + 1));
    let handles: Vec<_> = (0..producers)
        .map(|_| {
            let tx = tx.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                for i in 0..per_producer {
                    tx.push(Item::new(i));
                }
            })
        })
        .collect();
    drop(tx);
    start.wait();
    let t = Instant::now();
    let backoff = Backoff::new();
    let mut sum = 0u64;
    for _ in 0..total {
        sum = sum.wrapping_add(pop_wait(&rx, &backoff).0[7]);
    }
    let elapsed = t.elapsed();
    black_box(sum);
    for h in handles {
        h.join().unwrap();
    }
    elapsed.mul_f64(iters as f64 / total as f64)
}

fn run<Q: Queue>(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue");

    let (tx, rx) = Q::pair();
    g.throughput(Throughput::Elements(SPSC_BATCH as u64));
    g.bench_function("spsc_batch64", |b| {
        b.iter(|| {
            for i in 0..SPSC_BATCH as u64 {
                tx.push(black_box(Item::new(i)));
            }
            let mut sum = 0u64;
            for _ in 0..SPSC_BATCH {
                sum = sum.wrapping_add(rx.pop().unwrap().0[0]);
            }
            black_box(sum)
        })
    });
    drop((tx, rx));

    g.throughput(Throughput::Elements(1));
    g.bench_function("mpsc_4p1c", |b| {
        b.iter_custom(|iters| producers_consumer::<Q>(4, iters))
    });
    g.bench_function("spsc_2threads", |b| {
        b.iter_custom(|iters| producers_consumer::<Q>(1, iters))
    });
    g.finish();
}

fn queues(c: &mut Criterion) {
    let name = std::env::var("QUEUE_CRATE").unwrap_or_else(|_| "segqueue".into());
    println!("current queue: {name}");
    match name.as_str() {
        "segqueue" => run::<Seg>(c),
        "arrayqueue" => run::<Array>(c),
        "channel" => run::<Channel>(c),
        "mpsc" => run::<StdMpsc>(c),
        "mutex-vecdeque" => run::<MutexDeque>(c),
        other => panic!(
            "unknown QUEUE_CRATE `{other}`: use segqueue, arrayqueue, channel, mpsc or mutex-vecdeque"
        ),
    }
}

criterion_group!(benches, queues);
criterion_main!(benches);
