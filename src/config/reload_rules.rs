//! The reload rules (SIGHUP, `--signal reload`): which options may change while running, as
//! the option table's reload rule (`options::Reload`) says, and what a reload logs.
//! `crate::reload` runs them.

use super::options::{Field, Reload, OPTIONS};
use super::Config;
use std::path::PathBuf;
use std::time::Duration;

/// The order in which a reload has always logged the options it changed (kept, so that logs
/// read as they did); reloadable options not listed follow in the table's order.
const RELOAD_LOG_ORDER: &[&str] = &[
    "trace",
    "debug",
    "logtime",
    "logfile",
    "max_connections",
    "pid_file",
    "ports_file_dir",
    "max_control_line",
    "max_payload",
    "ping_interval",
    "ping_max",
    "write_deadline",
];

/// The first option that cannot change while running and differs between `old` and `new`,
/// as the error nats-server logs after "Failed to reload server configuration: ". Options
/// whose values may be shown come first, in the table's order, then the others.
pub fn check_fixed(old: &Config, new: &Config) -> Result<(), String> {
    for o in OPTIONS {
        if let Reload::Fixed { go, field } = o.reload {
            if (field.differs)(old, new) {
                return Err(format!(
                    "config reload not supported for {go}: old={}, new={}",
                    (field.show)(old),
                    (field.show)(new)
                ));
            }
        }
    }
    for o in OPTIONS {
        match o.reload {
            Reload::Restart {
                go, why, differs, ..
            } if differs(old, new) => {
                return Err(format!("config reload not supported for {go}: {why}"));
            }
            Reload::Applied { check, .. } => {
                check(old, new).map_err(|e| format!("config reload not supported for {e}"))?
            }
            _ => {}
        }
    }
    Ok(())
}

/// The options applied by code of their own (`Reload::Applied`) that changed, as logged.
pub fn applied_changes(old: &Config, new: &Config) -> Vec<String> {
    OPTIONS
        .iter()
        .filter_map(|o| match o.reload {
            Reload::Applied { log, .. } => Some(log(old, new)),
            _ => None,
        })
        .flatten()
        .collect()
}

/// `authorization` and `no_auth_user`: always applied; logged as nats-server names the
/// parts.
pub(crate) fn authorization_changes(old: &Config, new: &Config) -> Vec<String> {
    let (a, b) = (
        old.authorization.clone().unwrap_or_default(),
        new.authorization.clone().unwrap_or_default(),
    );
    let mut out = Vec::new();
    if a.user != b.user {
        out.push("authorization username".to_owned());
    }
    if a.password != b.password {
        out.push("authorization password".to_owned());
    }
    if a.token != b.token {
        out.push("authorization token".to_owned());
    }
    if a.users != b.users {
        out.push("authorization users".to_owned());
    }
    if a.nkeys != b.nkeys {
        out.push("authorization nkey users".to_owned());
    }
    if a.effective_timeout() != b.effective_timeout() {
        out.push(format!(
            "authorization timeout = {}",
            b.effective_timeout().as_secs_f64()
        ));
    }
    if old.no_auth_user != new.no_auth_user {
        out.push(format!(
            "no_auth_user = {}",
            new.no_auth_user.clone().unwrap_or_default()
        ));
    }
    out
}

/// `accounts`: everything may change while running, as in nats-server (users,
/// permissions, accounts added or removed, exports and imports): see `crate::reload`.
pub(crate) fn accounts_check(_old: &Config, _new: &Config) -> Result<(), String> {
    Ok(())
}

/// Whether the accounts' exports or imports differ (their bridges are then rebuilt).
pub fn sharing_differs(old: &Config, new: &Config) -> bool {
    let sharing = |c: &Config| {
        let mut v: Vec<_> = c
            .accounts
            .iter()
            .map(|a| (a.name.clone(), a.exports.clone(), a.imports.clone()))
            .collect();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    };
    sharing(old) != sharing(new)
}

/// `accounts` changed: logged as nats-server does.
pub(crate) fn accounts_changes(old: &Config, new: &Config) -> Vec<String> {
    if old.accounts != new.accounts {
        vec!["accounts".to_owned()]
    } else {
        Vec::new()
    }
}

/// `cluster`: only its `routes` may change while running (nats-server's words for the
/// host and port; beaver also refuses the rest of the block, which nats-server reloads in
/// part).
pub(crate) fn cluster_check(old: &Config, new: &Config) -> Result<(), String> {
    match (&old.cluster, &new.cluster) {
        (None, None) => Ok(()),
        (Some(a), Some(b)) => {
            if a.host != b.host {
                return Err(format!("cluster host: old={}, new={}", a.host, b.host));
            }
            if a.port != b.port {
                return Err(format!("cluster port: old={}, new={}", a.port, b.port));
            }
            let mut b_routes = b.clone();
            b_routes.routes = a.routes.clone();
            if *a != b_routes {
                return Err(
                    "Cluster: restart the server to change it (but its `routes`: \
                            `tls`, `permissions` and `authorization` too; route \
                            certificates are read at start)"
                        .into(),
                );
            }
            Ok(())
        }
        _ => Err("Cluster: restart the server to turn clustering on or off".into()),
    }
}

/// `cluster.routes` changed: logged as nats-server does.
pub(crate) fn cluster_changes(old: &Config, new: &Config) -> Vec<String> {
    let routes = |c: &Config| c.cluster.as_ref().map(|c| c.routes.clone());
    if routes(old) != routes(new) {
        vec!["cluster routes".to_owned()]
    } else {
        Vec::new()
    }
}

/// `tls`: applied (new handshakes use the new certificates); logged as nats-server does.
/// A certificate changed in place (same file names) is noticed by `crate::reload`.
pub(crate) fn tls_changes(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let files = |c: &Config| {
        c.tls.as_ref().map(|t| {
            (
                t.cert_file.clone(),
                t.key_file.clone(),
                t.ca_file.clone(),
                t.verify,
            )
        })
    };
    if files(old) != files(new) {
        let state = if new.tls.is_some() {
            "enabled"
        } else {
            "disabled"
        };
        out.push(format!("tls = {state}"));
    }
    let timeout = |c: &Config| c.tls.as_ref().map(|t| t.effective_timeout());
    if timeout(old) != timeout(new) {
        if let Some(t) = timeout(new) {
            out.push(format!("tls timeout = {}", t.as_secs_f64()));
        }
    }
    out
}

/// The reloadable options that differ between `old` and `new`, as nats-server logs them:
/// `name = value` (`debug = true`).
pub fn changes(old: &Config, new: &Config) -> Vec<String> {
    let mut live: Vec<(usize, &'static str, Field)> = OPTIONS
        .iter()
        .filter_map(|o| match o.reload {
            Reload::Live { log, field } => Some((o.name, log, field)),
            _ => None,
        })
        .map(|(name, log, field)| {
            let rank = RELOAD_LOG_ORDER
                .iter()
                .position(|n| *n == name)
                .unwrap_or(RELOAD_LOG_ORDER.len());
            (rank, log, field)
        })
        .collect();
    // Stable: the unlisted ones keep the table's order.
    live.sort_by_key(|(rank, _, _)| *rank);
    live.into_iter()
        .filter(|(_, _, f)| (f.differs)(old, new))
        .map(|(_, log, f)| format!("{log} = {}", (f.show)(new)))
        .collect()
}

/// How a reload logs a changed value (nats-server's `Reloaded: name = value`).
pub(crate) trait Logged {
    /// The value as logged.
    fn logged(&self) -> String;
}

/// Numbers and booleans are logged as they are written.
macro_rules! logged_as_written {
    ($($t:ty),*) => {
        $(impl Logged for $t {
            fn logged(&self) -> String {
                self.to_string()
            }
        })*
    };
}

logged_as_written!(bool, usize, i64, u32);

impl Logged for Duration {
    /// `2m`, `30s`, `1s 500ms` (humantime's form).
    fn logged(&self) -> String {
        humantime::format_duration(*self).to_string()
    }
}

impl Logged for Option<String> {
    /// The text, or nothing when unset.
    fn logged(&self) -> String {
        self.clone().unwrap_or_default()
    }
}

impl Logged for Option<PathBuf> {
    /// The path, or nothing when unset.
    fn logged(&self) -> String {
        self.as_ref()
            .map_or(String::new(), |p| p.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_order_names_reloadable_options() {
        for k in RELOAD_LOG_ORDER {
            let o = OPTIONS.iter().find(|o| o.name == *k);
            assert!(
                matches!(o.map(|o| o.reload), Some(Reload::Live { .. })),
                "{k}"
            );
        }
    }
}
