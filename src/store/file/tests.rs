//! What only the file store has: recovery from its files, torn tails, corruption, erasure
//! on disk, deleted segments. (The shared suite, in `store::tests`, also runs against file
//! stores, small segments and stores reopened after every change.)

use super::*;
use crate::store::tests::{snapshot, Reopen, TempDir};
use crate::store::MemoryStore;
use std::time::Duration;

fn reopen(dir: &Path, segment_size: u64) -> Reopen {
    Reopen {
        dir: dir.to_path_buf(),
        limits: Limits::default(),
        segment_size,
    }
}

fn put(s: &mut FileStore, subject: &str, data: &[u8]) -> u64 {
    s.store_msg(subject.as_bytes(), b"", data, 7).unwrap()
}

/// The segment files of `dir`, ascending.
fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| segment::parse_name(p).is_some())
        .collect();
    v.sort();
    v
}

fn last_segment(dir: &Path) -> PathBuf {
    segment_files(dir).pop().unwrap()
}

#[test]
fn new_directory_and_destroy() {
    let tmp = TempDir::new("file");
    let dir = tmp.path().join("a/b");
    let mut s = reopen(&dir, DEFAULT_SEGMENT_SIZE).open();
    assert_eq!(s.state(), StreamState::default());
    assert_eq!(s.segment_count(), 1);
    put(&mut s, "foo", b"x");
    assert!(s.footprint() > segment::HEADER_LEN);
    Box::new(s).destroy().unwrap();
    assert!(!dir.exists());
}

#[test]
fn reopen_after_rolls_removes_purges() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), 1024);
    let mut s = open.open();
    for i in 0..300u64 {
        let subject = format!("s.{}", i % 7);
        s.store_msg(
            subject.as_bytes(),
            if i % 3 == 0 { b"NATS/1.0\r\n\r\n" } else { b"" },
            &i.to_le_bytes(),
            i as i64,
        )
        .unwrap();
    }
    assert!(s.segment_count() > 10, "{} segments", s.segment_count());
    for seq in (5..300).step_by(4) {
        assert!(s.remove(seq, seq % 8 == 1).unwrap());
    }
    s.purge(&Purge {
        filter: Some(Bytes::from_static(b"s.3")),
        ..Purge::default()
    })
    .unwrap();
    let many = s.segment_count();
    assert!(segment_files(tmp.path())[0].ends_with(segment::file_name(1)));
    s.purge(&Purge {
        up_to: Some(100),
        ..Purge::default()
    })
    .unwrap();
    s.skip_to(310).unwrap();
    // The segments below sequence 100 held nothing live any more: deleted.
    assert!(s.segment_count() < many, "{} of {many}", s.segment_count());
    assert_eq!(segment_files(tmp.path()).len(), s.segment_count());
    assert!(!segment_files(tmp.path())[0].ends_with(segment::file_name(1)));
    let before = snapshot(&s);
    drop(s);
    let s = open.open();
    assert_eq!(snapshot(&s), before);
    assert_eq!(s.state().first_seq, 100);
    assert_eq!(s.state().last_seq, 310);
}

#[test]
fn purge_all_keeps_the_sequences() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), 512);
    let mut s = open.open();
    for _ in 0..100 {
        put(&mut s, "foo", &[1; 40]);
    }
    s.purge(&Purge::default()).unwrap();
    // Everything but the active segment went.
    assert_eq!(s.segment_count(), 1);
    assert!(s.footprint() < 512);
    drop(s);
    let mut s = open.open();
    let st = s.state();
    assert_eq!((st.msgs, st.first_seq, st.last_seq), (0, 101, 100));
    assert_eq!(put(&mut s, "foo", b"x"), 101);
}

#[test]
fn torn_tail_is_cut() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), DEFAULT_SEGMENT_SIZE);
    let mut s = open.open();
    for i in 0..5u8 {
        put(&mut s, "foo", &[i; 100]);
    }
    drop(s);
    // A write cut short: the last record loses its end.
    let path = last_segment(tmp.path());
    let len = fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 30)
        .unwrap();
    let mut s = open.open();
    let st = s.state();
    assert_eq!((st.msgs, st.first_seq, st.last_seq), (4, 1, 4));
    assert!(matches!(s.load(5), Err(StoreError::NotFound)));
    assert_eq!(put(&mut s, "foo", b"after"), 5);
    assert_eq!(&s.load(5).unwrap().data[..], b"after");
    drop(s);

    // Garbage after the last record (a length that runs past the end, then one whose
    // checksum fails): cut as well.
    let before = snapshot(&open.open());
    for garbage in [
        &[0xff_u8; 13][..],
        &[40, 0, 0, 0, 1, 2, 3, 4, 1, 9, 9, 9, 9][..],
    ] {
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut f, garbage).unwrap();
        drop(f);
        let len = fs::metadata(&path).unwrap().len();
        let s = open.open();
        assert_eq!(snapshot(&s), before);
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            len - garbage.len() as u64
        );
    }
}

#[test]
fn torn_header_of_a_new_segment() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), 200);
    let mut s = open.open();
    for _ in 0..10 {
        put(&mut s, "foo", &[3; 50]);
    }
    let before = snapshot(&s);
    let next = segment::parse_name(&last_segment(tmp.path())).unwrap() + 1;
    drop(s);
    // A roll that wrote only part of the header.
    fs::write(tmp.path().join(segment::file_name(next)), b"BVRST").unwrap();
    let mut s = open.open();
    assert_eq!(snapshot(&s), before);
    assert_eq!(put(&mut s, "foo", b"x"), 11);
}

#[test]
fn a_damaged_record_inside_is_skipped_and_the_rest_kept() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), 300);
    let mut s = open.open();
    for _ in 0..20 {
        put(&mut s, "foo", &[5; 60]);
    }
    drop(s);
    let first = segment_files(tmp.path()).remove(0);
    let mut bytes = fs::read(&first).unwrap();
    let at = segment::HEADER_LEN as usize + 40;
    bytes[at] ^= 0x55;
    fs::write(&first, &bytes).unwrap();
    let sync = SyncPolicy::Always;
    // A flipped bit in message 1's record: that message is lost (with an error in the log),
    // never served damaged, and the 19 after it are all there.
    let s = FileStore::open_sized(tmp.path(), Limits::default(), sync, 300).unwrap();
    let state = s.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (19, 2, 20));
    assert!(s.load(1).is_err());
    assert_eq!(s.load(2).unwrap().data.as_ref(), &[5; 60][..]);
    drop(s);
    // A bad header, too.
    bytes[3] = b'X';
    fs::write(&first, &bytes).unwrap();
    let r = FileStore::open_sized(tmp.path(), Limits::default(), sync, 300);
    assert!(matches!(r, Err(StoreError::Corrupt(_))));
}

#[test]
fn erase_overwrites_the_bytes() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), DEFAULT_SEGMENT_SIZE);
    let mut s = open.open();
    put(&mut s, "a", b"public-one");
    put(&mut s, "secret.subject", b"the-secret-payload");
    put(&mut s, "a", b"public-two");
    let on_disk = |needle: &[u8]| {
        segment_files(tmp.path()).iter().any(|p| {
            fs::read(p)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
        })
    };
    assert!(on_disk(b"the-secret-payload"));
    assert!(s.remove(2, true).unwrap());
    assert!(!on_disk(b"the-secret-payload"));
    assert!(!on_disk(b"secret.subject"));
    // A plain remove leaves the bytes (until the segment goes).
    assert!(s.remove(3, false).unwrap());
    assert!(on_disk(b"public-two"));
    let before = snapshot(&s);
    drop(s);
    let s = open.open();
    assert_eq!(snapshot(&s), before);
    assert_eq!(s.deleted(), vec![2, 3]);
}

#[test]
fn many_messages_across_segments() {
    let tmp = TempDir::new("file");
    let open = reopen(tmp.path(), 64 << 10);
    let mut s = open.open();
    let n = 20_000u64;
    for i in 1..=n {
        let subject = format!("m.{}", i % 100);
        let seq = s.store_msg(
            subject.as_bytes(),
            b"",
            format!("payload {i}").as_bytes(),
            i as i64,
        );
        assert_eq!(seq.unwrap(), i);
    }
    assert!(s.segment_count() > 10);
    drop(s);
    let s = open.open();
    assert_eq!(s.state().msgs, n);
    assert_eq!(s.state().num_subjects, 100);
    for i in (1..=n).step_by(997) {
        let m = s.load(i).unwrap();
        assert_eq!(
            (m.ts, &m.data[..]),
            (i as i64, format!("payload {i}").as_bytes())
        );
    }
    assert_eq!(s.load_last(b"m.7").unwrap().seq, n - 93);
}

#[test]
fn lower_limits_at_open_apply() {
    let tmp = TempDir::new("file");
    let mut open = reopen(tmp.path(), DEFAULT_SEGMENT_SIZE);
    let mut s = open.open();
    for _ in 0..10 {
        put(&mut s, "foo", b"x");
    }
    drop(s);
    open.limits.max_msgs = 4;
    let s = open.open();
    assert_eq!((s.state().first_seq, s.state().msgs), (7, 4));
    drop(s);
    open.limits = Limits::default();
    assert_eq!(open.open().state().first_seq, 7);
}

/// Random operations on a file store with small segments and on a memory store: the same
/// messages and sequences, before and after every reopen.
#[test]
fn same_as_memory_under_random_operations() {
    let tmp = TempDir::new("file");
    let limits = Limits {
        max_msgs_per_subject: 6,
        max_age: Duration::from_nanos(300),
        ..Limits::default()
    };
    let open = Reopen {
        limits,
        ..reopen(tmp.path(), 400)
    };
    let mut file = open.open();
    let mut model = MemoryStore::new(limits);
    let mut rng = fastrand::Rng::with_seed(14);
    let subjects = ["a.1", "a.2", "b.1", "b.2.x", "c"];
    for round in 0..2_000u64 {
        let stores: [&mut dyn Store; 2] = [&mut file, &mut model];
        let op = rng.u8(0..100);
        let subject = subjects[rng.usize(..subjects.len())];
        let last = stores[1].state().last_seq;
        let seq = rng.u64(0..=last + 1);
        let len = rng.usize(0..80);
        for s in stores {
            match op {
                0..=69 => {
                    s.store_msg(subject.as_bytes(), b"", &vec![op; len], round as i64)
                        .unwrap();
                }
                70..=84 => {
                    s.remove(seq, op % 2 == 0).unwrap();
                }
                85..=89 => {
                    let filter = Some(Bytes::from(subject.replace('1', "*")));
                    s.purge(&Purge {
                        filter,
                        ..Purge::default()
                    })
                    .unwrap();
                }
                90..=93 => {
                    s.purge(&Purge {
                        up_to: Some(seq),
                        keep: Some(3),
                        ..Purge::default()
                    })
                    .unwrap();
                }
                94..=95 => {
                    s.skip_to(last + 2).unwrap();
                }
                96 => {
                    s.purge(&Purge::default()).unwrap();
                }
                _ => {
                    s.expire(round as i64 + 100).unwrap();
                }
            }
        }
        let (fs_, fd, fsub, fm) = snapshot(&file);
        let (ms, md, msub, mm) = snapshot(&model);
        let seqs = |st: &StreamState| {
            (
                st.msgs,
                st.first_seq,
                st.last_seq,
                st.num_deleted,
                st.first_ts,
            )
        };
        assert_eq!(seqs(&fs_), seqs(&ms), "round {round}");
        assert_eq!((fd, fsub, fm), (md, msub, mm), "round {round}");
        if round % 50 == 0 {
            drop(file);
            file = open.open();
        }
    }
}

/// The writer side of [`killed_writer_loses_nothing_acknowledged`]: run only as that test's
/// child process (it stores until killed, printing each sequence once `store_msg` returned).
#[test]
#[ignore = "run by killed_writer_loses_nothing_acknowledged"]
fn killed_writer_child() {
    let Some(dir) = std::env::var_os("BEAVER_STORE_KILL_DIR") else {
        return;
    };
    let mut s = reopen(Path::new(&dir), 4096).open();
    let mut out = std::io::stdout();
    for i in 0u64.. {
        let seq = put(&mut s, "kill.test", &i.to_le_bytes());
        std::io::Write::write_all(&mut out, format!("stored {seq}\n").as_bytes()).unwrap();
        std::io::Write::flush(&mut out).unwrap();
    }
}

/// A process killed (SIGKILL on unix, TerminateProcess on Windows) in the middle of storing
/// loses none of the messages whose `store_msg` had returned.
#[test]
fn killed_writer_loses_nothing_acknowledged() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let tmp = TempDir::new("kill");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::file::tests::killed_writer_child",
            "--ignored",
            "--nocapture",
        ])
        .env("BEAVER_STORE_KILL_DIR", tmp.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = 0;
    while acked < 3_000 {
        let line = lines.next().expect("the child stores").unwrap();
        if let Some(seq) = line.strip_prefix("stored ") {
            acked = seq.parse().unwrap();
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let s = reopen(tmp.path(), 4096).open();
    let st = s.state();
    assert!(st.last_seq >= acked, "{} < {acked}", st.last_seq);
    assert_eq!((st.first_seq, st.msgs), (1, st.last_seq));
    for seq in 1..=acked {
        assert_eq!(&s.load(seq).unwrap().data[..], &(seq - 1).to_le_bytes());
    }
}

#[test]
fn a_flipped_bit_in_the_last_segment_is_not_taken_for_a_torn_end() {
    // Damage in the middle of the active segment is not a write cut short: the records
    // after it were acknowledged and stay.
    let tmp = TempDir::new("file");
    let mut s = FileStore::open(tmp.path(), Limits::default(), SyncPolicy::Always).unwrap();
    for _ in 0..20 {
        put(&mut s, "foo", &[7; 60]);
    }
    drop(s);
    let seg = segment_files(tmp.path()).remove(0);
    let mut bytes = fs::read(&seg).unwrap();
    let record = (bytes.len() - segment::HEADER_LEN as usize) / 20;
    bytes[segment::HEADER_LEN as usize + 4 * record + 50] ^= 0x01;
    fs::write(&seg, &bytes).unwrap();
    let s = FileStore::open(tmp.path(), Limits::default(), SyncPolicy::Always).unwrap();
    let state = s.state();
    assert_eq!((state.msgs, state.last_seq), (19, 20));
    assert!(s.load(5).is_err());
    for seq in (1..=20).filter(|&q| q != 5) {
        assert_eq!(
            s.load(seq).unwrap().data.as_ref(),
            &[7; 60][..],
            "seq {seq}"
        );
    }
}
