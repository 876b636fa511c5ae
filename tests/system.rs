//! The system account's request subjects (`$SYS.REQ.SERVER.PING`, `...PING.VARZ`, ...),
//! compared with Debian's nats-server 2.9.10 running the same configuration: the same
//! subjects answer, with the same fields (values differ: ids, times, counters).

mod common;

use common::{Frame, Raw, ServerProcess};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Writes `text` to a fresh file in the temp dir and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("beaver-system-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// A system account `SYS` with a user, and an account `APP` with another.
const CONF: &str = "accounts {\n  SYS { users = [ { user: admin, password: s3cr3t } ] }\n  \
                    APP { users = [ { user: app, password: pw } ] }\n}\nsystem_account: SYS\n";

/// Sends `body` to `subject` as `user` and returns the parsed answers: waits (up to 5 s)
/// for `expected` of them, then one more round trip for any extra; with `expected` 0, two
/// round trips (nats-server answers from a goroutine of its own, a moment later).
fn request(
    server: &ServerProcess,
    (user, pass): (&str, &str),
    subject: &str,
    body: &str,
    expected: usize,
) -> Vec<Value> {
    let mut raw = server.raw();
    let connect = format!(
        "CONNECT {{\"verbose\":false,\"user\":\"{user}\",\"pass\":\"{pass}\"}}\r\n\
         SUB _INBOX.answers 1\r\nPING\r\n"
    );
    raw.exchange(connect.as_bytes());
    let start = raw.received.len();
    raw.exchange(format!("PUB {subject} _INBOX.answers {}\r\n{body}\r\n", body.len()).as_bytes());
    let answers = |raw: &common::Raw| -> Vec<Value> {
        raw.received[start..]
            .iter()
            .filter_map(|f| match f {
                Frame::Msg(_, payload) => Some(serde_json::from_slice(payload).expect("JSON")),
                _ => None,
            })
            .collect()
    };
    for _ in 0..500 {
        if answers(&raw).len() >= expected {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        raw.sync();
    }
    raw.sync();
    answers(&raw)
}

/// The system account's user.
const ADMIN: (&str, &str) = ("admin", "s3cr3t");

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn server_requests_answer_like_nats_server() {
    let conf = temp_file("sys.conf", CONF);
    let conf = conf.to_str().unwrap();
    let beaver = ServerProcess::beaver(&["-c", conf]);
    let reference = ServerProcess::nats_server(&["-c", conf]);
    let id = |s: &ServerProcess| s.raw().info["server_id"].as_str().unwrap().to_owned();
    for (subject, body, part) in [
        ("$SYS.REQ.SERVER.PING", "", "statsz"),
        ("$SYS.REQ.SERVER.PING.STATSZ", "", "statsz"),
        ("$SYS.REQ.SERVER.PING.VARZ", "", "data"),
        (
            "$SYS.REQ.SERVER.PING.CONNZ",
            "{\"subscriptions\":true}",
            "data",
        ),
        (
            "$SYS.REQ.SERVER.PING.SUBSZ",
            "{\"subscriptions\":true}",
            "data",
        ),
        ("$SYS.REQ.SERVER.PING.ROUTEZ", "", "data"),
        ("$SYS.REQ.SERVER.PING.HEALTHZ", "", "data"),
        ("$SYS.REQ.SERVER.PING.VARZ", "not json", "error"),
        ("$SYS.REQ.SERVER.<id>.VARZ", "", "data"),
        ("$SYS.REQ.SERVER.<id>.STATSZ", "", "statsz"),
        ("$SYS.REQ.ACCOUNT.APP.CONNZ", "", "data"),
    ] {
        let mut answers = Vec::new();
        for s in std::iter::once(&beaver).chain(&reference) {
            let subject = subject.replace("<id>", &id(s));
            let got = request(s, ADMIN, &subject, body, 1);
            assert_eq!(got.len(), 1, "{}: {subject}: {got:?}", s.name);
            let answer = got.into_iter().next().unwrap();
            assert_eq!(
                keys(&answer),
                ["server".to_owned(), part.to_owned()].into(),
                "{}: {subject}",
                s.name
            );
            answers.push(answer);
        }
        let b = &answers[0];
        assert_eq!(b["server"]["id"], id(&beaver), "{subject}");
        assert_eq!(b["server"]["ver"], "2.9.10");
        if let Some(n) = answers.get(1) {
            assert_eq!(keys(&b["server"]), keys(&n["server"]), "{subject}: server");
            let (mut ours, theirs) = (keys(&b[part]), keys(&n[part]));
            // What beaver's /varz has and lacks (README: monitoring differences).
            if subject.ends_with("VARZ") && part == "data" {
                ours.remove("beaver_version");
                ours.insert("gomaxprocs".into());
            }
            assert_eq!(ours, theirs, "{subject}: {part}");
        }
    }
    // The filters select servers; a server that does not match stays silent.
    let silent = request(
        &beaver,
        ADMIN,
        "$SYS.REQ.SERVER.PING",
        "{\"server_name\":\"no such server\"}",
        0,
    );
    assert!(silent.is_empty(), "{silent:?}");
    let name = beaver.raw().info["server_name"]
        .as_str()
        .unwrap()
        .to_owned();
    let selected = request(
        &beaver,
        ADMIN,
        "$SYS.REQ.SERVER.PING.CONNZ",
        &format!("{{\"server_name\":\"{}\",\"acc\":\"APP\"}}", &name[..8]),
        1,
    );
    assert_eq!(selected.len(), 1);
    // Options reach the report: the connections of APP only (none is open).
    assert_eq!(selected[0]["data"]["num_connections"], 0, "{selected:?}");
    // Only the system account's users get answers: elsewhere the subjects are ordinary.
    for s in std::iter::once(&beaver).chain(&reference) {
        let nobody = request(s, ("app", "pw"), "$SYS.REQ.SERVER.PING", "", 0);
        assert!(nobody.is_empty(), "{}: {nobody:?}", s.name);
    }
}

#[test]
fn statsz_counts_the_server() {
    let conf = temp_file("statsz.conf", CONF);
    let beaver = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    // Some traffic in APP first.
    let mut app = beaver.raw();
    app.exchange(
        b"CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"pw\"}\r\nSUB x 1\r\nPUB x 2\r\nhi\r\n",
    );
    let got = request(&beaver, ADMIN, "$SYS.REQ.SERVER.PING", "", 1);
    let statsz = &got[0]["statsz"];
    // APP's client and the requester (SYS).
    assert_eq!(statsz["connections"], 2, "{statsz}");
    assert_eq!(statsz["active_accounts"], 2, "{statsz}");
    assert!(
        statsz["received"]["msgs"].as_u64().unwrap() >= 1,
        "{statsz}"
    );
    assert_eq!(statsz["active_servers"], 1);
    // The account's own subscriptions, as `$SYS.REQ.ACCOUNT.<acc>.SUBSZ` lists them.
    let subsz = request(&beaver, ADMIN, "$SYS.REQ.ACCOUNT.APP.SUBSZ", "", 1);
    let list = &subsz[0]["data"]["subscriptions_list"];
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{subsz:?}");
    assert_eq!(list[0]["subject"], "x");
    assert_eq!(list[0]["account"], "APP");
    let connz = request(&beaver, ADMIN, "$SYS.REQ.ACCOUNT.APP.CONNZ", "", 1);
    assert_eq!(connz[0]["data"]["num_connections"], 1, "{connz:?}");
    assert!(got[0]["server"]["seq"].as_u64().unwrap() >= 1);
}

/// The events (subject, JSON body) `admin` received after frame `start`, once there are
/// `count` of them or after about five seconds.
fn wait_for_events(admin: &mut Raw, start: usize, count: usize) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    for _ in 0..500 {
        events = admin.received[start..]
            .iter()
            .filter_map(|f| match f {
                Frame::Msg(line, payload) => Some((
                    line.split(' ').nth(1).unwrap_or_default().to_owned(),
                    serde_json::from_slice(payload).expect("JSON"),
                )),
                _ => None,
            })
            .collect();
        if events.len() >= count {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        admin.sync();
    }
    events
}

/// Client events in the system account: a user of APP connects, publishes and leaves, and
/// a login fails; the system account's subscriber sees nats-server's events, with the same
/// fields.
#[test]
fn client_events_like_nats_server() {
    let conf = temp_file("events.conf", CONF);
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf])];
    servers.extend(ServerProcess::nats_server(&["-c", conf]));
    let mut seen = Vec::new();
    for s in &servers {
        let mut admin = s.raw();
        admin.exchange(
            b"CONNECT {\"verbose\":false,\"user\":\"admin\",\"pass\":\"s3cr3t\"}\r\n\
              SUB $SYS.ACCOUNT.APP.> 1\r\nSUB $SYS.SERVER.*.CLIENT.AUTH.ERR 2\r\n",
        );
        let start = admin.received.len();
        let mut app = s.raw();
        app.exchange(
            b"CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"pw\",\"name\":\"worker\",\
              \"lang\":\"test\",\"version\":\"1.0\"}\r\nPUB x 2\r\nhi\r\n",
        );
        drop(app);
        // The disconnect event and the auth error come from different connections, so
        // either server may publish them in either order: wait for the first four before
        // the failed login.
        let events = wait_for_events(&mut admin, start, 4);
        assert_eq!(events.len(), 4, "{}: {events:?}", s.name);
        let mut bad = s.raw();
        bad.exchange(b"CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"wrong\"}\r\n");
        let events = wait_for_events(&mut admin, start, 5);
        assert_eq!(events.len(), 5, "{}: {events:?}", s.name);
        seen.push((s.name, events));
    }
    for (name, events) in &seen {
        // Each server publishes the account's connection count and the client event from
        // different places, so only the counts' order and the set of subjects are fixed.
        let mut subjects: Vec<&str> = events.iter().map(|(s, _)| s.as_str()).collect();
        assert!(subjects[4].ends_with(".CLIENT.AUTH.ERR"), "{name}");
        subjects.truncate(4);
        subjects.sort_unstable();
        assert_eq!(
            subjects,
            [
                "$SYS.ACCOUNT.APP.CONNECT",
                "$SYS.ACCOUNT.APP.DISCONNECT",
                "$SYS.ACCOUNT.APP.SERVER.CONNS",
                "$SYS.ACCOUNT.APP.SERVER.CONNS",
            ],
            "{name}"
        );
        let counts: Vec<&Value> = events[..4]
            .iter()
            .filter(|(s, _)| s.ends_with(".SERVER.CONNS"))
            .map(|(_, e)| &e["conns"])
            .collect();
        assert_eq!(counts, [1, 0], "{name}");
        let (connect, disconnect, auth) = (
            event(events, ".CONNECT"),
            event(events, ".DISCONNECT"),
            &events[4].1,
        );
        assert_eq!(connect["type"], "io.nats.server.advisory.v1.client_connect");
        assert_eq!(connect["client"]["acc"], "APP");
        assert_eq!(connect["client"]["user"], "app");
        assert_eq!(connect["client"]["name"], "worker");
        assert_eq!(
            disconnect["type"],
            "io.nats.server.advisory.v1.client_disconnect"
        );
        assert_eq!(disconnect["reason"], "Client Closed");
        assert_eq!(disconnect["sent"]["msgs"], 1, "{name}: {disconnect}");
        assert_eq!(auth["reason"], "Authentication Failure");
        assert_eq!(auth["client"]["user"], "app");
    }
    if let [(_, ours), (_, theirs)] = &seen[..] {
        for what in [
            ".SERVER.CONNS",
            ".CONNECT",
            ".DISCONNECT",
            ".CLIENT.AUTH.ERR",
        ] {
            let (ours, theirs) = (event(ours, what), event(theirs, what));
            assert_eq!(keys(ours), keys(theirs), "{what}");
            assert_eq!(
                keys(&ours["client"]),
                keys(&theirs["client"]),
                "{what}: client"
            );
        }
    }
}

/// The body of the first event whose subject ends with `suffix`.
fn event<'a>(events: &'a [(String, Value)], suffix: &str) -> &'a Value {
    events
        .iter()
        .find(|(s, _)| s.ends_with(suffix))
        .map(|(_, e)| e)
        .unwrap_or_else(|| panic!("no {suffix} event in {events:?}"))
}

/// `/accountz` and the system account's `ACCOUNTZ`: the accounts, as nats-server lists them.
#[test]
fn accountz_lists_the_accounts() {
    let conf = temp_file("accountz.conf", CONF);
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf, "-m", "-1"])];
    servers.extend(ServerProcess::nats_server(&["-c", conf, "-m", "-1"]));
    let mut docs = Vec::new();
    for s in &servers {
        let doc = common::get_json(s.monitor_port(), "/accountz");
        let mut names: Vec<String> = doc["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["$G", "APP", "SYS"], "{}: {doc}", s.name);
        assert_eq!(doc["system_account"], "SYS", "{}", s.name);
        let over_nats = request(s, ADMIN, "$SYS.REQ.SERVER.PING.ACCOUNTZ", "", 1);
        assert_eq!(over_nats[0]["data"]["system_account"], "SYS", "{}", s.name);
        docs.push(doc);
    }
    if let [ours, theirs] = &docs[..] {
        assert_eq!(keys(ours), keys(theirs));
    }
}

/// A mixed cluster of beaver and nats-server sharing the system account: a `PING` from a
/// system user on either server is answered by both, and a client connecting to one server
/// is announced to a system user on the other (the events cross the route, as nats-server
/// sends them).
#[test]
fn system_events_and_requests_cross_routes() {
    let cluster = |routes: &str| {
        format!("{CONF}cluster {{\n  name: sys\n  listen: 127.0.0.1:-1\n{routes}}}\n")
    };
    let conf_n = temp_file("cluster-nats.conf", &cluster(""));
    let Some(nats) = ServerProcess::nats_server(&["-c", conf_n.to_str().unwrap()]) else {
        return;
    };
    let route = nats.port_in_log("Listening for route connections on ");
    let conf_b = temp_file(
        "cluster-beaver.conf",
        &cluster(&format!("  routes = [ nats-route://127.0.0.1:{route} ]\n")),
    );
    let beaver = ServerProcess::beaver(&["-c", conf_b.to_str().unwrap()]);
    let id = |s: &ServerProcess| s.raw().info["server_id"].as_str().unwrap().to_owned();
    let both: BTreeSet<String> = [id(&beaver), id(&nats)].into_iter().collect();
    // Wait for the route: until a PING from beaver's side hears both servers.
    let mut heard = BTreeSet::new();
    for _ in 0..100 {
        heard = request(&beaver, ADMIN, "$SYS.REQ.SERVER.PING", "", 2)
            .iter()
            .map(|a| a["server"]["id"].as_str().unwrap_or_default().to_owned())
            .collect();
        if heard == both {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(heard, both, "a PING on beaver is answered by both servers");
    let from_nats: BTreeSet<String> = request(&nats, ADMIN, "$SYS.REQ.SERVER.PING", "", 2)
        .iter()
        .map(|a| a["server"]["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        from_nats, both,
        "a PING on nats-server is answered by both servers"
    );
    // Events: a system user on one server sees a client of APP connect to the other.
    for (watcher, host) in [(&nats, &beaver), (&beaver, &nats)] {
        let mut admin = watcher.raw();
        admin.exchange(
            b"CONNECT {\"verbose\":false,\"user\":\"admin\",\"pass\":\"s3cr3t\"}\r\n\
              SUB $SYS.ACCOUNT.APP.CONNECT 1\r\n",
        );
        // The subscription reaches the other server before the client connects: a probe
        // request on the route (answered by both) follows it in order.
        let _ = request(watcher, ADMIN, "$SYS.REQ.SERVER.PING", "", 2);
        let start = admin.received.len();
        let mut app = host.raw();
        app.exchange(b"CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"pw\"}\r\n");
        let events = wait_for_events(&mut admin, start, 1);
        assert_eq!(
            events.len(),
            1,
            "{} hears {}'s client",
            watcher.name,
            host.name
        );
        let (subject, event) = &events[0];
        assert_eq!(subject, "$SYS.ACCOUNT.APP.CONNECT");
        assert_eq!(event["server"]["id"], id(host), "{}", watcher.name);
        assert_eq!(event["client"]["acc"], "APP");
        assert_eq!(event["client"]["user"], "app");
    }
}

/// `$SYS.REQ.ACCOUNT.<acc>.STATZ`, `...PING.STATZ` and `...<acc>.CONNS` with a client of APP
/// connected: the same answers as nats-server's (fields, account, connection counts).
#[test]
fn account_statz_and_conns_like_nats_server() {
    let conf = temp_file("accstatz.conf", CONF);
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf])];
    servers.extend(ServerProcess::nats_server(&["-c", conf]));
    let mut seen = Vec::new();
    for s in &servers {
        let mut app = s.raw();
        app.exchange(b"CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"pw\"}\r\n");
        let statz = request(s, ADMIN, "$SYS.REQ.ACCOUNT.APP.STATZ", "", 1);
        let ping = request(s, ADMIN, "$SYS.REQ.ACCOUNT.PING.STATZ", "", 1);
        let conns = request(s, ADMIN, "$SYS.REQ.ACCOUNT.APP.CONNS", "", 1);
        // An account without clients: no answer, unless asked for unused ones.
        let unused = request(s, ADMIN, "$SYS.REQ.ACCOUNT.NOBODY.STATZ", "", 0);
        seen.push((s.name, statz, ping, conns, unused));
    }
    for (name, statz, ping, conns, unused) in &seen {
        assert_eq!(statz.len(), 1, "{name}: {statz:?}");
        assert_eq!(keys(&statz[0]), keys(&seen[0].1[0]), "{name}");
        let data = &statz[0]["data"];
        assert_eq!(keys(data), keys(&seen[0].1[0]["data"]), "{name}");
        let stat = &data["account_statz"][0];
        assert_eq!(
            keys(stat),
            keys(&seen[0].1[0]["data"]["account_statz"][0]),
            "{name}"
        );
        assert_eq!(stat["acc"], "APP", "{name}");
        assert_eq!(stat["conns"], 1, "{name}");
        // PING: every account with clients here, APP and SYS (the requester's).
        let mut accounts: Vec<String> = ping[0]["data"]["account_statz"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["acc"].as_str().unwrap().to_owned())
            .collect();
        accounts.sort();
        assert_eq!(accounts, ["APP", "SYS"], "{name}");
        assert_eq!(conns.len(), 1, "{name}");
        assert_eq!(keys(&conns[0]), keys(&seen[0].3[0]), "{name}");
        assert_eq!(
            conns[0]["type"],
            "io.nats.server.advisory.v1.account_connections"
        );
        assert_eq!(conns[0]["acc"], "APP", "{name}");
        assert_eq!(conns[0]["conns"], 1, "{name}");
        assert!(unused.is_empty(), "{name}: {unused:?}");
    }
}

/// The periodic `$SYS.SERVER.<id>.STATSZ`: sent soon after start (nats-server's first is
/// 250 ms in), with the fields of nats-server's.
#[test]
fn periodic_statsz_like_nats_server() {
    let conf = temp_file("heartbeat.conf", CONF);
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf])];
    servers.extend(ServerProcess::nats_server(&["-c", conf]));
    let mut seen = Vec::new();
    for s in &servers {
        let mut admin = s.raw();
        admin.exchange(
            b"CONNECT {\"verbose\":false,\"user\":\"admin\",\"pass\":\"s3cr3t\"}\r\n\
              SUB $SYS.SERVER.*.STATSZ 1\r\n",
        );
        let events = wait_for_events(&mut admin, 0, 1);
        assert!(!events.is_empty(), "{}: no STATSZ", s.name);
        let id = s.raw().info["server_id"].as_str().unwrap().to_owned();
        let (subject, body) = &events[0];
        assert_eq!(*subject, format!("$SYS.SERVER.{id}.STATSZ"), "{}", s.name);
        assert_eq!(body["server"]["id"], id.as_str(), "{}", s.name);
        seen.push((s.name, keys(body), keys(&body["statsz"])));
    }
    for (name, top, statsz) in &seen[1..] {
        assert_eq!(*top, seen[0].1, "{name}");
        let ours = &seen[0].2;
        let missing: Vec<_> = statsz.difference(ours).collect();
        assert!(
            missing.is_empty(),
            "beaver's STATSZ lacks {missing:?} ({name} has them)"
        );
    }
}

/// One account's detail: `/accountz?acc=` and `$SYS.REQ.ACCOUNT.<acc>.INFO`, with exports and
/// imports, compared with nats-server's (its own imports of the system account's services,
/// which beaver does not need, left aside).
#[test]
fn account_detail_like_nats_server() {
    let conf = temp_file(
        "accdetail.conf",
        "accounts {\n  SYS { users = [ { user: admin, password: s3cr3t } ] }\n  \
         APP { users = [ { user: app, password: pw } ],\n    \
         exports = [ { service: svc }, { stream: \"ev.>\", accounts: [B] } ] }\n  \
         B { users = [ { user: b, password: b } ],\n    \
         imports = [ { service: { account: APP, subject: svc }, to: ask },\n      \
         { stream: { account: APP, subject: \"ev.>\" }, prefix: p } ] }\n}\nsystem_account: SYS\n",
    );
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf, "-m", "-1"])];
    servers.extend(ServerProcess::nats_server(&["-c", conf, "-m", "-1"]));
    let mut seen = Vec::new();
    for s in &servers {
        let mut b = s.raw();
        b.exchange(b"CONNECT {\"verbose\":false,\"user\":\"b\",\"pass\":\"b\"}\r\n");
        let doc = common::get_json(s.monitor_port(), "/accountz?acc=B");
        let mut detail = doc["account_detail"].clone();
        let own = |v: &Value| -> Vec<Value> {
            let mut list: Vec<Value> = v
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|i| {
                    !i["subject"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with("$SYS")
                })
                .collect();
            list.sort_by_key(|i| i.to_string());
            list
        };
        let imports = own(&detail["imports"]);
        let exports = own(
            &common::get_json(s.monitor_port(), "/accountz?acc=APP")["account_detail"]["exports"]
        );
        let info = request(s, ADMIN, "$SYS.REQ.ACCOUNT.B.INFO", "", 1);
        let missing = request(s, ADMIN, "$SYS.REQ.ACCOUNT.NOPE.INFO", "", 1);
        let bad = common::http_get(s.monitor_port(), "/accountz?acc=NOPE");
        detail["imports"] = Value::Null;
        seen.push((
            s.name,
            keys(&doc),
            keys(&detail),
            detail["client_connections"].clone(),
            imports,
            exports,
            keys(&info[0]["data"]),
            info[0]["data"]["account_name"].clone(),
            missing[0]["error"].clone(),
            (bad.status, bad.body),
        ));
    }
    let ours = &seen[0];
    assert_eq!(ours.3, 1, "B's client");
    assert_eq!(ours.7, "B");
    assert_eq!(ours.8["description"], "Account NOPE does not exist");
    assert_eq!(ours.9 .0, 400);
    for theirs in &seen[1..] {
        assert_eq!(ours.1, theirs.1, "/accountz keys");
        assert_eq!(ours.2, theirs.2, "account_detail keys");
        assert_eq!(ours.3, theirs.3, "client_connections");
        assert_eq!(ours.4, theirs.4, "imports");
        assert_eq!(ours.5, theirs.5, "exports");
        assert_eq!(ours.6, theirs.6, "INFO's data keys");
        assert_eq!(ours.7, theirs.7);
        assert_eq!(ours.8, theirs.8, "INFO of an unknown account");
        assert_eq!(ours.9, theirs.9, "/accountz?acc=NOPE");
    }
}
