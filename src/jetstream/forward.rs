//! JetStream elsewhere in the cluster: a server without JetStream of its own passes its
//! clients' `$JS.API` requests to the nats-server nodes that have it, as a nats-server node
//! without JetStream does.
//!
//! nats-server serves the JetStream API in its system account (`$SYS`): each account imports
//! `$JS.API.>` from it as a service, so a request published in `$G` is re-published in
//! `$SYS`, with a reply subject of the system account's (`_R_.<prefix>.<token>`) and a
//! `Nats-Request-Info` header naming the requester's account; the JetStream node answers on
//! that reply subject, and the importing server maps the answer back to the requester's own
//! reply. On the wire this is ordinary route traffic (`RMSG $SYS ...`, `RS+ $SYS _R_...`),
//! which is what this module does, for the `$JS.API.>` import only (general imports and
//! exports are issue 17's).
//!
//! Publishing to a stream needs nothing of this: the stream's leader subscribes its subjects
//! in the stream's account, and routes carry that interest like any other.

use crate::client::{Account, Client, Service, ServiceMsg, ServiceReply, Subscription};
use crate::shared::Shared;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The system account's name (nats-server's default).
pub const SYSTEM_ACCOUNT: &str = "$SYS";

/// How long a forwarded request waits for its answer before its mapping is forgotten.
const ANSWER_WAIT: Duration = Duration::from_secs(60);

/// A forwarded request: the requester's account, its reply subject, when it was sent.
type Waiting = (Arc<Account>, Bytes, Instant);

/// The forwarder: one service client per account for the requests, one in `$SYS` for the
/// answers.
pub struct Forwarder {
    shared: Weak<Shared>,
    system: Arc<Account>,
    /// `_R_.<prefix>.`: this server's reply subjects in `$SYS`.
    prefix: String,
    /// Token → the request waiting for its answer.
    pending: Mutex<HashMap<String, Waiting>>,
    next: std::sync::atomic::AtomicU64,
    clients: Mutex<Vec<Arc<Client>>>,
    /// Whether the answers' subscription exists: made at the first forwarded request, so a
    /// cluster that never uses JetStream through this server never hears of it.
    answering: Mutex<bool>,
}

impl Forwarder {
    /// Starts forwarding for every account of `shared` but `$SYS` (which must exist).
    /// `None` without a system account.
    pub fn start(shared: &Arc<Shared>) -> Option<Arc<Forwarder>> {
        let system = shared.accounts.get(SYSTEM_ACCOUNT)?.clone();
        let prefix = format!("_R_.{}.", crate::shared::random_token(6));
        let fwd = Arc::new(Forwarder {
            shared: Arc::downgrade(shared),
            system: system.clone(),
            prefix,
            pending: Mutex::new(HashMap::new()),
            next: std::sync::atomic::AtomicU64::new(1),
            clients: Mutex::new(Vec::new()),
            answering: Mutex::new(false),
        });
        for account in &shared.accounts.list() {
            if account.name != SYSTEM_ACCOUNT {
                // Requests: local only (the other servers have their own import).
                fwd.subscribe(shared, account, b"$JS.API.>", b"requests", false);
            }
        }
        Some(fwd)
    }

    fn subscribe(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        account: &Arc<Account>,
        subject: &[u8],
        sid: &[u8],
        announce: bool,
    ) {
        let service: Arc<dyn Service> = Arc::new(Handle(Arc::downgrade(self)));
        if let Some(client) = shared.subscribe_service(account, subject, sid, service, announce) {
            self.clients.lock().push(client);
        }
    }

    /// Subscribes `_R_.<prefix>.>` in `$SYS`, announced to the routes (so the JetStream
    /// node's answers come here), unless done already. The interest goes out on each route
    /// before the request that follows it, so no answer can arrive first.
    fn ensure_answers(self: &Arc<Self>) {
        let mut answering = self.answering.lock();
        if *answering {
            return;
        }
        if let Some(shared) = self.shared.upgrade() {
            let answers = format!("{}>", self.prefix);
            self.subscribe(&shared, &self.system, answers.as_bytes(), b"answers", true);
            *answering = true;
        }
    }

    /// A client's request: to `$SYS` if a JetStream node listens there, else the
    /// no-responders status the requester would get without this forwarder.
    fn request(
        self: &Arc<Self>,
        sub: &Subscription,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let Some(reply) = msg.reply else { return };
        let listened = !self.system.sublist.matches(msg.subject).is_empty();
        if !listened {
            replies.push(ServiceReply {
                account: sub.account.clone(),
                subject: Bytes::copy_from_slice(reply),
                reply: None,
                headers: Bytes::from_static(b"NATS/1.0 503\r\n\r\n"),
                data: Bytes::new(),
            });
            return;
        }
        self.ensure_answers();
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = format!("{}{}", crate::shared::random_token(4), n);
        {
            let mut pending = self.pending.lock();
            let now = Instant::now();
            if pending.len() > 1024 {
                pending.retain(|_, (_, _, at)| now.duration_since(*at) < ANSWER_WAIT);
            }
            pending.insert(
                token.clone(),
                (sub.account.clone(), Bytes::copy_from_slice(reply), now),
            );
        }
        // What nats-server's import adds (its `ClientInfo`): the account the request is
        // for, and where it comes from (placement picks peers in the requester's cluster).
        let shared = self.shared.upgrade();
        let info = serde_json::json!({
            "acc": sub.account.name,
            "server": shared.as_ref().map(|s| s.server_id.clone()).unwrap_or_default(),
            "cluster": shared
                .as_ref()
                .and_then(|s| s.cluster.as_ref().map(|c| c.name()))
                .unwrap_or_default(),
        })
        .to_string();
        let headers = super::headers::with_headers(msg.headers, &[("Nats-Request-Info", &info)]);
        replies.push(ServiceReply {
            account: self.system.clone(),
            subject: Bytes::copy_from_slice(msg.subject),
            reply: Some(Bytes::from(format!("{}{token}", self.prefix))),
            headers: Bytes::from(headers),
            data: Bytes::copy_from_slice(msg.data),
        });
    }

    /// An answer from the JetStream node: back to the requester's reply subject.
    fn answer(&self, msg: &ServiceMsg<'_>, replies: &mut Vec<ServiceReply>) {
        let Some(token) = msg.subject.strip_prefix(self.prefix.as_bytes()) else {
            return;
        };
        let Ok(token) = std::str::from_utf8(token) else {
            return;
        };
        let Some((account, reply, _)) = self.pending.lock().remove(token) else {
            return;
        };
        replies.push(ServiceReply {
            account,
            subject: reply,
            reply: None,
            headers: Bytes::copy_from_slice(msg.headers),
            data: Bytes::copy_from_slice(msg.data),
        });
    }
}

struct Handle(Weak<Forwarder>);

impl Service for Handle {
    fn on_message(
        &self,
        sub: &Subscription,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let Some(fwd) = self.0.upgrade() else { return };
        if &*sub.sid == b"answers" {
            fwd.answer(msg, replies);
        } else {
            fwd.request(sub, msg, replies);
        }
    }
}
