//! The `tls` block (nats-server's): TLS for client connections, and for routes
//! (`cluster.tls`, which alone takes `insecure`).

use super::values::Seconds;
use super::Apply;
use crate::config::{ConfigError, RouteTls, Tls};
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
    /// `cluster.tls` only: do not verify the certificate of a route we dial.
    insecure: Option<bool>,
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
    if t.insecure.is_some() {
        return Err(cx.err(
            at,
            span,
            "`insecure` applies to routes only (`cluster.tls`)".into(),
        ));
    }
    read_fields(cx, at, span, t)
}

/// Reads `cluster.tls`: as any `tls` block, plus `insecure`; `ca_file` is required, since
/// routes verify each other's certificates (see [`RouteTls`]).
pub(super) fn read_route_tls(
    cx: &mut Apply,
    at: &str,
    block: Spanned<FileTls>,
) -> Result<RouteTls, ConfigError> {
    let span = block.span();
    let mut t = block.into_inner();
    let insecure = t.insecure.take().unwrap_or(false);
    let tls = read_fields(cx, at, span.clone(), t)?;
    if tls.ca_file.is_none() {
        return Err(cx.err(
            at,
            span,
            "`ca_file` is required: routes verify each other's certificates".into(),
        ));
    }
    Ok(RouteTls { tls, insecure })
}

/// The fields every `tls` block has: a certificate and key are required, `verify` needs
/// `ca_file`.
fn read_fields(
    cx: &mut Apply,
    at: &str,
    span: std::ops::Range<usize>,
    t: FileTls,
) -> Result<Tls, ConfigError> {
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
