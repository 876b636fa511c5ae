//! Operator mode (decentralized JWT authentication), end to end. The operator, accounts and
//! users are made at test time with the `nkeys` crate, as `nsc` makes them (the same claims,
//! signed the same way); beaver and Debian's nats-server 2.9.10 run the same configuration
//! file, and every conversation must get the same bytes from both. The official Rust client
//! connects with a credentials file.

mod common;

use base64::Engine;
use common::jwt::{
    account_jwt, creds, encode, merge, now, operator_jwt, scoped_user_jwt, user_jwt,
};
use common::{show, ServerProcess};
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;

const AUTH_VIOLATION: &str = "-ERR 'Authorization Violation'\r\n<closed>";

/// Writes `text` to a fresh file in the temp dir and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("beaver-jwt-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// An operator with two accounts (A with a signing key, B), as `nsc` would set them up, and
/// its configuration file (memory resolver, preloaded accounts).
struct Setup {
    op: nkeys::KeyPair,
    a: nkeys::KeyPair,
    a_signer: nkeys::KeyPair,
    b: nkeys::KeyPair,
    conf: PathBuf,
}

impl Setup {
    /// `a_nats` is merged into account A's claims.
    fn new(tag: &str, a_nats: Value) -> Setup {
        let op = nkeys::KeyPair::new_operator();
        let a = nkeys::KeyPair::new_account();
        let a_signer = nkeys::KeyPair::new_account();
        let b = nkeys::KeyPair::new_account();
        let mut nats = json!({"signing_keys": [a_signer.public_key()]});
        merge(&mut nats, a_nats);
        let a_jwt = account_jwt(&a, &op, nats);
        let b_jwt = account_jwt(&b, &op, json!({}));
        // The operator JWT in a decorated file, as nsc writes it; the accounts inline.
        let op_file = temp_file(
            &format!("{tag}-op.jwt"),
            &format!(
                "-----BEGIN NATS OPERATOR JWT-----\n{}\n------END NATS OPERATOR JWT------\n",
                operator_jwt(&op, json!({}))
            ),
        );
        let conf = temp_file(
            &format!("{tag}.conf"),
            &format!(
                // Single quotes: a raw string (a Windows path's backslashes are not escapes).
                "// Operator \"O\"\noperator: '{}'\nresolver: MEMORY\nresolver_preload: {{\n  // Account \"A\"\n  {}: {a_jwt}\n  {}: \"{b_jwt}\"\n}}\n",
                op_file.display(),
                a.public_key(),
                b.public_key()
            ),
        );
        Setup {
            op,
            a,
            a_signer,
            b,
            conf,
        }
    }

    fn servers(&self) -> Vec<ServerProcess> {
        let conf = self.conf.to_str().unwrap();
        let mut v = vec![ServerProcess::beaver(&["-c", conf])];
        v.extend(ServerProcess::nats_server(&["-c", conf]));
        v
    }
}

/// How the test client answers the nonce.
enum Sig<'a> {
    /// Signs it with this key.
    By(&'a nkeys::KeyPair),
    /// Sends no signature.
    None,
}

/// Connects, sends `CONNECT` with `jwt` and the signature, then `rest`; returns what the
/// server answered (`<closed>` when it closed the connection).
fn conversation(server: &ServerProcess, jwt: &str, sig: &Sig, rest: &str) -> String {
    let mut raw = server.raw();
    let nonce = raw.info["nonce"]
        .as_str()
        .expect("INFO has a nonce")
        .to_owned();
    let sig = match sig {
        Sig::By(k) => format!(
            ",\"sig\":\"{}\"",
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(k.sign(nonce.as_bytes()).unwrap())
        ),
        Sig::None => String::new(),
    };
    let connect = format!("CONNECT {{\"verbose\":false,\"jwt\":\"{jwt}\"{sig}}}\r\n{rest}");
    let frames = raw.exchange(connect.as_bytes());
    let mut s = show(&frames);
    if raw.closed {
        s.push_str("<closed>");
    }
    s
}

/// Every server answers the same; returns beaver's answer.
fn same_everywhere(
    servers: &[ServerProcess],
    jwt: &str,
    sig: &Sig,
    rest: &str,
    what: &str,
) -> String {
    let answers: Vec<String> = servers
        .iter()
        .map(|s| conversation(s, jwt, sig, rest))
        .collect();
    for (s, a) in servers.iter().zip(&answers).skip(1) {
        assert_eq!(answers[0], *a, "beaver and {} differ: {what}", s.name);
    }
    answers[0].clone()
}

#[test]
fn the_chain_of_trust() {
    let s = Setup::new("chain", json!({}));
    let servers = s.servers();
    for srv in &servers {
        let raw = srv.raw();
        assert_eq!(raw.info["auth_required"], true, "{}", srv.name);
        assert_eq!(raw.info["nonce"].as_str().unwrap().len(), 15);
    }
    if let Some(reference) = servers.get(1) {
        common::assert_info_fields_match(
            &servers[0].raw().info_json,
            &reference.raw().info_json,
            "INFO in operator mode",
        );
    }
    let u = nkeys::KeyPair::new_user();
    let good = user_jwt(&u, &s.a, json!({}), json!({}));
    assert_eq!(
        same_everywhere(&servers, &good, &Sig::By(&u), "", "a user of A"),
        "PONG\r\n"
    );
    // Signed by A's signing key, naming A as issuer_account.
    let by_signer = user_jwt(
        &u,
        &s.a_signer,
        json!({"issuer_account": s.a.public_key()}),
        json!({}),
    );
    assert_eq!(
        same_everywhere(&servers, &by_signer, &Sig::By(&u), "", "signing key"),
        "PONG\r\n"
    );
    let other = nkeys::KeyPair::new_user();
    let stranger_account = nkeys::KeyPair::new_account();
    let unknown_signer = nkeys::KeyPair::new_account();
    let refused = [
        ("no JWT", String::new(), Sig::By(&u)),
        (
            "the nonce signed by another key",
            good.clone(),
            Sig::By(&other),
        ),
        ("no signature", good.clone(), Sig::None),
        (
            "an account the operator does not know",
            user_jwt(&u, &stranger_account, json!({}), json!({})),
            Sig::By(&u),
        ),
        (
            "a signing key A does not list",
            user_jwt(
                &u,
                &unknown_signer,
                json!({"issuer_account": s.a.public_key()}),
                json!({}),
            ),
            Sig::By(&u),
        ),
        (
            "an expired user JWT",
            user_jwt(&u, &s.a, json!({}), json!({"exp": now() - 10})),
            Sig::By(&u),
        ),
        (
            "a user JWT not valid yet",
            user_jwt(&u, &s.a, json!({}), json!({"nbf": now() + 3600})),
            Sig::By(&u),
        ),
        (
            "a JWT signed by the operator",
            user_jwt(&u, &s.op, json!({}), json!({})),
            Sig::By(&u),
        ),
        (
            "a source network that is not the client's",
            user_jwt(&u, &s.a, json!({"src": ["10.9.8.0/24"]}), json!({})),
            Sig::By(&u),
        ),
        (
            "WebSocket only",
            user_jwt(
                &u,
                &s.a,
                json!({"allowed_connection_types": ["WEBSOCKET"]}),
                json!({}),
            ),
            Sig::By(&u),
        ),
        ("garbage", "eyJ.not.ajwt".to_owned(), Sig::By(&u)),
    ];
    for (what, jwt, sig) in &refused {
        assert_eq!(
            same_everywhere(&servers, jwt, sig, "", what),
            AUTH_VIOLATION,
            "{what}"
        );
    }
    // Allowed from the loopback network, and over a standard connection.
    for (what, nats) in [
        ("src", json!({"src": "127.0.0.0/8,::1/128"})),
        (
            "connection types",
            json!({"allowed_connection_types": ["STANDARD", "WEBSOCKET"]}),
        ),
        ("bearer", json!({"bearer_token": true})),
    ] {
        let jwt = user_jwt(&u, &s.a, nats, json!({}));
        let sig = if what == "bearer" {
            Sig::None
        } else {
            Sig::By(&u)
        };
        assert_eq!(same_everywhere(&servers, &jwt, &sig, "", what), "PONG\r\n");
    }
    // Accounts are isolated: a subscriber in B does not see A's message.
    for srv in &servers {
        let ub = nkeys::KeyPair::new_user();
        let jb = user_jwt(&ub, &s.b, json!({}), json!({}));
        let mut in_b = srv.raw();
        let nonce = in_b.info["nonce"].as_str().unwrap().to_owned();
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(ub.sign(nonce.as_bytes()).unwrap());
        in_b.exchange(
            format!(
                "CONNECT {{\"verbose\":false,\"jwt\":\"{jb}\",\"sig\":\"{sig}\"}}\r\nSUB x 1\r\n"
            )
            .as_bytes(),
        );
        let a_says = conversation(srv, &good, &Sig::By(&u), "SUB x 1\r\nPUB x 2\r\nhi\r\n");
        assert_eq!(a_says, "MSG x 1 2\r\nhi\r\nPONG\r\n", "{}", srv.name);
        assert_eq!(show(&in_b.exchange(b"")), "PONG\r\n", "{}", srv.name);
    }
}

#[test]
fn revocations_bearer_and_permissions_from_the_account() {
    let revoked = nkeys::KeyPair::new_user();
    let later = nkeys::KeyPair::new_user();
    let t = now();
    let s = Setup::new(
        "revoke",
        json!({
            "revocations": {revoked.public_key(): t},
            "limits": {"subs": -1, "conn": -1, "payload": -1, "disallow_bearer": true},
            "default_permissions": {"pub": {"deny": ["secret.>"]}},
        }),
    );
    let servers = s.servers();
    // Issued at or before the revocation: refused; issued after it: welcome.
    let before = user_jwt(&revoked, &s.a, json!({}), json!({"iat": t - 5}));
    assert_eq!(
        same_everywhere(&servers, &before, &Sig::By(&revoked), "", "revoked"),
        AUTH_VIOLATION
    );
    let after = user_jwt(&revoked, &s.a, json!({}), json!({"iat": t + 5}));
    assert_eq!(
        same_everywhere(&servers, &after, &Sig::By(&revoked), "", "issued later"),
        "PONG\r\n"
    );
    // The account disallows bearer tokens.
    let bearer = user_jwt(&later, &s.a, json!({"bearer_token": true}), json!({}));
    assert_eq!(
        same_everywhere(&servers, &bearer, &Sig::None, "", "bearer"),
        AUTH_VIOLATION
    );
    // A user without permissions gets the account's defaults; one with its own, those.
    let plain = user_jwt(&later, &s.a, json!({}), json!({}));
    let answer = same_everywhere(
        &servers,
        &plain,
        &Sig::By(&later),
        "PUB secret.x 0\r\n\r\nPUB open 0\r\n\r\n",
        "default permissions",
    );
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Publish to \"secret.x\"'\r\nPONG\r\n"
    );
    let own = user_jwt(
        &later,
        &s.a,
        json!({"pub": {"allow": ["secret.>"]}, "sub": {"deny": ["nope"]}}),
        json!({}),
    );
    let answer = same_everywhere(
        &servers,
        &own,
        &Sig::By(&later),
        "PUB secret.x 0\r\n\r\nPUB open 0\r\n\r\nSUB nope 1\r\n",
        "own permissions",
    );
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Publish to \"open\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"nope\"'\r\nPONG\r\n"
    );
}

#[test]
fn scoped_signing_keys_and_limits() {
    let scoped = nkeys::KeyPair::new_account();
    let s = Setup::new(
        "scoped",
        json!({
            "limits": {"subs": 2, "conn": 1, "payload": 8},
        }),
    );
    // A second account whose scoped key gives its users the template's permissions.
    let c = nkeys::KeyPair::new_account();
    let c_jwt = account_jwt(
        &c,
        &s.op,
        json!({"signing_keys": [{"kind": "user_scope", "key": scoped.public_key(), "role": "r", "template": {"pub": {"allow": ["only.this"]}, "subs": -1, "payload": -1, "data": -1}}]}),
    );
    let text = std::fs::read_to_string(&s.conf).unwrap();
    let text = text.replacen(
        "resolver_preload: {\n",
        &format!("resolver_preload: {{\n  {}: {c_jwt}\n", c.public_key()),
        1,
    );
    std::fs::write(&s.conf, text).unwrap();
    let servers = s.servers();
    let u = nkeys::KeyPair::new_user();
    let jwt = scoped_user_jwt(&u, &scoped, json!({"issuer_account": c.public_key()}));
    let answer = same_everywhere(
        &servers,
        &jwt,
        &Sig::By(&u),
        "PUB only.this 0\r\n\r\nPUB other 0\r\n\r\n",
        "scoped key",
    );
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Publish to \"other\"'\r\nPONG\r\n"
    );
    // A scoped key's users may not bring their own permissions, nor limits.
    let own = scoped_user_jwt(
        &u,
        &scoped,
        json!({"issuer_account": c.public_key(), "pub": {"allow": [">"]}}),
    );
    assert_eq!(
        same_everywhere(&servers, &own, &Sig::By(&u), "", "scoped with own"),
        AUTH_VIOLATION
    );
    let own = user_jwt(
        &u,
        &scoped,
        json!({"issuer_account": c.public_key()}),
        json!({}),
    );
    assert_eq!(
        same_everywhere(&servers, &own, &Sig::By(&u), "", "scoped with own"),
        AUTH_VIOLATION
    );

    // Account A: at most 2 subscriptions and 8-byte payloads per connection, one
    // connection at a time.
    let ua = nkeys::KeyPair::new_user();
    let ja = user_jwt(&ua, &s.a, json!({}), json!({}));
    let subs = same_everywhere(
        &servers,
        &ja,
        &Sig::By(&ua),
        "SUB a 1\r\nSUB b 2\r\nSUB c 3\r\n",
        "subs limit",
    );
    assert_eq!(subs, "-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n");
    let payload = same_everywhere(
        &servers,
        &ja,
        &Sig::By(&ua),
        "PUB a 8\r\n12345678\r\nPUB a 9\r\n123456789\r\n",
        "payload limit",
    );
    assert_eq!(payload, "-ERR 'Maximum Payload Violation'\r\n<closed>");
    for srv in &servers {
        // Hold the account's one connection, then try a second.
        let mut first = srv.raw();
        let nonce = first.info["nonce"].as_str().unwrap().to_owned();
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(ua.sign(nonce.as_bytes()).unwrap());
        let hello = first.exchange(
            format!("CONNECT {{\"verbose\":false,\"jwt\":\"{ja}\",\"sig\":\"{sig}\"}}\r\n")
                .as_bytes(),
        );
        assert_eq!(show(&hello), "PONG\r\n", "{}", srv.name);
        // Logging in again on the same connection does not count it twice.
        let again = first.exchange(
            format!("CONNECT {{\"verbose\":false,\"jwt\":\"{ja}\",\"sig\":\"{sig}\"}}\r\n")
                .as_bytes(),
        );
        assert_eq!(show(&again), "PONG\r\n", "{}", srv.name);
        let second = conversation(srv, &ja, &Sig::By(&ua), "");
        assert!(
            second.starts_with("-ERR 'maximum account active connections exceeded'\r\n")
                && second.ends_with("<closed>"),
            "{}: {second:?}",
            srv.name
        );
        drop(first);
    }
}

#[test]
fn expiry_is_notified_and_closes() {
    let s = Setup::new("expiry", json!({}));
    // A ping interval longer than the test's patience: the expiry must not wait for it
    // (the reader wakes for whichever comes first).
    let text = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(&s.conf, format!("ping_interval: \"1m\"\n{text}")).unwrap();
    let servers = s.servers();
    for srv in &servers {
        let u = nkeys::KeyPair::new_user();
        let jwt = user_jwt(&u, &s.a, json!({}), json!({"exp": now() + 4}));
        let mut raw = srv.raw();
        let nonce = raw.info["nonce"].as_str().unwrap().to_owned();
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(u.sign(nonce.as_bytes()).unwrap());
        let hello = raw.exchange(
            format!("CONNECT {{\"verbose\":false,\"jwt\":\"{jwt}\",\"sig\":\"{sig}\"}}\r\n")
                .as_bytes(),
        );
        assert_eq!(show(&hello), "PONG\r\n", "{}", srv.name);
        let rest = raw.until_closed();
        assert_eq!(
            show(&rest),
            "-ERR 'User Authentication Expired'\r\n",
            "{}",
            srv.name
        );
    }
}

#[test]
fn configuration_errors() {
    let op = nkeys::KeyPair::new_operator();
    let a = nkeys::KeyPair::new_account();
    let op_jwt = operator_jwt(&op, json!({}));
    let a_jwt = account_jwt(&a, &op, json!({}));
    let other = nkeys::KeyPair::new_account();
    for (text, words) in [
        (
            format!("operator: {op_jwt}\n"),
            "operators require an account resolver to be configured",
        ),
        (
            format!(
                "operator: {op_jwt}\nresolver: MEMORY\naccounts {{ X {{ users = [ {{user: a, password: b}} ] }} }}\n"
            ),
            "operators do not allow Accounts to be configured directly",
        ),
        (
            format!(
                "operator: {op_jwt}\nresolver: MEMORY\nauthorization {{ users = [ {{user: a, password: b}} ] }}\n"
            ),
            "operators do not allow users to be configured directly",
        ),
        (
            format!("operator: {op_jwt}\nresolver: MEMORY\nresolver_preload: {{ {}: nonsense }}\n", a.public_key()),
            "invalid account JWT",
        ),
        (
            format!("operator: {op_jwt}\nresolver: MEMORY\nresolver_preload: {{ {}: {a_jwt} }}\n", other.public_key()),
            "is about another account",
        ),
        (
            "operator: /no/such/operator.jwt\nresolver: MEMORY\n".to_owned(),
            "error parsing operator JWT",
        ),
        (
            format!("operator: {a_jwt}\nresolver: MEMORY\n"),
            "error parsing operator JWT",
        ),
        (
            format!("operator: {op_jwt}\nresolver: {{ type: cache, dir: /tmp/jwt }}\n"),
            "not supported by beaver yet",
        ),
        (
            // An operator whose signing key is an account's.
            format!(
                "operator: {}\nresolver: MEMORY\n",
                operator_jwt(&op, json!({"signing_keys": [a.public_key()]}))
            ),
            "required to be a valid public operator nkey",
        ),
        (
            format!("operator: {op_jwt}\nresolver: MEMORY\nsystem_account: garbage\n"),
            "an account's public key",
        ),
    ] {
        let conf = temp_file("bad.conf", &text);
        let stderr = common::refused_config(&conf);
        assert!(stderr.contains(words), "{text}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_nats_with_a_credentials_file() {
    let s = Setup::new("creds", json!({}));
    let beaver = ServerProcess::beaver(&["-c", s.conf.to_str().unwrap(), "-m", "-1"]);
    let alice = nkeys::KeyPair::new_user();
    let bob = nkeys::KeyPair::new_user();
    let alice_creds = temp_file(
        "alice.creds",
        &creds(
            &user_jwt(&alice, &s.a, json!({}), json!({})),
            &alice.seed().unwrap(),
        ),
    );
    let bob_creds = creds(
        &user_jwt(
            &bob,
            &s.a_signer,
            json!({"issuer_account": s.a.public_key(), "sub": {"allow": ["greeting", "_INBOX.>"]}}),
            json!({}),
        ),
        &bob.seed().unwrap(),
    );
    let alice_client = async_nats::ConnectOptions::with_credentials_file(&alice_creds)
        .await
        .unwrap()
        .connect(beaver.url())
        .await
        .expect("alice connects with her credentials file");
    let bob_client = async_nats::ConnectOptions::with_credentials(&bob_creds)
        .unwrap()
        .connect(beaver.url())
        .await
        .expect("bob connects");
    // Request/reply inside the account.
    let mut service = bob_client.subscribe("greeting").await.unwrap();
    common::round_trip(&bob_client).await;
    let responder = tokio::spawn(async move {
        let msg = service.next().await.unwrap();
        bob_client
            .publish(msg.reply.unwrap(), "hello alice".into())
            .await
            .unwrap();
        bob_client.flush().await.unwrap();
    });
    let reply = alice_client.request("greeting", "hi".into()).await.unwrap();
    assert_eq!(&reply.payload[..], b"hello alice");
    responder.await.unwrap();
    // Monitoring names users and accounts by their public keys, as nats-server does.
    let connz = common::get_json(beaver.monitor_port(), "/connz?auth=1");
    let seen: Vec<(String, String)> = connz["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["authorized_user"].as_str().unwrap_or_default().to_owned(),
                c["account"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    // (Bob's client was dropped by its task once it answered.)
    assert!(
        seen.contains(&(alice.public_key(), s.a.public_key())),
        "{seen:?}"
    );
    // A user of an account the operator never signed cannot connect.
    let stranger = nkeys::KeyPair::new_user();
    let nobody = nkeys::KeyPair::new_account();
    let refused = async_nats::ConnectOptions::with_credentials(&creds(
        &user_jwt(&stranger, &nobody, json!({}), json!({})),
        &stranger.seed().unwrap(),
    ))
    .unwrap()
    .connect(beaver.url())
    .await;
    assert!(refused.is_err());
    let _ = s.b;
}

/// Found by attacking operator mode: an account not valid yet, a leafnode without
/// credentials, claims nested deep enough to exhaust a reader's stack, and permission
/// templates (once refused, now filled in).
#[test]
fn what_an_attacker_tried() {
    let op = nkeys::KeyPair::new_operator();
    let later = nkeys::KeyPair::new_account();
    let later_jwt = encode(
        json!({"sub": later.public_key(), "nbf": now() + 3600, "nats": {"type": "account", "version": 2,
            "limits": {"subs": -1, "conn": -1, "payload": -1, "data": -1}}}),
        &op,
    );
    let scoped = nkeys::KeyPair::new_account();
    let templated = nkeys::KeyPair::new_account();
    let templated_jwt = account_jwt(
        &templated,
        &op,
        json!({"signing_keys": [{"kind": "user_scope", "key": scoped.public_key(), "role": "r",
            "template": {"pub": {"deny": ["secret.{{name()}}"]}, "subs": -1, "payload": -1, "data": -1}}]}),
    );
    let conf = temp_file(
        "attacked.conf",
        &format!(
            "operator: {}\nresolver: MEMORY\nresolver_preload: {{\n  {}: {later_jwt}\n  {}: {templated_jwt}\n}}\n\
             leafnodes {{ listen: \"127.0.0.1:-1\" }}\n",
            operator_jwt(&op, json!({})),
            later.public_key(),
            templated.public_key()
        ),
    );
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf])];
    servers.extend(ServerProcess::nats_server(&["-c", conf]));
    let u = nkeys::KeyPair::new_user();
    // An account whose JWT is not valid yet: its users are refused.
    let jwt = user_jwt(&u, &later, json!({}), json!({}));
    assert_eq!(
        same_everywhere(&servers, &jwt, &Sig::By(&u), "", "account not valid yet"),
        AUTH_VIOLATION
    );
    // Deeply nested claims, unsigned: refused, and the server is still there.
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let bomb = format!(
        "{}.{}.AA",
        b64.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#),
        b64.encode(format!(
            r#"{{"iss":"{}","nats":{{"type":"user","version":2,"x":{deep}}}}}"#,
            later.public_key()
        ))
    );
    assert_eq!(
        conversation(&servers[0], &bomb, &Sig::By(&u), ""),
        AUTH_VIOLATION
    );
    assert_eq!(
        same_everywhere(&servers, &jwt, &Sig::By(&u), "", "still up"),
        AUTH_VIOLATION
    );
    // A leafnode without credentials is refused, not let into $G.
    for srv in &servers {
        let port = srv.port_in_log("Listening for leafnode connections on ");
        let mut leaf = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        leaf.set_read_timeout(Some(common::WAIT)).unwrap();
        use std::io::{Read, Write};
        leaf.write_all(
            b"CONNECT {\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"name\":\"evil\",\"headers\":true}\r\nPING\r\n",
        )
        .unwrap();
        let mut got = Vec::new();
        let _ = leaf.read_to_end(&mut got);
        let got = String::from_utf8_lossy(&got);
        assert!(
            got.contains("-ERR 'Authorization Violation'") && !got.contains("PONG"),
            "{}: {got}",
            srv.name
        );
    }
    // A scoped template with functions ({{name()}}): filled in for the user, as nats-server
    // does (beaver once refused such users rather than grant what the deny kept).
    let jwt = scoped_user_jwt(
        &u,
        &scoped,
        json!({"issuer_account": templated.public_key()}),
    );
    assert_eq!(
        same_everywhere(
            &servers,
            &jwt,
            &Sig::By(&u),
            "PUB secret.U 0\r\n\r\nPUB secret.V 0\r\n\r\n",
            "a template's deny"
        ),
        "-ERR 'Permissions Violation for Publish to \"secret.U\"'\r\nPONG\r\n"
    );
}

/// Every template function of a scoped signing key (`{{name()}}`, `{{subject()}}`,
/// `{{account-name()}}`, `{{account-subject()}}`, `{{tag(x)}}`, `{{account-tag(x)}}`),
/// filled in as nats-server fills them.
#[test]
fn scoped_templates_like_nats_server() {
    let op = nkeys::KeyPair::new_operator();
    let acc = nkeys::KeyPair::new_account();
    let scoped = nkeys::KeyPair::new_account();
    let acc_jwt = account_jwt(
        &acc,
        &op,
        json!({"tags": ["region:eu"], "signing_keys": [{"kind": "user_scope",
            "key": scoped.public_key(), "role": "r", "template": {
                "pub": {"allow": ["{{account-name()}}.{{name()}}.>", "t.{{tag(dept)}}",
                                  "r.{{account-tag(region)}}", "n.{{tag(nothing)}}"],
                        "deny": ["{{account-name()}}.{{name()}}.secret"]},
                "sub": {"allow": ["{{subject()}}.in", "{{account-subject()}}.all"]},
                "subs": -1, "payload": -1, "data": -1}}]}),
    );
    let conf = temp_file(
        "templates.conf",
        &format!(
            "operator: {}\nresolver: MEMORY\nresolver_preload: {{\n  {}: {acc_jwt}\n}}\n",
            operator_jwt(&op, json!({})),
            acc.public_key(),
        ),
    );
    let conf = conf.to_str().unwrap();
    let mut servers = vec![ServerProcess::beaver(&["-c", conf])];
    servers.extend(ServerProcess::nats_server(&["-c", conf]));
    let u = nkeys::KeyPair::new_user();
    let jwt = scoped_user_jwt(
        &u,
        &scoped,
        json!({"issuer_account": acc.public_key(), "tags": ["dept:eng", "dept:ops"]}),
    );
    let (uk, ak) = (u.public_key(), acc.public_key());
    let ops = format!(
        "PUB A.U.x 0\r\n\r\nPUB A.U.secret 0\r\n\r\nPUB t.eng 0\r\n\r\nPUB t.ops 0\r\n\r\n\
         PUB t.hr 0\r\n\r\nPUB r.eu 0\r\n\r\nPUB n.x 0\r\n\r\nSUB {uk}.in 1\r\n\
         SUB {ak}.all 2\r\nSUB other 3\r\n"
    );
    let answer = same_everywhere(&servers, &jwt, &Sig::By(&u), &ops, "templates");
    assert_eq!(
        answer,
        "-ERR 'Permissions Violation for Publish to \"A.U.secret\"'\r\n\
         -ERR 'Permissions Violation for Publish to \"t.hr\"'\r\n\
         -ERR 'Permissions Violation for Publish to \"n.x\"'\r\n\
         -ERR 'Permissions Violation for Subscription to \"other\"'\r\nPONG\r\n"
    );
}

/// `resolver_pinned_accounts`: users of an account not listed are refused; those of a listed
/// one log in, as on nats-server.
#[test]
fn pinned_accounts_like_nats_server() {
    let s = Setup::new("pinned", json!({}));
    let text = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(
        &s.conf,
        format!("{text}resolver_pinned_accounts: [ {} ]\n", s.a.public_key()),
    )
    .unwrap();
    let servers = s.servers();
    let (ua, ub) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let ja = user_jwt(&ua, &s.a, json!({}), json!({}));
    let jb = user_jwt(&ub, &s.b, json!({}), json!({}));
    assert_eq!(
        same_everywhere(&servers, &ja, &Sig::By(&ua), "", "a pinned account"),
        "PONG\r\n"
    );
    assert_eq!(
        same_everywhere(&servers, &jb, &Sig::By(&ub), "", "an account not pinned"),
        AUTH_VIOLATION
    );
}
