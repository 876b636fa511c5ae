//! The `tls` block (nats-server's): TLS for client connections.

use super::values::Seconds;
use super::Apply;
use crate::config::{ConfigError, Tls};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;

/// `[tls]`: nats-server's `tls` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    ca_file: Option<String>,
    verify: Option<bool>,
    timeout: Option<Spanned<Seconds>>,
}

/// Applies the `tls` block: a certificate and key are required, `verify` needs `ca_file`.
pub(super) fn apply_tls(cx: &mut Apply, block: Spanned<FileTls>) -> Result<(), ConfigError> {
    cx.config.tls = Some(read_tls(cx, "tls", block)?);
    Ok(())
}

/// Reads a `tls` block found at `at` (the top level's, `websocket.tls`).
pub(super) fn read_tls(
    cx: &mut Apply,
    at: &str,
    block: Spanned<FileTls>,
) -> Result<Tls, ConfigError> {
    let span = block.span();
    let t = block.into_inner();
    let (Some(cert), Some(key)) = (t.cert_file, t.key_file) else {
        return Err(cx.err(at, span, "`cert_file` and `key_file` are required".into()));
    };
    let mut tls = Tls {
        cert_file: PathBuf::from(cert),
        key_file: PathBuf::from(key),
        ca_file: t.ca_file.map(PathBuf::from),
        verify: t.verify.unwrap_or(false),
        timeout: Duration::ZERO,
    };
    if let Some(v) = t.timeout {
        tls.timeout = cx.duration(&format!("{at}.timeout"), v)?.0;
    }
    if tls.verify && tls.ca_file.is_none() {
        return Err(cx.err(at, span, "`verify` needs `ca_file`".into()));
    }
    Ok(tls)
}
