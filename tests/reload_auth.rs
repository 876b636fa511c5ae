//! Reloads that change who may connect and what they may do (SIGHUP), as nats-server 2.9.10
//! applies them: the same configuration files, the same signals, the same bytes to the
//! clients that were connected before and after.
#![cfg(unix)]

mod common;

use base64::Engine;
use common::{show, Raw, ServerProcess};
use std::path::PathBuf;
use std::process::Command;

const VIOLATION: &str = "-ERR 'Authorization Violation'\r\n";

/// A configuration file that the test rewrites between reloads.
struct ConfFile(PathBuf);

impl ConfFile {
    fn new(name: &str, text: &str) -> ConfFile {
        let path =
            std::env::temp_dir().join(format!("beaver-reload-auth-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        ConfFile(path)
    }

    fn set(&self, text: &str) {
        std::fs::write(&self.0, text).unwrap();
    }

    fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for ConfFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// beaver and, when installed, nats-server, each with its own copy of the file.
fn servers(name: &str, text: &str) -> Vec<(ServerProcess, ConfFile)> {
    let mut v = Vec::new();
    let c = ConfFile::new(&format!("{name}-beaver.conf"), text);
    v.push((ServerProcess::beaver(&["-c", c.arg()]), c));
    let c = ConfFile::new(&format!("{name}-nats.conf"), text);
    if let Some(s) = ServerProcess::nats_server(&["-c", c.arg()]) {
        v.push((s, c));
    }
    v
}

/// Sends SIGHUP and waits until the server logged that the reload is done.
fn reload(server: &ServerProcess) {
    let before = server
        .log_lines()
        .iter()
        .filter(|l| l.contains("Reloaded server configuration"))
        .count();
    let ok = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let deadline = std::time::Instant::now() + common::WAIT;
    while std::time::Instant::now() < deadline {
        let done = server
            .log_lines()
            .iter()
            .filter(|l| l.contains("Reloaded server configuration"))
            .count();
        if done > before {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{}: no reload: {:#?}", server.name, server.log_lines());
}

fn login(server: &ServerProcess, user: &str, pass: &str) -> Raw {
    let mut raw = server.raw();
    let got = raw.exchange(
        format!("CONNECT {{\"verbose\":false,\"user\":\"{user}\",\"pass\":\"{pass}\"}}\r\n")
            .as_bytes(),
    );
    assert_eq!(show(&got), "PONG\r\n", "{}: login {user}", server.name);
    raw
}

/// What a connected client gets next: the frames until the server's answer to a PING, or
/// until it closed the connection (shown as `<closed>`).
fn next(raw: &mut Raw, bytes: &[u8]) -> String {
    let mut s = show(&raw.exchange(bytes));
    if raw.closed {
        s.push_str("<closed>");
    }
    s
}

#[test]
fn a_changed_password_closes_who_used_the_old_one() {
    let first = "authorization {\n  users = [\n    { user: alice, password: one }\n    \
                 { user: bob, password: stays }\n  ]\n}\n";
    let second = "authorization {\n  users = [\n    { user: alice, password: two }\n    \
                  { user: bob, password: stays }\n  ]\n}\n";
    let mut answers = Vec::new();
    for (server, conf) in servers("password", first) {
        let mut alice = login(&server, "alice", "one");
        let mut bob = login(&server, "bob", "stays");
        conf.set(second);
        reload(&server);
        let alice_got = next(&mut alice, b"");
        let bob_got = next(&mut bob, b"");
        // The new password works, the old one no longer does.
        login(&server, "alice", "two");
        let mut again = server.raw();
        let old = next(
            &mut again,
            b"CONNECT {\"verbose\":false,\"user\":\"alice\",\"pass\":\"one\"}\r\n",
        );
        answers.push((server.name, alice_got, bob_got, old));
        if server.name == "beaver" {
            assert!(server.wait_for_log("Reloaded: authorization users"));
            assert!(!server.log_lines().join("\n").contains("two"));
        }
    }
    for (name, alice, bob, old) in &answers {
        assert_eq!(alice, &format!("{VIOLATION}<closed>"), "{name}");
        assert_eq!(bob, "PONG\r\n", "{name}");
        assert_eq!(old, &format!("{VIOLATION}<closed>"), "{name}");
    }
}

#[test]
fn changed_permissions_apply_to_connected_clients() {
    let first = "authorization {\n  users = [\n    { user: u, password: p, permissions: { \
                 publish: [\"a.>\", \"b\"], subscribe: [\"s.>\", \"t\"] } }\n  ]\n}\n";
    let second = "authorization {\n  users = [\n    { user: u, password: p, permissions: { \
                  publish: [\"a.>\", \"s.>\"], subscribe: [\"s.>\"] } }\n  ]\n}\n";
    let mut transcripts = Vec::new();
    for (server, conf) in servers("perms", first) {
        let mut u = login(&server, "u", "p");
        assert_eq!(
            next(&mut u, b"SUB s.x 1\r\nSUB t 2\r\nPUB b 0\r\n\r\n"),
            "PONG\r\n"
        );
        conf.set(second);
        reload(&server);
        // The subscription to `t` is no longer allowed: removed, with an -ERR naming it.
        let after = next(&mut u, b"PUB b 0\r\n\r\nPUB t 1\r\nx\r\nPUB s.x 1\r\ny\r\n");
        transcripts.push((server.name, after));
    }
    for (name, after) in &transcripts {
        assert_eq!(
            after,
            "-ERR 'Permissions Violation for Subscription to \"t\" (sid \"2\")'\r\n\
             -ERR 'Permissions Violation for Publish to \"b\"'\r\n\
             -ERR 'Permissions Violation for Publish to \"t\"'\r\n\
             MSG s.x 1 1\r\ny\r\nPONG\r\n",
            "{name}"
        );
    }
}

#[test]
fn a_removed_nkey_user_and_a_token_change() {
    let kept = nkeys::KeyPair::new_user();
    let removed = nkeys::KeyPair::new_user();
    let users = |keys: &[&nkeys::KeyPair]| {
        let list: Vec<String> = keys
            .iter()
            .map(|k| format!("{{ nkey: {} }}", k.public_key()))
            .collect();
        format!("authorization {{ users = [ {} ] }}\n", list.join(", "))
    };
    let mut answers = Vec::new();
    for (server, conf) in servers("nkeys", &users(&[&kept, &removed])) {
        let connect = |k: &nkeys::KeyPair| {
            let mut raw = server.raw();
            let nonce = raw.info["nonce"].as_str().unwrap().to_owned();
            let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(k.sign(nonce.as_bytes()).unwrap());
            let got = raw.exchange(
                format!(
                    "CONNECT {{\"verbose\":false,\"nkey\":\"{}\",\"sig\":\"{sig}\"}}\r\n",
                    k.public_key()
                )
                .as_bytes(),
            );
            assert_eq!(show(&got), "PONG\r\n");
            raw
        };
        let mut a = connect(&kept);
        let mut b = connect(&removed);
        conf.set(&users(&[&kept]));
        reload(&server);
        answers.push((server.name, next(&mut a, b""), next(&mut b, b"")));
    }
    for (name, a, b) in &answers {
        assert_eq!(a, "PONG\r\n", "{name}");
        // A user that left the configuration is closed without an -ERR (nats-server's
        // `clientHasMovedToDifferentAccount`): it reconnects, and is refused then.
        assert_eq!(b, "<closed>", "{name}");
    }

    // From no authentication to a token: clients without it are closed.
    let mut answers = Vec::new();
    for (server, conf) in servers("token", "port: -1\n") {
        let mut anyone = server.raw();
        assert_eq!(
            next(&mut anyone, b"CONNECT {\"verbose\":false}\r\n"),
            "PONG\r\n"
        );
        conf.set("authorization { token: s3cr3t }\n");
        reload(&server);
        answers.push((server.name, next(&mut anyone, b"")));
        assert_eq!(server.raw().info["auth_required"], true, "{}", server.name);
    }
    for (name, a) in &answers {
        assert_eq!(a, &format!("{VIOLATION}<closed>"), "{name}");
    }
}

#[test]
fn accounts_keep_their_names_but_change_their_users() {
    let first = "accounts {\n  A { users = [ { user: a, password: one } ] }\n  \
                 B { users = [ { user: b, password: b } ] }\n}\n";
    let second = "accounts {\n  A { users = [ { user: a, password: two } ] }\n  \
                  B { users = [ { user: b, password: b } ] }\n}\n";
    let servers = servers("accounts", first);
    let (server, conf) = &servers[0];
    let mut a = login(server, "a", "one");
    conf.set(second);
    reload(server);
    assert_eq!(next(&mut a, b""), format!("{VIOLATION}<closed>"));
    assert!(server.wait_for_log("Reloaded: accounts"));
    login(server, "a", "two");
}

/// What a user of A gets for a request on `svc` (headers, no-responders), answered by `b`
/// when given (a user of B subscribed to `svc`).
fn ask(server: &ServerProcess, b: Option<&mut Raw>) -> String {
    let mut a = server.raw();
    a.exchange(
        b"CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"a\",\"headers\":true,\
          \"no_responders\":true}\r\nSUB _INBOX.a 1\r\n",
    );
    let start = a.received.len();
    a.exchange(b"PUB svc _INBOX.a 1\r\n?\r\n");
    if let Some(b) = b {
        let asked = b.sync();
        for f in asked {
            if let common::Frame::Msg(line, _) = f {
                let reply = line.split(' ').nth(3).unwrap_or_default().to_owned();
                b.exchange(format!("PUB {reply} 2\r\nok\r\n").as_bytes());
            }
        }
    }
    a.sync();
    show(&a.received[start..])
}

/// Accounts added and removed by a reload, with a service one exports to the other: applied
/// at once, as nats-server applies them.
#[test]
fn accounts_added_and_removed_with_their_imports() {
    let first = "accounts {\n  A { users = [ { user: a, password: a } ] }\n}\n";
    let second = "accounts {\n  A {\n    users = [ { user: a, password: a } ]\n    \
                  imports = [ { service: { account: B, subject: svc } } ]\n  }\n  \
                  B {\n    users = [ { user: b, password: b } ]\n    \
                  exports = [ { service: svc } ]\n  }\n}\n";
    let mut seen = Vec::new();
    for (server, conf) in &servers("added", first) {
        let before = ask(server, None);
        conf.set(second);
        reload(server);
        let mut b = login(server, "b", "b");
        b.exchange(b"SUB svc 1\r\n");
        let answered = ask(server, Some(&mut b));
        conf.set(first);
        reload(server);
        let b_after = next(&mut b, b"");
        let after = ask(server, None);
        seen.push((server.name, [before, answered, b_after, after]));
    }
    let (_, ours) = &seen[0];
    // Two PONGs: the request's exchange, then the final sync.
    let no_responders = "HMSG _INBOX.a 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\nPONG\r\n";
    assert_eq!(ours[0], no_responders, "before B");
    assert_eq!(
        ours[1], "PONG\r\nMSG _INBOX.a 1 2\r\nok\r\nPONG\r\n",
        "B's service"
    );
    assert_eq!(ours[3], no_responders, "after B left");
    assert!(
        ours[2].ends_with("<closed>"),
        "B's user is closed: {}",
        ours[2]
    );
    for (name, theirs) in &seen[1..] {
        assert_eq!(ours, theirs, "beaver and {name} differ");
    }
}

/// Found by attacking the reload: a subscriber that stays quiet loses the subscriptions its
/// new permissions forbid at once (not when its reader next wakes), and a wildcard
/// subscription given a new deny filter keeps its auto-unsubscribe count.
#[test]
fn an_idle_subscriber_and_an_auto_unsubscribe() {
    let first = "authorization {\n  users = [\n    { user: quiet, password: q, permissions: { \
                 subscribe: \">\", publish: \">\" } }\n    { user: counted, password: c, \
                 permissions: { subscribe: { allow: \">\", deny: \"foo.secret\" } } }\n    \
                 { user: pub, password: p }\n  ]\n}\n";
    let second = "authorization {\n  users = [\n    { user: quiet, password: q, permissions: { \
                  subscribe: \"bar\", publish: \">\" } }\n    { user: counted, password: c, \
                  permissions: { subscribe: { allow: \">\", deny: [\"foo.secret\", \"foo.other\"] } } }\n    \
                  { user: pub, password: p }\n  ]\n}\n";
    let mut transcripts = Vec::new();
    for (server, conf) in servers("idle", first) {
        let mut quiet = login(&server, "quiet", "q");
        let mut counted = login(&server, "counted", "c");
        let mut publisher = login(&server, "pub", "p");
        assert_eq!(next(&mut quiet, b"SUB secret 1\r\n"), "PONG\r\n");
        assert_eq!(
            next(&mut counted, b"SUB foo.* 1\r\nUNSUB 1 2\r\n"),
            "PONG\r\n"
        );
        publisher.exchange(b"PUB foo.a 1\r\n1\r\n");
        conf.set(second);
        reload(&server);
        // `quiet` has not said a word since: it must not get `secret` any more.
        publisher.exchange(b"PUB secret 5\r\nhello\r\nPUB foo.b 1\r\n2\r\nPUB foo.c 1\r\n3\r\n");
        transcripts.push((server.name, next(&mut quiet, b""), next(&mut counted, b"")));
    }
    for (name, quiet, counted) in &transcripts {
        assert_eq!(
            quiet,
            "-ERR 'Permissions Violation for Subscription to \"secret\" (sid \"1\")'\r\nPONG\r\n",
            "{name}"
        );
        // Two messages in all (`UNSUB 1 2`), one before the reload and one after.
        assert_eq!(
            counted, "MSG foo.a 1 1\r\n1\r\nMSG foo.b 1 1\r\n2\r\nPONG\r\n",
            "{name}"
        );
    }
}
