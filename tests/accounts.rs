//! Accounts, end to end: users of `accounts {}` log in to their account, and subjects do
//! not cross accounts. The real binary, raw protocol bytes compared with Debian's
//! nats-server 2.9.10 on the same fixture (`tests/fixtures/accounts/accounts.conf`, checked
//! with `nats-server -t`; the comparisons are skipped when nats-server is missing, unless
//! `BEAVER_REQUIRE_NATS_SERVER=1`), and the official Rust client.

mod common;

use beaver::config::Config;
use common::{get_json, poll_json, show, Raw, ServerProcess, WAIT};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_beaver");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/accounts");

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

fn conf() -> String {
    fixture("accounts.conf").to_str().expect("UTF-8").to_owned()
}

/// beaver, and nats-server when installed, both on the fixture.
fn servers(extra: &[&str]) -> Vec<ServerProcess> {
    let conf = conf();
    let mut args = vec!["-c", conf.as_str()];
    args.extend_from_slice(extra);
    let mut v = vec![ServerProcess::beaver(&args)];
    v.extend(ServerProcess::nats_server(&args));
    v
}

/// A raw connection logged in as `user` (no credentials at all when `user` is empty).
fn login(server: &ServerProcess, user: &str, pass: &str) -> Raw {
    let mut raw = server.raw();
    let connect = if user.is_empty() {
        "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n".to_owned()
    } else {
        format!(
            "CONNECT {{\"user\":\"{user}\",\"pass\":\"{pass}\",\"verbose\":false,\
             \"headers\":true,\"no_responders\":true}}\r\n"
        )
    };
    let got = show(&raw.exchange(connect.as_bytes()));
    assert_eq!(got, "PONG\r\n", "{} login {user:?}", server.name);
    raw
}

/// Runs `f` on every server and checks they all give the same transcript.
fn same_everywhere(servers: &[ServerProcess], f: impl Fn(&ServerProcess) -> String) -> String {
    let answers: Vec<String> = servers.iter().map(&f).collect();
    for (s, a) in servers.iter().zip(&answers).skip(1) {
        assert_eq!(answers[0], *a, "beaver and {} differ", s.name);
    }
    answers[0].clone()
}

/// Runs `program args`, returning whether it succeeded and its stderr.
fn run(program: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `nats-server -t -c FILE`, or `None` when nats-server is missing (and not required).
fn nats_server_check(file: &str) -> Option<(bool, String)> {
    match common::nats_server_path() {
        Some(bin) => Some(run(&bin, &["-t", "-c", file])),
        None => {
            if std::env::var("BEAVER_REQUIRE_NATS_SERVER").as_deref() == Ok("1") {
                panic!("nats-server is required (BEAVER_REQUIRE_NATS_SERVER=1) but missing");
            }
            eprintln!("SKIPPED: nats-server is not installed; fixture not checked against it");
            None
        }
    }
}

#[test]
fn fixture_is_valid_nats_server_config_and_loads_like_its_toml_twin() {
    let conf = conf();
    if let Some((ok, stderr)) = nats_server_check(&conf) {
        assert!(ok, "nats-server -t accounts.conf: {stderr}");
    }
    let (ok, stderr) = run(BIN, &["-t", "-c", &conf]);
    assert!(ok && stderr.contains("is valid"), "{stderr}");
    let (from_conf, warnings) = Config::from_file(Path::new(&conf)).unwrap();
    let (from_toml, _) = Config::from_file(&fixture("accounts.toml")).unwrap();
    assert_eq!(from_conf, from_toml);
    let names: Vec<&str> = from_conf.accounts.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["A", "B"]);
    // default_permissions went to the users without permissions of their own.
    let b = &from_conf.accounts[1].users[0];
    let deny = &b
        .permissions
        .as_ref()
        .unwrap()
        .publish
        .as_ref()
        .unwrap()
        .deny;
    assert_eq!(deny, &["secret.>".to_string()]);
    // One warning per ignored feature, naming the key and line.
    let keys: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.split('`').nth(1))
        .collect();
    assert_eq!(
        keys,
        ["accounts.B.jetstream", "accounts.B.mappings"],
        "{warnings:#?}"
    );
    assert!(
        warnings[0].contains("accounts.conf: line 18"),
        "{warnings:?}"
    );
}

#[test]
fn a_subject_does_not_cross_accounts() {
    let servers = servers(&[]);
    let out = same_everywhere(&servers, |s| {
        let mut a = login(s, "a", "apass");
        let mut b = login(s, "b2", "bpass");
        let mut g = login(s, "g", "gpass");
        for (c, sid) in [(&mut a, "1"), (&mut b, "2"), (&mut g, "3")] {
            c.exchange(format!("SUB foo {sid}\r\nSUB > 9\r\n").as_bytes());
        }
        // Each account publishes on the same subject, then every subscriber syncs: a
        // server has routed a PUB before it answers the PING that follows it.
        a.exchange(b"PUB foo 6\r\nfrom A\r\n");
        b.exchange(b"PUB foo 6\r\nfrom B\r\n");
        g.exchange(b"PUB foo 6\r\nfrom G\r\n");
        let mut out = String::new();
        for (name, c) in [("A", &mut a), ("B", &mut b), ("G", &mut g)] {
            c.sync();
            out.push_str(&format!("{name}: {}", show(&c.received)));
        }
        out
    });
    // Each subscriber got its own account's message only (the wildcard one too), in the
    // same order as from nats-server.
    assert_eq!(
        out,
        "A: PONG\r\nPONG\r\nMSG foo 9 6\r\nfrom A\r\nMSG foo 1 6\r\nfrom A\r\nPONG\r\nPONG\r\n\
         B: PONG\r\nPONG\r\nMSG foo 9 6\r\nfrom B\r\nMSG foo 2 6\r\nfrom B\r\nPONG\r\nPONG\r\n\
         G: PONG\r\nPONG\r\nMSG foo 9 6\r\nfrom G\r\nMSG foo 3 6\r\nfrom G\r\nPONG\r\nPONG\r\n"
    );
}

#[test]
fn request_reply_and_no_responders_stay_in_the_account() {
    let servers = servers(&[]);
    let out = same_everywhere(&servers, |s| {
        let mut service = login(s, "a", "apass");
        service.exchange(b"SUB ok.svc 1\r\n");
        // A requester in the same account gets the reply on its inbox.
        let mut req = login(s, "a2", "apass");
        req.exchange(b"SUB _INBOX.r1 1\r\nPUB ok.x 0\r\n\r\n");
        req.send(b"PUB ok.svc _INBOX.r1 4\r\nping\r\n");
        let start = service.received.len();
        let got = service.wait_frames(start, 1);
        let mut out = format!("service: {}", show(&got));
        service.exchange(b"PUB _INBOX.r1 4\r\npong\r\n");
        req.sync();
        out.push_str(&format!("requester: {}", show(&req.received)));
        // The same request from another account: nobody there, so no responders.
        let mut other = login(s, "b", "bpass");
        let got = other.exchange(b"SUB _INBOX.r2 7\r\nPUB ok.svc _INBOX.r2 4\r\nping\r\n");
        out.push_str(&format!("other account: {}", show(&got)));
        service.sync();
        out.push_str(&format!(
            "service afterwards: {}",
            show(&service.received[start + 1..])
        ));
        out
    });
    assert_eq!(
        out,
        "service: MSG ok.svc 1 _INBOX.r1 4\r\nping\r\n\
         requester: PONG\r\nPONG\r\nMSG _INBOX.r1 1 4\r\npong\r\nPONG\r\n\
         other account: HMSG _INBOX.r2 7 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\n\
         service afterwards: PONG\r\nPONG\r\n"
    );
}

#[test]
fn no_auth_user_of_an_account_and_account_permissions() {
    let servers = servers(&[]);
    let out = same_everywhere(&servers, |s| {
        let mut b = login(s, "b2", "bpass");
        b.exchange(b"SUB foo 1\r\n");
        let mut a = login(s, "a", "apass");
        a.exchange(b"SUB foo 1\r\n");
        // No credentials: in as `no_auth_user` b, in account B, with B's default
        // permissions (no publishing to secret.>).
        let mut anon = login(s, "", "");
        let mut out = format!(
            "anon: {}",
            show(&anon.exchange(b"PUB foo 4\r\nanon\r\nPUB secret.x 1\r\nx\r\n"))
        );
        // a2 may only publish to ok.> and _INBOX.>, and subscribe to ok.>.
        let mut a2 = login(s, "a2", "apass");
        out.push_str(&format!(
            "a2: {}",
            show(&a2.exchange(b"PUB foo 1\r\nx\r\nSUB foo 5\r\nSUB ok.1 6\r\n"))
        ));
        b.sync();
        a.sync();
        out.push_str(&format!(
            "b2: {}a: {}",
            show(&b.received),
            show(&a.received)
        ));
        out
    });
    assert_eq!(
        out,
        "anon: -ERR 'Permissions Violation for Publish to \"secret.x\"'\r\nPONG\r\n\
         a2: -ERR 'Permissions Violation for Publish to \"foo\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"foo\"'\r\nPONG\r\n\
         b2: PONG\r\nPONG\r\nMSG foo 1 4\r\nanon\r\nPONG\r\n\
         a: PONG\r\nPONG\r\nPONG\r\n"
    );
}

#[test]
fn monitoring_shows_and_filters_accounts() {
    let servers = servers(&["-m", "-1"]);
    for s in &servers {
        let port = s.monitor_port();
        let mut a = login(s, "a", "apass");
        a.exchange(b"SUB foo 1\r\nSUB bar 2\r\n");
        let mut b = login(s, "b", "bpass");
        b.exchange(b"SUB foo 1\r\n");
        let mut g = login(s, "g", "gpass");
        g.exchange(b"SUB foo 1\r\n");
        let (a_cid, b_cid, g_cid) = (
            &a.info["client_id"],
            &b.info["client_id"],
            &g.info["client_id"],
        );
        let conns = get_json(port, "/connz?auth=1");
        let account_of = |cid: &serde_json::Value| {
            conns["connections"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| &c["cid"] == cid)
                .map(|c| c["account"].clone())
        };
        let name = s.name;
        assert_eq!(account_of(a_cid), Some("A".into()), "{name}: {conns:#}");
        assert_eq!(account_of(b_cid), Some("B".into()), "{name}");
        // The global account is not shown.
        assert_eq!(account_of(g_cid), Some(serde_json::Value::Null), "{name}");
        let plain = get_json(port, "/connz");
        assert!(
            !plain.to_string().contains("\"account\""),
            "{name}: {plain}"
        );
        for (acc, cid) in [("A", a_cid), ("B", b_cid), ("$G", g_cid)] {
            let doc = get_json(port, &format!("/connz?acc={acc}"));
            assert_eq!(doc["total"], 1, "{name} acc={acc}: {doc:#}");
            assert_eq!(&doc["connections"][0]["cid"], cid, "{name} acc={acc}");
        }
        let none = get_json(port, "/connz?acc=NOPE");
        assert_eq!(none["total"], 0, "{name}");
        assert_eq!(none["server_id"], "", "{name}");
        // /subsz?acc=A: A's subscriptions, each naming its account (nats-server adds a
        // few internal ones of its own to every account, hence the filter on the cid).
        let subs = get_json(port, "/subsz?subs=1&acc=A&test=foo");
        let list: Vec<(String, u64)> = subs["subscriptions_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["account"].as_str().unwrap().to_owned(),
                    d["cid"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(list, [("A".to_owned(), a_cid.as_u64().unwrap())], "{name}");
        if name == "beaver" {
            // beaver's one internal subscription here is the bridge of B's stream import
            // (`pub.>`, in A); the rest are the clients', summed over the accounts.
            poll_json(port, "/varz", "the subscriptions of every account", |v| {
                v["subscriptions"] == 5
            });
            assert_eq!(get_json(port, "/subsz")["num_subscriptions"], 5);
            assert_eq!(get_json(port, "/subsz?acc=A")["num_subscriptions"], 3);
            assert_eq!(get_json(port, "/subsz?acc=$G")["num_subscriptions"], 1);
            assert_eq!(get_json(port, "/subsz?acc=NOPE")["num_subscriptions"], 0);
        }
    }
}

#[test]
fn config_errors_name_the_key_and_line() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("accounts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, expected, nats_refuses) in [
        (
            "reserved",
            "accounts {\n  $G: { users: [ {user: a, password: x} ] }\n}\n",
            &["line 2", "key `accounts`", "\"$G\" is a Reserved Account"][..],
            true,
        ),
        (
            "duplicate",
            "authorization { users: [ {user: a, password: q} ] }\n\
             accounts {\n  A: { users: [ {user: a, password: x} ] }\n}\n",
            &["line 3", "key `accounts.A.users`", "Duplicate user \"a\" detected"][..],
            true,
        ),
        (
            "token",
            "authorization { token: abc }\naccounts {\n  A: { users: [ {user: a, password: x} ] }\n}\n",
            &["line 3", "key `accounts`", "can not have a token"][..],
            true,
        ),
        (
            "unknown",
            "accounts {\n  A: {\n    users: [ {user: a, password: x} ]\n    bogus: 1\n  }\n}\n",
            &["line 4", "bogus"][..],
            true,
        ),
        (
            "not_a_map",
            "accounts {\n  A: 1\n}\n",
            &["line 2", "key `A`"][..],
            true,
        ),
        (
            // nats-server's -t does not check this; its start does.
            "no_auth_user",
            "accounts {\n  A: { users: [ {user: a, password: x} ] }\n}\nno_auth_user: zz\n",
            &["line 4", "key `no_auth_user`", "not present as user"][..],
            false,
        ),
    ] {
        let path = dir.join(format!("{name}.conf"));
        std::fs::write(&path, text).unwrap();
        let file = path.to_str().unwrap();
        if nats_refuses {
            if let Some((ok, stderr)) = nats_server_check(file) {
                assert!(!ok, "nats-server accepted {name}: {stderr}");
            }
        }
        let (ok, stderr) = run(BIN, &["-t", "-c", file]);
        assert!(!ok, "beaver accepted {name}");
        for e in expected {
            assert!(stderr.contains(e), "{name}: expected {e:?} in {stderr:?}");
        }
    }
    // The same rules in Config.toml.
    let e = Config::from_toml("[accounts.\"$G\"]\nusers = [{ user = \"a\", password = \"x\" }]\n")
        .unwrap_err();
    assert!(
        e.message.contains("Reserved Account") && e.message.contains("line"),
        "{e}"
    );
    let e = Config::from_toml(
        "[accounts.A]\nusers = [{ user = \"a\", password = \"x\" }]\n\
         [accounts.B]\nusers = [{ user = \"a\", password = \"y\" }]\n",
    )
    .unwrap_err();
    assert!(
        e.message.contains("Duplicate user \"a\"") && e.message.contains("line 4"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_refused_reload_shows_no_passwords() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("accounts-rl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("reload.conf");
    std::fs::write(
        &path,
        "accounts { A: { users: [ {user: a, password: s3cret1} ] } }\n",
    )
    .unwrap();
    let server = ServerProcess::beaver(&["-c", path.to_str().unwrap()]);
    // A new account and a changed password, with a change that needs a restart: refused as
    // a whole (tests/reload_auth.rs has the changes that apply), and no password logged.
    std::fs::write(
        &path,
        "max_pending: 100000000\naccounts { A: { users: [ {user: a, password: s3cret2} ] }, B: {} }\n",
    )
    .unwrap();
    let status = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        server.wait_for_log("config reload not supported for MaxPending"),
        "{:#?}",
        server.log_lines()
    );
    let log = server.log_lines().join("\n");
    assert!(!log.contains("s3cret"), "{log}");
    // Still the old password.
    login(&server, "a", "s3cret1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_nats_clients_in_two_accounts() {
    let server = ServerProcess::beaver(&["-c", &conf()]);
    let connect = |user: &'static str, pass: &'static str| {
        async_nats::ConnectOptions::with_user_and_password(user.into(), pass.into())
            .connect(server.url())
    };
    let a = connect("a", "apass").await.expect("a connects");
    let a2 = connect("a2", "apass").await.expect("a2 connects");
    let b = connect("b2", "bpass").await.expect("b2 connects");
    // A service in A answers requests from A...
    let mut service = a.subscribe("ok.svc").await.unwrap();
    let mut b_sub = b.subscribe("ok.svc").await.unwrap();
    let a_clone = a.clone();
    tokio::spawn(async move {
        while let Some(m) = service.next().await {
            if let Some(reply) = m.reply {
                let _ = a_clone.publish(reply, "pong".into()).await;
            }
        }
    });
    // The service's SUB is registered before anyone asks (see `common::round_trip`).
    common::round_trip(&a).await;
    common::round_trip(&b).await;
    let reply = tokio::time::timeout(WAIT, a2.request("ok.svc", "ping".into()))
        .await
        .expect("in time")
        .expect("a reply from the service in the same account");
    assert_eq!(&reply.payload[..], b"pong");
    // ...and not from B: nobody there.
    let err = tokio::time::timeout(WAIT, b.request("ok.nobody", "ping".into()))
        .await
        .expect("in time")
        .expect_err("no responders in B");
    assert_eq!(
        err.kind(),
        async_nats::RequestErrorKind::NoResponders,
        "{err}"
    );
    // B's subscriber on the service's subject saw none of A's messages: the first thing it
    // gets is B's own sentinel, published after A's messages were routed (the round trip
    // returns once the server has processed everything a2 sent before it).
    a2.publish("ok.svc", "from A".into()).await.unwrap();
    common::round_trip(&a2).await;
    b.publish("ok.svc", "sentinel".into()).await.unwrap();
    let next = tokio::time::timeout(WAIT, b_sub.next())
        .await
        .expect("in time")
        .expect("a message");
    assert_eq!(&next.payload[..], b"sentinel");
}
