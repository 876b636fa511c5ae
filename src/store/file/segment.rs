//! One segment file: its header, the encoding of records, and positional reads and writes
//! (the layout is in the parent module's doc).

use super::Loc;
use crate::store::index::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The first 8 bytes of every segment.
pub(super) const MAGIC: &[u8; 8] = b"BVRSTOR1";
/// Bytes of a segment header.
pub(super) const HEADER_LEN: u64 = 40;
/// Bytes before a record's body: its length and its checksum.
pub(super) const PREFIX_LEN: usize = 8;
/// Bytes of a body before its subject: kind, sequence, time, subject and header lengths.
pub(super) const FIXED_LEN: usize = 25;

/// What a record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A message.
    Msg = 1,
    /// A message removed with `erase`: its bytes after the fixed part are zero.
    Erased = 2,
    /// Sequence `seq` was removed.
    Delete = 3,
    /// Everything below `seq` was removed (the first sequence is at least `seq`).
    Floor = 4,
    /// Everything up to `seq` is used (a skip).
    Skip = 5,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Msg,
            2 => Kind::Erased,
            3 => Kind::Delete,
            4 => Kind::Floor,
            5 => Kind::Skip,
            _ => return None,
        })
    }
}

/// A segment header: the stream's first and last sequence (and last time) when the segment
/// was made, so that recovery needs none of the older segments that were deleted since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_ts: i64,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut b = [0u8; HEADER_LEN as usize];
        b[..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&self.first_seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.last_seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.last_ts.to_le_bytes());
        let crc = crc32fast::hash(&b[..32]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The header at the start of `b`, or `None` if it is not one.
    pub fn decode(b: &[u8]) -> Option<Header> {
        let b = b.get(..HEADER_LEN as usize)?;
        if &b[..8] != MAGIC || crc32fast::hash(&b[..32]) != le_u32(&b[32..36]) {
            return None;
        }
        Some(Header {
            first_seq: le_u64(&b[8..16]),
            last_seq: le_u64(&b[16..24]),
            last_ts: le_u64(&b[24..32]) as i64,
        })
    }
}

/// A decoded record; the slices borrow the buffer it was read from.
#[derive(Debug)]
pub(super) struct Record<'a> {
    pub kind: Kind,
    pub seq: u64,
    pub ts: i64,
    pub subject: &'a [u8],
    pub headers: &'a [u8],
    pub data: &'a [u8],
}

/// Appends one record to `out`: length, checksum, then the body.
pub(super) fn encode(out: &mut Vec<u8>, r: &Record<'_>) {
    let body_len = FIXED_LEN + r.subject.len() + r.headers.len() + r.data.len();
    out.reserve(PREFIX_LEN + body_len);
    let start = out.len();
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.push(r.kind as u8);
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.extend_from_slice(&r.ts.to_le_bytes());
    out.extend_from_slice(&(r.subject.len() as u32).to_le_bytes());
    out.extend_from_slice(&(r.headers.len() as u32).to_le_bytes());
    out.extend_from_slice(r.subject);
    out.extend_from_slice(r.headers);
    out.extend_from_slice(r.data);
    let crc = crc32fast::hash(&out[start + PREFIX_LEN..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// A tombstone (or skip) record for `seq`.
pub(super) fn marker(out: &mut Vec<u8>, kind: Kind, seq: u64) {
    let r = Record {
        kind,
        seq,
        ts: 0,
        subject: b"",
        headers: b"",
        data: b"",
    };
    encode(out, &r);
}

/// Why bytes are not a record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Bad {
    /// The bytes end before the record does, or its checksum does not match: what a write
    /// cut short leaves (at the tail of the last segment, cut there).
    Torn,
    /// The checksum matches but the record is not one we write.
    Invalid(&'static str),
}

/// The record at the start of `b` and its total length.
pub(super) fn decode(b: &[u8]) -> Result<(Record<'_>, usize), Bad> {
    let prefix = b.get(..PREFIX_LEN).ok_or(Bad::Torn)?;
    let body_len = le_u32(&prefix[..4]) as usize;
    if body_len < FIXED_LEN {
        return Err(Bad::Torn);
    }
    let body = b.get(PREFIX_LEN..PREFIX_LEN + body_len).ok_or(Bad::Torn)?;
    if crc32fast::hash(body) != le_u32(&prefix[4..8]) {
        return Err(Bad::Torn);
    }
    let kind = Kind::from_u8(body[0]).ok_or(Bad::Invalid("unknown record kind"))?;
    let seq = le_u64(&body[1..9]);
    let ts = le_u64(&body[9..17]) as i64;
    let slen = le_u32(&body[17..21]) as usize;
    let hlen = le_u32(&body[21..25]) as usize;
    let rest = &body[FIXED_LEN..];
    if slen.saturating_add(hlen) > rest.len() {
        return Err(Bad::Invalid("lengths past the record's end"));
    }
    let (subject, rest) = rest.split_at(slen);
    let (headers, data) = rest.split_at(hlen);
    let r = Record {
        kind,
        seq,
        ts,
        subject,
        headers,
        data,
    };
    Ok((r, PREFIX_LEN + body_len))
}

/// The erased form of a record of `len` bytes: kind [`Kind::Erased`], same sequence and
/// time, and zeros where the subject, headers and body were.
pub(super) fn erased(seq: u64, ts: i64, len: usize) -> Vec<u8> {
    let zeros = vec![0u8; len.saturating_sub(PREFIX_LEN + FIXED_LEN)];
    let mut out = Vec::with_capacity(len);
    let r = Record {
        kind: Kind::Erased,
        seq,
        ts,
        subject: b"",
        headers: b"",
        data: &zeros,
    };
    encode(&mut out, &r);
    out
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// The file name of segment `id`: 16 hex digits, so names sort as ids do.
pub(super) fn file_name(id: u64) -> String {
    format!("{id:016x}.seg")
}

/// The id of a segment file name, `None` for a file that is not a segment.
pub(super) fn parse_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_suffix(".seg")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// One open segment.
#[derive(Debug)]
pub(super) struct Segment {
    pub id: u64,
    pub path: PathBuf,
    pub file: File,
    /// Bytes written: where the next record goes.
    pub size: u64,
    /// Live messages in it.
    pub live: u64,
    /// Older segments holding messages that tombstones in this one removed: this segment
    /// must outlive them, or a restart would bring those messages back.
    pub targets: BTreeSet<u64>,
    /// Written since the last sync.
    pub dirty: bool,
}

/// Counts removed messages out of their segments, and notes in segment `at`, whose
/// tombstones removed them (`None`: erased in place, no tombstone), which older segments it
/// must outlive. Returns whether a segment was left with nothing live.
pub(super) fn forget(
    segs: &mut BTreeMap<u64, Segment>,
    removed: &[(u64, Entry<Loc>)],
    at: Option<u64>,
) -> bool {
    let mut emptied = false;
    for (_, e) in removed {
        if let Some(seg) = segs.get_mut(&e.loc.seg) {
            seg.live = seg.live.saturating_sub(1);
            emptied |= seg.live == 0;
        }
    }
    if let Some(tomb) = at.and_then(|at| segs.get_mut(&at)) {
        let at = tomb.id;
        tomb.targets
            .extend(removed.iter().map(|(_, e)| e.loc.seg).filter(|s| *s != at));
    }
    emptied
}

/// Reads exactly `buf.len()` bytes at `off`, without moving any shared cursor (`pread`).
#[cfg(unix)]
pub(super) fn read_exact_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, off)
}

/// Reads exactly `buf.len()` bytes at `off` (`seek_read`: positional; the cursor it moves is
/// never used, every access here is positional).
#[cfg(windows)]
pub(super) fn read_exact_at(f: &File, mut buf: &mut [u8], mut off: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_read(buf, off) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` at `off` straight to the file (no user-space buffer).
#[cfg(unix)]
pub(super) fn write_all_at(f: &File, buf: &[u8], off: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, off)
}

/// Writes all of `buf` at `off` straight to the file (no user-space buffer).
#[cfg(windows)]
pub(super) fn write_all_at(f: &File, mut buf: &[u8], mut off: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_write(buf, off) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
