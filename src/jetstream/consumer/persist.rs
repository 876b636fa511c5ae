//! A durable consumer of a file stream on disk, in `<stream dir>/obs/<consumer>/`:
//! - `meta.json`: its configuration and creation time;
//! - `state.json`: a snapshot of its state (delivered, ack floor, pending deliveries,
//!   redelivery counts), replaced through a temporary file and a rename, so that a crash
//!   leaves the old or the new one;
//! - `journal`: what happened since that snapshot, appended by the consumer's thread in one
//!   `write` per round, before the round's messages and ack answers go out: each delivery
//!   (`D`: stream seq, consumer seq, deliveries, time) and each ack (`A`: stream seq,
//!   consumer seq), little-endian. A snapshot (every second, or once the journal passes
//!   1 MiB) empties it.
//!
//! At a restart the snapshot is read and the journal replayed on it, so what was delivered
//! and what was acknowledged before a `kill -9` is known exactly: acked stays acked,
//! delivered and not acked is delivered again after its ack wait. A record cut short at
//! the end (a write that did not finish) is ignored. The journal is in the operating
//! system's hands at once (no buffer in beaver), so a process crash loses none of it; it is
//! not synced, so a power loss may lose its last records (those deliveries and acks happen
//! again).

use super::config::ConsumerConfig;
use super::SequenceInfo;
use crate::jetstream::json;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// What `state.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedState {
    /// Last delivered (consumer and stream sequences).
    pub delivered: SequenceInfo,
    /// Ack floor.
    pub ack_floor: SequenceInfo,
    /// Pending deliveries: (stream seq, first consumer seq, delivered at, ns).
    #[serde(default)]
    pub pending: Vec<(u64, u64, i64)>,
    /// Redeliveries: (stream seq, count).
    #[serde(default)]
    pub redelivered: Vec<(u64, u64)>,
}

/// One journal record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A delivery: stream seq, consumer seq, deliveries so far (1 for a first), time (ns).
    Delivered(u64, u64, u64, i64),
    /// An ack of stream seq, delivered as consumer seq.
    Acked(u64, u64),
}

impl Entry {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Entry::Delivered(s, d, dc, ts) => {
                out.push(b'D');
                for v in [s, d, dc, ts as u64] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Entry::Acked(s, d) => {
                out.push(b'A');
                out.extend_from_slice(&s.to_le_bytes());
                out.extend_from_slice(&d.to_le_bytes());
            }
        }
    }

    /// Reads the records of `bytes`, stopping at the first incomplete or unknown one.
    pub fn decode_all(bytes: &[u8]) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut at = 0;
        let word = |i: usize| -> Option<u64> {
            bytes
                .get(i..i + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
        };
        while at < bytes.len() {
            match bytes[at] {
                b'D' => {
                    let (Some(s), Some(d), Some(dc), Some(ts)) =
                        (word(at + 1), word(at + 9), word(at + 17), word(at + 25))
                    else {
                        break;
                    };
                    out.push(Entry::Delivered(s, d, dc, ts as i64));
                    at += 33;
                }
                b'A' => {
                    let (Some(s), Some(d)) = (word(at + 1), word(at + 9)) else {
                        break;
                    };
                    out.push(Entry::Acked(s, d));
                    at += 17;
                }
                _ => break,
            }
        }
        out
    }
}

/// Journal size after which the thread takes a snapshot.
pub(crate) const JOURNAL_MAX: u64 = 1 << 20;

/// The journal file, open for appending (the consumer's thread owns it).
pub(crate) struct Journal {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
    /// Bytes written since the last snapshot.
    pub(crate) len: u64,
    buf: Vec<u8>,
}

impl Journal {
    /// The journal of the consumer in `dir` (opened on first append).
    pub(crate) fn new(dir: &Path) -> Journal {
        let path = dir.join("journal");
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Journal {
            path,
            file: None,
            len,
            buf: Vec::new(),
        }
    }

    /// Appends `entries` in one write.
    pub(crate) fn append(&mut self, entries: &[Entry]) -> std::io::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        for e in entries {
            e.encode(&mut self.buf);
        }
        if self.file.is_none() {
            self.file = Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)?,
            );
        }
        if let Some(f) = &mut self.file {
            f.write_all(&self.buf)?;
        }
        self.len += self.buf.len() as u64;
        Ok(())
    }

    /// Empties it (a snapshot now holds what it said).
    pub(crate) fn clear(&mut self) -> std::io::Result<()> {
        self.len = 0;
        match &self.file {
            Some(f) => f.set_len(0),
            None => match std::fs::OpenOptions::new().write(true).open(&self.path) {
                Ok(f) => f.set_len(0),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            },
        }
    }
}

/// What `meta.json` holds.
#[derive(Serialize, Deserialize)]
pub(crate) struct Meta {
    pub(crate) config: ConsumerConfig,
    pub(crate) created: String,
}

fn replace(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{name}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
    }
    std::fs::rename(&tmp, dir.join(name))
}

/// Writes `meta.json`.
pub(crate) fn write_meta(dir: &Path, config: &ConsumerConfig, created: i64) -> std::io::Result<()> {
    let meta = Meta {
        config: config.clone(),
        created: json::go_time(created),
    };
    replace(
        dir,
        "meta.json",
        &serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    )
}

/// Writes `state.json`.
pub(crate) fn write_state(dir: &Path, state: &SavedState) -> std::io::Result<()> {
    replace(
        dir,
        "state.json",
        &serde_json::to_vec(state).unwrap_or_default(),
    )
}

/// What a consumer directory holds: configuration, creation time, snapshot, journal.
pub(crate) type Recovered = (ConsumerConfig, i64, Option<SavedState>, Vec<Entry>);

/// Reads a consumer directory back: its configuration, creation time, state snapshot and
/// journal (a missing or unreadable snapshot starts it afresh, with a log line).
pub(crate) fn read(dir: &Path) -> Result<Recovered, String> {
    let text = std::fs::read(dir.join("meta.json")).map_err(|e| format!("no meta.json ({e})"))?;
    let meta: Meta =
        serde_json::from_slice(&text).map_err(|e| format!("meta.json is not a consumer's: {e}"))?;
    let created = json::parse_go_time(&meta.created).unwrap_or(0);
    let state = match std::fs::read(dir.join("state.json")) {
        Ok(t) => match serde_json::from_slice::<SavedState>(&t) {
            Ok(s) => Some(s),
            Err(e) => {
                log::error!(
                    "JetStream: {}: state.json unreadable ({e}); starting afresh",
                    dir.display()
                );
                None
            }
        },
        Err(_) => None,
    };
    let journal = std::fs::read(dir.join("journal"))
        .map(|b| Entry::decode_all(&b))
        .unwrap_or_default();
    Ok((meta.config, created, state, journal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_records_round_trip_and_a_torn_tail_is_dropped() {
        let entries = [
            Entry::Delivered(5, 1, 1, 1_700_000_000_000_000_000),
            Entry::Acked(5, 1),
            Entry::Delivered(6, 2, 3, -1),
        ];
        let mut buf = Vec::new();
        for e in &entries {
            e.encode(&mut buf);
        }
        assert_eq!(Entry::decode_all(&buf), entries);
        assert_eq!(Entry::decode_all(&buf[..buf.len() - 3]), entries[..2]);
        assert_eq!(Entry::decode_all(b"Zjunk"), []);
    }
}
