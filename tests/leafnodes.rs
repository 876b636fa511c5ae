//! Leafnodes: beaver as a leaf of a hub (`leafnodes { remotes }`) and as the hub leafs
//! connect to (`leafnodes { listen }`), with Debian's nats-server 2.9.10 and with beaver,
//! on loopback with random ports (each hub's leafnode port is read from its "Listening for
//! leafnode connections" log line); and the exact bytes beaver exchanges with a scripted
//! peer on either side.
//!
//! Synchronisation: no fixed sleeps. Interest propagates asynchronously, so a test first
//! waits, with a deadline, until a probe subscription made *after* the test's subscriptions
//! on one server is reached from the other: `LS+` lines travel in order on a connection, so
//! the earlier interest has arrived too.

mod common;

use async_nats::{Client, HeaderMap};
use common::ServerProcess;
use futures::StreamExt;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Beaver,
    Nats,
}

/// A configuration file under the temp dir, removed when dropped.
struct Conf(std::path::PathBuf);

impl Conf {
    fn new(text: &str) -> Conf {
        let path = std::env::temp_dir().join(format!(
            "beaver-leaf-{}-{}.conf",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::write(&path, text).unwrap();
        Conf(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Conf {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A server of `kind` started with configuration `text` (`None`: nats-server is not
/// installed, and the test skips).
fn server(kind: Kind, text: &str) -> Option<(ServerProcess, Conf)> {
    let conf = Conf::new(text);
    let s = match kind {
        Kind::Beaver => ServerProcess::beaver(&["-c", conf.arg()]),
        Kind::Nats => ServerProcess::nats_server(&["-c", conf.arg()])?,
    };
    Some((s, conf))
}

/// A hub listening for leafs on a random loopback port; its leafnode port.
fn hub(kind: Kind, extra: &str) -> Option<(ServerProcess, Conf, u16)> {
    let (s, c) = server(
        kind,
        &format!("leafnodes {{\n  listen: \"127.0.0.1:-1\"\n{extra}}}\n"),
    )?;
    let port = leaf_port_of(&s);
    Some((s, c, port))
}

/// A leaf soliciting the hub at `port`.
fn leaf(kind: Kind, port: u16) -> Option<(ServerProcess, Conf)> {
    server(
        kind,
        &format!(
            "leafnodes {{\n  reconnect: 1\n  remotes [ {{ url: \"nats-leaf://127.0.0.1:{port}\" }} ]\n}}\n"
        ),
    )
}

fn leaf_port_of(server: &ServerProcess) -> u16 {
    server.port_in_log("Listening for leafnode connections on ")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(s: &ServerProcess) -> Client {
    async_nats::ConnectOptions::new()
        .subscription_capacity(100_000)
        .connect(s.url())
        .await
        .expect("connect")
}

/// Waits until a message `from` publishes reaches a fresh subscription on `on` (so every
/// interest `on` created before has crossed).
async fn propagate(on: &Client, from: &Client) {
    let subject = format!("probe.{}", fastrand::u64(..));
    let mut sub = on.subscribe(subject.clone()).await.unwrap();
    common::round_trip(on).await;
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(Instant::now() < deadline, "interest never crossed");
        from.publish(subject.clone(), "p".into()).await.unwrap();
        from.flush().await.unwrap();
        if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(50), sub.next()).await {
            break;
        }
    }
    sub.unsubscribe().await.unwrap();
}

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

/// How many messages arrive on `sub` within a short while (after the sender's round trip).
async fn drain(sub: &mut async_nats::Subscriber) -> usize {
    let mut n = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(300), sub.next()).await {
        n += 1;
    }
    n
}

/// Waits until a request on `subject` from `c` gets "no responders" (the interest was
/// withdrawn across).
async fn until_no_responders(c: &Client, subject: &str) {
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "interest in {subject} never withdrawn"
        );
        let r = tokio::time::timeout(
            Duration::from_secs(2),
            c.request(subject.to_owned(), "x".into()),
        )
        .await;
        if let Ok(Err(e)) = r {
            if e.kind() == async_nats::RequestErrorKind::NoResponders {
                return;
            }
        }
    }
}

/// What every hub and leaf pair must do: messages both ways (wildcards, headers, a large
/// payload), queue groups preferring a local member, request/reply both ways, interest
/// withdrawn on UNSUB and on disconnect.
async fn exercise(hub: &ServerProcess, leaf: &ServerProcess) {
    let h = connect(hub).await;
    let l = connect(leaf).await;
    // Both ways, with wildcards.
    let mut on_hub = h.subscribe("up.*").await.unwrap();
    let mut on_leaf = l.subscribe("down.>").await.unwrap();
    propagate(&h, &l).await;
    propagate(&l, &h).await;
    for i in 0..50 {
        l.publish(format!("up.{i}"), format!("{i}").into())
            .await
            .unwrap();
        h.publish(format!("down.x.{i}"), format!("{i}").into())
            .await
            .unwrap();
    }
    l.flush().await.unwrap();
    h.flush().await.unwrap();
    let up = take(&mut on_hub, 50).await;
    let down = take(&mut on_leaf, 50).await;
    for i in 0..50 {
        assert_eq!(up[i].payload, i.to_string().as_bytes(), "in order");
        assert_eq!(down[i].subject.as_str(), format!("down.x.{i}"));
    }
    assert_eq!(drain(&mut on_hub).await, 0, "each message once");
    // Headers and a large payload cross unchanged.
    let payload: Vec<u8> = (0..512 * 1024).map(|i| (i % 251) as u8).collect();
    let mut headers = HeaderMap::new();
    headers.insert("Trace-Id", "42");
    l.publish_with_headers("up.big", headers, payload.clone().into())
        .await
        .unwrap();
    l.flush().await.unwrap();
    let m = &take(&mut on_hub, 1).await[0];
    assert!(m.payload[..] == payload[..], "payload unchanged");
    assert_eq!(
        m.headers
            .as_ref()
            .and_then(|h| h.get("Trace-Id"))
            .map(|v| v.as_str()),
        Some("42")
    );
    // Queue groups: a local member is preferred on either side.
    let mut q_hub = h.queue_subscribe("work", "w".into()).await.unwrap();
    let mut q_leaf = l.queue_subscribe("work", "w".into()).await.unwrap();
    propagate(&h, &l).await;
    propagate(&l, &h).await;
    for i in 0..20 {
        l.publish("work", format!("l{i}").into()).await.unwrap();
        h.publish("work", format!("h{i}").into()).await.unwrap();
    }
    l.flush().await.unwrap();
    h.flush().await.unwrap();
    let from_leaf = take(&mut q_leaf, 20).await;
    let from_hub = take(&mut q_hub, 20).await;
    assert!(
        from_leaf.iter().all(|m| m.payload.starts_with(b"l")),
        "leaf's own member"
    );
    assert!(
        from_hub.iter().all(|m| m.payload.starts_with(b"h")),
        "hub's own member"
    );
    assert_eq!(drain(&mut q_hub).await + drain(&mut q_leaf).await, 0);
    // Without a local member, the group's member across gets them, each once.
    q_leaf.unsubscribe().await.unwrap();
    common::round_trip(&l).await;
    for i in 0..20 {
        l.publish("work", format!("x{i}").into()).await.unwrap();
    }
    l.flush().await.unwrap();
    let across = take(&mut q_hub, 20).await;
    assert_eq!(across.len(), 20);
    assert_eq!(drain(&mut q_hub).await, 0);
    // Request/reply both ways.
    for (responder, requester) in [(&h, &l), (&l, &h)] {
        let subject = format!("svc.{}", fastrand::u64(..));
        let mut svc = responder.subscribe(subject.clone()).await.unwrap();
        propagate(responder, requester).await;
        let r = responder.clone();
        let task = tokio::spawn(async move {
            while let Some(m) = svc.next().await {
                if let Some(reply) = m.reply {
                    r.publish(reply, m.payload).await.unwrap();
                    r.flush().await.unwrap();
                }
            }
        });
        let reply = tokio::time::timeout(LIMIT, requester.request(subject, "ping".into()))
            .await
            .expect("in time")
            .expect("a reply");
        assert_eq!(&reply.payload[..], b"ping");
        task.abort();
    }
    // UNSUB withdraws the interest across: no responders.
    let mut gone = h.subscribe("gone.unsub").await.unwrap();
    propagate(&h, &l).await;
    gone.unsubscribe().await.unwrap();
    until_no_responders(&l, "gone.unsub").await;
    // So does a disconnect.
    let other = connect(leaf).await;
    let _s = other.subscribe("gone.closed").await.unwrap();
    propagate(&other, &h).await;
    drop(_s);
    drop(other);
    until_no_responders(&h, "gone.closed").await;
}

fn pair(hub_kind: Kind, leaf_kind: Kind) {
    let Some((hub, _hc, port)) = hub(hub_kind, "") else {
        return;
    };
    let Some((leaf, _lc)) = leaf(leaf_kind, port) else {
        return;
    };
    rt().block_on(exercise(&hub, &leaf));
}

#[test]
fn beaver_leaf_of_nats_server_hub() {
    pair(Kind::Nats, Kind::Beaver);
}

#[test]
fn nats_server_leaf_of_beaver_hub() {
    pair(Kind::Beaver, Kind::Nats);
}

#[test]
fn beaver_leaf_of_beaver_hub() {
    pair(Kind::Beaver, Kind::Beaver);
}

/// The hub goes away and comes back on the same port: the beaver leaf redials it (every
/// `reconnect`), and its interest and messages cross again.
#[test]
fn leaf_reconnects_after_hub_restart() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let hub_conf = format!("leafnodes {{ listen: \"127.0.0.1:{port}\" }}\n");
    let Some((mut hub1, _c1)) = server(Kind::Nats, &hub_conf) else {
        return;
    };
    let (leaf, _lc) = leaf(Kind::Beaver, port).unwrap();
    let rt = rt();
    rt.block_on(async {
        let l = connect(&leaf).await;
        let mut sub = l.subscribe("after.restart").await.unwrap();
        let h = connect(&hub1).await;
        propagate(&l, &h).await;
        drop(h);
        hub1.kill_now();
        let Some((hub2, _c2)) = server(Kind::Nats, &hub_conf) else {
            return;
        };
        let h = connect(&hub2).await;
        // The leaf's subscription made before the restart reaches the new hub.
        let deadline = Instant::now() + LIMIT;
        loop {
            assert!(Instant::now() < deadline, "the leaf never reconnected");
            h.publish("after.restart", "back".into()).await.unwrap();
            h.flush().await.unwrap();
            if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(100), sub.next()).await
            {
                assert_eq!(&m.payload[..], b"back");
                break;
            }
        }
        // And the other way.
        let mut up = h.subscribe("up.again").await.unwrap();
        propagate(&h, &l).await;
        l.publish("up.again", "x".into()).await.unwrap();
        l.flush().await.unwrap();
        assert_eq!(take(&mut up, 1).await[0].payload, "x");
    });
}

/// A scripted peer's socket: reads with a deadline, line by line or by exact bytes.
struct Peer {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Peer {
    fn new(s: TcpStream) -> Peer {
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        Peer { s, buf: Vec::new() }
    }

    fn fill(&mut self, deadline: Instant, what: &str) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; have {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        let mut chunk = [0u8; 65536];
        match self.s.read(&mut chunk) {
            Ok(0) => panic!(
                "closed while waiting for {what}; have {:?}",
                String::from_utf8_lossy(&self.buf)
            ),
            Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
    }

    /// The next line (without CR LF), skipping `PING` (answered) and `PONG`.
    fn line(&mut self) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..i + 2).collect();
                let line = String::from_utf8_lossy(&line[..i]).into_owned();
                match line.as_str() {
                    "PING" => self.send(b"PONG\r\n"),
                    "PONG" => {}
                    _ => return line,
                }
                continue;
            }
            self.fill(deadline, "a line");
        }
    }

    /// Exactly `want` next (after any PING/PONG lines).
    fn expect(&mut self, want: &[u8]) {
        let deadline = Instant::now() + LIMIT;
        loop {
            while self.buf.starts_with(b"PING\r\n") || self.buf.starts_with(b"PONG\r\n") {
                if self.buf.starts_with(b"PING") {
                    self.send(b"PONG\r\n");
                }
                self.buf.drain(..6);
            }
            if self.buf.len() >= want.len() {
                assert_eq!(
                    String::from_utf8_lossy(&self.buf[..want.len()]),
                    String::from_utf8_lossy(want)
                );
                self.buf.drain(..want.len());
                return;
            }
            self.fill(deadline, &String::from_utf8_lossy(want));
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// Sends `PING` and waits for a `PONG`: the server has handled everything sent before.
    /// Other lines received meanwhile stay for [`Peer::line`] and [`Peer::expect`].
    fn ping(&mut self) {
        self.send(b"PING\r\n");
        let deadline = Instant::now() + LIMIT;
        loop {
            let mut kept = Vec::new();
            let mut found = false;
            let mut rest = &self.buf[..];
            while let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
                let (line, after) = rest.split_at(i + 2);
                if !found && line == b"PONG\r\n" {
                    found = true;
                } else if line == b"PING\r\n" {
                    self.s.write_all(b"PONG\r\n").unwrap();
                } else {
                    kept.extend_from_slice(line);
                }
                rest = after;
            }
            kept.extend_from_slice(rest);
            self.buf = kept;
            if found {
                return;
            }
            self.fill(deadline, "PONG");
        }
    }
}

fn json_of(line: &str, op: &str) -> serde_json::Value {
    let json = line
        .strip_prefix(op)
        .unwrap_or_else(|| panic!("{op} expected, got {line:?}"));
    serde_json::from_str(json.trim()).unwrap()
}

/// beaver as a leaf of a scripted hub: the handshake, `LS+`/`LS-` for its clients' interest
/// (queue weights, UNSUB, disconnect), `LMSG` both ways, and loop detection, byte for byte
/// as nats-server 2.9.10 sends them.
#[test]
fn leaf_exact_bytes_with_scripted_hub() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (leaf, _lc) = leaf(Kind::Beaver, port).unwrap();
    let (s, _) = listener.accept().unwrap();
    let mut hub = Peer::new(s);
    let info = r#"{"server_id":"NHUB","server_name":"hub","version":"2.9.10","proto":1,"go":"go1.19.8","host":"127.0.0.1","port":7422,"headers":true,"auth_required":true,"max_payload":1048576,"ip":"127.0.0.1:7422","client_id":4,"nonce":"abc","info_on_connect":true,"leafnode_urls":["127.0.0.1:7422"]}"#;
    hub.send(format!("INFO {info} \r\n").as_bytes());
    let connect = hub.line();
    let c = json_of(&connect, "CONNECT ");
    let keys = common::json_keys_in_order(connect.strip_prefix("CONNECT ").unwrap());
    assert_eq!(
        keys,
        ["version", "tls_required", "server_id", "name", "headers"],
        "{connect}"
    );
    assert_eq!(c["version"], "2.9.10");
    assert_eq!(c["tls_required"], false);
    assert_eq!(c["headers"], true);
    // Nothing is sent before the hub's answer to CONNECT.
    let connect_info = r#"{"server_id":"NHUB","server_name":"hub","version":"2.9.10","proto":1,"go":"go1.19.8","host":"127.0.0.1","port":7422,"headers":true,"auth_required":true,"max_payload":1048576,"ip":"127.0.0.1:7422","client_id":4,"info_on_connect":true,"connect_info":true,"leafnode_urls":["127.0.0.1:7422"],"remote_account":"$G"}"#;
    hub.send(format!("INFO {connect_info} \r\nLS+ hub.sub\r\nLS+ $LDS.hubhubhub\r\n").as_bytes());
    let lds = hub.line();
    assert!(lds.starts_with("LS+ $LDS.") && lds.len() > 14, "{lds}");
    // A client of the leaf: its interest goes up, with queue weights.
    let mut c = leaf.raw();
    c.send(b"CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB foo 1\r\nSUB bar q 2\r\nSUB bar q 3\r\nSUB foo 4\r\n");
    c.sync();
    hub.expect(b"LS+ foo\r\nLS+ bar q 1\r\nLS+ bar q 2\r\n");
    // A message from the hub reaches the client; one from the client reaches the hub.
    let start = c.received.len();
    hub.send(b"LMSG foo r 2\r\nhi\r\nHMSG foo 12 14\r\nNATS/1.0\r\n\r\nho\r\n");
    let shown = common::show(&c.wait_frames(start, 3));
    assert!(shown.contains("MSG foo 1 r 2"), "{shown}");
    assert!(shown.contains("MSG foo 4 r 2"), "{shown}");
    assert!(shown.contains("HMSG foo 1 12 14"), "{shown}");
    c.send(b"PUB hub.sub 3\r\nabc\r\nPUB nobody 1\r\nx\r\n");
    c.sync();
    hub.expect(b"LMSG hub.sub 3\r\nabc\r\n");
    // A queue member on the hub: the leaf's local one is preferred; without it, the hub's.
    hub.send(b"LS+ work w 1\r\n");
    hub.ping();
    c.send(b"SUB work w 9\r\n");
    c.sync();
    hub.expect(b"LS+ work w 1\r\n");
    c.send(b"PUB work 1\r\na\r\n");
    let shown = common::show(&c.sync());
    assert!(shown.contains("MSG work 9 1"), "{shown}");
    c.send(b"UNSUB 9\r\nPUB work 1\r\nb\r\n");
    c.sync();
    hub.expect(b"LS- work w\r\nLMSG work | w 1\r\nb\r\n");
    // UNSUB of the last subscription on a subject withdraws it; a disconnect withdraws the
    // rest.
    c.send(b"UNSUB 1\r\n");
    c.sync();
    c.send(b"UNSUB 4\r\n");
    c.sync();
    hub.expect(b"LS- foo\r\n");
    // (One member leaves, then the other: the weight goes down before the group goes, as
    // nats-server updates per subscription.)
    drop(c);
    hub.expect(b"LS+ bar q 1\r\nLS- bar q\r\n");
    // Loop detection: our own $LDS. subject coming back.
    hub.send(format!("{lds}\r\n").as_bytes());
    let err = hub.line();
    assert_eq!(
        err,
        "-ERR 'Loop detected for leafnode account=\"$G\". Delaying attempt to reconnect for 30s'"
    );
}

/// beaver as a hub of a scripted leaf: its `INFO`, the answer to `CONNECT`, its interest
/// (`LS+` with queue weights, its `$LDS.` subject), messages both ways.
#[test]
fn hub_exact_bytes_with_scripted_leaf() {
    let (hub, _hc, port) = hub(Kind::Beaver, "").unwrap();
    let mut c = hub.raw();
    c.send(b"CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB foo 1\r\nSUB bar q 2\r\n");
    c.sync();
    let mut leaf = Peer::new(TcpStream::connect(("127.0.0.1", port)).unwrap());
    let info_line = leaf.line();
    let info = json_of(&info_line, "INFO ");
    let keys = common::json_keys_in_order(info_line.strip_prefix("INFO ").unwrap().trim());
    assert_eq!(
        keys,
        [
            "server_id",
            "server_name",
            "version",
            "proto",
            "go",
            "host",
            "port",
            "headers",
            "auth_required",
            "max_payload",
            "ip",
            "client_id",
            "nonce",
            "info_on_connect",
            "leafnode_urls"
        ],
        "{info_line}"
    );
    assert_eq!(info["port"], port);
    assert_eq!(info["info_on_connect"], true);
    assert_eq!(info["leafnode_urls"][0], format!("127.0.0.1:{port}"));
    leaf.send(b"CONNECT {\"version\":\"2.9.10\",\"tls_required\":false,\"server_id\":\"NLEAF\",\"name\":\"leaf\",\"headers\":true}\r\n");
    let answer = json_of(&leaf.line(), "INFO ");
    assert_eq!(answer["connect_info"], true);
    assert_eq!(answer["remote_account"], "$G");
    // Then the hub's interest, in any order, and its loop-detection subject.
    let mut got: Vec<String> = (0..3).map(|_| leaf.line()).collect();
    got.sort();
    assert_eq!(got[0], "LS+ $LDS.".to_owned() + &got[0][9..]);
    assert_eq!(&got[1..], ["LS+ bar q 1", "LS+ foo"]);
    // Messages both ways.
    let start = c.received.len();
    leaf.send(b"LS+ up\r\nLMSG foo 2\r\nhi\r\nLMSG bar | q 1\r\nx\r\n");
    leaf.ping();
    let shown = common::show(&c.wait_frames(start, 2));
    assert!(shown.contains("MSG foo 1 2"), "{shown}");
    assert!(shown.contains("MSG bar 2 1"), "{shown}");
    c.send(b"PUB up reply 3\r\nabc\r\n");
    c.sync();
    leaf.expect(b"LMSG up reply 3\r\nabc\r\n");
    // A leaf's own interest is not echoed back to it; a new client subscription is sent.
    c.send(b"SUB up 3\r\nUNSUB 1\r\n");
    c.sync();
    leaf.expect(b"LS+ up\r\nLS- foo\r\n");
}

/// `/leafz` lists the leafnode connections (`?subs=1`: their interest; `?acc=`: one
/// account's) and `/varz` counts them, on the hub and on the leaf, both beaver; and the
/// count goes back to 0 when the leaf leaves.
#[test]
fn leafz_and_varz_count_leafnodes() {
    let (hub, _hc) = server(
        Kind::Beaver,
        "http_port: -1\nleafnodes { listen: \"127.0.0.1:-1\" }\n",
    )
    .unwrap();
    let port = leaf_port_of(&hub);
    let (mut leaf, _lc) = server(
        Kind::Beaver,
        &format!(
            "http_port: -1\nleafnodes {{ remotes [ {{ url: \"nats-leaf://127.0.0.1:{port}\" }} ] }}\n"
        ),
    )
    .unwrap();
    let (hm, lm) = (hub.monitor_port(), leaf.monitor_port());
    let rt = rt();
    // Kept open until the end: the subscription must stay.
    let _clients = rt.block_on(async {
        let l = connect(&leaf).await;
        let h = connect(&hub).await;
        let s = l.subscribe("seen.on.hub").await.unwrap();
        propagate(&l, &h).await;
        (l, h, s)
    });
    let doc = common::poll_json(hm, "/leafz?subs=1", "the leaf's interest", |d| {
        d["leafs"][0]["subscriptions_list"]
            .as_array()
            .is_some_and(|l| l.iter().any(|s| s == "seen.on.hub"))
    });
    assert_eq!(doc["leafnodes"], 1);
    for k in [
        "in_msgs",
        "out_msgs",
        "in_bytes",
        "out_bytes",
        "subscriptions",
    ] {
        assert!(doc["leafs"][0][k].is_u64(), "{k}: {doc:#}");
    }
    assert_eq!(doc["leafs"][0]["account"], "$G");
    assert_eq!(doc["leafs"][0]["ip"], "127.0.0.1");
    assert_eq!(common::get_json(hm, "/leafz?acc=B")["leafnodes"], 0);
    let hv = common::get_json(hm, "/varz");
    let lv = common::get_json(lm, "/varz");
    assert_eq!(hv["leafnodes"], 1);
    assert_eq!(lv["leafnodes"], 1);
    // The `leaf` section, as nats-server 2.9.10 fills it.
    assert_eq!(
        hv["leaf"],
        serde_json::json!({"host": "127.0.0.1", "port": port, "auth_timeout": 2, "tls_timeout": 2})
    );
    assert_eq!(
        lv["leaf"],
        serde_json::json!({"remotes": [{"local_account": "$G", "urls": [format!("127.0.0.1:{port}")]}]})
    );
    let doc = common::get_json(lm, "/leafz");
    assert_eq!(doc["leafs"][0]["port"], port);
    // The leaf server goes: the hub forgets the connection and its interest.
    leaf.kill_now();
    common::poll_json(hm, "/varz", "the leaf gone", |d| d["leafnodes"] == 0);
    assert!(common::get_json(hm, "/leafz")["leafs"].is_null());
    rt.block_on(until_no_responders(&_clients.1, "seen.on.hub"));
}

/// A remote's `deny_imports` and `deny_exports`, against a scripted hub: the denied
/// imports go out as `deny_pub`, our interest in them is not sent and messages on them are
/// dropped; the hub's interest in denied exports is not taken (a wildcard's deliveries are
/// filtered), so nothing on them crosses.
#[test]
fn remote_deny_imports_and_exports() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (leaf, _lc) = server(
        Kind::Beaver,
        &format!(
            "leafnodes {{ remotes [ {{ url: \"nats-leaf://127.0.0.1:{port}\", \
             deny_imports: [\"priv.>\"], deny_exports: \"secret.>\" }} ] }}\n"
        ),
    )
    .unwrap();
    let (s, _) = listener.accept().unwrap();
    let mut hub = Peer::new(s);
    hub.send(b"INFO {\"server_id\":\"NHUB\",\"client_id\":1,\"leafnode_urls\":[]} \r\n");
    let c = json_of(&hub.line(), "CONNECT ");
    assert_eq!(c["deny_pub"], serde_json::json!(["priv.>"]));
    let lds = hub.line();
    assert!(lds.starts_with("LS+ $LDS."), "{lds}");
    let mut c = leaf.raw();
    c.send(b"CONNECT {\"verbose\":false}\r\nSUB priv.x 1\r\nSUB ok.x 2\r\n");
    c.sync();
    hub.expect(b"LS+ ok.x\r\n");
    hub.send(b"LS+ secret.a\r\nLS+ >\r\n");
    hub.ping();
    c.send(b"PUB secret.a 1\r\na\r\nPUB secret.b 1\r\nb\r\nPUB open.c 1\r\nc\r\n");
    c.sync();
    hub.expect(b"LMSG open.c 1\r\nc\r\n");
    let start = c.received.len();
    hub.send(b"LMSG priv.x 1\r\nz\r\nLMSG ok.x 1\r\ny\r\n");
    let shown = common::show(&c.wait_frames(start, 1));
    assert_eq!(shown, "MSG ok.x 2 1\r\ny\r\n");
    c.sync();
    assert_eq!(
        common::show(&c.received[start..]),
        "MSG ok.x 2 1\r\ny\r\nPONG\r\n",
        "nothing on priv.x"
    );
}

/// Accounts across a leafnode connection: the hub binds each leaf to the account of the
/// user it authenticates as (`leafnodes { authorization { users } }`), the leaf binds its
/// side to the remote's `account`; messages stay in their accounts both ways. A leaf with
/// a bad password is refused.
fn accounts_across(hub_kind: Kind, leaf_kind: Kind) {
    let accounts = "accounts {\n  A { users [ { user: a, password: a } ] }\n  \
                    B { users [ { user: b, password: b } ] }\n}\n";
    let Some((hub, _hc)) = server(
        hub_kind,
        &format!(
            "{accounts}leafnodes {{\n  listen: \"127.0.0.1:-1\"\n  \
             authorization {{ users [ {{ user: la, password: pa, account: A }} ] }}\n}}\n"
        ),
    ) else {
        return;
    };
    let port = leaf_port_of(&hub);
    let Some((leaf, _lc)) = server(
        leaf_kind,
        &format!(
            "{accounts}leafnodes {{\n  reconnect: 1\n  \
             remotes [ {{ url: \"nats-leaf://la:pa@127.0.0.1:{port}\", account: B }} ]\n}}\n"
        ),
    ) else {
        return;
    };
    let as_user = |s: &ServerProcess, u: &str| {
        let url = s.url();
        let u = u.to_owned();
        async move {
            async_nats::ConnectOptions::with_user_and_password(u.clone(), u)
                .connect(url)
                .await
                .expect("connect")
        }
    };
    rt().block_on(async {
        // The hub's A and the leaf's B are one account across the connection.
        let hub_a = as_user(&hub, "a").await;
        let hub_b = as_user(&hub, "b").await;
        let leaf_a = as_user(&leaf, "a").await;
        let leaf_b = as_user(&leaf, "b").await;
        let mut got_hub_a = hub_a.subscribe("x").await.unwrap();
        let mut got_hub_b = hub_b.subscribe("x").await.unwrap();
        let mut got_leaf_b = leaf_b.subscribe("y").await.unwrap();
        let mut got_leaf_a = leaf_a.subscribe("y").await.unwrap();
        propagate(&hub_a, &leaf_b).await;
        propagate(&leaf_b, &hub_a).await;
        leaf_b.publish("x", "up".into()).await.unwrap();
        leaf_a.publish("x", "not A's".into()).await.unwrap();
        hub_a.publish("y", "down".into()).await.unwrap();
        hub_b.publish("y", "not B's".into()).await.unwrap();
        for c in [&leaf_a, &leaf_b, &hub_a, &hub_b] {
            c.flush().await.unwrap();
        }
        assert_eq!(take(&mut got_hub_a, 1).await[0].payload, "up");
        assert_eq!(take(&mut got_leaf_b, 1).await[0].payload, "down");
        assert_eq!(drain(&mut got_hub_a).await, 0);
        assert_eq!(drain(&mut got_leaf_b).await, 0);
        assert_eq!(
            drain(&mut got_hub_b).await,
            0,
            "B on the hub is another account"
        );
        assert_eq!(
            drain(&mut got_leaf_a).await,
            0,
            "A on the leaf is another account"
        );
    });
    // A bad password: refused.
    let mut bad = Peer::new(TcpStream::connect(("127.0.0.1", port)).unwrap());
    let _info = bad.line();
    bad.send(b"CONNECT {\"version\":\"2.9.10\",\"user\":\"la\",\"pass\":\"nope\",\"tls_required\":false,\"server_id\":\"NX\",\"name\":\"x\",\"headers\":true}\r\n");
    assert_eq!(bad.line(), "-ERR 'Authorization Violation'");
}

#[test]
fn beaver_hub_binds_a_nats_server_leaf_to_its_account() {
    accounts_across(Kind::Beaver, Kind::Nats);
}

#[test]
fn beaver_leaf_binds_its_account_on_a_nats_server_hub() {
    accounts_across(Kind::Nats, Kind::Beaver);
}

/// A leaf of one node of a two-node cluster: its interest reaches the other node through
/// the route, the other node's reaches the leaf, and messages cross both ways (leaf → hub
/// node → route → other node, and back), each once; request/reply from the far node.
fn leaf_of_a_cluster(cluster: Kind, leaf_kind: Kind) {
    let Some((a, _ac)) = server(
        cluster,
        "cluster { name: c, listen: \"127.0.0.1:-1\" }\nleafnodes { listen: \"127.0.0.1:-1\" }\n",
    ) else {
        return;
    };
    let route = a.port_in_log("Listening for route connections on ");
    let Some((b, _bc)) = server(
        cluster,
        &format!(
            "cluster {{ name: c, listen: \"127.0.0.1:-1\", routes: [\"nats://127.0.0.1:{route}\"] }}\n"
        ),
    ) else {
        return;
    };
    let Some((leaf, _lc)) = leaf(leaf_kind, leaf_port_of(&a)) else {
        return;
    };
    rt().block_on(async {
        let cb = connect(&b).await;
        let cl = connect(&leaf).await;
        let mut on_b = cb.subscribe("to.b").await.unwrap();
        let mut on_leaf = cl.subscribe("to.leaf").await.unwrap();
        propagate(&cb, &cl).await;
        propagate(&cl, &cb).await;
        cl.publish("to.b", "1".into()).await.unwrap();
        cb.publish("to.leaf", "2".into()).await.unwrap();
        cl.flush().await.unwrap();
        cb.flush().await.unwrap();
        assert_eq!(take(&mut on_b, 1).await[0].payload, "1");
        assert_eq!(take(&mut on_leaf, 1).await[0].payload, "2");
        assert_eq!(
            drain(&mut on_b).await + drain(&mut on_leaf).await,
            0,
            "once"
        );
        // Request/reply from the far node to a responder on the leaf.
        let mut svc = cl.subscribe("svc.leaf").await.unwrap();
        propagate(&cl, &cb).await;
        let r = cl.clone();
        let task = tokio::spawn(async move {
            while let Some(m) = svc.next().await {
                if let Some(reply) = m.reply {
                    r.publish(reply, m.payload).await.unwrap();
                    r.flush().await.unwrap();
                }
            }
        });
        let reply = tokio::time::timeout(LIMIT, cb.request("svc.leaf", "ping".into()))
            .await
            .expect("in time")
            .expect("a reply");
        assert_eq!(&reply.payload[..], b"ping");
        task.abort();
    });
}

#[test]
fn nats_server_leaf_of_a_beaver_cluster() {
    leaf_of_a_cluster(Kind::Beaver, Kind::Nats);
}

#[test]
fn beaver_leaf_of_a_nats_server_cluster() {
    leaf_of_a_cluster(Kind::Nats, Kind::Beaver);
}

#[test]
fn beaver_leaf_of_a_beaver_cluster() {
    leaf_of_a_cluster(Kind::Beaver, Kind::Beaver);
}

/// Two servers that are each other's leaf and hub: the interest goes round, and a server
/// that receives its own `$LDS.` subject back closes the connection with nats-server's
/// error ("Loop detected for leafnode account=...").
fn leaf_loop(other: Kind) {
    let held: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ports: Vec<u16> = held
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    drop(held);
    let conf = |me: u16, them: u16| {
        format!(
            "leafnodes {{\n  listen: \"127.0.0.1:{me}\"\n  reconnect: 1\n  \
             remotes [ {{ url: \"nats-leaf://127.0.0.1:{them}\" }} ]\n}}\n"
        )
    };
    let (x, _xc) = server(Kind::Beaver, &conf(ports[0], ports[1])).unwrap();
    let Some((y, _yc)) = server(other, &conf(ports[1], ports[0])) else {
        return;
    };
    let deadline = Instant::now() + LIMIT;
    let seen = |s: &ServerProcess| {
        s.log_lines()
            .iter()
            .any(|l| l.contains("Loop detected for leafnode account=\"$G\""))
    };
    while !(seen(&x) || seen(&y)) {
        assert!(Instant::now() < deadline, "no loop detected");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn leaf_loop_detected_between_beavers() {
    leaf_loop(Kind::Beaver);
}

#[test]
fn leaf_loop_detected_with_nats_server() {
    leaf_loop(Kind::Nats);
}

/// Without a leafnode `authorization`, a leaf that sends a user logs in as a client would,
/// against the server's users (binding to the user's account; a bad password is refused),
/// and one that sends none binds to `$G` even though clients must authenticate: what
/// nats-server 2.9.10 does, checked against it.
#[test]
fn leaf_logs_in_as_a_client_user_without_leafnode_authorization() {
    for kind in [Kind::Beaver, Kind::Nats] {
        let Some((hub, _hc)) = server(
            kind,
            "accounts { A { users [ { user: a, password: a } ] } }\n\
             leafnodes { listen: \"127.0.0.1:-1\" }\n",
        ) else {
            return;
        };
        let port = leaf_port_of(&hub);
        let connect = |creds: &str| {
            let mut p = Peer::new(TcpStream::connect(("127.0.0.1", port)).unwrap());
            let _info = p.line();
            p.send(
                format!(
                    "CONNECT {{\"version\":\"2.9.10\",{creds}\"tls_required\":false,\
                     \"server_id\":\"NX\",\"name\":\"x\",\"headers\":true}}\r\n"
                )
                .as_bytes(),
            );
            p.line()
        };
        let ok = connect("\"user\":\"a\",\"pass\":\"a\",");
        assert_eq!(json_of(&ok, "INFO ")["remote_account"], "A", "{}", hub.name);
        assert_eq!(
            json_of(&connect(""), "INFO ")["remote_account"],
            "$G",
            "{}",
            hub.name
        );
        assert_eq!(
            connect("\"user\":\"a\",\"pass\":\"b\","),
            "-ERR 'Authorization Violation'",
            "{}",
            hub.name
        );
    }
}
