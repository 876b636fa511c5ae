//! JWTs for the operator-mode tests, made as `nsc` makes them (the same claims, signed the
//! same way with the `nkeys` crate, through `beaver::jwt::encode`).

use super::{Frame, Raw, ServerProcess};
use base64::Engine;
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// Unix seconds, now.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A JWT, as nsc makes them (`beaver::jwt::encode`).
pub fn encode(claims: Value, signer: &nkeys::KeyPair) -> String {
    beaver::jwt::encode(claims, signer)
}

/// An operator JWT, self-signed, with `nats` merged in.
pub fn operator_jwt(op: &nkeys::KeyPair, nats: Value) -> String {
    let mut n = json!({"type": "operator", "version": 2});
    merge(&mut n, nats);
    encode(json!({"sub": op.public_key(), "name": "O", "nats": n}), op)
}

/// An account JWT signed by `signer` (the operator), with `nats` merged in.
pub fn account_jwt(acc: &nkeys::KeyPair, signer: &nkeys::KeyPair, nats: Value) -> String {
    let mut n = json!({"type": "account", "version": 2, "limits": {"subs": -1, "conn": -1, "leaf": -1, "imports": -1, "exports": -1, "data": -1, "payload": -1, "wildcards": true}});
    merge(&mut n, nats);
    encode(
        json!({"sub": acc.public_key(), "name": "A", "nats": n}),
        signer,
    )
}

/// A user JWT signed by `signer`, with `nats` (and top-level `extra`) merged in.
pub fn user_jwt(
    user: &nkeys::KeyPair,
    signer: &nkeys::KeyPair,
    nats: Value,
    extra: Value,
) -> String {
    let mut n = json!({"type": "user", "version": 2, "subs": -1, "data": -1, "payload": -1});
    merge(&mut n, nats);
    let mut c = json!({"sub": user.public_key(), "name": "U", "nats": n});
    merge(&mut c, extra);
    encode(c, signer)
}

/// A user JWT signed by a scoped signing key: no permissions or limits of its own (nsc
/// writes none: the scope's template gives them), with `nats` merged in.
pub fn scoped_user_jwt(user: &nkeys::KeyPair, signer: &nkeys::KeyPair, nats: Value) -> String {
    let mut n = json!({"type": "user", "version": 2});
    merge(&mut n, nats);
    encode(
        json!({"sub": user.public_key(), "name": "U", "nats": n}),
        signer,
    )
}

pub fn merge(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        for (k, v) in from {
            into.insert(k, v);
        }
    }
}

/// A credentials file's text, as `nsc generate creds` writes it.
pub fn creds(jwt: &str, seed: &str) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\n\
         -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n\n\
         *************************************************************\n"
    )
}

/// Connects with a user JWT, signing the nonce with `key`; the first frames answered to
/// `CONNECT` and `PING` are left in `received`.
pub fn login(server: &ServerProcess, jwt: &str, key: &nkeys::KeyPair) -> Raw {
    login_with(server, jwt, key, "")
}

/// [`login`], with `more` (`,"headers":true`, ...) added to the `CONNECT` options.
pub fn login_with(server: &ServerProcess, jwt: &str, key: &nkeys::KeyPair, more: &str) -> Raw {
    let mut raw = server.raw();
    let nonce = raw.info["nonce"].as_str().expect("a nonce").to_owned();
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(key.sign(nonce.as_bytes()).unwrap());
    raw.exchange(
        format!("CONNECT {{\"verbose\":false,\"jwt\":\"{jwt}\",\"sig\":\"{sig}\"{more}}}\r\n")
            .as_bytes(),
    );
    raw
}

/// Whether the login ended in `PONG` (let in) rather than an error and a close.
pub fn let_in(raw: &Raw) -> bool {
    !raw.closed && raw.received.last() == Some(&Frame::Pong)
}

/// A request from `requester` on `subject`, answered `hello` by `responder` once subscribed
/// to `serves`: what the requester got from its request on (`MSG` lines and payloads; a
/// `503` with headers when nobody answers; the `PONG`s of its round trips).
pub fn ask(requester: &mut Raw, responder: &mut Raw, serves: &str, subject: &str) -> String {
    responder.exchange(format!("SUB {serves} 1\r\n").as_bytes());
    let start = requester.received.len();
    requester.exchange(format!("SUB _INBOX.r 5\r\nPUB {subject} _INBOX.r 2\r\nhi\r\n").as_bytes());
    // The responder answers whatever reaches it (the reply subject is the server's own).
    let from = responder.received.len();
    responder.sync();
    let asked: Vec<Frame> = responder.received[from..].to_vec();
    for f in asked {
        let Frame::Msg(line, _) = f else {
            continue;
        };
        let reply = line.split(' ').nth(3).unwrap_or_default().to_owned();
        responder.exchange(format!("PUB {reply} 5\r\nhello\r\n").as_bytes());
    }
    requester.sync();
    super::show(&requester.received[start..])
}
