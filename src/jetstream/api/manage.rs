//! Managing streams: `STREAM.CREATE`, `UPDATE`, `DELETE`, `LIST`, `NAMES`, `PURGE`.

use super::{error_answer, info_of, parse, parse_optional, Answer, InfoRequest, StreamInfo};
use super::{LIST_LIMIT, NAMES_LIMIT};
use crate::jetstream::config::{subjects_overlap, StreamConfig};
use crate::jetstream::errors::{self, ApiError};
use crate::jetstream::stream::Stream;
use crate::jetstream::JsAccount;
use crate::store::Purge;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

// ---- create, update, delete -----------------------------------------------------------

/// The highest sequence a purge may move a stream to (nats-server's are signed 64-bit).
const MAX_SEQUENCE: u64 = i64::MAX as u64;

/// beaver's refusal of mirror and source links that loop (nats-server accepts them).
const SOURCES_LOOP: &str = "stream sources and mirrors can not form a cycle";

pub(super) fn stream_create(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_create_response";
    let config: StreamConfig = match parse(body) {
        Ok(c) => c,
        Err(e) => return error_answer(T, &e),
    };
    if config.name != name {
        return error_answer(T, &errors::STREAM_MISMATCH);
    }
    if name.contains(['/', '\\']) {
        // The name is a directory's under the store: `/etc` must not escape it.
        return error_answer(T, &errors::NAME_WITH_PATH_SEPARATORS);
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
    if let Err(e) = acc.check_overlap(&config) {
        return error_answer(T, &e);
    }
    if acc.sources_loop(&config) {
        return error_answer(T, &errors::invalid_config(SOURCES_LOOP));
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

pub(super) fn stream_update(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
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
    if let Err(e) = acc.check_overlap(&config) {
        return error_answer(T, &e);
    }
    if acc.sources_loop(&config) {
        return error_answer(T, &errors::invalid_config(SOURCES_LOOP));
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
        new.discard = crate::jetstream::config::Discard::New;
        new.deny_delete = true;
        new.deny_purge = true;
    }
    Ok(())
}

pub(super) fn stream_delete(acc: &JsAccount, name: &str) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.stream_delete_response";
    let _creating = acc.creating.lock();
    match acc.delete_stream(name) {
        Ok(()) => success(T),
        Err(e) => error_answer(T, &e),
    }
}

/// `{"type":T,"success":true}`.
pub(super) fn success(kind: &'static str) -> Answer {
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

pub(super) fn stream_list(acc: &JsAccount, body: &[u8]) -> Answer {
    paged(
        acc,
        body,
        "io.nats.jetstream.api.v1.stream_list_response",
        LIST_LIMIT,
        |s| info_of(acc, s, &InfoRequest::default()).0,
        false,
    )
}

pub(super) fn stream_names(acc: &JsAccount, body: &[u8]) -> Answer {
    // nats-server writes `null` when nothing matched a subject filter.
    paged(
        acc,
        body,
        "io.nats.jetstream.api.v1.stream_names_response",
        NAMES_LIMIT,
        |s| s.name.clone(),
        true,
    )
}

/// `STREAM.LIST` and `STREAM.NAMES`: the streams in name order (those whose subjects meet
/// the request's `subject`, when given) from `offset`, at most `limit`, each as `item` makes
/// it; with `null_when_none_match`, a filter that matched nothing gives `"streams":null`.
fn paged<T: Serialize>(
    acc: &JsAccount,
    body: &[u8],
    kind: &'static str,
    limit: usize,
    item: impl Fn(&Arc<Stream>) -> T,
    null_when_none_match: bool,
) -> Answer {
    #[derive(Serialize)]
    struct R<'a, T> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ApiError>,
        total: usize,
        offset: usize,
        limit: usize,
        streams: Option<Vec<T>>,
    }
    let req: ListRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => {
            return Answer::json(
                &R::<T> {
                    kind,
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
    let items: Vec<T> = all[offset..].iter().take(limit).map(item).collect();
    let none = items.is_empty() && !req.subject.is_empty() && null_when_none_match;
    Answer::json(
        &R {
            kind,
            error: None,
            total: all.len(),
            offset,
            limit,
            streams: (!none).then_some(items),
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

pub(super) fn stream_purge(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
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
    if req.seq > MAX_SEQUENCE {
        // A purge "up to" a sequence moves the next one there: past 2^63 the sequence space
        // would run out (nats-server's sequences wrap there).
        return fail(&errors::BAD_REQUEST);
    }
    let purge = Purge {
        filter: (!req.filter.is_empty()).then(|| Bytes::from(req.filter.clone())),
        up_to: (req.seq > 0).then_some(req.seq),
        keep: (req.keep > 0).then_some(req.keep),
    };
    let result = st.with_store(|s| s.purge(&purge));
    drop(st);
    if result.is_ok() {
        stream.purged();
    }
    match result {
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
