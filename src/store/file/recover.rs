//! Opening a file store: reading every segment in order and replaying its records into a
//! fresh index (the rules are in the parent module's doc).

use super::segment::{self, Bad, Header, Kind, Segment, HEADER_LEN};
use super::Loc;
use crate::store::index::Index;
use crate::store::{file_msg_size, Limits, StoreError};
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The segments of `dir`, ascending by id.
fn segment_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if let Some(id) = segment::parse_name(&path) {
            out.push((id, path));
        }
    }
    out.sort_unstable_by_key(|(id, _)| *id);
    Ok(out)
}

fn corrupt(path: &Path, off: u64, what: &str) -> StoreError {
    StoreError::Corrupt(format!("{} at {off}: {what}", path.display()))
}

/// Replays the segments of `dir` (which exists) into an index with `limits` (not yet
/// enforced). An empty map means a new store.
pub(super) fn recover(
    dir: &Path,
    limits: Limits,
) -> Result<(Index<Loc>, BTreeMap<u64, Segment>), StoreError> {
    let mut index = Index::new(limits);
    let mut segs: BTreeMap<u64, Segment> = BTreeMap::new();
    let files = segment_files(dir)?;
    let mut header_first = None;
    for (i, (id, path)) in files.iter().enumerate() {
        let is_last = i + 1 == files.len();
        let mut file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut data = Vec::new();
        file.read_to_end(&mut data)?;
        if (data.len() as u64) < HEADER_LEN && is_last {
            // A roll the process did not finish: the previous segment still has it all.
            log::warn!(
                "JetStream store: {} is shorter than a segment header ({} bytes), removed",
                path.display(),
                data.len()
            );
            drop(file);
            fs::remove_file(path)?;
            continue;
        }
        let header = Header::decode(&data).ok_or_else(|| corrupt(path, 0, "bad segment header"))?;
        header_first.get_or_insert(header.first_seq);
        index.advance_last(header.last_seq, header.last_ts);
        segs.insert(
            *id,
            Segment {
                id: *id,
                path: path.clone(),
                file,
                size: HEADER_LEN,
                live: 0,
                targets: Default::default(),
                dirty: false,
            },
        );
        let mut off = HEADER_LEN as usize;
        while off < data.len() {
            match segment::decode(&data[off..]) {
                Ok((r, len)) => {
                    let loc = Loc::new(*id, off as u64, len)
                        .ok_or_else(|| corrupt(path, off as u64, "a segment past 4 GiB"))?;
                    replay(&mut index, &mut segs, &r, loc)
                        .map_err(|what| corrupt(path, off as u64, what))?;
                    off += len;
                }
                Err(Bad::Invalid(what)) => return Err(corrupt(path, off as u64, what)),
                Err(Bad::Torn) => {
                    // A record that fails its checksum. Followed by good records, it is
                    // damage in the middle (a flipped bit): skipped, and what follows is
                    // kept. Otherwise it is the end of the log: a write cut short, cut off
                    // from the last segment (the only one that can end torn: a segment is
                    // synced when the next one starts).
                    let (last, _) = index.last();
                    if let Some(next) = resync(&data, off + 1, last) {
                        log::error!(
                            "JetStream store: {}: damaged record at {off}; {} bytes skipped, \
                             the records after them kept",
                            path.display(),
                            next - off
                        );
                        off = next;
                        continue;
                    }
                    if !is_last {
                        log::error!(
                            "JetStream store: {}: damaged records from {off} to the end \
                             ({} bytes) skipped",
                            path.display(),
                            data.len() - off
                        );
                        break;
                    }
                    log::warn!(
                        "JetStream store: {} has a torn record at {off} (a write cut short); \
                         cutting {} bytes off",
                        path.display(),
                        data.len() - off
                    );
                    if let Some(seg) = segs.get(id) {
                        seg.file.set_len(off as u64)?;
                        seg.file.sync_all()?;
                    }
                    break;
                }
            }
        }
        if let Some(seg) = segs.get_mut(id) {
            seg.size = off.min(data.len()) as u64;
        }
    }
    index.recovered(header_first.unwrap_or(0));
    Ok((index, segs))
}

/// The offset of the first good record at or after `from` whose sequence is past `last`
/// (a checksum that matches by chance is one in four billion; the sequence must fit too).
fn resync(data: &[u8], from: usize, last: u64) -> Option<usize> {
    (from..data.len())
        .find(|&at| matches!(segment::decode(&data[at..]), Ok((r, _)) if r.seq > last))
}

/// Applies one record to the index and the segments' counts; the error says what was wrong.
fn replay(
    index: &mut Index<Loc>,
    segs: &mut BTreeMap<u64, Segment>,
    r: &segment::Record<'_>,
    loc: Loc,
) -> Result<(), &'static str> {
    let removed = match r.kind {
        Kind::Msg | Kind::Erased => {
            let (last, _) = index.last();
            if r.seq <= last {
                return Err("a message sequence not above the last one");
            }
            if r.kind == Kind::Erased {
                index.advance_last(r.seq, r.ts);
                return Ok(());
            }
            let size = file_msg_size(r.subject.len(), r.headers.len(), r.data.len());
            index.insert(r.seq, r.subject, r.ts, size, loc);
            if let Some(seg) = segs.get_mut(&loc.seg) {
                seg.live += 1;
            }
            return Ok(());
        }
        Kind::Delete => index
            .remove(r.seq)
            .map(|e| vec![(r.seq, e)])
            .unwrap_or_default(),
        Kind::Floor => index.compact(r.seq),
        Kind::Skip => {
            index.skip_to(r.seq);
            return Ok(());
        }
    };
    segment::forget(segs, &removed, Some(loc.seg));
    Ok(())
}
