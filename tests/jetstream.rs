//! JetStream part 1 through the official Rust client (async-nats's `jetstream`), against the
//! real `beaver` binary started with `-js`: streams are created, updated, listed and
//! deleted; publishes are acknowledged and deduplicated; limits, purges, message get and
//! delete, rollups, mirrors and sources behave as nats-server's; and file streams come back
//! after a restart and after `kill -9`.

mod common;

use async_nats::jetstream::{self, stream};
use common::{get_json, ServerProcess, StoreDir};
use futures::TryStreamExt;
use std::time::Duration;

fn start(store: &StoreDir) -> ServerProcess {
    ServerProcess::beaver(&["-js", "-sd", store.arg()])
}

async fn connect(server: &ServerProcess) -> (async_nats::Client, jetstream::Context) {
    let client = async_nats::connect(server.url()).await.expect("connects");
    let js = jetstream::new(client.clone());
    (client, js)
}

fn config(name: &str, subjects: &[&str]) -> stream::Config {
    stream::Config {
        name: name.into(),
        subjects: subjects.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_are_created_updated_listed_and_deleted() {
    let dir = StoreDir::new("crud");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let mut s = js
        .create_stream(config("ORDERS", &["orders.>"]))
        .await
        .expect("created");
    let info = s.info().await.expect("info");
    assert_eq!(info.config.name, "ORDERS");
    assert_eq!(info.config.max_messages, -1);
    assert_eq!(info.config.duplicate_window, Duration::from_secs(120));
    assert_eq!(info.state.messages, 0);
    // The same configuration again is fine; another one under the same name is not.
    js.create_stream(config("ORDERS", &["orders.>"]))
        .await
        .expect("same config again");
    let mut other = config("ORDERS", &["orders.>"]);
    other.max_messages = 10;
    let err = js.create_stream(other).await.unwrap_err();
    assert!(err.to_string().contains("10058"), "{err}");
    // Overlapping subjects are refused.
    let err = js
        .create_stream(config("MORE", &["orders.eu"]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("10065"), "{err}");
    // Update: a limit and a subject.
    let mut updated = config("ORDERS", &["orders.>", "returns"]);
    updated.max_messages = 1000;
    let info = js.update_stream(updated).await.expect("updated");
    assert_eq!(info.config.max_messages, 1000);
    assert_eq!(info.config.subjects.len(), 2);
    js.publish("returns", "r1".into())
        .await
        .unwrap()
        .await
        .expect("ack on the new subject");
    js.create_stream(config("AUDIT", &["audit"])).await.unwrap();
    let mut names: Vec<String> = js.stream_names().try_collect().await.unwrap();
    names.sort();
    assert_eq!(names, ["AUDIT", "ORDERS"]);
    let listed: Vec<stream::Info> = js.streams().try_collect().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(js.delete_stream("AUDIT").await.unwrap().success);
    assert!(js.get_stream("AUDIT").await.is_err());
    let account = js.query_account().await.expect("account info");
    assert_eq!(account.streams, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_are_acked_deduplicated_and_checked() {
    let dir = StoreDir::new("acks");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    js.create_stream(config("EVENTS", &["events.*"]))
        .await
        .unwrap();
    let ack = js
        .publish("events.a", "one".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(
        (ack.stream.as_str(), ack.sequence, ack.duplicate),
        ("EVENTS", 1, false)
    );
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", "id-1");
    let first = js
        .publish_with_headers("events.a", headers.clone(), "two".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let again = js
        .publish_with_headers("events.a", headers, "two".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(first.sequence, 2);
    assert_eq!((again.sequence, again.duplicate), (2, true));
    // Expected last sequence: right, then wrong.
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Expected-Last-Sequence", "2");
    let ok = js
        .publish_with_headers("events.b", h, "x".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(ok.sequence, 3);
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Expected-Last-Sequence", "1");
    let err = js
        .publish_with_headers("events.b", h, "x".into())
        .await
        .unwrap()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("wrong last sequence: 3"), "{err}");
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Expected-Stream", "OTHER");
    let err = js
        .publish_with_headers("events.b", h, "x".into())
        .await
        .unwrap()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("expected stream does not match"),
        "{err}"
    );
    // Headers and subject come back exactly.
    let mut h = async_nats::HeaderMap::new();
    h.insert("X-Trace", "abc");
    js.publish_with_headers("events.c", h, "with headers".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let s = js.get_stream("EVENTS").await.unwrap();
    let m = s.get_raw_message(4).await.unwrap();
    assert_eq!(m.subject.as_str(), "events.c");
    assert_eq!(&m.payload[..], b"with headers");
    assert_eq!(m.headers.get("X-Trace").map(|v| v.as_str()), Some("abc"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_discard_purge_get_delete_and_rollup() {
    let dir = StoreDir::new("limits");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    // discard: old keeps the newest max_msgs.
    let mut c = config("OLD", &["old"]);
    c.max_messages = 2;
    js.create_stream(c).await.unwrap();
    for i in 0..3 {
        js.publish("old", format!("m{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let info = js
        .get_stream("OLD")
        .await
        .unwrap()
        .get_info()
        .await
        .unwrap();
    assert_eq!((info.state.messages, info.state.first_sequence), (2, 2));
    // discard: new refuses the third.
    let mut c = config("NEW", &["new"]);
    c.max_messages = 2;
    c.discard = stream::DiscardPolicy::New;
    js.create_stream(c).await.unwrap();
    for _ in 0..2 {
        js.publish("new", "x".into()).await.unwrap().await.unwrap();
    }
    let err = js
        .publish("new", "x".into())
        .await
        .unwrap()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("maximum messages exceeded"),
        "{err}"
    );
    // Per subject, with max_msg_size.
    let mut c = config("KV", &["kv.>"]);
    c.max_messages_per_subject = 1;
    c.max_message_size = 8;
    c.allow_rollup = true;
    c.allow_direct = true;
    js.create_stream(c).await.unwrap();
    for v in ["a1", "a2"] {
        js.publish("kv.a", v.into()).await.unwrap().await.unwrap();
    }
    js.publish("kv.b", "b1".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let err = js
        .publish("kv.b", "too large".into())
        .await
        .unwrap()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("message size exceeds maximum"),
        "{err}"
    );
    let kv = js.get_stream("KV").await.unwrap();
    let last = kv.get_last_raw_message_by_subject("kv.a").await.unwrap();
    assert_eq!((&last.payload[..], last.sequence), (&b"a2"[..], 2));
    let direct = kv.direct_get_last_for_subject("kv.b").await.unwrap();
    assert_eq!(&direct.payload[..], b"b1");
    // Purge with a filter, then delete a message.
    let mut c = config("P", &["p.*"]);
    c.deny_delete = false;
    js.create_stream(c).await.unwrap();
    for s in ["p.a", "p.b", "p.a", "p.b", "p.a"] {
        js.publish(s, "x".into()).await.unwrap().await.unwrap();
    }
    let p = js.get_stream("P").await.unwrap();
    let purged = p.purge().filter("p.b").await.unwrap();
    assert_eq!(purged.purged, 2);
    let purged = p.purge().keep(1).await.unwrap();
    assert_eq!(purged.purged, 2);
    assert!(p.delete_message(5).await.unwrap());
    assert!(p.get_raw_message(5).await.is_err());
    // Rollup of everything on one subject.
    let mut c = config("R", &["r.*"]);
    c.allow_rollup = true;
    js.create_stream(c).await.unwrap();
    for s in ["r.a", "r.a", "r.b"] {
        js.publish(s, "x".into()).await.unwrap().await.unwrap();
    }
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Rollup", "sub");
    js.publish_with_headers("r.a", h, "rolled".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let info = js.get_stream("R").await.unwrap().get_info().await.unwrap();
    assert_eq!(info.state.messages, 2, "r.a rolled up to one, r.b kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrors_and_sources_follow_their_origins() {
    let dir = StoreDir::new("mirror");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    js.create_stream(config("ORIGIN", &["o.*"])).await.unwrap();
    for s in ["o.a", "o.b", "o.a"] {
        js.publish(s, "x".into()).await.unwrap().await.unwrap();
    }
    js.create_stream(stream::Config {
        name: "COPY".into(),
        mirror: Some(stream::Source {
            name: "ORIGIN".into(),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    js.create_stream(stream::Config {
        name: "ONLY_A".into(),
        sources: Some(vec![stream::Source {
            name: "ORIGIN".into(),
            filter_subject: Some("o.a".into()),
            ..Default::default()
        }]),
        ..Default::default()
    })
    .await
    .unwrap();
    js.publish("o.a", "later".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let copy = js
        .get_stream("COPY")
        .await
        .unwrap()
        .get_info()
        .await
        .unwrap();
    assert_eq!((copy.state.messages, copy.state.last_sequence), (4, 4));
    let only = js.get_stream("ONLY_A").await.unwrap();
    let info = only.get_info().await.unwrap();
    assert_eq!(info.state.messages, 3);
    let last = only.get_raw_message(3).await.unwrap();
    assert_eq!(&last.payload[..], b"later");
    // Links that loop are refused (a copy runs under its origin's lock).
    let mut looping = config("ORIGIN", &["o.*"]);
    looping.sources = Some(vec![stream::Source {
        name: "ONLY_A".into(),
        ..Default::default()
    }]);
    let err = js.update_stream(looping).await.unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitoring_and_info_say_jetstream_is_on() {
    let dir = StoreDir::new("monitor");
    let server = ServerProcess::beaver(&["-js", "-sd", dir.arg(), "-m", "-1"]);
    let port = server.monitor_port();
    let (client, js) = connect(&server).await;
    assert!(client.server_info().jetstream);
    js.create_stream(config("M", &["m"])).await.unwrap();
    js.publish("m", "x".into()).await.unwrap().await.unwrap();
    let jsz = get_json(port, "/jsz?accounts=true&streams=true");
    assert_eq!(jsz["streams"], 1);
    assert_eq!(jsz["messages"], 1);
    assert_eq!(jsz["account_details"][0]["stream_detail"][0]["name"], "M");
    let varz = get_json(port, "/varz");
    assert!(varz["jetstream"]["config"]["store_dir"]
        .as_str()
        .unwrap()
        .ends_with("jetstream"));
    let metrics = common::http_get(port, "/metrics");
    assert!(
        metrics.body.contains("beaver_jetstream_messages 1"),
        "{}",
        metrics.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_jetstream_the_api_has_no_responders() {
    let server = ServerProcess::beaver(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    let err = client.request("$JS.API.INFO", "".into()).await.unwrap_err();
    assert_eq!(err.kind(), async_nats::RequestErrorKind::NoResponders);
    assert!(!client.server_info().jetstream);
}

/// Everything a file stream holds, seen through the API: state and every message.
async fn snapshot(
    js: &jetstream::Context,
    name: &str,
) -> (stream::State, Vec<(u64, String, Vec<u8>)>) {
    let s = js.get_stream(name).await.expect("stream exists");
    let info = s.get_info().await.unwrap();
    let mut msgs = Vec::new();
    for seq in info.state.first_sequence..=info.state.last_sequence {
        if let Ok(m) = s.get_raw_message(seq).await {
            msgs.push((m.sequence, m.subject.to_string(), m.payload.to_vec()));
        }
    }
    (info.state, msgs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_streams_come_back_after_a_restart() {
    let dir = StoreDir::new("restart");
    let mut server = start(&dir);
    let (client, js) = connect(&server).await;
    let mut c = config("KEEP", &["keep.*"]);
    c.max_messages_per_subject = 3;
    js.create_stream(c).await.unwrap();
    let mut mem = config("GONE", &["gone"]);
    mem.storage = stream::StorageType::Memory;
    js.create_stream(mem).await.unwrap();
    for i in 0..20 {
        let subject = format!("keep.{}", i % 4);
        js.publish(subject, format!("v{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let s = js.get_stream("KEEP").await.unwrap();
    s.delete_message(18).await.unwrap();
    let before = snapshot(&js, "KEEP").await;
    drop(client);
    #[cfg(unix)]
    server.terminate();
    #[cfg(not(unix))]
    server.kill_now();
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let after = snapshot(&js, "KEEP").await;
    assert_eq!(before.0.messages, after.0.messages);
    assert_eq!(before.0.first_sequence, after.0.first_sequence);
    assert_eq!(before.0.last_sequence, after.0.last_sequence);
    assert_eq!(before.1, after.1);
    // A memory stream does not survive a restart (as with nats-server).
    assert!(js.get_stream("GONE").await.is_err());
    // The stream goes on from where it was.
    let ack = js
        .publish("keep.9", "next".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(ack.sequence, 21);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_message_survives_kill_9() {
    let dir = StoreDir::new("crash");
    let mut server = start(&dir);
    let (_client, js) = connect(&server).await;
    js.create_stream(config("CRASH", &["crash"])).await.unwrap();
    // Publishers flood the stream, keeping every ack; the server is killed mid-flood.
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let mut tasks = Vec::new();
    for p in 0..4 {
        let js = js.clone();
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let payload = format!("p{p}-{i}");
                let Ok(fut) = js.publish("crash", payload.into()).await else {
                    break;
                };
                match fut.await {
                    Ok(ack) => acked.lock().unwrap().push(ack.sequence),
                    Err(_) => break,
                }
            }
        }));
    }
    while acked.lock().unwrap().len() < 3000 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill_now();
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(30), t).await;
    }
    let acked = acked.lock().unwrap().clone();
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let s = js.get_stream("CRASH").await.unwrap();
    let info = s.get_info().await.unwrap();
    let max = *acked.iter().max().unwrap();
    assert!(info.state.last_sequence >= max, "{:?} < {max}", info.state);
    assert_eq!(info.state.first_sequence, 1);
    // Nothing is missing between the first and the last: every acked sequence is there.
    assert_eq!(
        info.state.messages, info.state.last_sequence,
        "{:?}",
        info.state
    );
    for seq in acked.iter().step_by(97) {
        let m = s
            .get_raw_message(*seq)
            .await
            .expect("an acked message is there");
        assert!(m.payload.starts_with(b"p"));
    }
    // And the stream takes new messages after the last one that was written.
    let ack = js
        .publish("crash", "after".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(ack.sequence, info.state.last_sequence + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_always_from_a_config_file_keeps_what_was_acked() {
    // The `jetstream` block as nats-server writes it, with the setting beaver offers on top.
    let dir = StoreDir::new("always");
    std::fs::create_dir_all(&dir.0).unwrap();
    let conf = dir.0.join("js.conf");
    let store = dir.0.join("store");
    std::fs::write(
        &conf,
        format!(
            "jetstream {{\n  store_dir: {:?}\n  max_file_store: 1GB\n  sync_interval: always\n}}\n",
            store.to_str().unwrap()
        ),
    )
    .unwrap();
    let mut server = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let (_c, js) = connect(&server).await;
    js.create_stream(config("SYNCED", &["synced"]))
        .await
        .unwrap();
    for i in 0..200 {
        js.publish("synced", format!("{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    server.kill_now();
    let server = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let (_c, js) = connect(&server).await;
    let (state, msgs) = snapshot(&js, "SYNCED").await;
    assert_eq!((state.messages, state.last_sequence), (200, 200));
    assert_eq!(msgs[199].2, b"199");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_is_cut_at_restart_never_served() {
    let dir = StoreDir::new("torn");
    let mut server = start(&dir);
    let (client, js) = connect(&server).await;
    js.create_stream(config("TORN", &["torn"])).await.unwrap();
    for i in 0..10 {
        js.publish("torn", format!("m{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    drop(client);
    server.kill_now();
    // A write the process did not finish: half a record's worth of bytes after the last one.
    let msgs = dir
        .0
        .join("jetstream")
        .join("$G")
        .join("streams")
        .join("TORN")
        .join("msgs");
    let mut segments: Vec<_> = std::fs::read_dir(&msgs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    segments.sort();
    let last = segments.last().expect("a segment");
    let mut f = std::fs::OpenOptions::new().append(true).open(last).unwrap();
    std::io::Write::write_all(&mut f, &[60, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 11, 0]).unwrap();
    drop(f);
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let (state, msgs) = snapshot(&js, "TORN").await;
    assert_eq!((state.messages, state.last_sequence), (10, 10));
    assert_eq!(msgs[9].2, b"m9");
    let ack = js
        .publish("torn", "next".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(ack.sequence, 11);
    let s = js.get_stream("TORN").await.unwrap();
    assert_eq!(&s.get_raw_message(11).await.unwrap().payload[..], b"next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishers_of_two_streams_beside_a_mirror_do_not_deadlock() {
    // A mirror of A: every message stored in A is copied into M under A's lock. Publishers
    // of A and of B, on their own connections, must never wait for each other's streams.
    let dir = StoreDir::new("deadlock");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    js.create_stream(config("A", &["a"])).await.unwrap();
    js.create_stream(config("B", &["b"])).await.unwrap();
    js.create_stream(stream::Config {
        name: "M".into(),
        mirror: Some(stream::Source {
            name: "A".into(),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut tasks = Vec::new();
    for (i, subject) in ["a", "b", "a", "b"].into_iter().enumerate() {
        let client = async_nats::connect(server.url()).await.unwrap();
        tasks.push(tokio::spawn(async move {
            let js = jetstream::new(client);
            for n in 0..1500 {
                js.publish(subject, format!("{i}-{n}").into())
                    .await
                    .unwrap()
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("publishers finish (no deadlock)")
            .unwrap();
    }
    let m = js.get_stream("M").await.unwrap().get_info().await.unwrap();
    assert_eq!(m.state.messages, 3000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_errors_and_the_server_stays_up() {
    let dir = StoreDir::new("hostile");
    let server = start(&dir);
    let (client, js) = connect(&server).await;
    let ask = |subject: &'static str, body: String| {
        let client = client.clone();
        async move {
            let m = client
                .request(subject, body.into())
                .await
                .expect("an answer");
            serde_json::from_slice::<serde_json::Value>(&m.payload).unwrap()
        }
    };
    let err_code = |v: &serde_json::Value| v["error"]["err_code"].as_u64();
    // JSON nested deeper than any request needs: refused before it is read (reading it
    // recursed past a reader thread's stack).
    let deep = format!(
        r#"{{"name":"S","x":{}1{}}}"#,
        r#"{"a":"#.repeat(200),
        "}".repeat(200)
    );
    assert_eq!(
        err_code(&ask("$JS.API.STREAM.CREATE.S", deep).await),
        Some(10025)
    );
    assert_eq!(
        err_code(&ask("$JS.API.STREAM.CREATE.S", "[]".into()).await),
        Some(10025)
    );
    // A subject that would end a protocol line when its interest crosses a route.
    let injected = r#"{"name":"S","subjects":["a\r\nPUB x 1\r\n"]}"#.to_string();
    assert_eq!(
        err_code(&ask("$JS.API.STREAM.CREATE.S", injected).await),
        Some(10052)
    );
    let spaced = r#"{"name":"S","subjects":["a b"]}"#.to_string();
    assert_eq!(
        err_code(&ask("$JS.API.STREAM.CREATE.S", spaced).await),
        Some(10052)
    );
    // A purge that would move the sequences past 2^63.
    js.create_stream(config("S", &["s"])).await.unwrap();
    js.publish("s", "x".into()).await.unwrap().await.unwrap();
    let huge = format!(r#"{{"seq":{}}}"#, u64::MAX);
    assert_eq!(
        err_code(&ask("$JS.API.STREAM.PURGE.S", huge).await),
        Some(10003)
    );
    let ack = js.publish("s", "y".into()).await.unwrap().await.unwrap();
    assert_eq!(ack.sequence, 2);
    // A mirror over a gap of billions lists a bounded number of deleted sequences.
    js.create_stream(config("O", &["o"])).await.unwrap();
    js.publish("o", "1".into()).await.unwrap().await.unwrap();
    js.create_stream(stream::Config {
        name: "M".into(),
        mirror: Some(stream::Source {
            name: "O".into(),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    let far = format!(r#"{{"seq":{}}}"#, 1u64 << 40);
    ask("$JS.API.STREAM.PURGE.O", far).await;
    js.publish("o", "2".into()).await.unwrap().await.unwrap();
    let info = ask(
        "$JS.API.STREAM.INFO.M",
        r#"{"deleted_details":true}"#.into(),
    )
    .await;
    assert_eq!(info["state"]["last_seq"], 1u64 << 40);
    assert!(info["state"]["deleted"].as_array().unwrap().len() <= 100_000);
    assert_eq!(js.query_account().await.unwrap().streams, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_memory_store_bounds_memory_streams() {
    // A client cannot fill the machine's memory through a memory stream: past
    // max_memory_store, publishes get nats-server's "insufficient memory resources".
    let dir = StoreDir::new("maxmem");
    std::fs::create_dir_all(&dir.0).unwrap();
    let conf = dir.0.join("js.conf");
    std::fs::write(
        &conf,
        format!(
            "jetstream {{ store_dir: {:?}, max_memory_store: 10KB }}\n",
            dir.0.join("store").to_str().unwrap()
        ),
    )
    .unwrap();
    let server = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let (_c, js) = connect(&server).await;
    let mut c = config("MEM", &["mem"]);
    c.storage = stream::StorageType::Memory;
    js.create_stream(c).await.unwrap();
    let mut stored = 0;
    let err = loop {
        match js
            .publish("mem", vec![b'x'; 1000].into())
            .await
            .unwrap()
            .await
        {
            Ok(_) => stored += 1,
            Err(e) => break e,
        }
        assert!(
            stored < 100,
            "max_memory_store never applied: {:#?}",
            server.log_lines()
        );
    };
    assert!(
        err.to_string().contains("insufficient memory resources"),
        "{err}"
    );
    assert!((9..=10).contains(&stored), "{stored}");
    // Purging gives the room back.
    js.get_stream("MEM").await.unwrap().purge().await.unwrap();
    js.publish("mem", "again".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let account = js.query_account().await.unwrap();
    assert!(
        account.memory > 0 && account.memory < 1000,
        "{}",
        account.memory
    );
}
