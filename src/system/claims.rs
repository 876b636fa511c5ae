//! The full account resolver's requests (nats-server's `DirAccResolver.Start`): how `nsc
//! push` hands account JWTs to a running server, answered to users of the system account.
//!
//! | subject | what it does | answer |
//! | --- | --- | --- |
//! | `$SYS.REQ.CLAIMS.UPDATE`, `$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE`, `$SYS.ACCOUNT.<key>.CLAIMS.UPDATE` (older) | stores the account JWT of the body and trusts it at once | `{"data":{"account":KEY,"code":200,"message":"jwt updated"},"server":{...}}`, or `{"error":{"account":KEY,"code":500,"description":"jwt update resulted in error - ..."},"server":{...}}` |
//! | `$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP` | | the account's JWT, as stored |
//! | `$SYS.REQ.CLAIMS.LIST` | | `{"data":[KEY, ...],"server":{...}}` |
//! | `$SYS.REQ.CLAIMS.DELETE` (with `allow_delete`) | renames the listed accounts' files `<key>.jwt.deleted`, closes their clients (`Account Authentication Expired`) | `{"data":{"code":200,"message":"deleted N accounts"},"server":{...}}`, or an `error` |
//!
//! The answers' members are in nats-server's order (its answer is a Go map, so sorted).
//! When a push changes a JWT, the account's clients are checked against it as nats-server
//! does ([`crate::auth::Trust::evictions`]): users revoked, bearer tokens refused, signing
//! keys removed and connections over the new limit are closed with nats-server's errors;
//! then, when its exports, imports or signing keys changed, the accounts' import bridges
//! are rebuilt (the JWT's exports and imports apply at once; other pushes leave the bridges
//! alone, so that nothing crossing them is dropped), and a new account gets JetStream when
//! the server has it.
//!
//! Only with `resolver { type: full }`; the memory resolver's accounts do not change while
//! running, as in nats-server. Not yet: `$SYS.REQ.CLAIMS.PACK` (the directory
//! synchronisation between the servers of a cluster).

use super::System;
use crate::auth::operator::Eviction;
use crate::client::{ServiceMsg, ServiceReply};
use crate::close::CloseReason;
use crate::shared::Shared;
use bytes::Bytes;

/// The subjects answered here (subscribed in the system account).
pub(super) const SUBJECTS: [&str; 6] = [
    "$SYS.REQ.CLAIMS.UPDATE",
    "$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE",
    "$SYS.ACCOUNT.*.CLAIMS.UPDATE",
    "$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP",
    "$SYS.REQ.CLAIMS.LIST",
    "$SYS.REQ.CLAIMS.DELETE",
];

/// Whether `subject` is one of [`SUBJECTS`]'s.
pub(super) fn is_claims_subject(subject: &str) -> bool {
    subject.starts_with("$SYS.REQ.CLAIMS.")
        || subject.ends_with(".CLAIMS.UPDATE")
        || subject.ends_with(".CLAIMS.LOOKUP")
}

impl System {
    /// Answers one request on a claims subject (see the module docs).
    pub(super) fn claims_request(
        &self,
        shared: &Shared,
        subject: &str,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let auth = shared.auth();
        let Some(trust) = auth.trust() else {
            return;
        };
        let tokens: Vec<&str> = subject.split('.').collect();
        let reply = msg.reply.map(Bytes::copy_from_slice);
        match tokens[..] {
            ["$SYS", "REQ", "ACCOUNT", key, "CLAIMS", "LOOKUP"] => {
                if let (Some(reply), Some(jwt)) = (reply, trust.lookup(key)) {
                    replies.push(self.reply(reply, jwt.into_bytes()));
                }
            }
            ["$SYS", "REQ", "CLAIMS", "LIST"] => {
                let (Some(reply), Some(store)) = (reply, trust.store()) else {
                    return;
                };
                let keys = serde_json::to_vec(&store.keys()).unwrap_or_default();
                log::debug!(
                    "list request responded with {} account ids",
                    store.keys().len()
                );
                replies.push(self.reply(reply, self.sorted_response(shared, "data", &keys)));
            }
            ["$SYS", "REQ", "CLAIMS", "DELETE"] => {
                let token = String::from_utf8_lossy(msg.data);
                let system = shared.config().system_account_name();
                let Some(delete) = trust.delete(token.trim(), system.as_deref()) else {
                    return;
                };
                let (key, body) = match &delete.outcome {
                    Ok(message) => {
                        log::debug!("{message}");
                        ("data", serde_json::json!({"code": 200, "message": message}))
                    }
                    Err((message, error)) => {
                        log::error!("{message} - {error}");
                        let description = format!("{message} - {error}");
                        (
                            "error",
                            serde_json::json!({"code": 500, "description": description}),
                        )
                    }
                };
                if let Some(reply) = reply {
                    let json = serde_json::to_vec(&body).unwrap_or_default();
                    replies.push(self.reply(reply, self.sorted_response(shared, key, &json)));
                }
                for key in &delete.deleted {
                    expire(shared, key);
                }
                if !delete.deleted.is_empty() {
                    // What deleted accounts exported or imported stops crossing.
                    shared.accounts_changed(true);
                }
            }
            ["$SYS", "REQ", "CLAIMS", "UPDATE"]
            | ["$SYS", "REQ", "ACCOUNT", _, "CLAIMS", "UPDATE"]
            | ["$SYS", "ACCOUNT", _, "CLAIMS", "UPDATE"] => {
                let key = (tokens.len() > 4).then(|| tokens[tokens.len() - 3]);
                let token = String::from_utf8_lossy(msg.data);
                let Some(update) = trust.update(token.trim(), key, &shared.accounts) else {
                    return;
                };
                let (key, body) = match &update.outcome {
                    Ok(message) => {
                        log::debug!("{message} - {}", update.account);
                        let data = serde_json::json!({
                            "account": update.account, "code": 200, "message": message,
                        });
                        ("data", data)
                    }
                    Err((message, error)) => {
                        log::error!("{message} - {} - {error}", update.account);
                        let data = serde_json::json!({
                            "account": update.account, "code": 500,
                            "description": format!("{message} - {error}"),
                        });
                        ("error", data)
                    }
                };
                if let Some(reply) = reply {
                    let json = serde_json::to_vec(&body).unwrap_or_default();
                    replies.push(self.reply(reply, self.sorted_response(shared, key, &json)));
                }
                if update.changed {
                    evict(shared, trust, &update.account);
                    // JetStream for a new account; the bridges only when what it shares
                    // changed (a rebuild drops what crosses meanwhile).
                    shared.accounts_changed(update.sharing_changed);
                }
            }
            _ => {}
        }
    }

    /// `{"<key>":<json>,"server":{...}}`: nats-server's answer as a Go map, whose members
    /// it sorts (`data` and `error` come before `server`).
    fn sorted_response(&self, shared: &Shared, key: &str, json: &[u8]) -> Vec<u8> {
        let server = serde_json::to_vec(&self.server_info(shared)).unwrap_or_default();
        let mut out = Vec::with_capacity(server.len() + json.len() + key.len() + 16);
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(json);
        out.extend_from_slice(b",\"server\":");
        out.extend_from_slice(&server);
        out.push(b'}');
        out
    }
}

/// Closes every client of deleted account `key` as nats-server does (its `removeCb`: the
/// account expires): `-ERR 'Account Authentication Expired'`.
fn expire(shared: &Shared, key: &str) {
    for client in shared.registry.client_list() {
        if client.is_closing() || client.service().is_some() || client.is_route() {
            continue;
        }
        if client.account().name != key {
            continue;
        }
        let mut batch = shared.pool.take();
        batch.push(crate::protocol::err::ACCOUNT_AUTHENTICATION_EXPIRED);
        let _ = client.enqueue(batch, &shared.pool);
        client.close(CloseReason::AuthenticationExpired);
    }
}

/// Closes the clients of account `key` that its new JWT no longer lets in (see
/// [`crate::auth::Trust::evictions`]), with nats-server's errors.
fn evict(shared: &Shared, trust: &crate::auth::Trust<crate::client::Subscription>, key: &str) {
    let mut clients: Vec<_> = shared
        .registry
        .client_list()
        .into_iter()
        .filter(|c| {
            !c.is_closing() && c.service().is_none() && !c.is_route() && c.account().name == key
        })
        .collect();
    // Newest first: over a lowered connection limit, the oldest go (nats-server's order).
    clients.sort_by_key(|c| std::cmp::Reverse(c.start));
    let credentials: Vec<_> = clients.iter().map(|c| c.credentials()).collect();
    let jwts: Vec<&str> = credentials
        .iter()
        .map(|c| c.as_ref().map_or("", |c| c.opts.jwt.as_str()))
        .collect();
    for (i, eviction) in trust.evictions(key, &jwts) {
        let client = &clients[i];
        let (error, reason): (Option<&[u8]>, CloseReason) = match eviction {
            Eviction::Revoked => (
                Some(crate::protocol::err::AUTHENTICATION_REVOKED),
                CloseReason::Revocation,
            ),
            Eviction::BearerRefused => (
                Some(crate::protocol::err::AUTHORIZATION_VIOLATION),
                CloseReason::AuthenticationViolation,
            ),
            Eviction::SignerRemoved => (None, CloseReason::AuthenticationViolation),
            Eviction::TooManyConnections => (
                Some(crate::protocol::err::MAX_ACCOUNT_CONNECTIONS),
                CloseReason::MaxAccountConnectionsExceeded,
            ),
        };
        log::debug!(
            "{} - closed by the account's new JWT: {eviction:?}",
            client.log_prefix()
        );
        if let Some(error) = error {
            let mut batch = shared.pool.take();
            batch.push(error);
            let _ = client.enqueue(batch, &shared.pool);
        }
        client.close(reason);
    }
}
