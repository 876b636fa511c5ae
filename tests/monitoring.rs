//! Integration tests of the monitoring endpoints (`-m`): the real `beaver` binary on random
//! loopback ports, traffic from real clients (raw protocol bytes, and async-nats), then each
//! endpoint read over HTTP and its counters checked for exact values. The last tests run the
//! same traffic against Debian's nats-server (the reference) and compare field names and
//! the values that must agree.
//!
//! The standard traffic ([`traffic`]):
//! - `subber` subscribes `foo` (sid 1), `foo` in queue group `q` (sid 2), `bar` (sid 3,
//!   then unsubscribed) and `baz` (sid 4, auto-unsubscribe after 2 messages);
//! - `pubber` publishes `foo` "hello" (5 bytes), `foo` with headers (12 header bytes, 17 in
//!   all), `nobody` "abc" (3 bytes, no subscriber) and `baz` "hi" (2 bytes);
//! - `leaver` subscribes `x`, then disconnects;
//! - `bad` sends an unknown operation and is closed for it (Protocol Violation).
//!
//! So: 4 messages in (5 + 17 + 3 + 2 = 27 bytes), 5 delivered (`foo` twice per message, to
//! the plain and the queue subscription: 2 × 5 + 2 × 17, and `baz` once: 46 bytes), as
//! nats-server counts them (payload bytes, headers included, not protocol lines).
//!
//! Counters are updated by server threads other than the one that answers a client, so a
//! client's reply does not order them before a monitoring read: the tests poll an endpoint
//! (bounded by [`common::WAIT`]) until a counter reaches its expected value, and fail showing
//! the last document otherwise. Once the sums in `/varz` have reached their final values,
//! every per-connection counter has too (they only grow, and `/varz` is their sum).

mod common;

use common::{get_json, http_get, poll_json, Frame, Raw, ServerProcess, WAIT};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

/// Messages received from clients by the standard traffic.
const IN_MSGS: u64 = 4;
/// Their payload bytes, headers included.
const IN_BYTES: u64 = 5 + 17 + 3 + 2;
/// Messages delivered by the standard traffic.
const OUT_MSGS: u64 = 5;
/// Their payload bytes, headers included.
const OUT_BYTES: u64 = 2 * 5 + 2 * 17 + 2;

/// A raw client that has sent `CONNECT` with `name`, lang `raw` and `version` (headers on,
/// so that it may send `HPUB`).
fn client(server: &ServerProcess, name: &str, version: &str) -> Raw {
    let mut raw = server.raw();
    let connect = format!(
        "CONNECT {{\"verbose\":false,\"pedantic\":false,\"headers\":true,\
         \"name\":\"{name}\",\"lang\":\"raw\",\"version\":\"{version}\"}}\r\n"
    );
    let got = raw.exchange(connect.as_bytes());
    assert_eq!(got, vec![Frame::Pong], "CONNECT accepted");
    raw
}

/// The connection id the server gave `raw` (in its `INFO`).
fn cid(raw: &Raw) -> u64 {
    raw.info["client_id"].as_u64().expect("INFO has client_id")
}

/// The local port of `raw` (the `port` `/connz` shows).
fn local_port(raw: &Raw) -> u16 {
    raw.stream.local_addr().expect("local address").port()
}

/// The clients the standard traffic leaves open.
struct Traffic {
    subber: Raw,
    pubber: Raw,
}

/// Generates the standard traffic (see the module docs) and waits until `subber` has
/// received its 5 messages and `leaver` and `bad` are closed on the client side (`bad` once
/// the server has recorded `leaver` closed). `bad`'s departure from the server is not
/// awaited here.
fn traffic(server: &ServerProcess) -> Traffic {
    let mut subber = client(server, "subber", "1.0");
    subber.exchange(
        b"SUB foo 1\r\nSUB foo q 2\r\nSUB bar 3\r\nUNSUB 3\r\nSUB baz 4\r\nUNSUB 4 2\r\n",
    );
    let mut pubber = client(server, "pubber", "2.0");
    let from = subber.received.len();
    pubber.exchange(
        b"PUB foo 5\r\nhello\r\nHPUB foo 12 17\r\nNATS/1.0\r\n\r\nworld\r\n\
          PUB nobody 3\r\nabc\r\nPUB baz 2\r\nhi\r\n",
    );
    let mut got: Vec<Frame> = subber.wait_frames(from, 5);
    // Two subscriptions of one connection get a message in an undefined order (nats-server
    // iterates a Go map).
    got.sort();
    let msg = |line: &str, payload: &[u8]| Frame::Msg(line.into(), payload.to_vec());
    let mut want = vec![
        msg("MSG foo 1 5", b"hello"),
        msg("MSG foo 2 5", b"hello"),
        msg("HMSG foo 1 12 17", b"NATS/1.0\r\n\r\nworld"),
        msg("HMSG foo 2 12 17", b"NATS/1.0\r\n\r\nworld"),
        msg("MSG baz 4 2", b"hi"),
    ];
    want.sort();
    assert_eq!(got, want, "subber's deliveries");

    // Everything the server sent `leaver` has been read, so closing sends a FIN, not a
    // reset: nats-server calls that "Client Closed".
    let mut leaver = client(server, "leaver", "3.0");
    leaver.exchange(b"SUB x 1\r\n");
    let closed_before = closed_total(server);
    drop(leaver);
    // `bad` comes after `leaver` has gone, so their stop times are in that order (tests sort
    // by them).
    poll_json(
        server.monitor_port(),
        "/connz?state=closed",
        "leaver to be closed",
        |d| d["total"].as_u64() > Some(closed_before),
    );

    let mut bad = client(server, "bad", "4.0");
    bad.send(b"FOO\r\n");
    let frames = bad.until_closed();
    assert_eq!(
        frames,
        vec![Frame::Err("-ERR 'Unknown Protocol Operation'".into())]
    );
    Traffic { subber, pubber }
}

/// How many closed connections `/connz?state=closed` counts now.
fn closed_total(server: &ServerProcess) -> u64 {
    get_json(server.monitor_port(), "/connz?state=closed")["total"]
        .as_u64()
        .unwrap_or(0)
}

/// Polls `path` until every field of `expected` (an object) has its value there.
fn poll_fields(port: u16, path: &str, expected: Value) -> Value {
    let want = expected.as_object().expect("an object").clone();
    poll_json(port, path, &expected.to_string(), |doc| {
        want.iter().all(|(k, v)| &doc[k] == v)
    })
}

/// The fields `names` of `doc`, as an object (for exact comparisons with `json!`).
fn pick(doc: &Value, names: &[&str]) -> Value {
    Value::Object(
        names
            .iter()
            .map(|n| (n.to_string(), doc[*n].clone()))
            .collect(),
    )
}

/// The `/varz` counters the tests check.
const VARZ_COUNTERS: [&str; 8] = [
    "connections",
    "total_connections",
    "subscriptions",
    "slow_consumers",
    "in_msgs",
    "out_msgs",
    "in_bytes",
    "out_bytes",
];

/// A beaver with monitoring on a random port, and that port.
fn beaver() -> (ServerProcess, u16) {
    let server = ServerProcess::beaver(&["-m", "-1"]);
    let port = server.monitor_port();
    (server, port)
}

/// The open and closed connections of `/connz` (with query `query`), by cid.
fn conns_by_cid(doc: &Value) -> BTreeMap<u64, Value> {
    doc["connections"]
        .as_array()
        .expect("connections is an array")
        .iter()
        .map(|c| (c["cid"].as_u64().expect("cid"), c.clone()))
        .collect()
}

/// The cids of `/connz`'s `connections`, in order.
fn cids(doc: &Value) -> Vec<u64> {
    doc["connections"]
        .as_array()
        .expect("connections is an array")
        .iter()
        .map(|c| c["cid"].as_u64().expect("cid"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// /varz
// ---------------------------------------------------------------------------------------

#[test]
fn varz_counts_traffic_exactly_and_goes_back_down() {
    let (server, port) = beaver();
    let zero = json!({
        "connections": 0, "total_connections": 0, "subscriptions": 0, "slow_consumers": 0,
        "in_msgs": 0, "out_msgs": 0, "in_bytes": 0, "out_bytes": 0,
    });
    assert_eq!(pick(&get_json(port, "/varz"), &VARZ_COUNTERS), zero);

    let mut t = traffic(&server);
    // `leaver` and `bad` gone: 2 open of 4; foo, foo q and baz (1 of its 2 left) remain.
    let expected = json!({
        "connections": 2, "total_connections": 4, "subscriptions": 3, "slow_consumers": 0,
        "in_msgs": IN_MSGS, "out_msgs": OUT_MSGS, "in_bytes": IN_BYTES, "out_bytes": OUT_BYTES,
    });
    let v = poll_fields(port, "/varz", expected.clone());
    assert_eq!(pick(&v, &VARZ_COUNTERS), expected);

    // The settings and identity fields.
    assert_eq!(v["port"], server.port);
    assert_eq!(v["host"], "127.0.0.1");
    assert_eq!(v["http_host"], "127.0.0.1");
    assert_eq!(v["http_port"], -1, "as configured, like nats-server");
    assert_eq!(v["server_id"], t.subber.info["server_id"]);
    assert_eq!(v["version"], t.subber.info["version"]);
    assert_eq!(v["proto"], 1);
    assert_eq!(v["max_payload"], 1024 * 1024);
    assert_eq!(v["max_pending"], 64 * 1024 * 1024);
    assert_eq!(v["max_control_line"], 4096);
    assert_eq!(v["ping_interval"], 120_000_000_000u64);
    assert_eq!(v["ping_max"], 2);
    assert_eq!(v["write_deadline"], 10_000_000_000u64);
    assert_eq!(v["max_connections"], 65536);
    assert_eq!(
        (v["routes"].clone(), v["remotes"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(v["start"], v["config_load_time"]);
    for time in ["start", "now", "config_load_time"] {
        let s = v[time].as_str().expect("a time string");
        assert!(s.ends_with('Z') && s.contains('T'), "{time}: {s}");
    }
    assert!(v["mem"].as_u64().is_some() && v["cores"].as_u64() >= Some(1));
    assert!(v["uptime"].as_str().is_some_and(|u| u.ends_with('s')));
    assert_eq!(v["beaver_version"], env!("CARGO_PKG_VERSION"));

    // UNSUB: one subscription fewer, nothing else changes.
    t.subber.exchange(b"UNSUB 1\r\n");
    let v = poll_fields(port, "/varz", json!({"subscriptions": 2}));
    assert_eq!(
        pick(&v, &VARZ_COUNTERS),
        json!({
            "connections": 2, "total_connections": 4, "subscriptions": 2, "slow_consumers": 0,
            "in_msgs": IN_MSGS, "out_msgs": OUT_MSGS, "in_bytes": IN_BYTES,
            "out_bytes": OUT_BYTES,
        })
    );

    // The second message on `baz` reaches its auto-unsubscribe limit: one subscription
    // fewer, one message more each way.
    let from = t.subber.received.len();
    t.pubber.exchange(b"PUB baz 2\r\nhi\r\n");
    assert_eq!(
        t.subber.wait_frames(from, 1),
        vec![Frame::Msg("MSG baz 4 2".into(), b"hi".to_vec())]
    );
    let v = poll_fields(port, "/varz", json!({"subscriptions": 1}));
    let (in_msgs, in_bytes) = (IN_MSGS + 1, IN_BYTES + 2);
    let (out_msgs, out_bytes) = (OUT_MSGS + 1, OUT_BYTES + 2);
    assert_eq!(
        pick(&v, &VARZ_COUNTERS),
        json!({
            "connections": 2, "total_connections": 4, "subscriptions": 1, "slow_consumers": 0,
            "in_msgs": in_msgs, "out_msgs": out_msgs, "in_bytes": in_bytes,
            "out_bytes": out_bytes,
        })
    );

    // Disconnecting removes the connection and its subscriptions; the traffic it had
    // stays counted.
    drop(t.subber);
    let v = poll_fields(port, "/varz", json!({"connections": 1}));
    assert_eq!(
        pick(&v, &VARZ_COUNTERS),
        json!({
            "connections": 1, "total_connections": 4, "subscriptions": 0, "slow_consumers": 0,
            "in_msgs": in_msgs, "out_msgs": out_msgs, "in_bytes": in_bytes,
            "out_bytes": out_bytes,
        })
    );
    drop(t.pubber);
    let v = poll_fields(port, "/varz", json!({"connections": 0}));
    assert_eq!(
        pick(&v, &VARZ_COUNTERS),
        json!({
            "connections": 0, "total_connections": 4, "subscriptions": 0, "slow_consumers": 0,
            "in_msgs": in_msgs, "out_msgs": out_msgs, "in_bytes": in_bytes,
            "out_bytes": out_bytes,
        })
    );
    // Every request so far was counted per path.
    let stats = &v["http_req_stats"];
    assert!(stats["/varz"].as_u64() >= Some(5), "{stats}");
}

/// A configuration file under Cargo's per-target temporary directory, removed when dropped.
struct TempConfig(PathBuf);

impl TempConfig {
    fn new(name: &str, text: &str) -> TempConfig {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("monitoring-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write the configuration");
        TempConfig(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("UTF-8 temporary path")
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn slow_consumer_is_counted_with_its_reason() {
    // A small pending limit, so that a subscriber that reads nothing becomes a slow consumer
    // once the socket buffers are full.
    let config = TempConfig::new("slow.toml", "max_pending = 65536\nmax_payload = 1024\n");
    let server = ServerProcess::beaver(&["-m", "-1", "-c", config.path()]);
    let port = server.monitor_port();
    let mut slow = client(&server, "slow", "1.0");
    slow.exchange(b"SUB s 1\r\n");
    let slow_cid = cid(&slow);
    let mut publisher = client(&server, "publisher", "1.0");
    let mut batch = Vec::new();
    for _ in 0..64 {
        batch.extend_from_slice(b"PUB s 1000\r\n");
        batch.extend_from_slice(&[b'x'; 1000]);
        batch.extend_from_slice(b"\r\n");
    }
    // `slow` never reads again. Publish until the server gives up on it (bounded: far more
    // than any loopback socket buffers hold, and [`WAIT`]).
    let deadline = Instant::now() + WAIT;
    let mut sent = 0usize;
    loop {
        publisher.exchange(&batch);
        sent += batch.len();
        let v = get_json(port, "/varz");
        if v["slow_consumers"] == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline && sent < 1 << 30,
            "no slow consumer after {sent} bytes: {v:#}"
        );
    }
    let v = poll_fields(port, "/varz", json!({"connections": 1}));
    assert_eq!(v["slow_consumers"], 1);
    assert_eq!(v["subscriptions"], 0);

    let closed = get_json(port, "/connz?state=closed");
    assert_eq!(cids(&closed), vec![slow_cid]);
    let reason = closed["connections"][0]["reason"]
        .as_str()
        .expect("a reason")
        .to_string();
    assert!(
        reason == "Slow Consumer (Pending Bytes)" || reason == "Slow Consumer (Write Deadline)",
        "{reason}"
    );
    let m = metrics(port);
    assert_eq!(m.value("beaver_slow_consumers_total", &[]), 1.0);
    assert_eq!(
        m.value("beaver_closed_connections_total", &[("reason", &reason)]),
        1.0
    );
    drop(slow);
}

#[test]
fn closed_ring_keeps_the_last_max_closed_clients() {
    let config = TempConfig::new("ring.toml", "max_closed_clients = 2\n");
    let server = ServerProcess::beaver(&["-m", "-1", "-c", config.path()]);
    let port = server.monitor_port();
    let mut closed = Vec::new();
    for i in 0..3 {
        let c = client(&server, &format!("c{i}"), "1.0");
        closed.push(cid(&c));
        drop(c);
        poll_fields(port, "/varz", json!({"connections": 0}));
    }
    let doc = get_json(port, "/connz?state=closed");
    assert_eq!(doc["total"], 2);
    assert_eq!(cids(&doc), closed[1..].to_vec(), "the oldest is dropped");
    // Every departure is still counted.
    let m = metrics(port);
    assert_eq!(
        m.value(
            "beaver_closed_connections_total",
            &[("reason", "Client Closed")]
        ),
        3.0
    );
}

// ---------------------------------------------------------------------------------------
// /connz
// ---------------------------------------------------------------------------------------

#[test]
fn connz_shows_each_connection_and_answers_every_query() {
    let (server, port) = beaver();
    let t = traffic(&server);
    poll_fields(
        port,
        "/varz",
        json!({"connections": 2, "in_msgs": IN_MSGS, "out_msgs": OUT_MSGS}),
    );
    let (sub_cid, pub_cid) = (cid(&t.subber), cid(&t.pubber));
    // Bytes count as pending until the writer has accounted for its write, which may come
    // just after the client read them.
    let doc = poll_json(port, "/connz", "nothing pending", |d| {
        d["connections"]
            .as_array()
            .is_some_and(|cs| cs.iter().all(|c| c["pending_bytes"] == 0))
    });
    assert_eq!(
        pick(
            &doc,
            &["server_id", "num_connections", "total", "offset", "limit"]
        ),
        json!({
            "server_id": t.subber.info["server_id"], "num_connections": 2, "total": 2,
            "offset": 0, "limit": 1024,
        })
    );
    assert_eq!(
        cids(&doc),
        vec![sub_cid, pub_cid],
        "sorted by cid by default"
    );
    let conns = conns_by_cid(&doc);
    let fields = [
        "cid",
        "kind",
        "type",
        "ip",
        "port",
        "pending_bytes",
        "in_msgs",
        "out_msgs",
        "in_bytes",
        "out_bytes",
        "subscriptions",
        "name",
        "lang",
        "version",
    ];
    assert_eq!(
        pick(&conns[&sub_cid], &fields),
        json!({
            "cid": sub_cid, "kind": "Client", "type": "nats", "ip": "127.0.0.1",
            "port": local_port(&t.subber), "pending_bytes": 0, "in_msgs": 0,
            "out_msgs": OUT_MSGS, "in_bytes": 0, "out_bytes": OUT_BYTES, "subscriptions": 3,
            "name": "subber", "lang": "raw", "version": "1.0",
        })
    );
    assert_eq!(
        pick(&conns[&pub_cid], &fields),
        json!({
            "cid": pub_cid, "kind": "Client", "type": "nats", "ip": "127.0.0.1",
            "port": local_port(&t.pubber), "pending_bytes": 0, "in_msgs": IN_MSGS,
            "out_msgs": 0, "in_bytes": IN_BYTES, "out_bytes": 0, "subscriptions": 0,
            "name": "pubber", "lang": "raw", "version": "2.0",
        })
    );
    for c in conns.values() {
        for present in ["start", "last_activity", "rtt", "uptime", "idle"] {
            assert!(c[present].is_string(), "{present} in {c}");
        }
        for absent in [
            "stop",
            "reason",
            "subscriptions_list",
            "subscriptions_list_detail",
        ] {
            assert!(
                c.get(absent).is_none(),
                "{absent} in an open connection: {c}"
            );
        }
    }

    // subs=1: subjects, in sid order. subs=detail: objects (no account for open ones, as
    // nats-server's newClientSubDetail).
    let doc = get_json(port, &format!("/connz?subs=1&cid={sub_cid}"));
    assert_eq!(
        doc["connections"][0]["subscriptions_list"],
        json!(["foo", "foo", "baz"])
    );
    let doc = get_json(port, &format!("/connz?subs=detail&cid={sub_cid}"));
    assert_eq!(
        doc["connections"][0]["subscriptions_list_detail"],
        json!([
            {"subject": "foo", "sid": "1", "msgs": 2, "cid": sub_cid},
            {"subject": "foo", "qgroup": "q", "sid": "2", "msgs": 2, "cid": sub_cid},
            {"subject": "baz", "sid": "4", "msgs": 1, "max": 2, "cid": sub_cid},
        ])
    );
    assert!(doc["connections"][0].get("subscriptions_list").is_none());

    // cid=N: that connection only, limit 1.
    let doc = get_json(port, &format!("/connz?cid={pub_cid}"));
    assert_eq!(cids(&doc), vec![pub_cid]);
    assert_eq!(
        pick(&doc, &["num_connections", "total", "limit"]),
        json!({"num_connections": 1, "total": 2, "limit": 1})
    );
    assert_eq!(
        cids(&get_json(port, "/connz?cid=999999")),
        Vec::<u64>::new()
    );

    // Sorting: descending by the counter, ties in cid order.
    for (sort, order) in [
        ("cid", [sub_cid, pub_cid]),
        ("start", [sub_cid, pub_cid]),
        ("subs", [sub_cid, pub_cid]),
        ("msgs_to", [sub_cid, pub_cid]),
        ("bytes_to", [sub_cid, pub_cid]),
        ("msgs_from", [pub_cid, sub_cid]),
        ("bytes_from", [pub_cid, sub_cid]),
        ("pending", [sub_cid, pub_cid]),
    ] {
        let doc = get_json(port, &format!("/connz?sort={sort}"));
        assert_eq!(cids(&doc), order.to_vec(), "sort={sort}");
    }
    // Time-based orders depend on timing: only check that they list everyone.
    for sort in ["last", "idle", "uptime"] {
        let mut got = cids(&get_json(port, &format!("/connz?sort={sort}")));
        got.sort_unstable();
        assert_eq!(got, vec![sub_cid, pub_cid], "sort={sort}");
    }

    // Paging.
    let doc = get_json(port, "/connz?limit=1&offset=1");
    assert_eq!(cids(&doc), vec![pub_cid]);
    assert_eq!(
        pick(&doc, &["num_connections", "total", "offset", "limit"]),
        json!({"num_connections": 1, "total": 2, "offset": 1, "limit": 1})
    );
    let doc = get_json(port, "/connz?offset=5");
    assert_eq!(
        (doc["num_connections"].clone(), doc["total"].clone()),
        (json!(0), json!(2))
    );

    // Closed connections: `leaver` (Client Closed), then `bad` (Protocol Violation).
    let doc = poll_fields(port, "/connz?state=closed&subs=1", json!({"total": 2}));
    let closed = doc["connections"].as_array().expect("connections").clone();
    assert_eq!(closed.len(), 2);
    let (leaver, bad) = (&closed[0], &closed[1]);
    assert_eq!(
        pick(
            leaver,
            &[
                "name",
                "version",
                "reason",
                "subscriptions",
                "subscriptions_list",
                "in_msgs"
            ]
        ),
        json!({
            "name": "leaver", "version": "3.0", "reason": "Client Closed", "subscriptions": 1,
            "subscriptions_list": ["x"], "in_msgs": 0,
        })
    );
    assert_eq!(
        pick(bad, &["name", "reason", "subscriptions"]),
        json!({"name": "bad", "reason": "Protocol Violation", "subscriptions": 0})
    );
    for c in &closed {
        assert!(c["stop"].is_string(), "a closed connection has stop: {c}");
    }
    let leaver_cid = leaver["cid"].as_u64().expect("cid");
    let bad_cid = bad["cid"].as_u64().expect("cid");
    let doc = get_json(port, "/connz?state=closed&subs=detail");
    assert_eq!(
        doc["connections"][0]["subscriptions_list_detail"],
        json!([{"account": "$G", "subject": "x", "sid": "1", "msgs": 0, "cid": leaver_cid}]),
        "closed connections' details name the account, as nats-server's newSubDetail"
    );
    let doc = get_json(port, "/connz?state=closed&sort=stop");
    assert_eq!(cids(&doc), vec![bad_cid, leaver_cid], "latest stop first");
    let doc = get_json(port, "/connz?state=closed&sort=reason");
    assert_eq!(
        cids(&doc),
        vec![leaver_cid, bad_cid],
        "reasons in text order"
    );
    let doc = get_json(port, &format!("/connz?state=closed&cid={leaver_cid}"));
    assert_eq!(cids(&doc), vec![leaver_cid]);
    let doc = get_json(port, "/connz?state=all");
    assert_eq!(doc["total"], 4);
    let mut all = cids(&doc);
    all.sort_unstable();
    let mut want = vec![sub_cid, pub_cid, leaver_cid, bad_cid];
    want.sort_unstable();
    assert_eq!(all, want);
    // `state` is case-insensitive and `any` is `all`, as in nats-server.
    assert_eq!(get_json(port, "/connz?state=ANY")["total"], 4);

    // Filters on what beaver does not have: users and other accounts match nothing.
    assert_eq!(get_json(port, "/connz?user=alice")["num_connections"], 0);
    assert_eq!(get_json(port, "/connz?acc=OTHER")["num_connections"], 0);
    assert_eq!(get_json(port, "/connz?acc=$G")["num_connections"], 2);
}

// ---------------------------------------------------------------------------------------
// /subsz
// ---------------------------------------------------------------------------------------

#[test]
fn subsz_counts_lists_and_tests_subjects() {
    let (server, port) = beaver();
    let t = traffic(&server);
    poll_fields(port, "/varz", json!({"connections": 2, "subscriptions": 3}));
    let sub_cid = cid(&t.subber);

    let doc = get_json(port, "/subsz");
    // Inserted: foo, foo q, bar, baz, x; removed: bar, x.
    assert_eq!(
        pick(&doc, &["num_subscriptions", "num_inserts", "num_removes"]),
        json!({"num_subscriptions": 3, "num_inserts": 5, "num_removes": 2})
    );
    for f in [
        "num_cache",
        "num_matches",
        "cache_hit_rate",
        "max_fanout",
        "avg_fanout",
    ] {
        assert!(doc[f].is_number(), "{f} in {doc}");
    }
    assert!(
        doc.get("subscriptions_list").is_none(),
        "no list without subs=1"
    );
    // The alias nats-server also serves.
    assert_eq!(get_json(port, "/subscriptionsz")["num_subscriptions"], 3);

    let doc = get_json(port, "/subsz?subs=1");
    assert_eq!(
        pick(&doc, &["server_id", "total", "offset", "limit"]),
        json!({"server_id": t.subber.info["server_id"], "total": 3, "offset": 0, "limit": 1024})
    );
    assert_eq!(
        doc["subscriptions_list"],
        json!([
            {"account": "$G", "subject": "foo", "sid": "1", "msgs": 2, "cid": sub_cid},
            {"account": "$G", "subject": "foo", "qgroup": "q", "sid": "2", "msgs": 2,
             "cid": sub_cid},
            {"account": "$G", "subject": "baz", "sid": "4", "msgs": 1, "max": 2,
             "cid": sub_cid},
        ])
    );

    // test=SUBJECT: the subscriptions a message on SUBJECT reaches.
    let doc = get_json(port, "/subsz?subs=1&test=foo");
    assert_eq!(doc["total"], 2);
    let sids: Vec<&Value> = doc["subscriptions_list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| &s["sid"])
        .collect();
    assert_eq!(sids, vec![&json!("1"), &json!("2")]);
    // None matching: the statistics alone, as nats-server 2.9.
    let doc = get_json(port, "/subsz?subs=1&test=nothing.here");
    assert!(doc.get("subscriptions_list").is_none(), "{doc}");
    assert_eq!(doc["num_subscriptions"], 3);
    // Paging.
    let doc = get_json(port, "/subsz?subs=1&offset=2&limit=5");
    assert_eq!(
        pick(&doc, &["total", "offset", "limit"]),
        json!({"total": 3, "offset": 2, "limit": 5})
    );
    assert_eq!(doc["subscriptions_list"][0]["subject"], "baz");
    // Another account has no subscriptions.
    assert_eq!(get_json(port, "/subsz?acc=OTHER")["num_subscriptions"], 0);

    drop(t.subber);
    let doc = poll_fields(port, "/subsz", json!({"num_subscriptions": 0}));
    assert_eq!(doc["num_removes"], 5);
}

// ---------------------------------------------------------------------------------------
// The other endpoints, errors and JSONP
// ---------------------------------------------------------------------------------------

#[test]
fn healthz_routez_index_and_unknown_paths() {
    let (server, port) = beaver();
    let r = http_get(port, "/healthz");
    assert_eq!(
        (r.status, r.content_type.as_str(), r.body.as_str()),
        (200, "application/json", "{\"status\":\"ok\"}")
    );
    let routez = get_json(port, "/routez");
    assert_eq!(
        pick(&routez, &["num_routes", "routes"]),
        json!({"num_routes": 0, "routes": []})
    );
    assert_eq!(routez["server_id"], server.raw().info["server_id"]);

    let r = http_get(port, "/");
    assert_eq!(r.status, 200);
    assert!(
        r.content_type.starts_with("text/html"),
        "{}",
        r.content_type
    );
    for link in ["varz", "connz", "subsz", "routez", "healthz", "metrics"] {
        assert!(
            r.body.contains(&format!("href=./{link}")),
            "the index links {link}"
        );
    }

    // The path is matched decoded, as Go's net/http does.
    assert_eq!(get_json(port, "/var%7A")["port"], server.port);
    for path in ["/nope", "/varz/extra", "/VARZ", "/accstatz"] {
        let r = http_get(port, path);
        assert_eq!(
            (r.status, r.body.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
    }
}

#[test]
fn bad_query_values_are_400_with_nats_server_messages() {
    let (_server, port) = beaver();
    for (path, message) in [
        (
            "/connz?limit=abc",
            "Error decoding int for 'limit': strconv.Atoi: parsing \"abc\": invalid syntax",
        ),
        (
            "/connz?offset=1.5",
            "Error decoding int for 'offset': strconv.Atoi: parsing \"1.5\": invalid syntax",
        ),
        (
            "/connz?cid=-1",
            "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"-1\": invalid syntax",
        ),
        ("/connz?sort=bogus", "invalid sorting option: bogus"),
        (
            "/connz?sort=stop",
            "sort by stop only valid on closed connections",
        ),
        (
            "/connz?sort=reason&state=all",
            "sort by reason only valid on closed connections",
        ),
        ("/connz?state=x", "Error decoding state for x"),
        (
            "/connz?subs=x",
            "Error decoding boolean for 'subs': strconv.ParseBool: parsing \"x\": invalid syntax",
        ),
        (
            "/subsz?subs=x",
            "Error decoding boolean for 'subs': strconv.ParseBool: parsing \"x\": invalid syntax",
        ),
        (
            "/subsz?test=foo.*",
            "invalid test subject, must be valid publish subject: foo.*",
        ),
        (
            "/routez?subs=zz",
            "Error decoding boolean for 'subs': strconv.ParseBool: parsing \"zz\": invalid syntax",
        ),
    ] {
        let r = http_get(port, path);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert_eq!(r.body.trim_end(), message, "{path}");
        assert!(r.content_type.starts_with("text/plain"), "{path}");
    }
    // Still serving after all that.
    assert_eq!(get_json(port, "/varz")["connections"], 0);
}

#[test]
fn jsonp_callback_wraps_the_document() {
    let (_server, port) = beaver();
    for path in ["/varz", "/connz", "/subsz", "/routez", "/healthz"] {
        let r = http_get(port, &format!("{path}?callback=update"));
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.content_type, "application/javascript", "{path}");
        let inner = r
            .body
            .strip_prefix("update(")
            .and_then(|b| b.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{path}: not wrapped: {}", r.body));
        let doc: Value = serde_json::from_str(inner).expect("JSON inside the callback");
        assert!(doc.is_object(), "{path}");
    }
    // beaver refuses callbacks that are not JavaScript names (nats-server echoes anything).
    let r = http_get(port, "/varz?callback=alert(1)");
    assert_eq!(r.status, 400);
}

// ---------------------------------------------------------------------------------------
// /metrics
// ---------------------------------------------------------------------------------------

/// A parsed `/metrics` exposition.
struct Metrics(prometheus_parse::Scrape);

impl Metrics {
    /// The value of the sample `name` with exactly the labels `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<f64> = self
            .0
            .samples
            .iter()
            .filter(|s| s.metric == name && s.labels.len() == labels.len())
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{name}: unexpected {other:?}"),
            })
            .collect();
        assert_eq!(found.len(), 1, "one sample {name} {labels:?}");
        found[0]
    }

    /// The type of `name`.
    fn kind(&self, name: &str) -> &'static str {
        let s = self
            .0
            .samples
            .iter()
            .find(|s| s.metric == name)
            .unwrap_or_else(|| panic!("no {name}"));
        match s.value {
            prometheus_parse::Value::Counter(_) => "counter",
            prometheus_parse::Value::Gauge(_) => "gauge",
            _ => "other",
        }
    }
}

/// `GET /metrics`, checked line by line against the text format and parsed with
/// prometheus-parse (which by itself skips lines it does not understand, so every line is
/// checked to be understood first).
fn metrics(port: u16) -> Metrics {
    let r = http_get(port, "/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert!(r.body.ends_with('\n'), "the exposition ends with a newline");
    let mut typed = BTreeSet::new();
    let mut samples = 0;
    for line in r.body.lines() {
        match prometheus_parse::LineInfo::parse(line) {
            prometheus_parse::LineInfo::Doc { .. } => {}
            prometheus_parse::LineInfo::Type {
                metric_name,
                sample_type,
                ..
            } => {
                assert!(
                    matches!(
                        sample_type,
                        prometheus_parse::SampleType::Counter | prometheus_parse::SampleType::Gauge
                    ),
                    "{line}"
                );
                assert!(typed.insert(metric_name), "one TYPE per family: {line}");
            }
            prometheus_parse::LineInfo::Sample {
                metric_name, value, ..
            } => {
                assert!(typed.contains(metric_name), "TYPE before {line}");
                assert!(value.parse::<f64>().is_ok(), "a number in {line}");
                samples += 1;
            }
            other => panic!("not exposition format: {line:?} ({other:?})"),
        }
    }
    let scrape = prometheus_parse::Scrape::parse(r.body.lines().map(|l| Ok(l.to_owned())))
        .expect("prometheus-parse reads it");
    assert_eq!(scrape.samples.len(), samples, "every sample parsed");
    Metrics(scrape)
}

#[test]
fn metrics_is_prometheus_text_with_the_varz_counters() {
    let (server, port) = beaver();
    let t = traffic(&server);
    poll_fields(
        port,
        "/varz",
        json!({"connections": 2, "in_msgs": IN_MSGS, "out_msgs": OUT_MSGS}),
    );
    let m = metrics(port);
    let id = t.subber.info["server_id"].as_str().expect("server_id");
    assert_eq!(
        m.value(
            "beaver_info",
            &[
                ("server_id", id),
                ("server_name", id),
                ("version", env!("CARGO_PKG_VERSION")),
                ("nats_version", "2.9.10"),
            ]
        ),
        1.0
    );
    for (name, kind, value) in [
        ("beaver_connections", "gauge", 2),
        ("beaver_connections_total", "counter", 4),
        ("beaver_subscriptions", "gauge", 3),
        ("beaver_slow_consumers_total", "counter", 0),
        ("beaver_in_msgs_total", "counter", IN_MSGS),
        ("beaver_out_msgs_total", "counter", OUT_MSGS),
        ("beaver_in_bytes_total", "counter", IN_BYTES),
        ("beaver_out_bytes_total", "counter", OUT_BYTES),
        ("beaver_subscription_inserts_total", "counter", 5),
        ("beaver_subscription_removes_total", "counter", 2),
    ] {
        assert_eq!(m.kind(name), kind, "{name}");
        assert_eq!(m.value(name, &[]), value as f64, "{name}");
    }
    // Per close reason: every reason is present, so that rates start at zero.
    let by_reason: BTreeMap<String, f64> =
        m.0.samples
            .iter()
            .filter(|s| s.metric == "beaver_closed_connections_total")
            .map(|s| {
                let reason = s.labels.get("reason").expect("a reason label").to_owned();
                match s.value {
                    prometheus_parse::Value::Counter(v) => (reason, v),
                    ref other => panic!("a counter: {other:?}"),
                }
            })
            .collect();
    assert_eq!(by_reason["Client Closed"], 1.0, "{by_reason:?}");
    assert_eq!(by_reason["Protocol Violation"], 1.0, "{by_reason:?}");
    assert_eq!(by_reason.values().sum::<f64>(), 2.0, "{by_reason:?}");
    for reason in [
        "Slow Consumer (Pending Bytes)",
        "Slow Consumer (Write Deadline)",
        "Stale Connection",
        "Maximum Message Payload Exceeded",
        "Server Shutdown",
    ] {
        assert_eq!(by_reason.get(reason), Some(&0.0), "{reason}");
    }
    for name in [
        "beaver_start_time_seconds",
        "beaver_uptime_seconds",
        "beaver_mem_bytes",
        "beaver_cpu_percent",
        "beaver_cores",
    ] {
        assert_eq!(m.kind(name), "gauge", "{name}");
    }
    // Monitoring requests by path, this one included.
    assert!(m.value("beaver_http_requests_total", &[("path", "/metrics")]) >= 1.0);
    assert!(m.value("beaver_http_requests_total", &[("path", "/varz")]) >= 1.0);

    // Connections leave: gauges go down, counters do not.
    drop(t);
    poll_fields(port, "/varz", json!({"connections": 0}));
    let m = metrics(port);
    assert_eq!(m.value("beaver_connections", &[]), 0.0);
    assert_eq!(m.value("beaver_subscriptions", &[]), 0.0);
    assert_eq!(m.value("beaver_in_msgs_total", &[]), IN_MSGS as f64);
    assert_eq!(m.value("beaver_out_bytes_total", &[]), OUT_BYTES as f64);
    assert_eq!(
        m.value(
            "beaver_closed_connections_total",
            &[("reason", "Client Closed")]
        ),
        3.0
    );
}

// ---------------------------------------------------------------------------------------
// With the official Rust client
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_nats_traffic_is_counted() {
    use futures::StreamExt;
    let (server, port) = beaver();
    let nc = tokio::time::timeout(
        WAIT,
        async_nats::ConnectOptions::new()
            .name("monitored")
            .connect(server.url()),
    )
    .await
    .expect("connects in time")
    .expect("async-nats connects");
    let mut sub = nc.subscribe("a.>").await.expect("subscribe");
    for i in 0..10u8 {
        nc.publish("a.b", vec![b'0' + i; 3].into())
            .await
            .expect("publish");
    }
    for _ in 0..10 {
        let msg = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("a message in time")
            .expect("the subscription is open");
        assert_eq!(msg.payload.len(), 3);
    }
    let varz = tokio::task::spawn_blocking(move || {
        poll_fields(
            port,
            "/varz",
            json!({
                "connections": 1, "total_connections": 1, "subscriptions": 1,
                "in_msgs": 10, "out_msgs": 10, "in_bytes": 30, "out_bytes": 30,
            }),
        )
    })
    .await
    .expect("the poll finishes");
    assert_eq!(varz["slow_consumers"], 0);
    let connz = tokio::task::spawn_blocking(move || get_json(port, "/connz?subs=1"))
        .await
        .expect("GET /connz");
    let c = &connz["connections"][0];
    assert_eq!(
        pick(c, &["name", "lang", "subscriptions", "subscriptions_list"]),
        json!({"name": "monitored", "lang": "rust", "subscriptions": 1,
               "subscriptions_list": ["a.>"]})
    );
    assert!(c["version"].as_str().is_some_and(|v| !v.is_empty()), "{c}");
    drop(sub);
    drop(nc);
    tokio::task::spawn_blocking(move || {
        poll_fields(port, "/varz", json!({"connections": 0, "subscriptions": 0}))
    })
    .await
    .expect("the poll finishes");
}

// ---------------------------------------------------------------------------------------
// Against nats-server
// ---------------------------------------------------------------------------------------

/// Every field path of `v` (`a.b`, `list[].c`), values excluded.
fn field_names(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(path.clone());
                field_names(x, &path, out);
            }
        }
        Value::Array(items) => {
            for x in items {
                field_names(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn names_of(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    field_names(v, "", &mut out);
    out
}

/// What one server showed after the standard traffic.
struct Observed {
    /// `/varz` counters, minus the baseline taken before the traffic.
    varz_deltas: Value,
    /// `/varz` settings.
    varz_settings: Value,
    /// `/subsz` counters, minus the baseline.
    subsz_deltas: Value,
    /// Per connection (by name): the fields that must agree.
    conns: BTreeMap<String, Value>,
    /// `/connz` paging fields.
    connz_top: Value,
    /// `/subsz?subs=1&test=foo` list, normalized (no cid, sorted by sid).
    subsz_foo: Value,
    /// Field names per endpoint.
    names: BTreeMap<&'static str, BTreeSet<String>>,
    /// After `subber` left: `/varz` counters minus the baseline.
    after_leaving: Value,
}

/// `a - b` for the numeric fields `names`.
fn deltas(a: &Value, b: &Value, names: &[&str]) -> Value {
    Value::Object(
        names
            .iter()
            .map(|n| {
                let d = a[*n].as_i64().expect("a number") - b[*n].as_i64().expect("a number");
                (n.to_string(), json!(d))
            })
            .collect(),
    )
}

/// The subscription details of `list`, without cids (they differ between servers), in sid
/// order.
fn normalized_subs(list: &Value) -> Value {
    let mut subs: Vec<Value> = list
        .as_array()
        .map(|a| a.to_vec())
        .unwrap_or_default()
        .into_iter()
        .map(|mut s| {
            if let Some(o) = s.as_object_mut() {
                o.remove("cid");
            }
            s
        })
        .collect();
    subs.sort_by_key(|s| s["sid"].as_str().unwrap_or_default().to_owned());
    Value::Array(subs)
}

const SUBSZ_COUNTERS: [&str; 3] = ["num_subscriptions", "num_inserts", "num_removes"];

/// Runs the standard traffic on `server` (monitoring on `port`) and reads what must agree.
fn observe(server: &ServerProcess) -> Observed {
    let port = server.monitor_port();
    let varz0 = get_json(port, "/varz");
    let subsz0 = get_json(port, "/subsz");
    let t = traffic(server);
    let varz = poll_json(port, "/varz", "the traffic's counters", |v| {
        deltas(v, &varz0, &["connections", "in_msgs", "out_msgs"])
            == json!({"connections": 2, "in_msgs": IN_MSGS, "out_msgs": OUT_MSGS})
    });
    poll_json(port, "/connz?state=closed", "two closed", |v| {
        v["total"] == 2
    });
    let connz = get_json(port, "/connz?state=all&subs=detail");
    let connz_list = get_json(port, "/connz?subs=1");
    let subsz = get_json(port, "/subsz");
    let subsz_foo = get_json(port, "/subsz?subs=1&test=foo");
    let routez = get_json(port, "/routez");
    let healthz = get_json(port, "/healthz");

    let conns = connz["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .map(|c| {
            let mut v = pick(
                c,
                &[
                    "kind",
                    "type",
                    "ip",
                    // Not `pending_bytes`: both servers count bytes as pending until the
                    // writer has accounted for its write, which may be after the client
                    // read them (nats-server showed 131 for `subber` after it had read
                    // all 131; and 35 or 41 for `bad`, either way in either server).
                    "in_msgs",
                    "out_msgs",
                    "in_bytes",
                    "out_bytes",
                    "subscriptions",
                    "name",
                    "lang",
                    "version",
                    "reason",
                ],
            );
            v["subscriptions_list_detail"] = normalized_subs(&c["subscriptions_list_detail"]);
            (c["name"].as_str().expect("named").to_owned(), v)
        })
        .collect();

    let mut names = BTreeMap::new();
    names.insert("varz", names_of(&varz));
    names.insert("connz", names_of(&connz));
    names.insert("connz?subs=1", names_of(&connz_list));
    names.insert("subsz", names_of(&subsz));
    names.insert("subsz?subs=1", names_of(&subsz_foo));
    names.insert("routez", names_of(&routez));
    names.insert("healthz", names_of(&healthz));

    let observed_varz = varz.clone();
    drop(t.subber);
    let left = poll_json(port, "/varz", "subber to leave", |v| {
        deltas(v, &varz0, &["connections"]) == json!({"connections": 1})
    });
    drop(t.pubber);
    Observed {
        varz_deltas: deltas(&observed_varz, &varz0, &VARZ_COUNTERS),
        varz_settings: pick(
            &observed_varz,
            &[
                "version",
                "proto",
                "host",
                "max_connections",
                "ping_interval",
                "ping_max",
                "http_host",
                "http_port",
                "http_base_path",
                "https_port",
                "auth_timeout",
                "max_control_line",
                "max_payload",
                "max_pending",
                "tls_timeout",
                "write_deadline",
                "routes",
                "remotes",
                "leafnodes",
                "cluster",
                "gateway",
                "leaf",
                "mqtt",
                "websocket",
                "jetstream",
            ],
        ),
        subsz_deltas: deltas(&subsz, &subsz0, &SUBSZ_COUNTERS),
        conns,
        connz_top: pick(&connz, &["num_connections", "total", "offset", "limit"]),
        subsz_foo: json!({
            "total": subsz_foo["total"],
            "list": normalized_subs(&subsz_foo["subscriptions_list"]),
        }),
        names,
        after_leaving: deltas(&left, &varz0, &VARZ_COUNTERS),
    }
}

/// nats-server fields beaver does not serve, and why.
const OMITTED: [(&str, &str); 2] = [
    ("varz.gomaxprocs", "no Go runtime"),
    (
        "varz.system_account",
        "beaver has no accounts, so no system account",
    ),
];

/// beaver fields nats-server does not have.
const ADDED: [&str; 1] = ["varz.beaver_version"];

#[test]
fn monitoring_agrees_with_nats_server() {
    let Some(reference) = ServerProcess::nats_server(&["-m", "-1"]) else {
        return;
    };
    let ours = ServerProcess::beaver(&["-m", "-1"]);
    let want = observe(&reference);
    let got = observe(&ours);

    assert!(
        want.names["varz"].len() > 40 && want.names["connz"].len() > 30,
        "the reference's documents were read: {:?}",
        want.names
    );
    // Field names: beaver serves every field nats-server does, except the listed ones.
    for (endpoint, theirs) in &want.names {
        let mine = &got.names[endpoint];
        let missing: Vec<&String> = theirs
            .difference(mine)
            .filter(|f| !OMITTED.iter().any(|(o, _)| *o == format!("{endpoint}.{f}")))
            .collect();
        assert!(missing.is_empty(), "/{endpoint}: beaver lacks {missing:?}");
        let extra: Vec<&String> = mine
            .difference(theirs)
            .filter(|f| !ADDED.contains(&format!("{endpoint}.{f}").as_str()))
            .collect();
        assert!(extra.is_empty(), "/{endpoint}: beaver adds {extra:?}");
    }
    for (field, _why) in OMITTED {
        let (endpoint, name) = field.split_once('.').expect("endpoint.field");
        assert!(
            want.names[endpoint].contains(name),
            "nats-server still has {field}, else drop it from OMITTED"
        );
    }

    assert_eq!(got.varz_deltas, want.varz_deltas, "/varz counters");
    assert_eq!(
        got.varz_deltas,
        json!({
            "connections": 2, "total_connections": 4, "subscriptions": 3, "slow_consumers": 0,
            "in_msgs": IN_MSGS, "out_msgs": OUT_MSGS, "in_bytes": IN_BYTES,
            "out_bytes": OUT_BYTES,
        })
    );
    assert_eq!(got.varz_settings, want.varz_settings, "/varz settings");
    assert_eq!(got.connz_top, want.connz_top, "/connz paging");
    assert_eq!(got.conns, want.conns, "/connz connections");
    assert_eq!(got.subsz_deltas, want.subsz_deltas, "/subsz counters");
    assert_eq!(got.subsz_foo, want.subsz_foo, "/subsz?test=foo");
    assert_eq!(
        got.after_leaving, want.after_leaving,
        "/varz after subber left"
    );
}

/// Bad query values get the same status and message from both servers.
#[test]
fn errors_agree_with_nats_server() {
    let Some(reference) = ServerProcess::nats_server(&["-m", "-1"]) else {
        return;
    };
    let ours = ServerProcess::beaver(&["-m", "-1"]);
    let (theirs, mine) = (reference.monitor_port(), ours.monitor_port());
    for path in [
        "/connz?limit=abc",
        "/connz?offset=-x",
        "/connz?cid=abc",
        "/connz?sort=bogus",
        "/connz?sort=stop",
        "/connz?sort=reason",
        "/connz?state=sleepy",
        "/connz?subs=maybe",
        "/connz?auth=x",
        "/subsz?subs=maybe",
        "/subsz?limit=z",
        "/subsz?test=a.>",
        "/routez?subs=maybe",
        "/nope",
        "/var%7A",
        "/healthz",
        "/healthz?callback=cb",
        "/routez?callback=cb",
    ] {
        let (a, b) = (http_get(theirs, path), http_get(mine, path));
        assert_eq!(b.status, a.status, "{path}");
        // Error messages and health documents are equal byte for byte; other documents
        // hold server ids and times (compared field by field in
        // `monitoring_agrees_with_nats_server`).
        if a.status != 200 || path.starts_with("/healthz") {
            assert_eq!(b.body, a.body, "{path}");
        }
        assert_eq!(b.content_type, a.content_type, "{path}");
    }
    // Both still serve.
    assert_eq!(get_json(mine, "/healthz")["status"], "ok");
}
