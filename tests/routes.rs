//! Clustering: beaver nodes route to each other and to Debian's nats-server 2.9.10 over the
//! route protocol, on loopback with random ports (`--cluster nats://127.0.0.1:-1`; each
//! node's route port is read from its "Listening for route connections" log line).
//!
//! Synchronisation: no fixed sleeps. Interest propagates asynchronously, so each test first
//! waits, with a deadline, until a probe subscription made *after* the test's subscriptions
//! on a node is reached from every other node: `RS+` lines travel in order on a route, so
//! the earlier interest has arrived too.

mod common;

use async_nats::{Client, HeaderMap};
use common::ServerProcess;
use futures::StreamExt;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

/// Which server a node runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Beaver,
    Nats,
}

struct Node {
    server: ServerProcess,
    route_port: u16,
}

/// Starts a node of cluster `t` routing to `routes` (route ports). `None` when nats-server
/// is asked for and not installed (the test then skips).
fn node(kind: Kind, name: &str, routes: &[u16]) -> Option<Node> {
    node_with(kind, name, routes, &[])
}

/// [`node`], with `extra` arguments before the cluster flags (e.g. `-c FILE`).
fn node_with(kind: Kind, name: &str, routes: &[u16], extra: &[&str]) -> Option<Node> {
    let routes_arg = routes
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut args = extra.to_vec();
    args.extend([
        "-n",
        name,
        "--cluster",
        "nats://127.0.0.1:-1",
        "--cluster_name",
        "t",
    ]);
    if !routes.is_empty() {
        args.push("--routes");
        args.push(&routes_arg);
    }
    let server = match kind {
        Kind::Beaver => ServerProcess::beaver(&args),
        Kind::Nats => ServerProcess::nats_server(&args)?,
    };
    let route_port = route_port_of(&server);
    Some(Node { server, route_port })
}

/// Three nodes: the first is dialled by the other two; the second and third find each other
/// by gossip.
fn star(kinds: [Kind; 3]) -> Option<Vec<Node>> {
    let a = node(kinds[0], "A", &[])?;
    let b = node(kinds[1], "B", &[a.route_port])?;
    let c = node(kinds[2], "C", &[a.route_port])?;
    Some(vec![a, b, c])
}

async fn connect(n: &Node) -> Client {
    async_nats::ConnectOptions::new()
        .subscription_capacity(100_000)
        .connect(n.server.url())
        .await
        .expect("connect")
}

/// Waits until a message published on every other node reaches a fresh subscription on
/// `clients[on]` (so every interest created on that node before it has propagated).
async fn propagate(clients: &[Client], on: usize) {
    let subject = format!("probe.{on}.{}", fastrand::u64(..));
    let mut sub = clients[on].subscribe(subject.clone()).await.unwrap();
    clients[on].flush().await.unwrap();
    for (i, c) in clients.iter().enumerate() {
        if i == on {
            continue;
        }
        let deadline = Instant::now() + LIMIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "interest of node {on} never reached node {i}"
            );
            c.publish(subject.clone(), "p".into()).await.unwrap();
            c.flush().await.unwrap();
            if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(50), sub.next()).await {
                break;
            }
        }
    }
    // Drain probes still on their way.
    sub.unsubscribe().await.unwrap();
}

/// Collects `n` messages from `sub`, failing after `LIMIT`.
async fn take(sub: &mut async_nats::Subscriber, n: usize) -> Vec<async_nats::Message> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match tokio::time::timeout(LIMIT, sub.next()).await {
            Ok(Some(m)) => out.push(m),
            _ => panic!("got {} of {n} messages", out.len()),
        }
    }
    out
}

/// Nothing more arrives on `sub` after a round trip through every client (a message to a
/// fresh subject each publishes and a subscription on `sub`'s node receives last).
async fn nothing_more(sub: &mut async_nats::Subscriber) {
    if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(300), sub.next()).await {
        panic!("unexpected extra message on {}", m.subject);
    }
}

/// The cluster behaviours every mix must have.
async fn exercise(nodes: &[Node]) {
    let clients: Vec<Client> = futures::future::join_all(nodes.iter().map(connect)).await;
    let k = nodes.len();
    // Every node: a plain wildcard subscriber, and a member of queue group "workers".
    let mut plain = Vec::new();
    let mut queue = Vec::new();
    for c in &clients {
        plain.push(c.subscribe("orders.*").await.unwrap());
        queue.push(c.queue_subscribe("jobs.>", "workers".into()).await.unwrap());
        c.flush().await.unwrap();
    }
    for i in 0..k {
        propagate(&clients, i).await;
    }
    // Cross-node pub/sub with wildcards: every plain subscriber gets each message once.
    let per = 20;
    for (i, c) in clients.iter().enumerate() {
        for j in 0..per {
            c.publish(format!("orders.n{i}"), format!("{i}-{j}").into())
                .await
                .unwrap();
        }
        c.flush().await.unwrap();
    }
    for s in &mut plain {
        let got = take(s, k * per).await;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for m in got {
            *seen
                .entry(String::from_utf8_lossy(&m.payload).into_owned())
                .or_default() += 1;
        }
        assert_eq!(seen.len(), k * per, "every message, once");
        nothing_more(s).await;
    }
    // Queue group: each message exactly once cluster-wide.
    let jobs = 60;
    for j in 0..jobs {
        clients[j % k]
            .publish(format!("jobs.x.{j}"), format!("{j}").into())
            .await
            .unwrap();
    }
    for c in &clients {
        c.flush().await.unwrap();
    }
    let mut got: Vec<String> = Vec::new();
    let deadline = Instant::now() + LIMIT;
    while got.len() < jobs && Instant::now() < deadline {
        for q in &mut queue {
            while let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(20), q.next()).await
            {
                got.push(String::from_utf8_lossy(&m.payload).into_owned());
            }
        }
    }
    got.sort_by_key(|s| s.parse::<usize>().unwrap());
    let want: Vec<String> = (0..jobs).map(|j| j.to_string()).collect();
    assert_eq!(got, want, "each job exactly once across the cluster");
    for q in &mut queue {
        nothing_more(q).await;
    }
    // Request/reply across nodes (the replier on the last node).
    let mut svc = clients[k - 1].subscribe("svc.echo").await.unwrap();
    clients[k - 1].flush().await.unwrap();
    propagate(&clients, k - 1).await;
    let responder = clients[k - 1].clone();
    let task = tokio::spawn(async move {
        while let Some(m) = svc.next().await {
            if let Some(r) = m.reply {
                responder.publish(r, m.payload).await.unwrap();
            }
        }
    });
    let reply = tokio::time::timeout(LIMIT, clients[0].request("svc.echo", "ping".into()))
        .await
        .expect("in time")
        .expect("a reply");
    assert_eq!(&reply.payload[..], b"ping");
    task.abort();
    // Headers and a 1 MiB message cross unchanged.
    let mut big = clients[k - 1].subscribe("big").await.unwrap();
    clients[k - 1].flush().await.unwrap();
    propagate(&clients, k - 1).await;
    let payload: Vec<u8> = (0..1024 * 1024 - 100).map(|i| (i % 251) as u8).collect();
    let mut headers = HeaderMap::new();
    headers.insert("Trace-Id", "42");
    clients[0]
        .publish_with_headers("big", headers, payload.clone().into())
        .await
        .unwrap();
    clients[0].flush().await.unwrap();
    let m = &take(&mut big, 1).await[0];
    assert_eq!(m.payload.len(), payload.len());
    assert!(m.payload[..] == payload[..], "payload unchanged");
    assert_eq!(
        m.headers
            .as_ref()
            .and_then(|h| h.get("Trace-Id"))
            .map(|v| v.as_str()),
        Some("42")
    );
    // 10,000 messages in order.
    let mut ordered = clients[1].subscribe("seq").await.unwrap();
    clients[1].flush().await.unwrap();
    propagate(&clients, 1).await;
    for i in 0..10_000u32 {
        clients[0]
            .publish("seq", i.to_string().into())
            .await
            .unwrap();
    }
    clients[0].flush().await.unwrap();
    let got = take(&mut ordered, 10_000).await;
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m.payload, i.to_string().as_bytes(), "in order");
    }
    // UNSUB withdraws interest: no responders again once it has propagated.
    let mut gone = clients[1].subscribe("svc.gone").await.unwrap();
    clients[1].flush().await.unwrap();
    propagate(&clients, 1).await;
    gone.unsubscribe().await.unwrap();
    clients[1].flush().await.unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(Instant::now() < deadline, "interest never withdrawn");
        let r = tokio::time::timeout(
            Duration::from_secs(2),
            clients[0].request("svc.gone", "x".into()),
        )
        .await;
        if let Ok(Err(e)) = r {
            if e.kind() == async_nats::RequestErrorKind::NoResponders {
                break;
            }
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn three_beaver_nodes() {
    let nodes = star([Kind::Beaver; 3]).unwrap();
    rt().block_on(exercise(&nodes));
}

#[test]
fn two_beaver_one_nats_server_beaver_dialled() {
    let Some(nodes) = star([Kind::Beaver, Kind::Nats, Kind::Beaver]) else {
        return;
    };
    rt().block_on(exercise(&nodes));
}

#[test]
fn one_beaver_two_nats_servers_beaver_dials() {
    let Some(nodes) = star([Kind::Nats, Kind::Nats, Kind::Beaver]) else {
        return;
    };
    rt().block_on(exercise(&nodes));
}

#[test]
fn one_beaver_two_nats_servers_beaver_dialled() {
    let Some(nodes) = star([Kind::Beaver, Kind::Nats, Kind::Nats]) else {
        return;
    };
    rt().block_on(exercise(&nodes));
}

/// Free loopback ports for `count` nodes: all bound at once (so they differ), read, and
/// released; the nodes bind them right after.
fn free_ports(count: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// `/routez` of a node until it has exactly `want` (the other nodes' server ids), each
/// once; returns the routes' `rid`s.
fn routes_settle(monitor: u16, who: &str, want: &[String]) -> Vec<u64> {
    let mut want = want.to_vec();
    want.sort();
    let doc = common::poll_json(
        monitor,
        "/routez",
        &format!("{who}: one route to each other node"),
        |d| {
            let mut ids: Vec<String> = d["routes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["remote_id"].as_str().map(str::to_owned))
                .collect();
            ids.sort();
            d["num_routes"] == want.len() && ids == want
        },
    );
    let mut rids: Vec<u64> = doc["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rid"].as_u64().expect("rid"))
        .collect();
    rids.sort();
    rids
}

/// A full mesh of explicit routes: every node lists both others in `--routes`, so every pair
/// dials each other (simultaneously, as all start together). Exactly one route per pair
/// survives, and it stays; a message published on any node reaches a subscriber on every
/// node exactly once.
#[test]
fn full_mesh_of_explicit_routes() {
    let ports = free_ports(3);
    let names = ["A", "B", "C"];
    let nodes: Vec<Node> = (0..3)
        .map(|i| {
            let listen = format!("nats://127.0.0.1:{}", ports[i]);
            let routes = (0..3)
                .filter(|&j| j != i)
                .map(|j| format!("nats://127.0.0.1:{}", ports[j]))
                .collect::<Vec<_>>()
                .join(",");
            let server = ServerProcess::beaver(&[
                "-m",
                "-1",
                "-n",
                names[i],
                "--cluster",
                &listen,
                "--cluster_name",
                "t",
                "--routes",
                &routes,
            ]);
            Node {
                server,
                route_port: ports[i],
            }
        })
        .collect();
    let monitors: Vec<u16> = nodes.iter().map(|n| n.server.monitor_port()).collect();
    let ids: Vec<String> = monitors
        .iter()
        .map(|&m| {
            common::get_json(m, "/varz")["server_id"]
                .as_str()
                .expect("server_id")
                .to_owned()
        })
        .collect();
    let others =
        |i: usize| -> Vec<String> { (0..3).filter(|&j| j != i).map(|j| ids[j].clone()).collect() };
    // Exactly one route per pair: two on each node, to the two other servers.
    let rids: Vec<Vec<u64>> = (0..3)
        .map(|i| routes_settle(monitors[i], names[i], &others(i)))
        .collect();
    rt().block_on(async {
        let clients: Vec<Client> = futures::future::join_all(nodes.iter().map(connect)).await;
        let mut subs = Vec::new();
        for c in &clients {
            subs.push(c.subscribe("mesh.>").await.unwrap());
            c.flush().await.unwrap();
        }
        for i in 0..3 {
            propagate(&clients, i).await;
        }
        let per = 50;
        for (i, c) in clients.iter().enumerate() {
            for j in 0..per {
                c.publish(format!("mesh.{i}"), format!("{i}-{j}").into())
                    .await
                    .unwrap();
            }
            c.flush().await.unwrap();
        }
        for (k, s) in subs.iter_mut().enumerate() {
            let got = take(s, 3 * per).await;
            let mut seen: HashMap<String, usize> = HashMap::new();
            for m in got {
                *seen
                    .entry(String::from_utf8_lossy(&m.payload).into_owned())
                    .or_default() += 1;
            }
            assert_eq!(
                seen.len(),
                3 * per,
                "node {k}: every message from every node, once"
            );
            nothing_more(s).await;
        }
    });
    // The same routes still: no duplicate replaced one, nothing redialled.
    for i in 0..3 {
        assert_eq!(
            routes_settle(monitors[i], names[i], &others(i)),
            rids[i],
            "{}: the routes changed",
            names[i]
        );
    }
    rt().block_on(exercise(&nodes));
}

/// A chain of --routes (C → B → A): gossip completes the mesh.
#[test]
fn chain_of_routes_forms_a_mesh() {
    let a = node(Kind::Beaver, "A", &[]).unwrap();
    let b = node(Kind::Beaver, "B", &[a.route_port]).unwrap();
    let c = node(Kind::Beaver, "C", &[b.route_port]).unwrap();
    rt().block_on(exercise(&[a, b, c]));
}

/// A node killed and restarted rejoins: its explicit route is redialled and the interest is
/// sent again.
#[test]
fn restarted_node_rejoins() {
    let a = node(Kind::Beaver, "A", &[]).unwrap();
    let b = node(Kind::Beaver, "B", &[a.route_port]).unwrap();
    let mut nodes = vec![a, b];
    rt().block_on(async {
        let clients = vec![connect(&nodes[0]).await, connect(&nodes[1]).await];
        propagate(&clients, 0).await;
    });
    let a_port = nodes[0].route_port;
    nodes.pop(); // kills B
    let b = node(Kind::Beaver, "B", &[a_port]).unwrap();
    nodes.push(b);
    rt().block_on(async {
        let clients = vec![connect(&nodes[0]).await, connect(&nodes[1]).await];
        propagate(&clients, 0).await;
        propagate(&clients, 1).await;
    });
    // And when the dialled node restarts on the same route port, the dialer redials it.
    let a2 = nodes.remove(0);
    let port = a2.route_port;
    drop(a2);
    let cluster = format!("nats://127.0.0.1:{port}");
    let a = ServerProcess::beaver(&["-n", "A", "--cluster", &cluster, "--cluster_name", "t"]);
    let a = Node {
        server: a,
        route_port: port,
    };
    nodes.insert(0, a);
    rt().block_on(async {
        let clients = vec![connect(&nodes[0]).await, connect(&nodes[1]).await];
        propagate(&clients, 0).await;
        propagate(&clients, 1).await;
    });
}

/// A scripted peer plays another server on beaver's route port: the exact bytes of the
/// route protocol.
struct Peer {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Peer {
    fn dial(port: u16) -> Peer {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        Peer {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.stream.write_all(b).unwrap();
    }

    /// The next line that is not a PING (answered) or PONG.
    fn line(&mut self) -> String {
        loop {
            let mut l = String::new();
            let n = self.reader.read_line(&mut l).unwrap_or(0);
            if n == 0 {
                return String::new();
            }
            match l.as_str() {
                "PING\r\n" => self.send(b"PONG\r\n"),
                "PONG\r\n" => {}
                _ => return l,
            }
        }
    }

    fn payload(&mut self, n: usize) -> Vec<u8> {
        let mut b = vec![0; n + 2];
        self.reader.read_exact(&mut b).unwrap();
        b.truncate(n);
        b
    }
}

const PEER_INFO: &[u8] = b"INFO {\"server_id\":\"NPEER\",\"server_name\":\"peer\",\"version\":\"2.9.10\",\"proto\":2,\"host\":\"127.0.0.1\",\"port\":1,\"headers\":true,\"max_payload\":1048576,\"cluster\":\"t\",\"connect_urls\":[\"127.0.0.1:9\"],\"lnoc\":true} \r\n";

#[test]
fn scripted_peer_exact_bytes() {
    let n = node(Kind::Beaver, "B", &[]).unwrap();
    // A client with interest before the route exists: sent when the route registers.
    let mut client = n.server.raw();
    client.exchange(b"CONNECT {\"verbose\":false,\"headers\":true,\"protocol\":1}\r\nSUB early 1\r\nSUB work q 2\r\nSUB work q 3\r\nPING\r\n");
    let mut peer = Peer::dial(n.route_port);
    let info = peer.line();
    assert!(info.starts_with("INFO {\"server_id\":\""), "{info}");
    assert!(info.ends_with("} \r\n"));
    let v: serde_json::Value = serde_json::from_str(&info[5..info.len() - 3]).unwrap();
    assert_eq!(v["proto"], 2);
    assert_eq!(v["cluster"], "t");
    assert_eq!(v["lnoc"], true);
    assert_eq!(v["connect_urls"][0], format!("127.0.0.1:{}", n.server.port));
    peer.send(b"CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"headers\":true,\"name\":\"NPEER\",\"cluster\":\"t\",\"lnoc\":true}\r\n");
    peer.send(PEER_INFO);
    let mut got = vec![peer.line(), peer.line()];
    got.sort();
    assert_eq!(got, vec!["RS+ $G early\r\n", "RS+ $G work q 2\r\n"]);
    // Interest counted on this side: weights follow the members, RS- after the last.
    client.exchange(b"UNSUB 3\r\nPING\r\n");
    assert_eq!(peer.line(), "RS+ $G work q 1\r\n");
    client.exchange(b"UNSUB 2\r\nUNSUB 1\r\nSUB fresh 4\r\nSUB fresh 5\r\nPING\r\n");
    assert_eq!(peer.line(), "RS- $G work q\r\n");
    assert_eq!(peer.line(), "RS- $G early\r\n");
    assert_eq!(peer.line(), "RS+ $G fresh\r\n");
    // The client's INFO now lists the peer's client URL (async INFO).
    let info_seen = client
        .received
        .iter()
        .any(|f| format!("{f:?}").contains("127.0.0.1:9"));
    assert!(
        info_seen,
        "async INFO with connect_urls: {:?}",
        client.received
    );
    // Remote interest: a client publish is forwarded once as RMSG, with the queue picked.
    peer.send(b"RS+ $G in.* \r\nRS+ $G in.x grp 3\r\nRS+ $SYS $SYS.x\r\nPING\r\n");
    // (the PING's PONG proves the RS+ were processed)
    loop {
        let mut l = String::new();
        peer.reader.read_line(&mut l).unwrap();
        if l == "PONG\r\n" {
            break;
        }
    }
    client.exchange(b"PUB in.x r 2\r\nhi\r\nHPUB in.y 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPING\r\n");
    assert_eq!(peer.line(), "RMSG $G in.x + r grp 2\r\n");
    assert_eq!(peer.payload(2), b"hi");
    assert_eq!(peer.line(), "HMSG $G in.y 12 14\r\n");
    assert_eq!(peer.payload(14), b"NATS/1.0\r\n\r\nhi");
    // A routed message reaches local subscribers only, with the reply; queue groups only
    // when named.
    client.exchange(b"SUB to.me 7\r\nSUB to.me g 8\r\nPING\r\n");
    assert_eq!(peer.line(), "RS+ $G to.me\r\n");
    assert_eq!(peer.line(), "RS+ $G to.me g 1\r\n");
    let before = client.received.len();
    peer.send(
        b"RMSG $G to.me rr 2\r\nab\r\nRMSG $G to.me | g 2\r\ncd\r\nRMSG $SYS to.me 2\r\nzz\r\n",
    );
    let frames = client.wait_frames(before, 3);
    // As nats-server: the plain subscriber gets both, the queue member only the message
    // naming its group; the unknown account's message is dropped.
    assert_eq!(
        common::show(&frames),
        common::show(&[
            common::Frame::Msg("MSG to.me 7 rr 2".into(), b"ab".to_vec()),
            common::Frame::Msg("MSG to.me 7 2".into(), b"cd".to_vec()),
            common::Frame::Msg("MSG to.me 8 2".into(), b"cd".to_vec()),
        ])
    );
    client.exchange(b"PING\r\n");
    let others = client.received[before..]
        .iter()
        .filter(|f| !matches!(f, common::Frame::Pong))
        .count();
    assert_eq!(others, 3, "nothing else: {:?}", client.received);
    // RS- removes the remote interest: nothing is forwarded any more.
    peer.send(b"RS- $G in.*\r\nRS- $G in.x grp\r\nPING\r\n");
    loop {
        let mut l = String::new();
        peer.reader.read_line(&mut l).unwrap();
        if l == "PONG\r\n" {
            break;
        }
    }
    client.exchange(b"PUB in.x 2\r\nno\r\nSUB sentinel 9\r\nPING\r\n");
    assert_eq!(peer.line(), "RS+ $G sentinel\r\n", "no RMSG after RS-");
    // A client disconnect withdraws its interest.
    drop(client);
    let mut gone = vec![peer.line(), peer.line(), peer.line(), peer.line()];
    gone.sort();
    assert_eq!(
        gone,
        vec![
            "RS- $G fresh\r\n",
            "RS- $G sentinel\r\n",
            "RS- $G to.me\r\n",
            "RS- $G to.me g\r\n"
        ]
    );
}

/// An `RS+` with an invalid subject gets nats-server's `-ERR 'Invalid Subscription'`, and
/// the route stays up. Same bytes to both servers.
#[test]
fn scripted_peer_invalid_subscription() {
    for kind in [Kind::Beaver, Kind::Nats] {
        let Some(n) = node(kind, "B", &[]) else {
            return;
        };
        let mut peer = Peer::dial(n.route_port);
        peer.line();
        peer.send(b"CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"headers\":true,\"name\":\"NPEER\",\"cluster\":\"t\",\"lnoc\":true}\r\n");
        peer.send(PEER_INFO);
        peer.send(b"RS+ $G foo..bar\r\nRS+ $G ok\r\nPING\r\n");
        let mut lines = Vec::new();
        loop {
            let mut l = String::new();
            peer.reader.read_line(&mut l).unwrap();
            match l.as_str() {
                "PONG\r\n" => break,
                "PING\r\n" => peer.send(b"PONG\r\n"),
                "" => panic!("{}: route closed after {lines:?}", n.server.name),
                // nats-server's system account interest; beaver has none.
                _ if l.starts_with("INFO ") || l.starts_with("RS+ $SYS ") => {}
                _ => lines.push(l),
            }
        }
        assert_eq!(
            lines,
            ["-ERR 'Invalid Subscription'\r\n"],
            "{}",
            n.server.name
        );
    }
}

#[test]
fn scripted_peer_refusals() {
    let n = node(Kind::Beaver, "B", &[]).unwrap();
    // Another cluster: nats-server's error, then the route is closed.
    let mut peer = Peer::dial(n.route_port);
    peer.line();
    peer.send(b"CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"headers\":true,\"name\":\"NPEER\",\"cluster\":\"other\",\"lnoc\":true}\r\n");
    assert_eq!(
        peer.line(),
        "-ERR 'Rejecting connection, cluster name \"other\" does not match \"t\"'\r\n"
    );
    assert_eq!(peer.line(), "", "closed");
    // A second route from the same server id: the duplicate is closed.
    let mut p1 = Peer::dial(n.route_port);
    p1.line();
    p1.send(b"CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"headers\":true,\"name\":\"NPEER\",\"cluster\":\"t\",\"lnoc\":true}\r\n");
    p1.send(PEER_INFO);
    p1.send(b"PING\r\n");
    loop {
        let mut l = String::new();
        p1.reader.read_line(&mut l).unwrap();
        if l == "PONG\r\n" {
            break;
        }
    }
    let mut p2 = Peer::dial(n.route_port);
    p2.line();
    p2.send(PEER_INFO);
    assert_eq!(p2.line(), "", "duplicate closed");
    assert!(n
        .server
        .wait_for_log("Router connection closed: Duplicate Route"));
}

/// A route to itself (its own route port among its routes) is dropped and not redialled.
#[test]
fn route_to_self_is_dropped() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let url = format!("nats://127.0.0.1:{port}");
    let me = ServerProcess::beaver(&[
        "-D",
        "--cluster",
        &url,
        "--cluster_name",
        "t",
        "--routes",
        &url,
    ]);
    assert!(me.wait_for_log("Detected route to self"));
    assert!(me.wait_for_log("Router connection closed: Duplicate Route"));
}

/// Cluster authorization: a route without the right credentials is refused.
#[test]
fn cluster_authorization() {
    let dir = std::env::temp_dir().join(format!("beaver-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("a.conf");
    std::fs::write(
        &conf,
        "cluster {\n  name: t\n  listen: 127.0.0.1:-1\n  authorization { user: ruser, password: s3cret, timeout: 2 }\n}\n",
    )
    .unwrap();
    let a = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let port = route_port_of(&a);
    let mut bad = Peer::dial(port);
    let info = bad.line();
    assert!(info.contains("\"auth_required\":true"), "{info}");
    bad.send(b"CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"user\":\"ruser\",\"pass\":\"wrong\",\"tls_required\":false,\"headers\":true,\"name\":\"NPEER\",\"cluster\":\"t\",\"lnoc\":true}\r\n");
    assert_eq!(bad.line(), "-ERR 'Authorization Violation'\r\n");
    // The right credentials in the route URL: the cluster forms.
    let b_routes = format!("nats://ruser:s3cret@127.0.0.1:{port}");
    let b = ServerProcess::beaver(&[
        "-n",
        "B",
        "--cluster",
        "nats://127.0.0.1:-1",
        "--cluster_name",
        "t",
        "--routes",
        &b_routes,
    ]);
    let nodes = [
        Node {
            server: a,
            route_port: port,
        },
        Node {
            server: b,
            route_port: 0,
        },
    ];
    rt().block_on(async {
        let clients = vec![connect(&nodes[0]).await, connect(&nodes[1]).await];
        propagate(&clients, 0).await;
        propagate(&clients, 1).await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// `/routez` and `/varz` show the route, its remote id and its interest.
#[test]
fn routez_and_varz_show_the_routes() {
    let a = ServerProcess::beaver(&[
        "-m",
        "-1",
        "-n",
        "A",
        "--cluster",
        "nats://127.0.0.1:-1",
        "--cluster_name",
        "t",
    ]);
    let port = route_port_of(&a);
    let b = node(Kind::Beaver, "B", &[port]).unwrap();
    let mut client = b.server.raw();
    client.exchange(b"CONNECT {\"verbose\":false}\r\nSUB watched q1 1\r\nPING\r\n");
    let m = a.monitor_port();
    let routez = common::poll_json(m, "/routez?subs=1", "B's interest", |d| {
        d["routes"][0]["subscriptions_list"]
            .as_array()
            .is_some_and(|l| l.iter().any(|s| s == "watched q1"))
    });
    let r = &routez["routes"][0];
    assert_eq!(routez["num_routes"], 1);
    assert_eq!(r["remote_id"], client.info["server_id"]);
    assert_eq!(r["did_solicit"], false);
    assert_eq!(r["is_configured"], false);
    assert_eq!(r["ip"], "127.0.0.1");
    for k in [
        "rid",
        "port",
        "pending_size",
        "in_msgs",
        "out_msgs",
        "in_bytes",
        "out_bytes",
        "subscriptions",
    ] {
        assert!(r[k].is_u64(), "{k} in {r}");
    }
    let varz = common::get_json(m, "/varz");
    assert_eq!(varz["routes"], 1);
    assert_eq!(varz["cluster"]["name"], "t");
    assert_eq!(varz["cluster"]["cluster_port"], port);
}

/// The route port a node logged.
fn route_port_of(server: &ServerProcess) -> u16 {
    server.port_in_log("Listening for route connections on ")
}

/// Accounts stay apart across the cluster: interest and messages travel under their
/// account's name, so a message published in account A on one node reaches A's subscribers
/// on the other node, and never B's, which see only B's.
#[test]
fn accounts_stay_apart_across_the_cluster() {
    let dir = std::env::temp_dir().join(format!("beaver-routes-acc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let accounts = "accounts {\n  A { users = [ { user: a, password: pa } ] }\n  \
                    B { users = [ { user: b, password: pb } ] }\n}\n";
    let conf_1 = dir.join("one.conf");
    std::fs::write(
        &conf_1,
        format!("{accounts}cluster {{\n  name: t\n  listen: 127.0.0.1:-1\n}}\n"),
    )
    .unwrap();
    let one = ServerProcess::beaver(&["-n", "one", "-c", conf_1.to_str().unwrap()]);
    let port_1 = route_port_of(&one);
    let conf_2 = dir.join("two.conf");
    std::fs::write(
        &conf_2,
        format!(
            "{accounts}cluster {{\n  name: t\n  listen: 127.0.0.1:-1\n  \
             routes: [ nats://127.0.0.1:{port_1} ]\n}}\n"
        ),
    )
    .unwrap();
    let two = ServerProcess::beaver(&["-n", "two", "-c", conf_2.to_str().unwrap()]);
    let nodes = [
        Node {
            server: one,
            route_port: port_1,
        },
        Node {
            route_port: route_port_of(&two),
            server: two,
        },
    ];
    let login = |n: &Node, user: &str, pass: &str| {
        let url = n.server.url();
        let (user, pass) = (user.to_owned(), pass.to_owned());
        async move {
            async_nats::ConnectOptions::with_user_and_password(user, pass)
                .connect(url)
                .await
                .expect("login")
        }
    };
    rt().block_on(async {
        let a = [
            login(&nodes[0], "a", "pa").await,
            login(&nodes[1], "a", "pa").await,
        ];
        let b = [
            login(&nodes[0], "b", "pb").await,
            login(&nodes[1], "b", "pb").await,
        ];
        let mut a_sub = a[1].subscribe("orders").await.unwrap();
        let mut b_sub = b[1].subscribe("orders").await.unwrap();
        // Each account's interest on node two has reached node one.
        propagate(&a, 1).await;
        propagate(&b, 1).await;
        a[0].publish("orders", "for A".into()).await.unwrap();
        b[0].publish("orders", "for B".into()).await.unwrap();
        a[0].flush().await.unwrap();
        b[0].flush().await.unwrap();
        assert_eq!(take(&mut a_sub, 1).await[0].payload, "for A");
        assert_eq!(take(&mut b_sub, 1).await[0].payload, "for B");
        nothing_more(&mut a_sub).await;
        nothing_more(&mut b_sub).await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// Routed traffic is in `/varz`'s totals at once, as in nats-server's (it used to reach
/// them only when the route's connection was gone): on B, every message that came over
/// the route is counted in (`in_msgs`) and, delivered to B's subscriber, out; A counts the
/// same messages out to the route. Polled (bounded) while the route is up.
#[test]
fn routed_traffic_is_in_varz_at_once() {
    let base = [
        "--cluster",
        "nats://127.0.0.1:-1",
        "--cluster_name",
        "t",
        "-m",
        "-1",
    ];
    let a = ServerProcess::beaver(&base);
    let a_route = format!("nats://127.0.0.1:{}", route_port_of(&a));
    let mut b_args = base.to_vec();
    b_args.extend(["--routes", a_route.as_str()]);
    let b = ServerProcess::beaver(&b_args);
    let mut sub = b.raw();
    sub.exchange(b"CONNECT {\"verbose\":false}\r\nSUB x 1\r\n");
    let mut publisher = a.raw();
    publisher.exchange(b"CONNECT {\"verbose\":false}\r\n");
    until_interest_crosses(&mut sub, &mut publisher, "x");
    for _ in 0..10 {
        publisher.send(b"PUB x 5\r\nhello\r\n");
    }
    publisher.sync();
    let (a_mon, b_mon) = (a.monitor_port(), b.monitor_port());
    let b_varz = common::poll_json(b_mon, "/varz", "routed messages counted in", |v| {
        v["out_msgs"].as_u64() >= Some(11) && v["in_msgs"] == v["out_msgs"]
    });
    let routed = b_varz["in_msgs"].as_u64().unwrap();
    common::poll_json(a_mon, "/varz", "routed messages counted out", |v| {
        v["out_msgs"].as_u64() == Some(routed)
    });
}

/// Waits until `sub`'s interest in `subject` has crossed the route: a probe published by
/// `publisher` (on the other node) reaches `sub`. The probes `sub` got are consumed.
fn until_interest_crosses(sub: &mut common::Raw, publisher: &mut common::Raw, subject: &str) {
    let deadline = Instant::now() + LIMIT;
    let probe = format!("PUB {subject} 5\r\nprobe\r\n");
    while !sub
        .exchange(b"")
        .iter()
        .any(|f| matches!(f, common::Frame::Msg(..)))
    {
        assert!(
            Instant::now() < deadline,
            "interest never crossed the route"
        );
        publisher.exchange(probe.as_bytes());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Large messages cross a route intact, in order, between beaver and nats-server nodes both
/// ways (a route reader used to copy the whole partial message on every read).
#[test]
fn large_messages_cross_routes_intact() {
    let dir = std::env::temp_dir().join(format!("beaver-routes-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("big.conf");
    std::fs::write(&conf, "max_payload: 8MB\nmax_pending: 64MB\n").unwrap();
    let conf = conf.to_str().unwrap().to_owned();
    for (first, second) in [
        (Kind::Beaver, Kind::Beaver),
        (Kind::Nats, Kind::Beaver),
        (Kind::Beaver, Kind::Nats),
    ] {
        let extra = ["-c", conf.as_str()];
        let Some(a) = node_with(first, "A", &[], &extra) else {
            return;
        };
        let Some(b) = node_with(second, "B", &[a.route_port], &extra) else {
            return;
        };
        let mut sub = b.server.raw();
        sub.exchange(b"CONNECT {\"verbose\":false}\r\nSUB big 1\r\n");
        let mut publisher = a.server.raw();
        publisher.exchange(b"CONNECT {\"verbose\":false}\r\n");
        until_interest_crosses(&mut sub, &mut publisher, "big");
        let sizes = [8 << 20, 3, 5 << 20, 1 << 20];
        for (i, &n) in sizes.iter().enumerate() {
            let mut m = format!("PUB big {n}\r\n").into_bytes();
            m.extend((0..n).map(|j| b'a' + ((i + j) % 26) as u8));
            m.extend_from_slice(b"\r\n");
            publisher.send(&m);
        }
        publisher.sync();
        let from = sub.received.len();
        let got = sub.wait_frames(from, sizes.len());
        for (i, (f, &n)) in got.iter().zip(&sizes).enumerate() {
            let common::Frame::Msg(line, payload) = f else {
                panic!("{}: frame {i}: {f:?}", b.server.name)
            };
            assert_eq!(line, &format!("MSG big 1 {n}"));
            assert!(
                payload
                    .iter()
                    .enumerate()
                    .all(|(j, &c)| c == b'a' + ((i + j) % 26) as u8),
                "{} -> {}: payload {i} intact",
                a.server.name,
                b.server.name
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client of a beaver node without JetStream uses the JetStream of the nats-server nodes of
/// its cluster: beaver passes `$JS.API` requests through the system account, as a
/// nats-server node without JetStream does (`jetstream::forward`), and the stream's
/// subjects cross routes as any interest. Two nats-server nodes with `-js` (clustered
/// JetStream needs configured routes between them) and one beaver node.
#[test]
fn a_beaver_node_reaches_the_jetstream_of_nats_server_nodes() {
    if common::nats_server_path().is_none() {
        let _ = ServerProcess::nats_server(&[]);
        return;
    }
    let ports = free_ports(3);
    let url = |p: u16| format!("nats://127.0.0.1:{p}");
    let store = std::env::temp_dir().join(format!("beaver-js-mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    let js_node = |i: usize, name: &str| {
        let listen = url(ports[i]);
        let routes = [url(ports[0]), url(ports[1]), url(ports[2])]
            .into_iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, u)| u)
            .collect::<Vec<_>>()
            .join(",");
        let dir = store.join(name);
        ServerProcess::nats_server(&[
            "-js",
            "-sd",
            dir.to_str().unwrap(),
            "-n",
            name,
            "--cluster",
            &listen,
            "--cluster_name",
            "t",
            "--routes",
            &routes,
        ])
        .expect("nats-server starts")
    };
    let beaver = ServerProcess::beaver(&[
        "-n",
        "C",
        "--cluster",
        &url(ports[2]),
        "--cluster_name",
        "t",
        "--routes",
        &format!("{},{}", url(ports[0]), url(ports[1])),
    ]);
    let _a = js_node(0, "A");
    let _b = js_node(1, "B");
    rt().block_on(async {
        use async_nats::jetstream;
        let client = async_nats::connect(beaver.url()).await.unwrap();
        assert!(
            !client.server_info().jetstream,
            "beaver itself has no JetStream"
        );
        let js = jetstream::new(client.clone());
        let config = jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.*".into()],
            ..Default::default()
        };
        // The nats-server nodes elect their JetStream leader first: until then the API
        // answers with an error (or not at all).
        let deadline = Instant::now() + LIMIT;
        loop {
            match js.create_stream(config.clone()).await {
                Ok(_) => break,
                Err(e) => {
                    assert!(
                        Instant::now() < deadline,
                        "no JetStream through beaver: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        for i in 0..100 {
            // The stream's interest reaches beaver by route a moment after the create.
            let ack = loop {
                match js
                    .publish(format!("orders.{}", i % 3), "x".into())
                    .await
                    .unwrap()
                    .await
                {
                    Ok(ack) => break ack,
                    Err(e) => {
                        assert!(Instant::now() < deadline, "publish: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            };
            assert_eq!((ack.stream.as_str(), ack.sequence), ("ORDERS", i + 1));
        }
        let stream = js.get_stream("ORDERS").await.unwrap();
        let info = stream.get_info().await.unwrap();
        assert_eq!(info.state.messages, 100);
        let m = stream.get_raw_message(2).await.unwrap();
        assert_eq!(m.subject.as_str(), "orders.1");
    });
    let _ = std::fs::remove_dir_all(&store);
}

/// Without JetStream anywhere in the cluster, the API has no responders, as from
/// nats-server (beaver's forwarder answers the 503 itself).
#[test]
fn without_jetstream_in_the_cluster_the_api_has_no_responders() {
    let ports = free_ports(2);
    let url = |p: u16| format!("nats://127.0.0.1:{p}");
    let a = ServerProcess::beaver(&[
        "--cluster",
        &url(ports[0]),
        "--cluster_name",
        "t",
        "--routes",
        &url(ports[1]),
    ]);
    let _b = ServerProcess::beaver(&[
        "--cluster",
        &url(ports[1]),
        "--cluster_name",
        "t",
        "--routes",
        &url(ports[0]),
    ]);
    rt().block_on(async {
        let client = async_nats::connect(a.url()).await.unwrap();
        let err = client.request("$JS.API.INFO", "".into()).await.unwrap_err();
        assert_eq!(err.kind(), async_nats::RequestErrorKind::NoResponders);
    });
}

/// A reload that adds a route dials it, and one that removes it closes it
/// (`Route Removed`), with nats-server and with beaver as the other server.
#[cfg(unix)]
#[tokio::test]
async fn routes_added_and_removed_by_a_reload() {
    for kind in [Kind::Nats, Kind::Beaver] {
        let Some(peer) = node(kind, "P", &[]) else {
            continue;
        };
        let conf = std::env::temp_dir().join(format!(
            "beaver-routes-reload-{}-{kind:?}.conf",
            std::process::id()
        ));
        let cluster =
            |routes: &str| format!("cluster {{\n  name: t\n  listen: 127.0.0.1:-1\n{routes}}}\n");
        std::fs::write(&conf, cluster("")).unwrap();
        let a = ServerProcess::beaver(&["-n", "A", "-c", conf.to_str().unwrap()]);
        let url = format!("nats-route://127.0.0.1:{}", peer.route_port);
        std::fs::write(&conf, cluster(&format!("  routes = [ {url} ]\n"))).unwrap();
        let hup = || {
            let ok = std::process::Command::new("kill")
                .args(["-HUP", &a.pid().to_string()])
                .status()
                .unwrap()
                .success();
            assert!(ok);
        };
        hup();
        assert!(
            a.wait_for_log("Reloaded: cluster routes"),
            "{:#?}",
            a.log_lines()
        );
        // Messages cross both ways.
        let clients = [
            async_nats::connect(a.url()).await.unwrap(),
            connect(&peer).await,
        ];
        propagate(&clients, 0).await;
        propagate(&clients, 1).await;
        std::fs::write(&conf, cluster("")).unwrap();
        hup();
        assert!(
            a.wait_for_log(&format!("Removed route {url}")),
            "{:#?}",
            a.log_lines()
        );
        assert!(
            a.wait_for_log("Router connection closed: Route Removed"),
            "{:#?}",
            a.log_lines()
        );
        let _ = std::fs::remove_file(&conf);
    }
}

/// A route removed and added again by reloads in a tight loop keeps one dialer: the old
/// one carries on when its URL comes back, instead of a new one joining it each time (two
/// dialers to one URL make duplicate routes, and threads that never end).
#[cfg(target_os = "linux")]
#[test]
fn a_route_removed_and_readded_by_reloads_keeps_one_dialer() {
    // A port where nobody listens: the dialer keeps trying.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "nats-route://127.0.0.1:{}",
        dead.local_addr().unwrap().port()
    );
    drop(dead);
    let conf =
        std::env::temp_dir().join(format!("beaver-routes-toggle-{}.conf", std::process::id()));
    let cluster =
        |routes: &str| format!("cluster {{\n  name: t\n  listen: 127.0.0.1:-1\n{routes}}}\n");
    let with = cluster(&format!("  routes = [ {url} ]\n"));
    std::fs::write(&conf, &with).unwrap();
    let a = ServerProcess::beaver(&["-n", "A", "-c", conf.to_str().unwrap()]);
    let count = |needle: &str| a.log_lines().iter().filter(|l| l.contains(needle)).count();
    let wait_count = |needle: &str, n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while count(needle) < n {
            assert!(std::time::Instant::now() < deadline, "{:#?}", a.log_lines());
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    let hup = || {
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &a.pid().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    };
    for i in 1..=5 {
        std::fs::write(&conf, cluster("")).unwrap();
        hup();
        wait_count(&format!("Removed route {url}"), i);
        std::fs::write(&conf, &with).unwrap();
        hup();
        wait_count("Reloaded: cluster routes", 2 * i);
    }
    let dialers = std::fs::read_dir(format!("/proc/{}/task", a.pid()))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("beaver-route-di"))
        })
        .count();
    assert_eq!(dialers, 1, "one dialer for the one configured route");
    let _ = std::fs::remove_file(&conf);
}
