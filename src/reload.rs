//! Configuration reload (SIGHUP, `--signal reload`), as nats-server's `Server.Reload`: the
//! file given with `-c` is read again, the command line applied over it, and the result
//! compared with the running configuration.
//!
//! All or nothing, as nats-server: if any option that cannot change while running differs
//! (the listen address, the server name, monitoring, `max_pending`, `max_subscriptions`,
//! lame-duck timings, beaver's `writers`; authorization, accounts, TLS and the cluster),
//! nothing is applied and the error names it (`config reload not supported for Port:
//! old=4222, new=4333`). Otherwise every changed option takes effect and is logged
//! (`Reloaded: debug = true`), then `Reloaded server configuration`. Which options may
//! change is the option table's rule (`config::reload_rules`); what a change does here:
//!
//! - `debug`, `trace`, `logtime`, `logfile`: the logger is rebuilt;
//! - `max_payload`, `max_control_line`, `ping_interval`, `ping_max`: for new connections and,
//!   from their next read, existing ones (new clients' `INFO` shows the new `max_payload`);
//! - `write_deadline`: for every write from now on;
//! - `max_connections`: for connections accepted from now on (existing ones stay);
//! - `pid_file`, `ports_file_dir`: the caller rewrites those files.

use crate::config::reload_rules::{changes, check_fixed};
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
