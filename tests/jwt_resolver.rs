//! The full account resolver (`resolver { type: full, dir }`): account JWTs pushed while
//! the server runs (`$SYS.REQ.CLAIMS.UPDATE`, as `nsc push` sends them) are stored in the
//! directory, trusted at once, survive a restart, and change what the account's connected
//! clients may do. beaver and Debian's nats-server 2.9.10 run the same configuration (each
//! with its own directory) and are compared answer by answer.

mod common;

use common::jwt::{
    account_jwt, ask, creds, encode, let_in, login, login_with, now, operator_jwt, user_jwt,
};
use common::{show, Frame, Raw, ServerProcess};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// An operator, its system account (preloaded) and an account A that only a push makes
/// known.
struct Setup {
    op: nkeys::KeyPair,
    sys: nkeys::KeyPair,
    sys_user: nkeys::KeyPair,
    sys_user_jwt: String,
    a: nkeys::KeyPair,
    root: PathBuf,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        let root =
            std::env::temp_dir().join(format!("beaver-resolver-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let op = nkeys::KeyPair::new_operator();
        let sys = nkeys::KeyPair::new_account();
        let sys_user = nkeys::KeyPair::new_user();
        let sys_user_jwt = user_jwt(&sys_user, &sys, json!({}), json!({}));
        Setup {
            op,
            sys,
            sys_user,
            sys_user_jwt,
            a: nkeys::KeyPair::new_account(),
            root,
        }
    }

    /// The configuration of server `name`, its directory `<root>/<name>-jwt`.
    fn conf(&self, name: &str) -> PathBuf {
        self.conf_with(name, false)
    }

    /// [`Setup::conf`], with `allow_delete` as given.
    fn conf_with(&self, name: &str, allow_delete: bool) -> PathBuf {
        let op_file = self.root.join("op.jwt");
        std::fs::write(
            &op_file,
            operator_jwt(&self.op, json!({"system_account": self.sys.public_key()})),
        )
        .unwrap();
        let dir = self.dir(name);
        let conf = self.root.join(format!("{name}.conf"));
        // Single quotes: raw strings (a Windows path's backslashes are not escapes).
        std::fs::write(
            &conf,
            format!(
                "operator: '{}'\nsystem_account: {}\nresolver {{\n  type: full\n  dir: '{}'\n  \
                 allow_delete: {allow_delete}\n  interval: \"2m\"\n  timeout: \"1.9s\"\n}}\n\
                 resolver_preload {{\n  {}: {}\n}}\n",
                op_file.display(),
                self.sys.public_key(),
                dir.display(),
                self.sys.public_key(),
                account_jwt(&self.sys, &self.op, json!({})),
            ),
        )
        .unwrap();
        conf
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}-jwt"))
    }

    /// A connected user of the system account.
    fn admin(&self, server: &ServerProcess) -> Raw {
        login(server, &self.sys_user_jwt, &self.sys_user)
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Server `name` (`beaver...` or `nats-server...`) on configuration file `conf`; `None`
/// when nats-server is asked for and not installed.
fn start(name: &str, conf: &str) -> Option<ServerProcess> {
    if name.starts_with("beaver") {
        Some(ServerProcess::beaver(&["-c", conf]))
    } else {
        ServerProcess::nats_server(&["-c", conf])
    }
}

/// An account E exporting the service `help.>`, and A's JWT importing `help.me` from it as
/// `ask`: E's key pair, E's JWT and A's JWT.
fn help_service(s: &Setup) -> (nkeys::KeyPair, String, String) {
    let e = nkeys::KeyPair::new_account();
    let e_jwt = account_jwt(
        &e,
        &s.op,
        json!({"exports": [{"name": "help", "subject": "help.>", "type": "service"}]}),
    );
    let i_jwt = account_jwt(
        &s.a,
        &s.op,
        json!({"imports": [{"name": "help", "subject": "help.me", "account": e.public_key(),
            "type": "service", "local_subject": "ask"}]}),
    );
    (e, e_jwt, i_jwt)
}

/// Sends a request on `subject` with `body` and returns the answer's payload.
fn request_on(admin: &mut Raw, subject: &str, body: &str) -> String {
    let start = admin.received.len();
    admin.send(
        format!(
            "SUB _INBOX.claims 9\r\nPUB {subject} _INBOX.claims {}\r\n{body}\r\nUNSUB 9 1\r\n",
            body.len()
        )
        .as_bytes(),
    );
    loop {
        let frames = admin.wait_frames(start, admin.received.len() - start + 1);
        if let Some(Frame::Msg(_, payload)) = frames.iter().find(|f| matches!(f, Frame::Msg(..))) {
            return String::from_utf8_lossy(payload).into_owned();
        }
        assert!(
            !admin.closed,
            "closed while waiting for an answer to {subject}"
        );
    }
}

/// An update's answer without the answering server (`server`), which differs by nature.
fn without_server(answer: &str) -> (Vec<String>, Value) {
    let mut v: serde_json::Map<String, Value> =
        serde_json::from_str(answer).unwrap_or_else(|e| panic!("{e}: {answer}"));
    // Go sorts a map's members; the order of the keys as sent is part of the answer.
    let keys: Vec<String> = answer_keys(answer);
    assert!(v.remove("server").is_some(), "{answer}");
    (keys, Value::Object(v))
}

/// The top-level member names of a JSON object, in the order sent.
fn answer_keys(answer: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut de = serde_json::Deserializer::from_str(answer);
    use serde::de::{Deserializer, MapAccess, Visitor};
    struct Keys<'a>(&'a mut Vec<String>);
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(k) = map.next_key::<String>()? {
                self.0.push(k);
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            Ok(())
        }
    }
    de.deserialize_map(Keys(&mut keys)).unwrap();
    keys
}

/// What one server did through a push, a lookup, a list and a revocation.
#[derive(Debug, PartialEq)]
struct Story {
    before_push: bool,
    pushed: (Vec<String>, Value),
    stored: bool,
    looked_up: bool,
    listed: Value,
    after_push: bool,
    mismatch: (Vec<String>, Value),
    garbage_code: Value,
    garbage_account: Value,
    revoked: String,
    limited: String,
}

fn story(s: &Setup, server: &ServerProcess, dir: &Path) -> Story {
    let u = nkeys::KeyPair::new_user();
    let u_jwt = user_jwt(&u, &s.a, json!({}), json!({}));
    let a_jwt = account_jwt(&s.a, &s.op, json!({}));
    let before_push = let_in(&login(server, &u_jwt, &u));
    let mut admin = s.admin(server);
    assert!(let_in(&admin), "{}: the system user logs in", server.name);
    let pushed = without_server(&request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &a_jwt));
    let file = dir.join(format!("{}.jwt", s.a.public_key()));
    let stored = std::fs::read_to_string(&file).is_ok_and(|t| t.trim() == a_jwt);
    let lookup = format!("$SYS.REQ.ACCOUNT.{}.CLAIMS.LOOKUP", s.a.public_key());
    let looked_up = request_on(&mut admin, &lookup, "") == a_jwt;
    let list: Value =
        serde_json::from_str(&request_on(&mut admin, "$SYS.REQ.CLAIMS.LIST", "")).expect("JSON");
    let mut listed: Vec<String> = list["data"]
        .as_array()
        .expect("data is a list")
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    let listed = json!(listed
        .iter()
        .map(|k| if *k == s.a.public_key() {
            "A"
        } else if *k == s.sys.public_key() {
            "SYS"
        } else {
            "?"
        })
        .collect::<Vec<_>>());
    let mut user = login(server, &u_jwt, &u);
    let after_push = let_in(&user);
    // A's JWT sent to another account's subject.
    let other = nkeys::KeyPair::new_account().public_key();
    let mismatch = without_server(&request_on(
        &mut admin,
        &format!("$SYS.REQ.ACCOUNT.{other}.CLAIMS.UPDATE"),
        &a_jwt,
    ));
    let mismatch = (mismatch.0, {
        let mut v = mismatch.1;
        v["error"]["account"] = json!("OTHER");
        v
    });
    let garbage: Value = serde_json::from_str(&request_on(
        &mut admin,
        "$SYS.REQ.CLAIMS.UPDATE",
        "not a jwt",
    ))
    .expect("JSON");
    // The user is revoked by A's next JWT: it is told and closed.
    let revoking = account_jwt(&s.a, &s.op, json!({"revocations": {u.public_key(): now()}}));
    let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &revoking);
    assert!(answer.contains("jwt updated"), "{answer}");
    let revoked = show(&user.until_closed()) + if user.closed { "<closed>" } else { "" };
    // Two clients, then a limit of one connection: the older goes.
    let v = nkeys::KeyPair::new_user();
    let v_jwt = user_jwt(&v, &s.a, json!({}), json!({}));
    let mut older = login(server, &v_jwt, &v);
    let newer = login(server, &v_jwt, &v);
    assert!(let_in(&older) && let_in(&newer), "{}", server.name);
    let limiting = account_jwt(
        &s.a,
        &s.op,
        json!({"revocations": {u.public_key(): now()}, "limits": {"subs": -1, "conn": 1, "leaf": -1, "imports": -1, "exports": -1, "data": -1, "payload": -1, "wildcards": true}}),
    );
    // A JWT issued in the same second as the previous one: nats-server replaces it all the
    // same (a push is not a preload).
    let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &limiting);
    assert!(answer.contains("jwt updated"), "{answer}");
    let limited = show(&older.until_closed()) + if older.closed { "<closed>" } else { "" };
    Story {
        before_push,
        pushed,
        stored,
        looked_up,
        listed,
        after_push,
        mismatch,
        garbage_code: garbage["error"]["code"].clone(),
        garbage_account: garbage["error"]["account"].clone(),
        revoked,
        limited,
    }
}

#[test]
fn pushed_accounts_like_nats_server() {
    let s = Setup::new("push");
    let mut stories = Vec::new();
    let beaver_conf = s.conf("beaver");
    let beaver = ServerProcess::beaver(&["-c", beaver_conf.to_str().unwrap()]);
    stories.push(("beaver", story(&s, &beaver, &s.dir("beaver"))));
    let reference_conf = s.conf("nats-server");
    if let Some(reference) = ServerProcess::nats_server(&["-c", reference_conf.to_str().unwrap()]) {
        stories.push(("nats-server", story(&s, &reference, &s.dir("nats-server"))));
    }
    let (_, ours) = &stories[0];
    assert!(!ours.before_push, "A is unknown before the push");
    assert_eq!(
        ours.pushed,
        (
            vec!["data".to_owned(), "server".to_owned()],
            json!({"data": {"account": s.a.public_key(), "code": 200, "message": "jwt updated"}})
        )
    );
    assert!(ours.stored && ours.looked_up && ours.after_push, "{ours:?}");
    // Sorted by public key.
    let mut expected = [(s.a.public_key(), "A"), (s.sys.public_key(), "SYS")];
    expected.sort();
    assert_eq!(ours.listed, json!(expected.map(|(_, name)| name)));
    assert_eq!(
        ours.mismatch.1,
        json!({"error": {"account": "OTHER", "code": 500,
            "description": "jwt update resulted in error - subject does not match jwt content"}})
    );
    assert_eq!(ours.garbage_account, "n/a");
    assert_eq!(ours.garbage_code, 500);
    assert_eq!(
        ours.revoked,
        "-ERR 'User Authentication Revoked'\r\n<closed>"
    );
    assert_eq!(
        ours.limited,
        "-ERR 'maximum account active connections exceeded'\r\n<closed>"
    );
    for (name, theirs) in &stories[1..] {
        assert_eq!(ours, theirs, "beaver and {name} differ");
    }
    // A restart: A is read back from the directory.
    drop(beaver);
    let beaver = ServerProcess::beaver(&["-c", beaver_conf.to_str().unwrap()]);
    let w = nkeys::KeyPair::new_user();
    let w_jwt = user_jwt(&w, &s.a, json!({}), json!({}));
    assert!(
        let_in(&login(&beaver, &w_jwt, &w)),
        "A known after a restart"
    );
}

/// The official Rust client with a credentials file of an account pushed at run time.
#[tokio::test]
async fn async_nats_after_a_push() {
    let s = Setup::new("client");
    let conf = s.conf("beaver");
    let beaver = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let a_jwt = account_jwt(&s.a, &s.op, json!({}));
    let answer = request_on(&mut s.admin(&beaver), "$SYS.REQ.CLAIMS.UPDATE", &a_jwt);
    assert!(answer.contains("jwt updated"), "{answer}");
    let u = nkeys::KeyPair::new_user();
    let creds_file = s.root.join("u.creds");
    std::fs::write(
        &creds_file,
        creds(
            &user_jwt(&u, &s.a, json!({}), json!({})),
            &u.seed().unwrap(),
        ),
    )
    .unwrap();
    let client = async_nats::ConnectOptions::with_credentials_file(&creds_file)
        .await
        .expect("credentials")
        .connect(beaver.url())
        .await
        .expect("connects to the pushed account");
    use futures::StreamExt;
    let mut sub = client.subscribe("pushed").await.unwrap();
    client.publish("pushed", "hi".into()).await.unwrap();
    client.flush().await.unwrap();
    let msg = sub.next().await.unwrap();
    assert_eq!(msg.payload.as_ref(), b"hi");
}

#[test]
fn resolver_configuration_errors() {
    let root = std::env::temp_dir().join(format!("beaver-resolver-conf-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&root);
    let op = nkeys::KeyPair::new_operator();
    let op_jwt = operator_jwt(&op, json!({}));
    let file = root.join("a-file");
    std::fs::write(&file, "x").unwrap();
    for (block, expected) in [
        ("resolver { type: full }", "dir has no value"),
        ("resolver { type: cache, dir: 'x' }", "cache resolver"),
        (
            "resolver { type: full, dir: 'x', ttl: \"1m\" }",
            "FULL does not accept ttl",
        ),
        ("resolver { dir: 'x' }", "should be MEM"),
        (
            &format!("resolver {{ type: full, dir: '{}' }}", file.display()),
            "resolver.dir",
        ),
    ] {
        let conf = root.join("bad.conf");
        std::fs::write(&conf, format!("operator: {op_jwt}\n{block}\n")).unwrap();
        let out = common::refused_config(&conf);
        assert!(out.contains(expected), "{block}: {out}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Exports and imports of pushed account JWTs apply at once: a service of one pushed account
/// answers a pushed importer's requests without a restart, on beaver as on nats-server.
#[test]
fn pushed_exports_and_imports_apply_at_once() {
    let s = Setup::new("sharing");
    let (e, e_jwt, i_jwt) = help_service(&s);
    let mut answers = Vec::new();
    let confs = [
        ("beaver", s.conf("beaver")),
        ("nats-server", s.conf("nats-server")),
    ];
    for (name, conf) in &confs {
        let conf = conf.to_str().unwrap();
        let Some(server) = start(name, conf) else {
            continue;
        };
        let mut admin = s.admin(&server);
        for jwt in [&e_jwt, &i_jwt] {
            let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", jwt);
            assert!(answer.contains("jwt updated"), "{name}: {answer}");
        }
        let user_of = |account: &nkeys::KeyPair| {
            let u = nkeys::KeyPair::new_user();
            login_with(
                &server,
                &user_jwt(&u, account, json!({}), json!({})),
                &u,
                ",\"headers\":true,\"no_responders\":true",
            )
        };
        let (mut responder, mut requester) = (user_of(&e), user_of(&s.a));
        answers.push(ask(&mut requester, &mut responder, "help.me", "ask"));
    }
    assert_eq!(answers[0], "PONG\r\nMSG _INBOX.r 5 5\r\nhello\r\nPONG\r\n");
    for other in &answers[1..] {
        assert_eq!(&answers[0], other, "beaver and nats-server differ");
    }
}

/// `$SYS.REQ.CLAIMS.DELETE` (`nsc delete account` with `--rm-jwt` pushes it): only with
/// `allow_delete`, only signed by an operator key for itself, never the system account; a
/// deleted account's clients are told it expired. Compared with nats-server.
#[test]
fn deleted_accounts_like_nats_server() {
    let s = Setup::new("delete");
    let a_jwt = account_jwt(&s.a, &s.op, json!({}));
    let request = |signer: &nkeys::KeyPair, sub: &str, accounts: Value| {
        encode(json!({"sub": sub, "nats": {"accounts": accounts}}), signer)
    };
    let op_key = s.op.public_key();
    let mut stories = Vec::new();
    for (name, allow) in [
        ("beaver", true),
        ("nats-server", true),
        ("beaver-no", false),
        ("nats-server-no", false),
    ] {
        let conf = s.conf_with(name, allow);
        let conf = conf.to_str().unwrap();
        let Some(server) = start(name, conf) else {
            continue;
        };
        let mut admin = s.admin(&server);
        let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &a_jwt);
        assert!(answer.contains("jwt updated"), "{name}: {answer}");
        let u = nkeys::KeyPair::new_user();
        let u_jwt = user_jwt(&u, &s.a, json!({}), json!({}));
        let mut user = login(&server, &u_jwt, &u);
        assert!(let_in(&user), "{name}");
        let mut answers = Vec::new();
        for (what, token) in [
            (
                "signed by an account",
                request(&s.a, &s.a.public_key(), json!([s.a.public_key()])),
            ),
            (
                "not self signed",
                request(&s.op, &s.a.public_key(), json!([s.a.public_key()])),
            ),
            ("not a list", request(&s.op, &op_key, json!("x"))),
            (
                "the system account",
                request(&s.op, &op_key, json!([s.sys.public_key()])),
            ),
            ("A", request(&s.op, &op_key, json!([s.a.public_key()]))),
        ] {
            let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.DELETE", &token);
            let (keys, body) = without_server(&answer);
            answers.push((what, keys, body));
        }
        let told = if allow {
            show(&user.until_closed()) + if user.closed { "<closed>" } else { "" }
        } else {
            String::new()
        };
        let deleted = s
            .dir(name)
            .join(format!("{}.jwt.deleted", s.a.public_key()))
            .exists();
        stories.push((name, answers, told, deleted));
    }
    let by_name = |n: &str| stories.iter().find(|s| s.0 == n);
    let ours = by_name("beaver").unwrap();
    let description = |i: usize| ours.1[i].2["error"]["description"].clone();
    let who = s.a.public_key();
    assert_eq!(
        description(0),
        format!("delete accounts request by {who} failed - not trusted")
    );
    assert_eq!(
        description(1),
        format!("delete accounts request by {who} failed - not self signed")
    );
    assert_eq!(
        description(2),
        format!("delete accounts request by {op_key} failed - malformed request")
    );
    assert_eq!(
        description(3),
        format!(
            "delete accounts request by {op_key} failed - not allowed to delete system account"
        )
    );
    assert_eq!(
        ours.1[4].2,
        json!({"data": {"code": 200, "message": "deleted 1 accounts"}})
    );
    assert_eq!(ours.2, "-ERR 'Account Authentication Expired'\r\n<closed>");
    assert!(ours.3, "the file is renamed");
    let refused = by_name("beaver-no").unwrap();
    assert_eq!(
        refused.1[4].2["error"]["description"],
        format!(
            "delete accounts request by {op_key} failed - delete must be enabled in server config"
        )
    );
    assert!(!refused.3);
    for (ours, theirs) in [("beaver", "nats-server"), ("beaver-no", "nats-server-no")] {
        if let (Some(a), Some(b)) = (by_name(ours), by_name(theirs)) {
            assert_eq!(a.1, b.1, "answers differ: {ours} and {theirs}");
            assert_eq!(
                a.2, b.2,
                "what the client was told differs: {ours} and {theirs}"
            );
            assert_eq!(a.3, b.3, "the files differ: {ours} and {theirs}");
        }
    }
}

/// A push of an account JWT that decodes but does not validate (more exports than its own
/// limits allow) is refused, not stored, as nats-server's `claimValidate` refuses it: storing
/// it would lose the account's users at the next restart.
#[test]
fn pushed_jwt_that_does_not_validate_is_refused() {
    let s = Setup::new("invalid");
    let invalid = account_jwt(
        &s.a,
        &s.op,
        json!({"exports": [{"name": "x", "subject": "x", "type": "stream"}],
            "limits": {"subs": -1, "conn": -1, "leaf": -1, "imports": -1, "exports": 0,
                "data": -1, "payload": -1, "wildcards": true}}),
    );
    let mut outcomes = Vec::new();
    for name in ["beaver", "nats-server"] {
        let conf = s.conf(name);
        let conf = conf.to_str().unwrap();
        let Some(server) = start(name, conf) else {
            continue;
        };
        let mut admin = s.admin(&server);
        let mut answers = Vec::new();
        for subject in [
            "$SYS.REQ.CLAIMS.UPDATE".to_owned(),
            format!("$SYS.REQ.ACCOUNT.{}.CLAIMS.UPDATE", s.a.public_key()),
        ] {
            answers.push(without_server(&request_on(&mut admin, &subject, &invalid)));
        }
        let stored = s
            .dir(name)
            .join(format!("{}.jwt", s.a.public_key()))
            .exists();
        outcomes.push((answers, stored));
    }
    let expected = (
        vec!["error".to_owned(), "server".to_owned()],
        json!({"error": {"account": s.a.public_key(), "code": 500,
            "description": "jwt validation failed - validation errors: [the account contains \
                more exports than allowed by the operator]"}}),
    );
    assert_eq!(outcomes[0], (vec![expected.clone(), expected], false));
    for other in &outcomes[1..] {
        assert_eq!(&outcomes[0], other, "beaver and nats-server differ");
    }
}

/// A system user that pushes its own account's JWT revoking itself: the push is handled on
/// that user's reader thread, which closes the user; the server goes on answering others.
#[test]
fn a_push_that_revokes_the_pushing_user() {
    let s = Setup::new("self");
    let conf = s.conf("beaver");
    let beaver = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let mut admin = s.admin(&beaver);
    let other = nkeys::KeyPair::new_user();
    let other_jwt = user_jwt(&other, &s.sys, json!({}), json!({}));
    let mut second = login(&beaver, &other_jwt, &other);
    assert!(let_in(&admin) && let_in(&second));
    let revoking = account_jwt(
        &s.sys,
        &s.op,
        json!({"revocations": {s.sys_user.public_key(): now()}}),
    );
    admin.send(
        format!(
            "PUB $SYS.REQ.CLAIMS.UPDATE {}\r\n{revoking}\r\nPING\r\n",
            revoking.len()
        )
        .as_bytes(),
    );
    let seen = show(&admin.until_closed());
    assert!(admin.closed, "the revoked pusher is closed: {seen}");
    assert!(seen.contains("User Authentication Revoked"), "{seen}");
    // The other system user still gets answers, the pushed JWT is in force.
    let lookup = format!("$SYS.REQ.ACCOUNT.{}.CLAIMS.LOOKUP", s.sys.public_key());
    assert_eq!(request_on(&mut second, &lookup, ""), revoking);
    assert!(!let_in(&s.admin(&beaver)), "the revoked user is refused");
}

/// A service request on its way when an unrelated account with an export is pushed: its
/// response still reaches the requester (the push rebuilds beaver's import bridges), as on
/// nats-server.
#[test]
fn a_response_in_flight_survives_an_unrelated_push() {
    let s = Setup::new("inflight");
    let (e, e_jwt, i_jwt) = help_service(&s);
    let unrelated = nkeys::KeyPair::new_account();
    let mut answers = Vec::new();
    for name in ["beaver", "nats-server"] {
        let conf = s.conf(name);
        let conf = conf.to_str().unwrap();
        let Some(server) = start(name, conf) else {
            continue;
        };
        let mut admin = s.admin(&server);
        for jwt in [&e_jwt, &i_jwt] {
            let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", jwt);
            assert!(answer.contains("jwt updated"), "{name}: {answer}");
        }
        let user_of = |account: &nkeys::KeyPair| {
            let u = nkeys::KeyPair::new_user();
            login(&server, &user_jwt(&u, account, json!({}), json!({})), &u)
        };
        let (mut responder, mut requester) = (user_of(&e), user_of(&s.a));
        responder.exchange(b"SUB help.me 1\r\n");
        let from = responder.received.len();
        requester.exchange(b"SUB _INBOX.r 5\r\nPUB ask _INBOX.r 2\r\nhi\r\n");
        let frames = responder.wait_frames(from, 1);
        let Some(Frame::Msg(line, _)) = frames.first() else {
            panic!("{name}: the request reached no responder: {frames:?}");
        };
        let reply = line.split(' ').nth(3).unwrap_or_default().to_owned();
        // The push of an account that none of the others uses, before the answer (its
        // export makes beaver rebuild the bridges).
        let pushed = account_jwt(
            &unrelated,
            &s.op,
            json!({"exports": [{"name": "x", "subject": "x.>", "type": "service"}]}),
        );
        let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &pushed);
        assert!(answer.contains("jwt updated"), "{name}: {answer}");
        let start = requester.received.len();
        responder.exchange(format!("PUB {reply} 5\r\nhello\r\n").as_bytes());
        requester.sync();
        answers.push(show(&requester.received[start..]));
    }
    assert_eq!(answers[0], "MSG _INBOX.r 5 5\r\nhello\r\nPONG\r\n");
    for other in &answers[1..] {
        assert_eq!(&answers[0], other, "beaver and nats-server differ");
    }
}

/// Two system users pushing two JWTs of one account at once: the JWT in force at the end
/// is the one the directory keeps (a push's write and its taking effect are one step).
#[test]
fn concurrent_pushes_of_one_account_leave_the_stored_jwt_in_force() {
    let s = Setup::new("race");
    let conf = s.conf("beaver");
    let beaver = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let u = nkeys::KeyPair::new_user();
    let u_jwt = user_jwt(&u, &s.a, json!({}), json!({}));
    // One revokes u, the other does not.
    let revoking = account_jwt(&s.a, &s.op, json!({"revocations": {u.public_key(): now()}}));
    let allowing = account_jwt(&s.a, &s.op, json!({"tags": ["allowing"]}));
    let file = s.dir("beaver").join(format!("{}.jwt", s.a.public_key()));
    for round in 0..5 {
        std::thread::scope(|scope| {
            for jwt in [&revoking, &allowing] {
                let mut admin = s.admin(&beaver);
                scope.spawn(move || {
                    for _ in 0..20 {
                        let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", jwt);
                        assert!(answer.contains("jwt updated"), "{answer}");
                    }
                    // Both users share the answers' inbox (one account): the PONG says
                    // that this user's last push was handled (on its reader thread).
                    admin.sync();
                });
            }
        });
        let stored = std::fs::read_to_string(&file).unwrap();
        let in_force = if let_in(&login(&beaver, &u_jwt, &u)) {
            &allowing
        } else {
            &revoking
        };
        assert_eq!(
            stored.trim() == allowing,
            *in_force == allowing,
            "round {round}: the JWT in force is not the stored one"
        );
    }
}

/// Pushes of accounts that share nothing do not disturb a stream import in use: every
/// message published meanwhile crosses (nats-server leaves other accounts' imports alone).
#[test]
fn unrelated_pushes_lose_no_imported_message() {
    let s = Setup::new("flow");
    let conf = s.conf("beaver");
    let beaver = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let e = nkeys::KeyPair::new_account();
    let mut admin = s.admin(&beaver);
    for jwt in [
        account_jwt(
            &e,
            &s.op,
            json!({"exports": [{"name": "ev", "subject": "events.>", "type": "stream"}]}),
        ),
        account_jwt(
            &s.a,
            &s.op,
            json!({"imports": [{"name": "ev", "subject": "events.>", "account": e.public_key(),
                "type": "stream"}]}),
        ),
    ] {
        let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &jwt);
        assert!(answer.contains("jwt updated"), "{answer}");
    }
    let user_of = |account: &nkeys::KeyPair| {
        let u = nkeys::KeyPair::new_user();
        login(&beaver, &user_jwt(&u, account, json!({}), json!({})), &u)
    };
    let (mut publisher, mut subscriber) = (user_of(&e), user_of(&s.a));
    subscriber.exchange(b"SUB events.> 1\r\n");
    let start = subscriber.received.len();
    let pushing = std::sync::atomic::AtomicBool::new(true);
    let mut sent = 0;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..30 {
                let other = account_jwt(&nkeys::KeyPair::new_account(), &s.op, json!({}));
                let answer = request_on(&mut admin, "$SYS.REQ.CLAIMS.UPDATE", &other);
                assert!(answer.contains("jwt updated"), "{answer}");
            }
            pushing.store(false, std::sync::atomic::Ordering::Release);
        });
        // Published all along the pushes (a round trip per batch keeps them interleaved).
        while pushing.load(std::sync::atomic::Ordering::Acquire) {
            publisher.exchange("PUB events.x 2\r\nev\r\n".repeat(20).as_bytes());
            sent += 20;
        }
    });
    subscriber.sync();
    let got = subscriber.received[start..]
        .iter()
        .filter(|f| matches!(f, Frame::Msg(..)))
        .count();
    assert_eq!(got, sent, "messages lost while other accounts were pushed");
}
