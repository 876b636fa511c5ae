//! Configuration reload (SIGHUP, `--signal reload`), as nats-server's `Server.Reload`: the
//! file given with `-c` is read again, the command line applied over it, and the result
//! compared with the running configuration.
//!
//! All or nothing, as nats-server: if any option that cannot change while running differs
//! (the listen address, the server name, monitoring, `max_pending`, `max_subscriptions`,
//! lame-duck timings, beaver's `writers`; operator mode and `cluster` but its `routes`), nothing is applied and the error names it (`config reload not supported for Port:
//! old=4222, new=4333`). Otherwise every changed option takes effect and is logged
//! (`Reloaded: debug = true`), then `Reloaded server configuration`. Which options may
//! change is the option table's rule (`config::reload_rules`); what a change does here:
//!
//! - `debug`, `trace`, `logtime`, `logfile`: the logger is rebuilt;
//! - `max_payload`, `max_control_line`, `ping_interval`, `ping_max`: for new connections and,
//!   from their next read, existing ones (new clients' `INFO` shows the new `max_payload`);
//! - `write_deadline`: for every write from now on;
//! - `max_connections`: for connections accepted from now on (existing ones stay);
//! - `pid_file`, `ports_file_dir`: the caller rewrites those files;
//! - `authorization`, `no_auth_user`, the accounts (added, removed, their users and
//!   permissions): the authentication is rebuilt (an added account joins the registry; a
//!   removed one stays there, empty, as its clients are closed); every client is checked again with the credentials it
//!   connected with, and those refused now get `-ERR 'Authorization Violation'` and are
//!   closed; the others take their new permissions at their reader's next wake-up, losing
//!   the subscriptions these forbid (see `recheck_clients`);
//! - the accounts' exports and imports: the caller rebuilds their bridges
//!   (`Server::after_reload`, with JetStream for added accounts);
//! - `cluster.routes`: the caller dials the added routes and closes the removed ones
//!   (`Server::after_reload`; the rest of `cluster` needs a restart);
//! - `tls` (and the certificate files, read again at every reload: a certificate replaced
//!   in place is noticed): new handshakes use the new configuration; established sessions
//!   keep theirs.

use crate::close::CloseReason;
use crate::config::reload_rules::{applied_changes, changes, check_fixed};
use crate::config::{Cli, Config};
use crate::shared::Shared;
use std::sync::Arc;

/// A successful reload: the configuration now in force and the options that changed, as
/// nats-server names them in its log.
pub struct Reloaded {
    /// The new configuration.
    pub config: Arc<Config>,
    /// `name = value` for each changed option (`debug = true`).
    pub changed: Vec<String>,
    /// Warnings from the file (keys accepted and ignored).
    pub warnings: Vec<String>,
    /// The accounts' exports or imports changed: their bridges must be rebuilt
    /// (`Server::after_reload`).
    pub sharing_changed: bool,
    /// The new `cluster.routes`, when they changed (`Server::after_reload` dials the added
    /// ones and closes the removed ones).
    pub routes: Option<Vec<String>>,
}

/// Reloads the configuration for `cli` into `shared`; see the module docs. The error is
/// the text nats-server logs after "Failed to reload server configuration: ".
pub fn reload(cli: &Cli, shared: &Shared) -> Result<Reloaded, String> {
    if cli.config.is_none() {
        return Err("can only reload config when a file is provided using -c or --config".into());
    }
    let (new, warnings) = Config::load_with_warnings(cli).map_err(|e| e.message)?;
    let old = shared.config();
    check_fixed(&old, &new)?;
    let mut changed = changes(&old, &new);
    let applied = applied_changes(&old, &new);
    // TLS: the files are read again whatever the settings say (a certificate is usually
    // rotated in place), and a failure to load them fails the whole reload, before anything
    // is applied.
    let digest = new.tls.as_ref().map_or(0, crate::auth::tls::files_digest);
    let tls_changed = old.tls != new.tls || digest != shared.tls_digest();
    let tls = match (&new.tls, tls_changed) {
        (Some(t), true) => Some(Some(crate::auth::tls::server_config(t)?)),
        (None, true) => Some(None),
        (_, false) => None,
    };
    let sharing_changed = crate::config::reload_rules::sharing_differs(&old, &new);
    let routes = match (&old.cluster, &new.cluster) {
        (Some(a), Some(b)) if a.routes != b.routes => Some(b.routes.clone()),
        _ => None,
    };
    let auth_changed = old.authorization != new.authorization
        || old.no_auth_user != new.no_auth_user
        || old.accounts != new.accounts;
    if changed.is_empty() && applied.is_empty() && !tls_changed {
        return Ok(Reloaded {
            config: shared.config(),
            changed,
            warnings,
            sharing_changed: false,
            routes: None,
        });
    }
    crate::logging::reconfigure(&new)?;
    if let Some(tls) = tls {
        shared.set_tls(tls, digest);
    }
    let auth =
        auth_changed.then(|| Arc::new(crate::client::Authenticator::new(&new, &shared.accounts)));
    if let Some(auth) = &auth {
        shared.set_auth_arc(auth.clone());
    }
    changed.extend(applied.iter().cloned());
    if tls_changed && !applied.iter().any(|l| l.starts_with("tls = ")) {
        // Same settings, new files: logged as nats-server logs a new certificate.
        changed.push("tls = enabled".to_owned());
    }
    shared.set_config(new);
    if let Some(auth) = auth {
        recheck_clients(shared, &auth);
    }
    Ok(Reloaded {
        config: shared.config(),
        changed,
        warnings,
        sharing_changed,
        routes,
    })
}

/// After the authentication changed: checks every client again with what it authenticated
/// with (nats-server's `reloadAuthorization`). A client the new settings refuse gets
/// `-ERR 'Authorization Violation'` and is closed; one whose user left the configuration
/// or moved to another account is closed without an `-ERR` (it reconnects, into the right
/// account if any), as nats-server does. The others lose at once the subscriptions their
/// new permissions forbid (`session::apply_permissions`); their readers take the new
/// publish permissions at their next wake-up (`Shared::auth_generation`). WebSocket
/// clients of a listener with its own credentials are left alone (those do not change
/// while running).
fn recheck_clients(shared: &Shared, auth: &crate::client::Authenticator) {
    let ws_own_auth = shared
        .config()
        .websocket
        .as_ref()
        .is_some_and(|w| w.auth_override());
    for client in shared.registry.client_list() {
        if client.is_closing() || client.service().is_some() || client.is_route() {
            continue;
        }
        if client.is_websocket() && ws_own_auth {
            continue;
        }
        let credentials = client.credentials().unwrap_or_else(|| {
            // A client that never sent CONNECT (auth was off): it has no credentials.
            Arc::new(crate::auth::Credentials {
                opts: crate::protocol::ConnectOptions::default(),
                nonce: Vec::new(),
                ip: client.addr.ip(),
                connection_type: if client.is_websocket() {
                    "WEBSOCKET"
                } else {
                    "STANDARD"
                },
            })
        });
        if auth.moved(&credentials.opts, &client.account()) {
            log::debug!(
                "{} - its user moved or left with the reload: closed",
                client.log_prefix()
            );
            client.close(CloseReason::ClientClosed);
            continue;
        }
        let verdict = if auth.required() {
            auth.authenticate(&credentials.opts, &credentials.peer())
        } else {
            Ok(auth.anonymous())
        };
        match verdict {
            Err(e) => {
                log::error!("{} - {}", client.log_prefix(), e.message);
                let mut batch = shared.pool.take();
                batch.push(crate::protocol::err::AUTHORIZATION_VIOLATION);
                let _ = client.enqueue(batch, &shared.pool);
                client.close(CloseReason::AuthenticationViolation);
            }
            // Subscriptions the new permissions forbid go now, not when the client's reader
            // next wakes (an idle subscriber would keep receiving until then).
            Ok(login) => crate::session::apply_permissions(
                shared,
                &client,
                login.permissions.as_deref(),
                &login.user,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn fixed_and_reloadable_options() {
        let old = Config::default();
        let new = Config {
            port: 4333,
            ..Config::default()
        };
        assert_eq!(
            check_fixed(&old, &new).unwrap_err(),
            "config reload not supported for Port: old=4222, new=4333"
        );
        let new = Config {
            debug: true,
            max_payload: 2048,
            ping_interval: Duration::from_secs(30),
            ..Config::default()
        };
        check_fixed(&old, &new).unwrap();
        assert_eq!(
            changes(&old, &new),
            ["debug = true", "max_payload = 2048", "ping_interval = 30s"]
        );
        assert!(changes(&old, &old).is_empty());
    }
}
