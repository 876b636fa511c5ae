//! Accounts that share: the messages of stream and service imports (nats-server's account
//! `exports` and `imports`, configured in `config::sharing`).
//!
//! Each import is a subscription of a service of the server ([`crate::client::Service`]),
//! whose answers `crate::delivery` publishes into the other account on the publisher's
//! thread, in the same outbox as the rest of that read:
//!
//! - **stream import** (B imports A's `events.>`): a subscription to `events.>` in A; each
//!   message published there is published again in B, on `prefix.events.x`, on `to`, or on
//!   the same subject, with its reply subject and headers.
//! - **service import** (B imports A's `svc.req`, `to: req`): a subscription to `req` in B;
//!   a request published there is published in A on `svc.req` with a reply subject of the
//!   server's, `_R_.<prefix>.<token>`, which remembers the requester's account and reply
//!   subject. A subscription to `_R_.<prefix>.>` in A takes the responses and publishes them
//!   in B on the requester's reply subject: the first only for a `singleton` export, any
//!   number for `stream` and `chunked` until the export's response threshold (2 minutes by
//!   default). The request carries a `Nats-Request-Info` header naming the requester's
//!   account, as nats-server adds it. A request nobody in A listens to goes nowhere (no
//!   `503` across accounts, as in nats-server 2.9.10).
//!
//! In a cluster each server bridges what is published on it (the bridges' subscriptions are
//! not announced to routes, or a message would cross twice); only the responses'
//! subscription is, so that a responder on another server is heard. Loops (a stream import
//! cycle) are refused by the configuration, and bounded by `delivery` in any case.

use crate::client::{Account, Client, Service, ServiceMsg, ServiceReply, Subscription};
use crate::config::sharing::{Import, ImportKind, ResponseType};
use crate::shared::Shared;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Pending requests kept before the expired ones are swept (then at most once a second).
const SWEEP_AT: usize = 1024;

/// Random characters in a response token (62 possibilities each; nats-server uses 10).
const TOKEN_LEN: usize = 12;

/// The current time in Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A request on its way, waiting for responses.
struct Pending {
    /// The account that must answer: responses from any other are not its.
    exporter: Arc<Account>,
    /// The requester's account.
    account: Arc<Account>,
    /// The requester's reply subject.
    reply: Bytes,
    /// How many responses it gets.
    response: ResponseType,
    /// Responses after this are dropped.
    until: Instant,
}

/// The server's imports (see the module docs). Dropped with the server.
pub struct Imports {
    /// `_R_.<random>.`: the reply subjects of forwarded requests.
    prefix: String,
    pending: Mutex<PendingRequests>,
    /// The bridges' subscribers (kept so that they stay registered), and whether each
    /// was announced to routes.
    clients: Mutex<Vec<(Arc<Client>, bool)>>,
}

/// The requests waiting for responses, by token, and when they were last swept.
struct PendingRequests {
    map: HashMap<String, Pending>,
    swept: Instant,
}

/// What one bridge subscription does.
enum Role {
    /// A stream import's messages, into `importer`.
    Stream {
        importer: Arc<Account>,
        import: Import,
    },
    /// A service import's requests, into `exporter`.
    Request {
        exporter: Arc<Account>,
        import: Import,
        response: ResponseType,
        threshold: Duration,
    },
    /// Responses to forwarded requests made to `exporter`, back to their requesters.
    Response { exporter: Arc<Account> },
}

struct Handle {
    imports: Weak<Imports>,
    role: Role,
}

/// What the accounts share: the configuration's accounts, or in operator mode the trusted
/// account JWTs' exports and imports (those allowed, see `auth::sharing`).
pub fn sharing_accounts(shared: &Shared) -> Vec<crate::config::AccountConfig> {
    match shared.auth().trust() {
        Some(trust) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            crate::auth::sharing::from_jwts(&trust.account_claims(), now)
        }
        None => shared.config().accounts.clone(),
    }
}

impl Imports {
    /// Subscribes every import of the configuration; `None` when there are none.
    /// `previous`: the bridges these replace ([`Imports::stop`]ped), whose requests still
    /// waiting for responses carry over, so that a rebuild (a push, a reload) loses no
    /// response on its way.
    pub fn start(shared: &Arc<Shared>, previous: Option<&Imports>) -> Option<Arc<Imports>> {
        let accounts = sharing_accounts(shared);
        if accounts.iter().all(|a| a.imports.is_empty()) {
            return None;
        }
        // The same prefix: the responders hold reply subjects made with it.
        let (prefix, map) = match previous {
            Some(p) => (p.prefix.clone(), std::mem::take(&mut p.pending.lock().map)),
            None => (
                format!("_R_.{}.", crate::shared::random_token(6)),
                HashMap::new(),
            ),
        };
        let imports = Arc::new(Imports {
            prefix,
            pending: Mutex::new(PendingRequests {
                map,
                swept: Instant::now(),
            }),
            clients: Mutex::new(Vec::new()),
        });
        let mut answering: Vec<String> = Vec::new();
        for importer_config in &accounts {
            // The registry was built from the same configuration; validated: every import
            // names an account, and an export of it that allows the import.
            let Some(importer) = shared.accounts.get(&importer_config.name) else {
                continue;
            };
            for import in &importer_config.imports {
                let Some(exporter) = shared.accounts.get(&import.account) else {
                    continue;
                };
                match &import.kind {
                    ImportKind::Stream { .. } => imports.subscribe(
                        shared,
                        &exporter,
                        import.subject.as_bytes(),
                        false,
                        Role::Stream {
                            importer: importer.clone(),
                            import: import.clone(),
                        },
                    ),
                    ImportKind::Service { .. } => {
                        let export = accounts
                            .iter()
                            .find(|a| a.name == import.account)
                            .and_then(|a| {
                                a.exports.iter().find_map(|e| {
                                    let covers = crate::subjects::is_subset_match(
                                        import.subject.as_bytes(),
                                        e.subject.as_bytes(),
                                    );
                                    e.service.filter(|_| covers)
                                })
                            })
                            .unwrap_or_default();
                        imports.subscribe(
                            shared,
                            &importer,
                            import.local_subject().as_bytes(),
                            false,
                            Role::Request {
                                exporter: exporter.clone(),
                                import: import.clone(),
                                response: export.response,
                                threshold: export.threshold,
                            },
                        );
                        if !answering.contains(&import.account) {
                            answering.push(import.account.clone());
                            let responses = format!("{}>", imports.prefix);
                            imports.subscribe(
                                shared,
                                &exporter,
                                responses.as_bytes(),
                                true,
                                Role::Response {
                                    exporter: exporter.clone(),
                                },
                            );
                        }
                    }
                }
            }
        }
        Some(imports)
    }

    fn subscribe(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        account: &Arc<Account>,
        subject: &[u8],
        announce: bool,
        role: Role,
    ) {
        let service: Arc<dyn Service> = Arc::new(Handle {
            imports: Arc::downgrade(self),
            role,
        });
        if let Some(client) =
            shared.subscribe_service(account, subject, b"import", service, announce)
        {
            self.clients.lock().push((client, announce));
        }
    }

    /// Removes every bridge (a reload or a push replaces them with new ones: the requests
    /// still waiting for responses are handed to those by [`Imports::start`]).
    pub fn stop(&self, shared: &Shared) {
        for (client, announced) in self.clients.lock().drain(..) {
            shared.unsubscribe_service(&client, announced);
        }
    }

    /// A service import's request: into the exporter, with a reply subject of ours.
    fn request(
        &self,
        exporter: &Arc<Account>,
        importer: &Arc<Account>,
        import: &Import,
        (response, threshold): (ResponseType, Duration),
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        // A `to` names the exported subject for the importer (literal subjects only, see
        // `config::sharing`); otherwise the subject is the same in both accounts.
        let subject = match &import.kind {
            ImportKind::Service { to: Some(_) } => Bytes::from(import.subject.clone()),
            _ => Bytes::copy_from_slice(msg.subject),
        };
        // Nobody in the exporter to answer: the request goes nowhere, and the requester
        // hears nothing (nats-server 2.9.10 sends no 503 across accounts either).
        if exporter.sublist.matches(&subject).is_empty() {
            return;
        }
        let reply = match msg.reply {
            None => None,
            Some(requester_reply) => {
                // Random, not counted: a responder learns nothing of other requests'
                // tokens from its own.
                let token = crate::shared::random_token(TOKEN_LEN);
                let now = Instant::now();
                let mut pending = self.pending.lock();
                // Swept by time, not on every request: a flood of unanswered requests must
                // not make each new one walk the whole map.
                if pending.map.len() >= SWEEP_AT
                    && now.duration_since(pending.swept) >= Duration::from_secs(1)
                {
                    pending.map.retain(|_, p| p.until > now);
                    pending.swept = now;
                }
                pending.map.insert(
                    token.clone(),
                    Pending {
                        exporter: exporter.clone(),
                        account: importer.clone(),
                        reply: Bytes::copy_from_slice(requester_reply),
                        response,
                        until: now + threshold,
                    },
                );
                Some(Bytes::from(format!("{}{token}", self.prefix)))
            }
        };
        // Who asked, as nats-server tells the service: the requester's account (its `rtt`,
        // unknown here, is left out as Go leaves out a zero one).
        // Set, not added: a requester's own `Nats-Request-Info` is dropped, so the service
        // can trust the one it reads (and a request bridged twice carries one).
        let info = serde_json::json!({ "acc": importer.name }).to_string();
        let headers =
            crate::jetstream::headers::with_header_set(msg.headers, "Nats-Request-Info", &info);
        replies.push(ServiceReply {
            account: exporter.clone(),
            subject,
            reply,
            headers: Bytes::from(headers),
            data: Bytes::copy_from_slice(msg.data),
        });
    }

    /// A response to a forwarded request, published in `exporter`: back to the requester,
    /// if the request was made to that account (a token heard in another account answers
    /// nothing).
    fn response(
        &self,
        exporter: &Arc<Account>,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let Some(token) = msg
            .subject
            .strip_prefix(self.prefix.as_bytes())
            .and_then(|t| std::str::from_utf8(t).ok())
        else {
            return;
        };
        let mut pending = self.pending.lock();
        let Some(p) = pending.map.get(token) else {
            return;
        };
        if !Arc::ptr_eq(&p.exporter, exporter) {
            return;
        }
        if p.until <= Instant::now() {
            pending.map.remove(token);
            return;
        }
        let (account, reply) = (p.account.clone(), p.reply.clone());
        if p.response == ResponseType::Singleton {
            pending.map.remove(token);
        }
        drop(pending);
        replies.push(ServiceReply {
            account,
            subject: reply,
            reply: None,
            headers: Bytes::copy_from_slice(msg.headers),
            data: Bytes::copy_from_slice(msg.data),
        });
    }
}

impl Service for Handle {
    fn on_message(
        &self,
        sub: &Subscription,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let Some(imports) = self.imports.upgrade() else {
            return;
        };
        if let Role::Stream { import, .. } | Role::Request { import, .. } = &self.role {
            // Its activation token ran out: nothing crosses any more, and the subscription
            // stays (nats-server marks the import invalid and keeps it, so a requester
            // hears no 503) until the bridges are rebuilt.
            if import.expires.is_some_and(|at| unix_now() >= at) {
                return;
            }
        }
        match &self.role {
            Role::Stream { importer, import } => {
                let subject = match &import.kind {
                    ImportKind::Stream {
                        prefix: Some(p), ..
                    } => {
                        let mut s = Vec::with_capacity(p.len() + 1 + msg.subject.len());
                        s.extend_from_slice(p.as_bytes());
                        s.push(b'.');
                        s.extend_from_slice(msg.subject);
                        Bytes::from(s)
                    }
                    ImportKind::Stream { to: Some(t), .. } => Bytes::from(t.clone()),
                    _ => Bytes::copy_from_slice(msg.subject),
                };
                replies.push(ServiceReply {
                    account: importer.clone(),
                    subject,
                    reply: msg.reply.map(Bytes::copy_from_slice),
                    headers: Bytes::copy_from_slice(msg.headers),
                    data: Bytes::copy_from_slice(msg.data),
                });
            }
            Role::Request {
                exporter,
                import,
                response,
                threshold,
            } => imports.request(
                exporter,
                &sub.account,
                import,
                (*response, *threshold),
                msg,
                replies,
            ),
            Role::Response { exporter } => imports.response(exporter, msg, replies),
        }
    }
}
