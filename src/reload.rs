//! Configuration reload (SIGHUP, `--signal reload`), as nats-server's `Server.Reload`: the
//! file given with `-c` is read again, the command line applied over it, and the result
//! compared with the running configuration.
//!
//! All or nothing, as nats-server: if any option that cannot change while running differs
//! (the listen address, the server name, monitoring, `max_pending`, `max_subscriptions`,
//! lame-duck timings, beaver's `writers`; authorization, accounts and TLS), nothing is applied and the error names it
//! (`config reload not supported for Port: old=4222, new=4333`). Otherwise every changed
//! option takes effect and is logged (`Reloaded: debug = true`), then
//! `Reloaded server configuration`:
//!
//! - `debug`, `trace`, `logtime`, `logfile`: the logger is rebuilt;
//! - `max_payload`, `max_control_line`, `ping_interval`, `ping_max`: for new connections and,
//!   from their next read, existing ones (new clients' `INFO` shows the new `max_payload`);
//! - `write_deadline`: for every write from now on;
//! - `max_connections`: for connections accepted from now on (existing ones stay);
//! - `pid_file`, `ports_file_dir`: the caller rewrites those files.

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
    let changed = changes(&old, &new);
    if !changed.is_empty() {
        crate::logging::reconfigure(&new)?;
        shared.set_config(new);
    }
    Ok(Reloaded {
        config: shared.config(),
        changed,
        warnings,
    })
}

/// Options that cannot change while running (nats-server's field names).
fn check_fixed(old: &Config, new: &Config) -> Result<(), String> {
    macro_rules! fixed {
        ($($field:ident => $name:literal),* $(,)?) => {
            $(
                if old.$field != new.$field {
                    return Err(format!(
                        "config reload not supported for {}: old={:?}, new={:?}",
                        $name, old.$field, new.$field
                    ));
                }
            )*
        };
    }
    fixed!(
        host => "Host",
        port => "Port",
        server_name => "ServerName",
        http_port => "HTTPPort",
        http_host => "HTTPHost",
        max_closed_clients => "MaxClosedClients",
        max_pending => "MaxPending",
        max_subscriptions => "MaxSubs",
        writers => "Writers",
        lame_duck_duration => "LameDuckDuration",
        lame_duck_grace_period => "LameDuckGracePeriod",
    );
    // Without the values: they hold passwords and tokens.
    if old.authorization != new.authorization || old.no_auth_user != new.no_auth_user {
        return Err(
            "config reload not supported for Authorization: restart the server to \
                    change users, passwords, tokens, permissions or no_auth_user"
                .into(),
        );
    }
    if old.accounts != new.accounts {
        return Err(
            "config reload not supported for Accounts: restart the server to change \
                    accounts, their users or their permissions"
                .into(),
        );
    }
    if old.tls != new.tls {
        return Err(
            "config reload not supported for TLSConfig: restart the server to change \
                    certificates or verification"
                .into(),
        );
    }
    // beaver does not reload cluster settings (nats-server reloads routes and a few
    // cluster options); without the values: they hold the cluster password.
    if old.cluster != new.cluster {
        return Err(
            "config reload not supported for Cluster: restart the server to change it".into(),
        );
    }
    Ok(())
}

/// The reloadable options that differ, as `name = value` (nats-server's log wording).
fn changes(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let path = |p: &Option<std::path::PathBuf>| {
        p.as_ref()
            .map_or(String::new(), |p| p.display().to_string())
    };
    let dur = |d: std::time::Duration| humantime::format_duration(d).to_string();
    if old.trace != new.trace {
        out.push(format!("trace = {}", new.trace));
    }
    if old.debug != new.debug {
        out.push(format!("debug = {}", new.debug));
    }
    if old.logtime != new.logtime {
        out.push(format!("logtime = {}", new.logtime));
    }
    if old.logfile != new.logfile {
        out.push(format!("log_file = {}", path(&new.logfile)));
    }
    if old.max_connections != new.max_connections {
        out.push(format!("max_connections = {}", new.max_connections));
    }
    if old.pid_file != new.pid_file {
        out.push(format!("pid_file = {}", path(&new.pid_file)));
    }
    if old.ports_file_dir != new.ports_file_dir {
        out.push(format!("ports_file_dir = {}", path(&new.ports_file_dir)));
    }
    if old.max_control_line != new.max_control_line {
        out.push(format!("max_control_line = {}", new.max_control_line));
    }
    if old.max_payload != new.max_payload {
        out.push(format!("max_payload = {}", new.max_payload));
    }
    if old.ping_interval != new.ping_interval {
        out.push(format!("ping_interval = {}", dur(new.ping_interval)));
    }
    if old.ping_max != new.ping_max {
        out.push(format!("ping_max = {}", new.ping_max));
    }
    if old.write_deadline != new.write_deadline {
        out.push(format!("write_deadline = {}", dur(new.write_deadline)));
    }
    out
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
