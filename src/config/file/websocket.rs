//! The `websocket` block (nats-server's; `ws` is its alias).

use super::tls::{read_tls, FileTls};
use super::values::{HostPort, Seconds};
use super::Apply;
use crate::config::options::in_range;
use crate::config::{ConfigError, WebSocket};
use serde::Deserialize;
use toml::Spanned;

/// `[websocket]`: nats-server's `websocket` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileWebSocket {
    /// `host:port`, or a port alone.
    listen: Option<Spanned<HostPort>>,
    #[serde(alias = "net")]
    host: Option<String>,
    port: Option<Spanned<i64>>,
    advertise: Option<String>,
    no_tls: Option<bool>,
    tls: Option<Spanned<FileTls>>,
    same_origin: Option<bool>,
    #[serde(
        alias = "allowed_origin",
        alias = "allow_origins",
        alias = "allow_origin"
    )]
    #[serde(alias = "origins", alias = "origin")]
    allowed_origins: Option<Vec<String>>,
    handshake_timeout: Option<Spanned<Seconds>>,
    #[serde(alias = "compress")]
    compression: Option<bool>,
    #[serde(alias = "authentication")]
    authorization: Option<FileWebSocketAuth>,
    no_auth_user: Option<String>,
    /// Not yet: refused.
    jwt_cookie: Option<Spanned<String>>,
}

/// `websocket.authorization`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileWebSocketAuth {
    #[serde(alias = "username")]
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    token: Option<String>,
    timeout: Option<Spanned<Seconds>>,
}

/// Applies the `websocket` block: `listen` overrides `host` and `port`; TLS or `no_tls` is
/// required, as by nats-server.
pub(super) fn apply_websocket(
    cx: &mut Apply,
    block: Spanned<FileWebSocket>,
) -> Result<(), ConfigError> {
    let span = block.span();
    let w = block.into_inner();
    // Settings that would change who may connect: refused rather than ignored, so that a
    // file never runs with less protection (or other logins) than it asks for.
    let not_yet = [("websocket.jwt_cookie", w.jwt_cookie.map(|v| v.span()))];
    for (key, at) in not_yet {
        if let Some(at) = at {
            return Err(cx.err(
                key,
                at,
                "not supported by beaver yet (JWT authentication)".into(),
            ));
        }
    }
    let mut ws = WebSocket::unset();
    if let Some(h) = w.host {
        ws.host = h;
    }
    if let Some(p) = w.port {
        let pspan = p.span();
        ws.port = in_range(p.into_inner(), -1, 65535)
            .map_err(|m| cx.err("websocket.port", pspan, m))? as i32;
    }
    if let Some(l) = w.listen {
        let lspan = l.span();
        let (host, port) = l
            .into_inner()
            .0
            .and_then(|(host, port)| Ok((host, in_range(port, -1, 65535)?)))
            .map_err(|m| cx.err("websocket.listen", lspan, m))?;
        if let Some(h) = host {
            ws.host = h;
        }
        ws.port = port as i32;
    }
    ws.advertise = w.advertise;
    ws.no_tls = w.no_tls.unwrap_or(false);
    if let Some(t) = w.tls {
        ws.tls = Some(read_tls(cx, "websocket.tls", t)?);
    }
    ws.same_origin = w.same_origin.unwrap_or(false);
    ws.allowed_origins = w.allowed_origins.unwrap_or_default();
    if let Some(v) = w.handshake_timeout {
        ws.handshake_timeout = cx.duration("websocket.handshake_timeout", v)?.0;
    }
    ws.compression = w.compression.unwrap_or(false);
    ws.no_auth_user = w.no_auth_user;
    if let Some(a) = w.authorization {
        let mut auth = crate::config::WebSocketAuth {
            user: a.user,
            password: a.password,
            token: a.token,
            timeout: std::time::Duration::ZERO,
        };
        if let Some(v) = a.timeout {
            auth.timeout = cx.duration("websocket.authorization.timeout", v)?.0;
        }
        ws.authorization = Some(auth);
    }
    // A port of 0 is nats-server's "no websocket listener". The rules between the block's
    // credentials and the users are checked once everything is read (`auth::validate`).
    if ws.port != 0 {
        ws.check_block().map_err(|m| cx.err("websocket", span, m))?;
        cx.config.websocket = Some(ws);
    }
    Ok(())
}
