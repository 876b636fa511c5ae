//! Messages: `STREAM.MSG.GET`, `STREAM.MSG.DELETE` and `DIRECT.GET`.

use super::manage::success;
use super::{error_answer, parse, parse_optional, Answer};
use crate::jetstream::errors;
use crate::jetstream::headers;
use crate::jetstream::json::go_time;
use crate::jetstream::stream::{store_error, Stream};
use crate::jetstream::JsAccount;
use crate::store::{StoreError, StoredMsg};
use base64::Engine;
use serde::{Deserialize, Serialize};

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

pub(super) fn msg_get(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
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
    /// `None` (no `seq` at all) is a bad request; `Some(0)` finds no message.
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    no_erase: bool,
}

pub(super) fn msg_delete(acc: &JsAccount, name: &str, body: &[u8]) -> Answer {
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
    let seq = match req.seq {
        None => return error_answer(T, &errors::BAD_REQUEST),
        Some(0) => return error_answer(T, &errors::msg_delete_failed("no message found")),
        Some(seq) => seq,
    };
    let last = st.store.state().last_seq;
    match st.with_store(|s| s.remove(seq, !req.no_erase)) {
        Ok(true) => success(T),
        Ok(false) | Err(StoreError::NotFound) if seq > last => {
            error_answer(T, &errors::msg_delete_failed("stream store EOF"))
        }
        Ok(false) | Err(StoreError::NotFound) => error_answer(T, &errors::sequence_not_found(seq)),
        Err(e) => error_answer(T, &errors::msg_delete_failed(store_error(e).description)),
    }
}

/// `DIRECT.GET`: the message itself, with headers naming where it is from, or a status.
/// A stream without `allow_direct` does not answer (nats-server has no subscription then).
pub(super) fn direct_get(
    acc: &JsAccount,
    name: &str,
    subject: Option<&str>,
    body: &[u8],
) -> Option<Answer> {
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
