//! `GET /varz`: the server's settings and counters (nats-server's `Varz`), and the small
//! `/routez` and `/healthz` documents.
//!
//! Field names, order and formats are nats-server 2.9.10's. beaver leaves out `gomaxprocs`
//! (there is no Go runtime; `go` is the compiler's version), shows `system_account` only
//! when there is one (nats-server always has `$SYS`), and adds `beaver_version`. The sections for features beaver does not have
//! (`gateway`, `leaf`, `mqtt`) are empty objects, as nats-server shows them when those
//! features are off; so are `cluster`, `websocket` and `jetstream` when off.

use super::json::{go_float, is_zero, uptime, GoTime};
use crate::client::Traffic;
use crate::protocol::NATS_VERSION;
use crate::route::Routes;
use crate::shared::{Shared, VERSION};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

/// `/varz` `websocket`: nats-server's `WebsocketOptsVarz`, empty fields left out (so `{}`
/// without a WebSocket listener).
#[derive(Debug, Clone, Default, Serialize)]
pub struct WebSocketVarz {
    /// Listen host.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The bound port.
    #[serde(skip_serializing_if = "is_zero")]
    pub port: u16,
    /// `advertise`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub advertise: String,
    /// `handshake_timeout` in nanoseconds, when set.
    #[serde(skip_serializing_if = "is_zero")]
    pub handshake_timeout: u64,
    /// `no_tls`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_tls: bool,
    /// `same_origin`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub same_origin: bool,
    /// `allowed_origins`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// `compression`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub compression: bool,
}

impl WebSocketVarz {
    /// The section for `ws` (bound at `addr`), `{}` without it.
    fn of(ws: Option<&crate::config::WebSocket>, addr: Option<std::net::SocketAddr>) -> Self {
        let (Some(ws), Some(addr)) = (ws, addr) else {
            return WebSocketVarz::default();
        };
        WebSocketVarz {
            host: ws.host.clone(),
            port: addr.port(),
            advertise: ws.advertise.clone().unwrap_or_default(),
            handshake_timeout: u64::try_from(ws.handshake_timeout.as_nanos()).unwrap_or(u64::MAX),
            no_tls: ws.no_tls,
            same_origin: ws.same_origin,
            allowed_origins: ws.allowed_origins.clone(),
            compression: ws.compression,
        }
    }
}

/// An empty JSON object (`{}`), for the sections of features beaver does not have.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Empty {}

/// nats-server's default `auth_timeout` and `tls_timeout`, in seconds.
pub const NATS_DEFAULT_TIMEOUT_SECS: f64 = 2.0;

/// The server-wide counters `/varz` and `/metrics` show, read at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Open client connections.
    pub connections: usize,
    /// Connections accepted since start.
    pub total_connections: u64,
    /// Subscriptions.
    pub subscriptions: usize,
    /// Connections closed as slow consumers.
    pub slow_consumers: u64,
    /// Messages and bytes in and out, departed connections included.
    pub traffic: Traffic,
}

impl Totals {
    /// Reads the counters of `shared`.
    pub fn of(shared: &Shared) -> Totals {
        let (connections, traffic) = shared.connections_and_traffic();
        Totals {
            connections,
            total_connections: shared.registry.total_connections(),
            subscriptions: shared.accounts.subscription_count(),
            slow_consumers: shared.registry.slow_consumers(),
            traffic,
        }
    }
}

/// The `/varz` document.
#[derive(Debug, Serialize)]
pub struct Varz {
    /// This server's id.
    pub server_id: String,
    /// This server's name.
    pub server_name: String,
    /// The nats-server version whose protocol beaver speaks (as in `INFO`).
    pub version: &'static str,
    /// Protocol level (1).
    pub proto: u8,
    /// The runtime that built the server (nats-server: Go's version; beaver:
    /// [`crate::protocol::RUNTIME_VERSION`]).
    pub go: &'static str,
    /// Client listen host.
    pub host: String,
    /// Client port.
    pub port: u16,
    /// Clients must authenticate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auth_required: bool,
    /// Clients must use TLS.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_required: bool,
    /// Client certificates are verified.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_verify: bool,
    /// `max_connections` (negative: unlimited).
    pub max_connections: i64,
    /// `max_subscriptions` per connection, omitted when unlimited.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_subscriptions: usize,
    /// `ping_interval` in nanoseconds.
    pub ping_interval: u64,
    /// `ping_max`.
    pub ping_max: u32,
    /// Monitoring host.
    pub http_host: String,
    /// Monitoring port as configured (`-1`: a random port was asked for), as nats-server.
    pub http_port: i32,
    /// Always empty (nats-server's `http_base_path`; beaver serves at the root).
    pub http_base_path: &'static str,
    /// Always 0 (no HTTPS monitoring).
    pub https_port: u16,
    /// Authentication timeout, seconds (default 2).
    #[serde(serialize_with = "go_float")]
    pub auth_timeout: f64,
    /// `max_control_line` in bytes.
    pub max_control_line: usize,
    /// `max_payload` in bytes.
    pub max_payload: usize,
    /// `max_pending` in bytes.
    pub max_pending: usize,
    /// Clustering: the cluster's name, route address and configured routes (`{}` without
    /// a cluster), as nats-server's `ClusterOptsVarz`.
    pub cluster: ClusterVarz,
    /// Gateways: not supported, `{}`.
    pub gateway: Empty,
    /// Leafnodes: the listen address and the remotes (`{}` without a `leafnodes` block),
    /// as nats-server's `LeafNodeOptsVarz`.
    pub leaf: LeafVarz,
    /// MQTT: not supported, `{}`.
    pub mqtt: Empty,
    /// The WebSocket listener's settings (`{}` without one), as nats-server's
    /// `WebsocketOptsVarz`.
    pub websocket: WebSocketVarz,
    /// JetStream: its configuration and use (`{}` when off).
    pub jetstream: super::jsz::JsVarz,
    /// TLS handshake timeout, seconds (default 2).
    #[serde(serialize_with = "go_float")]
    pub tls_timeout: f64,
    /// `write_deadline` in nanoseconds.
    pub write_deadline: u64,
    /// When the server started.
    pub start: GoTime,
    /// Now.
    pub now: GoTime,
    /// Time since start, as nats-server prints it (`1d2h3m4s`).
    pub uptime: String,
    /// Resident memory in bytes (0 where beaver cannot tell; see `monitor::process`).
    pub mem: u64,
    /// CPUs available to the process.
    pub cores: usize,
    /// CPU use in percent of one core (see `monitor::process`).
    #[serde(serialize_with = "go_float")]
    pub cpu: f64,
    /// Open client connections.
    pub connections: usize,
    /// Connections accepted since start.
    pub total_connections: u64,
    /// Registered routes.
    pub routes: u32,
    /// Remote servers (one per registered route).
    pub remotes: u32,
    /// Leaf nodes: 0.
    pub leafnodes: u32,
    /// Messages received from clients.
    pub in_msgs: u64,
    /// Messages delivered to clients.
    pub out_msgs: u64,
    /// Payload bytes (headers included) received from clients.
    pub in_bytes: u64,
    /// Payload bytes (headers included) delivered to clients.
    pub out_bytes: u64,
    /// Connections closed as slow consumers.
    pub slow_consumers: u64,
    /// Subscriptions.
    pub subscriptions: usize,
    /// Requests served per monitoring path (only paths asked for at least once).
    pub http_req_stats: BTreeMap<&'static str, u64>,
    /// When the configuration was loaded (the start; there is no reload yet).
    pub config_load_time: GoTime,
    /// Operator mode: the trusted operators' JWTs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trusted_operators_jwt: Vec<String>,
    /// Operator mode: the trusted operators' claims, decoded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trusted_operators_claim: Vec<serde_json::Value>,
    /// The system account, when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub system_account: String,
    /// beaver's own version.
    pub beaver_version: &'static str,
}

/// What `/varz` needs besides the shared state: the monitor's own figures.
#[derive(Debug, Clone)]
pub struct VarzExtras {
    /// Requests per path.
    pub http_req_stats: BTreeMap<&'static str, u64>,
    /// Resident memory in bytes.
    pub mem: u64,
    /// CPU percentage.
    pub cpu: f64,
    /// The bound monitoring host (as configured).
    pub http_host: String,
}

/// Builds `/varz`; `routes`: the cluster, if any; `leafs`: leafnodes, if any.
pub fn varz(
    shared: &Shared,
    routes: Option<&Routes>,
    leafs: Option<&crate::leaf::Leafnodes>,
    jetstream: Option<&crate::jetstream::JetStream>,
    extras: VarzExtras,
) -> Varz {
    let config = shared.config();
    let now = SystemTime::now();
    let totals = Totals::of(shared);
    let num_routes = routes.map_or(0, |r| {
        u32::try_from(r.registered().len()).unwrap_or(u32::MAX)
    });
    let t = totals.traffic;
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Varz {
        server_id: shared.server_id.clone(),
        server_name: shared.server_name.clone(),
        version: NATS_VERSION,
        proto: 1,
        go: crate::protocol::RUNTIME_VERSION,
        host: config.host.clone(),
        port: shared.local_addr.port(),
        auth_required: shared.auth().required(),
        tls_required: shared.tls().is_some(),
        tls_verify: config.tls.as_ref().is_some_and(|t| t.verify),
        max_connections: match config.max_connections {
            0 => 64 * 1024,
            n => n,
        },
        max_subscriptions: config.max_subscriptions,
        ping_interval: nanos(config.ping_interval),
        ping_max: config.effective_ping_max(),
        http_host: extras.http_host,
        http_port: config.http_port,
        http_base_path: "",
        https_port: 0,
        auth_timeout: shared.auth().timeout().as_secs_f64(),
        max_control_line: config.max_control_line,
        max_payload: config.max_payload,
        max_pending: config.max_pending,
        cluster: ClusterVarz::of(routes),
        gateway: Empty {},
        leaf: LeafVarz::of(leafs),
        mqtt: Empty {},
        websocket: WebSocketVarz::of(config.websocket.as_ref(), shared.websocket_addr),
        jetstream: super::jsz::varz_section(jetstream),
        tls_timeout: config.tls.as_ref().map_or(NATS_DEFAULT_TIMEOUT_SECS, |t| {
            t.effective_timeout().as_secs_f64()
        }),
        write_deadline: nanos(config.effective_write_deadline()),
        start: GoTime(shared.start),
        now: GoTime(now),
        uptime: uptime(Instant::now().saturating_duration_since(shared.start_instant)),
        mem: extras.mem,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu: extras.cpu,
        connections: totals.connections,
        total_connections: totals.total_connections,
        routes: num_routes,
        remotes: num_routes,
        leafnodes: leafs.map_or(0, |l| u32::try_from(l.all().len()).unwrap_or(u32::MAX)),
        in_msgs: t.in_msgs,
        out_msgs: t.out_msgs,
        in_bytes: t.in_bytes,
        out_bytes: t.out_bytes,
        slow_consumers: totals.slow_consumers,
        subscriptions: totals.subscriptions,
        http_req_stats: extras.http_req_stats,
        config_load_time: GoTime(shared.config_load_time()),
        trusted_operators_jwt: config.operators.clone(),
        trusted_operators_claim: config
            .operators
            .iter()
            .filter_map(|t| crate::jwt::claims_json(t))
            .collect(),
        system_account: config
            .system_account_name()
            .filter(|name| shared.accounts.get(name).is_some())
            .unwrap_or_default(),
        beaver_version: VERSION,
    }
}

/// `/varz` `leaf` (nats-server's `LeafNodeOptsVarz`; empty fields are left out).
#[derive(Debug, Serialize, Default)]
pub struct LeafVarz {
    /// The leafnode listen host.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The leafnode listen port.
    #[serde(skip_serializing_if = "is_zero")]
    pub port: u16,
    /// Seconds an accepted leaf has to send `CONNECT`.
    #[serde(skip_serializing_if = "is_zero", serialize_with = "go_float")]
    pub auth_timeout: f64,
    /// The TLS handshake timeout nats-server would use (2 s; beaver has no leafnode TLS).
    #[serde(skip_serializing_if = "is_zero", serialize_with = "go_float")]
    pub tls_timeout: f64,
    /// The remotes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<RemoteLeafVarz>,
}

/// One remote in `/varz` `leaf.remotes`.
#[derive(Debug, Serialize)]
pub struct RemoteLeafVarz {
    /// The local account bound.
    pub local_account: String,
    /// Its URLs, `HOST:PORT` (no credentials).
    pub urls: Vec<String>,
    /// Its `deny_imports`/`deny_exports`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny: Option<DenyRules>,
}

/// A remote's deny lists.
#[derive(Debug, Serialize)]
pub struct DenyRules {
    /// `deny_exports`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<String>,
    /// `deny_imports`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<String>,
}

impl LeafVarz {
    fn of(leafs: Option<&crate::leaf::Leafnodes>) -> LeafVarz {
        let Some(l) = leafs else {
            return LeafVarz::default();
        };
        let c = &l.config;
        let mut v = LeafVarz::default();
        if let Some(addr) = l.listen_addr {
            v.host = c.host.clone();
            v.port = addr.port();
            v.auth_timeout = c
                .authorization
                .as_ref()
                .map_or(crate::config::DEFAULT_AUTH_TIMEOUT, |a| a.timeout)
                .as_secs_f64();
            v.tls_timeout = NATS_DEFAULT_TIMEOUT_SECS;
        }
        v.remotes = c
            .remotes
            .iter()
            .map(|r| RemoteLeafVarz {
                local_account: r
                    .account
                    .clone()
                    .unwrap_or_else(|| crate::config::GLOBAL_ACCOUNT.to_owned()),
                urls: r
                    .urls
                    .iter()
                    .map(|u| {
                        let rest = u.split_once("://").map_or(&u[..], |(_, r)| r);
                        rest.rsplit_once('@').map_or(rest, |(_, h)| h).to_owned()
                    })
                    .collect(),
                deny: (!r.deny_imports.is_empty() || !r.deny_exports.is_empty()).then(|| {
                    DenyRules {
                        exports: r.deny_exports.clone(),
                        imports: r.deny_imports.clone(),
                    }
                }),
            })
            .collect();
        v
    }
}

/// `/varz` `cluster` (nats-server's `ClusterOptsVarz`; empty fields are left out).
#[derive(Debug, Serialize, Default)]
pub struct ClusterVarz {
    /// Cluster name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Route listen host.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub addr: String,
    /// Route listen port.
    #[serde(skip_serializing_if = "is_zero")]
    pub cluster_port: u16,
    /// Route authentication timeout, in seconds.
    #[serde(skip_serializing_if = "is_zero", serialize_with = "go_float")]
    pub auth_timeout: f64,
    /// Configured routes (`HOST:PORT`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
}

impl ClusterVarz {
    /// The cluster section for `routes` (without a cluster: `{}`).
    pub fn of(routes: Option<&Routes>) -> ClusterVarz {
        let Some(r) = routes else {
            return ClusterVarz::default();
        };
        ClusterVarz {
            name: r.name(),
            addr: r.config.host.clone(),
            cluster_port: r.listen_addr.port(),
            auth_timeout: r
                .config
                .authorization
                .as_ref()
                .map_or(0.0, |a| a.timeout.as_secs_f64()),
            urls: r
                .config
                .routes
                .iter()
                .filter_map(|u| crate::config::parse_route_url(u).ok())
                .map(|(_, h, p)| format!("{h}:{p}"))
                .collect(),
        }
    }
}

/// The `/routez` document (nats-server's `Routez`).
#[derive(Debug, Serialize)]
pub struct Routez {
    /// This server's id.
    pub server_id: String,
    /// Now.
    pub now: GoTime,
    /// Route connections.
    pub num_routes: u32,
    /// One entry per route connection.
    pub routes: Vec<RouteInfoz>,
}

/// One route in `/routez` (nats-server's `RouteInfo`, the fields beaver has).
#[derive(Debug, Serialize)]
pub struct RouteInfoz {
    /// Route id (shares the numbering of client ids, as in nats-server).
    pub rid: u64,
    /// The other server's id.
    pub remote_id: String,
    /// We dialled it.
    pub did_solicit: bool,
    /// It is one of our configured routes.
    pub is_configured: bool,
    /// Its IP address.
    pub ip: String,
    /// Its port (of this connection).
    pub port: u16,
    /// Last round trip (`1.234ms`), omitted until measured.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rtt: String,
    /// Bytes queued for it.
    pub pending_size: usize,
    /// Messages received from it.
    pub in_msgs: u64,
    /// Messages sent to it.
    pub out_msgs: u64,
    /// Payload bytes received from it.
    pub in_bytes: u64,
    /// Payload bytes sent to it.
    pub out_bytes: u64,
    /// Its interest (subjects and queue groups it asked for).
    pub subscriptions: u32,
    /// With `subs=1`: that interest, as `subject` or `subject queue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriptions_list: Option<Vec<String>>,
}

/// Builds `/routez`; `subs`: list each route's interest.
pub fn routez(shared: &Shared, cluster: Option<&Routes>, subs: bool) -> Routez {
    let mut routes: Vec<RouteInfoz> = cluster
        .map(|r| r.all())
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            let t = r.client.stats.snapshot();
            let interest = r.subs.lock();
            let list = subs.then(|| {
                interest
                    .keys()
                    .map(|(_, s, q)| match q {
                        Some(q) => format!(
                            "{} {}",
                            String::from_utf8_lossy(s),
                            String::from_utf8_lossy(q)
                        ),
                        None => String::from_utf8_lossy(s).into_owned(),
                    })
                    .collect()
            });
            let rtt = r.client.rtt();
            RouteInfoz {
                rid: r.client.cid,
                remote_id: r.remote_id(),
                did_solicit: r.did_solicit,
                is_configured: r.configured,
                ip: r.client.addr.ip().to_string(),
                port: r.client.addr.port(),
                rtt: if rtt.is_zero() {
                    String::new()
                } else {
                    super::json::go_rtt(rtt)
                },
                pending_size: r.client.pending_bytes(),
                in_msgs: t.in_msgs,
                out_msgs: t.out_msgs,
                in_bytes: t.in_bytes,
                out_bytes: t.out_bytes,
                subscriptions: u32::try_from(interest.len()).unwrap_or(u32::MAX),
                subscriptions_list: list,
            }
        })
        .collect();
    routes.sort_by_key(|r| r.rid);
    Routez {
        server_id: shared.server_id.clone(),
        now: GoTime(SystemTime::now()),
        num_routes: u32::try_from(routes.len()).unwrap_or(u32::MAX),
        routes,
    }
}

/// The `/healthz` document.
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`: the server accepts connections (the monitor starts after the acceptor).
    pub status: &'static str,
}
