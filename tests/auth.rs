//! Authentication and permissions, end to end: the real binary, raw protocol bytes, the
//! official Rust client (async-nats), and, where Debian's nats-server 2.9.10 is installed,
//! the same conversation with it: the error lines must be the same bytes.

mod common;

use common::{show, Frame, ServerProcess};
use futures::StreamExt;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

const AUTH_VIOLATION: &str = "-ERR 'Authorization Violation'";
const AUTH_TIMEOUT: &str = "-ERR 'Authentication Timeout'";

/// Writes `text` to a fresh file in the temp dir and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("beaver-auth-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// The servers to compare: beaver, and nats-server when installed.
fn servers(beaver_args: &[&str], nats_args: &[&str]) -> Vec<ServerProcess> {
    let mut v = vec![ServerProcess::beaver(beaver_args)];
    v.extend(ServerProcess::nats_server(nats_args));
    v
}

/// Sends `bytes` on a fresh connection and returns everything the server sent (INFO
/// excluded) until its PONG to a final PING, or until it closed the connection; closing is
/// shown as a last `<closed>` line.
fn conversation(server: &ServerProcess, bytes: &[u8]) -> String {
    let mut raw = server.raw();
    let frames = raw.exchange(bytes);
    let mut s = show(&frames);
    if raw.closed {
        s.push_str("<closed>");
    }
    s
}

/// Every server gives the same answer to `bytes`; returns beaver's.
fn same_everywhere(servers: &[ServerProcess], bytes: &[u8]) -> String {
    let answers: Vec<String> = servers.iter().map(|s| conversation(s, bytes)).collect();
    for (s, a) in servers.iter().zip(&answers).skip(1) {
        assert_eq!(
            answers[0],
            *a,
            "beaver and {} answer {:?} differently",
            s.name,
            String::from_utf8_lossy(bytes)
        );
    }
    answers[0].clone()
}

#[test]
fn user_and_password() {
    let servers = servers(
        &["--user", "a", "--pass", "b"],
        &["--user", "a", "--pass", "b"],
    );
    for s in &servers {
        assert_eq!(s.raw().info["auth_required"], true, "{}", s.name);
    }
    let ok = same_everywhere(
        &servers,
        b"CONNECT {\"user\":\"a\",\"pass\":\"b\",\"verbose\":false}\r\n",
    );
    assert_eq!(ok, "PONG\r\n");
    let verbose = same_everywhere(&servers, b"CONNECT {\"user\":\"a\",\"pass\":\"b\"}\r\n");
    assert_eq!(verbose, "+OK\r\nPONG\r\n");
    for bad in [
        &b"CONNECT {\"user\":\"a\",\"pass\":\"x\",\"verbose\":false}\r\n"[..],
        b"CONNECT {\"user\":\"z\",\"pass\":\"b\",\"verbose\":false}\r\n",
        b"CONNECT {\"verbose\":false}\r\n",
        b"CONNECT {\"auth_token\":\"b\",\"verbose\":false}\r\n",
    ] {
        let answer = same_everywhere(&servers, bad);
        assert_eq!(answer, format!("{AUTH_VIOLATION}\r\n<closed>"));
    }
    // A second CONNECT is checked too.
    let again = same_everywhere(
        &servers,
        b"CONNECT {\"user\":\"a\",\"pass\":\"b\",\"verbose\":false}\r\nPING\r\n\
          CONNECT {\"user\":\"a\",\"pass\":\"x\"}\r\n",
    );
    assert_eq!(again, format!("PONG\r\n{AUTH_VIOLATION}\r\n<closed>"));
    let beaver = &servers[0];
    assert!(beaver.wait_for_log("- authentication error"));
}

#[test]
fn any_operation_before_connect_is_a_violation() {
    let servers = servers(
        &["--user", "a", "--pass", "b"],
        &["--user", "a", "--pass", "b"],
    );
    for first in [
        &b"PING\r\n"[..],
        b"SUB foo 1\r\n",
        b"PUB foo 1\r\nx\r\n",
        b"UNSUB 1\r\n",
        b"NOPE\r\n",
    ] {
        let answer = same_everywhere(&servers, first);
        assert_eq!(answer, format!("{AUTH_VIOLATION}\r\n<closed>"), "{first:?}");
    }
}

#[test]
fn token() {
    let servers = servers(&["--auth", "s3cr3t"], &["--auth", "s3cr3t"]);
    let ok = same_everywhere(
        &servers,
        b"CONNECT {\"auth_token\":\"s3cr3t\",\"verbose\":false}\r\n",
    );
    assert_eq!(ok, "PONG\r\n");
    let bad = same_everywhere(
        &servers,
        b"CONNECT {\"auth_token\":\"s3cr3\",\"verbose\":false}\r\n",
    );
    assert_eq!(bad, format!("{AUTH_VIOLATION}\r\n<closed>"));
    let bad = same_everywhere(
        &servers,
        b"CONNECT {\"user\":\"s3cr3t\",\"pass\":\"s3cr3t\"}\r\n",
    );
    assert_eq!(bad, format!("{AUTH_VIOLATION}\r\n<closed>"));
}

#[test]
fn bcrypt_password_and_token() {
    let hash = bcrypt::hash_with_result("hunter2", 4)
        .expect("bcrypt")
        .format_for_version(bcrypt::Version::TwoA);
    let servers = servers(
        &["--user", "a", "--pass", &hash],
        &["--user", "a", "--pass", &hash],
    );
    let ok = same_everywhere(
        &servers,
        b"CONNECT {\"user\":\"a\",\"pass\":\"hunter2\",\"verbose\":false}\r\n",
    );
    assert_eq!(ok, "PONG\r\n");
    // The hash itself is not the password.
    let bad = same_everywhere(
        &servers,
        format!("CONNECT {{\"user\":\"a\",\"pass\":\"{hash}\",\"verbose\":false}}\r\n").as_bytes(),
    );
    assert_eq!(bad, format!("{AUTH_VIOLATION}\r\n<closed>"));
    let beaver = ServerProcess::beaver(&["--auth", &hash]);
    assert_eq!(
        conversation(
            &beaver,
            b"CONNECT {\"auth_token\":\"hunter2\",\"verbose\":false}\r\n"
        ),
        "PONG\r\n"
    );
}

/// The users of the permission tests, in beaver's Config.toml and nats-server's format.
const USERS_TOML: &str = r#"
no_auth_user = "bob"
[authorization]
timeout = 1
users = [
  { user = "alice", password = "pw", permissions = { publish = { allow = ["foo.>", "bar"], deny = ["foo.secret"] }, subscribe = { allow = ["foo.>", "q.* grp", "_INBOX.>"], deny = ["foo.*.private"] } } },
  { user = "bob", password = "pw2", permissions = { publish = ["x"], subscribe = { deny = ["foo.>"] } } },
  { user = "carol", password = "pw3" },
]
"#;

const USERS_CONF: &str = r#"
no_auth_user: bob
authorization {
  timeout: 1
  users = [
    { user: alice, password: pw, permissions: { publish: { allow: ["foo.>", "bar"], deny: ["foo.secret"] }, subscribe: { allow: ["foo.>", "q.* grp", "_INBOX.>"], deny: ["foo.*.private"] } } }
    { user: bob, password: pw2, permissions: { publish: ["x"], subscribe: { deny: ["foo.>"] } } }
    { user: carol, password: pw3 }
  ]
}
"#;

fn user_servers(name: &str) -> Vec<ServerProcess> {
    let toml = temp_file(&format!("{name}.toml"), USERS_TOML);
    let conf = temp_file(&format!("{name}.conf"), USERS_CONF);
    servers(
        &["-c", toml.to_str().unwrap()],
        &["-c", conf.to_str().unwrap()],
    )
}

const ALICE: &str = "CONNECT {\"user\":\"alice\",\"pass\":\"pw\",\"verbose\":false}\r\n";

#[test]
fn publish_permissions() {
    let servers = user_servers("pub");
    let answer = same_everywhere(
        &servers,
        format!(
            "{ALICE}SUB foo.> 1\r\nPUB foo.a 1\r\nx\r\nPUB foo.secret 1\r\ny\r\nPUB baz 1\r\nz\r\n\
             PUB bar 0\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(
        answer,
        "MSG foo.a 1 1\r\nx\r\n\
         -ERR 'Permissions Violation for Publish to \"foo.secret\"'\r\n\
         -ERR 'Permissions Violation for Publish to \"baz\"'\r\nPONG\r\n"
    );
    // Headers too; a verbose client gets no +OK for a denied message.
    let answer = same_everywhere(
        &servers,
        b"CONNECT {\"user\":\"alice\",\"pass\":\"pw\",\"headers\":true}\r\n\
          HPUB baz 12 12\r\nNATS/1.0\r\n\r\n\r\nPUB bar 0\r\n\r\n",
    );
    assert_eq!(
        answer,
        "+OK\r\n-ERR 'Permissions Violation for Publish to \"baz\"'\r\n+OK\r\nPONG\r\n"
    );
    let beaver = &servers[0];
    assert!(beaver.wait_for_log("Publish Violation - User \"alice\", Subject \"baz\""));
}

#[test]
fn subscribe_permissions() {
    let servers = user_servers("sub");
    let answer = same_everywhere(
        &servers,
        format!(
            "{ALICE}SUB foo.a.private 1\r\nSUB foo.* 2\r\nSUB foo.> 3\r\nSUB baz 4\r\n\
             SUB q.x 5\r\nSUB q.x grp 6\r\nSUB q.x other 7\r\nSUB foo.*.private 8\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Subscription to \"foo.a.private\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"baz\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"q.x\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"q.x\" using queue \"other\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"foo.*.private\"'\r\nPONG\r\n"
    );
    let beaver = &servers[0];
    assert!(beaver.wait_for_log(
        "Subscription Violation - User \"alice\", Subject \"q.x\", Queue: \"other\", SID 7"
    ));
}

/// A wildcard subscription that covers denied subjects is accepted, and does not get the
/// messages on the denied subjects.
#[test]
fn wildcard_subscription_does_not_get_denied_subjects() {
    for server in user_servers("filter") {
        let mut alice = server.raw();
        assert_eq!(
            show(&alice.exchange(format!("{ALICE}SUB foo.> 1\r\n").as_bytes())),
            "PONG\r\n"
        );
        let mut carol = server.raw();
        carol.exchange(
            b"CONNECT {\"user\":\"carol\",\"pass\":\"pw3\",\"verbose\":false}\r\n\
              PUB foo.a.private 1\r\n1\r\nPUB foo.a.public 1\r\n2\r\nPUB foo.b 1\r\n3\r\n",
        );
        let got = show(&alice.sync());
        assert_eq!(
            got, "MSG foo.a.public 1 1\r\n2\r\nMSG foo.b 1 1\r\n3\r\nPONG\r\n",
            "{}",
            server.name
        );
    }
}

#[test]
fn no_auth_user() {
    let servers = user_servers("noauth");
    // No credentials in CONNECT: logged in as bob.
    let answer = same_everywhere(
        &servers,
        b"CONNECT {\"verbose\":false}\r\nPUB x 0\r\n\r\nPUB y 0\r\n\r\nSUB foo.a 1\r\nSUB bar 2\r\n",
    );
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Publish to \"y\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"foo.a\"'\r\nPONG\r\n"
    );
    // No CONNECT at all: also bob (telnet-style), verbose by default.
    let answer = same_everywhere(&servers, b"PUB y 0\r\n\r\n");
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Publish to \"y\"'\r\nPONG\r\n"
    );
    // Wrong credentials are still refused.
    let answer = same_everywhere(
        &servers,
        b"CONNECT {\"user\":\"alice\",\"pass\":\"nope\",\"verbose\":false}\r\n",
    );
    assert_eq!(answer, format!("{AUTH_VIOLATION}\r\n<closed>"));
}

#[test]
fn authentication_timeout() {
    for server in user_servers("timeout") {
        // Nothing at all, then a CONNECT that never ends: both time out (timeout = 1 s).
        for sent in [&b""[..], b"CONNECT {\"user\":"] {
            let mut raw = server.raw();
            raw.stream.write_all(sent).unwrap();
            let frames = raw.until_closed();
            assert_eq!(
                frames,
                vec![Frame::Err(AUTH_TIMEOUT.into())],
                "{}",
                server.name
            );
        }
    }
}

#[test]
fn passwords_are_never_logged() {
    let server = ServerProcess::beaver(&["--user", "a", "--pass", "hunter2", "-DV"]);
    let mut raw = server.raw();
    raw.exchange(b"CONNECT {\"user\":\"a\",\"pass\":\"hunter2\",\"auth_token\":\"t0ken\"}\r\n");
    assert!(server.wait_for_log("\"pass\":\"[REDACTED]\""));
    assert!(server.wait_for_log("<<- [PING]"));
    for line in server.log_lines() {
        assert!(
            !line.contains("hunter2") && !line.contains("t0ken"),
            "secret in the log: {line}"
        );
    }
}

/// The official client: user/password, token, and a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_nats_clients() {
    let server = ServerProcess::beaver(&["--user", "u", "--pass", "p"]);
    let client = async_nats::ConnectOptions::with_user_and_password("u".into(), "p".into())
        .connect(server.url())
        .await
        .expect("connects with the right password");
    let mut sub = client.subscribe("greet").await.unwrap();
    client.publish("greet", "hi".into()).await.unwrap();
    let msg = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .expect("in time")
        .expect("a message");
    assert_eq!(&msg.payload[..], b"hi");
    let refused = async_nats::ConnectOptions::with_user_and_password("u".into(), "x".into())
        .connect(server.url())
        .await;
    assert!(refused.is_err(), "wrong password refused");

    let server = ServerProcess::beaver(&["--auth", "tok"]);
    async_nats::ConnectOptions::with_token("tok".into())
        .connect(server.url())
        .await
        .expect("connects with the token");
    assert!(async_nats::ConnectOptions::with_token("bad".into())
        .connect(server.url())
        .await
        .is_err());
}

/// `/connz?auth=1` names each connection's authorized user; without `auth` it does not.
#[test]
fn connz_authorized_user() {
    let toml = temp_file("connz.toml", USERS_TOML);
    let server = ServerProcess::beaver(&["-c", toml.to_str().unwrap(), "-m", "-1"]);
    assert!(server.wait_for_log("Starting http monitor on "));
    let addr = server
        .log_lines()
        .iter()
        .find_map(|l| {
            l.split("Starting http monitor on ")
                .nth(1)
                .map(str::to_owned)
        })
        .expect("monitor address");
    let mut alice = server.raw();
    alice.exchange(ALICE.as_bytes());
    let get = |path: &str| -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(addr.trim()).expect("monitor");
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        let json = body.split("\r\n\r\n").nth(1).expect("body");
        serde_json::from_str(json).expect("JSON")
    };
    let with = get("/connz?auth=1");
    assert_eq!(with["connections"][0]["authorized_user"], "alice");
    let without = get("/connz");
    assert!(without["connections"][0].get("authorized_user").is_none());
    assert_eq!(
        get("/connz?user=alice")["connections"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        get("/connz?user=bob")["connections"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let varz = get("/varz");
    assert_eq!(varz["auth_required"], true);
    assert_eq!(varz["auth_timeout"], 1.0);
}

/// Bad `[authorization]` settings are refused with the key and line.
#[test]
fn config_errors_name_the_key() {
    let cases = [
        ("[authorization]\nusers = [{ user = \"a\", password = \"b\", permissions = { publish = { allow = [\"foo..bar\"] } } }]\n", "line 2"),
        ("no_auth_user = \"zed\"\n[authorization]\nusers = [{ user = \"a\", password = \"b\" }]\n", "no_auth_user"),
        ("[authorization]\nuser = \"a\"\npassword = \"b\"\nusers = [{ user = \"c\", password = \"d\" }]\n", "users array"),
        ("[authorization]\nbogus = 1\n", "bogus"),
        ("[tls]\ncert_file = \"x\"\n", "key_file"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let path = temp_file(&format!("bad{i}.toml"), text);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_beaver"))
            .args(["-t", "-c", path.to_str().unwrap()])
            .output()
            .expect("run beaver -t");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}: accepted");
        assert!(err.contains(needle), "{text}: {err}");
    }
}

/// `authorization { username: ... }` is nats-server's alias for `user`; the "Plaintext
/// passwords" warning is for passwords, not for tokens. Same files, both servers.
#[test]
fn username_alias_and_plaintext_warning_as_nats_server() {
    let users = temp_file(
        "username.conf",
        "authorization { username: alice, password: pw }\n",
    );
    let token = temp_file("tokenonly.conf", "authorization { token: s3cr3t }\n");
    let (users, token) = (users.to_str().unwrap(), token.to_str().unwrap());
    let servers_users = servers(&["-c", users], &["-c", users]);
    let ok = same_everywhere(
        &servers_users,
        b"CONNECT {\"user\":\"alice\",\"pass\":\"pw\",\"verbose\":false}\r\n",
    );
    assert_eq!(ok, "PONG\r\n");
    for s in &servers_users {
        assert!(
            s.log_lines()
                .iter()
                .any(|l| l.contains("Plaintext passwords detected")),
            "{}: {:#?}",
            s.name,
            s.log_lines()
        );
    }
    let servers_token = servers(&["-c", token], &["-c", token]);
    for s in &servers_token {
        assert!(
            s.log_lines()
                .iter()
                .all(|l| !l.contains("Plaintext passwords")),
            "{}: {:#?}",
            s.name,
            s.log_lines()
        );
    }
}

/// `allow_responses`: a service user that may not publish may still answer the requests it
/// receives, once each by default, `max` times with a table; nothing else.
#[test]
fn allow_responses() {
    let conf = temp_file(
        "responses.conf",
        "authorization { users = [\n\
         {user: svc, password: s, permissions: {subscribe: \"req.>\", allow_responses: true}}\n\
         {user: multi, password: m, permissions: {subscribe: \"req.>\", allow_responses: {max: 2}}}\n\
         {user: cli, password: c}\n\
         ] }\n",
    );
    let conf = conf.to_str().unwrap();
    let servers = servers(&["-c", conf], &["-c", conf]);
    let mut transcripts = Vec::new();
    for s in &servers {
        let login = |user: &str, pass: &str| {
            let mut raw = s.raw();
            let got = raw.exchange(
                format!(
                    "CONNECT {{\"verbose\":false,\"user\":\"{user}\",\"pass\":\"{pass}\"}}\r\n"
                )
                .as_bytes(),
            );
            assert_eq!(show(&got), "PONG\r\n", "{}: {user}", s.name);
            raw
        };
        let mut svc = login("svc", "s");
        let mut multi = login("multi", "m");
        let mut cli = login("cli", "c");
        svc.exchange(b"SUB req.one 1\r\n");
        multi.exchange(b"SUB req.two 1\r\n");
        cli.exchange(b"SUB _INBOX.c.* 1\r\nPUB req.one _INBOX.c.1 1\r\n?\r\nPUB req.two _INBOX.c.2 1\r\n?\r\n");
        let svc_got = show(&svc.exchange(
            b"PUB _INBOX.c.1 3\r\nyes\r\nPUB _INBOX.c.1 5\r\nagain\r\nPUB other 1\r\nx\r\nPUB _INBOX.c.9 1\r\nx\r\n",
        ));
        let multi_got = show(&multi.exchange(
            b"PUB _INBOX.c.2 1\r\n1\r\nPUB _INBOX.c.2 1\r\n2\r\nPUB _INBOX.c.2 1\r\n3\r\n",
        ));
        let cli_got = show(&cli.exchange(b""));
        transcripts.push((s.name, svc_got, multi_got, cli_got));
    }
    for (name, svc, multi, cli) in &transcripts {
        assert_eq!(
            svc,
            "MSG req.one 1 _INBOX.c.1 1\r\n?\r\n\
             -ERR 'Permissions Violation for Publish to \"_INBOX.c.1\"'\r\n\
             -ERR 'Permissions Violation for Publish to \"other\"'\r\n\
             -ERR 'Permissions Violation for Publish to \"_INBOX.c.9\"'\r\nPONG\r\n",
            "{name}"
        );
        assert_eq!(
            multi,
            "MSG req.two 1 _INBOX.c.2 1\r\n?\r\n\
             -ERR 'Permissions Violation for Publish to \"_INBOX.c.2\"'\r\nPONG\r\n",
            "{name}"
        );
        assert_eq!(
            cli,
            "MSG _INBOX.c.1 1 3\r\nyes\r\nMSG _INBOX.c.2 1 1\r\n1\r\nMSG _INBOX.c.2 1 1\r\n2\r\nPONG\r\n",
            "{name}"
        );
    }
}
