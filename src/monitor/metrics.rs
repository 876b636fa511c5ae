//! `GET /metrics`: the server's counters in the Prometheus text exposition format (version
//! 0.0.4, `text/plain; version=0.0.4`), beyond what nats-server serves.
//!
//! Names are prefixed `beaver_` and follow Prometheus conventions: counters end in
//! `_total`, units are spelled out (`_bytes`, `_seconds`). The values are the ones `/varz`
//! shows; the README maps each to its `/varz` field and to the `gnatsd_varz_*` gauge the
//! prometheus-nats-exporter derives from it. (That exporter exports every field as a gauge
//! named after the JSON field; beaver uses proper counter types and `_total` names
//! instead, so rates and resets work as Prometheus expects.)

use super::process;
use super::varz::Totals;
use crate::close::CloseReason;
use crate::protocol::NATS_VERSION;
use crate::shared::{Shared, VERSION};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Instant, UNIX_EPOCH};

/// The content type of the exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders the metrics. `http_req_stats`, `mem` and `cpu` are the monitor's own.
pub fn render(
    shared: &Shared,
    jetstream: Option<&crate::jetstream::JetStream>,
    http_req_stats: &BTreeMap<&'static str, u64>,
    mem: u64,
    cpu: f64,
) -> String {
    let totals = Totals::of(shared);
    let t = totals.traffic;
    let sl = shared.accounts.stats(|_| true);
    let mut out = String::with_capacity(4096);
    let mut m = Exposition { out: &mut out };

    m.family("beaver_info", "gauge", "Server identity: id, name, beaver's version and the nats-server version whose protocol it speaks (always 1).");
    m.sample(
        "beaver_info",
        &[
            ("server_id", &shared.server_id),
            ("server_name", &shared.server_name),
            ("version", VERSION),
            ("nats_version", NATS_VERSION),
        ],
        "1",
    );
    let start = shared
        .start
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    m.gauge(
        "beaver_start_time_seconds",
        "When the server started, in seconds since the Unix epoch (varz start).",
        start,
    );
    m.gauge(
        "beaver_uptime_seconds",
        "Seconds since the server started (varz uptime).",
        Instant::now()
            .saturating_duration_since(shared.start_instant)
            .as_secs_f64(),
    );
    m.gauge(
        "beaver_connections",
        "Open client connections (varz connections).",
        totals.connections as f64,
    );
    m.counter(
        "beaver_connections_total",
        "Client connections accepted since start (varz total_connections).",
        totals.total_connections,
    );
    m.gauge(
        "beaver_subscriptions",
        "Subscriptions (varz subscriptions).",
        totals.subscriptions as f64,
    );
    m.counter(
        "beaver_slow_consumers_total",
        "Connections closed as slow consumers (varz slow_consumers).",
        totals.slow_consumers,
    );
    m.counter(
        "beaver_in_msgs_total",
        "Messages received from clients (varz in_msgs).",
        t.in_msgs,
    );
    m.counter(
        "beaver_out_msgs_total",
        "Messages delivered to clients (varz out_msgs).",
        t.out_msgs,
    );
    m.counter(
        "beaver_in_bytes_total",
        "Payload bytes, headers included, received from clients (varz in_bytes).",
        t.in_bytes,
    );
    m.counter(
        "beaver_out_bytes_total",
        "Payload bytes, headers included, delivered to clients (varz out_bytes).",
        t.out_bytes,
    );
    m.family(
        "beaver_closed_connections_total",
        "counter",
        "Client connections closed, by reason (nats-server's reason strings, as in connz).",
    );
    for reason in CloseReason::ALL {
        let n = shared.registry.closed_count(reason).to_string();
        m.sample(
            "beaver_closed_connections_total",
            &[("reason", reason.as_str())],
            &n,
        );
    }
    m.counter(
        "beaver_subscription_inserts_total",
        "Subscriptions added (subsz num_inserts).",
        sl.inserts,
    );
    m.counter(
        "beaver_subscription_removes_total",
        "Subscriptions removed (subsz num_removes).",
        sl.removes,
    );
    m.counter(
        "beaver_sublist_matches_total",
        "Lookups that reached the subscription table after a reader's cache missed (subsz num_matches).",
        sl.matches,
    );
    m.counter(
        "beaver_sublist_cache_hits_total",
        "Of those lookups, the ones answered by the shared match cache.",
        sl.cache_hits,
    );
    m.gauge(
        "beaver_mem_bytes",
        "Resident memory of the process in bytes (varz mem; 0 where unknown).",
        mem as f64,
    );
    m.gauge(
        "beaver_cpu_percent",
        &format!(
            "CPU use in percent of one core over at least {}s (varz cpu).",
            process::CPU_WINDOW.as_secs()
        ),
        cpu,
    );
    m.gauge(
        "beaver_cores",
        "CPUs available to the process (varz cores).",
        std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
    );
    m.family(
        "beaver_http_requests_total",
        "counter",
        "Monitoring requests served, by path (varz http_req_stats).",
    );
    for (path, n) in http_req_stats {
        m.sample(
            "beaver_http_requests_total",
            &[("path", path)],
            &n.to_string(),
        );
    }
    if let Some(js) = jetstream {
        jetstream_metrics(&mut m, js);
    }
    out
}

/// JetStream's gauges and counters (`/jsz`'s numbers), when it is on.
fn jetstream_metrics(m: &mut Exposition<'_>, js: &crate::jetstream::JetStream) {
    use std::sync::atomic::Ordering;
    let (memory, storage) = js.usage();
    let (mut streams, mut messages, mut bytes) = (0u64, 0u64, 0u64);
    for acc in js.accounts() {
        for s in acc.stream_list() {
            let state = s.lock().store.state();
            streams += 1;
            messages += state.msgs;
            bytes += state.bytes;
        }
    }
    m.gauge(
        "beaver_jetstream_streams",
        "Streams, all accounts (jsz streams).",
        streams as f64,
    );
    m.gauge(
        "beaver_jetstream_messages",
        "Messages stored in all streams (jsz messages).",
        messages as f64,
    );
    m.gauge(
        "beaver_jetstream_bytes",
        "Bytes of the messages stored in all streams, as streams count them (jsz bytes).",
        bytes as f64,
    );
    m.gauge(
        "beaver_jetstream_memory_bytes",
        "Bytes held by memory streams (jsz memory).",
        memory as f64,
    );
    m.gauge(
        "beaver_jetstream_storage_bytes",
        "Bytes held by file streams (jsz storage).",
        storage as f64,
    );
    m.gauge(
        "beaver_jetstream_max_memory_bytes",
        "max_memory_store (jsz config max_memory).",
        js.max_memory as f64,
    );
    m.gauge(
        "beaver_jetstream_max_storage_bytes",
        "max_file_store (jsz config max_storage).",
        js.max_store as f64,
    );
    m.counter(
        "beaver_jetstream_api_requests_total",
        "JetStream API requests handled (jsz api total).",
        js.api_total.load(Ordering::Relaxed),
    );
    m.counter(
        "beaver_jetstream_api_errors_total",
        "JetStream API requests answered with an error (jsz api errors).",
        js.api_errors.load(Ordering::Relaxed),
    );
}

/// Writes the text format.
struct Exposition<'a> {
    out: &'a mut String,
}

impl Exposition<'_> {
    /// `# HELP` and `# TYPE` lines.
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample line.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "gauge", help);
        self.sample(name, &[], &value.to_string());
    }

    fn counter(&mut self, name: &str, help: &str, value: u64) {
        self.family(name, "counter", help);
        self.sample(name, &[], &value.to_string());
    }
}

/// Label values escape `\`, `"` and newlines.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Help texts escape `\` and newlines.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape_help("x\\y\nz"), "x\\\\y\\nz");
        let mut out = String::new();
        let mut m = Exposition { out: &mut out };
        m.counter("x_total", "X.", 3);
        m.sample("y", &[("a", "1"), ("b", "q\"")], "2");
        assert_eq!(
            out,
            "# HELP x_total X.\n# TYPE x_total counter\nx_total 3\ny{a=\"1\",b=\"q\\\"\"} 2\n"
        );
    }
}
