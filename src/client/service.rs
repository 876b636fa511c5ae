//! In-process subscribers: services of the server (JetStream) whose subscriptions sit in the
//! accounts' subscription tables like any client's, but whose messages are handed to them on
//! the publisher's thread instead of being written to a socket (nats-server's internal
//! clients and their subscription callbacks).
//!
//! A service answers by returning [`ServiceReply`]s, which `crate::delivery` routes after
//! the message that caused them, on the same thread and into the same outbox: a PubAck
//! reaches its publisher in the same batch as whatever else that read produced.

use super::{Account, Subscription};
use bytes::Bytes;
use std::sync::Arc;

/// One message for a service (the publish, split into its parts).
#[derive(Debug, Clone, Copy)]
pub struct ServiceMsg<'a> {
    /// The subject it was published to.
    pub subject: &'a [u8],
    /// Its reply subject.
    pub reply: Option<&'a [u8]>,
    /// The raw header block (`NATS/1.0\r\n...\r\n\r\n`), empty without headers.
    pub headers: &'a [u8],
    /// The body.
    pub data: &'a [u8],
}

/// A message a service publishes in answer, into `account`.
#[derive(Debug, Clone)]
pub struct ServiceReply {
    /// The account whose subscribers get it.
    pub account: Arc<Account>,
    /// Its subject (usually the request's reply subject).
    pub subject: Bytes,
    /// Its reply subject.
    pub reply: Option<Bytes>,
    /// The raw header block, empty for a plain `MSG`.
    pub headers: Bytes,
    /// The body.
    pub data: Bytes,
}

/// A service of the server that takes messages through subscriptions
/// ([`super::Client::new_service`]).
///
/// Called on the publisher's reader thread (a client's or a route's), once per message per
/// matching subscription, possibly from many threads at once: implementations lock what
/// they share, briefly (the publisher's other subscribers wait for it).
pub trait Service: Send + Sync {
    /// Handles `msg`, delivered through `sub` (its account is `sub.account`), pushing any
    /// answer onto `replies`.
    fn on_message(&self, sub: &Subscription, msg: &ServiceMsg<'_>, replies: &mut Vec<ServiceReply>);
}
