//! Operator mode's keys (nats-server's): `operator` (a JWT, a file holding one, or a list of
//! them), `resolver` (`MEMORY`, or a `{ type: full, dir }` block), `resolver_preload` (`{ ACCOUNT_PUBLIC_KEY: JWT }`). Each JWT
//! is decoded and its signature checked here, so a bad one stops start-up naming its line.

use super::values::Seconds;
use super::Apply;
use crate::config::operator::{check_preload, read_operator, DirResolver, Resolver};
use crate::config::ConfigError;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `operator`: one JWT (or file), or a list.
#[derive(Deserialize)]
#[serde(untagged, expecting = "an operator JWT or file, or a list of them")]
pub(crate) enum FileOperator {
    /// One.
    One(String),
    /// A list.
    Many(Vec<String>),
}

/// Applies `operator`: reads and checks every JWT.
pub(super) fn apply_operator(cx: &mut Apply, v: Spanned<FileOperator>) -> Result<(), ConfigError> {
    let span = v.span();
    let values = match v.into_inner() {
        FileOperator::One(s) => vec![s],
        FileOperator::Many(v) => v,
    };
    cx.config.operators.clear();
    for value in values {
        let token = read_operator(&value).map_err(|m| cx.err("operator", span.clone(), m))?;
        cx.config.operators.push(token);
    }
    Ok(())
}

/// `resolver`: a word (`MEMORY`, `MEM`, `URL(...)`), or a block (`{ type: full, dir }`).
#[derive(Deserialize)]
#[serde(untagged, expecting = "MEMORY, or a resolver block")]
pub(crate) enum FileResolver {
    /// `MEMORY`, `MEM`, `URL(...)`.
    Word(String),
    /// `{ type, dir, ... }`: nats-server's full or cache resolvers.
    Block(FileDirResolver),
}

/// The `resolver { ... }` block (nats-server's keys). Inside an untagged enum, so without
/// `Spanned` values: errors point at the `resolver` key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDirResolver {
    #[serde(rename = "type")]
    kind: Option<String>,
    dir: Option<String>,
    allow_delete: Option<bool>,
    limit: Option<i64>,
    interval: Option<Seconds>,
    timeout: Option<Seconds>,
    ttl: Option<Seconds>,
}

/// Applies `resolver`: the memory resolver, or an error naming what beaver lacks.
pub(super) fn apply_resolver(cx: &mut Apply, v: Spanned<FileResolver>) -> Result<(), ConfigError> {
    let span = v.span();
    match v.into_inner() {
        FileResolver::Word(w)
            if matches!(w.trim().to_ascii_uppercase().as_str(), "MEM" | "MEMORY") =>
        {
            cx.config.resolver = Some(Resolver::Memory);
            Ok(())
        }
        FileResolver::Word(w) => Err(cx.err(
            "resolver",
            span,
            format!(
                "{w:?}: beaver has only the memory resolver (`resolver: MEMORY` with \
                 `resolver_preload`) yet"
            ),
        )),
        FileResolver::Block(r) => {
            let kind = r.kind.unwrap_or_default().to_ascii_uppercase();
            if kind == "CACHE" {
                return Err(cx.err(
                    "resolver.type",
                    span,
                    "the cache resolver (`type: cache`) is not supported by beaver yet: use \
                     `type: full`"
                        .into(),
                ));
            }
            if kind != "FULL" {
                // nats-server's words for a block without a known type.
                return Err(cx.err(
                    "resolver",
                    span,
                    "error parsing account resolver, should be MEM or  URL(\"url\") or a map \
                     containing dir and type state=[FULL|CACHE])"
                        .into(),
                ));
            }
            if r.ttl.is_some() {
                return Err(cx.err("resolver.ttl", span, "FULL does not accept ttl".into()));
            }
            let dir = r.dir.filter(|d| !d.is_empty()).ok_or_else(|| {
                cx.err(
                    "resolver.dir",
                    span.clone(),
                    "dir has no value and needs to point to a directory".into(),
                )
            })?;
            let limit = match r.limit {
                None | Some(0) => None,
                Some(n) => Some(u64::try_from(n).map_err(|_| {
                    cx.err(
                        "resolver.limit",
                        span.clone(),
                        "must not be negative".into(),
                    )
                })?),
            };
            let interval = match r.interval {
                Some(v) => Some(
                    cx.duration("resolver.interval", Spanned::new(span.clone(), v))?
                        .0,
                ),
                None => None,
            };
            let timeout = match r.timeout {
                Some(v) => Some(
                    cx.duration("resolver.timeout", Spanned::new(span.clone(), v))?
                        .0,
                ),
                None => None,
            };
            // Created now, as nats-server creates it when it reads the configuration: a
            // directory that cannot be made stops start-up here, naming the key.
            if let Err(e) = std::fs::create_dir_all(&dir) {
                return Err(cx.err("resolver.dir", span, format!("{dir}: {e}")));
            }
            if !std::path::Path::new(&dir).is_dir() {
                return Err(cx.err(
                    "resolver.dir",
                    span,
                    "dir needs to point to an accessible directory".into(),
                ));
            }
            cx.config.resolver = Some(Resolver::Full(DirResolver {
                dir: dir.into(),
                allow_delete: r.allow_delete.unwrap_or(false),
                limit,
                interval,
                timeout,
            }));
            Ok(())
        }
    }
}

/// Applies `resolver_pinned_accounts` (one key, or a list): each must be an account's
/// public key (nats-server's words).
pub(super) fn apply_pinned(cx: &mut Apply, v: Spanned<FileOperator>) -> Result<(), ConfigError> {
    let span = v.span();
    let keys = match v.into_inner() {
        FileOperator::One(s) => vec![s],
        FileOperator::Many(v) => v,
    };
    for key in &keys {
        if !crate::jwt::is_key(key, 'A') {
            return Err(cx.err(
                "resolver_pinned_accounts",
                span,
                format!("pinned account key {key:?} is not a valid public account nkey"),
            ));
        }
    }
    cx.config.resolver_pinned_accounts = keys;
    Ok(())
}

/// `resolver_preload`: account public key to account JWT.
pub(crate) type FilePreload = BTreeMap<String, Spanned<String>>;

/// Applies `resolver_preload`: each JWT must be its account's, validly signed.
pub(super) fn apply_preload(cx: &mut Apply, v: Spanned<FilePreload>) -> Result<(), ConfigError> {
    cx.config.resolver_preload.clear();
    for (key, token) in v.into_inner() {
        let span = token.span();
        let token = token.into_inner();
        check_preload(&key, &token)
            .map_err(|m| cx.err(&format!("resolver_preload.{key}"), span, m))?;
        cx.config.resolver_preload.push((key, token));
    }
    Ok(())
}
