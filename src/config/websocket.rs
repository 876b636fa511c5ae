//! The `websocket` settings (nats-server's `WebsocketOpts`): a listener for WebSocket
//! clients, browsers among them.

use super::Tls;
use std::time::Duration;

/// `websocket { host, port, listen, advertise, no_tls, tls, same_origin, allowed_origins,
/// handshake_timeout, compression, no_auth_user, authorization }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WebSocket {
    /// Listen host (`host`, `listen`); default `0.0.0.0`.
    pub host: String,
    /// Listen port (`port`, `listen`); -1: a random port.
    pub port: i32,
    /// `HOST:PORT` clients should be told to use (`advertise`); shown in the ports file.
    pub advertise: Option<String>,
    /// Serve `ws://` without TLS (`no_tls`); nats-server refuses a WebSocket listener with
    /// neither this nor `tls`.
    pub no_tls: bool,
    /// TLS for `wss://` (`tls`: `cert_file`, `key_file`, `ca_file`, `verify`, `timeout`).
    pub tls: Option<Tls>,
    /// Only pages of the same origin as the request's `Host` may connect (`same_origin`).
    pub same_origin: bool,
    /// Pages of these origins may connect (`allowed_origins`: `http[s]://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// The longest the TLS and HTTP upgrade handshakes may take (`handshake_timeout`);
    /// zero: the default 2 s (nats-server has no limit by default; beaver keeps one so
    /// that a connection that never finishes its request cannot hold a thread).
    pub handshake_timeout: Duration,
    /// `compression`: clients that offer `permessage-deflate` get it (RFC 7692, without
    /// context takeover, as nats-server negotiates it).
    pub compression: bool,
    /// `authorization { user, password, token, timeout }`: the credentials WebSocket
    /// clients use instead of the server's (nats-server's "auth override"); only without
    /// `users`.
    pub authorization: Option<WebSocketAuth>,
    /// `no_auth_user`: the user of the server's `users` a WebSocket client without
    /// credentials logs in as (instead of the top-level `no_auth_user`).
    pub no_auth_user: Option<String>,
}

/// `websocket { authorization { user, password, token, timeout } }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WebSocketAuth {
    /// The single user's name.
    pub user: Option<String>,
    /// Its password: plain text or a bcrypt hash.
    pub password: Option<String>,
    /// The token clients send as `auth_token`.
    pub token: Option<String>,
    /// How long a WebSocket client has to send a valid `CONNECT`; zero: the server's.
    pub timeout: Duration,
}

/// The handshake limit when `handshake_timeout` is not set.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);

impl WebSocket {
    /// A block with nothing set: every interface, port 0 (which nats-server reads as "no
    /// listener"; set one).
    pub(crate) fn unset() -> WebSocket {
        WebSocket {
            host: "0.0.0.0".into(),
            ..WebSocket::default()
        }
    }

    /// `handshake_timeout`, or the default.
    pub fn effective_handshake_timeout(&self) -> Duration {
        if self.handshake_timeout.is_zero() {
            DEFAULT_HANDSHAKE_TIMEOUT
        } else {
            self.handshake_timeout
        }
    }

    /// The port to bind: 0 (any) for -1.
    pub fn bind_port(&self) -> u16 {
        u16::try_from(self.port).unwrap_or(0)
    }

    /// Whether the block has credentials of its own (nats-server's `authOverride`): then
    /// WebSocket clients authenticate with them (and `no_auth_user`) instead of the
    /// server's.
    pub fn auth_override(&self) -> bool {
        self.no_auth_user.is_some()
            || self
                .authorization
                .as_ref()
                .is_some_and(|a| a.user.is_some() || a.token.is_some())
    }

    /// nats-server's rules for the block alone (`validateWebsocketOptions`), with its
    /// words.
    pub(crate) fn check_block(&self) -> Result<(), String> {
        if self.tls.is_none() && !self.no_tls {
            return Err("websocket requires TLS configuration".into());
        }
        crate::websocket::Origins::new(self.same_origin, &self.allowed_origins)?;
        Ok(())
    }

    /// nats-server's rules between the block's credentials and the server's users, with its
    /// words: `has_users` says the server has `users` (in `authorization` or in accounts),
    /// `is_user` whether a name is one of them.
    pub(crate) fn check_auth(
        &self,
        has_users: bool,
        is_user: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        if let Some(name) = &self.no_auth_user {
            if !is_user(name) {
                return Err(format!(
                    "no_auth_user: {name:?} not present as user in authorization block or \
                     account configuration"
                ));
            }
        }
        if let Some(a) = &self.authorization {
            if has_users && a.user.is_some() {
                return Err(
                    "websocket authentication username not compatible with presence of \
                     users/nkeys"
                        .into(),
                );
            }
            if has_users && a.token.is_some() {
                return Err(
                    "websocket authentication token not compatible with presence of users/nkeys"
                        .into(),
                );
            }
        }
        Ok(())
    }
}
