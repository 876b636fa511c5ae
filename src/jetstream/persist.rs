//! What a file stream keeps besides its messages, and reading file streams back at start-up:
//! `<store_dir>/jetstream/<account>/streams/<stream>/meta.json` (the configuration and the
//! creation time, written through a temporary file and a rename) next to `msgs/` (the file
//! store's segments, `crate::store::file`).

use super::config::StreamConfig;
use super::json;
use super::stream::Stream;
use super::{JsAccount, StartError};
use crate::store::{Store, StoreError, SyncPolicy};
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl JsAccount {
    /// Reads back the file streams of this account.
    pub(super) fn recover(&self) -> Result<(), StartError> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(());
        };
        let Some(js) = self.js.upgrade() else {
            return Ok(());
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        // In name order, so that which of two conflicting streams is kept does not depend
        // on the directory's order.
        entries.sort();
        for path in entries {
            if !path.is_dir() {
                continue;
            }
            let meta = path.join("meta.json");
            let text = match std::fs::read(&meta) {
                Ok(t) => t,
                Err(e) => {
                    log::error!(
                        "JetStream: {}: no stream configuration ({e}); directory skipped",
                        meta.display()
                    );
                    continue;
                }
            };
            let Ok(meta) = serde_json::from_slice::<Meta>(&text) else {
                log::error!(
                    "JetStream: {}: not a stream's meta.json; stream skipped",
                    meta.display()
                );
                continue;
            };
            // The file is checked as a request would be: a configuration the API would
            // refuse (an edited file, subjects over the API's or another stream's) is not
            // served.
            let dir_name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let problem = match meta.config.clone().normalize() {
                Ok(c) if c.name != dir_name => Some("its name is not its directory's".to_string()),
                Ok(c) if self.check_overlap(&c).is_err() => {
                    Some("its subjects overlap another stream's or the API's".to_string())
                }
                Ok(_) => None,
                Err(e) => Some(e.description.into_owned()),
            };
            if let Some(why) = problem {
                log::error!("JetStream: {}: stream skipped: {why}", path.display());
                continue;
            }
            let config = meta.config;
            let store = match open_file_store(&path.join("msgs"), config.limits(), js.sync) {
                Ok(s) => s,
                Err(e) => {
                    log::error!(
                        "JetStream: stream {}: could not open its store: {e}",
                        config.name
                    );
                    continue;
                }
            };
            let created = json::parse_go_time(&meta.created).unwrap_or(0);
            let state = store.state();
            log::info!(
                "  Restored {} messages for stream '{} > {}'",
                state.msgs,
                self.account.name,
                config.name
            );
            let stream = Arc::new(Stream::new(
                config,
                store,
                created,
                Some(path),
                js.usage.clone(),
            ));
            self.add_stream(stream);
        }
        Ok(())
    }
}

/// Opens (or creates) the file store of a stream.
pub(super) fn open_file_store(
    dir: &Path,
    limits: crate::store::Limits,
    sync: SyncPolicy,
) -> Result<Box<dyn Store>, StoreError> {
    Ok(Box::new(crate::store::FileStore::open(dir, limits, sync)?))
}

/// `meta.json`: what a file stream needs besides its messages.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Meta {
    config: StreamConfig,
    created: String,
}

/// Writes `dir/meta.json` through a temporary file and a rename, so that a crash leaves the
/// old or the new one, never half of one.
pub(super) fn write_meta(dir: &Path, config: &StreamConfig, created: i64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let meta = Meta {
        config: config.clone(),
        created: json::go_time(created),
    };
    let tmp = dir.join("meta.json.tmp");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(&meta).unwrap_or_default())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join("meta.json"))
}
