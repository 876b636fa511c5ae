//! The account-level statistics requests (nats-server's `STATZ` and `CONNS` account
//! services, and the `account_connections` event they share):
//!
//! - `$SYS.REQ.ACCOUNT.<account>.STATZ` answers
//!   `{"server":{...},"data":{"server_id":...,"now":...,"account_statz":[STAT]}}` when the
//!   account has clients on this server (or the body asks `{"include_unused":true}`);
//!   `$SYS.REQ.ACCOUNT.PING.STATZ` the same for every account with clients.
//! - `$SYS.REQ.ACCOUNT.<account>.CONNS` answers the account's `account_connections` event
//!   (as `$SYS.ACCOUNT.<account>.SERVER.CONNS` sends it) when it has clients here.
//! - `$SYS.REQ.ACCOUNT.<account>.INFO` answers `{"server":{...},"data":{...}}` with the
//!   account's detail (`crate::monitor::account_info`), or an `error` (500) for an account
//!   that does not exist.
//!
//! `STAT` is nats-server's `AccountStat`: `acc`, `conns`, `leafnodes`, `total_conns`,
//! `sent`, `received`, `slow_consumers`. beaver counts clients per account (those its
//! connect events announced), not traffic: `sent` and `received` are zero, as nats-server
//! 2.9.10 shows them in the connection events.

use super::{ServerInfo, System};
use crate::client::{ServiceMsg, ServiceReply};
use crate::monitor::GoTime;
use crate::shared::Shared;
use bytes::Bytes;
use serde::Serialize;
use std::time::SystemTime;

/// nats-server's `AccountNumConns`, in its field order.
#[derive(Serialize)]
pub(super) struct AccountConnections {
    #[serde(rename = "type")]
    kind: &'static str,
    id: String,
    timestamp: GoTime,
    server: ServerInfo,
    #[serde(flatten)]
    stat: AccountStat,
}

/// nats-server's `AccountStat`, in its field order.
#[derive(Serialize)]
struct AccountStat {
    acc: String,
    conns: i64,
    leafnodes: u64,
    total_conns: i64,
    sent: DataStats,
    received: DataStats,
    slow_consumers: u64,
}

/// nats-server's `AccountStatz`.
#[derive(Serialize)]
struct AccountStatz {
    server_id: String,
    now: GoTime,
    account_statz: Vec<AccountStat>,
}

/// Messages and bytes (nats-server's `DataStats`).
#[derive(Serialize, Clone, Copy)]
pub(super) struct DataStats {
    pub(super) msgs: u64,
    pub(super) bytes: u64,
}

impl System {
    /// `account`'s statistics now.
    fn account_stat(&self, account: &str) -> AccountStat {
        let conns = self.connections.lock().get(account).copied().unwrap_or(0);
        let zero = DataStats { msgs: 0, bytes: 0 };
        AccountStat {
            acc: account.to_owned(),
            conns,
            leafnodes: 0,
            total_conns: conns,
            sent: zero,
            received: zero,
            slow_consumers: 0,
        }
    }

    /// `account`'s `account_connections` event.
    pub(super) fn account_connections(&self, shared: &Shared, account: &str) -> AccountConnections {
        AccountConnections {
            kind: "io.nats.server.advisory.v1.account_connections",
            id: crate::shared::random_token(22),
            timestamp: GoTime(SystemTime::now()),
            server: self.server_info(shared),
            stat: self.account_stat(account),
        }
    }

    /// `$SYS.REQ.ACCOUNT.<account>.STATZ` or `.CONNS` (see the module docs); `account` is
    /// `PING` for every account.
    pub(super) fn account_request(
        &self,
        shared: &Shared,
        account: &str,
        name: &str,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let Some(reply) = msg.reply.map(Bytes::copy_from_slice) else {
            return;
        };
        if name == "INFO" {
            let system = shared.config().system_account_name().unwrap_or_default();
            let body = match crate::monitor::account_info(shared, account, &system) {
                Ok(info) => self.response(shared, "data", &info),
                Err(e) => self.response(shared, "error", &super::ApiError::failed(e)),
            };
            replies.push(self.reply(reply, body));
            return;
        }
        let has_clients = |a: &str| self.connections.lock().get(a).is_some_and(|&n| n > 0);
        if name == "CONNS" {
            if account != "PING" && has_clients(account) {
                let body = serde_json::to_vec(&self.account_connections(shared, account))
                    .unwrap_or_default();
                replies.push(self.reply(reply, body));
            }
            return;
        }
        let include_unused = serde_json::from_slice::<serde_json::Value>(msg.data)
            .ok()
            .and_then(|v| v.get("include_unused").and_then(serde_json::Value::as_bool))
            .unwrap_or(false);
        let names: Vec<String> = if account == "PING" {
            let mut all: Vec<String> = self.connections.lock().keys().cloned().collect();
            all.sort();
            all
        } else {
            vec![account.to_owned()]
        };
        let stats: Vec<AccountStat> = names
            .iter()
            .filter(|a| include_unused || has_clients(a))
            .map(|a| self.account_stat(a))
            .collect();
        if stats.is_empty() {
            // nats-server stays silent rather than answer with nothing.
            return;
        }
        let statz = AccountStatz {
            server_id: shared.server_id.clone(),
            now: GoTime(SystemTime::now()),
            account_statz: stats,
        };
        let body = self.response(shared, "data", &statz);
        replies.push(self.reply(reply, body));
    }
}
