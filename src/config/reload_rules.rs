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
        if let Reload::Restart {
            go, why, differs, ..
        } = o.reload
        {
            if differs(old, new) {
                return Err(format!("config reload not supported for {go}: {why}"));
            }
        }
    }
    Ok(())
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
