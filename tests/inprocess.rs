//! beaver used as a library: a `Server` started in this process, with raw clients on
//! loopback, to check what only an in-process view can see: that what a departed
//! connection held, and the whole server once dropped, is really freed.

mod common;

use beaver::{Config, Server};
use common::{show, Raw, WAIT};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Polls `done` until it holds, for at most [`WAIT`].
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A departed subscriber is not kept alive by the subscription table's shared match cache
/// (it was, until the same subject was looked up again), and a server dropped in-process
/// frees its accounts, its tables and its shared state (an account ↔ subscription cycle
/// through that cache leaked them).
#[test]
fn departed_connections_and_dropped_servers_are_freed() {
    let config = Config {
        host: "127.0.0.1".into(),
        port: -1,
        ..Config::default()
    };
    let server = Server::start(config).expect("start");
    let port = server.local_addr().port();
    let shared = Arc::downgrade(server.shared());
    let account = Arc::downgrade(server.shared().accounts.global());

    let mut sub = Raw::connect(port);
    let cid = sub.info["client_id"].as_u64().unwrap();
    sub.exchange(b"CONNECT {\"verbose\":false}\r\nSUB x 1\r\nSUB y.* 2\r\n");
    let client: Weak<beaver::client::Client> =
        Arc::downgrade(&server.shared().clients.get(&cid).expect("registered"));
    // A publisher that uses both subjects twice: each result is then cached, in its
    // reader's private cache and in the table's shared cache.
    let mut publisher = Raw::connect(port);
    publisher.exchange(b"CONNECT {\"verbose\":false}\r\n");
    for _ in 0..2 {
        publisher.exchange(b"PUB x 1\r\na\r\nPUB y.z 1\r\nb\r\n");
    }
    assert_eq!(
        show(&sub.sync()),
        "MSG x 1 1\r\na\r\nMSG y.z 2 1\r\nb\r\nMSG x 1 1\r\na\r\nMSG y.z 2 1\r\nb\r\nPONG\r\n"
    );
    drop(sub);
    eventually("the subscriber to leave", || {
        !server.shared().clients.contains_key(&cid)
    });
    // The publisher's reader drops its private cache at its next read (the table changed);
    // it publishes on another subject, so nothing looks `x` or `y.z` up again.
    publisher.exchange(b"PUB other 1\r\nc\r\n");
    eventually("the departed client to be freed", || {
        client.upgrade().is_none()
    });

    drop(publisher);
    server.shutdown();
    eventually("the account to be freed", || account.upgrade().is_none());
    eventually("the server's shared state to be freed", || {
        shared.upgrade().is_none()
    });
}
