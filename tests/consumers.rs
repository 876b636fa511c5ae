//! JetStream part 2 through the official Rust client (async-nats's `jetstream`, `kv`,
//! `object_store`) against the real `beaver` binary started with `-js`: pull consumers as a
//! work queue (each message processed once), push consumers with a queue group and ordered
//! consumers, acks, naks, terms and redelivery up to `max_deliver` (with its advisory),
//! interest retention, key-value buckets with history and watch, a 10 MiB object, and
//! durable consumer state across a restart and a `kill -9`. Exact status bytes of pull
//! requests are checked on a raw connection.

mod common;

use async_nats::jetstream::consumer::{pull, push, AckPolicy, DeliverPolicy};
use async_nats::jetstream::{self, kv, object_store, stream, AckKind};
use common::{ServerProcess, StoreDir};
use futures::StreamExt;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;
use tokio::io::AsyncReadExt;

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

/// Waits (at most 20 s) for `what` to become true.
async fn until<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..400 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn publish_n(js: &jetstream::Context, subject: &str, n: usize) {
    for i in 0..n {
        js.publish(subject.to_string(), format!("m{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_queue_of_pull_consumers_processes_each_message_once() {
    let dir = StoreDir::new("wq");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let s = js
        .create_stream(stream::Config {
            retention: stream::RetentionPolicy::WorkQueue,
            ..config("WQ", &["jobs.>"])
        })
        .await
        .unwrap();
    // Work queues take one unfiltered consumer, explicitly acked.
    let durable = pull::Config {
        durable_name: Some("workers".into()),
        ack_policy: AckPolicy::Explicit,
        ..Default::default()
    };
    s.create_consumer(durable.clone()).await.unwrap();
    let second = s
        .create_consumer(pull::Config {
            durable_name: Some("other".into()),
            ..durable.clone()
        })
        .await;
    assert!(second.is_err(), "a second unfiltered consumer was allowed");
    let n = 300;
    for i in 0..n {
        js.publish(format!("jobs.{}", i % 7), format!("{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    // Two workers on the same durable compete for the messages.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for _ in 0..2 {
        let consumer: jetstream::consumer::PullConsumer = s.get_consumer("workers").await.unwrap();
        let seen = seen.clone();
        workers.push(tokio::spawn(async move {
            loop {
                let mut batch = consumer
                    .fetch()
                    .max_messages(25)
                    .expires(Duration::from_millis(500))
                    .messages()
                    .await
                    .unwrap();
                let mut got = 0;
                while let Some(m) = batch.next().await {
                    let m = m.unwrap();
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8(m.payload.to_vec()).unwrap());
                    m.ack().await.unwrap();
                    got += 1;
                }
                if got == 0 && seen.lock().unwrap().len() >= n {
                    return;
                }
            }
        }));
    }
    for w in workers {
        tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("workers finish")
            .unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), n, "each message once");
    assert_eq!(unique.len(), n);
    let mut s = s;
    until("acked work to leave the stream", || {
        let s = s.clone();
        async move { s.clone().info().await.unwrap().state.messages == 0 }
    })
    .await;
    let info = s.info().await.unwrap();
    assert_eq!(info.state.last_sequence, n as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_consumers_deliver_to_a_queue_group_and_in_order() {
    let dir = StoreDir::new("push");
    let server = start(&dir);
    let (client, js) = connect(&server).await;
    let s = js.create_stream(config("P", &["p.>"])).await.unwrap();
    // Two members of a queue group on the deliver subject: each message reaches one.
    let mut a = client
        .queue_subscribe("deliver.p", "g".into())
        .await
        .unwrap();
    let mut b = client
        .queue_subscribe("deliver.p", "g".into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    s.create_consumer(push::Config {
        durable_name: Some("PQ".into()),
        deliver_subject: "deliver.p".into(),
        deliver_group: Some("g".into()),
        ack_policy: AckPolicy::Explicit,
        ..Default::default()
    })
    .await
    .unwrap();
    publish_n(&js, "p.x", 100).await;
    let mut got = Vec::new();
    while got.len() < 100 {
        let m = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::select! {
                Some(m) = a.next() => m,
                Some(m) = b.next() => m,
            }
        })
        .await
        .expect("deliveries");
        assert_eq!(m.subject.as_str(), "p.x", "shown with the stream subject");
        let reply = m.reply.clone().expect("an ack subject");
        assert!(reply.starts_with("$JS.ACK.P.PQ.1."), "{reply}");
        client.publish(reply, "+ACK".into()).await.unwrap();
        got.push(String::from_utf8(m.payload.to_vec()).unwrap());
    }
    let unique: BTreeSet<&String> = got.iter().collect();
    assert_eq!(unique.len(), 100);
    // An ordered consumer (ephemeral, flow control, heartbeats) gets everything in order.
    let ordered = s
        .create_consumer(push::OrderedConfig {
            deliver_subject: client.new_inbox(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut msgs = ordered.messages().await.unwrap();
    for i in 0..100u64 {
        let m = tokio::time::timeout(Duration::from_secs(10), msgs.next())
            .await
            .expect("ordered delivery")
            .unwrap()
            .unwrap();
        assert_eq!(m.info().unwrap().stream_sequence, i + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naks_terms_and_max_deliver_with_its_advisory() {
    let dir = StoreDir::new("redeliver");
    let server = start(&dir);
    let (client, js) = connect(&server).await;
    let s = js.create_stream(config("R", &["r"])).await.unwrap();
    let mut advisories = client
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.R.C")
        .await
        .unwrap();
    client.flush().await.unwrap();
    let c: jetstream::consumer::PullConsumer = s
        .create_consumer(pull::Config {
            durable_name: Some("C".into()),
            ack_policy: AckPolicy::Explicit,
            max_deliver: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    publish_n(&js, "r", 2).await;
    let fetch = |n| {
        let c = c.clone();
        async move {
            c.fetch()
                .max_messages(n)
                .expires(Duration::from_millis(700))
                .messages()
                .await
                .unwrap()
                .map(|m| m.unwrap())
                .collect::<Vec<_>>()
                .await
        }
    };
    let first = fetch(2).await;
    assert_eq!(first.len(), 2);
    // The first is naked (delivered again at once), the second terminated (never again).
    first[0].ack_with(AckKind::Nak(None)).await.unwrap();
    first[1].ack_with(AckKind::Term).await.unwrap();
    let again = fetch(2).await;
    assert_eq!(again.len(), 1, "only the naked one comes back");
    let info = again[0].info().unwrap();
    assert_eq!((info.stream_sequence, info.delivered), (1, 2));
    again[0].ack_with(AckKind::Nak(None)).await.unwrap();
    // max_deliver 2: not a third time; the advisory says so.
    assert!(fetch(1).await.is_empty(), "a third delivery");
    let adv = tokio::time::timeout(Duration::from_secs(10), advisories.next())
        .await
        .expect("max deliveries advisory")
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&adv.payload).unwrap();
    assert_eq!(v["type"], "io.nats.jetstream.advisory.v1.max_deliver");
    assert_eq!(
        (v["stream_seq"].as_u64(), v["deliveries"].as_u64()),
        (Some(1), Some(2))
    );
    // A double ack is answered once recorded.
    publish_n(&js, "r", 1).await;
    let m = fetch(1).await.pop().expect("the third message");
    m.double_ack().await.expect("an ack of the ack");
    let mut c = c;
    let info = c.info().await.unwrap();
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!(info.ack_floor.stream_sequence, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interest_streams_keep_a_message_until_every_consumer_acked_it() {
    let dir = StoreDir::new("interest");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let mut s = js
        .create_stream(stream::Config {
            retention: stream::RetentionPolicy::Interest,
            ..config("I", &["i"])
        })
        .await
        .unwrap();
    // Without consumers, nothing is kept.
    publish_n(&js, "i", 1).await;
    assert_eq!(s.info().await.unwrap().state.messages, 0);
    let mut consumers = Vec::new();
    for name in ["A", "B"] {
        let c: jetstream::consumer::PullConsumer = s
            .create_consumer(pull::Config {
                durable_name: Some(name.into()),
                ack_policy: AckPolicy::Explicit,
                ..Default::default()
            })
            .await
            .unwrap();
        consumers.push(c);
    }
    publish_n(&js, "i", 3).await;
    assert_eq!(s.info().await.unwrap().state.messages, 3);
    for (i, c) in consumers.iter().enumerate() {
        let mut batch = c.fetch().max_messages(3).messages().await.unwrap();
        while let Some(m) = batch.next().await {
            m.unwrap().double_ack().await.unwrap();
        }
        let left = s.info().await.unwrap().state.messages;
        assert_eq!(left, if i == 0 { 3 } else { 0 }, "after consumer {i} acked");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_value_buckets_keep_history_and_watchers_see_updates() {
    let dir = StoreDir::new("kv");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let kv = js
        .create_key_value(kv::Config {
            bucket: "cfg".into(),
            history: 5,
            ..Default::default()
        })
        .await
        .unwrap();
    let r1 = kv.put("a", "1".into()).await.unwrap();
    let r2 = kv.update("a", "2".into(), r1).await.unwrap();
    assert!(
        kv.update("a", "x".into(), r1).await.is_err(),
        "a stale revision"
    );
    assert!(
        kv.create("a", "x".into()).await.is_err(),
        "create over a key"
    );
    kv.create("b", "b1".into()).await.unwrap();
    assert_eq!(kv.get("a").await.unwrap().unwrap(), "2");
    let history: Vec<_> = kv
        .history("a")
        .await
        .unwrap()
        .map(|e| e.unwrap().revision)
        .collect()
        .await;
    assert_eq!(history, vec![r1, r2]);
    let mut keys: Vec<String> = kv.keys().await.unwrap().map(|k| k.unwrap()).collect().await;
    keys.sort();
    assert_eq!(keys, vec!["a", "b"]);
    // A watcher gets the current values, then what changes.
    let mut watch = kv.watch_with_history(">").await.unwrap();
    let mut initial = Vec::new();
    for _ in 0..2 {
        let e = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("initial values")
            .unwrap()
            .unwrap();
        initial.push((e.key.clone(), e.value.clone()));
    }
    assert_eq!(
        initial,
        vec![("a".into(), "2".into()), ("b".into(), "b1".into())]
    );
    kv.put("c", "3".into()).await.unwrap();
    kv.delete("b").await.unwrap();
    let e = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!((e.key.as_str(), &e.value[..]), ("c", &b"3"[..]));
    let e = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!((e.key.as_str(), e.operation), ("b", kv::Operation::Delete));
    kv.purge("a").await.unwrap();
    assert!(kv.get("a").await.unwrap().is_none());
    let status = kv.status().await.unwrap();
    assert_eq!(status.history(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mib_object_goes_in_and_comes_out_the_same() {
    let dir = StoreDir::new("obj");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let bucket = js
        .create_object_store(object_store::Config {
            bucket: "files".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let data: Vec<u8> = (0..10 << 20).map(|_| fastrand::u8(..)).collect();
    let info = bucket.put("big.bin", &mut data.as_slice()).await.unwrap();
    assert_eq!(info.size, data.len());
    let mut obj = bucket.get("big.bin").await.unwrap();
    let mut back = Vec::new();
    obj.read_to_end(&mut back).await.unwrap();
    assert!(back == data, "the object came back different");
    let names: Vec<String> = bucket
        .list()
        .await
        .unwrap()
        .map(|o| o.unwrap().name)
        .collect()
        .await;
    assert_eq!(names, vec!["big.bin"]);
    bucket.delete("big.bin").await.unwrap();
    assert!(bucket.get("big.bin").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_consumer_state_survives_a_restart_and_kill_9() {
    let dir = StoreDir::new("state");
    let mut server = start(&dir);
    let (_c, js) = connect(&server).await;
    let s = js.create_stream(config("D", &["d.>"])).await.unwrap();
    publish_n(&js, "d.x", 10).await;
    let c: jetstream::consumer::PullConsumer = s
        .create_consumer(pull::Config {
            durable_name: Some("W".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(1),
            ..Default::default()
        })
        .await
        .unwrap();
    let got: Vec<_> = c
        .fetch()
        .max_messages(6)
        .messages()
        .await
        .unwrap()
        .map(|m| m.unwrap())
        .collect()
        .await;
    assert_eq!(got.len(), 6);
    // 1..=4 acked (and confirmed), 5 and 6 delivered and not acked.
    for m in &got[..4] {
        m.double_ack().await.unwrap();
    }
    server.kill_now();
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let s = js.get_stream("D").await.unwrap();
    let mut c: jetstream::consumer::PullConsumer = s.get_consumer("W").await.unwrap();
    let info = c.info().await.unwrap();
    assert_eq!(info.ack_floor.stream_sequence, 4, "acked stays acked");
    assert_eq!(
        info.num_ack_pending, 2,
        "delivered and unacked is still pending"
    );
    assert_eq!(info.num_pending, 4);
    // What was not acked comes again (after its ack wait), then the rest.
    let mut seqs = Vec::new();
    while seqs.len() < 6 {
        let mut batch = c
            .fetch()
            .max_messages(6)
            .expires(Duration::from_secs(3))
            .messages()
            .await
            .unwrap();
        while let Some(m) = batch.next().await {
            let m = m.unwrap();
            let i = m.info().unwrap();
            seqs.push((i.stream_sequence, i.delivered));
            m.double_ack().await.unwrap();
        }
    }
    seqs.sort();
    assert_eq!(seqs, vec![(5, 2), (6, 2), (7, 1), (8, 1), (9, 1), (10, 1)]);
}

/// A raw client: CONNECT with headers, then lines and payloads as they come.
struct Raw {
    stream: std::net::TcpStream,
    reader: BufReader<std::net::TcpStream>,
}

impl Raw {
    fn connect(server: &ServerProcess) -> Raw {
        let stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut raw = Raw { stream, reader };
        raw.send("CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,\"protocol\":1}\r\n");
        raw
    }

    /// A pull request to consumer C of stream B.
    fn next_request(&mut self, inbox: &str, body: &str) {
        let msg = format!(
            "PUB $JS.API.CONSUMER.MSG.NEXT.B.C {inbox} {}\r\n{body}\r\n",
            body.len()
        );
        self.send(&msg);
    }

    fn send(&mut self, s: &str) {
        self.stream.write_all(s.as_bytes()).unwrap();
    }

    /// The next message: (control line, payload), skipping PINGs (answered) and PONGs.
    fn next_msg(&mut self) -> (String, Vec<u8>) {
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end().to_string();
            if line == "PING" {
                self.send("PONG\r\n");
                continue;
            }
            if line == "PONG" || line.starts_with("+OK") {
                continue;
            }
            let size: usize = line
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("not a message: {line:?}"));
            let mut payload = vec![0; size + 2];
            self.reader.read_exact(&mut payload).unwrap();
            payload.truncate(size);
            return (line, payload);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_requests_get_nats_server_status_bytes() {
    let dir = StoreDir::new("bytes");
    let server = start(&dir);
    let (_c, js) = connect(&server).await;
    let s = js.create_stream(config("B", &["b"])).await.unwrap();
    s.create_consumer(pull::Config {
        durable_name: Some("C".into()),
        ack_policy: AckPolicy::Explicit,
        deliver_policy: DeliverPolicy::All,
        ..Default::default()
    })
    .await
    .unwrap();
    let mut raw = Raw::connect(&server);
    raw.send("SUB inbox.> 1\r\n");
    // Nothing there and no_wait: 404 at once.
    raw.next_request("inbox.1", r#"{"batch":1,"no_wait":true}"#);
    let (line, payload) = raw.next_msg();
    assert_eq!(line, "HMSG inbox.1 1 28 28");
    assert_eq!(payload, b"NATS/1.0 404 No Messages\r\n\r\n");
    // A request that expires: 408 with what it still wanted.
    raw.next_request("inbox.2", r#"{"batch":2,"expires":200000000}"#);
    let (line, payload) = raw.next_msg();
    assert!(line.starts_with("HMSG inbox.2 1 "), "{line}");
    assert_eq!(
        String::from_utf8(payload).unwrap(),
        "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 0\r\n\r\n"
    );
    // A message: shown with its subject, the ack subject as reply.
    js.publish("b", "hello".into())
        .await
        .unwrap()
        .await
        .unwrap();
    raw.next_request("inbox.3", "1");
    let (line, payload) = raw.next_msg();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts[..3], ["MSG", "b", "1"], "{line}");
    let ack: Vec<&str> = parts[3].split('.').collect();
    assert_eq!(ack[..7], ["$JS", "ACK", "B", "C", "1", "1", "1"], "{line}");
    assert_eq!(ack[8], "0", "nothing pending after it");
    assert_eq!(payload, b"hello");
    // An ack with a reply is answered with an empty message once recorded (AckAck)...
    raw.send(&format!("PUB {} inbox.4 4\r\n+ACK\r\n", parts[3]));
    let (line, payload) = raw.next_msg();
    assert_eq!((line.as_str(), payload.len()), ("MSG inbox.4 1 0", 0));
    // ...and one to a consumer that does not exist gets no responders, as nats-server's
    // (each consumer subscribes its own ack subjects).
    raw.send("PUB $JS.ACK.B.NOPE.1.1.1.0.0 inbox.5 4\r\n+ACK\r\n");
    let (line, payload) = raw.next_msg();
    assert!(line.starts_with("HMSG inbox.5 1 "), "{line}");
    assert!(payload.starts_with(b"NATS/1.0 503"), "{payload:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_consumer_requests_get_answers_and_the_server_stays_up() {
    let dir = StoreDir::new("hostile");
    let server = start(&dir);
    let (client, js) = connect(&server).await;
    let s = js.create_stream(config("B", &["b"])).await.unwrap();
    s.create_consumer(pull::Config {
        durable_name: Some("C".into()),
        ack_policy: AckPolicy::Explicit,
        ..Default::default()
    })
    .await
    .unwrap();
    publish_n(&js, "b", 3).await;
    let mut raw = Raw::connect(&server);
    raw.send("SUB inbox.> 1\r\n");
    for body in [
        r#"{"batch":-5,"no_wait":true}"#,
        r#"{"batch":9223372036854775807,"expires":9223372036854775807,"idle_heartbeat":1}"#,
        r#"{"batch":1,"max_bytes":-1,"no_wait":true}"#,
        r#"{"batch":"many"}"#,
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "99999999999999999999999999",
    ] {
        raw.next_request("inbox.h", body);
    }
    for (subject, body) in [
        ("$JS.ACK.B.C", "+ACK"),
        ("$JS.ACK.B.C.x.y.z.w.v", "+ACK"),
        (
            "$JS.ACK.B.C.1.99999999999999999999.1.0.0",
            "-NAK {\"delay\":-5}",
        ),
        ("$JS.ACK.B.C.1.1.1.0.0", "-NAK 1000000000h"),
        ("$JS.ACK.B.C.1.1.1.0.0", "+NXT {\"batch\":-1}"),
        ("$JS.FC.B.C.zzzz", ""),
        ("$JS.FC.B", ""),
    ] {
        raw.send(&format!("PUB {subject} {} \r\n{body}\r\n", body.len()));
    }
    for (name, body) in [
        (
            "H1",
            r#"{"stream_name":"B","config":{"durable_name":"H1","ack_wait":-1,"max_deliver":7,"backoff":[-1,-2,-3],"max_ack_pending":-1,"ack_policy":"explicit"}}"#,
        ),
        (
            "H2",
            r#"{"stream_name":"B","config":{"durable_name":"H2","opt_start_time":"yesterday","deliver_policy":"by_start_time"}}"#,
        ),
        (
            "H3",
            r#"{"stream_name":"B","config":{"durable_name":"H3","inactive_threshold":-1,"idle_heartbeat":9223372036854775807,"deliver_subject":"dl.h3"}}"#,
        ),
        (
            "H4",
            r#"{"stream_name":"B","config":{"durable_name":"H4","rate_limit_bps":1,"deliver_subject":"dl.h4"}}"#,
        ),
    ] {
        let reply = client
            .request(
                format!("$JS.API.CONSUMER.DURABLE.CREATE.B.{name}"),
                body.into(),
            )
            .await
            .expect("an answer");
        let v: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
        assert!(v.get("error").is_some() || v.get("config").is_some(), "{v}");
    }
    // A push consumer limited to 1 bit/s with a subscriber: paced, not stuck.
    let _sub = client.subscribe("dl.h4").await.unwrap();
    // Still serving: the consumer delivers, and its info is sane.
    let mut c: jetstream::consumer::PullConsumer = s.get_consumer("C").await.unwrap();
    let info = c.info().await.unwrap();
    assert!(info.delivered.stream_sequence <= 3, "{info:?}");
    let got: Vec<_> = c
        .fetch()
        .max_messages(3)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .unwrap()
        .collect()
        .await;
    assert!(got.len() <= 3);
    js.publish("b", "after".into())
        .await
        .unwrap()
        .await
        .unwrap();
}
