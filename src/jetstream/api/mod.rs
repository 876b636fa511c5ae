//! The JetStream API (`$JS.API.<request>`, JSON in and out; nats-server's `jsApi*Request`
//! handlers): what each request takes, the checks in nats-server's order, and the
//! response with its `type`, exactly as nats-server 2.9.10 writes it (field order,
//! defaults, errors: see `tests/jetstream_reference.rs`, which compares the two servers).
//!
//! Requests whose subject names no known request, or lack a stream name, get no answer
//! (nats-server's catch-all subscription answers them with silence, too).

mod consumers;
mod manage;
mod messages;

use super::config::StreamConfig;
use super::errors::{self, ApiError};
use super::json::to_go_json;
use super::stream::Stream;
use super::JsAccount;
use crate::client::{ServiceMsg, ServiceReply};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;

/// `STREAM.LIST`'s page size.
pub(super) const LIST_LIMIT: usize = 256;
/// `STREAM.NAMES`'s page size.
pub(super) const NAMES_LIMIT: usize = 1024;
/// `STREAM.INFO`'s page size for `subjects_filter`.
const SUBJECTS_LIMIT: usize = 100_000;

/// Handles one API request, pushing the response (if any) onto `replies`.
pub fn handle(
    acc: &std::sync::Arc<JsAccount>,
    msg: &ServiceMsg<'_>,
    replies: &mut Vec<ServiceReply>,
) {
    let Some(request) = msg.subject.strip_prefix(b"$JS.API.") else {
        return;
    };
    let Ok(request) = std::str::from_utf8(request) else {
        return;
    };
    let tokens: Vec<&str> = request.split('.').collect();
    let body = msg.data;
    if let ["CONSUMER", "MSG", "NEXT", stream, consumer] = tokens.as_slice() {
        // Not an API call: a pull request for the consumer (not counted).
        consumers::next(acc, stream, consumer, msg, replies);
        return;
    }
    let answer: Option<Answer> = match tokens.as_slice() {
        ["INFO"] => Some(account_info(acc)),
        ["STREAM", "CREATE", name] => Some(manage::stream_create(acc, name, body)),
        ["STREAM", "UPDATE", name] => Some(manage::stream_update(acc, name, body)),
        ["STREAM", "INFO", name] => Some(stream_info(acc, name, body)),
        ["STREAM", "LIST"] => Some(manage::stream_list(acc, body)),
        ["STREAM", "NAMES"] => Some(manage::stream_names(acc, body)),
        ["STREAM", "DELETE", name] => Some(manage::stream_delete(acc, name)),
        ["STREAM", "PURGE", name] => Some(manage::stream_purge(acc, name, body)),
        ["STREAM", "MSG", "GET", name] => Some(messages::msg_get(acc, name, body)),
        ["STREAM", "MSG", "DELETE", name] => Some(messages::msg_delete(acc, name, body)),
        ["DIRECT", "GET", name] => messages::direct_get(acc, name, None, body),
        ["CONSUMER", "CREATE", ..] | ["CONSUMER", "DURABLE", "CREATE", ..] => {
            consumers::create(acc, &tokens, body)
        }
        ["CONSUMER", "INFO", stream, name] => Some(consumers::info(acc, stream, name)),
        ["CONSUMER", "DELETE", stream, name] => Some(consumers::delete(acc, stream, name)),
        ["CONSUMER", "NAMES", stream] => Some(consumers::page(acc, stream, body, true)),
        ["CONSUMER", "LIST", stream] => Some(consumers::page(acc, stream, body, false)),
        ["DIRECT", "GET", name, ..] => {
            // `$JS.API.DIRECT.GET.<stream>.<subject>`: the last message on that subject.
            let prefix = format!("DIRECT.GET.{name}.");
            let subject = &request[prefix.len()..];
            messages::direct_get(acc, name, Some(subject), body)
        }
        _ => None,
    };
    let Some(answer) = answer else { return };
    let js = acc.js.upgrade();
    acc.api_total.fetch_add(1, Ordering::Relaxed);
    if let Some(js) = &js {
        js.api_total.fetch_add(1, Ordering::Relaxed);
    }
    if answer.error {
        acc.api_errors.fetch_add(1, Ordering::Relaxed);
        if let Some(js) = &js {
            js.api_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    if let Some(reply) = msg.reply {
        replies.push(acc.reply(reply, answer.headers, answer.body));
    }
}

/// A response: its body, its headers (direct gets), and whether it reports an error.
pub(super) struct Answer {
    pub(super) body: Vec<u8>,
    pub(super) headers: Vec<u8>,
    pub(super) error: bool,
}

impl Answer {
    pub(super) fn json<T: Serialize>(value: &T, error: bool) -> Answer {
        Answer {
            body: to_go_json(value),
            headers: Vec::new(),
            error,
        }
    }
}

/// `{"type":T,"error":{...}}`.
pub(super) fn error_answer(kind: &str, e: &ApiError) -> Answer {
    #[derive(Serialize)]
    struct R<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        error: &'a ApiError,
    }
    Answer::json(&R { kind, error: e }, true)
}

/// Reads a request body as Go's `json.Unmarshal` would into `T`: empty is "invalid JSON"
/// where the request needs a body.
///
/// Go leaves a field alone when the JSON has `null` for it (clients send `"subject":null`),
/// so nulls inside objects are dropped before the fields are read.
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if crate::protocol::json_nesting_depth(body) > MAX_NESTING {
        // Reading deeper JSON recurses as deep: a reader thread's stack is small.
        return Err(errors::INVALID_JSON);
    }
    let mut value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        log::debug!("JetStream API: invalid JSON: {e}");
        errors::INVALID_JSON
    })?;
    if value.is_null() {
        // `null` leaves a Go struct as it was: all defaults.
        value = serde_json::Value::Object(Default::default());
    }
    if !value.is_object() {
        // Go cannot read an array or a number into a struct.
        return Err(errors::INVALID_JSON);
    }
    drop_nulls(&mut value);
    serde_json::from_value(value).map_err(|e| {
        log::debug!("JetStream API: invalid JSON: {e}");
        errors::INVALID_JSON
    })
}

/// Deepest JSON nesting the API reads (nats-server's requests nest three or four deep).
const MAX_NESTING: usize = 32;

/// Removes `null` members from every object in `v`.
fn drop_nulls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|_, x| !x.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// A body that may be empty (then `T::default()`).
pub(super) fn parse_optional<T: serde::de::DeserializeOwned + Default>(
    body: &[u8],
) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse(body)
}

// ---- account info -------------------------------------------------------------------

#[derive(Serialize)]
struct Limits {
    max_memory: i64,
    max_storage: i64,
    max_streams: i64,
    max_consumers: i64,
    max_ack_pending: i64,
    memory_max_stream_bytes: i64,
    storage_max_stream_bytes: i64,
    max_bytes_required: bool,
}

const UNLIMITED: Limits = Limits {
    max_memory: -1,
    max_storage: -1,
    max_streams: -1,
    max_consumers: -1,
    max_ack_pending: -1,
    memory_max_stream_bytes: -1,
    storage_max_stream_bytes: -1,
    max_bytes_required: false,
};

#[derive(Serialize)]
struct ApiStats {
    total: u64,
    errors: u64,
}

/// `$JS.API.INFO`: the account's usage, limits and API counters.
fn account_info(acc: &JsAccount) -> Answer {
    #[derive(Serialize)]
    struct R {
        #[serde(rename = "type")]
        kind: &'static str,
        memory: u64,
        storage: u64,
        // Not in 2.9.10's reply; nats-server 2.10 added them and newer clients (async-nats
        // 0.51) cannot read account info without them.
        reserved_memory: u64,
        reserved_storage: u64,
        streams: usize,
        consumers: usize,
        limits: Limits,
        api: ApiStats,
    }
    let (memory, storage) = acc.usage();
    let (reserved_memory, reserved_storage) = acc.reserved();
    Answer::json(
        &R {
            kind: "io.nats.jetstream.api.v1.account_info_response",
            memory,
            storage,
            reserved_memory,
            reserved_storage,
            streams: acc.streams.read().len(),
            consumers: acc.consumer_count(),
            limits: UNLIMITED,
            api: ApiStats {
                total: acc.api_total.load(Ordering::Relaxed),
                errors: acc.api_errors.load(Ordering::Relaxed),
            },
        },
        false,
    )
}

// ---- stream info ----------------------------------------------------------------------

/// A stream's `state` in API responses (nats-server's `StreamState`).
#[derive(Serialize)]
pub struct StateJson {
    messages: u64,
    bytes: u64,
    first_seq: u64,
    #[serde(serialize_with = "super::json::ser_time")]
    first_ts: i64,
    last_seq: u64,
    #[serde(serialize_with = "super::json::ser_time")]
    last_ts: i64,
    #[serde(skip_serializing_if = "is_zero")]
    num_subjects: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    subjects: Option<std::collections::BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "is_zero")]
    num_deleted: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    deleted: Vec<u64>,
    consumer_count: usize,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Options of `STREAM.INFO`.
#[derive(Deserialize, Default)]
pub(super) struct InfoRequest {
    #[serde(default)]
    deleted_details: bool,
    #[serde(default)]
    subjects_filter: String,
    #[serde(default)]
    offset: usize,
}

/// `config`, `created`, `state` of a stream, plus the subjects page when asked for.
#[derive(Serialize)]
pub struct StreamInfo {
    pub(super) config: StreamConfig,
    #[serde(serialize_with = "super::json::ser_time")]
    created: i64,
    state: StateJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) mirror: Option<SourceInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) sources: Vec<SourceInfo>,
}

/// A mirror's or source's progress (`lag`, `active`), as nats-server reports it: `active`
/// is nanoseconds since the origin was last heard from (0: an origin on this server is
/// always current), -1 with an `error` when the origin does not exist.
#[derive(Serialize)]
pub(super) struct SourceInfo {
    name: String,
    lag: u64,
    active: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ApiError>,
}

/// The info of `stream`; with `req`'s subjects filter, also the total of matching subjects.
pub(super) fn info_of(acc: &JsAccount, stream: &Stream, req: &InfoRequest) -> (StreamInfo, usize) {
    let st = stream.lock();
    let s = st.store.state();
    let mut total = 0;
    let subjects = if req.subjects_filter.is_empty() {
        None
    } else {
        let mut all = st.store.subjects(req.subjects_filter.as_bytes());
        all.sort();
        total = all.len();
        Some(
            all.into_iter()
                .skip(req.offset)
                .take(SUBJECTS_LIMIT)
                .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
                .collect(),
        )
    };
    let deleted = if req.deleted_details {
        st.store.deleted()
    } else {
        Vec::new()
    };
    let config = st.config.clone();
    let state = StateJson {
        messages: s.msgs,
        bytes: s.bytes,
        first_seq: s.first_seq,
        first_ts: s.first_ts,
        last_seq: s.last_seq,
        last_ts: s.last_ts,
        num_subjects: s.num_subjects,
        subjects,
        num_deleted: s.num_deleted,
        deleted,
        consumer_count: stream.consumers.read().len(),
    };
    drop(st);
    let lag_from = |origin: &str, have: u64| -> SourceInfo {
        match acc.stream(origin) {
            Some(o) => SourceInfo {
                name: origin.to_string(),
                lag: o.lock().store.state().last_seq.saturating_sub(have),
                active: 0,
                error: None,
            },
            None => SourceInfo {
                name: origin.to_string(),
                lag: 0,
                active: -1,
                error: Some(errors::STREAM_NOT_FOUND),
            },
        }
    };
    let mirror = config
        .mirror
        .as_ref()
        .map(|m| lag_from(&m.name, s.last_seq));
    // Sources are copied as their origins store: nothing lags.
    let sources = config
        .sources
        .iter()
        .map(|x| SourceInfo {
            lag: 0,
            ..lag_from(&x.name, u64::MAX)
        })
        .collect();
    (
        StreamInfo {
            config,
            created: stream.created,
            state,
            mirror,
            sources,
        },
        total,
    )
}

fn stream_info(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_info_response";
    #[derive(Serialize)]
    struct Err<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        error: &'a ApiError,
        total: usize,
        offset: usize,
        limit: usize,
    }
    let fail = |e: &ApiError| {
        Answer::json(
            &Err {
                kind: T,
                error: e,
                total: 0,
                offset: 0,
                limit: 0,
            },
            true,
        )
    };
    let req: InfoRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let Some(stream) = acc.stream(name) else {
        return fail(&errors::STREAM_NOT_FOUND);
    };
    let (info, total) = info_of(acc, &stream, &req);
    #[derive(Serialize)]
    struct R {
        #[serde(rename = "type")]
        kind: &'static str,
        total: usize,
        offset: usize,
        limit: usize,
        #[serde(flatten)]
        info: StreamInfo,
    }
    let paged = !req.subjects_filter.is_empty();
    Answer::json(
        &R {
            kind: T,
            total,
            offset: if paged { req.offset } else { 0 },
            limit: if paged { SUBJECTS_LIMIT } else { 0 },
            info,
        },
        false,
    )
}
