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
    /// `compression`: accepted, but beaver does not compress yet: clients are answered
    /// without `permessage-deflate` (logged at start).
    pub compression: bool,
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

    /// nats-server's rules for the block (`validateWebsocketOptions`), with its words.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.tls.is_none() && !self.no_tls {
            return Err("websocket requires TLS configuration".into());
        }
        crate::websocket::Origins::new(self.same_origin, &self.allowed_origins)?;
        Ok(())
    }
}
