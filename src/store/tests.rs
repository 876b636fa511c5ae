//! The store tests, written once and run against every store: each test takes a [`Harness`]
//! that opens a fresh store of one kind, and [`suite!`] makes one `#[test]` per test and
//! store.

use super::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Opens fresh stores of one kind, and knows how that kind counts a message's bytes.
pub(crate) trait Harness {
    /// A new, empty store with `limits`.
    fn open(&mut self, limits: Limits) -> Box<dyn Store>;
    /// The store's size function.
    fn size(&self, subject: usize, headers: usize, data: usize) -> u64;
}

/// Memory stores.
pub(crate) struct Memory;

impl Harness for Memory {
    fn open(&mut self, limits: Limits) -> Box<dyn Store> {
        Box::new(MemoryStore::new(limits))
    }
    fn size(&self, s: usize, h: usize, d: usize) -> u64 {
        memory_msg_size(s, h, d)
    }
}

/// One `#[test]` per shared test, for the store `$harness` opens, in module `$name`.
macro_rules! suite {
    ($name:ident, $harness:expr) => {
        mod $name {
            use super::*;
            suite!(@tests $harness; sequences, sizes, max_msgs, max_bytes, per_subject,
                max_age, purge_all, purge_filter, purge_up_to, purge_keep, purge_combined,
                remove_and_erase, load_next_last, skip, subjects_state, new_limits, consumer_queries);
        }
    };
    (@tests $harness:expr; $($test:ident),*) => {
        $(#[test]
        fn $test() {
            super::$test(&mut $harness);
        })*
    };
}

/// A directory under the system's temporary one, removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A new, not yet created, directory name unique to this process and call.
    pub(crate) fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("beaver-store-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    /// Its path.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// File stores in temporary directories, rolling segments at `segment_size`; with `reopen`,
/// each store is closed and opened again after every change, and must come back the same.
pub(crate) struct Files {
    pub(crate) dirs: Vec<TempDir>,
    pub(crate) segment_size: u64,
    pub(crate) reopen: bool,
}

impl Files {
    pub(crate) fn new(segment_size: u64, reopen: bool) -> Files {
        Files {
            dirs: Vec::new(),
            segment_size,
            reopen,
        }
    }
}

impl Harness for Files {
    fn open(&mut self, limits: Limits) -> Box<dyn Store> {
        let dir = TempDir::new("suite");
        let open = Reopen {
            dir: dir.path().to_path_buf(),
            limits,
            segment_size: self.segment_size,
        };
        self.dirs.push(dir);
        let store = open.open();
        if self.reopen {
            Box::new(Reopening {
                store: Some(store),
                open,
            })
        } else {
            Box::new(store)
        }
    }
    fn size(&self, s: usize, h: usize, d: usize) -> u64 {
        file_msg_size(s, h, d)
    }
}

/// How to open one file store again.
pub(crate) struct Reopen {
    pub(crate) dir: PathBuf,
    pub(crate) limits: Limits,
    pub(crate) segment_size: u64,
}

impl Reopen {
    pub(crate) fn open(&self) -> FileStore {
        // Small segments are the tests of recovery: every write synced there as well.
        let sync = if self.segment_size < 1024 {
            SyncPolicy::Always
        } else {
            SyncPolicy::Interval(Duration::from_secs(1))
        };
        FileStore::open_sized(&self.dir, self.limits, sync, self.segment_size).unwrap()
    }
}

/// Everything observable of a store: state, deleted sequences, subjects, every message.
pub(crate) type Snapshot = (StreamState, Vec<u64>, Vec<(Bytes, u64)>, Vec<StoredMsg>);

/// The [`Snapshot`] of `s`.
pub(crate) fn snapshot(s: &dyn Store) -> Snapshot {
    let mut msgs = Vec::new();
    let mut next = 0;
    while let Ok(m) = s.load_next(None, next) {
        next = m.seq + 1;
        msgs.push(m);
    }
    (s.state(), s.deleted(), s.subjects(b">"), msgs)
}

/// A file store that is closed and opened again after every change, checking that what it
/// recovers is what it had.
struct Reopening {
    store: Option<FileStore>,
    open: Reopen,
}

impl Reopening {
    fn store(&self) -> &FileStore {
        self.store.as_ref().expect("open")
    }

    fn change<R>(&mut self, f: impl FnOnce(&mut FileStore) -> R) -> R {
        let store = self.store.as_mut().expect("open");
        let r = f(store);
        let before = snapshot(store);
        self.store = None;
        let store = self.open.open();
        assert_eq!(snapshot(&store), before, "recovered state differs");
        self.store = Some(store);
        r
    }
}

impl Store for Reopening {
    fn store_msg(&mut self, s: &[u8], h: &[u8], d: &[u8], ts: i64) -> Result<u64, StoreError> {
        self.change(|st| st.store_msg(s, h, d, ts))
    }
    fn skip_to(&mut self, seq: u64) -> Result<(), StoreError> {
        self.change(|st| st.skip_to(seq))
    }
    fn set_limits(&mut self, limits: Limits) -> Result<(), StoreError> {
        self.open.limits = limits;
        self.change(|st| st.set_limits(limits))
    }
    fn expire(&mut self, now: i64) -> Result<u64, StoreError> {
        self.change(|st| st.expire(now))
    }
    fn load(&self, seq: u64) -> Result<StoredMsg, StoreError> {
        self.store().load(seq)
    }
    fn load_next(&self, filter: Option<&[u8]>, start: u64) -> Result<StoredMsg, StoreError> {
        self.store().load_next(filter, start)
    }
    fn load_last(&self, filter: &[u8]) -> Result<StoredMsg, StoreError> {
        self.store().load_last(filter)
    }
    fn remove(&mut self, seq: u64, erase: bool) -> Result<bool, StoreError> {
        self.change(|st| st.remove(seq, erase))
    }
    fn purge(&mut self, purge: &Purge) -> Result<u64, StoreError> {
        self.change(|st| st.purge(purge))
    }
    fn state(&self) -> StreamState {
        self.store().state()
    }
    fn deleted(&self) -> Vec<u64> {
        self.store().deleted()
    }
    fn subjects(&self, filter: &[u8]) -> Vec<(Bytes, u64)> {
        self.store().subjects(filter)
    }
    fn count_from(&self, filter: Option<&[u8]>, start: u64) -> u64 {
        self.store().count_from(filter, start)
    }
    fn last_per_subject(&self, filter: &[u8]) -> Vec<u64> {
        self.store().last_per_subject(filter)
    }
    fn seq_from_time(&self, ts: i64) -> u64 {
        self.store().seq_from_time(ts)
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        self.change(|st| st.sync())
    }
    fn footprint(&self) -> u64 {
        self.store().footprint()
    }
    fn destroy(mut self: Box<Self>) -> Result<(), StoreError> {
        Box::new(self.store.take().expect("open")).destroy()
    }
}

suite!(memory, Memory);
suite!(
    file,
    Files::new(crate::store::file::DEFAULT_SEGMENT_SIZE, false)
);
// Segments of about two messages: rolls and deleted segments on every test.
suite!(file_small_segments, Files::new(120, false));
// Closed and reopened after every change, with small segments.
suite!(file_reopened, Files::new(120, true));

const HDR: &[u8] = b"NATS/1.0\r\nA: b\r\n\r\n";

fn put(s: &mut dyn Store, subject: &str, data: &str) -> u64 {
    s.store_msg(subject.as_bytes(), b"", data.as_bytes(), 1_000)
        .unwrap()
}

fn put_at(s: &mut dyn Store, subject: &str, ts: i64) -> u64 {
    s.store_msg(subject.as_bytes(), b"", b"x", ts).unwrap()
}

fn limits() -> Limits {
    Limits::default()
}

/// The live sequences, oldest first.
fn live(s: &dyn Store) -> Vec<u64> {
    let mut out = Vec::new();
    let mut next = 0;
    while let Ok(m) = s.load_next(None, next) {
        out.push(m.seq);
        next = m.seq + 1;
    }
    out
}

fn seqs(s: &dyn Store) -> (u64, u64, u64) {
    let st = s.state();
    (st.msgs, st.first_seq, st.last_seq)
}

pub(crate) fn sequences(h: &mut dyn Harness) {
    let mut s = h.open(limits());
    assert_eq!(s.state(), StreamState::default());
    assert!(matches!(s.load(1), Err(StoreError::NotFound)));
    for i in 1..=3 {
        let seq = s
            .store_msg(b"foo", HDR, format!("m{i}").as_bytes(), 100 + i as i64)
            .unwrap();
        assert_eq!(seq, i);
    }
    let m = s.load(2).unwrap();
    assert_eq!(
        m,
        StoredMsg {
            subject: Bytes::from_static(b"foo"),
            seq: 2,
            ts: 102,
            headers: Bytes::from_static(HDR),
            data: Bytes::from_static(b"m2"),
        }
    );
    let st = s.state();
    assert_eq!(
        (st.first_seq, st.first_ts, st.last_seq, st.last_ts),
        (1, 101, 3, 103)
    );
    assert_eq!((st.msgs, st.num_deleted, st.num_subjects), (3, 0, 1));
    assert!(matches!(s.load(4), Err(StoreError::NotFound)));
    assert!(matches!(s.load(0), Err(StoreError::NotFound)));
}

/// What consumers ask: pending counts from a sequence (with holes, per literal and wildcard
/// filters), the last sequence of each subject, the first sequence at a time.
pub(crate) fn consumer_queries(h: &mut dyn Harness) {
    let mut s = h.open(limits());
    for (i, subj) in ["a.1", "a.2", "b", "a.1", "b", "a.2"].iter().enumerate() {
        put_at(s.as_mut(), subj, 100 + i as i64 * 10);
    }
    assert_eq!(s.count_from(None, 1), 6);
    assert_eq!(s.count_from(None, 4), 3);
    assert_eq!(s.count_from(Some(b"a.1"), 2), 1);
    assert_eq!(s.count_from(Some(b"a.*"), 2), 3);
    assert_eq!(s.count_from(Some(b">"), 7), 0);
    s.remove(5, false).unwrap();
    assert_eq!(s.count_from(None, 4), 2);
    assert_eq!(s.count_from(Some(b"b"), 1), 1);
    assert_eq!(s.last_per_subject(b">"), vec![3, 4, 6]);
    assert_eq!(s.last_per_subject(b"a.*"), vec![4, 6]);
    assert_eq!(s.seq_from_time(0), 1);
    assert_eq!(s.seq_from_time(125), 4);
    assert_eq!(s.seq_from_time(141), 6);
    assert_eq!(s.seq_from_time(1000), 7);
}

pub(crate) fn sizes(h: &mut dyn Harness) {
    let mut s = h.open(limits());
    s.store_msg(b"foo", b"", b"hello", 1).unwrap();
    s.store_msg(b"foo", HDR, b"hello", 1).unwrap();
    let want = h.size(3, 0, 5) + h.size(3, HDR.len(), 5);
    assert_eq!(s.state().bytes, want);
    s.remove(1, false).unwrap();
    assert_eq!(s.state().bytes, h.size(3, HDR.len(), 5));
}

pub(crate) fn max_msgs(h: &mut dyn Harness) {
    let mut s = h.open(Limits {
        max_msgs: 3,
        ..limits()
    });
    for _ in 0..5 {
        put(s.as_mut(), "foo", "x");
    }
    assert_eq!(seqs(s.as_ref()), (3, 3, 5));
    assert!(matches!(s.load(2), Err(StoreError::NotFound)));
    assert_eq!(s.state().num_deleted, 0);

    let mut s = h.open(Limits {
        max_msgs: 3,
        discard_new: true,
        ..limits()
    });
    for _ in 0..3 {
        put(s.as_mut(), "foo", "x");
    }
    assert!(matches!(
        s.store_msg(b"foo", b"", b"x", 1),
        Err(StoreError::MaxMsgs)
    ));
    assert_eq!(seqs(s.as_ref()), (3, 1, 3));
    // Room again after a removal; the refused store used no sequence.
    s.remove(2, false).unwrap();
    assert_eq!(put(s.as_mut(), "foo", "x"), 4);
}

pub(crate) fn max_bytes(h: &mut dyn Harness) {
    let one = h.size(3, 0, 10) as i64;
    let mut s = h.open(Limits {
        max_bytes: 3 * one,
        ..limits()
    });
    for _ in 0..5 {
        put(s.as_mut(), "foo", "0123456789");
    }
    assert_eq!(seqs(s.as_ref()), (3, 3, 5));
    assert_eq!(s.state().bytes, 3 * one as u64);
    // A bigger message pushes out as many as it needs.
    s.store_msg(b"foo", b"", &[7; 25], 1).unwrap();
    assert_eq!(live(s.as_ref()), vec![5, 6]);

    let mut s = h.open(Limits {
        max_bytes: 3 * one,
        discard_new: true,
        ..limits()
    });
    for _ in 0..3 {
        put(s.as_mut(), "foo", "0123456789");
    }
    assert!(matches!(
        s.store_msg(b"foo", b"", b"0123456789", 1),
        Err(StoreError::MaxBytes)
    ));
    assert_eq!(seqs(s.as_ref()), (3, 1, 3));
}

pub(crate) fn per_subject(h: &mut dyn Harness) {
    // Discard old: a subject's oldest go, other subjects are untouched.
    let mut s = h.open(Limits {
        max_msgs_per_subject: 2,
        ..limits()
    });
    put(s.as_mut(), "a", "1");
    put(s.as_mut(), "b", "2");
    put(s.as_mut(), "a", "3");
    put(s.as_mut(), "a", "4");
    put(s.as_mut(), "a", "5");
    assert_eq!(live(s.as_ref()), vec![2, 4, 5]);
    // Only the gaps after the first live message count as deleted.
    assert_eq!(s.state().num_deleted, 1);
    assert_eq!(s.deleted(), vec![3]);
    assert_eq!(s.load_last(b"a").unwrap().seq, 5);

    // discard: new alone still discards a subject's oldest.
    let limits_new = Limits {
        max_msgs_per_subject: 1,
        discard_new: true,
        ..limits()
    };
    let mut s = h.open(limits_new);
    put(s.as_mut(), "a", "1");
    put(s.as_mut(), "a", "2");
    assert_eq!(live(s.as_ref()), vec![2]);

    // With discard_new_per_subject the store is refused instead.
    let mut s = h.open(Limits {
        discard_new_per_subject: true,
        ..limits_new
    });
    put(s.as_mut(), "a", "1");
    assert!(matches!(
        s.store_msg(b"a", b"", b"2", 1),
        Err(StoreError::MaxMsgsPerSubject)
    ));
    assert_eq!(put(s.as_mut(), "b", "2"), 2);
    assert_eq!(live(s.as_ref()), vec![1, 2]);
}

pub(crate) fn max_age(h: &mut dyn Harness) {
    let sec = 1_000_000_000;
    let mut s = h.open(Limits {
        max_age: Duration::from_secs(10),
        ..limits()
    });
    for t in [1, 2, 3, 20] {
        put_at(s.as_mut(), "foo", t * sec);
    }
    assert_eq!(s.expire(5 * sec).unwrap(), 0);
    // At 12 s, what was stored at or before 2 s is 10 s old or more.
    assert_eq!(s.expire(12 * sec).unwrap(), 2);
    assert_eq!(seqs(s.as_ref()), (2, 3, 4));
    assert_eq!(s.state().first_ts, 3 * sec);
    assert_eq!(s.expire(100 * sec).unwrap(), 2);
    assert_eq!(seqs(s.as_ref()), (0, 5, 4));
    // No max_age: nothing expires.
    let mut s = h.open(limits());
    put_at(s.as_mut(), "foo", 1);
    assert_eq!(s.expire(i64::MAX).unwrap(), 0);
}

pub(crate) fn purge_all(h: &mut dyn Harness) {
    let mut s = h.open(limits());
    // A new stream purged: first 1, last 0.
    assert_eq!(s.purge(&Purge::default()).unwrap(), 0);
    assert_eq!(seqs(s.as_ref()), (0, 1, 0));
    for _ in 0..4 {
        put(s.as_mut(), "foo", "x");
    }
    assert_eq!(s.purge(&Purge::default()).unwrap(), 4);
    let st = s.state();
    assert_eq!((st.msgs, st.bytes, st.first_seq, st.last_seq), (0, 0, 5, 4));
    assert_eq!((st.num_deleted, st.num_subjects, st.first_ts), (0, 0, 0));
    assert!(s.deleted().is_empty());
    assert_eq!(put(s.as_mut(), "foo", "x"), 5);
    assert_eq!(seqs(s.as_ref()), (1, 5, 5));
}

fn abc(h: &mut dyn Harness) -> Box<dyn Store> {
    let mut s = h.open(limits());
    for subj in ["a.1", "b.1", "a.2", "a.1.x", "b.2", "a.1"] {
        put(s.as_mut(), subj, "x");
    }
    s
}

fn filter(f: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(f.as_bytes()))
}

pub(crate) fn purge_filter(h: &mut dyn Harness) {
    let mut s = abc(h);
    let p = Purge {
        filter: filter("a.*"),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 3);
    assert_eq!(live(s.as_ref()), vec![2, 4, 5]);
    assert_eq!(s.deleted(), vec![3, 6]);
    let p = Purge {
        filter: filter("a.>"),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 1);
    let p = Purge {
        filter: filter("b.1"),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 1);
    assert_eq!(seqs(s.as_ref()), (1, 5, 6));
    // The last one goes: first becomes last + 1.
    let p = Purge {
        filter: filter("*.*"),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 1);
    assert_eq!(seqs(s.as_ref()), (0, 7, 6));
    // `>` is everything.
    let mut s = abc(h);
    let p = Purge {
        filter: filter(">"),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 6);
    assert_eq!(seqs(s.as_ref()), (0, 7, 6));
}

pub(crate) fn purge_up_to(h: &mut dyn Harness) {
    let mut s = abc(h);
    let p = Purge {
        up_to: Some(4),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 3);
    assert_eq!(seqs(s.as_ref()), (3, 4, 6));
    assert_eq!(s.purge(&p).unwrap(), 0);
    // 1 is no bound (nats-server's reading of `seq`): everything goes.
    let mut t = abc(h);
    let p = Purge {
        up_to: Some(1),
        ..Purge::default()
    };
    assert_eq!(t.purge(&p).unwrap(), 6);
    let p = Purge {
        filter: filter("a.*"),
        up_to: Some(1),
        ..Purge::default()
    };
    let mut t = abc(h);
    assert_eq!(t.purge(&p).unwrap(), 3);
    // Past the end: everything goes and the next message gets up_to (nats-server's Compact).
    let p = Purge {
        up_to: Some(10),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 3);
    assert_eq!(seqs(s.as_ref()), (0, 10, 9));
    assert_eq!(put(s.as_mut(), "a", "x"), 10);
}

pub(crate) fn purge_keep(h: &mut dyn Harness) {
    let mut s = abc(h);
    let p = Purge {
        keep: Some(2),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 4);
    assert_eq!(live(s.as_ref()), vec![5, 6]);
    assert_eq!(s.purge(&p).unwrap(), 0);
    let p = Purge {
        keep: Some(0),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 2);
    assert_eq!(seqs(s.as_ref()), (0, 7, 6));
}

pub(crate) fn purge_combined(h: &mut dyn Harness) {
    // Filter + keep: a.1 is at 1 and 6, a.1.x at 4, a.2 at 3; keep the newest of a.>.
    let mut s = abc(h);
    let p = Purge {
        filter: filter("a.>"),
        keep: Some(1),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 3);
    assert_eq!(live(s.as_ref()), vec![2, 5, 6]);
    // Filter + up_to: only matching messages below up_to.
    let mut s = abc(h);
    let p = Purge {
        filter: filter("a.1"),
        up_to: Some(6),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 1);
    assert_eq!(live(s.as_ref()), vec![2, 3, 4, 5, 6]);
    // Up_to + keep: the oldest beyond keep, but none at or past up_to.
    let mut s = abc(h);
    let p = Purge {
        up_to: Some(3),
        keep: Some(1),
        ..Purge::default()
    };
    assert_eq!(s.purge(&p).unwrap(), 2);
    assert_eq!(live(s.as_ref()), vec![3, 4, 5, 6]);
    // All three.
    let mut s = abc(h);
    let p = Purge {
        filter: filter("*.1"),
        up_to: Some(6),
        keep: Some(1),
    };
    assert_eq!(s.purge(&p).unwrap(), 2);
    assert_eq!(live(s.as_ref()), vec![3, 4, 5, 6]);
}

pub(crate) fn remove_and_erase(h: &mut dyn Harness) {
    let mut s = h.open(limits());
    for i in 0..5 {
        put(s.as_mut(), "foo", &format!("secret{i}"));
    }
    assert!(s.remove(3, true).unwrap());
    assert!(!s.remove(3, true).unwrap());
    assert!(!s.remove(99, false).unwrap());
    assert!(matches!(s.load(3), Err(StoreError::NotFound)));
    assert_eq!(s.load_next(None, 3).unwrap().seq, 4);
    assert!(s.remove(5, false).unwrap());
    // The last sequence stays; what is gone between first and last counts as deleted.
    assert_eq!(seqs(s.as_ref()), (3, 1, 5));
    assert_eq!(s.deleted(), vec![3, 5]);
    assert_eq!(s.state().num_deleted, 2);
    // Removing the first moves first on to the next live message.
    assert!(s.remove(1, false).unwrap());
    assert!(s.remove(2, true).unwrap());
    assert_eq!(seqs(s.as_ref()), (1, 4, 5));
    assert_eq!(s.deleted(), vec![5]);
    assert!(s.remove(4, false).unwrap());
    assert_eq!(seqs(s.as_ref()), (0, 6, 5));
    assert_eq!(s.state().num_deleted, 0);
    assert_eq!(put(s.as_mut(), "foo", "x"), 6);
}

pub(crate) fn load_next_last(h: &mut dyn Harness) {
    let s = abc(h);
    let next = |f: Option<&str>, start| s.load_next(f.map(str::as_bytes), start).map(|m| m.seq);
    assert_eq!(next(None, 0).unwrap(), 1);
    assert_eq!(next(None, 4).unwrap(), 4);
    assert_eq!(next(Some("a.*"), 2).unwrap(), 3);
    assert_eq!(next(Some("a.1"), 2).unwrap(), 6);
    assert_eq!(next(Some("a.>"), 5).unwrap(), 6);
    assert_eq!(next(Some("*.2"), 4).unwrap(), 5);
    assert_eq!(next(Some(">"), 6).unwrap(), 6);
    assert!(matches!(next(None, 7), Err(StoreError::NotFound)));
    assert!(matches!(next(Some("c"), 0), Err(StoreError::NotFound)));
    let last = |f: &str| s.load_last(f.as_bytes()).map(|m| m.seq);
    assert_eq!(last("a.1").unwrap(), 6);
    assert_eq!(last("b.*").unwrap(), 5);
    assert_eq!(last("a.*.x").unwrap(), 4);
    assert_eq!(last(">").unwrap(), 6);
    assert!(matches!(last("a.2.>"), Err(StoreError::NotFound)));
    let m = s.load_next(Some(b"b.>"), 0).unwrap();
    assert_eq!((m.seq, &m.subject[..]), (2, &b"b.1"[..]));
}

pub(crate) fn skip(h: &mut dyn Harness) {
    // Empty: the first sequence moves past the skip.
    let mut s = h.open(limits());
    s.skip_to(10).unwrap();
    assert_eq!(seqs(s.as_ref()), (0, 11, 10));
    assert_eq!(put(s.as_mut(), "foo", "x"), 11);
    assert_eq!(seqs(s.as_ref()), (1, 11, 11));
    // Not empty: the skipped sequences are gaps.
    s.skip_to(13).unwrap();
    assert_eq!(seqs(s.as_ref()), (1, 11, 13));
    assert_eq!(s.deleted(), vec![12, 13]);
    assert_eq!(put(s.as_mut(), "foo", "x"), 14);
    // Not past the last: nothing changes.
    s.skip_to(5).unwrap();
    assert_eq!(seqs(s.as_ref()), (2, 11, 14));
}

pub(crate) fn subjects_state(h: &mut dyn Harness) {
    let mut s = abc(h);
    let b = |x: &str| Bytes::copy_from_slice(x.as_bytes());
    assert_eq!(s.state().num_subjects, 5);
    assert_eq!(s.subjects(b"a.1"), vec![(b("a.1"), 2)]);
    assert_eq!(s.subjects(b"a.*"), vec![(b("a.1"), 2), (b("a.2"), 1)]);
    assert_eq!(s.subjects(b">").len(), 5);
    s.remove(1, false).unwrap();
    s.remove(3, false).unwrap();
    assert_eq!(s.subjects(b"a.*"), vec![(b("a.1"), 1)]);
    assert_eq!(s.state().num_subjects, 4);
    assert_eq!(s.load_last(b"a.1").unwrap().seq, 6);
    assert_eq!(s.load_next(Some(b"a.1"), 0).unwrap().seq, 6);
}

pub(crate) fn new_limits(h: &mut dyn Harness) {
    let mut s = abc(h);
    s.set_limits(Limits {
        max_msgs_per_subject: 1,
        ..limits()
    })
    .unwrap();
    assert_eq!(live(s.as_ref()), vec![2, 3, 4, 5, 6]);
    s.set_limits(Limits {
        max_msgs: 2,
        ..limits()
    })
    .unwrap();
    assert_eq!(live(s.as_ref()), vec![5, 6]);
    // Limits apply to later stores too.
    put(s.as_mut(), "z", "x");
    assert_eq!(live(s.as_ref()), vec![6, 7]);
}
