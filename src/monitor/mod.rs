//! The HTTP monitoring endpoints (`-m/--http_port`), as nats-server serves them:
//! `/varz`, `/connz`, `/subsz` (alias `/subscriptionsz`), `/routez`, `/healthz`, the
//! index page `/`, and, beyond the reference, `/metrics` for Prometheus.
//!
//! ## Threads, and what the port survives
//! The HTTP server is beaver's own, in [`http`] (blocking, no async runtime, request heads
//! parsed by `httparse`): an acceptor thread, `beaver-monitor`, and one thread per HTTP
//! connection, `beaver-http`, at most 64. Each connection thread reads a request, computes
//! the response with the [`Reports`] here, and writes it. The monitoring port must stay up
//! whatever a client sends, and must never take the NATS server down with it; the limits
//! that ensure it, and why they are what they are, are in [`http`]'s docs. In short:
//! request heads up to 1 MiB (as nats-server), bodies never buffered, a 5 s deadline for a
//! request head, 60 s for an idle keep-alive connection, 10 s (plus 1 s per MiB) to write a
//! response, and when 64 connections are open, the oldest idle one (else the oldest) is
//! closed to make room, so that `/healthz` always answers (on Windows its thread notices
//! within 100 ms: see [`http`]).
//!
//! Paths are canonicalised as Go's `ServeMux` does for nats-server (`mux.rs`): `//connz`
//! gets a `301` to `/connz`.
//!
//! ## What a request reads, and the locks it takes
//! Monitoring never writes server state, and takes each lock briefly, one at a time, except
//! the registry's departure lock (the closed ring's: `Registry::consistent`), under which it walks
//! the client registry:
//! - `/varz`, `/metrics`: the closed-ring lock while summing every open client's counters
//!   (atomics) with the totals of departed connections, so that a connection leaving at
//!   that moment is counted exactly once; the registry's shard read locks during the walk;
//!   the sublist's counters; `/proc` on Linux.
//! - `/connz`: the closed-ring lock while cloning the registry's `Arc<Client>`s and the
//!   ring's snapshots; then, with no lock held, each client's subscription map lock and
//!   identity lock in turn.
//! - `/subsz`: the sublist's shard read locks and trie read lock while cloning the
//!   subscriptions' `Arc`s; the shared match cache's shard read locks for its statistics.
//!
//! Every request also takes the monitor's own stats lock (`Reports::stats`: the per-path
//! request counts, `http_req_stats`, and the CPU sampler), which the connection threads
//! share. It is a leaf: held only to bump a count, copy the counts and compute the CPU
//! percentage from numbers read before taking it; no other lock and no I/O under it.
//!
//! Lock order (docs/architecture.md): closed ring → registry shards (→ the leaving client's
//! `settled` lock, in `Registry::depart`). Monitoring never holds a lock while taking a
//! client's subscription map or identity, so it fits the server's order
//! `Client::subs` → sublist.
//!
//! ## Robustness
//! A panic in a handler (a bug) is caught: the request gets a 500 and the server goes on.
//! Bad query values get a 400 with nats-server's message. Unknown paths get a 404.
//! Shutdown ([`Monitor::stop`]) stops the acceptor and every connection thread, waiting
//! for them at most 2 s.

mod accountz;
mod connz;
pub mod http;
mod json;
mod jsz;
mod leafz;
mod metrics;
mod mux;
mod process;
mod query;
mod subsz;
mod varz;

pub use accountz::{account_info, AccountInfo, ExtExport, ExtImport};
pub use connz::{ConnInfo, SubDetail};
pub use json::{go_duration, rfc3339_nano, uptime, GoTime};
pub use query::Query;
pub use subsz::SubszStats;

use crate::config::Config;
use crate::jetstream::JetStream;
use crate::route::Routes;
use crate::shared::Shared;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Instant;

/// A bound monitoring port whose threads have not started yet (see [`Monitor::bind`]).
pub struct MonitorListener {
    listener: TcpListener,
    addr: SocketAddr,
    host: String,
}

impl MonitorListener {
    /// The bound address (with the real port when `http_port` is -1).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// The running monitoring server. Stopped by [`Monitor::stop`] (the server does it at
/// shutdown) or when dropped.
pub struct Monitor {
    http: Option<http::HttpServer>,
    addr: SocketAddr,
    host: String,
}

impl Monitor {
    /// Binds the monitoring port of `config`: `http_host` (default: the client `host`) and
    /// `http_port` (-1: a random port). Called before the server starts its threads, so
    /// that a port in use stops start-up, as in nats-server.
    pub fn bind(config: &Config) -> io::Result<MonitorListener> {
        let host = config.monitor_host().to_owned();
        let port = match config.http_port {
            -1 => 0,
            p => u16::try_from(p).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("http_port {p} is out of range"),
                )
            })?,
        };
        let listener = crate::listen::bind(&host, port).map_err(|e| {
            io::Error::other(format!(
                "can't listen to the monitor port: {}: {e}",
                crate::listen::join_host_port(&host, port)
            ))
        })?;
        let addr = listener.local_addr()?;
        Ok(MonitorListener {
            listener,
            addr,
            host,
        })
    }

    /// Starts serving `listener` for `shared`: the acceptor thread now, a thread per HTTP
    /// connection as they come (see the module docs).
    pub fn spawn(listener: MonitorListener, reports: Arc<Reports>) -> io::Result<Monitor> {
        let config = http::Config {
            log_name: "Monitoring",
            acceptor_thread: "beaver-monitor",
            connection_thread: "beaver-http",
            limits: http::Limits::default(),
        };
        let server = http::HttpServer::spawn(listener.listener, reports, config)?;
        Ok(Monitor {
            http: Some(server),
            addr: listener.addr,
            host: listener.host,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `HOST:PORT` as nats-server logs it: the configured host and the real port.
    pub fn display_addr(&self) -> String {
        crate::listen::join_host_port(&self.host, self.addr.port())
    }

    /// Stops accepting, closes every monitoring connection (a response being written is
    /// cut), and waits for the threads at most 2 s. Never blocks longer.
    pub fn stop(mut self) {
        if let Some(http) = self.http.take() {
            http.stop();
        }
    }
}

/// A response before it is handed to the HTTP layer.
struct Reply {
    status: u16,
    /// Empty: no `Content-Type` (a redirect of a `POST`).
    content_type: &'static str,
    /// Header fields after `Content-Type` (`Location`, `X-Content-Type-Options`).
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.into().into_bytes(),
        }
    }

    /// A 400 with nats-server's message (Go sends it as plain text).
    fn bad_request(message: String) -> Reply {
        Reply::text(400, message)
    }

    /// Go's `http.NotFound`.
    fn not_found() -> Reply {
        let mut r = Reply::text(404, "404 page not found\n");
        r.headers.push(("X-Content-Type-Options", "nosniff".into()));
        r
    }

    /// Go's `ServeMux` redirect to a clean path (see [`mux`]).
    fn redirect(r: mux::Redirect) -> Reply {
        Reply {
            status: 301,
            content_type: if r.html {
                "text/html; charset=utf-8"
            } else {
                ""
            },
            headers: vec![("Location", r.location)],
            body: r.body.into_bytes(),
        }
    }

    /// A JSON document, or JSONP when the query has `callback=`: `callback(json)` with
    /// content type `application/javascript`, as nats-server's `ResponseHandler`.
    fn json(q: &Query, body: Vec<u8>) -> Reply {
        let callback = q.get("callback");
        if callback.is_empty() {
            return Reply {
                status: 200,
                content_type: "application/json",
                headers: Vec::new(),
                body,
            };
        }
        if !is_js_identifier(callback) {
            return Reply::bad_request(format!(
                "invalid callback {callback:?}: must be a JavaScript identifier"
            ));
        }
        let mut wrapped = Vec::with_capacity(body.len() + callback.len() + 2);
        wrapped.extend_from_slice(callback.as_bytes());
        wrapped.push(b'(');
        wrapped.extend_from_slice(&body);
        wrapped.push(b')');
        Reply {
            status: 200,
            content_type: "application/javascript",
            headers: Vec::new(),
            body: wrapped,
        }
    }

    fn into_response(self) -> http::Response {
        let mut headers = Vec::with_capacity(self.headers.len() + 1);
        if !self.content_type.is_empty() {
            headers.push(("Content-Type", self.content_type.to_owned()));
        }
        headers.extend(self.headers);
        http::Response {
            status: self.status,
            headers,
            body: self.body,
        }
    }
}

/// A JSONP callback beaver accepts: a dotted JavaScript name such as `cb` or `app.update`
/// (letters, digits, `_`, `$`, `.`; not starting with a digit; at most 128 characters).
/// nats-server echoes any callback into the JavaScript it returns; beaver refuses the ones
/// that could inject code.
fn is_js_identifier(s: &str) -> bool {
    s.len() <= 128
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
}

/// The index page: links to the endpoints (nats-server's `/` has the same role).
const ROOT_HTML: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>beaver monitoring</title>
<style>
  body { font-family: ui-sans-serif, system-ui, sans-serif; margin-left: 32px }
  a { display: block; margin-left: 7px; padding-bottom: 6px }
</style>
</head>
<body>
<h1>beaver</h1>
<p>A NATS server. Monitoring endpoints, as nats-server's:</p>
<a href=./varz>General</a>
<a href=./connz>Connections</a>
<a href=./subsz>Subscriptions</a>
<a href=./routez>Routes</a>
<a href=./leafz>LeafNodes</a>
<a href=./accountz>Accounts</a>
<a href=./healthz>Health Probe</a>
<a href=./metrics>Prometheus metrics</a>
<p><a href=https://docs.nats.io/running-a-nats-service/nats_admin/monitoring>Help (nats-server's documentation)</a></p>
</body>
</html>
"#;

/// The reports the monitoring endpoints serve, and what computing them needs: shared by the
/// HTTP connection threads and by the system account's request subjects
/// (`crate::system`: `$SYS.REQ.SERVER.PING.VARZ`, ...), which get the same reports in
/// compact JSON ([`Reports::render`]).
pub struct Reports {
    shared: Arc<Shared>,
    /// The cluster, for `/varz` `cluster` and `/routez`.
    routes: Option<Arc<Routes>>,
    /// Leafnodes, for `/leafz` and `/varz` `leafnodes`.
    leafs: Option<Arc<crate::leaf::Leafnodes>>,
    /// JetStream, for `/jsz`, `/varz` `jetstream` and `/metrics`.
    jetstream: Option<Arc<JetStream>>,
    /// The monitoring host as configured (`/varz` `http_host`; the client host when there is
    /// no monitoring port).
    http_host: String,
    /// The per-path request counts and the CPU sampler. A `parking_lot::Mutex` because
    /// several connection threads serve requests at once; it is a leaf lock, held only to
    /// update or copy these (see the module docs), so contention is a few instructions.
    stats: Mutex<Stats>,
}

/// The monitor's own state (see [`Reports::stats`]).
struct Stats {
    /// Requests per path (`/varz` `http_req_stats`).
    requests: BTreeMap<&'static str, u64>,
    cpu: process::CpuSampler,
}

impl http::Handler for Reports {
    fn handle(&self, request: &http::Request<'_>) -> http::Response {
        self.route(request).into_response()
    }
}

/// A report, by its name in the system account's request subjects
/// (`$SYS.REQ.SERVER.PING.<NAME>`) and over HTTP (`/<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// `VARZ`, `/varz`.
    Varz,
    /// `CONNZ`, `/connz`.
    Connz,
    /// `SUBSZ`, `/subsz`.
    Subsz,
    /// `ROUTEZ`, `/routez`.
    Routez,
    /// `LEAFZ`, `/leafz`.
    Leafz,
    /// `JSZ`, `/jsz`.
    Jsz,
    /// `HEALTHZ`, `/healthz`.
    Healthz,
    /// `ACCOUNTZ`, `/accountz`.
    Accountz,
}

impl Report {
    /// The report a system request names (`VARZ`, ...); `None` for names beaver has no
    /// report for (`GATEWAYZ`, `ACCOUNTZ`).
    pub fn from_request_name(name: &str) -> Option<Report> {
        Some(match name {
            "VARZ" => Report::Varz,
            "CONNZ" => Report::Connz,
            "SUBSZ" => Report::Subsz,
            "ROUTEZ" => Report::Routez,
            "LEAFZ" => Report::Leafz,
            "JSZ" => Report::Jsz,
            "HEALTHZ" => Report::Healthz,
            "ACCOUNTZ" => Report::Accountz,
            _ => return None,
        })
    }
}

/// How a report's JSON is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Go's `json.MarshalIndent` (the HTTP endpoints).
    Pretty,
    /// Go's `json.Marshal` (answers over NATS).
    Compact,
}

impl Reports {
    /// The reports of `shared` and its cluster, leafnodes and JetStream; `http_host` is what
    /// `/varz` shows as `http_host`.
    pub fn new(
        shared: Arc<Shared>,
        routes: Option<Arc<Routes>>,
        leafs: Option<Arc<crate::leaf::Leafnodes>>,
        jetstream: Option<Arc<JetStream>>,
        http_host: String,
    ) -> Reports {
        Reports {
            stats: Mutex::new(Stats {
                requests: BTreeMap::new(),
                cpu: process::CpuSampler::new(shared.start_instant),
            }),
            shared,
            routes,
            leafs,
            jetstream,
            http_host,
        }
    }

    /// `report` with the options `q`, as JSON laid out as `layout`; `Err`: what is wrong
    /// with `q` (a 400 over HTTP). A `/varz` samples the CPU (and, over HTTP, the caller has
    /// counted the request already).
    pub fn render(&self, report: Report, q: &Query, layout: Layout) -> Result<Vec<u8>, String> {
        fn out<T: serde::Serialize>(layout: Layout, v: &T) -> Vec<u8> {
            match layout {
                Layout::Pretty => json::to_go_json(v),
                Layout::Compact => json::to_go_json_compact(v),
            }
        }
        Ok(match report {
            Report::Varz => out(layout, &self.varz()),
            Report::Connz => {
                let opts = connz::ConnzOptions::decode(q)?;
                out(layout, &connz::connz(&self.shared, &opts)?)
            }
            Report::Routez => {
                let subs = query::decode_subs(q)? != query::SubsMode::None;
                out(
                    layout,
                    &varz::routez(&self.shared, self.routes.as_deref(), subs),
                )
            }
            Report::Leafz => {
                let subs = query::decode_subs(q)? != query::SubsMode::None;
                out(
                    layout,
                    &leafz::leafz(&self.shared, self.leafs.as_deref(), subs, q.get("acc")),
                )
            }
            Report::Subsz => match subsz::subsz(&self.shared, q)? {
                subsz::SubszReply::Stats(s) => out(layout, &s),
                subsz::SubszReply::List(s) => out(layout, &s),
            },
            Report::Accountz => out(layout, &accountz::accountz(&self.shared, q)?),
            Report::Jsz => out(
                layout,
                &jsz::jsz(&self.shared, self.jetstream.as_deref(), q)?,
            ),
            Report::Healthz => {
                for flag in ["js-enabled", "js-enabled-only", "js-server-only"] {
                    query::decode_bool(q, flag)?;
                }
                // Compact in both, as nats-server marshals this one.
                serde_json::to_vec(&varz::Health { status: "ok" })
                    .unwrap_or_else(|_| b"{\"status\":\"ok\"}".to_vec())
            }
        })
    }

    /// `/varz` now (the CPU sampled, the request counts as they are).
    fn varz(&self) -> varz::Varz {
        let (http_req_stats, cpu) = self.sample(None);
        let extras = varz::VarzExtras {
            http_req_stats,
            mem: process::resident_memory(),
            cpu,
            http_host: self.http_host.clone(),
        };
        varz::varz(
            &self.shared,
            self.routes.as_deref(),
            self.leafs.as_deref(),
            self.jetstream.as_deref(),
            extras,
        )
    }

    /// What the system account's `STATSZ` (and `$SYS.REQ.SERVER.PING`) reports: the
    /// server's counters (nats-server's `ServerStats`), from `/varz`'s.
    pub fn statsz(&self) -> Statsz {
        let v = self.varz();
        let routes = varz::routez(&self.shared, self.routes.as_deref(), false)
            .routes
            .into_iter()
            .map(|r| RouteStat {
                rid: r.rid,
                sent: DataStats {
                    msgs: r.out_msgs,
                    bytes: r.out_bytes,
                },
                received: DataStats {
                    msgs: r.in_msgs,
                    bytes: r.in_bytes,
                },
                pending: r.pending_size,
            })
            .collect::<Vec<_>>();
        Statsz {
            start: v.start,
            mem: v.mem,
            cores: v.cores,
            cpu: v.cpu,
            connections: v.connections,
            total_connections: v.total_connections,
            // Accounts with a client in them (nats-server's `activeAccounts`).
            active_accounts: self.active_accounts(),
            subscriptions: v.subscriptions,
            sent: DataStats {
                msgs: v.out_msgs,
                bytes: v.out_bytes,
            },
            received: DataStats {
                msgs: v.in_msgs,
                bytes: v.in_bytes,
            },
            slow_consumers: v.slow_consumers,
            active_servers: 1 + routes.len(),
            routes,
        }
    }

    /// How many accounts have a client in them now.
    fn active_accounts(&self) -> usize {
        let mut names: Vec<String> = self
            .shared
            .registry
            .client_list()
            .iter()
            .map(|c| c.account().name.clone())
            .collect();
        names.sort_unstable();
        names.dedup();
        names.len()
    }

    /// Counts a request of `path` (nats-server's `httpReqStats`).
    fn count(&self, path: &'static str) {
        *self.stats.lock().requests.entry(path).or_insert(0) += 1;
    }

    /// Counts a request of `path` (over HTTP; `None` over NATS), and returns the counts and
    /// the CPU percentage (the CPU time is read from `/proc` before the lock is taken).
    fn sample(&self, path: Option<&'static str>) -> (BTreeMap<&'static str, u64>, f64) {
        let cpu_time = process::cpu_time();
        let now = Instant::now();
        let mut stats = self.stats.lock();
        if let Some(path) = path {
            *stats.requests.entry(path).or_insert(0) += 1;
        }
        let cpu = stats.cpu.sample(now, cpu_time);
        (stats.requests.clone(), cpu)
    }

    /// A report's HTTP reply.
    fn reply(&self, report: Report, q: &Query) -> Reply {
        match self.render(report, q, Layout::Pretty) {
            Ok(body) => Reply::json(q, body),
            Err(m) => Reply::bad_request(m),
        }
    }

    /// Dispatches on the decoded path, after Go's `ServeMux` redirect of paths that are not
    /// clean. Where nats-server counts a request before decoding its query and where
    /// after, beaver does the same, so `http_req_stats` agree.
    fn route(&self, request: &http::Request<'_>) -> Reply {
        if let Some(r) = mux::redirect(request.method, &request.path, request.raw_query) {
            return Reply::redirect(r);
        }
        let q = Query::parse(request.raw_query);
        match &*request.path {
            b"/" => {
                self.count("/");
                Reply {
                    status: 200,
                    content_type: "text/html; charset=utf-8",
                    headers: Vec::new(),
                    body: ROOT_HTML.as_bytes().to_vec(),
                }
            }
            b"/varz" => {
                // Counted here; the CPU is sampled when the report is made.
                self.count("/varz");
                self.reply(Report::Varz, &q)
            }
            b"/connz" => {
                // nats-server decodes the options before it counts the request.
                if let Err(m) = connz::ConnzOptions::decode(&q) {
                    return Reply::bad_request(m);
                }
                self.count("/connz");
                self.reply(Report::Connz, &q)
            }
            b"/routez" | b"/leafz" => {
                // Decoded before counting, as nats-server does.
                if let Err(m) = query::decode_subs(&q) {
                    return Reply::bad_request(m);
                }
                let (path, report) = if &*request.path == b"/routez" {
                    ("/routez", Report::Routez)
                } else {
                    ("/leafz", Report::Leafz)
                };
                self.count(path);
                self.reply(report, &q)
            }
            b"/subsz" | b"/subscriptionsz" => {
                self.count("/subsz");
                self.reply(Report::Subsz, &q)
            }
            b"/jsz" => {
                self.count("/jsz");
                self.reply(Report::Jsz, &q)
            }
            b"/healthz" => {
                self.count("/healthz");
                self.reply(Report::Healthz, &q)
            }
            b"/accountz" => {
                self.count("/accountz");
                self.reply(Report::Accountz, &q)
            }
            b"/metrics" => {
                let (requests, cpu) = self.sample(Some("/metrics"));
                let mem = process::resident_memory();
                Reply {
                    status: 200,
                    content_type: metrics::CONTENT_TYPE,
                    headers: Vec::new(),
                    body: metrics::render(
                        &self.shared,
                        self.jetstream.as_deref(),
                        &requests,
                        mem,
                        cpu,
                    )
                    .into_bytes(),
                }
            }
            _ => Reply::not_found(),
        }
    }
}

/// The system account's `STATSZ` (nats-server's `ServerStats`), in its field order.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Statsz {
    /// When the server started.
    pub start: GoTime,
    /// Resident memory, bytes.
    pub mem: u64,
    /// CPU cores.
    pub cores: usize,
    /// CPU use, percent of one core.
    #[serde(serialize_with = "json::go_float")]
    pub cpu: f64,
    /// Open client connections.
    pub connections: usize,
    /// Client connections accepted since start.
    pub total_connections: u64,
    /// Accounts with at least one client.
    pub active_accounts: usize,
    /// Subscriptions.
    pub subscriptions: usize,
    /// Messages and bytes delivered.
    pub sent: DataStats,
    /// Messages and bytes received.
    pub received: DataStats,
    /// Clients closed as slow consumers.
    pub slow_consumers: u64,
    /// Each route's traffic (omitted without routes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteStat>,
    /// Servers known: this one and one per route.
    pub active_servers: usize,
}

/// Messages and bytes (nats-server's `DataStats`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct DataStats {
    /// Messages.
    pub msgs: u64,
    /// Bytes.
    pub bytes: u64,
}

/// One route's traffic in `STATSZ` (nats-server's `RouteStat`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RouteStat {
    /// The route's connection id.
    pub rid: u64,
    /// Sent to it.
    pub sent: DataStats,
    /// Received from it.
    pub received: DataStats,
    /// Bytes queued to it.
    pub pending: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonp_callbacks() {
        for ok in ["cb", "$", "_x1", "app.update", "jQuery123_456"] {
            assert!(is_js_identifier(ok), "{ok}");
        }
        for bad in [
            "1x",
            "a(b)",
            "alert(1);x",
            "a b",
            "x</script>",
            &"a".repeat(129),
        ] {
            assert!(!is_js_identifier(bad), "{bad}");
        }
        let r = Reply::json(&Query::parse("callback=cb"), b"{}".to_vec());
        assert_eq!(
            (r.content_type, r.body.as_slice()),
            ("application/javascript", &b"cb({})"[..])
        );
        assert_eq!(
            Reply::json(&Query::parse("callback=a(b"), vec![]).status,
            400
        );
    }
}
