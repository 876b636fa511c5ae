//! The comparison runner: beaver against nats-server (and any other server you name), side
//! by side, on the same machine, in one run.
//!
//! For every round, every scenario and every server (their order alternating between
//! rounds), it starts a fresh server process on a loopback port, runs the scenario with
//! `examples/bench` (nats-bench's flags and report), and reads from the operating system
//! the server's CPU time (user + system) and its peak resident memory (`VmHWM`). It then
//! writes every measurement and the per-scenario medians and bests to
//! `docs/benchmarks/results.json`, and the summary table (with ratios against nats-server
//! and the targets of the benchmark issue marked met or missed) into `docs/benchmarks.md`,
//! between the markers `<!-- results:begin -->` and `<!-- results:end -->`.
//!
//! ```text
//! cargo build --release --bin beaver --example bench
//! cargo build --release -p beaver-async        # optional: measured too when built
//! cargo run --release --example compare -- --rounds 3
//! cargo run --release --example compare -- --rounds 1 --scenarios 1:1-16B,reqrep-16B
//! cargo run --release --example compare -- --rounds 1 --scenarios route-1:1-16B --no-write
//! cargo run --release --example compare -- --server 'other=/path/to/server -p {port}'
//! cargo run --release --example compare -- --rounds 5 --scenarios js-file-async-16B,js-mem-sync-16B
//! ```
//!
//! The `route-*` scenarios start two nodes of each server instead of one, clustered on
//! loopback (`--cluster nats://127.0.0.1:PORT --cluster_name bench`, and `--routes` to the
//! first on the second, appended to the server's command line), wait until a message
//! published on the first reaches a subscriber on the second, and run bench with its
//! publishers on the first node and its subscribers on the second (`--sub-url`). Their CPU
//! time and peak resident memory are the sums over both nodes.
//!
//! The `leaf-*` scenarios start a hub and a leaf of each server instead (`-c` with a file
//! holding a `leafnodes` block, appended: the hub listens, the leaf dials it) and run bench
//! with its publishers on the hub and its subscribers on the leaf.
//!
//! The `js-*` scenarios measure JetStream publishing: each server runs with `-js -sd <a
//! fresh directory>` (appended to its command line), `examples/bench --js` (re)creates a
//! stream on the subject and publishes with PubAcks (`--sync`, or a window of 1000
//! unacknowledged), and then, on another fresh server, `examples/js_bench.go` (nats.go's
//! `PublishAsync` / `Publish`) does the same, as a second client. Per run it records the
//! rate, the server's CPU time and peak RSS, the client's CPU time (`getrusage` of the
//! children), and the bytes under the store directory once the run is over. These go to
//! `docs/benchmarks/js-results.json` and to their own table in `docs/benchmarks.md`, between
//! `<!-- js-results:begin -->` and `<!-- js-results:end -->`; the Go client is built once
//! into `target/js_bench` with Debian's Go and nats.go (GOPATH mode, nothing downloaded).
//!
//! The `js-pull-*`, `js-push-*` and `kv-*` scenarios measure JetStream consumers and
//! key-value, run the same way (a fresh server with `-js -sd <fresh dir>` per client run):
//! `examples/bench --pull|--push` fills a file stream and consumes it through one durable
//! consumer with explicit acks (ack latency from a timed double ack every 100th), `--kv
//! put|get --sync` measures KV puts and direct gets; then `examples/js_consume.go` (nats.go's
//! `Fetch`/`Ack`, `QueueSubscribe`/`Ack`, `kv.Put`/`kv.Get`, built into `target/js_consume`)
//! does the same. Rates, latency percentiles and peak RSS go to
//! `docs/benchmarks/consume-results.json` and to their own table in `docs/benchmarks.md`,
//! between `<!-- consume-results:begin -->` and `<!-- consume-results:end -->`.
//!
//! Linux only (it reads `/proc`). Servers listen on 127.0.0.1 only.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One benchmark scenario: bench flags, and how many messages the servers deliver.
struct Scenario {
    name: &'static str,
    args: &'static [&'static str],
    /// Messages delivered to subscribers (or received, for publish-only).
    deliveries: u64,
    fan_out: bool,
    /// Servers per measurement: one, or a pair (publishers on the first, subscribers on the
    /// second) joined by a route or a leafnode connection.
    nodes: Topology,
    /// A JetStream scenario: the server runs with `-js -sd <fresh dir>`, bench with `--js`,
    /// and `examples/js_bench.go` (nats.go) runs it too, with `go_args`, on another fresh
    /// server. Its results go to their own table and file.
    js: bool,
    go_args: &'static [&'static str],
    /// A JetStream consumer or key-value scenario (`--pull`, `--push`, `--kv`; nats.go's side is
    /// `examples/js_consume.go`): run like `js`, its rate and latency go to their own table.
    consume: bool,
}

/// How the servers of a measurement are set up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Topology {
    /// One server.
    Single,
    /// Two nodes of a cluster, joined by a route.
    Route,
    /// A hub and a leaf: the second server dials the first's leafnode port.
    Leaf,
}

impl Topology {
    /// Servers started.
    fn count(self) -> usize {
        match self {
            Topology::Single => 1,
            Topology::Route | Topology::Leaf => 2,
        }
    }
}

/// A JetStream publish scenario: name, storage, sync, messages, size (as bench spells them).
macro_rules! js_scenario {
    ($name:expr, $storage:expr, $sync:expr, $n:expr, $ms:expr) => {
        Scenario {
            name: $name,
            args: if $sync {
                &[
                    "--js",
                    "--storage",
                    $storage,
                    "--sync",
                    "-n",
                    $n,
                    "-ms",
                    $ms,
                ]
            } else {
                &[
                    "--js",
                    "--storage",
                    $storage,
                    "--maxacks",
                    JS_MAX_ACKS,
                    "-n",
                    $n,
                    "-ms",
                    $ms,
                ]
            },
            deliveries: 0,
            fan_out: false,
            nodes: Topology::Single,
            js: true,
            consume: false,
            go_args: if $sync {
                &["-storage", $storage, "-sync", "-n", $n, "-ms", $ms]
            } else {
                &[
                    "-storage",
                    $storage,
                    "-maxacks",
                    JS_MAX_ACKS,
                    "-n",
                    $n,
                    "-ms",
                    $ms,
                ]
            },
        }
    };
}

/// A JetStream consumer scenario: name, pull or push, messages, size, subscribers.
macro_rules! consume_scenario {
    ($name:expr, $mode:expr, $n:expr, $ms:expr, $ns:expr) => {
        Scenario {
            name: $name,
            args: &[concat!("--", $mode), "-n", $n, "-ms", $ms, "-ns", $ns],
            deliveries: 0,
            fan_out: false,
            nodes: Topology::Single,
            js: true,
            consume: true,
            go_args: &["-mode", $mode, "-n", $n, "-ms", $ms, "-ns", $ns],
        }
    };
}

/// A key-value scenario: name, put or get, requests, size; one client, synchronous (as
/// nats.go's `kv.Put` and `kv.Get`), 1,000 keys.
macro_rules! kv_scenario {
    ($name:expr, $op:expr, $n:expr, $ms:expr) => {
        Scenario {
            name: $name,
            args: &["--kv", $op, "--sync", "-n", $n, "-ms", $ms],
            deliveries: 0,
            fan_out: false,
            nodes: Topology::Single,
            js: true,
            consume: true,
            go_args: &["-mode", concat!("kv", $op), "-n", $n, "-ms", $ms],
        }
    };
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "pub-16B",
        args: &["-np", "1", "-ns", "0", "-n", "5000000", "-ms", "16"],
        deliveries: 5_000_000,
        fan_out: false,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "1:1-16B",
        args: &["-np", "1", "-ns", "1", "-n", "3000000", "-ms", "16"],
        deliveries: 3_000_000,
        fan_out: false,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "1:5-16B",
        args: &["-np", "1", "-ns", "5", "-n", "1000000", "-ms", "16"],
        deliveries: 5_000_000,
        fan_out: true,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "5:5-16B",
        args: &["-np", "5", "-ns", "5", "-n", "1000000", "-ms", "16"],
        deliveries: 5_000_000,
        fan_out: false,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "10:100-1000B",
        args: &["-np", "10", "-ns", "100", "-n", "100000", "-ms", "1000"],
        deliveries: 10_000_000,
        fan_out: true,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "10:1000-1000B",
        args: &["-np", "10", "-ns", "1000", "-n", "20000", "-ms", "1000"],
        deliveries: 20_000_000,
        fan_out: true,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "1:1-64KiB",
        args: &["-np", "1", "-ns", "1", "-n", "20000", "-ms", "65536"],
        deliveries: 20_000,
        fan_out: false,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "reqrep-16B",
        args: &["--reqrep", "-n", "20000", "-ms", "16"],
        deliveries: 40_000,
        fan_out: false,
        nodes: Topology::Single,
        js: false,
        go_args: &[],
        consume: false,
    },
    // Two nodes of the same server clustered over a route: publishers on node A,
    // subscribers on node B (bench's --sub-url), so every message crosses the route once.
    Scenario {
        name: "route-1:1-16B",
        args: &["-np", "1", "-ns", "1", "-n", "3000000", "-ms", "16"],
        deliveries: 3_000_000,
        fan_out: false,
        nodes: Topology::Route,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "route-1:5-1000B",
        args: &["-np", "1", "-ns", "5", "-n", "500000", "-ms", "1000"],
        deliveries: 2_500_000,
        fan_out: true,
        nodes: Topology::Route,
        js: false,
        go_args: &[],
        consume: false,
    },
    // A hub and a leaf of the same server: publishers on the hub, subscribers on the leaf,
    // so every message crosses the leafnode connection once (as LMSG).
    Scenario {
        name: "leaf-1:1-16B",
        args: &["-np", "1", "-ns", "1", "-n", "3000000", "-ms", "16"],
        deliveries: 3_000_000,
        fan_out: false,
        nodes: Topology::Leaf,
        js: false,
        go_args: &[],
        consume: false,
    },
    Scenario {
        name: "leaf-1:5-1000B",
        args: &["-np", "1", "-ns", "5", "-n", "500000", "-ms", "1000"],
        deliveries: 2_500_000,
        fan_out: true,
        nodes: Topology::Leaf,
        js: false,
        go_args: &[],
        consume: false,
    },
    // JetStream publishing: a stream on the subject, every message acknowledged. Async:
    // a sliding window of 1000 unacknowledged publishes (bench --maxacks, nats.go's
    // PublishAsyncMaxPending); sync: one publish, its ack, the next.
    js_scenario!("js-file-async-16B", "file", false, "500000", "16"),
    js_scenario!("js-file-async-1KiB", "file", false, "200000", "1024"),
    js_scenario!("js-mem-async-16B", "memory", false, "500000", "16"),
    js_scenario!("js-mem-async-1KiB", "memory", false, "200000", "1024"),
    js_scenario!("js-file-sync-16B", "file", true, "20000", "16"),
    js_scenario!("js-file-sync-1KiB", "file", true, "20000", "1024"),
    js_scenario!("js-mem-sync-16B", "memory", true, "20000", "16"),
    js_scenario!("js-mem-sync-1KiB", "memory", true, "20000", "1024"),
    // JetStream consumers: the stream (file) is filled first, then consumed by -ns
    // subscribers through one durable consumer, explicit acks, every 100th a timed double ack.
    consume_scenario!("js-pull-16B", "pull", "100000", "16", "1"),
    consume_scenario!("js-pull-16B-4c", "pull", "100000", "16", "4"),
    consume_scenario!("js-pull-1KiB", "pull", "100000", "1024", "1"),
    consume_scenario!("js-pull-1KiB-4c", "pull", "100000", "1024", "4"),
    consume_scenario!("js-push-16B", "push", "100000", "16", "1"),
    consume_scenario!("js-push-16B-4c", "push", "100000", "16", "4"),
    consume_scenario!("js-push-1KiB", "push", "100000", "1024", "1"),
    consume_scenario!("js-push-1KiB-4c", "push", "100000", "1024", "4"),
    kv_scenario!("kv-put-16B", "put", "20000", "16"),
    kv_scenario!("kv-get-16B", "get", "20000", "16"),
];

/// The window of unacknowledged publishes of the asynchronous JetStream scenarios.
const JS_MAX_ACKS: &str = "1000";

/// The cluster name of the two-node scenarios.
const CLUSTER: &str = "bench";

/// A server under test: a name and a command line with `{port}` for the client port.
#[derive(Clone)]
struct ServerSpec {
    name: String,
    command: Vec<String>,
}

struct Options {
    rounds: usize,
    /// The core scenarios selected (their table and results.json).
    scenarios: Vec<&'static Scenario>,
    /// The JetStream scenarios selected (their own table and js-results.json).
    js_scenarios: Vec<&'static Scenario>,
    /// The nats.go JetStream publisher (`examples/js_bench.go`, built), if there is Go.
    go_bench: Option<PathBuf>,
    /// The consumer and key-value scenarios selected (their table, consume-results.json).
    consume_scenarios: Vec<&'static Scenario>,
    /// The nats.go consumer and KV client (`examples/js_consume.go`, built), if there is Go.
    go_consume: Option<PathBuf>,
    servers: Vec<ServerSpec>,
    out_dir: PathBuf,
    doc: PathBuf,
    bench: PathBuf,
    /// Print the table only: leave results.json and docs/benchmarks.md as they are.
    write: bool,
    /// The core scenarios' load generator: `examples/bench`, or with `--client go` Go's
    /// nats.go (`examples/nats_bench.go`, built), which takes the same flags.
    go_client: Option<PathBuf>,
}

fn die(msg: &str) -> ! {
    eprintln!("compare: {msg}");
    std::process::exit(1)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn parse_options() -> Options {
    let root = root();
    let mut rounds = 3;
    let mut names: Option<Vec<String>> = None;
    let mut extra: Vec<ServerSpec> = Vec::new();
    let mut write = true;
    let mut go_bench: Option<Option<PathBuf>> = None;
    let mut client_go = false;
    let mut nats = which("nats-server")
        .or_else(|| Some(PathBuf::from("/usr/sbin/nats-server")).filter(|p| p.exists()));
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| die(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--rounds" => {
                rounds = value()
                    .parse()
                    .unwrap_or_else(|_| die("--rounds: a number"))
            }
            "--scenarios" => names = Some(value().split(',').map(str::to_owned).collect()),
            "--nats-server" => nats = Some(PathBuf::from(value())),
            "--no-nats-server" => nats = None,
            "--no-write" => write = false,
            "--go-bench" => go_bench = Some(Some(PathBuf::from(value()))),
            "--no-go" => go_bench = Some(None),
            "--client" => match value().as_str() {
                "bench" => client_go = false,
                "go" => client_go = true,
                other => die(&format!("--client bench|go, not {other}")),
            },
            "--server" => {
                let v = value();
                let (name, cmd) = v
                    .split_once('=')
                    .unwrap_or_else(|| die("--server NAME=COMMAND (with {port})"));
                extra.push(ServerSpec {
                    name: name.into(),
                    command: cmd.split_whitespace().map(str::to_owned).collect(),
                });
            }
            "-h" | "--help" => {
                println!(
                    "usage: compare [--rounds N] [--scenarios a,b] [--nats-server PATH | \
                     --no-nats-server] [--server NAME=COMMAND-with-{{port}}]... [--no-write] \
                     [--go-bench PATH | --no-go] [--client bench|go]\n\
                     --no-write: print the tables, leave results.json, js-results.json and \
                     benchmarks.md alone\n\
                     --go-bench: the built examples/js_bench.go (default: built into \
                     target/js_bench with Debian's Go and nats.go); --no-go: bench only\n\
                     --client go: the single-server core scenarios with Go's nats.go \
                     (examples/nats_bench.go, built into target/nats_bench) instead of \
                     bench; prints the table only (implies --no-write)\n\
                     scenarios: {}\n\
                     route-* scenarios start two nodes of each server, clustered with \
                     --cluster, --cluster_name and --routes (appended to the command line); \
                     leaf-* scenarios start a hub and a leaf of each server (-c with a \
                     leafnodes block, appended); \
                     js-* scenarios run each server with -js -sd <fresh dir> (appended)",
                    SCENARIOS
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other} (see --help)")),
        }
    }
    let scenarios: Vec<&Scenario> = match names {
        None => SCENARIOS.iter().collect(),
        Some(names) => names
            .iter()
            .map(|n| {
                SCENARIOS
                    .iter()
                    .find(|s| s.name == n)
                    .unwrap_or_else(|| die(&format!("unknown scenario {n}")))
            })
            .collect(),
    };
    let (js_scenarios, scenarios): (Vec<&Scenario>, Vec<&Scenario>) =
        scenarios.into_iter().partition(|s| s.js);
    let (consume_scenarios, js_scenarios): (Vec<&Scenario>, Vec<&Scenario>) =
        js_scenarios.into_iter().partition(|s| s.consume);
    let go_consume = match &go_bench {
        _ if consume_scenarios.is_empty() => None,
        Some(None) => None,
        _ => build_go(&root, "js_consume"),
    };
    let go_bench = match go_bench {
        _ if js_scenarios.is_empty() => None,
        Some(choice) => choice,
        None => build_go_bench(&root),
    };
    let go_client = if client_go {
        let built = build_go(&root, "nats_bench")
            .unwrap_or_else(|| die("--client go: cannot build examples/nats_bench.go"));
        write = false;
        Some(built)
    } else {
        None
    };
    let scenarios = match go_client {
        // nats_bench.go has no --sub-url: one server only.
        Some(_) => scenarios
            .into_iter()
            .filter(|s| matches!(s.nodes, Topology::Single))
            .collect(),
        None => scenarios,
    };
    let beaver = root.join("target/release/beaver");
    let bench = root.join("target/release/examples/bench");
    for p in [&beaver, &bench] {
        if !p.exists() {
            die(&format!(
                "{} is missing: run `cargo build --release --bin beaver --example bench` first",
                p.display()
            ));
        }
    }
    let mut servers = vec![ServerSpec {
        name: "beaver".into(),
        command: vec![
            beaver.display().to_string(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            "{port}".into(),
        ],
    }];
    // beaver-async (the same server with its clients as tokio tasks), when built:
    // `cargo build --release -p beaver-async`.
    let beaver_async = root.join("target/release/beaver-async");
    if beaver_async.exists() {
        servers.push(ServerSpec {
            name: "beaver-async".into(),
            command: vec![
                beaver_async.display().to_string(),
                "-a".into(),
                "127.0.0.1".into(),
                "-p".into(),
                "{port}".into(),
            ],
        });
    } else {
        eprintln!(
            "compare: no target/release/beaver-async (cargo build --release -p beaver-async); \
             measuring without it"
        );
    }
    match nats {
        Some(p) => servers.push(ServerSpec {
            name: "nats-server".into(),
            command: vec![
                p.display().to_string(),
                "-a".into(),
                "127.0.0.1".into(),
                "-p".into(),
                "{port}".into(),
            ],
        }),
        None => eprintln!("compare: nats-server not found; measuring without the reference"),
    }
    servers.extend(extra);
    Options {
        rounds: rounds.max(1),
        scenarios,
        js_scenarios,
        go_bench,
        consume_scenarios,
        go_consume,
        servers,
        out_dir: root.join("docs/benchmarks"),
        doc: root.join("docs/benchmarks.md"),
        bench,
        write,
        go_client,
    }
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(cmd))
            .find(|p| p.is_file())
    })
}

/// A free loopback port (bound then released; the server binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| die(&format!("no free port: {e}")))
}

struct Running {
    child: Child,
    port: u16,
}

/// Starts a server and waits until it accepts connections.
fn start(spec: &ServerSpec) -> Running {
    start_with(spec, &[], Vec::new())
}

/// Starts a server with `extra` arguments after its command line, and waits until it
/// accepts connections. `reserved` holds ports `extra` names: they stay bound (so the
/// client port picked is another one) until just before the server starts.
fn start_with(
    spec: &ServerSpec,
    extra: &[String],
    reserved: Vec<std::net::TcpListener>,
) -> Running {
    let port = free_port();
    drop(reserved);
    let args: Vec<String> = spec
        .command
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .chain(extra.iter().cloned())
        .collect();
    let child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot start {}: {e}", spec.name)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            die(&format!("{} did not start listening on {port}", spec.name));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let it settle (nats-server logs its start-up after listening).
    std::thread::sleep(Duration::from_millis(200));
    Running { child, port }
}

/// Starts two nodes of `spec` clustered on loopback (B dials A with the flags beaver and
/// nats-server share: `--cluster`, `--cluster_name`, `--routes`) and waits until a message
/// published on A reaches a subscriber on B.
fn start_pair(spec: &ServerSpec) -> [Running; 2] {
    let reserve = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| Ok((l.local_addr()?.port(), l)))
            .unwrap_or_else(|e| die(&format!("no free port: {e}")))
    };
    let ((route_a, hold_a), (route_b, hold_b)) = (reserve(), reserve());
    let cluster = |port: u16| {
        vec![
            "--cluster".to_string(),
            format!("nats://127.0.0.1:{port}"),
            "--cluster_name".to_string(),
            CLUSTER.to_string(),
        ]
    };
    let a = start_with(spec, &cluster(route_a), vec![hold_a]);
    let mut b_args = cluster(route_b);
    b_args.extend([
        "--routes".to_string(),
        format!("nats://127.0.0.1:{route_a}"),
    ]);
    let mut b = start_with(spec, &b_args, vec![hold_b]);
    if let Err(e) = wait_for_route(a.port, b.port) {
        let mut a = a;
        for r in [&mut a, &mut b] {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        die(&format!(
            "{}: the two nodes did not cluster: {e}",
            spec.name
        ));
    }
    [a, b]
}

/// Starts a hub and a leaf of `spec` on loopback, each with `-c` and a configuration file
/// holding its `leafnodes` block (the hub listens, the leaf dials it), and waits until a
/// message published on the hub reaches a subscriber on the leaf.
fn start_leaf_pair(spec: &ServerSpec) -> [Running; 2] {
    let (leaf_port, hold) = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| Ok((l.local_addr()?.port(), l)))
        .unwrap_or_else(|e| die(&format!("no free port: {e}")));
    let dir = std::env::temp_dir().join(format!("compare-leaf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    let conf = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
        vec!["-c".to_string(), path.display().to_string()]
    };
    let hub_args = conf(
        "hub.conf",
        format!("leafnodes {{ listen: \"127.0.0.1:{leaf_port}\" }}\n"),
    );
    let leaf_args = conf(
        "leaf.conf",
        format!("leafnodes {{ remotes [ {{ url: \"nats-leaf://127.0.0.1:{leaf_port}\" }} ] }}\n"),
    );
    let hub = start_with(spec, &hub_args, vec![hold]);
    let mut leaf = start_with(spec, &leaf_args, Vec::new());
    if let Err(e) = wait_for_route(hub.port, leaf.port) {
        let mut hub = hub;
        for r in [&mut hub, &mut leaf] {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        die(&format!(
            "{}: the leaf did not connect to the hub: {e}",
            spec.name
        ));
    }
    [hub, leaf]
}

/// A raw client: reads `INFO`, sends `CONNECT`.
fn raw_client(port: u16) -> std::io::Result<std::net::TcpStream> {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    read_until(&mut c, b"\r\n")?;
    std::io::Write::write_all(&mut c, b"CONNECT {\"verbose\":false}\r\n")?;
    Ok(c)
}

/// Reads until the bytes read contain `end` (fine for the short exchanges here, one request
/// outstanding at a time).
fn read_until(c: &mut std::net::TcpStream, end: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut got: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(end.len()).any(|w| w == end) {
        match std::io::Read::read(c, &mut buf)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    Ok(got)
}

/// Publishes on A every 50 ms until a subscriber on B gets it (the route is up and A has
/// B's interest), for at most 10 s.
fn wait_for_route(a: u16, b: u16) -> std::io::Result<()> {
    use std::io::{Read, Write};
    let mut sub = raw_client(b)?;
    sub.write_all(b"SUB _compare.route 1\r\nPING\r\n")?;
    read_until(&mut sub, b"PONG\r\n")?;
    sub.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut publ = raw_client(a)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        publ.write_all(b"PUB _compare.route 1\r\nx\r\nPING\r\n")?;
        read_until(&mut publ, b"PONG\r\n")?;
        match sub.read(&mut buf) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
        if got.windows(4).any(|w| w == b"MSG ") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no message from A reached B in 10 s",
            ));
        }
    }
}

/// CPU seconds (user + system) the process has used, from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the file, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / clock_ticks()
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Peak resident memory in KiB, from /proc/PID/status.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Runs one scenario against one server (or a pair of clustered nodes of it); returns the
/// measurement. With two nodes, CPU and peak RSS are the sums over both.
fn measure(opts: &Options, spec: &ServerSpec, sc: &Scenario) -> Value {
    let mut servers: Vec<Running> = match sc.nodes {
        Topology::Route => start_pair(spec).into(),
        Topology::Leaf => start_leaf_pair(spec).into(),
        Topology::Single => vec![start(spec)],
    };
    let pids: Vec<u32> = servers.iter().map(|s| s.child.id()).collect();
    let cpu_before: f64 = pids.iter().map(|&p| cpu_seconds(p)).sum();
    let json_path =
        std::env::temp_dir().join(format!("compare-{}-{}.json", std::process::id(), pids[0]));
    let mut cmd = Command::new(opts.go_client.as_ref().unwrap_or(&opts.bench));
    cmd.args(["-s", &format!("nats://127.0.0.1:{}", servers[0].port)]);
    if let Some(b) = servers.get(1) {
        cmd.args(["--sub-url", &format!("nats://127.0.0.1:{}", b.port)]);
    }
    if opts.go_client.is_some() {
        // Go's flag package: the same flags, single dash.
        cmd.args(sc.args.iter().map(|a| match a.strip_prefix("--") {
            Some(flag) => format!("-{flag}"),
            None => (*a).to_owned(),
        }));
        cmd.args(["-json", &json_path.display().to_string(), "bench"]);
    } else {
        cmd.args(sc.args)
            .args(["--json", &json_path.display().to_string()]);
        if !sc.args.contains(&"--reqrep") {
            cmd.arg("bench");
        }
    }
    let started = Instant::now();
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| die(&format!("cannot run bench: {e}")));
    let wall = started.elapsed().as_secs_f64();
    let cpu = pids.iter().map(|&p| cpu_seconds(p)).sum::<f64>() - cpu_before;
    let rss_nodes: Vec<u64> = pids.iter().map(|&p| peak_rss_kib(p)).collect();
    let rss: u64 = rss_nodes.iter().sum();
    for server in &mut servers {
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        eprintln!(
            "  {} {}: bench failed: {}{}",
            spec.name,
            sc.name,
            report,
            String::from_utf8_lossy(&out.stderr)
        );
        return json!({"server": spec.name, "scenario": sc.name, "ok": false});
    }
    let bench: Value = std::fs::read_to_string(&json_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let _ = std::fs::remove_file(&json_path);
    // nats_bench.go's figure is nats-bench's "Pub/Sub stats" (publishes and deliveries per
    // second), bench's its own aggregate; each is compared with the same client's only.
    let rate = bench["aggregate_msgs_per_sec"]
        .as_f64()
        .or_else(|| bench["msgs_per_sec"].as_f64())
        .unwrap_or(0.0);
    json!({
        "server": spec.name,
        "scenario": sc.name,
        "ok": true,
        "nodes": sc.nodes.count(),
        "msgs_per_sec": rate,
        "cpu_seconds": cpu,
        "cpu_ns_per_delivery": cpu * 1e9 / sc.deliveries as f64,
        "peak_rss_kib": rss,
        "peak_rss_kib_per_node": rss_nodes,
        "wall_seconds": wall,
        "latency_us": bench["latency_us"].clone(),
        "report": report,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn machine() -> Value {
    let sh = |c: &str| {
        Command::new("sh")
            .args(["-c", c])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    json!({
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'"),
        "cpus": sh("nproc"),
        "memory": sh("grep MemTotal /proc/meminfo | awk '{print $2 \" kB\"}'"),
        "kernel": sh("uname -sr"),
        "rustc": sh("rustc --version"),
        "nats_server": sh("nats-server --version 2>/dev/null || /usr/sbin/nats-server --version"),
        "date": sh("date -u '+%Y-%m-%d %H:%M UTC'"),
    })
}

fn main() {
    let opts = parse_options();
    let mut runs: Vec<Value> = Vec::new();
    let mut js_runs: Vec<Value> = Vec::new();
    let mut consume_runs: Vec<Value> = Vec::new();
    for round in 0..opts.rounds {
        for sc in &opts.consume_scenarios {
            let mut order: Vec<&ServerSpec> = opts.servers.iter().collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for spec in order {
                let mut m = measure_js(&opts, spec, sc);
                m["round"] = json!(round + 1);
                consume_runs.push(m);
            }
        }
        for sc in &opts.js_scenarios {
            let mut order: Vec<&ServerSpec> = opts.servers.iter().collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for spec in order {
                let mut m = measure_js(&opts, spec, sc);
                m["round"] = json!(round + 1);
                js_runs.push(m);
            }
        }
        for sc in &opts.scenarios {
            // Alternate which server goes first, round by round.
            let mut order: Vec<&ServerSpec> = opts.servers.iter().collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for spec in order {
                let m = measure(&opts, spec, sc);
                eprintln!(
                    "round {} {:>14} {:>12}: {:>12.0} msgs/s  cpu {:>6.2}s  rss {:>7} KiB",
                    round + 1,
                    sc.name,
                    spec.name,
                    m["msgs_per_sec"].as_f64().unwrap_or(0.0),
                    m["cpu_seconds"].as_f64().unwrap_or(0.0),
                    m["peak_rss_kib"].as_u64().unwrap_or(0)
                );
                let mut m = m;
                m["round"] = json!(round + 1);
                runs.push(m);
            }
        }
    }
    if !opts.js_scenarios.is_empty() {
        write_js_results(&opts, js_runs);
    }
    if !opts.consume_scenarios.is_empty() {
        write_consume_results(&opts, consume_runs);
    }
    if opts.scenarios.is_empty() {
        return;
    }
    // Summaries: median and best per (scenario, server).
    let mut summary: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for sc in &opts.scenarios {
        for spec in &opts.servers {
            let ok: Vec<&Value> = runs
                .iter()
                .filter(|r| {
                    r["scenario"] == sc.name && r["server"] == spec.name.as_str() && r["ok"] == true
                })
                .collect();
            let f = |key: &str| {
                ok.iter()
                    .filter_map(|r| r[key].as_f64())
                    .collect::<Vec<f64>>()
            };
            let lat = |p: &str| {
                ok.iter()
                    .filter_map(|r| r["latency_us"][p].as_f64())
                    .collect::<Vec<f64>>()
            };
            let rates = f("msgs_per_sec");
            summary.entry(sc.name.into()).or_default().insert(
                spec.name.clone(),
                json!({
                    "rounds_ok": ok.len(),
                    "median_msgs_per_sec": median(rates.clone()),
                    "best_msgs_per_sec": rates.iter().cloned().fold(f64::NAN, f64::max),
                    "median_cpu_ns_per_delivery": median(f("cpu_ns_per_delivery")),
                    "max_peak_rss_kib": ok.iter().filter_map(|r| r["peak_rss_kib"].as_u64()).max(),
                    "median_p50_us": median(lat("p50")),
                    "median_p99_us": median(lat("p99")),
                }),
            );
        }
    }
    // Idle cost per connection: 1,000 connections that subscribed and then do nothing.
    let idle: Vec<Value> = opts.servers.iter().map(idle_cost).collect();
    let results = json!({
        "machine": machine(),
        "idle_connections": idle,
        "rounds": opts.rounds,
        "commands": {
            "build": "cargo build --release --bin beaver --example bench",
            "run": format!("cargo run --release --example compare -- --rounds {}", opts.rounds),
        },
        "scenarios": opts.scenarios.iter().map(|s| json!({"name": s.name, "bench_args": s.args, "deliveries": s.deliveries, "nodes": s.nodes.count()})).collect::<Vec<_>>(),
        "servers": opts.servers.iter().map(|s| json!({"name": s.name, "command": s.command.join(" ")})).collect::<Vec<_>>(),
        "summary": summary,
        "runs": runs,
    });
    let table = render(&opts, &results);
    println!("{table}");
    if !opts.write {
        eprintln!("--no-write: results.json and the table in the doc left as they were");
        return;
    }
    std::fs::create_dir_all(&opts.out_dir).unwrap_or_else(|e| die(&format!("{e}")));
    let path = opts.out_dir.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&results).expect("json"))
        .unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
    write_into_doc(&opts.doc, &table);
    eprintln!(
        "wrote {} and the table in {}",
        path.display(),
        opts.doc.display()
    );
}

/// Resident memory (KiB) and thread count of a process.
fn rss_and_threads(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"))
}

/// Memory and threads per idle connection: open 1,000 connections that each send CONNECT
/// and one SUB (and get the PONG that confirms it), then compare with the idle server.
fn idle_cost(spec: &ServerSpec) -> Value {
    use std::io::{Read, Write};
    const N: usize = 1000;
    let mut server = start(spec);
    let pid = server.child.id();
    let (rss0, threads0) = rss_and_threads(pid);
    let mut conns = Vec::with_capacity(N);
    for i in 0..N {
        let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", server.port)) else {
            break;
        };
        let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = write!(
            c,
            "CONNECT {{\"verbose\":false}}\r\nSUB idle.{i} 1\r\nPING\r\n"
        );
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"PONG\r\n") {
            match c.read(&mut buf) {
                Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        conns.push(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let (rss1, threads1) = rss_and_threads(pid);
    let n = conns.len().max(1) as f64;
    drop(conns);
    let _ = server.child.kill();
    let _ = server.child.wait();
    let per_conn_kib = (rss1 as f64 - rss0 as f64) / n;
    eprintln!(
        "idle {:>12}: {:.1} KiB and {:.2} threads per connection ({} connections)",
        spec.name,
        per_conn_kib,
        (threads1 as f64 - threads0 as f64) / n,
        n
    );
    json!({
        "server": spec.name,
        "connections": n,
        "rss_kib_before": rss0,
        "rss_kib_after": rss1,
        "kib_per_connection": per_conn_kib,
        "threads_before": threads0,
        "threads_after": threads1,
    })
}

/// Every server side by side (what the two-server table leaves out with `--server`): per
/// scenario, each server's median msgs/s, its ratio to nats-server's, and its peak RSS;
/// request/reply adds the p50/p99 round trip. Names the load generator.
fn every_server_table(opts: &Options, summary: &Value) -> String {
    let client = match &opts.go_client {
        Some(_) => "Go's nats.go (examples/nats_bench.go)",
        None => "examples/bench",
    };
    let mut s =
        format!("\nEvery server, load generator {client}: msgs/s (× nats-server), peak RSS MiB");
    if opts.scenarios.iter().any(|s| s.name == "reqrep-16B") {
        s.push_str("; request/reply adds p50 / p99 µs");
    }
    s.push_str(".\n\n| scenario |");
    for server in &opts.servers {
        s.push_str(&format!(" {} |", server.name));
    }
    s.push_str("\n| --- |");
    for _ in &opts.servers {
        s.push_str(" ---: |");
    }
    s.push('\n');
    for sc in &opts.scenarios {
        let reference = summary[sc.name]["nats-server"]["median_msgs_per_sec"].as_f64();
        s.push_str(&format!("| {} |", sc.name));
        for server in &opts.servers {
            let v = &summary[sc.name][server.name.as_str()];
            let Some(rate) = v["median_msgs_per_sec"].as_f64() else {
                s.push_str(" failed |");
                continue;
            };
            let ratio = reference.map_or(String::new(), |r| format!(" ({:.2}×)", rate / r));
            let mib = v["max_peak_rss_kib"]
                .as_u64()
                .map_or("-".into(), |k| format!("{:.0}", k as f64 / 1024.0));
            let latency = match (v["median_p50_us"].as_f64(), v["median_p99_us"].as_f64()) {
                (Some(p50), Some(p99)) => format!(", {p50:.0} / {p99:.0} µs"),
                _ => String::new(),
            };
            s.push_str(&format!(" {}{ratio}, {mib} MiB{latency} |", group(rate)));
        }
        s.push('\n');
    }
    s
}

/// The markdown summary: one row per scenario, with ratios against nats-server.
fn render(opts: &Options, results: &Value) -> String {
    let m = &results["machine"];
    let mut s = String::new();
    s.push_str(&format!(
        "Measured {} on {} ({} CPUs, {}), {}, {}; {}. {} round(s), servers alternating; \
         medians of the rounds.\n\n",
        m["date"].as_str().unwrap_or(""),
        m["cpu"].as_str().unwrap_or(""),
        m["cpus"].as_str().unwrap_or(""),
        m["memory"].as_str().unwrap_or(""),
        m["kernel"].as_str().unwrap_or(""),
        m["rustc"].as_str().unwrap_or(""),
        m["nats_server"].as_str().unwrap_or("no nats-server"),
        opts.rounds
    ));
    let has_ref = opts.servers.iter().any(|s| s.name == "nats-server");
    s.push_str("| scenario | beaver msgs/s | nats-server msgs/s | ratio | target | CPU ns/delivery (beaver / nats) | peak RSS MiB (beaver / nats) |\n");
    s.push_str("| --- | ---: | ---: | ---: | --- | ---: | ---: |\n");
    let summary = &results["summary"];
    for sc in &opts.scenarios {
        let b = &summary[sc.name]["beaver"];
        let n = &summary[sc.name]["nats-server"];
        let br = b["median_msgs_per_sec"].as_f64().unwrap_or(f64::NAN);
        let nr = n["median_msgs_per_sec"].as_f64().unwrap_or(f64::NAN);
        let ratio = br / nr;
        let need = if sc.fan_out { 1.25 } else { 1.0 };
        let target = if !has_ref {
            "n/a".to_string()
        } else if sc.nodes == Topology::Route {
            "none (cluster)".to_string()
        } else if sc.nodes == Topology::Leaf {
            "none (leafnode)".to_string()
        } else if ratio >= need {
            format!("≥ {need}×: met")
        } else {
            format!("≥ {need}×: **missed**")
        };
        let mib = |v: &Value| {
            v["max_peak_rss_kib"]
                .as_u64()
                .map_or("-".into(), |k| format!("{:.0}", k as f64 / 1024.0))
        };
        s.push_str(&format!(
            "| {} | {} | {} | {:.2}× | {} | {:.0} / {:.0} | {} / {} |\n",
            sc.name,
            group(br),
            group(nr),
            ratio,
            target,
            b["median_cpu_ns_per_delivery"].as_f64().unwrap_or(f64::NAN),
            n["median_cpu_ns_per_delivery"].as_f64().unwrap_or(f64::NAN),
            mib(b),
            mib(n)
        ));
    }
    if opts.servers.len() > 2 || opts.go_client.is_some() {
        s.push_str(&every_server_table(opts, summary));
    }
    if opts.scenarios.iter().any(|s| s.nodes == Topology::Route) {
        s.push_str(
            "\n`route-*`: two clustered nodes of the same server, publishers on one and \
             subscribers on the other; CPU and peak RSS are the sums over both nodes.\n",
        );
    }
    if opts.scenarios.iter().any(|s| s.nodes == Topology::Leaf) {
        s.push_str(
            "\n`leaf-*`: a hub and a leaf of the same server, publishers on the hub and \
             subscribers on the leaf; CPU and peak RSS are the sums over both.\n",
        );
    }
    for idle in results["idle_connections"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "\nIdle cost, {}: {:.1} KiB of resident memory and {:.2} threads per \
             connection ({} idle connections, each subscribed once).",
            idle["server"].as_str().unwrap_or(""),
            idle["kib_per_connection"].as_f64().unwrap_or(f64::NAN),
            (idle["threads_after"].as_f64().unwrap_or(0.0)
                - idle["threads_before"].as_f64().unwrap_or(0.0))
                / idle["connections"].as_f64().unwrap_or(1.0),
            idle["connections"].as_f64().unwrap_or(0.0),
        ));
    }
    s.push('\n');
    if opts.scenarios.iter().any(|s| s.name == "reqrep-16B") {
        let b = &summary["reqrep-16B"]["beaver"];
        let n = &summary["reqrep-16B"]["nats-server"];
        s.push_str(&format!(
            "\nRequest/reply latency (median of rounds): beaver p50 {:.0} µs, p99 {:.0} µs; \
             nats-server p50 {:.0} µs, p99 {:.0} µs.\n",
            b["median_p50_us"].as_f64().unwrap_or(f64::NAN),
            b["median_p99_us"].as_f64().unwrap_or(f64::NAN),
            n["median_p50_us"].as_f64().unwrap_or(f64::NAN),
            n["median_p99_us"].as_f64().unwrap_or(f64::NAN),
        ));
    }
    s
}

/// 1234567.8 -> "1,234,568".
fn group(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Replaces the text between the results markers in the doc (creating the doc if needed).
fn write_into_doc(doc: &Path, table: &str) {
    write_between(doc, table, "<!-- results:begin -->", "<!-- results:end -->");
}

/// Prints `table`; unless `--no-write`, writes `results` to `<out_dir>/<file>` and `table`
/// into the doc between `<!-- <marker>:begin -->` and `<!-- <marker>:end -->`.
fn write_results(
    opts: &Options,
    results: &Value,
    table: &str,
    file: &str,
    marker: &str,
    what: &str,
) {
    println!("{table}");
    if !opts.write {
        eprintln!("--no-write: {file} and the table in the doc left as they were");
        return;
    }
    std::fs::create_dir_all(&opts.out_dir).unwrap_or_else(|e| die(&format!("{e}")));
    let path = opts.out_dir.join(file);
    std::fs::write(&path, serde_json::to_string_pretty(results).expect("json"))
        .unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
    write_between(
        &opts.doc,
        table,
        &format!("<!-- {marker}:begin -->"),
        &format!("<!-- {marker}:end -->"),
    );
    eprintln!(
        "wrote {} and the {what} table in {}",
        path.display(),
        opts.doc.display()
    );
}

/// Replaces the text between `BEGIN` and `END` in the doc (appending them if missing).
#[allow(non_snake_case)]
fn write_between(doc: &Path, table: &str, BEGIN: &str, END: &str) {
    let text = std::fs::read_to_string(doc)
        .unwrap_or_else(|_| format!("# Benchmarks\n\n{BEGIN}\n{END}\n"));
    let new = match (text.find(BEGIN), text.find(END)) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{BEGIN}\n{table}{}", &text[..a], &text[b..])
        }
        _ => format!("{text}\n{BEGIN}\n{table}{END}\n"),
    };
    std::fs::write(doc, new).unwrap_or_else(|e| die(&format!("{}: {e}", doc.display())));
}

// ---------------------------------------------------------------------------------------
// JetStream publishing: js-* scenarios.

/// Builds `examples/js_bench.go` into `target/js_bench` with Debian's Go and nats.go (no
/// module download: GOPATH mode); None, with a word, if that fails.
fn build_go_bench(root: &Path) -> Option<PathBuf> {
    build_go(root, "js_bench")
}

/// Builds `examples/<name>.go` into `target/<name>` (as [`build_go_bench`]).
fn build_go(root: &Path, name: &str) -> Option<PathBuf> {
    let out = root.join("target").join(name);
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(root.join(format!("examples/{name}.go")))
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOFLAGS", "")
        .env("GOCACHE", root.join("target/gocache"))
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        other => {
            eprintln!(
                "compare: cannot build examples/{name}.go ({other:?}): JetStream scenarios \
                 run with examples/bench only (Debian: apt-get install golang-go \
                 golang-github-nats-io-go-nats-dev)"
            );
            None
        }
    }
}

/// CPU seconds (user + system) used by this process's children that have been waited for.
#[cfg(unix)]
fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return f64::NAN;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

#[cfg(not(unix))]
fn children_cpu_seconds() -> f64 {
    f64::NAN
}

/// Bytes of the files under `dir`: (the sum of their sizes, the blocks allocated to them).
fn dir_usage(dir: &Path) -> (u64, u64) {
    let mut total = (0u64, 0u64);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return total;
    };
    for e in entries.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            let (a, b) = dir_usage(&e.path());
            total = (total.0 + a, total.1 + b);
        } else {
            #[cfg(unix)]
            let blocks = std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
            #[cfg(not(unix))]
            let blocks = meta.len();
            total = (total.0 + meta.len(), total.1 + blocks);
        }
    }
    total
}

/// The number after `flag` in a scenario's arguments.
fn arg_after(args: &[&str], flag: &str) -> u64 {
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One JetStream client run against a fresh server with a fresh store directory: the
/// client's rate (from its JSON), the server's CPU and peak RSS, the client's CPU, and the
/// store directory's bytes once the run is over (measured with the server still up, after
/// half a second for it to write out what it buffers; then the server is killed and the
/// directory removed).
fn js_client_run(spec: &ServerSpec, sc: &Scenario, client: &str, program: &Path) -> Value {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("compare-js-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    let extra = [
        "-js".to_string(),
        "-sd".to_string(),
        dir.join("store").display().to_string(),
    ];
    let mut server = start_with(spec, &extra, Vec::new());
    let pid = server.child.id();
    let cpu_before = cpu_seconds(pid);
    let json_path = dir.join("client.json");
    let url = format!("nats://127.0.0.1:{}", server.port);
    let mut cmd = Command::new(program);
    if client == "bench" {
        cmd.args(["-s", &url]).args(sc.args);
    } else {
        cmd.args(["-s", &url]).args(sc.go_args);
    }
    cmd.args(["-json", &json_path.display().to_string()])
        .arg("bench")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let client_cpu_before = children_cpu_seconds();
    let started = Instant::now();
    let out = cmd.output();
    let wall = started.elapsed().as_secs_f64();
    let client_cpu = children_cpu_seconds() - client_cpu_before;
    let cpu = cpu_seconds(pid) - cpu_before;
    std::thread::sleep(Duration::from_millis(500));
    let rss = peak_rss_kib(pid);
    let (disk_bytes, disk_allocated) = dir_usage(&dir.join("store"));
    let _ = server.child.kill();
    let _ = server.child.wait();
    let summary: Value = std::fs::read_to_string(&json_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let _ = std::fs::remove_dir_all(&dir);
    let failed = |why: String| {
        eprintln!("  {} {} ({client}): failed: {why}", spec.name, sc.name);
        json!({"ok": false, "error": why})
    };
    let out = match out {
        Ok(o) => o,
        Err(e) => return failed(format!("cannot run {}: {e}", program.display())),
    };
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return failed(format!(
            "{report}{}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let rate = if client == "bench" && sc.consume {
        summary["aggregate_msgs_per_sec"].as_f64()
    } else if client == "bench" {
        summary["pub_msgs_per_sec"].as_f64()
    } else {
        summary["msgs_per_sec"].as_f64()
    };
    let msgs = arg_after(sc.args, "-n");
    json!({
        "ok": rate.is_some(),
        "msgs_per_sec": rate,
        "server_cpu_seconds": cpu,
        "server_cpu_us_per_msg": cpu * 1e6 / msgs.max(1) as f64,
        "client_cpu_seconds": client_cpu,
        "client_wall_seconds": wall,
        "peak_rss_kib": rss,
        "disk_bytes": disk_bytes,
        "disk_allocated_bytes": disk_allocated,
        "latency_us": summary["latency_us"].clone(),
        "consumer_after": summary["consumer"]["after"].clone(),
        "report": report.trim(),
    })
}

/// A JetStream scenario against one server: examples/bench, then (on another fresh server)
/// the nats.go publisher.
fn measure_js(opts: &Options, spec: &ServerSpec, sc: &Scenario) -> Value {
    let bench = js_client_run(spec, sc, "bench", &opts.bench);
    let go_program = if sc.consume {
        &opts.go_consume
    } else {
        &opts.go_bench
    };
    let go = match go_program {
        Some(p) => js_client_run(spec, sc, "go", p),
        None => Value::Null,
    };
    let mib = |v: &Value| v["peak_rss_kib"].as_f64().unwrap_or(f64::NAN) / 1024.0;
    eprintln!(
        "{:>20} {:>16}: bench {:>9.0} msgs/s, go {:>9.0} msgs/s; rss {:.0}/{:.0} MiB, disk {:.1} MiB",
        sc.name,
        spec.name,
        bench["msgs_per_sec"].as_f64().unwrap_or(f64::NAN),
        go["msgs_per_sec"].as_f64().unwrap_or(f64::NAN),
        mib(&bench),
        mib(&go),
        bench["disk_bytes"].as_f64().unwrap_or(f64::NAN) / 1048576.0,
    );
    json!({"server": spec.name, "scenario": sc.name, "bench": bench, "go": go})
}

/// The version a server prints with `--version`.
fn server_version(spec: &ServerSpec) -> String {
    Command::new(&spec.command[0])
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Medians per (scenario, server, client) into js-results.json, and the table into the doc
/// between `<!-- js-results:begin -->` and `<!-- js-results:end -->`.
fn write_js_results(opts: &Options, runs: Vec<Value>) {
    let mut summary: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for sc in &opts.js_scenarios {
        for spec in &opts.servers {
            let mine: Vec<&Value> = runs
                .iter()
                .filter(|r| r["scenario"] == sc.name && r["server"] == spec.name.as_str())
                .collect();
            let mut entry = serde_json::Map::new();
            for client in ["bench", "go"] {
                let ok: Vec<&Value> = mine
                    .iter()
                    .map(|r| &r[client])
                    .filter(|r| r["ok"] == true)
                    .collect();
                let f = |key: &str| ok.iter().filter_map(|r| r[key].as_f64()).collect();
                entry.insert(
                    client.to_string(),
                    json!({
                        "rounds_ok": ok.len(),
                        "median_msgs_per_sec": median(f("msgs_per_sec")),
                        "median_server_cpu_us_per_msg": median(f("server_cpu_us_per_msg")),
                        "median_client_cpu_share": median(ok.iter().filter_map(|r| Some(
                            r["client_cpu_seconds"].as_f64()? / r["client_wall_seconds"].as_f64()?
                        )).collect()),
                        "max_peak_rss_kib": ok.iter().filter_map(|r| r["peak_rss_kib"].as_u64()).max(),
                        "median_disk_bytes": median(f("disk_bytes")),
                        "median_disk_allocated_bytes": median(f("disk_allocated_bytes")),
                    }),
                );
            }
            summary
                .entry(sc.name.into())
                .or_default()
                .insert(spec.name.clone(), Value::Object(entry));
        }
    }
    let results = json!({
        "machine": machine(),
        "rounds": opts.rounds,
        "commands": {
            "build": "cargo build --release --bin beaver --example bench",
            "run": format!(
                "cargo run --release --example compare -- --rounds {} --scenarios {}",
                opts.rounds,
                opts.js_scenarios.iter().map(|s| s.name).collect::<Vec<_>>().join(",")
            ),
        },
        "scenarios": opts.js_scenarios.iter().map(|s| json!({"name": s.name, "bench_args": s.args, "go_args": s.go_args})).collect::<Vec<_>>(),
        "servers": opts.servers.iter().map(|s| json!({"name": s.name, "command": s.command.join(" "), "version": server_version(s)})).collect::<Vec<_>>(),
        "go_client": opts.go_bench.as_ref().map(|p| p.display().to_string()),
        "summary": summary,
        "runs": runs,
    });
    let table = render_js(opts, &results);
    write_results(
        opts,
        &results,
        &table,
        "js-results.json",
        "js-results",
        "JetStream",
    );
}

/// The JetStream table: a row per scenario and server.
fn render_js(opts: &Options, results: &Value) -> String {
    let m = &results["machine"];
    let mut s = format!(
        "Measured {} on {} ({} CPUs, {}), {}, {}. {} round(s), servers alternating; medians \
         of the rounds (peak RSS: the highest). Servers: {}.\n\n",
        m["date"].as_str().unwrap_or(""),
        m["cpu"].as_str().unwrap_or(""),
        m["cpus"].as_str().unwrap_or(""),
        m["memory"].as_str().unwrap_or(""),
        m["kernel"].as_str().unwrap_or(""),
        m["rustc"].as_str().unwrap_or(""),
        opts.rounds,
        results["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| format!(
                "{} ({})",
                v["name"].as_str().unwrap_or(""),
                v["version"].as_str().unwrap_or("")
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s.push_str(
        "| scenario | server | msgs/s (bench) | vs nats-server | msgs/s (nats.go) | server CPU \
         µs/msg | client CPU (bench / nats.go) | peak RSS MiB | disk MiB (files / allocated) |\n",
    );
    s.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let summary = &results["summary"];
    for sc in &opts.js_scenarios {
        let reference = summary[sc.name]["nats-server"]["bench"]["median_msgs_per_sec"]
            .as_f64()
            .unwrap_or(f64::NAN);
        for spec in &opts.servers {
            let e = &summary[sc.name][spec.name.as_str()];
            let (b, g) = (&e["bench"], &e["go"]);
            let num = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
            let pct = |v: &Value| {
                let x = num(v, "median_client_cpu_share");
                if x.is_finite() {
                    format!("{:.0}%", x * 100.0)
                } else {
                    "-".to_string()
                }
            };
            let rate = num(b, "median_msgs_per_sec");
            s.push_str(&format!(
                "| {} | {} | {} | {:.2}× | {} | {:.2} | {} / {} | {:.0} | {:.1} / {:.1} |\n",
                sc.name,
                spec.name,
                group(rate),
                rate / reference,
                group(num(g, "median_msgs_per_sec")),
                num(b, "median_server_cpu_us_per_msg"),
                pct(b),
                pct(g),
                num(b, "max_peak_rss_kib") / 1024.0,
                num(b, "median_disk_bytes") / 1048576.0,
                num(b, "median_disk_allocated_bytes") / 1048576.0,
            ));
        }
    }
    s.push_str(
        "\nmsgs/s: acknowledged publishes per second (one publisher). Server CPU, client CPU \
         (CPU time over wall time of the client process: 100% is one core busy), peak RSS and \
         disk are from the examples/bench run; disk is the store directory once the run is \
         over, with the server still up.\n",
    );
    s
}

// ---------------------------------------------------------------------------------------
// JetStream consumers and key-value: js-pull-*, js-push-*, kv-* scenarios.

/// Medians per (scenario, server, client) into consume-results.json, and the table into the
/// doc between `<!-- consume-results:begin -->` and `<!-- consume-results:end -->`.
fn write_consume_results(opts: &Options, runs: Vec<Value>) {
    let mut summary: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for sc in &opts.consume_scenarios {
        for spec in &opts.servers {
            let mine: Vec<&Value> = runs
                .iter()
                .filter(|r| r["scenario"] == sc.name && r["server"] == spec.name.as_str())
                .collect();
            let mut entry = serde_json::Map::new();
            for client in ["bench", "go"] {
                let ok: Vec<&Value> = mine
                    .iter()
                    .map(|r| &r[client])
                    .filter(|r| r["ok"] == true)
                    .collect();
                let f = |key: &str| ok.iter().filter_map(|r| r[key].as_f64()).collect();
                let lat = |p: &str| {
                    ok.iter()
                        .filter_map(|r| r["latency_us"][p].as_f64())
                        .collect()
                };
                entry.insert(
                    client.to_string(),
                    json!({
                        "rounds_ok": ok.len(),
                        "rounds": mine.len(),
                        "median_msgs_per_sec": median(f("msgs_per_sec")),
                        "median_p50_us": median(lat("p50")),
                        "median_p99_us": median(lat("p99")),
                        "median_client_cpu_share": median(ok.iter().filter_map(|r| Some(
                            r["client_cpu_seconds"].as_f64()? / r["client_wall_seconds"].as_f64()?
                        )).collect()),
                        "max_peak_rss_kib": ok.iter().filter_map(|r| r["peak_rss_kib"].as_u64()).max(),
                    }),
                );
            }
            summary
                .entry(sc.name.into())
                .or_default()
                .insert(spec.name.clone(), Value::Object(entry));
        }
    }
    let results = json!({
        "machine": machine(),
        "rounds": opts.rounds,
        "commands": {
            "build": "cargo build --release --bin beaver --example bench --example compare",
            "run": format!(
                "target/release/examples/compare --rounds {} --scenarios {}",
                opts.rounds,
                opts.consume_scenarios.iter().map(|s| s.name).collect::<Vec<_>>().join(",")
            ),
        },
        "scenarios": opts.consume_scenarios.iter().map(|s| json!({"name": s.name, "bench_args": s.args, "go_args": s.go_args})).collect::<Vec<_>>(),
        "servers": opts.servers.iter().map(|s| json!({"name": s.name, "command": s.command.join(" "), "version": server_version(s)})).collect::<Vec<_>>(),
        "go_client": opts.go_consume.as_ref().map(|p| p.display().to_string()),
        "summary": summary,
        "runs": runs,
    });
    let table = render_consume(opts, &results);
    write_results(
        opts,
        &results,
        &table,
        "consume-results.json",
        "consume-results",
        "consumer",
    );
}

/// The consumer and key-value table: a row per scenario and server.
fn render_consume(opts: &Options, results: &Value) -> String {
    let m = &results["machine"];
    let mut s = format!(
        "Measured {} on {} ({} CPUs, {}), {}, {}. {} round(s), servers alternating; medians \
         of the rounds (peak RSS: the highest). Servers: {}.\n\n",
        m["date"].as_str().unwrap_or(""),
        m["cpu"].as_str().unwrap_or(""),
        m["cpus"].as_str().unwrap_or(""),
        m["memory"].as_str().unwrap_or(""),
        m["kernel"].as_str().unwrap_or(""),
        m["rustc"].as_str().unwrap_or(""),
        opts.rounds,
        results["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| format!(
                "{} ({})",
                v["name"].as_str().unwrap_or(""),
                v["version"].as_str().unwrap_or("")
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s.push_str(
        "| scenario | server | msgs/s (bench) | vs nats-server | latency p50 / p99 µs (bench) \
         | msgs/s (nats.go) | vs nats-server | latency p50 / p99 µs (nats.go) | peak RSS MiB \
         | rounds ok (bench / nats.go) |\n",
    );
    s.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let summary = &results["summary"];
    for sc in &opts.consume_scenarios {
        let reference = &summary[sc.name]["nats-server"];
        let num = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        for spec in &opts.servers {
            let e = &summary[sc.name][spec.name.as_str()];
            let (b, g) = (&e["bench"], &e["go"]);
            let lat = |v: &Value| {
                format!(
                    "{} / {}",
                    group(num(v, "median_p50_us")),
                    group(num(v, "median_p99_us"))
                )
            };
            let rounds = |v: &Value| {
                format!(
                    "{}/{}",
                    v["rounds_ok"].as_u64().unwrap_or(0),
                    v["rounds"].as_u64().unwrap_or(0)
                )
            };
            s.push_str(&format!(
                "| {} | {} | {} | {:.2}× | {} | {} | {:.2}× | {} | {:.0} | {} / {} |\n",
                sc.name,
                spec.name,
                group(num(b, "median_msgs_per_sec")),
                num(b, "median_msgs_per_sec") / num(&reference["bench"], "median_msgs_per_sec"),
                lat(b),
                group(num(g, "median_msgs_per_sec")),
                num(g, "median_msgs_per_sec") / num(&reference["go"], "median_msgs_per_sec"),
                lat(g),
                num(b, "max_peak_rss_kib") / 1024.0,
                rounds(b),
                rounds(g),
            ));
        }
    }
    s.push_str(
        "\nmsgs/s: messages consumed per second by all subscribers (js-pull, js-push), or KV \
         requests per second (kv-*). Latency: js-pull and js-push, the ack latency (every 100th \
         ack is a double ack, timed from writing it to the server's answer); kv-*, every put or \
         get's round trip. Peak RSS: the server's, from the examples/bench run (the fill \
         included).\n",
    );
    s
}
