//! A durable consumer of a file stream on disk: `<stream dir>/obs/<consumer>/meta.json`
//! (its configuration and creation time) and `state.json` (delivered, ack floor, pending
//! deliveries, redelivery counts), each replaced through a temporary file and a rename, so
//! that a crash leaves the old or the new one. The state is written by the consumer's thread
//! at most every 100 ms when it changed, and before an ack with a reply is answered (what a
//! client was told is recorded survives a `kill -9`); a delivery not written yet is
//! delivered again after a restart, as at-least-once delivery allows.

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

/// Reads a consumer directory back: its configuration, creation time and state (a missing
/// or unreadable state starts it afresh, with a log line).
pub(crate) fn read(dir: &Path) -> Result<(ConsumerConfig, i64, Option<SavedState>), String> {
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
    Ok((meta.config, created, state))
}
