//! Exports and imports in account JWTs (operator mode): public and private (activation
//! token) services and streams, `local_subject` and stream prefixes, and the imports that
//! must not work. beaver and Debian's nats-server 2.9.10 run the same configuration, and a
//! requester or subscriber in the importing account must get the same bytes from both.

mod common;

use common::jwt::{
    account_jwt, ask, encode, let_in, login, login_with, now, operator_jwt, user_jwt,
};
use common::{show, Raw, ServerProcess};
use serde_json::json;
use std::path::PathBuf;

/// An exporting account E, an importing account I, an account J that holds a token made
/// out to another account, an account K over its import limit, and a configuration with
/// them.
struct Setup {
    e: nkeys::KeyPair,
    i: nkeys::KeyPair,
    j: nkeys::KeyPair,
    k: nkeys::KeyPair,
    conf: PathBuf,
}

fn setup(tag: &str) -> Setup {
    let op = nkeys::KeyPair::new_operator();
    let e = nkeys::KeyPair::new_account();
    let e_signer = nkeys::KeyPair::new_account();
    let i = nkeys::KeyPair::new_account();
    let stranger = nkeys::KeyPair::new_account();
    // An activation of E's private `secret.>` for I, signed by E's signing key.
    let activation = |sub: &str, subject: &str, exp: i64| {
        let mut claims = json!({"sub": sub, "name": "act", "nats": {"type": "activation",
            "version": 2, "subject": subject, "kind": "service",
            "issuer_account": e.public_key()}});
        if exp != 0 {
            claims["exp"] = json!(exp);
        }
        encode(claims, &e_signer)
    };
    let e_jwt = account_jwt(
        &e,
        &op,
        json!({
            "signing_keys": [e_signer.public_key()],
            "exports": [
                {"name": "help", "subject": "help.>", "type": "service"},
                {"name": "events", "subject": "events.>", "type": "stream"},
                {"name": "secret", "subject": "secret.>", "type": "service", "token_req": true},
            ]
        }),
    );
    let i_key = i.public_key();
    let i_jwt = account_jwt(
        &i,
        &op,
        json!({
            "imports": [
                {"name": "help", "subject": "help.me", "account": e.public_key(),
                 "type": "service", "local_subject": "ask"},
                {"name": "events", "subject": "events.>", "account": e.public_key(),
                 "type": "stream", "to": "e"},
                {"name": "secret", "subject": "secret.a", "account": e.public_key(),
                 "type": "service", "token": activation(&i_key, "secret.>", 0)},
                // An expired token.
                {"name": "expired", "subject": "secret.c", "account": e.public_key(),
                 "type": "service", "token": activation(&i_key, "secret.>", now() - 10)},
                // No token at all.
                {"name": "none", "subject": "secret.d", "account": e.public_key(),
                 "type": "service"},
                // Nothing exported there.
                {"name": "nothing", "subject": "other.x", "account": e.public_key(),
                 "type": "service"},
            ]
        }),
    );
    // nats-server refuses every user of an account whose import holds another account's
    // token (the account does not validate).
    let j = nkeys::KeyPair::new_account();
    let j_jwt = account_jwt(
        &j,
        &op,
        json!({"imports": [{"name": "stolen", "subject": "secret.b", "account": e.public_key(),
            "type": "service", "token": activation(&stranger.public_key(), "secret.>", 0)}]}),
    );
    // An account over its own import limit is invalid too.
    let k = nkeys::KeyPair::new_account();
    let k_jwt = account_jwt(
        &k,
        &op,
        json!({"limits": {"subs": -1, "conn": -1, "leaf": -1, "imports": 0, "exports": -1,
                "data": -1, "payload": -1, "wildcards": true},
               "imports": [{"name": "help", "subject": "help.me", "account": e.public_key(),
                "type": "service"}]}),
    );
    let root = std::env::temp_dir();
    let op_file = root.join(format!(
        "beaver-jwt-imports-{}-{tag}-op.jwt",
        std::process::id()
    ));
    std::fs::write(&op_file, operator_jwt(&op, json!({}))).unwrap();
    let conf = root.join(format!(
        "beaver-jwt-imports-{}-{tag}.conf",
        std::process::id()
    ));
    std::fs::write(
        &conf,
        format!(
            "operator: '{}'\nresolver: MEMORY\nresolver_preload {{\n  {}: {e_jwt}\n  {}: {i_jwt}\n  {}: {j_jwt}\n  {}: {k_jwt}\n}}\n",
            op_file.display(),
            e.public_key(),
            i_key,
            j.public_key(),
            k.public_key(),
        ),
    )
    .unwrap();
    Setup { e, i, j, k, conf }
}

/// A user of `account`, logged in (with headers and no-responders).
fn user(server: &ServerProcess, account: &nkeys::KeyPair) -> Raw {
    let u = nkeys::KeyPair::new_user();
    let raw = login_with(
        server,
        &user_jwt(&u, account, json!({}), json!({})),
        &u,
        ",\"headers\":true,\"no_responders\":true",
    );
    assert!(let_in(&raw), "{}: a user logs in", server.name);
    raw
}

/// A request from I on `subject`, answered in E by a responder subscribed to `serves`:
/// what the requester got (`MSG` lines and payloads; a `503` with headers when nobody
/// answers).
fn request(server: &ServerProcess, s: &Setup, serves: &str, subject: &str) -> String {
    let mut responder = user(server, &s.e);
    let mut requester = user(server, &s.i);
    ask(&mut requester, &mut responder, serves, subject)
}

/// A stream message published in E on `subject`: what a subscriber to `>` in I got.
fn stream(server: &ServerProcess, s: &Setup, subject: &str) -> String {
    let mut subscriber = user(server, &s.i);
    subscriber.exchange(b"SUB > 1\r\n");
    let start = subscriber.received.len();
    let mut publisher = user(server, &s.e);
    publisher.exchange(format!("PUB {subject} 2\r\nev\r\n").as_bytes());
    subscriber.sync();
    show(&subscriber.received[start..])
}

#[test]
fn imports_from_account_jwts_like_nats_server() {
    let s = setup("main");
    let conf = s.conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf])];
    servers.extend(ServerProcess::nats_server(&["-c", conf]));
    let mut answers = Vec::new();
    for server in &servers {
        for (account, what) in [
            (&s.j, "an account holding another's token"),
            (&s.k, "an account over its import limit"),
        ] {
            let u = nkeys::KeyPair::new_user();
            let refused = login(server, &user_jwt(&u, account, json!({}), json!({})), &u);
            assert!(!let_in(&refused), "{}: {what}", server.name);
        }
        answers.push(vec![
            ("public service", request(server, &s, "help.me", "ask")),
            (
                "private service",
                request(server, &s, "secret.a", "secret.a"),
            ),
            ("expired token", request(server, &s, "secret.c", "secret.c")),
            ("no token", request(server, &s, "secret.d", "secret.d")),
            ("not exported", request(server, &s, "other.x", "other.x")),
            ("stream with a prefix", stream(server, &s, "events.x")),
            ("stream not exported", stream(server, &s, "news.x")),
        ]);
    }
    let ours = &answers[0];
    // The first PONG ends the request's exchange; a no-responders status comes before it.
    let hello = "PONG\r\nMSG _INBOX.r 5 5\r\nhello\r\nPONG\r\n";
    let nobody = "HMSG _INBOX.r 5 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\nPONG\r\n";
    let expected = [
        ("public service", hello),
        ("private service", hello),
        ("expired token", nobody),
        ("no token", nobody),
        ("not exported", nobody),
        (
            "stream with a prefix",
            "MSG e.events.x 1 2\r\nev\r\nPONG\r\n",
        ),
        ("stream not exported", "PONG\r\n"),
    ];
    for ((what, got), (_, want)) in ours.iter().zip(expected) {
        assert_eq!(got, want, "beaver: {what}");
    }
    for (server, theirs) in servers.iter().zip(&answers).skip(1) {
        for ((what, got), (_, ours)) in theirs.iter().zip(ours) {
            assert_eq!(got, ours, "beaver and {} differ: {what}", server.name);
        }
    }
}

/// An import whose activation token expires while the server runs stops at the expiry, as
/// nats-server removes it (its `activationExpired` timer): messages must not keep crossing
/// accounts on an authorization that has run out.
#[test]
fn an_activation_that_expires_while_running_ends_its_import() {
    let op = nkeys::KeyPair::new_operator();
    let (e, i) = (nkeys::KeyPair::new_account(), nkeys::KeyPair::new_account());
    let exp = now() + 3;
    let token = encode(
        // The import's own subject: nats-server 2.9.10 finds the import to end by the
        // token's subject (a wildcard one ends nothing there; beaver ends it all the same).
        json!({"sub": i.public_key(), "name": "act", "exp": exp, "nats": {"type": "activation",
            "version": 2, "subject": "secret.a", "kind": "service"}}),
        &e,
    );
    let e_jwt = account_jwt(
        &e,
        &op,
        json!({"exports": [{"name": "secret", "subject": "secret.>", "type": "service",
            "token_req": true}]}),
    );
    let i_jwt = account_jwt(
        &i,
        &op,
        json!({"imports": [{"name": "secret", "subject": "secret.a", "account": e.public_key(),
            "type": "service", "token": token}]}),
    );
    let root = std::env::temp_dir();
    let op_file = root.join(format!("beaver-jwt-expiry-{}-op.jwt", std::process::id()));
    std::fs::write(&op_file, operator_jwt(&op, json!({}))).unwrap();
    let conf = root.join(format!("beaver-jwt-expiry-{}.conf", std::process::id()));
    std::fs::write(
        &conf,
        format!(
            "operator: '{}'\nresolver: MEMORY\nresolver_preload {{\n  {}: {e_jwt}\n  {}: {i_jwt}\n}}\n",
            op_file.display(),
            e.public_key(),
            i.public_key(),
        ),
    )
    .unwrap();
    let conf_path = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf_path])];
    servers.extend(ServerProcess::nats_server(&["-c", conf_path]));
    let s = Setup {
        e,
        i,
        j: nkeys::KeyPair::new_account(),
        k: nkeys::KeyPair::new_account(),
        conf: conf.clone(),
    };
    let answered = "PONG\r\nMSG _INBOX.r 5 5\r\nhello\r\nPONG\r\n";
    for server in &servers {
        assert_eq!(
            request(server, &s, "secret.a", "secret.a"),
            answered,
            "{}: before the expiry",
            server.name
        );
    }
    // After the expiry (and a second of the timers' rounding), each server ends the import
    // within a few seconds; what the requester then gets is compared.
    let mut after = Vec::new();
    for server in &servers {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let answer = loop {
            let answer = request(server, &s, "secret.a", "secret.a");
            if now() > exp + 1 && answer != answered {
                break answer;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{}: the import still works after its activation expired",
                server.name
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        };
        after.push(answer);
    }
    assert!(!after[0].contains("hello"), "{}", after[0]);
    for other in &after[1..] {
        assert_eq!(&after[0], other, "beaver and nats-server differ");
    }
    let _ = std::fs::remove_file(&conf);
    let _ = std::fs::remove_file(&op_file);
}
