//! An account's `exports` and `imports` (nats-server's keys and aliases), read into
//! [`crate::config::sharing`]'s structs. The rules between accounts are checked after every
//! account is read (`sharing::validate`).

use super::values::Seconds;
use super::Apply;
use crate::config::sharing::{Export, Import, ImportKind, ResponseType, ServiceExport};
use crate::config::ConfigError;
use serde::de;
use serde::Deserialize;
use toml::Spanned;

/// One entry of `exports`: `{ stream: SUBJECT }` or `{ service: SUBJECT, response, ... }`,
/// with `accounts` to make it private.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileExport {
    stream: Option<String>,
    service: Option<String>,
    #[serde(alias = "response_type")]
    response: Option<Spanned<String>>,
    #[serde(
        alias = "threshold",
        alias = "response_max_time",
        alias = "response_time"
    )]
    response_threshold: Option<Spanned<Seconds>>,
    accounts: Option<Vec<String>>,
    /// Service latency tracking: accepted, warned about.
    latency: Option<Spanned<de::IgnoredAny>>,
    /// Activation tokens (operator mode): refused.
    account_token_position: Option<Spanned<de::IgnoredAny>>,
}

/// One entry of `imports`: `{ stream: { account, subject }, prefix | to }` or
/// `{ service: { account, subject }, to }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileImport {
    stream: Option<FileSource>,
    service: Option<FileSource>,
    prefix: Option<String>,
    to: Option<String>,
    /// Sharing the requester's information with the service (latency tracking): accepted.
    share: Option<bool>,
}

/// `{ account: NAME, subject: SUBJECT }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSource {
    account: String,
    subject: String,
}

/// Reads an account's `exports` (named `key` in errors).
pub(super) fn exports(
    cx: &mut Apply,
    key: &str,
    list: Option<Vec<Spanned<FileExport>>>,
) -> Result<Vec<Export>, ConfigError> {
    let mut out = Vec::new();
    for e in list.unwrap_or_default() {
        let span = e.span();
        let e = e.into_inner();
        let (subject, service) = match (e.stream, e.service) {
            (Some(s), None) => {
                if e.response.is_some() || e.response_threshold.is_some() {
                    return Err(cx.err(
                        key,
                        span,
                        "Detected response directive on non-service".into(),
                    ));
                }
                if e.latency.is_some() {
                    return Err(cx.err(
                        key,
                        span,
                        "Detected latency directive on non-service".into(),
                    ));
                }
                (s, None)
            }
            (None, Some(s)) => {
                let response = match e.response.as_ref().map(|r| r.get_ref().as_str()) {
                    None | Some("single" | "singleton") => ResponseType::Singleton,
                    Some("stream") => ResponseType::Stream,
                    Some("chunk" | "chunked") => ResponseType::Chunked,
                    Some(other) => {
                        let at = e.response.as_ref().map_or(span.clone(), |r| r.span());
                        return Err(cx.err(key, at, format!("Unknown response type: {other:?}")));
                    }
                };
                let threshold = match e.response_threshold {
                    Some(t) => cx.duration(&format!("{key}.response_threshold"), t)?.0,
                    None => crate::config::sharing::DEFAULT_RESPONSE_THRESHOLD,
                };
                (
                    s,
                    Some(ServiceExport {
                        response,
                        threshold,
                    }),
                )
            }
            (Some(s), Some(_)) => {
                return Err(cx.err(
                    key,
                    span,
                    format!("Detected service {s:?} but already saw a stream"),
                ));
            }
            (None, None) => {
                return Err(cx.err(
                    key,
                    span,
                    "Export Items should be a map with type entry".into(),
                ));
            }
        };
        if let Some(v) = &e.account_token_position {
            return Err(ConfigError {
                message: format!(
                    "{}: key `{key}.account_token_position`: activation tokens are not \
                     supported by beaver yet",
                    (cx.locate)(v.span())
                ),
            });
        }
        if let Some(v) = &e.latency {
            let at = (cx.locate)(v.span());
            cx.warnings.push(format!(
                "{at}: key `{key}.latency`: service latency tracking is not supported yet; \
                 ignored"
            ));
        }
        out.push(Export {
            subject,
            service,
            accounts: e.accounts.unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Reads an account's `imports` (named `key` in errors).
pub(super) fn imports(
    cx: &mut Apply,
    key: &str,
    list: Option<Vec<Spanned<FileImport>>>,
) -> Result<Vec<Import>, ConfigError> {
    let mut out = Vec::new();
    for i in list.unwrap_or_default() {
        let span = i.span();
        let i = i.into_inner();
        let _ = i.share;
        let import = match (i.stream, i.service) {
            (Some(src), None) => {
                if i.prefix.is_some() && i.to.is_some() {
                    return Err(cx.err(
                        key,
                        span,
                        "Stream import can not have a 'prefix' and a 'to' property".into(),
                    ));
                }
                Import {
                    account: src.account,
                    subject: src.subject,
                    kind: ImportKind::Stream {
                        prefix: i.prefix,
                        to: i.to,
                    },
                    expires: None,
                }
            }
            (None, Some(src)) => {
                if i.prefix.is_some() {
                    return Err(cx.err(
                        key,
                        span,
                        "a service import has no 'prefix' (use 'to')".into(),
                    ));
                }
                Import {
                    account: src.account,
                    subject: src.subject,
                    kind: ImportKind::Service { to: i.to },
                    expires: None,
                }
            }
            (Some(_), Some(_)) => {
                return Err(cx.err(
                    key,
                    span,
                    "Detected service but already saw a stream".into(),
                ));
            }
            (None, None) => {
                return Err(cx.err(
                    key,
                    span,
                    "Import Items should be a map with type entry".into(),
                ));
            }
        };
        out.push(import);
    }
    Ok(out)
}
