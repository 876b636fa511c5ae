//! Copies of a connection and its subscriptions at one moment, as monitoring shows them
//! (`/connz`, `/subsz`) and as the ring of closed connections keeps them.
//!
//! A snapshot holds plain values, no `Arc` of the connection: the closed ring keeps up to
//! `max_closed_clients` of them for as long as the server runs, and must not keep what a
//! departed connection owned (its queues, its account's table) alive.

use super::{Client, Subscription, Traffic};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

/// A client connection at one moment (nats-server's `ConnInfo` fields, unformatted).
#[derive(Debug, Clone)]
pub struct ClientSnapshot {
    /// Connection id.
    pub cid: u64,
    /// The client's address.
    pub addr: SocketAddr,
    /// When the connection was accepted.
    pub start: SystemTime,
    /// When the client was last active (see [`Client::last_activity`]).
    pub last_activity: SystemTime,
    /// The last measured round trip; zero until measured.
    pub rtt: Duration,
    /// Bytes queued for the client.
    pub pending_bytes: usize,
    /// `name`, `lang` and `version` from `CONNECT` (each empty if not given).
    pub name: String,
    /// See `name`.
    pub lang: String,
    /// See `name`.
    pub version: String,
    /// Negotiated TLS version and cipher suite (Go's names), empty without TLS.
    pub tls_version: String,
    /// See `tls_version`.
    pub tls_cipher: String,
    /// A WebSocket client (`/connz` shows `"type": "websocket"`).
    pub websocket: bool,
    /// The authorized user (see [`Client::authorized_user`]).
    pub authorized_user: String,
    /// The account's name, empty for the global account `$G` (as `/connz` shows it).
    pub account: String,
    /// Messages and payload bytes in each direction.
    pub traffic: Traffic,
}

impl ClientSnapshot {
    /// `client` now. Takes the client's identity and account locks, one after the other.
    pub fn of(client: &Client) -> ClientSnapshot {
        let (name, lang, version) = client.identity();
        let (tls_version, tls_cipher) = client.tls_info();
        let account = client.account();
        ClientSnapshot {
            cid: client.cid,
            addr: client.addr,
            start: client.start,
            last_activity: client.last_activity(),
            rtt: client.rtt(),
            pending_bytes: client.pending_bytes(),
            name,
            lang,
            version,
            tls_version,
            tls_cipher,
            websocket: client.is_websocket(),
            authorized_user: client.authorized_user(),
            account: if account.is_global() {
                String::new()
            } else {
                account.name.clone()
            },
            traffic: client.stats.snapshot(),
        }
    }
}

/// A subscription at one moment (nats-server's `SubDetail` fields, unformatted).
#[derive(Debug, Clone)]
pub struct SubSnapshot {
    /// The account whose table holds it.
    pub account: String,
    /// The subject (lossy UTF-8, as monitoring shows it).
    pub subject: String,
    /// The queue group, empty if none.
    pub queue: String,
    /// The subscription id.
    pub sid: String,
    /// Messages delivered (see [`Subscription::msgs`]).
    pub msgs: u64,
    /// The auto-unsubscribe limit, 0 for none.
    pub max: u64,
    /// The subscriber's connection id.
    pub cid: u64,
}

impl SubSnapshot {
    /// `sub` now.
    pub fn of(sub: &Subscription) -> SubSnapshot {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        SubSnapshot {
            account: sub.account.name.clone(),
            subject: text(&sub.subject),
            queue: sub.queue.as_deref().map(text).unwrap_or_default(),
            sid: text(&sub.sid),
            msgs: sub.msgs(),
            max: sub.max(),
            cid: sub.client.cid,
        }
    }
}
