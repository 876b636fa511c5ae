//! Nkey users (`users = [{ nkey: U... }]`), end to end: `INFO`'s `nonce`, `CONNECT`'s `sig`,
//! with raw bytes against beaver and Debian's nats-server 2.9.10 (same file, same answers),
//! and with the official Rust client's `with_nkey`.

mod common;

use base64::Engine;
use common::{show, ServerProcess};
use futures::StreamExt;
use std::path::PathBuf;

const AUTH_VIOLATION: &str = "-ERR 'Authorization Violation'\r\n<closed>";

/// Writes `text` to a fresh file in the temp dir and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("beaver-nkeys-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// beaver, and nats-server when installed, both started with the configuration file `conf`.
fn servers(conf: &std::path::Path) -> Vec<ServerProcess> {
    let conf = conf.to_str().unwrap();
    let mut v = vec![ServerProcess::beaver(&["-c", conf])];
    v.extend(ServerProcess::nats_server(&["-c", conf]));
    v
}

/// How a test client answers the nonce.
enum Sign<'a> {
    /// Signs it with this key, the signature in base64 URL-safe without padding (as the
    /// Go client sends it).
    Url(&'a nkeys::KeyPair),
    /// Signs it with this key, in standard base64 (some clients' choice).
    Std(&'a nkeys::KeyPair),
    /// Sends this as the signature.
    Literal(&'a str),
}

/// Connects, signs the `INFO`'s nonce as `sign` says, sends `CONNECT` with `nkey` and then
/// `rest`, and returns what the server answered (`<closed>` when it closed the
/// connection).
fn conversation(server: &ServerProcess, nkey: &str, sign: &Sign, rest: &str) -> String {
    let mut raw = server.raw();
    let nonce = raw.info["nonce"]
        .as_str()
        .expect("INFO has a nonce")
        .to_owned();
    let sig = match sign {
        Sign::Url(k) => base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(k.sign(nonce.as_bytes()).unwrap()),
        Sign::Std(k) => {
            base64::engine::general_purpose::STANDARD.encode(k.sign(nonce.as_bytes()).unwrap())
        }
        Sign::Literal(s) => (*s).to_owned(),
    };
    let connect =
        format!("CONNECT {{\"verbose\":false,\"nkey\":\"{nkey}\",\"sig\":\"{sig}\"}}\r\n{rest}");
    let frames = raw.exchange(connect.as_bytes());
    let mut s = show(&frames);
    if raw.closed {
        s.push_str("<closed>");
    }
    s
}

/// Every server answers the same; returns beaver's answer.
fn same_everywhere(servers: &[ServerProcess], nkey: &str, sign: &Sign, rest: &str) -> String {
    let answers: Vec<String> = servers
        .iter()
        .map(|s| conversation(s, nkey, sign, rest))
        .collect();
    for (s, a) in servers.iter().zip(&answers).skip(1) {
        assert_eq!(answers[0], *a, "beaver and {} differ for {nkey}", s.name);
    }
    answers[0].clone()
}

#[test]
fn nkey_users_sign_the_nonce() {
    let alice = nkeys::KeyPair::new_user();
    let bob = nkeys::KeyPair::new_user();
    let stranger = nkeys::KeyPair::new_user();
    let conf = temp_file(
        "users.conf",
        &format!(
            "authorization {{\n  users = [\n    {{ nkey: {} }}\n    {{ nkey: {}, permissions: {{ publish: \"bob.>\" }} }}\n    {{ user: carol, password: pw }}\n  ]\n}}\n",
            alice.public_key(),
            bob.public_key()
        ),
    );
    let servers = servers(&conf);
    // Each connection gets its own nonce: 15 characters of URL-safe base64, in INFO after
    // client_ip (nats-server's field order).
    let mut nonces = std::collections::HashSet::new();
    for s in &servers {
        for _ in 0..2 {
            let raw = s.raw();
            let nonce = raw.info["nonce"].as_str().unwrap().to_owned();
            assert_eq!(nonce.len(), 15, "{}", s.name);
            assert!(nonce
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert!(nonces.insert(nonce), "a nonce was repeated");
            assert_eq!(raw.info["auth_required"], true);
        }
    }
    if let Some(reference) = servers.get(1) {
        common::assert_info_fields_match(
            &servers[0].raw().info_json,
            &reference.raw().info_json,
            "INFO with nkey users",
        );
    }

    let ok = same_everywhere(&servers, &alice.public_key(), &Sign::Url(&alice), "");
    assert_eq!(ok, "PONG\r\n");
    let ok = same_everywhere(&servers, &alice.public_key(), &Sign::Std(&alice), "");
    assert_eq!(ok, "PONG\r\n");
    // Bob's permissions apply.
    let denied = same_everywhere(
        &servers,
        &bob.public_key(),
        &Sign::Url(&bob),
        "PUB bob.x 0\r\n\r\nPUB alice 0\r\n\r\n",
    );
    assert_eq!(
        denied,
        "-ERR 'Permissions Violation for Publish to \"alice\"'\r\nPONG\r\n"
    );
    for (nkey, sign) in [
        // Another key's signature.
        (alice.public_key(), Sign::Url(&bob)),
        // A key that is not a user's.
        (stranger.public_key(), Sign::Url(&stranger)),
        // No signature, or one that is not base64.
        (alice.public_key(), Sign::Literal("")),
        (alice.public_key(), Sign::Literal("not base64!")),
        // Not a key at all.
        ("UNOTAKEY".to_owned(), Sign::Url(&alice)),
    ] {
        let answer = same_everywhere(&servers, &nkey, &sign, "");
        assert_eq!(answer, AUTH_VIOLATION, "{nkey}");
    }
    // nats-server's log line names the nkey.
    assert!(servers[0].wait_for_log(&format!(
        "authentication error - Nkey \"{}\"",
        stranger.public_key()
    )));
    // The password user still logs in, beside the nkey users.
    let mut raw = servers[0].raw();
    let frames =
        raw.exchange(b"CONNECT {\"verbose\":false,\"user\":\"carol\",\"pass\":\"pw\"}\r\n");
    assert_eq!(show(&frames), "PONG\r\n");
}

#[test]
fn nkey_users_of_accounts_and_bad_configuration() {
    let a = nkeys::KeyPair::new_user();
    let b = nkeys::KeyPair::new_user();
    let conf = temp_file(
        "accounts.conf",
        &format!(
            "accounts {{\n  A {{ users = [ {{ nkey: {} }} ] }}\n  B {{ users = [ {{ nkey: {} }} ] }}\n}}\n",
            a.public_key(),
            b.public_key()
        ),
    );
    let servers = servers(&conf);
    for s in &servers {
        // Subscribers of A and B on the same subject: a publish in A reaches A's only.
        let mut in_a = s.raw();
        let mut in_b = s.raw();
        let sign = |raw: &common::Raw, k: &nkeys::KeyPair| {
            let nonce = raw.info["nonce"].as_str().unwrap();
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(k.sign(nonce.as_bytes()).unwrap())
        };
        let connect = |k: &nkeys::KeyPair, sig: String| {
            format!(
                "CONNECT {{\"verbose\":false,\"nkey\":\"{}\",\"sig\":\"{sig}\"}}\r\n",
                k.public_key()
            )
        };
        let (sa, sb) = (sign(&in_a, &a), sign(&in_b, &b));
        in_a.exchange(format!("{}SUB x 1\r\n", connect(&a, sa)).as_bytes());
        in_b.exchange(format!("{}SUB x 1\r\n", connect(&b, sb)).as_bytes());
        let from_a = in_a.exchange(b"PUB x 2\r\nhi\r\n");
        assert_eq!(show(&from_a), "MSG x 1 2\r\nhi\r\nPONG\r\n", "{}", s.name);
        let b_got = in_b.exchange(b"");
        assert_eq!(show(&b_got), "PONG\r\n", "{}", s.name);
    }
    drop(servers);

    // Bad nkey users stop beaver at start, with nats-server's words.
    for (text, words) in [
        (
            "authorization { users = [ { nkey: UNOTAKEY } ] }\n".to_owned(),
            "Not a valid public nkey for a user",
        ),
        (
            format!(
                "authorization {{ users = [ {{ nkey: {}, user: x, password: y }} ] }}\n",
                a.public_key()
            ),
            "Nkey users do not take usernames or passwords",
        ),
        (
            format!(
                "authorization {{ users = [ {{ nkey: {0} }}, {{ nkey: {0} }} ] }}\n",
                a.public_key()
            ),
            "Duplicate nkey",
        ),
        (
            // An account's key is not a user's.
            format!(
                "authorization {{ users = [ {{ nkey: {} }} ] }}\n",
                nkeys::KeyPair::new_account().public_key()
            ),
            "Not a valid public nkey for a user",
        ),
    ] {
        let conf = temp_file("bad.conf", &text);
        let stderr = common::refused_config(&conf);
        assert!(stderr.contains(words), "{text}: {stderr}");
        assert!(stderr.contains("line 1"), "{text}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_nats_with_nkey() {
    let user = nkeys::KeyPair::new_user();
    let limited = nkeys::KeyPair::new_user();
    let conf = temp_file(
        "client.conf",
        &format!(
            "authorization {{ users = [ {{ nkey: {} }}, {{ nkey: {}, permissions: {{ subscribe: \"allowed\" }} }} ] }}\n",
            user.public_key(),
            limited.public_key()
        ),
    );
    let beaver = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let client = async_nats::ConnectOptions::with_nkey(user.seed().unwrap())
        .connect(beaver.url())
        .await
        .expect("the nkey user connects");
    let mut sub = client.subscribe("greeting").await.unwrap();
    client.publish("greeting", "hello".into()).await.unwrap();
    client.flush().await.unwrap();
    let msg = sub.next().await.unwrap();
    assert_eq!(&msg.payload[..], b"hello");

    // The wrong seed is refused.
    let stranger = nkeys::KeyPair::new_user();
    let refused = async_nats::ConnectOptions::with_nkey(stranger.seed().unwrap())
        .connect(beaver.url())
        .await;
    assert!(refused.is_err(), "a stranger's seed must not connect");

    // A limited nkey user receives where it may subscribe.
    let limited_client = async_nats::ConnectOptions::with_nkey(limited.seed().unwrap())
        .connect(beaver.url())
        .await
        .unwrap();
    let mut allowed = limited_client.subscribe("allowed").await.unwrap();
    // Its own message back: the subscription is in place (async-nats's flush only writes
    // the socket, it is no barrier).
    limited_client
        .publish("allowed", "mine".into())
        .await
        .unwrap();
    assert_eq!(&allowed.next().await.unwrap().payload[..], b"mine");
    client.publish("allowed", "to you".into()).await.unwrap();
    client.flush().await.unwrap();
    assert_eq!(&allowed.next().await.unwrap().payload[..], b"to you");
}
