//! The HTTP monitoring endpoints (`-m/--http_port`), as nats-server serves them:
//! `/varz`, `/connz`, `/subsz` (alias `/subscriptionsz`), `/routez`, `/healthz`, the
//! index page `/`, and, beyond the reference, `/metrics` for Prometheus.
//!
//! ## Threads
//! The HTTP server is `tiny_http`: blocking, no async runtime. Its own accept thread and
//! small pool (at least four threads) read and parse requests. One thread of beaver's,
//! `beaver-monitor`, takes the parsed requests one at a time, computes each response and
//! writes it. That thread owns the per-path request counts (`http_req_stats`) and the CPU
//! sampler, so neither needs a lock.
//!
//! ## What a request reads, and the locks it takes
//! Monitoring never writes server state, and takes each lock briefly, one at a time, except
//! the closed-ring lock (`Shared::closed`), under which it walks the client registry:
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
//! Lock order (docs/architecture.md): closed ring → registry shards (→ the leaving client's
//! `settled` lock, in `Shared::depart`). Monitoring never holds a lock while taking a
//! client's subscription map or identity, so it fits the server's order
//! `Client::subs` → sublist.
//!
//! ## Robustness
//! A panic in a handler (a bug) is caught: the request gets a 500 and the server goes on.
//! Bad query values get a 400 with nats-server's message. Unknown paths get a 404.
//! Shutdown unblocks the thread (`tiny_http::Server::unblock`) and joins it.

mod closed;
mod connz;
mod json;
mod metrics;
mod process;
mod query;
mod subsz;
mod varz;

pub use closed::{ClosedConn, ClosedConnections};
pub use connz::{ConnInfo, SubDetail};
pub use json::{go_duration, rfc3339_nano, uptime};

use crate::config::Config;
use crate::server::Shared;
use query::Query;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A bound monitoring port whose thread has not started yet (see [`Monitor::bind`]).
pub struct MonitorListener {
    http: tiny_http::Server,
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
/// shutdown).
pub struct Monitor {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    host: String,
    /// Set before unblocking the thread, so it knows the wake-up is the end. Release/Acquire:
    /// nothing else is published through it, but it keeps the intent obvious.
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
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
        let http = tiny_http::Server::http((host.as_str(), port)).map_err(|e| {
            io::Error::other(format!(
                "can't listen to the monitor port: {}: {e}",
                join_host_port(&host, port)
            ))
        })?;
        let addr = http.server_addr().to_ip().ok_or_else(|| {
            io::Error::other("can't listen to the monitor port: not an IP address")
        })?;
        Ok(MonitorListener { http, addr, host })
    }

    /// Starts the `beaver-monitor` thread serving `listener` for `shared`.
    pub fn spawn(listener: MonitorListener, shared: Arc<Shared>) -> io::Result<Monitor> {
        let http = Arc::new(listener.http);
        let stopping = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            cpu: process::CpuSampler::new(shared.start_instant),
            shared,
            http_host: listener.host.clone(),
            requests: BTreeMap::new(),
        };
        let thread = {
            let http = http.clone();
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name("beaver-monitor".into())
                .spawn(move || handler.run(&http, &stopping))?
        };
        Ok(Monitor {
            http,
            addr: listener.addr,
            host: listener.host,
            stopping,
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `HOST:PORT` as nats-server logs it: the configured host and the real port.
    pub fn display_addr(&self) -> String {
        join_host_port(&self.host, self.addr.port())
    }

    /// Stops the thread: requests already parsed are answered, then it exits.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stopping.store(true, Ordering::Release);
        self.http.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Go's `net.JoinHostPort`: brackets around an IPv6 host.
fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A response before it is handed to `tiny_http`.
struct Reply {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Reply {
    fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into().into_bytes(),
        }
    }

    /// A 400 with nats-server's message (Go sends it as plain text).
    fn bad_request(message: String) -> Reply {
        Reply::text(400, message)
    }

    /// A JSON document, or JSONP when the query has `callback=`: `callback(json)` with
    /// content type `application/javascript`, as nats-server's `ResponseHandler`.
    fn json(q: &Query, body: Vec<u8>) -> Reply {
        let callback = q.get("callback");
        if callback.is_empty() {
            return Reply {
                status: 200,
                content_type: "application/json",
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
            body: wrapped,
        }
    }

    fn into_response(self) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
        let response = tiny_http::Response::from_data(self.body).with_status_code(self.status);
        match tiny_http::Header::from_bytes(&b"Content-Type"[..], self.content_type.as_bytes()) {
            Ok(h) => response.with_header(h),
            Err(()) => response,
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
<a href=./healthz>Health Probe</a>
<a href=./metrics>Prometheus metrics</a>
<p><a href=https://docs.nats.io/running-a-nats-service/nats_admin/monitoring>Help (nats-server's documentation)</a></p>
</body>
</html>
"#;

/// The monitoring thread's state (see the module docs).
struct Handler {
    shared: Arc<Shared>,
    /// The monitoring host as configured (`/varz` `http_host`).
    http_host: String,
    /// Requests per path (`/varz` `http_req_stats`).
    requests: BTreeMap<&'static str, u64>,
    cpu: process::CpuSampler,
}

impl Handler {
    fn run(mut self, http: &tiny_http::Server, stopping: &AtomicBool) {
        loop {
            match http.recv() {
                Ok(request) => self.serve(request),
                Err(e) => {
                    if stopping.load(Ordering::Acquire) {
                        return;
                    }
                    // An accept error (e.g. out of file descriptors): tiny_http reports it
                    // and goes on; do not spin on a repeated one.
                    log::debug!("Monitoring: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    fn serve(&mut self, request: tiny_http::Request) {
        let url = request.url().to_owned();
        let reply = match catch_unwind(AssertUnwindSafe(|| self.route(&url))) {
            Ok(reply) => reply,
            Err(_) => {
                log::error!("Monitoring: the handler for {url:?} failed (a bug in beaver)");
                Reply::text(500, "500 internal server error\n")
            }
        };
        if let Err(e) = request.respond(reply.into_response()) {
            log::debug!("Monitoring: error writing the response to {url:?}: {e}");
        }
    }

    /// Counts a request of `path` (nats-server's `httpReqStats`).
    fn count(&mut self, path: &'static str) {
        *self.requests.entry(path).or_insert(0) += 1;
    }

    /// Dispatches on the path. Where nats-server counts a request before decoding its
    /// query and where after, beaver does the same, so `http_req_stats` agree.
    fn route(&mut self, url: &str) -> Reply {
        let (raw_path, raw_query) = url.split_once('?').unwrap_or((url, ""));
        let q = Query::parse(raw_query);
        let path = query::unescape_path(raw_path).unwrap_or_default();
        match path.as_str() {
            "/" => {
                self.count("/");
                Reply {
                    status: 200,
                    content_type: "text/html; charset=utf-8",
                    body: ROOT_HTML.as_bytes().to_vec(),
                }
            }
            "/varz" => {
                self.count("/varz");
                let extras = varz::VarzExtras {
                    http_req_stats: self.requests.clone(),
                    mem: process::resident_memory(),
                    cpu: self.cpu.sample(Instant::now()),
                    http_host: self.http_host.clone(),
                };
                Reply::json(&q, json::to_go_json(&varz::varz(&self.shared, extras)))
            }
            "/connz" => {
                let opts = match connz::ConnzOptions::decode(&q) {
                    Ok(o) => o,
                    Err(m) => return Reply::bad_request(m),
                };
                self.count("/connz");
                match connz::connz(&self.shared, &opts) {
                    Ok(c) => Reply::json(&q, json::to_go_json(&c)),
                    Err(m) => Reply::bad_request(m),
                }
            }
            "/routez" => {
                let subs = match query::decode_subs(&q) {
                    Ok(s) => s != query::SubsMode::None,
                    Err(m) => return Reply::bad_request(m),
                };
                self.count("/routez");
                Reply::json(&q, json::to_go_json(&varz::routez(&self.shared, subs)))
            }
            "/subsz" | "/subscriptionsz" => {
                self.count("/subsz");
                match subsz::subsz(&self.shared, &q) {
                    Ok(subsz::SubszReply::Stats(s)) => Reply::json(&q, json::to_go_json(&s)),
                    Ok(subsz::SubszReply::List(s)) => Reply::json(&q, json::to_go_json(&s)),
                    Err(m) => Reply::bad_request(m),
                }
            }
            "/healthz" => {
                self.count("/healthz");
                for flag in ["js-enabled", "js-enabled-only", "js-server-only"] {
                    if let Err(m) = query::decode_bool(&q, flag) {
                        return Reply::bad_request(m);
                    }
                }
                // Compact, as nats-server marshals this one.
                let body = serde_json::to_vec(&varz::Health { status: "ok" })
                    .unwrap_or_else(|_| b"{\"status\":\"ok\"}".to_vec());
                Reply::json(&q, body)
            }
            "/metrics" => {
                self.count("/metrics");
                let mem = process::resident_memory();
                let cpu = self.cpu.sample(Instant::now());
                Reply {
                    status: 200,
                    content_type: metrics::CONTENT_TYPE,
                    body: metrics::render(&self.shared, &self.requests, mem, cpu).into_bytes(),
                }
            }
            _ => Reply::text(404, "404 page not found\n"),
        }
    }
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

    #[test]
    fn host_port() {
        assert_eq!(join_host_port("127.0.0.1", 8222), "127.0.0.1:8222");
        assert_eq!(join_host_port("::1", 8222), "[::1]:8222");
    }
}
