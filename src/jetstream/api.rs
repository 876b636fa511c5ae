//! The JetStream API (`$JS.API.<request>`, JSON in and out; nats-server's `jsApi*Request`
//! handlers): what each request takes, the checks in nats-server's order, and the
//! response with its `type`, exactly as nats-server 2.9.10 writes it (field order,
//! defaults, errors: see `tests/jetstream_reference.rs`, which compares the two servers).
//!
//! Requests whose subject names no known request, or lack a stream name, get no answer
//! (nats-server's catch-all subscription answers them with silence, too).

use super::config::{subjects_overlap, StreamConfig};
use super::errors::{self, ApiError};
use super::headers;
use super::json::{go_time, to_go_json};
use super::stream::{store_error, Stream};
use super::JsAccount;
use crate::client::{ServiceMsg, ServiceReply};
use crate::store::{Purge, StoreError, StoredMsg};
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `STREAM.LIST`'s page size.
const LIST_LIMIT: usize = 256;
/// `STREAM.NAMES`'s page size.
const NAMES_LIMIT: usize = 1024;
/// `STREAM.INFO`'s page size for `subjects_filter`.
const SUBJECTS_LIMIT: usize = 100_000;

/// Handles one API request, pushing the response (if any) onto `replies`.
pub fn handle(acc: &JsAccount, msg: &ServiceMsg<'_>, replies: &mut Vec<ServiceReply>) {
    let Some(request) = msg.subject.strip_prefix(b"$JS.API.") else {
        return;
    };
    let Ok(request) = std::str::from_utf8(request) else {
        return;
    };
    let tokens: Vec<&str> = request.split('.').collect();
    let body = msg.data;
    let answer: Option<Answer> = match tokens.as_slice() {
        ["INFO"] => Some(account_info(acc)),
        ["STREAM", "CREATE", name] => Some(stream_create(acc, name, body)),
        ["STREAM", "UPDATE", name] => Some(stream_update(acc, name, body)),
        ["STREAM", "INFO", name] => Some(stream_info(acc, name, body)),
        ["STREAM", "LIST"] => Some(stream_list(acc, body)),
        ["STREAM", "NAMES"] => Some(stream_names(acc, body)),
        ["STREAM", "DELETE", name] => Some(stream_delete(acc, name)),
        ["STREAM", "PURGE", name] => Some(stream_purge(acc, name, body)),
        ["STREAM", "MSG", "GET", name] => Some(msg_get(acc, name, body)),
        ["STREAM", "MSG", "DELETE", name] => Some(msg_delete(acc, name, body)),
        ["DIRECT", "GET", name] => direct_get(acc, name, None, body),
        ["DIRECT", "GET", name, ..] => {
            // `$JS.API.DIRECT.GET.<stream>.<subject>`: the last message on that subject.
            let prefix = format!("DIRECT.GET.{name}.");
            let subject = &request[prefix.len()..];
            direct_get(acc, name, Some(subject), body)
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
struct Answer {
    body: Vec<u8>,
    headers: Vec<u8>,
    error: bool,
}

impl Answer {
    fn json<T: Serialize>(value: &T, error: bool) -> Answer {
        Answer {
            body: to_go_json(value),
            headers: Vec::new(),
            error,
        }
    }
}

/// `{"type":T,"error":{...}}`.
fn error_answer(kind: &str, e: &ApiError) -> Answer {
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
    let mut value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        log::debug!("JetStream API: invalid JSON: {e}");
        errors::INVALID_JSON
    })?;
    if value.is_null() {
        // `null` leaves a Go struct as it was: all defaults.
        value = serde_json::Value::Object(Default::default());
    }
    drop_nulls(&mut value);
    serde_json::from_value(value).map_err(|e| {
        log::debug!("JetStream API: invalid JSON: {e}");
        errors::INVALID_JSON
    })
}

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
fn parse_optional<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
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
            consumers: 0,
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
struct InfoRequest {
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
    config: StreamConfig,
    #[serde(serialize_with = "super::json::ser_time")]
    created: i64,
    state: StateJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    mirror: Option<SourceInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sources: Vec<SourceInfo>,
}

/// A mirror's or source's progress (`lag`, `active`), as nats-server reports it.
#[derive(Serialize)]
struct SourceInfo {
    name: String,
    lag: u64,
    active: i64,
}

/// The info of `stream`; with `req`'s subjects filter, also the total of matching subjects.
fn info_of(acc: &JsAccount, stream: &Stream, req: &InfoRequest) -> (StreamInfo, usize) {
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
        consumer_count: 0,
    };
    drop(st);
    let lag_from = |origin: &str, have: u64| -> SourceInfo {
        let last = acc
            .stream(origin)
            .map(|o| o.lock().store.state().last_seq)
            .unwrap_or(0);
        SourceInfo {
            name: origin.to_string(),
            lag: last.saturating_sub(have),
            active: -1,
        }
    };
    let mirror = config
        .mirror
        .as_ref()
        .map(|m| lag_from(&m.name, s.last_seq));
    let sources = config
        .sources
        .iter()
        .map(|x| lag_from(&x.name, 0))
        .map(|mut i| {
            i.lag = 0;
            i
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

// ---- create, update, delete -----------------------------------------------------------

/// Checks a configuration against the other streams of the account: subjects must not
/// overlap theirs.
///
/// Then the API's own subjects (nats-server checks those after the other streams).
fn check_overlap(acc: &JsAccount, config: &StreamConfig) -> Result<(), ApiError> {
    for other in acc.stream_list() {
        if other.name == config.name {
            continue;
        }
        let theirs = other.config().subjects;
        for a in &config.subjects {
            if theirs.iter().any(|b| subjects_overlap(a, b)) {
                return Err(errors::SUBJECT_OVERLAP);
            }
        }
    }
    if config
        .subjects
        .iter()
        .any(|s| subjects_overlap(s, "$JS.API.>"))
    {
        return Err(errors::invalid_config(
            "subjects overlap with jetstream api",
        ));
    }
    Ok(())
}

fn stream_create(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_create_response";
    let config: StreamConfig = match parse(body) {
        Ok(c) => c,
        Err(e) => return error_answer(T, &e),
    };
    if config.name != name {
        return error_answer(T, &errors::STREAM_MISMATCH);
    }
    if config.sealed {
        return error_answer(
            T,
            &errors::invalid_config("stream configuration for create can not be sealed"),
        );
    }
    let config = match config.normalize() {
        Ok(c) => c,
        Err(e) => return error_answer(T, &e),
    };
    if config.num_replicas > 1 {
        return error_answer(T, &errors::REPLICAS_NOT_SUPPORTED);
    }
    // One create at a time per account, so that two racing creates of overlapping streams
    // cannot both pass the overlap check.
    let _creating = acc.creating.lock();
    if let Some(existing) = acc.stream(name) {
        if existing.config() != config {
            return error_answer(T, &errors::STREAM_NAME_EXIST);
        }
        return created_answer(acc, &existing, T, true);
    }
    if let Err(e) = check_overlap(acc, &config) {
        return error_answer(T, &e);
    }
    match acc.create_stream(config) {
        Ok(stream) => created_answer(acc, &stream, T, true),
        Err(e) => error_answer(T, &e),
    }
}

/// `{"type":T,"config":..,"created":..,"state":..[,"did_create":true]}`.
fn created_answer(
    acc: &JsAccount,
    stream: &Stream,
    kind: &'static str,
    did_create: bool,
) -> Answer {
    #[derive(Serialize)]
    struct R {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(flatten)]
        info: StreamInfo,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        did_create: bool,
    }
    let (mut info, _) = info_of(acc, stream, &InfoRequest::default());
    // nats-server's create and update responses carry no mirror or source progress yet.
    info.mirror = None;
    info.sources.clear();
    Answer::json(
        &R {
            kind,
            info,
            did_create,
        },
        false,
    )
}

fn stream_update(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_update_response";
    let config: StreamConfig = match parse(body) {
        Ok(c) => c,
        Err(e) => return error_answer(T, &e),
    };
    if config.name != name {
        return error_answer(T, &errors::STREAM_MISMATCH);
    }
    let mut config = match config.normalize() {
        Ok(c) => c,
        Err(e) => return error_answer(T, &e),
    };
    let _creating = acc.creating.lock();
    let Some(stream) = acc.stream(name) else {
        return error_answer(T, &errors::STREAM_NOT_FOUND);
    };
    let old = stream.config();
    if let Err(e) = check_update(&old, &mut config) {
        return error_answer(T, &e);
    }
    if let Err(e) = check_overlap(acc, &config) {
        return error_answer(T, &e);
    }
    match acc.update_stream(&stream, config) {
        Ok(()) => created_answer(acc, &stream, T, false),
        Err(e) => error_answer(T, &e),
    }
}

/// What an update may not change (nats-server's `stream.update` checks, its words).
fn check_update(old: &StreamConfig, new: &mut StreamConfig) -> Result<(), ApiError> {
    let no = |what: &str| {
        Err(errors::invalid_config(format!(
            "stream configuration update can not {what}"
        )))
    };
    if new.storage != old.storage {
        return no("change storage type");
    }
    if new.retention != old.retention {
        return no("change retention policy");
    }
    if old.sealed && !new.sealed {
        return no("unseal a sealed stream");
    }
    if old.deny_delete && !new.deny_delete {
        return no("cancel deny message deletes");
    }
    if old.deny_purge && !new.deny_purge {
        return no("cancel deny purge");
    }
    if old.mirror != new.mirror {
        return Err(errors::MIRROR_NOT_UPDATABLE);
    }
    if old.template_owner != new.template_owner {
        return no("change template owner");
    }
    if new.sealed {
        // Sealing also stops deletes and purges, and new messages (nats-server sets these).
        new.discard = super::config::Discard::New;
        new.deny_delete = true;
        new.deny_purge = true;
    }
    Ok(())
}

fn stream_delete(acc: &JsAccount, name: &str) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_delete_response";
    let _creating = acc.creating.lock();
    match acc.delete_stream(name) {
        Ok(()) => success(T),
        Err(e) => error_answer(T, &e),
    }
}

/// `{"type":T,"success":true}`.
fn success(kind: &'static str) -> Answer {
    #[derive(Serialize)]
    struct R {
        #[serde(rename = "type")]
        kind: &'static str,
        success: bool,
    }
    Answer::json(
        &R {
            kind,
            success: true,
        },
        false,
    )
}

// ---- list and names -------------------------------------------------------------------

/// `offset` and `subject` of `STREAM.LIST`/`STREAM.NAMES`.
#[derive(Deserialize, Default)]
struct ListRequest {
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    subject: String,
}

/// The streams in name order, those capturing `subject` (or any, for `>`... any overlap)
/// when a subject is given.
fn listed(acc: &JsAccount, subject: &str) -> Vec<Arc<Stream>> {
    acc.stream_list()
        .into_iter()
        .filter(|s| {
            subject.is_empty()
                || s.config()
                    .subjects
                    .iter()
                    .any(|x| subjects_overlap(x, subject))
        })
        .collect()
}

fn stream_list(acc: &JsAccount, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_list_response";
    #[derive(Serialize)]
    struct R<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ApiError>,
        total: usize,
        offset: usize,
        limit: usize,
        streams: Option<Vec<StreamInfo>>,
    }
    let req: ListRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => {
            return Answer::json(
                &R {
                    kind: T,
                    error: Some(&e),
                    total: 0,
                    offset: 0,
                    limit: 0,
                    streams: None,
                },
                true,
            )
        }
    };
    let all = listed(acc, &req.subject);
    let offset = req.offset.min(all.len());
    let streams = all[offset..]
        .iter()
        .take(LIST_LIMIT)
        .map(|s| info_of(acc, s, &InfoRequest::default()).0)
        .collect();
    Answer::json(
        &R {
            kind: T,
            error: None,
            total: all.len(),
            offset,
            limit: LIST_LIMIT,
            streams: Some(streams),
        },
        false,
    )
}

fn stream_names(acc: &JsAccount, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_names_response";
    #[derive(Serialize)]
    struct R<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ApiError>,
        total: usize,
        offset: usize,
        limit: usize,
        streams: Option<Vec<String>>,
    }
    let req: ListRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => {
            return Answer::json(
                &R {
                    kind: T,
                    error: Some(&e),
                    total: 0,
                    offset: 0,
                    limit: 0,
                    streams: None,
                },
                true,
            )
        }
    };
    let all = listed(acc, &req.subject);
    let offset = req.offset.min(all.len());
    let names: Vec<String> = all[offset..]
        .iter()
        .take(NAMES_LIMIT)
        .map(|s| s.name.clone())
        .collect();
    Answer::json(
        &R {
            kind: T,
            error: None,
            total: all.len(),
            offset,
            limit: NAMES_LIMIT,
            // nats-server writes `null` when nothing matched a subject filter.
            streams: if names.is_empty() && !req.subject.is_empty() {
                None
            } else {
                Some(names)
            },
        },
        false,
    )
}

// ---- purge ----------------------------------------------------------------------------

#[derive(Deserialize, Default)]
struct PurgeRequest {
    #[serde(default)]
    filter: String,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    keep: u64,
}

fn stream_purge(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_purge_response";
    #[derive(Serialize)]
    struct R<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ApiError>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        success: bool,
        purged: u64,
    }
    let fail = |e: &ApiError| {
        Answer::json(
            &R {
                kind: T,
                error: Some(e),
                success: false,
                purged: 0,
            },
            true,
        )
    };
    let req: PurgeRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let Some(stream) = acc.stream(name) else {
        return fail(&errors::STREAM_NOT_FOUND);
    };
    let mut st = stream.lock();
    if st.config.sealed {
        return fail(&errors::SEALED);
    }
    if st.config.deny_purge {
        return fail(&errors::PURGE_DENIED);
    }
    if req.seq > 0 && req.keep > 0 {
        return fail(&errors::BAD_REQUEST);
    }
    let purge = Purge {
        filter: (!req.filter.is_empty()).then(|| Bytes::from(req.filter.clone())),
        up_to: (req.seq > 0).then_some(req.seq),
        keep: (req.keep > 0).then_some(req.keep),
    };
    match st.store.purge(&purge) {
        Ok(purged) => Answer::json(
            &R {
                kind: T,
                error: None,
                success: true,
                purged,
            },
            false,
        ),
        Err(e) => fail(&errors::general(e)),
    }
}

// ---- messages -------------------------------------------------------------------------

/// `STREAM.MSG.GET` and `DIRECT.GET`'s request.
#[derive(Deserialize, Default)]
struct GetRequest {
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    last_by_subj: String,
    #[serde(default)]
    next_by_subj: String,
}

/// The message `req` asks for; `Err(None)` for a request that asks for nothing or two
/// things at once (bad request).
fn lookup(stream: &Stream, req: &GetRequest) -> Result<StoredMsg, Option<StoreError>> {
    let st = stream.lock();
    match (
        req.seq,
        req.last_by_subj.is_empty(),
        req.next_by_subj.is_empty(),
    ) {
        (0, true, true) => Err(None),
        (_, false, false) => Err(None),
        (s, false, true) if s > 0 => Err(None),
        (0, false, true) => st
            .store
            .load_last(req.last_by_subj.as_bytes())
            .map_err(Some),
        (s, true, false) => st
            .store
            .load_next(Some(req.next_by_subj.as_bytes()), s.max(1))
            .map_err(Some),
        (s, _, _) => st.store.load(s).map_err(Some),
    }
}

fn msg_get(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_msg_get_response";
    let req: GetRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => return error_answer(T, &e),
    };
    let Some(stream) = acc.stream(name) else {
        return error_answer(T, &errors::STREAM_NOT_FOUND);
    };
    let m = match lookup(&stream, &req) {
        Ok(m) => m,
        Err(None) => return error_answer(T, &errors::BAD_REQUEST),
        Err(Some(_)) => return error_answer(T, &errors::NO_MESSAGE_FOUND),
    };
    #[derive(Serialize)]
    struct Msg {
        subject: String,
        seq: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        hdrs: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        time: String,
    }
    #[derive(Serialize)]
    struct R {
        #[serde(rename = "type")]
        kind: &'static str,
        message: Msg,
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    Answer::json(
        &R {
            kind: T,
            message: Msg {
                subject: String::from_utf8_lossy(&m.subject).into_owned(),
                seq: m.seq,
                hdrs: (!m.headers.is_empty()).then(|| b64.encode(&m.headers)),
                data: (!m.data.is_empty()).then(|| b64.encode(&m.data)),
                time: go_time(m.ts),
            },
        },
        false,
    )
}

#[derive(Deserialize, Default)]
struct DeleteRequest {
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    no_erase: bool,
}

fn msg_delete(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_msg_delete_response";
    if body.iter().all(u8::is_ascii_whitespace) {
        return error_answer(T, &errors::BAD_REQUEST);
    }
    let req: DeleteRequest = match parse(body) {
        Ok(r) => r,
        Err(e) => return error_answer(T, &e),
    };
    let Some(stream) = acc.stream(name) else {
        return error_answer(T, &errors::STREAM_NOT_FOUND);
    };
    let mut st = stream.lock();
    if st.config.sealed {
        return error_answer(T, &errors::SEALED);
    }
    if st.config.deny_delete {
        return error_answer(T, &errors::DELETE_DENIED);
    }
    if req.seq == 0 {
        return error_answer(T, &errors::msg_delete_failed("no message found"));
    }
    let last = st.store.state().last_seq;
    match st.store.remove(req.seq, !req.no_erase) {
        Ok(true) => success(T),
        Ok(false) | Err(StoreError::NotFound) if req.seq > last => {
            error_answer(T, &errors::msg_delete_failed("stream store EOF"))
        }
        Ok(false) | Err(StoreError::NotFound) => {
            error_answer(T, &errors::sequence_not_found(req.seq))
        }
        Err(e) => error_answer(T, &errors::msg_delete_failed(store_error(e).description)),
    }
}

/// `DIRECT.GET`: the message itself, with headers naming where it is from, or a status.
/// A stream without `allow_direct` does not answer (nats-server has no subscription then).
fn direct_get(acc: &JsAccount, name: &str, subject: Option<&str>, body: &[u8]) -> Option<Answer> {
    let stream = acc.stream(name)?;
    if !stream.config().allow_direct {
        return None;
    }
    let status = |code: u16, text: &str| Answer {
        body: Vec::new(),
        headers: headers::status(code, text),
        error: false,
    };
    let empty = body.iter().all(u8::is_ascii_whitespace);
    let req = match subject {
        Some(s) => {
            if !empty {
                return Some(status(408, "Bad Request"));
            }
            GetRequest {
                last_by_subj: s.to_string(),
                ..GetRequest::default()
            }
        }
        None => {
            if empty {
                return Some(status(408, "Empty Request"));
            }
            match parse::<GetRequest>(body) {
                // `{}` asks for nothing: nats-server calls that empty too.
                Ok(r) if r.seq == 0 && r.last_by_subj.is_empty() && r.next_by_subj.is_empty() => {
                    return Some(status(408, "Empty Request"))
                }
                Ok(r) => r,
                Err(_) => return Some(status(408, "Malformed Request")),
            }
        }
    };
    Some(match lookup(&stream, &req) {
        Ok(m) => {
            let subject = String::from_utf8_lossy(&m.subject).into_owned();
            let seq = m.seq.to_string();
            let ts = go_time(m.ts);
            Answer {
                headers: headers::with_headers(
                    &m.headers,
                    &[
                        ("Nats-Stream", name),
                        ("Nats-Subject", &subject),
                        ("Nats-Sequence", &seq),
                        ("Nats-Time-Stamp", &ts),
                    ],
                ),
                body: m.data.to_vec(),
                error: false,
            }
        }
        Err(None) => status(408, "Bad Request"),
        Err(Some(_)) => status(404, "Message Not Found"),
    })
}
