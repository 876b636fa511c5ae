//! Leafnode threads: the leafnode listener (one thread, `beaver-leafs`) and a dialer per
//! remote (`beaver-leaf-dial`: dials, runs the connection, and redials when it ends, for
//! as long as the server runs), as nats-server's `startLeafNodeAcceptLoop`,
//! `connectToRemoteLeafNode` and `reConnectToRemoteLeafNode`. Each thread runs its
//! connection's reader itself (`conn::run`).

use super::conn::{self, Dialed, Node};
use super::Leafnodes;
use crate::auth::PermissionSet;
use crate::client::Account;
use crate::config::{LeafNodes as LeafConfig, LeafRemote};
use crate::listen::AcceptLoop;
use crate::route::listen::{accept_each, dial, pause_unless};
use crate::shared::Shared;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

/// nats-server's `leafNodeReconnectDelayAfterLoopDetected`: a remote whose connection ended
/// on a loop waits this long before it is dialled again.
pub const LOOP_RECONNECT_DELAY: Duration = Duration::from_secs(30);
/// Stack size of leafnode threads (as routes').
const LEAF_STACK: usize = 512 * 1024;

/// Starts the listener thread on `listener`, if any, and a dialer per remote.
pub fn start(
    shared: &Arc<Shared>,
    leafs: &Arc<Leafnodes>,
    listener: Option<TcpListener>,
) -> std::io::Result<Option<AcceptLoop>> {
    let node = Node {
        shared: shared.clone(),
        leafs: leafs.clone(),
    };
    let handle = match listener {
        Some(l) => {
            let n = node.clone();
            Some(AcceptLoop::spawn(
                "beaver-leafs",
                LEAF_STACK,
                l,
                move |l| accept_loop(&n, l),
            )?)
        }
        None => None,
    };
    for remote in leafs.config.remotes.clone() {
        let n = node.clone();
        std::thread::Builder::new()
            .name("beaver-leaf-dial".into())
            .stack_size(LEAF_STACK)
            .spawn(move || dial_remote(&n, &remote))?;
    }
    Ok(handle)
}

fn accept_loop(node: &Node, listener: &TcpListener) {
    accept_each(
        listener,
        "leafnode",
        "beaver-leaf",
        LEAF_STACK,
        || is_stopping(node),
        |stream, addr| {
            let n = node.clone();
            move || {
                conn::run(&n, stream, addr, None);
            }
        },
    );
}

fn is_stopping(node: &Node) -> bool {
    node.shared.is_shutting_down() || node.leafs.is_stopping()
}

/// One remote: dial its URLs in turn until one answers, run the connection, and when it
/// ends start over after `reconnect` (30 s after a loop), until shutdown.
fn dial_remote(node: &Node, remote: &LeafRemote) {
    let account_name = remote
        .account
        .clone()
        .unwrap_or_else(|| crate::config::GLOBAL_ACCOUNT.to_owned());
    let Some(account) = node.shared.accounts.get(&account_name) else {
        log::error!(
            "Unable to lookup account {account_name} for solicited leafnode connection: \
             account not found"
        );
        return;
    };
    if remote.urls.is_empty() {
        // (The configuration file refuses it; a `Config` built in code may not.)
        log::error!("A leafnode remote without a URL is ignored");
        return;
    }
    let reconnect = node.leafs.config.reconnect;
    let mut attempts: u64 = 0;
    let mut next = 0usize;
    while !is_stopping(node) {
        let url = &remote.urls[next % remote.urls.len()];
        next += 1;
        let Ok((creds, host, port)) = crate::config::parse_route_url(url) else {
            log::error!("Error parsing leafnode remote URL {url:?}");
            return;
        };
        let port = u16::try_from(port).unwrap_or(crate::config::DEFAULT_LEAFNODE_PORT);
        let hp = crate::listen::join_host_port(&host, port);
        log::debug!("Trying to connect as leafnode to remote server on {hp:?}");
        let delay = match dial(&host, port) {
            Err(e) => {
                attempts += 1;
                // nats-server's words; the first attempt and then every so often are
                // errors, the others debug lines.
                let text = format!(
                    "Error trying to connect as leafnode to remote server {hp:?} \
                     (attempt {attempts}): {e}"
                );
                if attempts == 1 || attempts % 60 == 0 {
                    log::error!("{text}");
                } else {
                    log::debug!("{text}");
                }
                reconnect
            }
            Ok((stream, addr)) => {
                attempts = 0;
                let ended = conn::run(
                    node,
                    stream,
                    addr,
                    Some(Dialed {
                        url: url.clone(),
                        creds: creds.clone(),
                        account: account.clone(),
                        deny_imports: remote.deny_imports.clone(),
                        imports_denied: PermissionSet::of_subjects(&remote.deny_imports),
                        exports_denied: PermissionSet::of_subjects(&remote.deny_exports),
                    }),
                );
                if ended.loop_detected {
                    log::error!(
                        "Loop detected for leafnode account={:?}. Delaying attempt to \
                         reconnect for {:?}",
                        account.name,
                        LOOP_RECONNECT_DELAY
                    );
                    LOOP_RECONNECT_DELAY
                } else {
                    reconnect
                }
            }
        };
        let jitter = Duration::from_millis(fastrand::u64(0..100));
        if !pause_unless(delay + jitter, || is_stopping(node)) {
            return;
        }
    }
}

/// The account an accepted leaf binds to after presenting `user` and `pass` in `CONNECT`,
/// per `leafnodes { authorization }` (`user`/`password`, `token`, `users`, each with an
/// optional `account`), or, without that block, per the client authentication (see
/// below); `None`: refused. The
/// leafnode `CONNECT` has no token field: a remote URL `nats-leaf://TOKEN@host` sends the
/// token as the user, which is where it is looked for.
pub(crate) fn authorize(
    shared: &Shared,
    config: &LeafConfig,
    user: &str,
    pass: &str,
) -> Option<Arc<Account>> {
    let account = |name: &Option<String>| -> Option<Arc<Account>> {
        match name {
            Some(n) => shared.accounts.get(n),
            None => Some(shared.accounts.global().clone()),
        }
    };
    if !shared.config().operators.is_empty() && config.authorization.is_none() {
        // Operator mode: nats-server wants a leafnode to log in with a user JWT, which
        // beaver's leafnodes cannot do yet. Refused, never let into `$G`.
        log::error!(
            "Leafnode refused: in operator mode a leafnode must authenticate with a JWT, \
             which beaver does not support yet (or configure leafnodes.authorization)"
        );
        return None;
    }
    let Some(auth) = &config.authorization else {
        // Without leafnode credentials configured, a leaf that sends none binds to `$G`,
        // whatever the client authentication (nats-server 2.9.10 does so; checked against
        // it). One that sends a user is checked as a client would be (nats-server's
        // `isClientAuthorized`) and binds to that user's account. A user with permissions
        // is refused: beaver does not apply permissions to a leafnode connection yet, and
        // would rather refuse than grant more.
        if user.is_empty() && pass.is_empty() {
            return Some(shared.accounts.global().clone());
        }
        let opts = crate::protocol::ConnectOptions {
            user: user.to_owned(),
            pass: pass.to_owned(),
            ..crate::protocol::ConnectOptions::default()
        };
        // Leafnodes get no nonce: an nkey or JWT user cannot log in this way.
        let peer = crate::auth::Peer {
            nonce: b"",
            ip: std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            connection_type: "LEAFNODE",
        };
        return match shared.auth().authenticate(&opts, &peer) {
            Ok(login) if login.permissions.is_none() => Some(login.account),
            Ok(_) => {
                log::error!(
                    "Leafnode user {user:?} has permissions, which beaver does not apply to \
                     leafnode connections yet: refused"
                );
                None
            }
            Err(e) => {
                log::debug!("Leafnode {}", e.message);
                None
            }
        };
    };
    let matches = |expected: &str, given: &str| crate::auth::Secret::new(expected).verify(given);
    if let Some(token) = &auth.token {
        // nats-server's leafnode `CONNECT` has no token field: a token is sent as the user.
        if matches(token, user) || matches(token, pass) {
            return account(&auth.account);
        }
    }
    if let Some(u) = &auth.user {
        if u == user && matches(auth.password.as_deref().unwrap_or(""), pass) {
            return account(&auth.account);
        }
    }
    for u in &auth.users {
        if u.user == user && matches(&u.password, pass) {
            return account(&u.account);
        }
    }
    None
}
