//! The connection ceiling: beaver admits no more connections than the system lets it
//! hold, and refuses the next one with nats-server's `-ERR 'maximum connections exceeded'`
//! instead of failing in `accept()` (out of descriptors) or leaving it hanging.
#![cfg(target_os = "linux")]

mod common;

use common::{Frame, ServerProcess};

/// The open-file limit the server runs with: 64 clients once the reserve is taken.
const OPEN_FILES: u64 = 128;

/// beaver started with an open-file limit of [`OPEN_FILES`] that it cannot raise: as root
/// (which could raise the hard limit), without `CAP_SYS_RESOURCE`, through `setpriv`.
fn beaver_with_few_descriptors() -> ServerProcess {
    let script = format!(
        "ulimit -n {OPEN_FILES} && exec {} -a 127.0.0.1 -p -1",
        env!("CARGO_BIN_EXE_beaver")
    );
    let root = effective_uid() == Some(0);
    let mut args = Vec::new();
    if root {
        args.extend(["--bounding-set", "-sys_resource", "sh"]);
    }
    args.extend(["-c", script.as_str()]);
    let program = if root { "setpriv" } else { "sh" };
    ServerProcess::start(program, &args, "beaver").expect("beaver starts")
}

#[test]
fn connections_past_the_system_ceiling_are_refused_as_nats_server_refuses_them() {
    let server = beaver_with_few_descriptors();
    // Start-up names the limit that caps the clients below max_connections.
    let banner = server
        .log_lines()
        .into_iter()
        .find(|l| l.contains("Clients:"))
        .expect("a Clients: line");
    assert!(
        banner.contains(&format!("the open file limit is {OPEN_FILES}")),
        "{banner}"
    );
    let ceiling: usize = banner
        .split("at most about ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .expect("a number of clients");
    assert!(
        ceiling > 8 && (ceiling as u64) < OPEN_FILES,
        "{ceiling} clients"
    );
    // Every client up to the ceiling is served...
    let mut clients = Vec::new();
    for _ in 0..ceiling {
        let mut c = server.raw();
        assert_eq!(
            c.exchange(b"CONNECT {\"verbose\":false}\r\n"),
            vec![Frame::Pong]
        );
        clients.push(c);
    }
    // ...and the next gets INFO, then the reference's error, and is closed.
    let mut refused = server.raw();
    assert_eq!(refused.info["port"], server.port, "INFO first");
    refused.until_closed();
    let after_info: Vec<u8> = refused.received.iter().flat_map(common::encode).collect();
    assert_eq!(
        String::from_utf8_lossy(&after_info),
        "-ERR 'maximum connections exceeded'\r\n"
    );
    // The clients that were admitted go on working, and a freed place is taken again.
    let last = clients.last_mut().expect("clients");
    assert_eq!(last.exchange(b""), vec![Frame::Pong]);
    drop(clients.pop());
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let mut c = server.raw();
        if c.exchange(b"") == vec![Frame::Pong] && !c.closed {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the freed place was never given again"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The test process's effective user id (the second number of `/proc/self/status`'s
/// `Uid:` line).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}
