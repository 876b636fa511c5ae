//! Makes an operator-mode setup the way `nsc` does, without `nsc`: an operator, a system
//! account `SYS`, an account `APP` with a signing key, users with credentials files, and
//! server configurations with the memory resolver and with the full (directory) resolver.
//! beaver and nats-server run the same files.
//!
//! ```text
//! cargo run --example nsc_setup -- /tmp/nsc
//! cargo run --release -- -c /tmp/nsc/server.conf
//! nats --creds /tmp/nsc/alice.creds sub greeting        # in one terminal
//! nats --creds /tmp/nsc/bob.creds pub greeting hello    # in another
//! ```
//!
//! With the full resolver, the server starts knowing only `SYS`, and `APP` is pushed to it
//! as `nsc push` does:
//!
//! ```text
//! cargo run --release -- -c /tmp/nsc/server-full.conf
//! nats --creds /tmp/nsc/sys.creds req '$SYS.REQ.CLAIMS.UPDATE' "$(cat /tmp/nsc/APP.jwt)"
//! ```
//!
//! What it writes into the directory (created if needed):
//! - `operator.jwt`: the operator's JWT, decorated as nsc writes it;
//! - `server.conf`: `operator`, `system_account`, `resolver: MEMORY`, `resolver_preload`;
//! - `server-full.conf`: the same with `resolver { type: full, dir: ... }` (the directory
//!   `jwt` beside it) and only `SYS` preloaded, as `nsc generate config --nats-resolver`
//!   writes it; `APP.jwt`: APP's account JWT, to push;
//! - `alice.creds` (a user of APP signed by APP's key), `bob.creds` (a user of APP signed by
//!   APP's signing key, who may only publish to `greeting` and subscribe to `_INBOX.>`),
//!   `sys.creds` (a user of SYS);
//! - `*.nk`: the seeds of the operator and accounts (keep them to sign more users).

use serde_json::{json, Value};
use std::path::Path;

/// Claims as nsc writes them: `nats` with its kind, version 2, and the given fields.
fn claims(subject: &str, name: &str, kind: &str, nats: Value) -> Value {
    let mut n = json!({"type": kind, "version": 2});
    if let (Some(n), Value::Object(extra)) = (n.as_object_mut(), nats) {
        n.extend(extra);
    }
    json!({"sub": subject, "name": name, "nats": n})
}

/// nsc's default account limits: everything unlimited.
fn unlimited_account(extra: Value) -> Value {
    let mut n = json!({"limits": {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": true, "conn": -1, "leaf": -1}});
    if let (Some(n), Value::Object(extra)) = (n.as_object_mut(), extra) {
        n.extend(extra);
    }
    n
}

/// A user's claims with nsc's defaults (unlimited) and `extra`.
fn user(extra: Value) -> Value {
    let mut n = json!({"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1});
    if let (Some(n), Value::Object(extra)) = (n.as_object_mut(), extra) {
        n.extend(extra);
    }
    n
}

/// A credentials file, as `nsc generate creds` writes it.
fn creds(jwt: &str, seed: &str) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\
         NKEYs are sensitive and should be treated as secrets.\n\n\
         -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n\n\
         *************************************************************\n"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::write(dir.join(name), text)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: cargo run --example nsc_setup -- DIRECTORY");
        std::process::exit(2);
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    let encode = beaver::jwt::encode;

    let operator = nkeys::KeyPair::new_operator();
    let sys = nkeys::KeyPair::new_account();
    let app = nkeys::KeyPair::new_account();
    let app_signer = nkeys::KeyPair::new_account();
    let operator_jwt = encode(
        claims(
            &operator.public_key(),
            "O",
            "operator",
            json!({"system_account": sys.public_key()}),
        ),
        &operator,
    );
    let sys_jwt = encode(
        claims(
            &sys.public_key(),
            "SYS",
            "account",
            unlimited_account(json!({})),
        ),
        &operator,
    );
    let app_jwt = encode(
        claims(
            &app.public_key(),
            "APP",
            "account",
            unlimited_account(json!({"signing_keys": [app_signer.public_key()]})),
        ),
        &operator,
    );

    let alice = nkeys::KeyPair::new_user();
    let bob = nkeys::KeyPair::new_user();
    let admin = nkeys::KeyPair::new_user();
    let alice_jwt = encode(
        claims(&alice.public_key(), "alice", "user", user(json!({}))),
        &app,
    );
    let bob_jwt = encode(
        claims(
            &bob.public_key(),
            "bob",
            "user",
            user(json!({
                "issuer_account": app.public_key(),
                "pub": {"allow": ["greeting"]},
                "sub": {"allow": ["_INBOX.>"]},
            })),
        ),
        &app_signer,
    );
    let admin_jwt = encode(
        claims(&admin.public_key(), "admin", "user", user(json!({}))),
        &sys,
    );

    write(
        dir,
        "operator.jwt",
        &format!(
            "-----BEGIN NATS OPERATOR JWT-----\n{operator_jwt}\n------END NATS OPERATOR JWT------\n"
        ),
    )?;
    write(
        dir,
        "server.conf",
        &format!(
            // Single quotes: a raw string (a Windows path's backslashes are not escapes).
            "// Operator \"O\"\noperator: '{operator}'\n\n// System Account \"SYS\"\n\
             system_account: {sys_key}\n\nresolver: MEMORY\n\nresolver_preload: {{\n\
             \x20 // Account \"SYS\"\n  {sys_key}: {sys_jwt}\n\n\
             \x20 // Account \"APP\"\n  {app_key}: {app_jwt}\n}}\n",
            operator = dir.join("operator.jwt").display(),
            sys_key = sys.public_key(),
            app_key = app.public_key(),
        ),
    )?;
    write(
        dir,
        "server-full.conf",
        &format!(
            "// Operator \"O\"\noperator: '{operator}'\n\n// System Account \"SYS\"\n\
             system_account: {sys_key}\n\nresolver {{\n  type: full\n  dir: '{jwt_dir}'\n  \
             allow_delete: false\n  interval: \"2m\"\n  timeout: \"1.9s\"\n}}\n\n\
             resolver_preload: {{\n  // Account \"SYS\"\n  {sys_key}: {sys_jwt}\n}}\n",
            operator = dir.join("operator.jwt").display(),
            sys_key = sys.public_key(),
            jwt_dir = dir.join("jwt").display(),
        ),
    )?;
    write(dir, "APP.jwt", &app_jwt)?;
    write(dir, "alice.creds", &creds(&alice_jwt, &alice.seed()?))?;
    write(dir, "bob.creds", &creds(&bob_jwt, &bob.seed()?))?;
    write(dir, "sys.creds", &creds(&admin_jwt, &admin.seed()?))?;
    write(dir, "operator.nk", &operator.seed()?)?;
    write(dir, "SYS.nk", &sys.seed()?)?;
    write(dir, "APP.nk", &app.seed()?)?;
    write(dir, "APP-signing.nk", &app_signer.seed()?)?;
    println!("Wrote an operator, accounts SYS and APP, and users alice, bob and admin (SYS)");
    println!("into {}. Start the server with:", dir.display());
    println!(
        "  cargo run --release -- -c {}",
        dir.join("server.conf").display()
    );
    println!(
        "(or with {}, then push APP.jwt on $SYS.REQ.CLAIMS.UPDATE as sys.creds)",
        dir.join("server-full.conf").display()
    );
    println!("and connect with a credentials file, for example:");
    println!(
        "  nats --server nats://127.0.0.1:4222 --creds {} sub greeting",
        dir.join("alice.creds").display()
    );
    Ok(())
}
