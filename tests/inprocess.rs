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
        Arc::downgrade(&server.shared().registry.get(cid).expect("registered"));
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
        server.shared().registry.get(cid).is_none()
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

/// The server's locks under every kind of load at once, with parking_lot's deadlock
/// detector watching (a background thread asks it every 50 ms whether some threads wait on
/// each other in a cycle): pub/sub with wildcards and queue groups, subscriptions coming and
/// going, a slow consumer cut, monitoring requests, and the shutdown. The lock order this
/// enforces is written down in docs/architecture.md ("Locks").
#[test]
fn no_deadlock_under_mixed_load_and_shutdown() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let found = Arc::new(AtomicBool::new(false));
    let watching = Arc::new(AtomicBool::new(true));
    let watchdog = {
        let (found, watching) = (found.clone(), watching.clone());
        std::thread::spawn(move || {
            while watching.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let cycles = parking_lot::deadlock::check_deadlock();
                if !cycles.is_empty() {
                    for (i, threads) in cycles.iter().enumerate() {
                        for t in threads {
                            eprintln!(
                                "deadlock {i}: thread {:?}\n{:?}",
                                t.thread_id(),
                                t.backtrace()
                            );
                        }
                    }
                    found.store(true, Ordering::Relaxed);
                }
            }
        })
    };
    let config = Config {
        host: "127.0.0.1".into(),
        port: -1,
        http_port: -1,
        max_pending: 256 * 1024,
        ..Config::default()
    };
    let server = Server::start(config).expect("start");
    let port = server.local_addr().port();
    let http = server.monitor().expect("monitoring").local_addr().port();
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    // Subscribers (plain, wildcard, queue) that come and go.
    for i in 0..3 {
        let stop = stop.clone();
        load.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut c = Raw::connect(port);
                c.exchange(
                    format!("CONNECT {{\"verbose\":false}}\r\nSUB load.{i} 1\r\nSUB load.* 2\r\nSUB load.> q 3\r\nUNSUB 1\r\n").as_bytes(),
                );
            }
        }));
    }
    // Publishers.
    for _ in 0..2 {
        let stop = stop.clone();
        load.push(std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            c.exchange(b"CONNECT {\"verbose\":false}\r\n");
            while !stop.load(Ordering::Relaxed) {
                let mut batch = Vec::new();
                for i in 0..50 {
                    batch
                        .extend_from_slice(format!("PUB load.{} 5\r\nhello\r\n", i % 4).as_bytes());
                }
                c.send(&batch);
                c.sync();
            }
        }));
    }
    // A slow consumer: subscribes to the flood and never reads.
    {
        let stop = stop.clone();
        load.push(std::thread::spawn(move || {
            let mut flood = Raw::connect(port);
            flood.exchange(b"CONNECT {\"verbose\":false}\r\n");
            while !stop.load(Ordering::Relaxed) {
                let mut stuck = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                std::io::Write::write_all(
                    &mut stuck,
                    b"CONNECT {\"verbose\":false}\r\nSUB flood 1\r\nPING\r\n",
                )
                .unwrap();
                let chunk: Vec<u8> = (0..64)
                    .flat_map(|_| {
                        b"PUB flood 1000\r\n"
                            .iter()
                            .copied()
                            .chain(std::iter::repeat_n(b'x', 1000))
                            .chain(*b"\r\n")
                    })
                    .collect();
                for _ in 0..20 {
                    flood.send(&chunk);
                }
                flood.sync();
            }
        }));
    }
    // Monitoring.
    {
        let stop = stop.clone();
        load.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for path in [
                    "/varz",
                    "/connz?subs=1",
                    "/subsz?subs=1",
                    "/routez",
                    "/metrics",
                ] {
                    let _ = common::http_get(http, path);
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    server.shutdown();
    watching.store(false, Ordering::Relaxed);
    watchdog.join().unwrap();
    assert!(
        !found.load(Ordering::Relaxed),
        "parking_lot found a deadlock (see above)"
    );
}
