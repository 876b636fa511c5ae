//! Integration tests with the official Rust NATS client, `async-nats`, against the real
//! `beaver` binary: each test starts its own server on a random loopback port.
//!
//! Two properties of async-nats 0.51 shape these tests:
//! - `Client::flush` only writes the client's buffer to the socket; it does not wait for a
//!   `PONG`. So "the server has processed everything this client sent" is established with
//!   [`sync`]: a message published to a fresh inbox the same client subscribes to. The server
//!   handles one connection's operations in order, so when that message comes back every
//!   earlier `SUB`/`PUB`/`UNSUB` has been handled, and every message the server queued for this
//!   connection before it has been read and dispatched to its subscription's channel. Across
//!   connections the tests also rely on a publisher's round trip meaning its messages are
//!   already queued for their subscribers (as in nats-server), so a subscriber's round trip
//!   afterwards comes back behind them.
//! - A subscription's channel that is full drops messages (a client-side slow consumer), so
//!   every client here gets a channel big enough to hold everything a test sends.

mod common;

use async_nats::{Client, HeaderMap, Message, RequestErrorKind, Subscriber};
use bytes::Bytes;
use common::ServerProcess;
use futures::{FutureExt, StreamExt};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The bound on any single wait; a test that reaches it fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// Room in every subscription's channel: more than any test sends to one subscription.
const CAPACITY: usize = 200_000;

/// Awaits `fut`, failing the test if it takes longer than [`LIMIT`].
async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(out) => out,
        Err(_) => panic!("timed out after {LIMIT:?} waiting for {what}"),
    }
}

/// A new client connection to `server`.
async fn connect(server: &ServerProcess) -> Client {
    within(
        "connect",
        async_nats::ConnectOptions::new()
            .subscription_capacity(CAPACITY)
            .connect(server.url()),
    )
    .await
    .expect("async-nats connects to beaver")
}

/// The next message on `sub`; fails if the stream ends or nothing comes within [`LIMIT`].
async fn next(sub: &mut Subscriber) -> Message {
    within("a message", sub.next())
        .await
        .expect("the subscription ended while a message was expected")
}

/// Waits for `sub` to end (`None`), failing on an extra message.
async fn expect_end(sub: &mut Subscriber) {
    if let Some(m) = within("the end of the subscription", sub.next()).await {
        panic!(
            "expected the subscription to end, got a message on {}: {:?}",
            m.subject, m.payload
        );
    }
}

/// The messages already dispatched to `sub` (without waiting).
fn take_ready(sub: &mut Subscriber) -> Vec<Message> {
    let mut out = Vec::new();
    // `unconstrained`: tokio's cooperative budget would otherwise make a ready channel look
    // empty after many receives.
    while let Some(Some(m)) = tokio::task::unconstrained(sub.next()).now_or_never() {
        out.push(m);
    }
    out
}

/// A round trip through the server on `client`'s connection: see the module comment.
/// Returns the inbox subject used (a `>` subscription on this connection sees it).
async fn sync(client: &Client) -> String {
    let inbox = client.new_inbox();
    let mut sub = client.subscribe(inbox.clone()).await.expect("subscribe");
    client
        .publish(inbox.clone(), Bytes::from_static(b"sync"))
        .await
        .expect("publish");
    let m = next(&mut sub).await;
    assert_eq!(m.subject.as_str(), inbox);
    assert_eq!(&m.payload[..], b"sync");
    sub.unsubscribe().await.expect("unsubscribe");
    inbox
}

/// Messages counted by `client` since it connected.
fn in_messages(client: &Client) -> u64 {
    client.statistics().in_messages.load(Ordering::Relaxed)
}

/// `(subject, payload)` of a message, for readable comparisons.
fn sp(m: &Message) -> (String, String) {
    (
        m.subject.to_string(),
        String::from_utf8_lossy(&m.payload).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pub_sub_round_trip() {
    let server = ServerProcess::beaver(&[]);
    let sub_client = connect(&server).await;
    let pub_client = connect(&server).await;

    let mut sub = sub_client.subscribe("greet.*").await.unwrap();
    sync(&sub_client).await;

    pub_client
        .publish("greet.joe", Bytes::from_static(b"hello joe"))
        .await
        .unwrap();
    pub_client.flush().await.unwrap();

    let m = next(&mut sub).await;
    assert_eq!(m.subject.as_str(), "greet.joe");
    assert_eq!(&m.payload[..], b"hello joe");
    assert!(m.reply.is_none());
    assert!(m.headers.is_none());
    assert!(m.status.is_none());

    // Nothing else was delivered.
    sync(&sub_client).await;
    assert!(take_ready(&mut sub).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcards_match_like_nats() {
    let server = ServerProcess::beaver(&[]);
    let sub_client = connect(&server).await;
    let pub_client = connect(&server).await;

    let patterns = ["a.*.c", "a.>", ">", "a.b.c"];
    let mut subs = Vec::new();
    for p in patterns {
        subs.push(sub_client.subscribe(p).await.unwrap());
    }
    // The round trip's own message reaches ">" (first), and only ">".
    let inbox = sync(&sub_client).await;

    // "end" on a.b.c matches all four subscriptions: it marks the end of each stream.
    for (subject, payload) in [
        ("a.b.c", "1"),
        ("a.b", "2"),
        ("a.b.c.d", "3"),
        ("a.b.c", "end"),
    ] {
        pub_client
            .publish(subject, Bytes::from(payload.to_string()))
            .await
            .unwrap();
    }
    pub_client.flush().await.unwrap();

    let s = |subject: &str, payload: &str| (subject.to_string(), payload.to_string());
    let expected: BTreeMap<&str, Vec<(String, String)>> = [
        ("a.*.c", vec![s("a.b.c", "1"), s("a.b.c", "end")]),
        (
            "a.>",
            vec![
                s("a.b.c", "1"),
                s("a.b", "2"),
                s("a.b.c.d", "3"),
                s("a.b.c", "end"),
            ],
        ),
        (
            ">",
            vec![
                s(&inbox, "sync"),
                s("a.b.c", "1"),
                s("a.b", "2"),
                s("a.b.c.d", "3"),
                s("a.b.c", "end"),
            ],
        ),
        ("a.b.c", vec![s("a.b.c", "1"), s("a.b.c", "end")]),
    ]
    .into_iter()
    .collect();

    for (pattern, sub) in patterns.iter().zip(subs.iter_mut()) {
        let mut got = Vec::new();
        loop {
            let m = next(sub).await;
            let end = &m.payload[..] == b"end";
            got.push(sp(&m));
            if end {
                break;
            }
        }
        assert_eq!(got, expected[pattern], "messages delivered to {pattern:?}");
    }

    // And nothing after the end marker but, on ">", the next round trip's message.
    let inbox = sync(&sub_client).await;
    for (pattern, sub) in patterns.iter().zip(subs.iter_mut()) {
        let extra: Vec<_> = take_ready(sub).iter().map(sp).collect();
        let expected = if *pattern == ">" {
            vec![s(&inbox, "sync")]
        } else {
            vec![]
        };
        assert_eq!(extra, expected, "{pattern:?} after the end marker");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_group_delivers_each_message_to_one_member() {
    const N: usize = 1000;
    let server = ServerProcess::beaver(&[]);
    let worker1 = connect(&server).await;
    let worker2 = connect(&server).await;
    let watcher = connect(&server).await;
    let publisher = connect(&server).await;

    let mut q1 = worker1
        .queue_subscribe("jobs", "workers".into())
        .await
        .unwrap();
    let mut q2 = worker2
        .queue_subscribe("jobs", "workers".into())
        .await
        .unwrap();
    let mut plain = watcher.subscribe("jobs").await.unwrap();
    sync(&worker1).await;
    sync(&worker2).await;
    sync(&watcher).await;

    for i in 0..N {
        publisher
            .publish("jobs", Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    // The server has handled every PUB, so every delivery is queued; then each subscriber's
    // own round trip comes after its deliveries.
    sync(&publisher).await;
    sync(&worker1).await;
    sync(&worker2).await;
    sync(&watcher).await;

    let parse = |m: &Message| -> usize {
        assert_eq!(m.subject.as_str(), "jobs");
        std::str::from_utf8(&m.payload).unwrap().parse().unwrap()
    };
    let got1: Vec<usize> = take_ready(&mut q1).iter().map(parse).collect();
    let got2: Vec<usize> = take_ready(&mut q2).iter().map(parse).collect();
    let all: Vec<usize> = take_ready(&mut plain).iter().map(parse).collect();

    assert_eq!(
        all,
        (0..N).collect::<Vec<_>>(),
        "the plain subscriber gets all, in order"
    );
    assert_eq!(
        got1.len() + got2.len(),
        N,
        "each message goes to exactly one queue member"
    );
    let mut union: Vec<usize> = got1.iter().chain(got2.iter()).copied().collect();
    union.sort_unstable();
    assert_eq!(
        union,
        (0..N).collect::<Vec<_>>(),
        "no message lost or duplicated"
    );
    // Each member's share is in publish order.
    assert!(got1.windows(2).all(|w| w[0] < w[1]));
    assert!(got2.windows(2).all(|w| w[0] < w[1]));
    // A random pick spreads the load: with p = 1/2, fewer than 300 of 1000 is ~1e-37.
    assert!(
        got1.len() >= 300 && got2.len() >= 300,
        "uneven spread: {} and {}",
        got1.len(),
        got2.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_reply() {
    let server = ServerProcess::beaver(&[]);
    let responder = connect(&server).await;
    let requester = connect(&server).await;

    let mut service = responder.subscribe("echo").await.unwrap();
    sync(&responder).await;
    let task = tokio::spawn({
        let responder = responder.clone();
        async move {
            let mut served = 0usize;
            while let Some(m) = service.next().await {
                let reply = m.reply.expect("a request carries a reply subject");
                let mut out = b"echo: ".to_vec();
                out.extend_from_slice(&m.payload);
                responder.publish(reply, out.into()).await.unwrap();
                served += 1;
            }
            served
        }
    });

    for i in 0..100 {
        let payload = format!("request {i}");
        let reply = within(
            "a reply",
            requester.request("echo", Bytes::from(payload.clone())),
        )
        .await
        .unwrap_or_else(|e| panic!("request {i} failed: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&reply.payload),
            format!("echo: {payload}")
        );
        assert!(reply.status.is_none());
    }

    // Stop the responder: drain ends its subscription stream, then the task returns.
    within("the responder drain", responder.drain())
        .await
        .unwrap();
    let served = within("the responder task", task).await.unwrap();
    assert_eq!(served, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_round_trip() {
    let server = ServerProcess::beaver(&[]);
    let sub_client = connect(&server).await;
    let pub_client = connect(&server).await;

    let mut sub = sub_client.subscribe("hdr.>").await.unwrap();
    sync(&sub_client).await;

    let mut headers = HeaderMap::new();
    headers.insert("X-Trace-Id", "abc-123");
    headers.insert("X-Tags", "first");
    headers.append("X-Tags", "second");
    headers.append("X-Tags", "third value");
    assert_eq!(headers.get_all("X-Tags").count(), 3);

    pub_client
        .publish_with_headers(
            "hdr.full",
            headers.clone(),
            Bytes::from_static(b"body bytes"),
        )
        .await
        .unwrap();
    pub_client
        .publish_with_headers("hdr.empty", headers.clone(), Bytes::new())
        .await
        .unwrap();
    pub_client.flush().await.unwrap();

    let m = next(&mut sub).await;
    assert_eq!(m.subject.as_str(), "hdr.full");
    assert_eq!(&m.payload[..], b"body bytes");
    let got = m.headers.expect("headers arrive");
    assert_eq!(got, headers);
    assert_eq!(got.get("X-Trace-Id").map(|v| v.as_str()), Some("abc-123"));
    let tags: Vec<&str> = got.get_all("X-Tags").map(|v| v.as_str()).collect();
    assert_eq!(tags, ["first", "second", "third value"]);
    assert!(m.status.is_none());

    let m = next(&mut sub).await;
    assert_eq!(m.subject.as_str(), "hdr.empty");
    assert!(m.payload.is_empty(), "empty payload, got {:?}", m.payload);
    assert_eq!(m.headers.expect("headers arrive"), headers);
    assert!(m.status.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_without_responders_fails_with_no_responders() {
    let server = ServerProcess::beaver(&[]);
    let client = within(
        "connect",
        async_nats::ConnectOptions::new()
            .request_timeout(Some(Duration::from_secs(5)))
            .connect(server.url()),
    )
    .await
    .unwrap();

    for _ in 0..3 {
        let err = within(
            "the no-responders answer",
            client.request("nobody.home", Bytes::from_static(b"anyone?")),
        )
        .await
        .expect_err("a request nobody listens to fails");
        assert_eq!(err.kind(), RequestErrorKind::NoResponders, "error: {err}");
    }

    // The connection is still fine afterwards.
    let mut sub = client.subscribe("still.ok").await.unwrap();
    client
        .publish("still.ok", Bytes::from_static(b"yes"))
        .await
        .unwrap();
    assert_eq!(&next(&mut sub).await.payload[..], b"yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_thousand_messages_in_order() {
    const N: u64 = 100_000;
    let server = ServerProcess::beaver(&[]);
    let sub_client = connect(&server).await;
    let pub_client = connect(&server).await;

    let mut sub = sub_client.subscribe("seq").await.unwrap();
    sync(&sub_client).await;

    let receiver = tokio::spawn(async move {
        for expected in 0..N {
            let m = next(&mut sub).await;
            let got: u64 = std::str::from_utf8(&m.payload)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad payload {:?}", m.payload));
            assert_eq!(got, expected, "message {expected} out of order or lost");
        }
        sub
    });

    for i in 0..N {
        pub_client
            .publish("seq", Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    within("the publisher flush", pub_client.flush())
        .await
        .unwrap();

    let mut sub = within("the receiver", receiver).await.unwrap();
    // Exactly once: nothing after the last one.
    sync(&pub_client).await;
    sync(&sub_client).await;
    assert_eq!(take_ready(&mut sub).len(), 0, "extra messages after {N}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_delivers_pending_messages_then_ends() {
    let server = ServerProcess::beaver(&[]);
    let sub_client = connect(&server).await;
    let pub_client = connect(&server).await;

    // Subscription drain. A second subscription on the same connection sees a marker published
    // after the messages: when the marker arrives, every earlier message is in the drained
    // subscription's channel (async-nats only delivers what it has already read).
    let mut sub = sub_client.subscribe("work").await.unwrap();
    let mut marker = sub_client.subscribe("marker").await.unwrap();
    sync(&sub_client).await;

    for i in 0..100 {
        pub_client
            .publish("work", Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    pub_client
        .publish("marker", Bytes::from_static(b"1"))
        .await
        .unwrap();
    pub_client.flush().await.unwrap();

    let mut got = Vec::new();
    for _ in 0..10 {
        got.push(String::from_utf8(next(&mut sub).await.payload.to_vec()).unwrap());
    }
    assert_eq!(&next(&mut marker).await.payload[..], b"1");
    within("subscription drain", sub.drain()).await.unwrap();
    while let Some(m) = within("a drained message", sub.next()).await {
        got.push(String::from_utf8(m.payload.to_vec()).unwrap());
    }
    let expected: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    assert_eq!(
        got, expected,
        "every message published before the drain, in order"
    );

    // The server dropped the subscription: later messages on "work" never reach this
    // connection (its message count only grows by the marker).
    sync(&sub_client).await;
    let before = in_messages(&sub_client);
    for i in 0..10 {
        pub_client
            .publish("work", Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    pub_client
        .publish("marker", Bytes::from_static(b"2"))
        .await
        .unwrap();
    assert_eq!(&next(&mut marker).await.payload[..], b"2");
    assert_eq!(
        in_messages(&sub_client) - before,
        1,
        "only the marker arrived"
    );

    // Client drain: the same, for every subscription of a connection, which then closes.
    let mut a = sub_client.subscribe("drain.a").await.unwrap();
    let mut b = sub_client.subscribe("drain.b").await.unwrap();
    sync(&sub_client).await;
    for i in 0..50 {
        pub_client
            .publish("drain.a", Bytes::from(format!("a{i}")))
            .await
            .unwrap();
        pub_client
            .publish("drain.b", Bytes::from(format!("b{i}")))
            .await
            .unwrap();
    }
    pub_client
        .publish("marker", Bytes::from_static(b"3"))
        .await
        .unwrap();
    assert_eq!(&next(&mut marker).await.payload[..], b"3");
    within("client drain", sub_client.drain()).await.unwrap();
    for (sub, prefix) in [(&mut a, "a"), (&mut b, "b")] {
        let mut got = Vec::new();
        while let Some(m) = within("a drained message", sub.next()).await {
            got.push(String::from_utf8(m.payload.to_vec()).unwrap());
        }
        let expected: Vec<String> = (0..50).map(|i| format!("{prefix}{i}")).collect();
        assert_eq!(got, expected);
    }
    expect_end(&mut marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribe_after_three() {
    let server = ServerProcess::beaver(&[]);
    let client = connect(&server).await;

    let mut sub = client.subscribe("limited").await.unwrap();
    sub.unsubscribe_after(3).await.unwrap();
    for i in 0..10 {
        client
            .publish("limited", Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    while let Some(m) = within("a message", sub.next()).await {
        got.push(String::from_utf8(m.payload.to_vec()).unwrap());
    }
    assert_eq!(got, ["0", "1", "2"]);

    // async-nats also counts on its side; check the server stopped too: after a round trip,
    // the connection received exactly 3 messages plus the round trip's own.
    sync(&client).await;
    assert_eq!(in_messages(&client), 4, "the server delivered more than 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_messages_and_max_payload() {
    const MAX: usize = 1024 * 1024;
    let server = ServerProcess::beaver(&[]);
    let sub_client = connect(&server).await;
    let pub_client = connect(&server).await;
    assert_eq!(pub_client.max_payload(), MAX);

    let mut sub = sub_client.subscribe("big").await.unwrap();
    sync(&sub_client).await;

    // Exactly max_payload bytes: allowed. A pattern so that misplaced bytes show.
    let big: Bytes = (0..MAX)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    pub_client.publish("big", big.clone()).await.unwrap();
    pub_client.flush().await.unwrap();
    let m = next(&mut sub).await;
    assert_eq!(m.payload.len(), MAX);
    assert!(m.payload == big, "the 1 MiB payload arrives intact");

    // One byte more: async-nats refuses it before sending (it knows max_payload from INFO).
    let too_big = Bytes::from(vec![7u8; MAX + 1]);
    let err = pub_client.publish("big", too_big).await.unwrap_err();
    assert_eq!(
        err.kind(),
        async_nats::client::PublishErrorKind::MaxPayloadExceeded
    );
    // Headers count towards the limit too.
    let mut headers = HeaderMap::new();
    headers.insert("X-Big", "yes");
    let err = pub_client
        .publish_with_headers("big", headers.clone(), big.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        async_nats::client::PublishErrorKind::MaxPayloadExceeded
    );

    // The connection still works, and headers plus payload just under the limit pass.
    let room = MAX - 100;
    let almost = big.slice(..room);
    pub_client
        .publish_with_headers("big", headers.clone(), almost.clone())
        .await
        .unwrap();
    pub_client.flush().await.unwrap();
    let m = next(&mut sub).await;
    assert!(m.payload == almost);
    assert_eq!(m.headers.unwrap(), headers);

    // The server enforces the limit itself for a client that ignores it.
    let mut raw = server.raw();
    raw.send(format!("CONNECT {{\"verbose\":false}}\r\nPUB big {}\r\n", MAX + 1).as_bytes());
    let frames = raw.until_closed();
    assert!(
        frames
            .iter()
            .any(|f| *f == common::Frame::Err("-ERR 'Maximum Payload Violation'".into())),
        "server answer: {}",
        common::show(&frames)
    );
    // Nothing from the rejected publisher reached the subscriber.
    sync(&sub_client).await;
    assert!(take_ready(&mut sub).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_info_as_announced() {
    let server = ServerProcess::beaver(&[]);
    let client = connect(&server).await;
    let info = client.server_info();
    assert_eq!(info.version, "2.9.10");
    assert!(info.headers);
    assert_eq!(info.max_payload, 1_048_576);
    assert_eq!(info.proto, 1);
    assert_eq!(info.port, server.port);
    assert!(!info.server_id.is_empty());
    assert!(!info.auth_required);
    assert!(!info.tls_required);
    assert!(client.is_server_compatible(2, 2, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_to_fifty_subscribers() {
    const SUBS: usize = 50;
    const CLIENTS: usize = 5;
    const N: usize = 100;
    let server = ServerProcess::beaver(&[]);
    let publisher = connect(&server).await;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(connect(&server).await);
    }
    let mut subs = Vec::new();
    for i in 0..SUBS {
        subs.push(clients[i % CLIENTS].subscribe("fan").await.unwrap());
    }
    for c in &clients {
        sync(c).await;
    }

    for i in 0..N {
        publisher
            .publish("fan", Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    publisher.flush().await.unwrap();

    let expected: Vec<String> = (0..N).map(|i| i.to_string()).collect();
    for (k, sub) in subs.iter_mut().enumerate() {
        let mut got = Vec::new();
        for _ in 0..N {
            let m = next(sub).await;
            assert_eq!(m.subject.as_str(), "fan");
            got.push(String::from_utf8(m.payload.to_vec()).unwrap());
        }
        assert_eq!(got, expected, "subscriber {k}");
    }

    // Exactly N each.
    sync(&publisher).await;
    for c in &clients {
        sync(c).await;
    }
    for (k, sub) in subs.iter_mut().enumerate() {
        assert!(
            take_ready(sub).is_empty(),
            "subscriber {k} got extra messages"
        );
    }
}
