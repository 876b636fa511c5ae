//! `GET /connz`: the client connections, open and recently closed (nats-server's `Connz`).
//!
//! Query parameters, as nats-server 2.9 decodes them (bad values get a 400 with its
//! message):
//! - `sort`: `cid` (default) and `start` ascending by cid; `subs`, `pending`, `msgs_to`,
//!   `msgs_from`, `bytes_to`, `bytes_from`, `last` (last activity), `idle` descending;
//!   `uptime` ascending; `stop` (descending) and `reason` (ascending) only with
//!   `state=closed`. Ties keep cid order.
//! - `offset`, `limit` (default 1024): paging after sorting.
//! - `cid=N`: only that connection (`limit` becomes 1).
//! - `state=open` (default), `closed`, `all` (or `any`).
//! - `subs=1` adds `subscriptions_list` (subjects), `subs=detail` adds
//!   `subscriptions_list_detail` (objects).
//! - `auth=1` adds `authorized_user` (the user name, or the token, when authentication is
//!   on); `user=NAME` lists only that user's connections.
//! - `auth=1` also adds `account` for a connection outside the global account `$G`.
//! - `acc=NAME`: only the connections in account `NAME` (`$G`: those outside the configured
//!   accounts); an account that does not exist gives an empty list with an empty
//!   `server_id`, as nats-server. `mqtt_client`: accepted, matches nothing special.

use super::json::{go_rtt, is_zero, uptime, GoTime};
use super::query::{decode_bool, decode_int, decode_subs, decode_uint, Query, SubsMode};
use crate::client::{Client, ClientSnapshot, SubSnapshot, Subscription, Traffic};
use crate::shared::ClosedConn;
use crate::shared::Shared;
use serde::Serialize;
use std::cmp::{Ordering, Reverse};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use crate::account::GLOBAL_ACCOUNT;

/// Connections listed when `limit` is not given (nats-server's `DefaultConnListSize`).
pub const DEFAULT_LIMIT: u64 = 1024;

/// One connection in `/connz` (nats-server's `ConnInfo`, same field names and order; empty
/// optional fields are omitted as Go's `omitempty` does).
#[derive(Debug, Clone, Serialize)]
pub struct ConnInfo {
    /// Connection id.
    pub cid: u64,
    /// Always `Client`.
    pub kind: &'static str,
    /// `nats`, or `websocket` for a WebSocket client.
    #[serde(rename = "type")]
    pub conn_type: &'static str,
    /// The client's IP address.
    pub ip: String,
    /// The client's port.
    pub port: u16,
    /// When the connection was accepted.
    pub start: GoTime,
    /// When it last published, (un)subscribed or sent `CONNECT` (`start` before that).
    pub last_activity: GoTime,
    /// When it closed (closed connections only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<GoTime>,
    /// Why it closed, in nats-server's words (closed connections only).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    /// Last measured round trip, as Go prints durations (`595µs`); `0s` if not measured.
    pub rtt: String,
    /// How long it has been (or was) open, as nats-server prints uptimes (`1m2s`).
    pub uptime: String,
    /// How long since `last_activity` (until `stop` for a closed connection).
    pub idle: String,
    /// Bytes queued for the client.
    pub pending_bytes: usize,
    /// Messages received from the client.
    pub in_msgs: u64,
    /// Messages delivered to the client.
    pub out_msgs: u64,
    /// Payload bytes (headers included) received from the client.
    pub in_bytes: u64,
    /// Payload bytes (headers included) delivered to the client.
    pub out_bytes: u64,
    /// Number of subscriptions.
    pub subscriptions: usize,
    /// `name` from `CONNECT`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `lang` from `CONNECT`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang: String,
    /// `version` from `CONNECT`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Negotiated TLS version (`1.3`), TLS connections only.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tls_version: String,
    /// Negotiated cipher suite, Go's name (`TLS_AES_128_GCM_SHA256`).
    #[serde(rename = "tls_cipher_suite", skip_serializing_if = "String::is_empty")]
    pub tls_cipher: String,
    /// The authorized user (user name, or token), shown with `auth=1` only.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub authorized_user: String,
    /// The connection's account when it is not `$G`, shown with `auth=1` only.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub account: String,
    /// Subjects of the subscriptions (`subs=1`), in sid order.
    #[serde(rename = "subscriptions_list", skip_serializing_if = "Vec::is_empty")]
    pub subs: Vec<String>,
    /// The subscriptions in detail (`subs=detail`), in sid order.
    #[serde(
        rename = "subscriptions_list_detail",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subs_detail: Vec<SubDetail>,
}

impl ConnInfo {
    /// The connection `client` (a snapshot) as of `now`, with `num_subs` subscriptions and
    /// no subscription lists.
    pub fn of(client: &ClientSnapshot, now: SystemTime, num_subs: usize) -> ConnInfo {
        let last = client.last_activity;
        let since = |t: SystemTime| now.duration_since(t).unwrap_or(Duration::ZERO);
        let mut info = ConnInfo {
            cid: client.cid,
            kind: "Client",
            conn_type: if client.websocket {
                "websocket"
            } else {
                "nats"
            },
            ip: client.addr.ip().to_string(),
            port: client.addr.port(),
            start: GoTime(client.start),
            last_activity: GoTime(last),
            stop: None,
            reason: "",
            rtt: go_rtt(client.rtt),
            uptime: uptime(since(client.start)),
            idle: uptime(since(last)),
            pending_bytes: client.pending_bytes,
            in_msgs: 0,
            out_msgs: 0,
            in_bytes: 0,
            out_bytes: 0,
            subscriptions: num_subs,
            name: client.name.clone(),
            lang: client.lang.clone(),
            version: client.version.clone(),
            tls_version: client.tls_version.clone(),
            tls_cipher: client.tls_cipher.clone(),
            authorized_user: client.authorized_user.clone(),
            account: client.account.clone(),
            subs: Vec::new(),
            subs_detail: Vec::new(),
        };
        info.set_traffic(client.traffic);
        info
    }

    /// A closed connection, as it was when it closed: uptime and idle time end at its
    /// `stop`, which is shown with its close reason.
    pub fn closed(conn: &ClosedConn) -> ConnInfo {
        let mut info = ConnInfo::of(&conn.client, conn.stop, conn.subs.len());
        info.stop = Some(GoTime(conn.stop));
        info.reason = conn.reason.as_str();
        info
    }

    /// Sets the message and byte counters.
    pub fn set_traffic(&mut self, t: Traffic) {
        self.in_msgs = t.in_msgs;
        self.in_bytes = t.in_bytes;
        self.out_msgs = t.out_msgs;
        self.out_bytes = t.out_bytes;
    }
}

/// One subscription in detail (nats-server's `SubDetail`): in `/connz?subs=detail` and in
/// `/subsz?subs=1`.
#[derive(Debug, Clone, Serialize)]
pub struct SubDetail {
    /// The subscription's account. nats-server omits it in an open connection's `/connz`
    /// details.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub account: String,
    /// The subject.
    pub subject: String,
    /// The queue group, if any.
    #[serde(rename = "qgroup", skip_serializing_if = "String::is_empty")]
    pub queue: String,
    /// The subscription id.
    pub sid: String,
    /// Messages delivered to it.
    pub msgs: u64,
    /// Its auto-unsubscribe limit (`UNSUB <sid> <max>`), omitted when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub max: u64,
    /// The connection it belongs to.
    pub cid: u64,
}

impl SubDetail {
    /// `sub` in detail; with its account filled in or not.
    pub fn of(sub: &SubSnapshot, with_account: bool) -> SubDetail {
        SubDetail {
            account: if with_account {
                sub.account.clone()
            } else {
                String::new()
            },
            subject: sub.subject.clone(),
            queue: sub.queue.clone(),
            sid: sub.sid.clone(),
            msgs: sub.msgs,
            max: sub.max,
            cid: sub.cid,
        }
    }
}

/// Puts subscriptions in sid order: numeric sids by value, then the others as text.
/// (nats-server lists them in Go map order, which is random.)
pub fn sort_subs(subs: &mut [SubDetail]) {
    subs.sort_by(|a, b| sid_order(&a.sid, &b.sid).then(a.cid.cmp(&b.cid)));
}

/// Numeric sids by value before other sids, which compare as text.
pub fn sid_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// The `/connz` document.
#[derive(Debug, Serialize)]
pub struct Connz {
    /// This server's id.
    pub server_id: String,
    /// When this was computed.
    pub now: GoTime,
    /// Connections in `connections`.
    pub num_connections: usize,
    /// Connections in the requested state (before `offset`/`limit`).
    pub total: usize,
    /// The `offset` applied.
    pub offset: u64,
    /// The `limit` applied.
    pub limit: u64,
    /// The connections.
    pub connections: Vec<ConnInfo>,
}

/// Which connections `state=` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Open connections (default).
    Open,
    /// Recently closed connections.
    Closed,
    /// Both.
    All,
}

/// `/connz` sort orders (nats-server's `SortOpt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// `cid` or `start`.
    Cid,
    /// `subs`.
    Subs,
    /// `pending`.
    Pending,
    /// `msgs_to`.
    OutMsgs,
    /// `msgs_from`.
    InMsgs,
    /// `bytes_to`.
    OutBytes,
    /// `bytes_from`.
    InBytes,
    /// `last`.
    Last,
    /// `idle`.
    Idle,
    /// `uptime`.
    Uptime,
    /// `stop`.
    Stop,
    /// `reason`.
    Reason,
}

impl SortBy {
    /// The option named `s` (empty: the default), if valid.
    pub fn parse(s: &str) -> Option<SortBy> {
        Some(match s {
            "" | "cid" | "start" => SortBy::Cid,
            "subs" => SortBy::Subs,
            "pending" => SortBy::Pending,
            "msgs_to" => SortBy::OutMsgs,
            "msgs_from" => SortBy::InMsgs,
            "bytes_to" => SortBy::OutBytes,
            "bytes_from" => SortBy::InBytes,
            "last" => SortBy::Last,
            "idle" => SortBy::Idle,
            "uptime" => SortBy::Uptime,
            "stop" => SortBy::Stop,
            "reason" => SortBy::Reason,
            _ => return None,
        })
    }
}

/// The decoded query of a `/connz` request.
#[derive(Debug, Clone)]
pub struct ConnzOptions {
    /// `sort`, as given (validated by [`connz`]).
    pub sort: String,
    /// `subs`.
    pub subs: SubsMode,
    /// `offset` (negative means 0).
    pub offset: i64,
    /// `limit` (0 or negative means the default).
    pub limit: i64,
    /// `cid` (0: any).
    pub cid: u64,
    /// `state`.
    pub state: ConnState,
    /// `auth`: show `authorized_user`.
    pub auth: bool,
    /// `user`: only the connections of this authorized user (its bytes, as sent: a value
    /// that is not UTF-8 matches nobody, as in nats-server).
    pub user: Vec<u8>,
    /// `acc`: only the connections of this account (empty: all; bytes as for `user`).
    pub account: Vec<u8>,
}

impl ConnzOptions {
    /// Decodes the query in nats-server's order; the error is the 400 message.
    pub fn decode(q: &Query) -> Result<ConnzOptions, String> {
        let sort = q.get("sort").to_owned();
        let auth = decode_bool(q, "auth")?;
        let subs = decode_subs(q)?;
        let offset = decode_int(q, "offset")?;
        let limit = decode_int(q, "limit")?;
        let cid = decode_uint(q, "cid")?;
        let state = match q.get("state").to_ascii_lowercase().as_str() {
            "" | "open" => ConnState::Open,
            "closed" => ConnState::Closed,
            "any" | "all" => ConnState::All,
            _ => return Err(format!("Error decoding state for {}", q.get("state"))),
        };
        Ok(ConnzOptions {
            sort,
            subs,
            offset,
            limit,
            cid,
            state,
            auth,
            user: q.get_raw("user").to_vec(),
            account: q.get_raw("acc").to_vec(),
        })
    }
}

/// Builds `/connz` (nats-server's `Server.Connz`); the error is the 400 message.
pub fn connz(shared: &Shared, opts: &ConnzOptions) -> Result<Connz, String> {
    let sort = SortBy::parse(&opts.sort)
        .ok_or_else(|| format!("invalid sorting option: {}", opts.sort))?;
    if sort == SortBy::Stop && opts.state != ConnState::Closed {
        return Err("sort by stop only valid on closed connections".into());
    }
    if sort == SortBy::Reason && opts.state != ConnState::Closed {
        return Err("sort by reason only valid on closed connections".into());
    }
    let offset = opts.offset.max(0) as u64;
    let limit = match opts.limit {
        l if l <= 0 => DEFAULT_LIMIT,
        l => l as u64,
    };
    let limit = if opts.cid > 0 { 1 } else { limit };
    let now = SystemTime::now();
    let want_open = opts.state != ConnState::Closed;
    let want_closed = opts.state != ConnState::Open;
    let known_account = std::str::from_utf8(&opts.account)
        .ok()
        .and_then(|a| shared.accounts.get(a))
        .is_some();
    if !opts.account.is_empty() && !known_account {
        // No such account: nats-server answers an empty list without its server id.
        return Ok(Connz {
            server_id: String::new(),
            now: GoTime(now),
            num_connections: 0,
            total: 0,
            offset,
            limit,
            connections: Vec::new(),
        });
    }

    // Take the two lists under the departure lock: a connection that is leaving moves
    // from the registry to the ring under that lock (`Registry::depart`), so `state=all`
    // sees it exactly once. Only `Arc` clones are taken here; the client's own locks (its
    // subscriptions, its identity) are taken after the lock is released.
    let registry = &shared.registry;
    let (open, closed, total) = registry.consistent(|ring| {
        let mut total = 0;
        let mut open: Vec<Arc<Client>> = Vec::new();
        let mut closed: Vec<Arc<ClosedConn>> = Vec::new();
        if want_open {
            total += registry.len();
            if opts.cid > 0 {
                open.extend(registry.get(opts.cid));
            } else {
                open.extend(registry.client_list());
            }
        }
        if want_closed {
            total += ring.len();
            closed.extend(
                ring.iter()
                    .filter(|c| opts.cid == 0 || c.client.cid == opts.cid)
                    .cloned(),
            );
        }
        (open, closed, total)
    });

    let mut conns: Vec<ConnInfo> = Vec::with_capacity(open.len() + closed.len());
    for client in &open {
        let subs: Vec<Arc<Subscription>> = client.subs.lock().values().cloned().collect();
        let mut info = ConnInfo::of(&ClientSnapshot::of(client), now, subs.len());
        if opts.subs != SubsMode::None && !subs.is_empty() {
            let mut details: Vec<SubDetail> = subs
                .iter()
                .map(|s| SubDetail::of(&SubSnapshot::of(s), false))
                .collect();
            sort_subs(&mut details);
            fill_subs(&mut info, details, opts.subs);
        }
        conns.push(info);
    }
    for cc in &closed {
        let mut info = ConnInfo::closed(cc);
        if opts.subs != SubsMode::None && !cc.subs.is_empty() {
            // nats-server fills the account in for a closed connection's subscriptions
            // (`newSubDetail`), not for an open one's (`newClientSubDetail`).
            let mut details: Vec<SubDetail> =
                cc.subs.iter().map(|s| SubDetail::of(s, true)).collect();
            sort_subs(&mut details);
            fill_subs(&mut info, details, opts.subs);
        }
        conns.push(info);
    }

    let mut total = total;
    if !opts.user.is_empty() {
        // nats-server 2.9.10 leaves `total` alone here: it counts every connection of the
        // state asked for, whoever's (`Connz` sets `c.Total` before filtering by user).
        conns.retain(|c| c.authorized_user.as_bytes() == opts.user);
    }
    if !opts.account.is_empty() {
        // `account` is empty for `$G` (see `ConnInfo::of`).
        let global = opts.account == GLOBAL_ACCOUNT.as_bytes();
        conns.retain(|c| {
            if global {
                c.account.is_empty()
            } else {
                c.account.as_bytes() == opts.account
            }
        });
        total = conns.len();
    }
    if !opts.auth {
        for c in &mut conns {
            c.authorized_user.clear();
            c.account.clear();
        }
    }
    conns.sort_by_key(|c| c.cid);
    sort_conns(&mut conns, sort, now);

    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(conns.len());
    let end = usize::try_from(offset.saturating_add(limit))
        .unwrap_or(usize::MAX)
        .min(conns.len());
    let page: Vec<ConnInfo> = conns.drain(start..end).collect();
    Ok(Connz {
        server_id: shared.server_id.clone(),
        now: GoTime(now),
        num_connections: page.len(),
        total,
        offset,
        limit,
        connections: page,
    })
}

/// Puts the subscriptions into the list `mode` asks for.
fn fill_subs(info: &mut ConnInfo, details: Vec<SubDetail>, mode: SubsMode) {
    match mode {
        SubsMode::None => {}
        SubsMode::List => info.subs = details.into_iter().map(|d| d.subject).collect(),
        SubsMode::Detail => info.subs_detail = details,
    }
}

/// Sorts connections (already in cid order, which ties keep: the sort is stable).
fn sort_conns(conns: &mut [ConnInfo], by: SortBy, now: SystemTime) {
    let since = |t: SystemTime| now.duration_since(t).unwrap_or(Duration::ZERO);
    // Descending orders sort by `Reverse(key)`.
    match by {
        SortBy::Cid => {}
        SortBy::Subs => conns.sort_by_key(|c| Reverse(c.subscriptions)),
        SortBy::Pending => conns.sort_by_key(|c| Reverse(c.pending_bytes)),
        SortBy::OutMsgs => conns.sort_by_key(|c| Reverse(c.out_msgs)),
        SortBy::InMsgs => conns.sort_by_key(|c| Reverse(c.in_msgs)),
        SortBy::OutBytes => conns.sort_by_key(|c| Reverse(c.out_bytes)),
        SortBy::InBytes => conns.sort_by_key(|c| Reverse(c.in_bytes)),
        SortBy::Last => conns.sort_by_key(|c| Reverse(c.last_activity)),
        // Most idle first. (nats-server 2.9.10 compared last_activity − start here; later
        // releases compare the idle time, as beaver does.)
        SortBy::Idle => conns.sort_by_key(|c| Reverse(since(c.last_activity.0))),
        // Shortest uptime first, as nats-server (this one is not reversed).
        SortBy::Uptime => conns.sort_by_key(|c| {
            let end = c.stop.map_or(now, |s| s.0);
            end.duration_since(c.start.0).unwrap_or(Duration::ZERO)
        }),
        SortBy::Stop => conns.sort_by_key(|c| Reverse(c.stop)),
        SortBy::Reason => conns.sort_by(|a, b| a.reason.cmp(b.reason)),
    }
}
