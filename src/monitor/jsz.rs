//! `GET /jsz` and the `jetstream` section of `/varz` (nats-server's `Jsz`/`JetStreamVarz`):
//! JetStream's configuration, its use of memory and storage, stream and message counts, API
//! counters; with `accounts=true` one entry per account, with `streams=true` each stream's
//! state (and `config=true` its configuration).
//!
//! Without JetStream, `/jsz` answers `"disabled": true` with zeros and `/varz` `{}`, as the
//! reference.

use super::query;
use crate::jetstream::config::StreamConfig;
use crate::jetstream::json::{go_time, now_nanos};
use crate::jetstream::JetStream;
use crate::shared::Shared;
use serde::Serialize;

/// `config` of `/jsz` and `/varz`'s `jetstream`.
#[derive(Serialize, Default, Debug)]
pub struct JsConfig {
    max_memory: u64,
    max_storage: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    store_dir: String,
}

/// The API counters.
#[derive(Serialize, Default, Clone, Copy, Debug)]
pub struct ApiStats {
    total: u64,
    errors: u64,
}

/// `stats` of `/varz`'s `jetstream`; also the head of `/jsz`.
#[derive(Serialize, Default, Debug)]
pub struct JsStats {
    memory: u64,
    storage: u64,
    reserved_memory: u64,
    reserved_storage: u64,
    accounts: usize,
    ha_assets: u64,
    api: ApiStats,
}

/// `/varz`'s `jetstream`: `{}` when JetStream is off.
#[derive(Serialize, Default, Debug)]
pub struct JsVarz {
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<JsConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<JsStats>,
}

fn config_of(js: &JetStream) -> JsConfig {
    JsConfig {
        max_memory: js.max_memory,
        max_storage: js.max_store,
        store_dir: js.store_dir.join("jetstream").display().to_string(),
    }
}

fn stats_of(js: &JetStream) -> JsStats {
    let (memory, storage) = js.usage();
    let mut res = (0, 0);
    for acc in js.accounts() {
        let r = acc.reserved();
        res.0 += r.0;
        res.1 += r.1;
    }
    JsStats {
        memory,
        storage,
        reserved_memory: res.0,
        reserved_storage: res.1,
        accounts: js.accounts().len(),
        ha_assets: 0,
        api: ApiStats {
            total: js.api_total.load(std::sync::atomic::Ordering::Relaxed),
            errors: js.api_errors.load(std::sync::atomic::Ordering::Relaxed),
        },
    }
}

/// `/varz`'s `jetstream` section.
pub fn varz_section(js: Option<&JetStream>) -> JsVarz {
    match js {
        None => JsVarz::default(),
        Some(js) => JsVarz {
            config: Some(config_of(js)),
            stats: Some(stats_of(js)),
        },
    }
}

/// One stream in `/jsz?streams=true`.
#[derive(Serialize)]
struct StreamDetail {
    name: String,
    #[serde(serialize_with = "crate::jetstream::json::ser_time")]
    created: i64,
    cluster: ClusterInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<StreamConfig>,
    state: StateDetail,
}

#[derive(Serialize)]
struct ClusterInfo {
    leader: String,
}

#[derive(Serialize)]
struct StateDetail {
    messages: u64,
    bytes: u64,
    first_seq: u64,
    first_ts: String,
    last_seq: u64,
    last_ts: String,
    #[serde(skip_serializing_if = "is_zero")]
    num_subjects: u64,
    #[serde(skip_serializing_if = "is_zero")]
    num_deleted: u64,
    consumer_count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One account in `/jsz?accounts=true`.
#[derive(Serialize)]
struct AccountDetail {
    name: String,
    id: String,
    memory: u64,
    storage: u64,
    reserved_memory: u64,
    reserved_storage: u64,
    accounts: u64,
    ha_assets: u64,
    api: ApiStats,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stream_detail: Vec<StreamDetail>,
}

/// `/jsz`.
#[derive(Serialize)]
pub struct Jsz {
    server_id: String,
    now: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    disabled: bool,
    config: JsConfig,
    #[serde(flatten)]
    stats: JsStats,
    streams: usize,
    consumers: usize,
    messages: u64,
    bytes: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    account_details: Vec<AccountDetail>,
}

/// Builds `/jsz` for the query `q` (`accounts`, `streams`, `config`, `acc`).
pub fn jsz(shared: &Shared, js: Option<&JetStream>, q: &query::Query) -> Result<Jsz, String> {
    let accounts = query::decode_bool(q, "accounts")?;
    let streams = query::decode_bool(q, "streams")?;
    let config = query::decode_bool(q, "config")?;
    let only = Some(q.get("acc"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let Some(js) = js else {
        return Ok(Jsz {
            server_id: shared.server_id.clone(),
            now: go_time(now_nanos()),
            disabled: true,
            config: JsConfig::default(),
            stats: JsStats::default(),
            streams: 0,
            consumers: 0,
            messages: 0,
            bytes: 0,
            account_details: Vec::new(),
        });
    };
    let (mut n_streams, mut n_consumers, mut messages, mut bytes) = (0, 0, 0, 0);
    let mut details = Vec::new();
    for acc in js.accounts() {
        let list = acc.stream_list();
        n_streams += list.len();
        let mut stream_detail = Vec::new();
        for s in &list {
            let consumer_count = s.consumers.read().len();
            n_consumers += consumer_count;
            let st = s.lock();
            let state = st.store.state();
            messages += state.msgs;
            bytes += state.bytes;
            if streams {
                stream_detail.push(StreamDetail {
                    name: s.name.clone(),
                    created: s.created,
                    cluster: ClusterInfo {
                        leader: shared.server_id.clone(),
                    },
                    config: config.then(|| st.config.clone()),
                    state: StateDetail {
                        messages: state.msgs,
                        bytes: state.bytes,
                        first_seq: state.first_seq,
                        first_ts: go_time(state.first_ts),
                        last_seq: state.last_seq,
                        last_ts: go_time(state.last_ts),
                        num_subjects: state.num_subjects,
                        num_deleted: state.num_deleted,
                        consumer_count: consumer_count as u64,
                    },
                });
            }
        }
        let wanted = only.as_deref().is_none_or(|o| o == acc.account.name);
        if (accounts || streams) && wanted {
            let (memory, storage) = acc.usage();
            details.push(AccountDetail {
                name: acc.account.name.clone(),
                id: acc.account.name.clone(),
                memory,
                storage,
                // nats-server shows an account without reservations as -1 in a uint64.
                reserved_memory: u64::MAX,
                reserved_storage: u64::MAX,
                accounts: 0,
                ha_assets: 0,
                api: ApiStats {
                    total: acc.api_total.load(std::sync::atomic::Ordering::Relaxed),
                    errors: acc.api_errors.load(std::sync::atomic::Ordering::Relaxed),
                },
                stream_detail,
            });
        }
    }
    Ok(Jsz {
        server_id: shared.server_id.clone(),
        now: go_time(now_nanos()),
        disabled: false,
        config: config_of(js),
        stats: stats_of(js),
        streams: n_streams,
        consumers: n_consumers,
        messages,
        bytes,
        account_details: details,
    })
}
