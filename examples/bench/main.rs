//! `bench`: a NATS load generator that reproduces Go's `nats-bench` (the NATS docs'
//! "nats-bench" tutorial) in its flags and its report, plus a request/reply latency mode. It
//! works against any NATS server: beaver, or Go's `nats-server` for comparison.
//!
//! ```text
//! cargo run --release --example bench -- [flags] <subject>
//!
//!   -s URL       server (default nats://127.0.0.1:4222); nats://host:port, host:port, or a
//!                comma-separated list (the first entry is used)
//!   --sub-url URL  subscribers connect here instead of -s (publishers stay on -s): another
//!                node of the same cluster; publishing starts once a probe published on -s
//!                reaches a subscription made here after the subscribers' (not with --reqrep)
//!   -np N        publishers, each on its own connection and OS thread (default 1)
//!   -ns N        subscribers, each on its own connection and OS thread (default 0)
//!   -n N         messages to publish, split across publishers (default 100000)
//!   -ms N        message size in bytes (default 128)
//!   -csv FILE    write nats-bench's CSV of every client's sample
//!   --json FILE  write a machine-readable summary (see `JsonSummary`)
//!   --reqrep     request/reply latency mode (subject optional: default `bench.reqrep`;
//!                -np is the number of requesters, -n the number of requests, -ns is unused)
//!   --warmup N   request/reply: requests before measuring (default 0)
//!   --timeout S  seconds any blocking read or write may wait (default 30)
//!   --js         JetStream publish mode (see `js.rs`): (re)creates stream `--stream` on the
//!                subject, then the publishers publish with a reply inbox and count PubAcks
//!   --stream S   --js: the stream's name (default benchstream)
//!   --storage T  --js: file or memory (default file)
//!   --sync       --js: publish, wait for the PubAck, publish the next
//!   --maxacks N  --js, asynchronous: at most N publishes awaiting their PubAck, the window
//!                sliding as acks arrive (default 1000; nats.go's PublishAsyncMaxPending)
//!   --pubbatch N --js, asynchronous: N publishes, then wait for all their acks (nats bench
//!                --js's pattern, its default 100); replaces --maxacks
//!   --pull       JetStream pull consumer mode (see `consume.rs`): fills stream `--stream`
//!                with -n messages (the --js publish path, -np publishers, its pacing), then
//!                -ns subscribers consume them through one durable pull consumer
//!   --push       the same through one durable push consumer (deliver subject and group)
//!   --fetch N    --pull: messages per pull request (default 100)
//!   --ackpolicy P  --pull/--push: explicit (default), all or none
//!   --acksample N  --pull/--push: every N-th ack is a timed double ack (default 100)
//!   --maxackpending N  --pull/--push: the consumer's max_ack_pending (default 10000)
//!   --durable D  --pull/--push: the consumer's name (default benchconsumer)
//!   --kv OP      key-value mode (see `kv.rs`): put or get on bucket `--bucket` (default
//!                benchkv) over `--keys` keys (default 1000), -np clients, -n requests,
//!                --sync or a window of --maxacks requests per client
//! ```
//!
//! Flags take Go's `flag` spellings: `-np 5`, `--np 5`, `-np=5`. The report's formulas and
//! formatting are checked against strings printed by Go's `bench` package:
//! `cargo test --example bench`.
//!
//! `--json FILE` writes `{"mode": "pubsub"|"reqrep"|"js", "server", "sub_server", "subject",
//! "msgs", "size", "pubs", "subs", "aggregate_msgs_per_sec", "pub_msgs_per_sec", "sub_msgs_per_sec",
//! "pub_samples": [{"msgs", "secs"}], "sub_samples", "requests_per_sec", "latency_us": {"p50",
//! "p90", "p99", "p999", "max", "count"}}` (null where a mode has no such number; in reqrep
//! mode the requesters are the `pub_samples`, `subs` is the one responder and
//! `aggregate_msgs_per_sec` is the request rate). In js mode `pub_msgs_per_sec` and
//! `aggregate_msgs_per_sec` are the acknowledged publishes per second, and a `"js"` object
//! adds `{"stream", "storage", "sync", "max_pending", "batch"}`.
//!
//! ```text
//! cargo run --release --example bench -- -s nats://127.0.0.1:4222 -np 5 -ns 5 -n 1000000 -ms 16 foo
//! Starting benchmark [msgs=1000000, msgsize=16, pubs=5, subs=5]
//! NATS Pub/Sub stats: ...
//! ```
//!
//! As with nats-bench: subscribers connect and subscribe first (confirmed by `PING`/`PONG`),
//! then the publishers start; every subscriber expects all `-n` messages and its sample spans
//! from its first to its last message; a publisher's sample spans from its first `PUB` to the
//! `PONG` confirming that the server processed its last one. The report (stdout), the
//! `Starting benchmark` line (stderr, as Go's `log.Printf`) and the CSV are formatted exactly
//! as Go's `nats.go/bench` package formats them; samples are listed in the order the clients
//! finished, as there.
//!
//! How it differs from Go's nats-bench:
//! - It does not use a client library: each connection is a hand-written raw-protocol client
//!   (blocking `TcpStream`, `TCP_NODELAY`): publishers write pre-formatted `PUB` frames in
//!   64 KiB chunks, subscribers count `MSG` frames with `memchr` and skip payloads by size,
//!   with no allocation per message, so the tool is not the bottleneck.
//! - `--reqrep` measures request/reply: one responder (queue group `q`) echoes each request;
//!   `-np` requesters send `-n` requests in total, one at a time each, and the round trips go
//!   into an HDR histogram: `Request/reply stats: N requests/sec ~ p50 .. us | p90 .. us |
//!   p99 .. us | p99.9 .. us | max .. us`.
//! - `--json` writes a summary for scripts; `--timeout` bounds every blocking call. A
//!   subscriber that does not get all its messages (dropped by the server as a slow consumer,
//!   or nothing for `--timeout` seconds) is reported with what it got, and the exit status
//!   is 1. TLS, credentials files and nkeys are not supported (`nats://user:pass@` is).

mod client;
mod consume;
mod js;
mod kv;
mod report;
mod reqrep;

use std::ffi::OsString;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use serde::Serialize;

use client::{describe, Conn, Server, SubProgress, READ_BUF};
use report::{comma_format, msgs_per_client, run_id, Benchmark, Sample};

const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
const DEFAULT_REQREP_SUBJECT: &str = "bench.reqrep";

/// Go-style multi-letter flags that may be written with one dash (`-np 5`).
const LONG_FLAGS: &[&str] = &[
    "np",
    "ns",
    "ms",
    "csv",
    "json",
    "reqrep",
    "warmup",
    "timeout",
    "help",
    "sub-url",
    "js",
    "stream",
    "storage",
    "sync",
    "maxacks",
    "pubbatch",
    "pull",
    "push",
    "fetch",
    "ackpolicy",
    "acksample",
    "maxackpending",
    "durable",
    "kv",
    "keys",
    "bucket",
];

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    about = "NATS benchmark: Go nats-bench's flags and report, plus request/reply latency",
    override_usage = "bench [-s server (nats://127.0.0.1:4222)] [-np NUM_PUBLISHERS] \
        [-ns NUM_SUBSCRIBERS] [-n NUM_MSGS] [-ms MESSAGE_SIZE] [-csv csvfile] \
        [--json file] [--reqrep [--warmup N]] [--timeout SECS] [--sub-url URL] \
        [--js [--stream NAME] [--storage file|memory] [--sync | --maxacks N | --pubbatch N]] \
        [--pull [--fetch N] | --push] [--ackpolicy explicit|all|none] [--acksample N] \
        [--maxackpending N] [--kv put|get [--keys N] [--bucket B]] <subject>"
)]
struct Args {
    /// The NATS server URLs (separated by comma; the first is used)
    #[arg(short = 's', long = "s", value_name = "URL", default_value = DEFAULT_URL)]
    server: String,
    /// Subscribers connect to this server instead (another node of the cluster -s is in)
    #[arg(long = "sub-url", value_name = "URL")]
    sub_url: Option<String>,
    /// Number of concurrent publishers (requesters with --reqrep)
    #[arg(long = "np", value_name = "N", default_value_t = 1)]
    np: usize,
    /// Number of concurrent subscribers
    #[arg(long = "ns", value_name = "N", default_value_t = 0)]
    ns: usize,
    /// Number of messages to publish (requests with --reqrep)
    #[arg(short = 'n', long = "n", value_name = "N", default_value_t = 100_000)]
    n: u64,
    /// Size of the message
    #[arg(long = "ms", value_name = "BYTES", default_value_t = 128)]
    ms: usize,
    /// Save bench data to csv file
    #[arg(long = "csv", value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Save a JSON summary to this file
    #[arg(long = "json", value_name = "FILE")]
    json: Option<PathBuf>,
    /// Request/reply latency mode
    #[arg(long = "reqrep")]
    reqrep: bool,
    /// Request/reply: requests before measuring
    #[arg(long = "warmup", value_name = "N", default_value_t = 0)]
    warmup: u64,
    /// Seconds a blocking read or write may wait before the client gives up
    #[arg(long = "timeout", value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// JetStream publish mode: publish to a stream and count PubAcks
    #[arg(long = "js")]
    js: bool,
    /// JetStream: the stream to (re)create on the subject
    #[arg(long = "stream", value_name = "NAME", default_value = "benchstream")]
    stream: String,
    /// JetStream: the stream's storage
    #[arg(long = "storage", value_name = "file|memory", default_value = "file",
          value_parser = ["file", "memory"])]
    storage: String,
    /// JetStream: synchronous publish (wait for each PubAck)
    #[arg(long = "sync")]
    sync: bool,
    /// JetStream, asynchronous: most publishes awaiting their PubAck (sliding window)
    #[arg(long = "maxacks", value_name = "N", default_value_t = 1000)]
    maxacks: u64,
    /// JetStream, asynchronous: publish N, then wait for all their PubAcks (nats bench's way)
    #[arg(long = "pubbatch", value_name = "N")]
    pubbatch: Option<u64>,
    /// JetStream pull consumer mode: fill the stream, then -ns subscribers fetch it all
    #[arg(long = "pull")]
    pull: bool,
    /// JetStream push consumer mode: fill the stream, then -ns queue subscribers get it all
    #[arg(long = "push")]
    push: bool,
    /// --pull: messages per pull request (--push with --ackpolicy all: messages per ack)
    #[arg(long = "fetch", value_name = "N", default_value_t = 100)]
    fetch: u64,
    /// --pull/--push: the consumer's ack policy
    #[arg(long = "ackpolicy", value_name = "explicit|all|none", default_value = "explicit",
          value_parser = ["explicit", "all", "none"])]
    ackpolicy: String,
    /// --pull/--push: every N-th ack is a double ack (with a reply), timed
    #[arg(long = "acksample", value_name = "N", default_value_t = 100)]
    acksample: u64,
    /// --pull/--push: the consumer's max_ack_pending
    #[arg(long = "maxackpending", value_name = "N", default_value_t = 10_000)]
    maxackpending: u64,
    /// --pull/--push: the durable consumer's name
    #[arg(long = "durable", value_name = "NAME", default_value = "benchconsumer")]
    durable: String,
    /// Key-value mode: put or get rates on a bucket (the subject is not used)
    #[arg(long = "kv", value_name = "put|get", value_parser = ["put", "get"])]
    kv: Option<String>,
    /// --kv: keys the requests go round
    #[arg(long = "keys", value_name = "N", default_value_t = 1000)]
    keys: u64,
    /// --kv: the bucket
    #[arg(long = "bucket", value_name = "NAME", default_value = "benchkv")]
    bucket: String,
    /// Subject to publish to and subscribe on
    subject: Option<String>,
}

/// Turns Go's single-dash long flags (`-np 5`, `-np=5`, `-n=5`) into clap's `--np 5`, and Go's
/// `-reqrep=true|false` into a plain flag.
fn go_style_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut only_positional = false;
    for (i, arg) in args.into_iter().enumerate() {
        let Some(s) = arg.to_str().filter(|_| i > 0 && !only_positional) else {
            out.push(arg);
            continue;
        };
        if s == "--" {
            only_positional = true;
            out.push(arg);
            continue;
        }
        let mut s = s.to_string();
        if let Some(body) = s.strip_prefix('-').filter(|b| !b.starts_with('-')) {
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            if LONG_FLAGS.contains(&name) || (value.is_some() && (name == "s" || name == "n")) {
                s = format!("-{s}");
            }
        }
        match s.as_str() {
            "--reqrep=true" | "--reqrep=1" => out.push("--reqrep".into()),
            "--reqrep=false" | "--reqrep=0" => {}
            "--js=true" | "--js=1" => out.push("--js".into()),
            "--js=false" | "--js=0" => {}
            "--sync=true" | "--sync=1" => out.push("--sync".into()),
            "--sync=false" | "--sync=0" => {}
            "--pull=true" | "--pull=1" => out.push("--pull".into()),
            "--pull=false" | "--pull=0" => {}
            "--push=true" | "--push=1" => out.push("--push".into()),
            "--push=false" | "--push=0" => {}
            _ => out.push(s.into()),
        }
    }
    out
}

/// A start line for threads: they wait until it opens (true: go, false: give up).
#[derive(Default)]
pub struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    pub fn open(&self, go: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *s = Some(go);
        self.cv.notify_all();
    }

    pub fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *s {
                return go;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The `--json` summary. The key names are an interface: a comparison runner reads them.
#[derive(Serialize)]
struct JsonSummary {
    mode: &'static str,
    server: String,
    /// Where the subscribers connected (`--sub-url`, else `server`).
    sub_server: String,
    subject: String,
    msgs: u64,
    size: usize,
    pubs: usize,
    subs: usize,
    aggregate_msgs_per_sec: f64,
    pub_msgs_per_sec: Option<f64>,
    sub_msgs_per_sec: Option<f64>,
    pub_samples: Vec<JsonSample>,
    sub_samples: Vec<JsonSample>,
    requests_per_sec: Option<f64>,
    latency_us: Option<JsonLatency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    js: Option<JsonJs>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer: Option<JsonConsumer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kv: Option<JsonKv>,
}

/// `--pull` / `--push`: the consumer, the fill, and the consumer's state after the run.
#[derive(Serialize)]
struct JsonConsumer {
    kind: &'static str,
    stream: String,
    storage: String,
    durable: String,
    ack_policy: &'static str,
    fetch: u64,
    ack_sample: u64,
    max_ack_pending: u64,
    fill_msgs_per_sec: Option<f64>,
    after: Option<consume::AfterRun>,
}

#[derive(Serialize)]
struct JsonKv {
    op: &'static str,
    bucket: String,
    storage: String,
    keys: u64,
    /// Requests out at once per client.
    window: u64,
}

#[derive(Serialize)]
struct JsonJs {
    stream: String,
    storage: String,
    sync: bool,
    /// Publishes allowed without their PubAck (1 when sync).
    max_pending: u64,
    /// Whether the publishers wait for all acks of a batch before the next (`--pubbatch`).
    batch: bool,
}

#[derive(Serialize)]
struct JsonSample {
    msgs: u64,
    secs: f64,
}

#[derive(Serialize)]
struct JsonLatency {
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
    count: u64,
}

impl JsonSample {
    fn of(s: &Sample) -> JsonSample {
        JsonSample {
            msgs: s.job_msg_cnt,
            secs: s.seconds(),
        }
    }
}

fn write_file(path: &PathBuf, contents: &str) -> Result<(), String> {
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn write_json(path: &PathBuf, summary: &JsonSummary) -> Result<(), String> {
    let mut text =
        serde_json::to_string_pretty(summary).map_err(|e| format!("JSON summary: {e}"))?;
    text.push('\n');
    write_file(path, &text)
}

fn main() -> ExitCode {
    let args = Args::parse_from(go_style_args(std::env::args_os()));
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let server = Server::parse(&args.server)?;
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".to_string());
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let sub_server = args.sub_url.as_deref().map(Server::parse).transpose()?;
    if args.pull || args.push {
        if args.pull && args.push {
            return Err("--pull and --push exclude each other".to_string());
        }
        if args.reqrep || sub_server.is_some() || args.kv.is_some() {
            return Err("--pull/--push: no --reqrep, --sub-url or --kv".to_string());
        }
        return run_consume(&args, &server, timeout);
    }
    if let Some(op) = &args.kv {
        if args.reqrep || sub_server.is_some() || args.ns > 0 {
            return Err("--kv: no --reqrep, --sub-url or -ns".to_string());
        }
        return run_kv(&args, kv::Op::parse(op)?, &server, timeout);
    }
    if args.js {
        if args.reqrep || sub_server.is_some() || args.ns > 0 {
            return Err("--js publishes only: no --reqrep, --sub-url or -ns".to_string());
        }
        return run_js(&args, &server, timeout);
    }
    if args.reqrep {
        if sub_server.is_some() {
            return Err("--sub-url is for pub/sub runs, not --reqrep".to_string());
        }
        run_reqrep(&args, &server, timeout)
    } else {
        run_pubsub(&args, &server, sub_server.as_ref(), timeout)
    }
}

fn run_reqrep(args: &Args, server: &Server, timeout: Duration) -> Result<(), String> {
    let subject = args
        .subject
        .clone()
        .unwrap_or_else(|| DEFAULT_REQREP_SUBJECT.to_string());
    if args.n == 0 {
        return Err("Number of requests should be greater than zero.".to_string());
    }
    if args.np == 0 {
        return Err("request/reply needs at least one requester (-np)".to_string());
    }
    eprintln!(
        "Starting request/reply benchmark [requests={}, msgsize={}, requesters={}, warmup={}]",
        args.n, args.ms, args.np, args.warmup
    );
    let outcome = reqrep::run(&reqrep::ReqRepConfig {
        server,
        subject: &subject,
        requests: args.n,
        size: args.ms,
        requesters: args.np,
        warmup: args.warmup,
        timeout,
    })?;
    print!("{}", outcome.report());
    if let Some(path) = &args.json {
        let h = &outcome.latency;
        let rps = outcome.requests_per_sec();
        let summary = JsonSummary {
            mode: "reqrep",
            server: server.url(),
            sub_server: server.url(),
            subject,
            msgs: args.n,
            size: args.ms,
            pubs: args.np,
            subs: 1,
            aggregate_msgs_per_sec: rps.unwrap_or(0.0),
            pub_msgs_per_sec: None,
            sub_msgs_per_sec: None,
            pub_samples: outcome
                .requesters
                .iter()
                .map(|(s, _)| JsonSample::of(s))
                .collect(),
            sub_samples: Vec::new(),
            js: None,
            consumer: None,
            kv: None,
            requests_per_sec: rps,
            latency_us: Some(JsonLatency {
                p50: h.value_at_quantile(0.50) as f64,
                p90: h.value_at_quantile(0.90) as f64,
                p99: h.value_at_quantile(0.99) as f64,
                p999: h.value_at_quantile(0.999) as f64,
                max: h.max() as f64,
                count: h.len(),
            }),
        };
        write_json(path, &summary)?;
    }
    Ok(())
}

/// The publish pace of `--js` from the flags.
fn js_pace(args: &Args) -> Result<client::JsPace, String> {
    let pace = match (args.sync, args.pubbatch) {
        (true, Some(_)) => return Err("--sync and --pubbatch exclude each other".to_string()),
        (true, None) => client::JsPace {
            max_pending: 1,
            batch: false,
        },
        (false, Some(n)) => client::JsPace {
            max_pending: n,
            batch: true,
        },
        (false, None) => client::JsPace {
            max_pending: args.maxacks,
            batch: false,
        },
    };
    if pace.max_pending == 0 {
        return Err("--maxacks and --pubbatch must be at least 1".to_string());
    }
    Ok(pace)
}

fn run_js(args: &Args, server: &Server, timeout: Duration) -> Result<(), String> {
    let Some(subject) = args.subject.clone() else {
        return Err("a subject is required: bench --js [flags] <subject> (see --help)".to_string());
    };
    if args.n == 0 {
        return Err("Number of messages should be greater than zero.".to_string());
    }
    if args.np == 0 {
        return Err("--js needs at least one publisher (-np)".to_string());
    }
    let pace = js_pace(args)?;
    eprintln!(
        "Starting JetStream benchmark [msgs={}, msgsize={}, pubs={}, stream={}, storage={}, \
         sync={}, {}={}]",
        args.n,
        args.ms,
        args.np,
        args.stream,
        args.storage,
        args.sync,
        if pace.batch { "pubbatch" } else { "maxacks" },
        pace.max_pending
    );
    let pubs = js::run(&js::JsConfig {
        server,
        subject: &subject,
        stream: &args.stream,
        storage: &args.storage,
        msgs: args.n,
        size: args.ms,
        publishers: args.np,
        pace,
        timeout,
    })?;
    let bm = Benchmark::new("NATS", run_id(), pubs, Vec::new());
    print!("{}", bm.report());
    if let Some(path) = &args.csv {
        write_file(path, &bm.csv())?;
        println!("Saved metric data in csv file {}", path.display());
    }
    if let Some(path) = &args.json {
        let rate = bm.pubs.agg.map(|a| a.rate_f64());
        let summary = JsonSummary {
            mode: "js",
            server: server.url(),
            sub_server: server.url(),
            subject,
            msgs: args.n,
            size: args.ms,
            pubs: args.np,
            subs: 0,
            aggregate_msgs_per_sec: rate.unwrap_or(0.0),
            pub_msgs_per_sec: rate,
            sub_msgs_per_sec: None,
            pub_samples: bm.pubs.samples.iter().map(JsonSample::of).collect(),
            sub_samples: Vec::new(),
            requests_per_sec: None,
            latency_us: None,
            js: Some(JsonJs {
                stream: args.stream.clone(),
                storage: args.storage.clone(),
                sync: args.sync,
                max_pending: pace.max_pending,
                batch: pace.batch,
            }),
            consumer: None,
            kv: None,
        };
        write_json(path, &summary)?;
    }
    Ok(())
}

fn latency_json(h: &hdrhistogram::Histogram<u64>) -> Option<JsonLatency> {
    (!h.is_empty()).then(|| JsonLatency {
        p50: h.value_at_quantile(0.50) as f64,
        p90: h.value_at_quantile(0.90) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        p999: h.value_at_quantile(0.999) as f64,
        max: h.max() as f64,
        count: h.len(),
    })
}

fn run_consume(args: &Args, server: &Server, timeout: Duration) -> Result<(), String> {
    let Some(subject) = args.subject.clone() else {
        return Err("a subject is required: bench --pull|--push [flags] <subject>".to_string());
    };
    if args.n == 0 {
        return Err("Number of messages should be greater than zero.".to_string());
    }
    if args.ns == 0 || args.np == 0 {
        return Err("--pull/--push need subscribers (-ns) and fill publishers (-np)".to_string());
    }
    let mode = if args.pull {
        consume::Mode::Pull
    } else {
        consume::Mode::Push
    };
    let ack = consume::AckPolicy::parse(&args.ackpolicy)?;
    let fill_pace = js_pace(args)?;
    let kind = if args.pull { "pull" } else { "push" };
    eprintln!(
        "Starting JetStream {kind} consumer benchmark [msgs={}, msgsize={}, subs={}, stream={}, \
         storage={}, ackpolicy={}, fetch={}, acksample={}, maxackpending={}]",
        args.n,
        args.ms,
        args.ns,
        args.stream,
        args.storage,
        ack.name(),
        args.fetch,
        args.acksample,
        args.maxackpending
    );
    let out = consume::run(&consume::ConsumeConfig {
        server,
        subject: &subject,
        stream: &args.stream,
        storage: &args.storage,
        durable: &args.durable,
        msgs: args.n,
        size: args.ms,
        consumers: args.ns,
        mode,
        fetch: args.fetch,
        ack,
        ack_sample: args.acksample,
        max_ack_pending: args.maxackpending,
        fill_publishers: args.np,
        fill_pace,
        timeout,
    })?;
    let fill = Benchmark::new("NATS", run_id(), out.fill, Vec::new());
    let fill_rate = fill.pubs.agg.map(|a| a.rate_f64());
    eprintln!(
        "Filled the stream: {}",
        fill.pubs.agg.map_or("-".to_string(), |a| a.to_string())
    );
    let bm = Benchmark::new("NATS", run_id(), Vec::new(), out.samples);
    print!("{}", bm.report());
    if !out.ack_latency.is_empty() {
        println!(
            "Ack latency ({} double acks, every {}th ack): {}",
            out.ack_latency.len(),
            args.acksample,
            reqrep::percentiles(&out.ack_latency)
        );
    }
    if let Some(a) = &out.after {
        eprintln!(
            "Consumer after the run: delivered up to {}, ack floor {}, {} unacknowledged, \
             {} redelivered, {} pending, {} waiting pull requests",
            a.delivered,
            a.ack_floor,
            a.num_ack_pending,
            a.num_redelivered,
            a.num_pending,
            a.num_waiting
        );
    }
    if let Some(path) = &args.csv {
        write_file(path, &bm.csv())?;
        println!("Saved metric data in csv file {}", path.display());
    }
    if let Some(path) = &args.json {
        let rate = bm.subs.agg.map(|a| a.rate_f64());
        let summary = JsonSummary {
            mode: if args.pull { "js-pull" } else { "js-push" },
            server: server.url(),
            sub_server: server.url(),
            subject,
            msgs: args.n,
            size: args.ms,
            pubs: args.np,
            subs: args.ns,
            aggregate_msgs_per_sec: rate.unwrap_or(0.0),
            pub_msgs_per_sec: None,
            sub_msgs_per_sec: rate,
            pub_samples: Vec::new(),
            sub_samples: bm.subs.samples.iter().map(JsonSample::of).collect(),
            requests_per_sec: None,
            latency_us: latency_json(&out.ack_latency),
            js: None,
            consumer: Some(JsonConsumer {
                kind,
                stream: args.stream.clone(),
                storage: args.storage.clone(),
                durable: args.durable.clone(),
                ack_policy: ack.name(),
                fetch: args.fetch,
                ack_sample: args.acksample,
                max_ack_pending: args.maxackpending,
                fill_msgs_per_sec: fill_rate,
                after: out.after.clone(),
            }),
            kv: None,
        };
        write_json(path, &summary)?;
    }
    Ok(())
}

fn run_kv(args: &Args, op: kv::Op, server: &Server, timeout: Duration) -> Result<(), String> {
    if args.n == 0 {
        return Err("Number of requests should be greater than zero.".to_string());
    }
    let pace = js_pace(args)?;
    if pace.batch {
        return Err("--kv: --sync or --maxacks, not --pubbatch".to_string());
    }
    eprintln!(
        "Starting key-value {} benchmark [requests={}, msgsize={}, clients={}, keys={}, \
         bucket={}, storage={}, window={}]",
        op.name(),
        args.n,
        args.ms,
        args.np,
        args.keys,
        args.bucket,
        args.storage,
        pace.max_pending
    );
    let out = kv::run(&kv::KvConfig {
        server,
        bucket: &args.bucket,
        storage: &args.storage,
        op,
        keys: args.keys,
        requests: args.n,
        size: args.ms,
        clients: args.np,
        window: pace.max_pending,
        timeout,
    })?;
    let bm = Benchmark::new("NATS", run_id(), out.samples, Vec::new());
    let label = format!("KV {} stats", op.name());
    print!("{}", bm.report().replacen("Pub stats", &label, 1));
    println!(
        "KV {} latency ({} requests): {}",
        op.name(),
        out.latency.len(),
        reqrep::percentiles(&out.latency)
    );
    if let Some(path) = &args.csv {
        write_file(path, &bm.csv())?;
        println!("Saved metric data in csv file {}", path.display());
    }
    if let Some(path) = &args.json {
        let rate = bm.pubs.agg.map(|a| a.rate_f64());
        let summary = JsonSummary {
            mode: if op == kv::Op::Put {
                "kv-put"
            } else {
                "kv-get"
            },
            server: server.url(),
            sub_server: server.url(),
            subject: format!("$KV.{}.>", args.bucket),
            msgs: args.n,
            size: args.ms,
            pubs: args.np,
            subs: 0,
            aggregate_msgs_per_sec: rate.unwrap_or(0.0),
            pub_msgs_per_sec: None,
            sub_msgs_per_sec: None,
            pub_samples: bm.pubs.samples.iter().map(JsonSample::of).collect(),
            sub_samples: Vec::new(),
            requests_per_sec: rate,
            latency_us: latency_json(&out.latency),
            js: None,
            consumer: None,
            kv: Some(JsonKv {
                op: op.name(),
                bucket: args.bucket.clone(),
                storage: args.storage.clone(),
                keys: args.keys,
                window: pace.max_pending,
            }),
        };
        write_json(path, &summary)?;
    }
    Ok(())
}

/// What a client thread tells the main thread.
enum Event {
    SubReady(usize, Result<(), String>),
    /// A subscriber finished: its sample, or how far it got and why it stopped.
    SubDone(usize, Result<Sample, (SubProgress, String)>),
    PubDone(usize, Result<Sample, String>),
}

/// Threads started so far, and how to stop them.
struct Clients {
    threads: Vec<thread::JoinHandle<()>>,
    sub_sockets: Vec<TcpStream>,
    aborted: Arc<AtomicBool>,
}

impl Clients {
    /// Makes blocked subscribers give up: their reads fail at once.
    fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
        for s in &self.sub_sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn join(self) -> usize {
        self.threads
            .into_iter()
            .map(|t| t.join())
            .filter(|r| r.is_err())
            .count()
    }
}

fn spawn(
    name: String,
    f: impl FnOnce() + Send + 'static,
) -> Result<thread::JoinHandle<()>, String> {
    thread::Builder::new()
        .name(name)
        .stack_size(256 * 1024)
        .spawn(f)
        .map_err(|e| format!("cannot start a thread: {e}"))
}

fn subscriber(
    i: usize,
    mut conn: Conn,
    subject: String,
    n: u64,
    ms: usize,
    aborted: Arc<AtomicBool>,
    tx: mpsc::Sender<Event>,
) {
    let timeout = conn.timeout();
    if let Err(e) = conn.subscribe(&subject, None, 1) {
        let _ = tx.send(Event::SubReady(i, Err(describe(&e, timeout))));
        return;
    }
    let _ = tx.send(Event::SubReady(i, Ok(())));
    let mut prog = SubProgress::default();
    let res = conn.r.count_msgs(&mut conn.w, n, &mut prog);
    conn.close();
    let done = match res {
        Ok(()) => {
            let now = Instant::now();
            let (first, last) = (prog.first.unwrap_or(now), prog.last.unwrap_or(now));
            Ok(Sample::new(n, ms, first, last, prog.received))
        }
        Err(_) if aborted.load(Ordering::Acquire) => {
            Err((prog, "stopped because another client failed".to_string()))
        }
        Err(e) => {
            let mut why = describe(&e, timeout);
            if matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ) {
                why.push_str(" (did it drop this subscriber as a slow consumer?)");
            }
            Err((prog, why))
        }
    };
    let _ = tx.send(Event::SubDone(i, done));
}

fn publisher(
    i: usize,
    mut conn: Conn,
    subject: String,
    count: u64,
    ms: usize,
    gate: Arc<Gate>,
    tx: mpsc::Sender<Event>,
) {
    if !gate.wait() {
        return;
    }
    let timeout = conn.timeout();
    let start = Instant::now();
    let res = client::publish(&mut conn, &subject, ms, count).and_then(|()| conn.flush_pong());
    let end = Instant::now();
    conn.close();
    let done = res
        .map(|()| Sample::new(count, ms, start, end, count))
        .map_err(|e| describe(&e, timeout));
    let _ = tx.send(Event::PubDone(i, done));
}

/// With subscribers on another node: waits until the interest made on `sub_server` so far
/// has reached `server`. A probe subscription is made on `sub_server` after the
/// subscribers' (whose `SUB`s it has confirmed), and a probe is published on `server` every
/// 20 ms until it arrives: interest travels between two servers in order, so the
/// subscribers' has arrived too.
fn wait_for_interest(
    server: &Server,
    sub_server: &Server,
    timeout: Duration,
) -> Result<(), String> {
    let subject = format!("_BENCH.probe.{}", run_id());
    let mut watcher = Conn::connect(sub_server, timeout, 64 * 1024)
        .map_err(|e| format!("interest probe: {e}"))?;
    watcher
        .subscribe(&subject, None, 1)
        .map_err(|e| format!("interest probe: {}", describe(&e, timeout)))?;
    let handle = watcher
        .shutdown_handle()
        .map_err(|e| format!("interest probe: {e}"))?;
    let (tx, rx) = mpsc::channel::<()>();
    let waiter = spawn("bench-probe".to_string(), move || loop {
        match watcher.r.next_frame(&mut watcher.w) {
            Ok(client::Frame::Msg { .. }) => {
                let _ = tx.send(());
                return;
            }
            Ok(_) => {}
            // The socket's timeout: keep waiting (the publishing side has the deadline).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    })?;
    let result = (|| {
        let mut probe = Conn::connect(server, timeout, 64 * 1024)
            .map_err(|e| format!("interest probe: {e}"))?;
        let deadline = Instant::now() + timeout;
        let mut frame = Vec::new();
        client::pub_frame(&subject, None, b"probe", &mut frame);
        loop {
            probe.w.out.extend_from_slice(&frame);
            probe
                .flush_pong()
                .map_err(|e| format!("interest probe: {}", describe(&e, timeout)))?;
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(()) => return Ok(()),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "interest probe: the connection to {} failed",
                        sub_server.url()
                    ))
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                    return Err(format!(
                        "interest on {} did not reach {} within {timeout:?}: are they \
                         clustered?",
                        sub_server.url(),
                        server.url()
                    ))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    })();
    let _ = handle.shutdown(Shutdown::Both);
    let _ = waiter.join();
    result
}

fn run_pubsub(
    args: &Args,
    server: &Server,
    sub_server: Option<&Server>,
    timeout: Duration,
) -> Result<(), String> {
    let Some(subject) = args.subject.clone() else {
        return Err("a subject is required: bench [flags] <subject> (see --help)".to_string());
    };
    if args.n == 0 {
        return Err("Number of messages should be greater than zero.".to_string());
    }
    // As nats-bench: printed by Go's log package, on stderr.
    eprintln!(
        "Starting benchmark [msgs={}, msgsize={}, pubs={}, subs={}]",
        args.n, args.ms, args.np, args.ns
    );
    let (n, ms) = (args.n, args.ms);
    let (tx, rx) = mpsc::channel::<Event>();
    let mut clients = Clients {
        threads: Vec::new(),
        sub_sockets: Vec::new(),
        aborted: Arc::new(AtomicBool::new(false)),
    };
    let check_size = |conn: &Conn| match conn.info.max_payload {
        Some(max) if ms as u64 > max => Err(format!(
            "message size {ms} is larger than the server's max_payload {max}"
        )),
        _ => Ok(()),
    };
    // Many subscribers: smaller read buffers (they are all touched).
    let sub_buf = if args.ns > 16 { 64 * 1024 } else { READ_BUF };

    // Subscribers first; all must be subscribed before any publisher starts.
    let mut early = Vec::new();
    let setup = (|| -> Result<(), String> {
        for i in 0..args.ns {
            let conn = Conn::connect(sub_server.unwrap_or(server), timeout, sub_buf)
                .map_err(|e| format!("subscriber {}: {e}", i + 1))?;
            check_size(&conn)?;
            clients.sub_sockets.push(
                conn.shutdown_handle()
                    .map_err(|e| format!("subscriber {}: {e}", i + 1))?,
            );
            let (subject, aborted, tx) = (subject.clone(), clients.aborted.clone(), tx.clone());
            clients
                .threads
                .push(spawn(format!("bench-sub-{i}"), move || {
                    subscriber(i, conn, subject, n, ms, aborted, tx)
                })?);
        }
        let mut ready = 0;
        while ready < args.ns {
            match rx.recv_timeout(timeout * 2) {
                Ok(Event::SubReady(_, Ok(()))) => ready += 1,
                Ok(Event::SubReady(i, Err(e))) => {
                    return Err(format!("subscriber {}: cannot subscribe: {e}", i + 1))
                }
                Ok(other) => early.push(other),
                Err(_) => return Err("subscribers did not get ready in time".to_string()),
            }
        }
        match sub_server {
            Some(sub_server) if args.ns > 0 => wait_for_interest(server, sub_server, timeout),
            _ => Ok(()),
        }
    })();
    if let Err(e) = setup {
        clients.abort();
        drop(tx);
        clients.join();
        return Err(e);
    }

    // Publishers: connect them all, then start them together.
    let gate = Arc::new(Gate::default());
    let counts = msgs_per_client(n, args.np);
    let setup = (|| -> Result<(), String> {
        for (i, &count) in counts.iter().enumerate() {
            let conn = Conn::connect(server, timeout, 64 * 1024)
                .map_err(|e| format!("publisher {}: {e}", i + 1))?;
            check_size(&conn)?;
            let (subject, gate, tx) = (subject.clone(), gate.clone(), tx.clone());
            clients
                .threads
                .push(spawn(format!("bench-pub-{i}"), move || {
                    publisher(i, conn, subject, count, ms, gate, tx)
                })?);
        }
        Ok(())
    })();
    if let Err(e) = setup {
        gate.open(false);
        clients.abort();
        drop(tx);
        clients.join();
        return Err(e);
    }
    gate.open(true);
    drop(tx);

    // Collect samples in the order the clients finish (as nats-bench's channels do).
    let mut pubs = Vec::new();
    let mut subs = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for ev in early.into_iter().chain(rx.iter()) {
        match ev {
            Event::PubDone(_, Ok(s)) => pubs.push(s),
            Event::PubDone(i, Err(e)) => {
                failures.push(format!("publisher {}: {e}", i + 1));
                clients.abort();
            }
            Event::SubDone(_, Ok(s)) => subs.push(s),
            Event::SubDone(i, Err((prog, e))) => failures.push(format!(
                "subscriber {}: received {} of {} messages: {e}",
                i + 1,
                comma_format(prog.received as i64),
                comma_format(n as i64)
            )),
            Event::SubReady(..) => {}
        }
    }
    let panicked = clients.join();
    if panicked > 0 {
        failures.push(format!("{panicked} client thread(s) panicked"));
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("{f}");
        }
        return Err(format!(
            "benchmark incomplete: {} of {} clients failed",
            failures.len(),
            args.np + args.ns
        ));
    }

    let bm = Benchmark::new("NATS", run_id(), pubs, subs);
    let report = bm.report();
    // Go prints its "Nothing to report." without a newline; end the line here.
    if report.ends_with('\n') {
        print!("{report}");
    } else {
        println!("{report}");
    }
    if let Some(path) = &args.csv {
        write_file(path, &bm.csv())?;
        println!("Saved metric data in csv file {}", path.display());
    }
    if let Some(path) = &args.json {
        let summary = JsonSummary {
            mode: "pubsub",
            server: server.url(),
            sub_server: sub_server.unwrap_or(server).url(),
            subject,
            msgs: n,
            size: ms,
            pubs: args.np,
            subs: args.ns,
            aggregate_msgs_per_sec: bm.agg.map_or(0.0, |a| a.rate_f64()),
            pub_msgs_per_sec: bm.pubs.agg.map(|a| a.rate_f64()),
            sub_msgs_per_sec: bm.subs.agg.map(|a| a.rate_f64()),
            pub_samples: bm.pubs.samples.iter().map(JsonSample::of).collect(),
            sub_samples: bm.subs.samples.iter().map(JsonSample::of).collect(),
            requests_per_sec: None,
            latency_us: None,
            js: None,
            consumer: None,
            kv: None,
        };
        write_json(path, &summary)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        let argv = std::iter::once("bench")
            .chain(args.iter().copied())
            .map(OsString::from);
        Args::try_parse_from(go_style_args(argv)).unwrap()
    }

    #[test]
    fn go_flag_spellings() {
        for argv in [
            &["-np", "5", "-ns=3", "--ms", "16", "-n", "1000", "foo"][..],
            &["--np=5", "--ns", "3", "-ms=16", "-n=1000", "foo"][..],
            &["-np=5", "-ns", "3", "-ms", "16", "--n", "1000", "foo"][..],
        ] {
            let a = parse(argv);
            assert_eq!((a.np, a.ns, a.ms, a.n), (5, 3, 16, 1000), "{argv:?}");
            assert_eq!(a.subject.as_deref(), Some("foo"));
        }
        let a = parse(&["-s", "h:1", "-csv", "x.csv", "-reqrep=true", "-warmup", "9"]);
        assert_eq!(a.server, "h:1");
        assert_eq!(a.csv, Some(PathBuf::from("x.csv")));
        assert!(a.reqrep);
        assert_eq!(a.warmup, 9);
        let a = parse(&["--s=h:2", "-json", "x.json", "foo"]);
        assert_eq!(a.server, "h:2");
        assert_eq!(a.json, Some(PathBuf::from("x.json")));
        let a = parse(&["foo"]);
        assert_eq!((a.np, a.ns, a.n, a.ms), (1, 0, 100_000, 128));
        assert_eq!(a.server, DEFAULT_URL);
        assert_eq!(a.sub_url, None);
        assert!(!a.reqrep);
        assert!(!a.js);
        let a = parse(&[
            "-js",
            "-storage",
            "memory",
            "-maxacks=50",
            "-ms",
            "16",
            "foo",
        ]);
        assert!(a.js && !a.sync);
        assert_eq!(
            (a.storage.as_str(), a.stream.as_str()),
            ("memory", "benchstream")
        );
        let pace = js_pace(&a).unwrap();
        assert_eq!((pace.max_pending, pace.batch), (50, false));
        let a = parse(&["--js=true", "--sync", "--stream", "s", "foo"]);
        assert_eq!((a.js, a.sync, a.storage.as_str()), (true, true, "file"));
        assert_eq!(js_pace(&a).unwrap().max_pending, 1);
        let a = parse(&["--js", "-pubbatch", "100", "foo"]);
        let pace = js_pace(&a).unwrap();
        assert_eq!((pace.max_pending, pace.batch), (100, true));
        assert!(js_pace(&parse(&["--js", "--sync", "--pubbatch", "5", "foo"])).is_err());
        assert!(js_pace(&parse(&["--js", "--maxacks", "0", "foo"])).is_err());
        let a = parse(&[
            "-pull",
            "-fetch",
            "50",
            "-ackpolicy",
            "all",
            "-ns",
            "4",
            "foo",
        ]);
        assert!(a.pull && !a.push);
        assert_eq!((a.fetch, a.ackpolicy.as_str(), a.ns), (50, "all", 4));
        assert_eq!((a.acksample, a.maxackpending), (100, 10_000));
        let a = parse(&["--push=true", "-acksample=1", "foo"]);
        assert!(a.push && a.acksample == 1);
        let a = parse(&["-kv", "get", "-keys", "10", "-sync"]);
        assert_eq!((a.kv.as_deref(), a.keys, a.sync), (Some("get"), 10, true));
        for argv in [
            &["-s", "h:1", "--sub-url", "h:2", "foo"][..],
            &["-s", "h:1", "-sub-url=h:2", "foo"][..],
        ] {
            let a = parse(argv);
            assert_eq!(
                (a.server.as_str(), a.sub_url.as_deref()),
                ("h:1", Some("h:2"))
            );
        }
    }
}
