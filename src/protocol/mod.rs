//! The NATS client protocol: parsing what clients send, and the exact bytes beaver sends back;
//! and, in [`route`], the route protocol between servers.
//!
//! Reference: the NATS client protocol documentation ("Client Protocol": `INFO`, `CONNECT`,
//! `PUB`, `HPUB`, `SUB`, `UNSUB`, `MSG`, `HMSG`, `PING`/`PONG`, `+OK`/`-ERR`) and nats-server
//! 2.9's behaviour, which beaver matches byte for byte.

mod connect;
mod info;
pub mod leaf;
mod msg;
mod nesting;
mod parser;
mod quote;
mod redact;
pub mod route;

pub use connect::{ConnectError, ConnectOptions};
pub use info::{generate_server_id, ServerInfo, NATS_VERSION, RUNTIME_VERSION};
pub(crate) use info::{go_write_char_escape, go_write_string_fragment, GoFormatter as GoJson};
pub use msg::{write_msg_line, MsgLine};
pub use nesting::json_nesting_depth;
pub use parser::{parse_size, ClientOp, ParseError, Parser, PubLine, Publish, Step};
pub use quote::go_quote;
pub use redact::redact_secrets;

/// `+OK`, sent after each operation when the client is verbose (not after `PING`/`PONG`).
pub const OK: &[u8] = b"+OK\r\n";
/// `PING`.
pub const PING: &[u8] = b"PING\r\n";
/// `PONG`.
pub const PONG: &[u8] = b"PONG\r\n";

/// The `-ERR` lines beaver sends, with nats-server's exact text. Whether the connection then
/// closes is decided where each is sent, as in the reference.
pub mod err {
    /// An operation a client may not send, or a payload not followed by CR LF. Closes.
    pub const UNKNOWN_OP: &[u8] = b"-ERR 'Unknown Protocol Operation'\r\n";
    /// Control line arguments longer than `max_control_line`. Closes.
    pub const MAX_CONTROL_LINE: &[u8] = b"-ERR 'maximum control line exceeded'\r\n";
    /// A message larger than `max_payload`. Closes.
    pub const MAX_PAYLOAD: &[u8] = b"-ERR 'Maximum Payload Violation'\r\n";
    /// `SUB` to an invalid subject. The connection stays open.
    pub const INVALID_SUBJECT: &[u8] = b"-ERR 'Invalid Subject'\r\n";
    /// Pedantic client publishing to a non-literal subject. Stays open; the message is still
    /// processed, as in nats-server.
    pub const INVALID_PUBLISH_SUBJECT: &[u8] = b"-ERR 'Invalid Publish Subject'\r\n";
    /// `CONNECT` with a `protocol` other than 0 or 1. Closes.
    pub const INVALID_CLIENT_PROTOCOL: &[u8] = b"-ERR 'invalid client protocol'\r\n";
    /// `CONNECT` with `no_responders` but without `headers`. Closes.
    pub const NO_RESPONDERS_REQUIRES_HEADERS: &[u8] =
        b"-ERR 'no responders requires headers support'\r\n";
    /// Failed authentication (or a `CONNECT` naming an account). Closes.
    pub const AUTHORIZATION_VIOLATION: &[u8] = b"-ERR 'Authorization Violation'\r\n";
    /// No valid `CONNECT` within the authentication timeout. Closes.
    pub const AUTHENTICATION_TIMEOUT: &[u8] = b"-ERR 'Authentication Timeout'\r\n";
    /// No `PONG` to `ping_max` outstanding `PING`s. Closes.
    pub const STALE_CONNECTION: &[u8] = b"-ERR 'Stale Connection'\r\n";
    /// One connection over `max_connections`. Closes.
    pub const MAX_CONNECTIONS: &[u8] = b"-ERR 'maximum connections exceeded'\r\n";
    /// Over the account JWT's connection limit (nats-server's
    /// `ErrTooManyAccountConnections`); the connection is closed.
    pub const MAX_ACCOUNT_CONNECTIONS: &[u8] =
        b"-ERR 'maximum account active connections exceeded'\r\n";
    /// A new account JWT revoked the connected user (nats-server's
    /// `updateAccountClaimsWithRefresh`). Closes.
    pub const AUTHENTICATION_REVOKED: &[u8] = b"-ERR 'User Authentication Revoked'\r\n";
    /// The user's JWT expired while connected (nats-server's `authExpired`); closed.
    pub const AUTHENTICATION_EXPIRED: &[u8] = b"-ERR 'User Authentication Expired'\r\n";
    /// The account's JWT expired while its client was connected; closed.
    pub const ACCOUNT_AUTHENTICATION_EXPIRED: &[u8] = b"-ERR 'Account Authentication Expired'\r\n";
    /// A `SUB` over `max_subscriptions`. The connection stays open.
    pub const MAX_SUBSCRIPTIONS: &[u8] = b"-ERR 'maximum subscriptions exceeded'\r\n";
}
