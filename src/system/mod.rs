//! The system account's request subjects: the server's reports over NATS, as nats-server
//! 2.9.10 answers them to users of its system account (`system_account`).
//!
//! | subject | answer |
//! | --- | --- |
//! | `$SYS.REQ.SERVER.PING`, `$SYS.REQ.SERVER.PING.STATSZ`, `$SYS.REQ.SERVER.<id>.STATSZ` | `{"server":{...},"statsz":{...}}` |
//! | `$SYS.REQ.SERVER.PING.<R>`, `$SYS.REQ.SERVER.<id>.<R>`, `R` one of `VARZ`, `CONNZ`, `SUBSZ`, `ROUTEZ`, `LEAFZ`, `JSZ`, `HEALTHZ` | `{"server":{...},"data":{...}}`, the report of `/r` |
//! | `$SYS.REQ.ACCOUNT.<account>.<R>`, `R` one of `CONNZ`, `SUBSZ`, `LEAFZ`, `JSZ` | the same, for that account only |
//! | `$SYS.REQ.ACCOUNT.<account>.STATZ`, `$SYS.REQ.ACCOUNT.PING.STATZ` | `{"server":{...},"data":{"server_id":...,"now":...,"account_statz":[...]}}` (see the `accounts` module) |
//! | `$SYS.REQ.ACCOUNT.<account>.CONNS` | the account's `account_connections` event |
//! | `$SYS.REQ.ACCOUNT.<account>.INFO` | `{"server":{...},"data":{...}}`, the account's detail of `/accountz?acc=` |
//!
//! `server` identifies the answering server (nats-server's `ServerInfo`: `name`, `host`,
//! `id`, `cluster`, `ver`, `seq`, `jetstream`, `time`); `seq` counts this server's system
//! messages. A request's body may hold the report's options as JSON (`{"subscriptions":
//! true}`, `{"acc": "A"}`, ... with nats-server's field names) and the filters every server
//! applies before answering (`server_name`, `host`, `cluster`: a server whose value does not
//! contain the filter stays silent, so that a `PING` to many servers selects some). A body
//! that is not JSON gets `{"server":{...},"error":{"code":400,"description":...}}`.
//!
//! The subscriptions are a service's ([`crate::client::Service`]) in the system account:
//! requests are answered on the requester's reader thread, the reply delivered like any
//! publish. In a cluster the interest crosses routes, so a `PING` reaches every server.
//!
//! It also publishes client events (see the `Events` implementation below).
//!
//! With the full account resolver, it also takes account JWTs pushed by `nsc push` (see
//! the `claims` module).
//!
//! It sends the periodic `$SYS.SERVER.<id>.STATSZ` and account connection heartbeats too
//! (the `heartbeat` module).
//!
//! Not yet: `GATEWAYZ`, and compressed answers (`Accept-Encoding`).

mod accounts;
mod claims;
mod heartbeat;

use accounts::DataStats;

use crate::client::{Account, Client, Service, ServiceMsg, ServiceReply, Subscription};
use crate::monitor::{GoTime, Layout, Query, Report, Reports};
use crate::shared::Shared;
use bytes::Bytes;
use parking_lot::Mutex;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::SystemTime;

/// The system account's services of one server (see the module docs). Dropped with the
/// server.
pub struct System {
    shared: Weak<Shared>,
    reports: Arc<Reports>,
    account: Arc<Account>,
    /// The `seq` of the next system message (nats-server's `sys.seq`).
    seq: AtomicU64,
    /// The service's subscribers (kept so that they stay registered).
    clients: Mutex<Vec<Arc<Client>>>,
    /// Clients announced per account (for `SERVER.CONNS`). A leaf lock.
    connections: Mutex<std::collections::HashMap<String, i64>>,
}

/// The requests, by where their subject says what is asked.
const PING: &str = "$SYS.REQ.SERVER.PING";

impl System {
    /// Subscribes the system account's request subjects in `account`, answered from
    /// `reports`.
    pub fn start(
        shared: &Arc<Shared>,
        reports: Arc<Reports>,
        account: Arc<Account>,
    ) -> Arc<System> {
        let system = Arc::new(System {
            shared: Arc::downgrade(shared),
            reports,
            account: account.clone(),
            seq: AtomicU64::new(1),
            clients: Mutex::new(Vec::new()),
            connections: Mutex::new(std::collections::HashMap::new()),
        });
        let direct = format!("$SYS.REQ.SERVER.{}.*", shared.server_id);
        for subject in [
            PING,
            "$SYS.REQ.SERVER.PING.*",
            direct.as_str(),
            "$SYS.REQ.ACCOUNT.*.*",
        ] {
            system.subscribe(shared, subject.as_bytes());
        }
        heartbeat::start(&system, shared);
        // The full resolver's requests (`nsc push`).
        if shared.auth().trust().is_some_and(|t| t.store().is_some()) {
            for subject in claims::SUBJECTS {
                system.subscribe(shared, subject.as_bytes());
            }
        }
        system
    }

    fn subscribe(self: &Arc<Self>, shared: &Arc<Shared>, subject: &[u8]) {
        let service: Arc<dyn Service> = Arc::new(Handle(Arc::downgrade(self)));
        // Announced: a PING from a client of another server reaches this one too.
        if let Some(client) =
            shared.subscribe_service(&self.account, subject, b"system", service, true)
        {
            self.clients.lock().push(client);
        }
    }

    /// Answers one request (see the module docs).
    fn request(&self, msg: &ServiceMsg<'_>, replies: &mut Vec<ServiceReply>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let subject = String::from_utf8_lossy(msg.subject);
        if claims::is_claims_subject(&subject) {
            self.claims_request(&shared, &subject, msg, replies);
            return;
        }
        // `$SYS.REQ.ACCOUNT.<account>.<NAME>`: the report limited to one account.
        let account = subject
            .strip_prefix("$SYS.REQ.ACCOUNT.")
            .and_then(|rest| rest.rsplit_once('.'))
            .map(|(account, _)| account.to_owned());
        let name = match subject.strip_prefix(PING) {
            Some("") => "STATSZ",
            Some(rest) => rest.trim_start_matches('.'),
            // `$SYS.REQ.SERVER.<id>.<NAME>`, `$SYS.REQ.ACCOUNT.<account>.<NAME>`
            None => subject.rsplit('.').next().unwrap_or_default(),
        };
        if let Some(account) = &account {
            if matches!(name, "STATZ" | "CONNS" | "INFO") {
                self.account_request(&shared, account, name, msg, replies);
                return;
            }
            if !matches!(name, "CONNZ" | "SUBSZ" | "LEAFZ" | "JSZ") {
                return;
            }
        }
        let reply = match msg.reply {
            Some(r) => Bytes::copy_from_slice(r),
            // A STATSZ without a reply goes to the server's own stats subject, as
            // nats-server sends it; other reports need someone to answer to.
            None if name == "STATSZ" => {
                Bytes::from(format!("$SYS.SERVER.{}.STATSZ", shared.server_id))
            }
            None => return,
        };
        let options = match Options::parse(msg.data) {
            Ok(mut o) => {
                if let Some(account) = &account {
                    // nats-server's account requests: the account from the subject, and for
                    // SUBSZ the list of subscriptions.
                    o.rest.insert("acc".into(), account.clone().into());
                    if name == "SUBSZ" {
                        o.rest.insert("subscriptions".into(), true.into());
                    }
                }
                o
            }
            Err(e) => {
                let body = self.response(&shared, "error", &ApiError::bad_request(e));
                replies.push(self.reply(reply, body));
                return;
            }
        };
        if !options.selects(&shared) {
            return;
        }
        let body = if name == "STATSZ" {
            self.response(&shared, "statsz", &self.reports.statsz())
        } else {
            let Some(report) = Report::from_request_name(name) else {
                return;
            };
            match self
                .reports
                .render(report, &options.query(report), Layout::Compact)
            {
                Ok(data) => self.response_raw(&shared, "data", &data),
                // nats-server: a report that fails is a 500 (a body that is not JSON, 400).
                Err(e) => self.response(&shared, "error", &ApiError::failed(e)),
            }
        };
        replies.push(self.reply(reply, body));
    }

    /// `{"server":{...},"<key>":<value>}`.
    fn response<T: Serialize>(&self, shared: &Shared, key: &str, value: &T) -> Vec<u8> {
        let value = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
        self.response_raw(shared, key, &value)
    }

    /// `{"server":{...},"<key>":<json>}` with `json` as given.
    fn response_raw(&self, shared: &Shared, key: &str, json: &[u8]) -> Vec<u8> {
        let server = serde_json::to_vec(&self.server_info(shared)).unwrap_or_default();
        let mut out = Vec::with_capacity(server.len() + json.len() + key.len() + 16);
        out.extend_from_slice(b"{\"server\":");
        out.extend_from_slice(&server);
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(json);
        out.push(b'}');
        out
    }

    fn reply(&self, subject: Bytes, data: Vec<u8>) -> ServiceReply {
        ServiceReply {
            account: self.account.clone(),
            subject,
            reply: None,
            headers: Bytes::new(),
            data: Bytes::from(data),
        }
    }

    /// nats-server's `ServerInfo` of this server, with the next `seq`.
    fn server_info(&self, shared: &Shared) -> ServerInfo {
        let config = shared.config();
        ServerInfo {
            name: shared.server_name.clone(),
            host: config.host.clone(),
            id: shared.server_id.clone(),
            cluster: shared.cluster.as_ref().map(|c| c.name()),
            ver: crate::protocol::NATS_VERSION,
            // Relaxed: a counter that only needs to be unique and increasing.
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            jetstream: config.jetstream.is_some(),
            time: GoTime(SystemTime::now()),
        }
    }
}

/// The answering server, as nats-server's `ServerInfo` (its field order).
#[derive(Serialize)]
struct ServerInfo {
    name: String,
    host: String,
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<String>,
    ver: &'static str,
    seq: u64,
    jetstream: bool,
    time: GoTime,
}

/// nats-server's `ApiError`.
#[derive(Serialize)]
struct ApiError {
    code: u16,
    description: String,
}

impl ApiError {
    fn failed(description: String) -> ApiError {
        ApiError {
            code: 500,
            description,
        }
    }

    fn bad_request(description: String) -> ApiError {
        ApiError {
            code: 400,
            description,
        }
    }
}

/// A request's body: the filters, and the report's options.
#[derive(Default)]
struct Options {
    server_name: String,
    host: String,
    cluster: String,
    /// The rest of the JSON object, for the report.
    rest: serde_json::Map<String, serde_json::Value>,
}

impl Options {
    /// An empty body is no options; otherwise a JSON object (Go's error words otherwise).
    fn parse(data: &[u8]) -> Result<Options, String> {
        if data.iter().all(u8::is_ascii_whitespace) {
            return Ok(Options::default());
        }
        let mut rest: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(data).map_err(|e| e.to_string())?;
        let mut take = |key: &str| match rest.remove(key) {
            Some(serde_json::Value::String(s)) => s,
            _ => String::new(),
        };
        Ok(Options {
            server_name: take("server_name"),
            host: take("host"),
            cluster: take("cluster"),
            rest,
        })
    }

    /// Whether this server passes the filters (nats-server's `filterRequest`: each given
    /// filter must be contained in the server's value).
    fn selects(&self, shared: &Shared) -> bool {
        let cluster = shared
            .cluster
            .as_ref()
            .map(|c| c.name())
            .unwrap_or_default();
        shared.server_name.contains(&self.server_name)
            && shared.config().host.contains(&self.host)
            && cluster.contains(&self.cluster)
    }

    /// The report's options as the HTTP endpoint's query (nats-server's JSON names mapped
    /// to its query parameters).
    fn query(&self, report: Report) -> Query {
        let mut pairs = Vec::new();
        let mut subs = None;
        for (key, value) in &self.rest {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Bool(b) => b.to_string(),
                serde_json::Value::Number(n) => n.to_string(),
                _ => continue,
            };
            match (key.as_str(), value) {
                ("subscriptions", serde_json::Value::Bool(true)) => {
                    subs.get_or_insert("1");
                }
                ("subscriptions_detail", serde_json::Value::Bool(true)) => subs = Some("detail"),
                ("subscriptions" | "subscriptions_detail", _) => {}
                // ConnState: 0 open, 1 closed, 2 all.
                ("state", serde_json::Value::Number(n)) if report == Report::Connz => {
                    let state = match n.as_u64() {
                        Some(1) => "closed",
                        Some(2) => "any",
                        _ => "open",
                    };
                    pairs.push(("state".to_owned(), state.to_owned()));
                }
                ("account", _) => pairs.push(("acc".to_owned(), text)),
                _ => pairs.push((key.clone(), text)),
            }
        }
        if let Some(s) = subs {
            pairs.push(("subs".to_owned(), s.to_owned()));
        }
        Query::from_pairs(pairs)
    }
}

struct Handle(Weak<System>);

impl Service for Handle {
    fn on_message(
        &self,
        _sub: &Subscription,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        if let Some(system) = self.0.upgrade() {
            system.request(msg, replies);
        }
    }
}

/// Connect, disconnect and authentication-error events (nats-server's
/// `accountConnectEvent`, `accountDisconnectEvent`, `sendAuthErrorEvent`): published in the
/// system account on `$SYS.ACCOUNT.<account>.CONNECT`, `...DISCONNECT` (clients of the
/// global account `$G` are not announced, as in nats-server) and
/// `$SYS.SERVER.<id>.CLIENT.AUTH.ERR`, with nats-server's JSON.
impl crate::shared::Events for System {
    fn connected(&self, client: &Client) {
        let account = client.account();
        if account.is_global() {
            return;
        }
        self.count_connections(&account.name, 1);
        self.event(
            &format!("$SYS.ACCOUNT.{}.CONNECT", account.name),
            "io.nats.server.advisory.v1.client_connect",
            client,
            None,
        );
    }

    fn disconnected(&self, client: &Client, reason: crate::close::CloseReason) {
        let account = client.account();
        if account.is_global() {
            return;
        }
        self.count_connections(&account.name, -1);
        self.event(
            &format!("$SYS.ACCOUNT.{}.DISCONNECT", account.name),
            "io.nats.server.advisory.v1.client_disconnect",
            client,
            Some(reason),
        );
    }

    fn auth_failed(&self, client: &Client, user: &str) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        self.event_as(
            &format!("$SYS.SERVER.{}.CLIENT.AUTH.ERR", shared.server_id),
            "io.nats.server.advisory.v1.client_disconnect",
            client,
            Some(crate::close::CloseReason::AuthenticationViolation),
            Some(user),
        );
    }
}

impl System {
    /// Publishes `$SYS.SERVER.<id>.STATSZ` (the periodic statistics).
    fn send_statsz(&self, shared: &Shared) {
        let body = self.response(shared, "statsz", &self.reports.statsz());
        let subject = format!("$SYS.SERVER.{}.STATSZ", shared.server_id);
        crate::delivery::publish_internal(shared, &self.account, &subject, &body);
    }

    /// Publishes `$SYS.ACCOUNT.<account>.SERVER.CONNS` for each account with clients here
    /// (nats-server's heartbeat of `accConnsUpdate`).
    fn send_account_heartbeats(&self, shared: &Shared) {
        let mut accounts: Vec<String> = self
            .connections
            .lock()
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(a, _)| a.clone())
            .collect();
        accounts.sort();
        for account in accounts {
            let body =
                serde_json::to_vec(&self.account_connections(shared, &account)).unwrap_or_default();
            let subject = format!("$SYS.ACCOUNT.{account}.SERVER.CONNS");
            crate::delivery::publish_internal(shared, &self.account, &subject, &body);
        }
    }

    /// One more (or fewer) client in `account`; publishes nats-server's
    /// `$SYS.ACCOUNT.<account>.SERVER.CONNS` (`account_connections`) with the new count.
    fn count_connections(&self, account: &str, change: i64) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        {
            let mut counts = self.connections.lock();
            let n = counts.entry(account.to_owned()).or_insert(0);
            *n = (*n + change).max(0);
        }
        let body =
            serde_json::to_vec(&self.account_connections(&shared, account)).unwrap_or_default();
        let subject = format!("$SYS.ACCOUNT.{account}.SERVER.CONNS");
        crate::delivery::publish_internal(&shared, &self.account, &subject, &body);
    }

    /// Publishes one client event (`reason`: a disconnect, with the client's traffic).
    fn event(
        &self,
        subject: &str,
        kind: &'static str,
        client: &Client,
        reason: Option<crate::close::CloseReason>,
    ) {
        self.event_as(subject, kind, client, reason, None);
    }

    /// [`System::event`], naming the user as `user` when given (a refused client has no
    /// authorized user: it is who it claimed to be).
    fn event_as(
        &self,
        subject: &str,
        kind: &'static str,
        client: &Client,
        reason: Option<crate::close::CloseReason>,
        user: Option<&str>,
    ) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let now = SystemTime::now();
        let (name, lang, version) = client.identity();
        let jwt = client
            .credentials()
            .map(|c| c.opts.jwt.clone())
            .unwrap_or_default();
        let traffic = client.stats.snapshot();
        let event = ClientEvent {
            kind,
            id: crate::shared::random_token(22),
            timestamp: GoTime(now),
            server: self.server_info(&shared),
            client: ClientInfo {
                start: GoTime(client.start),
                host: client.addr.ip().to_string(),
                id: client.cid,
                acc: client.account().name.clone(),
                user: user.map_or_else(|| client.authorized_user(), str::to_owned),
                name,
                lang,
                ver: version,
                rtt: reason.map_or(0, |_| {
                    u64::try_from(client.rtt().as_nanos()).unwrap_or(u64::MAX)
                }),
                stop: reason.map(|_| GoTime(now)),
                jwt,
                kind: "Client",
                client_type: if client.is_websocket() {
                    "websocket"
                } else {
                    "nats"
                },
            },
            sent: reason.map(|_| DataStats {
                msgs: traffic.in_msgs,
                bytes: traffic.in_bytes,
            }),
            received: reason.map(|_| DataStats {
                msgs: traffic.out_msgs,
                bytes: traffic.out_bytes,
            }),
            reason: reason.map(|r| r.as_str()),
        };
        let body = serde_json::to_vec(&event).unwrap_or_default();
        crate::delivery::publish_internal(&shared, &self.account, subject, &body);
    }
}

/// nats-server's `ConnectEventMsg` / `DisconnectEventMsg`, in its field order.
#[derive(Serialize)]
struct ClientEvent {
    #[serde(rename = "type")]
    kind: &'static str,
    id: String,
    timestamp: GoTime,
    server: ServerInfo,
    client: ClientInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    sent: Option<DataStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    received: Option<DataStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

/// nats-server's `ClientInfo` (the fields beaver knows), in its order.
#[derive(Serialize)]
struct ClientInfo {
    start: GoTime,
    host: String,
    id: u64,
    acc: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    user: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    lang: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    ver: String,
    #[serde(skip_serializing_if = "is_zero")]
    rtt: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<GoTime>,
    #[serde(skip_serializing_if = "String::is_empty")]
    jwt: String,
    kind: &'static str,
    client_type: &'static str,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_the_report_query() {
        let o = Options::parse(br#"{"subscriptions":true,"acc":"APP","server_name":"x"}"#).unwrap();
        assert_eq!(o.server_name, "x");
        let q = o.query(Report::Subsz);
        assert_eq!(q.get("subs"), "1");
        assert_eq!(q.get("acc"), "APP");
        let q = Options::parse(br#"{"subscriptions_detail":true,"state":1}"#)
            .unwrap()
            .query(Report::Connz);
        assert_eq!((q.get("subs"), q.get("state")), ("detail", "closed"));
        assert!(Options::parse(b"nope").is_err());
        assert!(Options::parse(b"  ").is_ok());
    }
}
