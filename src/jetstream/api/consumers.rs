//! The consumer requests of the API (`$JS.API.CONSUMER.>`; nats-server's
//! `jsConsumerCreateRequest`, `jsConsumerInfoRequest`, `jsConsumerListRequest`,
//! `jsConsumerNamesRequest`, `jsConsumerDeleteRequest`) and pull requests
//! (`CONSUMER.MSG.NEXT`), which are not API calls but go to the consumer.

use super::{error_answer, parse, parse_optional, Answer};
use crate::client::{ServiceMsg, ServiceReply};
use crate::jetstream::consumer::ack::Inbound;
use crate::jetstream::consumer::config::CreateRequest;
use crate::jetstream::consumer::{Consumer, ConsumerInfo};
use crate::jetstream::errors::{self, ApiError};
use crate::jetstream::JsAccount;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `CONSUMER.LIST`'s page size.
const LIST_LIMIT: usize = 256;
/// `CONSUMER.NAMES`'s page size.
const NAMES_LIMIT: usize = 1024;

const CREATE: &str = "io.nats.jetstream.api.v1.consumer_create_response";
const INFO: &str = "io.nats.jetstream.api.v1.consumer_info_response";

/// How a create request names its consumer (nats-server's `ccReqType`).
#[derive(PartialEq, Eq)]
enum Form {
    /// `CONSUMER.CREATE.<stream>`.
    LegacyEphemeral,
    /// `CONSUMER.DURABLE.CREATE.<stream>.<durable>`.
    LegacyDurable,
    /// `CONSUMER.CREATE.<stream>.<name>[.<filter>]`.
    New,
}

/// `{"type":T, <info>}`.
fn info_answer(kind: &'static str, info: ConsumerInfo) -> Answer {
    #[derive(Serialize)]
    struct R {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(flatten)]
        info: ConsumerInfo,
    }
    Answer::json(&R { kind, info }, false)
}

/// A create request; `tokens` are the subject's after `$JS.API.`.
pub(super) fn create(acc: &Arc<JsAccount>, tokens: &[&str], body: &[u8]) -> Option<Answer> {
    let fail = |e: ApiError| Some(error_answer(CREATE, &e));
    let req: CreateRequest = match parse(body) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let (form, stream, name, filter) = match tokens {
        ["CONSUMER", "CREATE", stream] => (Form::LegacyEphemeral, *stream, "", String::new()),
        ["CONSUMER", "DURABLE", "CREATE", stream, durable] => {
            (Form::LegacyDurable, *stream, *durable, String::new())
        }
        // A filter in the subject needs two tokens or more: nats-server reads one token
        // after the name as nothing.
        ["CONSUMER", "CREATE", stream, name, rest @ ..] => (
            Form::New,
            *stream,
            *name,
            if rest.len() > 1 {
                rest.join(".")
            } else {
                String::new()
            },
        ),
        _ => return None,
    };
    if stream != req.stream_name {
        return fail(errors::STREAM_MISMATCH);
    }
    if name.contains(['\\', '/']) {
        return fail(errors::e(
            400,
            10127,
            "Consumer name can not contain path separators",
        ));
    }
    // No `config` is the zero configuration, as Go reads it.
    let mut config = req.config.unwrap_or_default();
    match form {
        Form::LegacyDurable => {
            if config.durable_name.is_empty() {
                return fail(errors::e(
                    400,
                    10018,
                    "consumer expected to be durable but a durable name was not set",
                ));
            }
            if config.durable_name != name {
                return fail(errors::e(
                    400,
                    10017,
                    "consumer name in subject does not match durable name in request",
                ));
            }
        }
        Form::New => {
            if !config.durable_name.is_empty() && config.durable_name != name {
                return fail(errors::e(
                    400,
                    10017,
                    "consumer name in subject does not match durable name in request",
                ));
            }
            config.name = name.to_string();
        }
        Form::LegacyEphemeral => {
            if !config.durable_name.is_empty() {
                return fail(errors::e(
                    400,
                    10020,
                    "consumer expected to be ephemeral but a durable name was set in request",
                ));
            }
        }
    }
    if !filter.is_empty() && config.filter_subject != filter {
        return fail(errors::e(
            400,
            10131,
            "Consumer create request did not match filtered subject from create subject",
        ));
    }
    if config.num_replicas > 1 {
        return fail(errors::REPLICAS_NOT_SUPPORTED);
    }
    let Some(s) = acc.stream(stream) else {
        return fail(errors::STREAM_NOT_FOUND);
    };
    match acc.add_consumer(&s, config) {
        Ok((_, info)) => Some(info_answer(CREATE, info)),
        Err(e) => fail(e),
    }
}

/// `CONSUMER.INFO.<stream>.<consumer>`.
pub(super) fn info(acc: &JsAccount, stream: &str, name: &str) -> Answer {
    if acc.stream(stream).is_none() {
        return error_answer(INFO, &errors::STREAM_NOT_FOUND);
    }
    match acc.consumer(stream, name) {
        Some(c) => info_answer(INFO, c.info()),
        None => error_answer(INFO, &errors::CONSUMER_NOT_FOUND),
    }
}

/// `CONSUMER.DELETE.<stream>.<consumer>`.
pub(super) fn delete(acc: &JsAccount, stream: &str, name: &str) -> Answer {
    const T: &str = "io.nats.jetstream.api.v1.consumer_delete_response";
    if acc.stream(stream).is_none() {
        return error_answer(T, &errors::STREAM_NOT_FOUND);
    }
    if acc.delete_consumer(stream, name) {
        super::manage::success(T)
    } else {
        error_answer(T, &errors::CONSUMER_NOT_FOUND)
    }
}

/// `offset` of `CONSUMER.LIST`/`CONSUMER.NAMES`.
#[derive(Deserialize, Default)]
struct PageRequest {
    #[serde(default)]
    offset: usize,
}

/// `CONSUMER.NAMES.<stream>` (`names`) or `CONSUMER.LIST.<stream>`: the stream's
/// consumers in name order from `offset`.
pub(super) fn page(acc: &JsAccount, stream: &str, body: &[u8], names: bool) -> Answer {
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Item {
        Name(String),
        Info(Box<ConsumerInfo>),
    }
    #[derive(Serialize)]
    struct R<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ApiError>,
        total: usize,
        offset: usize,
        limit: usize,
        consumers: Option<Vec<Item>>,
    }
    let (kind, limit) = if names {
        (
            "io.nats.jetstream.api.v1.consumer_names_response",
            NAMES_LIMIT,
        )
    } else {
        (
            "io.nats.jetstream.api.v1.consumer_list_response",
            LIST_LIMIT,
        )
    };
    let fail = |e: &ApiError| {
        Answer::json(
            &R {
                kind,
                error: Some(e),
                total: 0,
                offset: 0,
                limit: 0,
                consumers: Some(Vec::new()),
            },
            true,
        )
    };
    let req: PageRequest = match parse_optional(body) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let Some(s) = acc.stream(stream) else {
        return fail(&errors::STREAM_NOT_FOUND);
    };
    let all: Vec<Arc<Consumer>> = s.consumer_list();
    let offset = req.offset.min(all.len());
    let items = all[offset..]
        .iter()
        .take(limit)
        .map(|c| {
            if names {
                Item::Name(c.name.clone())
            } else {
                Item::Info(Box::new(c.info()))
            }
        })
        .collect();
    Answer::json(
        &R {
            kind,
            error: None,
            total: all.len(),
            offset,
            limit,
            consumers: Some(items),
        },
        false,
    )
}

/// `CONSUMER.MSG.NEXT.<stream>.<consumer>`: a pull request, posted to the consumer's
/// thread (which queues it or answers it with a status). Requests without a reply subject
/// are ignored.
pub(super) fn next(
    acc: &JsAccount,
    stream: &str,
    name: &str,
    msg: &ServiceMsg<'_>,
    replies: &mut Vec<ServiceReply>,
) {
    let _ = replies;
    let Some(reply) = msg.reply else { return };
    let Some(c) = acc.consumer(stream, name) else {
        return;
    };
    c.post(Inbound::Next {
        reply: bytes::Bytes::copy_from_slice(reply),
        body: bytes::Bytes::copy_from_slice(msg.data),
    });
}
