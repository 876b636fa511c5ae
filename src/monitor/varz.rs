//! `GET /varz`: the server's settings and counters (nats-server's `Varz`), and the small
//! `/routez` and `/healthz` documents.
//!
//! Field names, order and formats are nats-server 2.9.10's. beaver leaves out `go` and
//! `gomaxprocs` (there is no Go runtime) and `system_account` (beaver has no system
//! account), and adds `beaver_version`. The sections for features beaver does not have
//! (`cluster`, `gateway`, `leaf`, `mqtt`, `websocket`, `jetstream`) are empty objects, as
//! nats-server shows them when those features are off.

use super::json::{go_float, is_zero, uptime, GoTime};
use crate::client::Traffic;
use crate::protocol::NATS_VERSION;
use crate::server::{Shared, VERSION};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

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
            total_connections: shared.total_connections(),
            subscriptions: shared.accounts.subscription_count(),
            slow_consumers: shared.slow_consumers(),
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
    /// Clustering: not supported, `{}`.
    pub cluster: Empty,
    /// Gateways: not supported, `{}`.
    pub gateway: Empty,
    /// Leaf nodes: not supported, `{}`.
    pub leaf: Empty,
    /// MQTT: not supported, `{}`.
    pub mqtt: Empty,
    /// Websockets: not supported, `{}`.
    pub websocket: Empty,
    /// JetStream: not supported, `{}`.
    pub jetstream: Empty,
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
    /// Routes: 0 (no clustering).
    pub routes: u32,
    /// Remotes: 0 (no clustering).
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
    /// beaver's own version.
    pub beaver_version: &'static str,
}

/// What `/varz` needs besides the shared state: the monitoring thread's own figures.
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

/// Builds `/varz`.
pub fn varz(shared: &Shared, extras: VarzExtras) -> Varz {
    let config = shared.config();
    let now = SystemTime::now();
    let totals = Totals::of(shared);
    let t = totals.traffic;
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Varz {
        server_id: shared.server_id.clone(),
        server_name: shared.server_name.clone(),
        version: NATS_VERSION,
        proto: 1,
        host: config.host.clone(),
        port: shared.local_addr.port(),
        auth_required: shared.auth.required(),
        tls_required: shared.tls.is_some(),
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
        auth_timeout: shared.auth.timeout().as_secs_f64(),
        max_control_line: config.max_control_line,
        max_payload: config.max_payload,
        max_pending: config.max_pending,
        cluster: Empty {},
        gateway: Empty {},
        leaf: Empty {},
        mqtt: Empty {},
        websocket: Empty {},
        jetstream: Empty {},
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
        routes: 0,
        remotes: 0,
        leafnodes: 0,
        in_msgs: t.in_msgs,
        out_msgs: t.out_msgs,
        in_bytes: t.in_bytes,
        out_bytes: t.out_bytes,
        slow_consumers: totals.slow_consumers,
        subscriptions: totals.subscriptions,
        http_req_stats: extras.http_req_stats,
        config_load_time: GoTime(shared.start),
        beaver_version: VERSION,
    }
}

/// The `/routez` document: no routes until beaver clusters (nats-server's `Routez`).
#[derive(Debug, Serialize)]
pub struct Routez {
    /// This server's id.
    pub server_id: String,
    /// Now.
    pub now: GoTime,
    /// 0.
    pub num_routes: u32,
    /// Empty.
    pub routes: Vec<Empty>,
}

/// Builds `/routez`.
pub fn routez(shared: &Shared) -> Routez {
    Routez {
        server_id: shared.server_id.clone(),
        now: GoTime(SystemTime::now()),
        num_routes: 0,
        routes: Vec::new(),
    }
}

/// The `/healthz` document.
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`: the server accepts connections (the monitor starts after the acceptor).
    pub status: &'static str,
}
