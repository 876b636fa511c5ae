//! Faults with real sockets: clients that die in the middle of an operation, and a
//! publisher flooding a subscriber that does not read next to one that does.

mod common;

use common::{show, Frame, Raw, ServerProcess};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Clients killed mid-`PUB` and mid-payload deliver nothing and hurt no one.
#[test]
fn clients_killed_mid_pub_and_mid_payload() {
    let server = ServerProcess::beaver(&[]);
    let mut sub = server.raw();
    assert_eq!(
        show(&sub.exchange(b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\n")),
        "PONG\r\n"
    );
    let cuts: [&[u8]; 5] = [
        b"PUB fo",
        b"PUB foo 100\r\nabc",
        b"PUB foo 5\r\nhello",
        b"PUB foo 5\r\nhello\r",
        b"HPUB foo 12 14\r\nNATS/1.0\r\n",
    ];
    for round in 0..8 {
        for cut in cuts {
            let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
            s.write_all(b"CONNECT {\"verbose\":false,\"headers\":true}\r\n")
                .unwrap();
            s.write_all(cut).unwrap();
            if round % 2 == 0 {
                let _ = s.shutdown(Shutdown::Both);
            }
            drop(s);
        }
    }
    // Nothing complete was published.
    assert_eq!(show(&sub.sync()), "PONG\r\n");
    // The server still serves.
    let mut publisher = server.raw();
    publisher.exchange(b"CONNECT {\"verbose\":false}\r\nPUB foo 2\r\nok\r\n");
    assert_eq!(show(&sub.sync()), "MSG foo 1 2\r\nok\r\nPONG\r\n");
}

/// One publisher floods a subject with two subscribers: one reads, one never does. The
/// reading one gets every message, in order; the other is closed as a slow consumer.
#[test]
fn flood_with_one_non_reading_subscriber() {
    let config = std::env::temp_dir().join(format!("beaver-faults-{}.toml", std::process::id()));
    std::fs::write(&config, "max_pending = \"2MB\"\nmax_payload = \"64KB\"\n").unwrap();
    let server = ServerProcess::beaver(&["-c", config.to_str().unwrap()]);

    // The subscriber that never reads: a small receive buffer so the kernel holds little.
    let stuck = {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], server.port).into();
        socket.connect(&addr.into()).expect("connect");
        let mut s: TcpStream = socket.into();
        s.write_all(b"CONNECT {\"verbose\":false}\r\nSUB flood 1\r\nPING\r\n")
            .unwrap();
        s
    };
    let mut reader = server.raw();
    reader.exchange(b"CONNECT {\"verbose\":false}\r\nSUB flood 1\r\n");
    let base = reader.received.len();
    // The stuck client's SUB is in before anything is published: its PONG came back (it is
    // the only thing it ever reads).
    {
        let mut s = stuck.try_clone().unwrap();
        s.set_read_timeout(Some(common::WAIT)).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.windows(6).any(|w| w == b"PONG\r\n") {
            let n = s.read(&mut buf).expect("PONG");
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
    }

    const N: usize = 40_000;
    const SIZE: usize = 512;
    let port = server.port;
    let publisher = std::thread::spawn(move || {
        let mut p = Raw::connect(port);
        p.send(b"CONNECT {\"verbose\":false}\r\n");
        let mut buf = Vec::with_capacity(64 * 1024);
        for i in 0..N {
            let mut payload = format!("{i:08}").into_bytes();
            payload.resize(SIZE, b'.');
            buf.extend_from_slice(format!("PUB flood {SIZE}\r\n").as_bytes());
            buf.extend_from_slice(&payload);
            buf.extend_from_slice(b"\r\n");
            if buf.len() >= 60 * 1024 {
                p.send(&buf);
                buf.clear();
            }
        }
        p.send(&buf);
        assert_eq!(
            show(&p.sync()),
            "PONG\r\n",
            "the publisher is never refused"
        );
    });

    let frames = reader.wait_frames(base, N);
    for (i, f) in frames.iter().take(N).enumerate() {
        match f {
            Frame::Msg(line, payload) => {
                assert_eq!(line, &format!("MSG flood 1 {SIZE}"));
                assert_eq!(
                    &payload[..8],
                    format!("{i:08}").as_bytes(),
                    "message {i} in order"
                );
            }
            other => panic!("message {i}: expected MSG, got {other:?}"),
        }
    }
    assert_eq!(frames.len(), N, "exactly every message");
    publisher.join().expect("publisher");
    assert!(server.wait_for_log("Slow Consumer Detected"));

    // The stuck client was closed: reading it now ends (after what the kernel held).
    let mut s = stuck;
    s.set_read_timeout(Some(common::WAIT)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => assert!(
                Instant::now() < deadline,
                "the slow consumer is never closed"
            ),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the slow consumer was not closed: {e}"),
        }
    }
    // And the reader is still fine.
    assert_eq!(show(&reader.sync()), "PONG\r\n");
}
