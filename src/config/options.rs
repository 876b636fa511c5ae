//! Every top-level configuration option, described once: [`OPTIONS`] (in `options/table.rs`).
//!
//! One entry ([`Opt`]) gives an option's name and nats-server's aliases, the type of its value
//! with its default, its checks and where it goes in [`Config`] ([`Value`]), whether a reload may
//! change it ([`Reload`]), its command-line flags ([`Flag`]) and one line of documentation.
//! Everything else is driven from the table:
//!
//! - both file readers (`file` for `Config.toml`, `natsfile` for nats-server's format, where
//!   keys match case-insensitively) accept exactly the names and aliases listed, read each
//!   value as its type says and apply the options in the table's order (so `listen` comes
//!   before `host` and `port`, which override it);
//! - [`Config::default`] is the table's defaults;
//! - the command line (`cli`) is built from the flags: names, `--help` lines, the
//!   one-dash spellings Go accepts, and what each flag sets, checked as the same key in a file;
//! - a reload ([`super::reload_rules`]) compares exactly the fields the rules name;
//! - the README's table of options is generated from it, and unit tests check `Config.toml`
//!   against it (`docs.rs`).
//!
//! Adding an option is one entry here, plus its field in [`Config`] (which the compiler then
//! asks for in the empty configuration `Config::default` starts from) and the code that
//! uses it; a unit test fails if a `Config` field has no reload rule.
//!
//! **Why a `const` slice and not a macro.** The entries are plain struct literals, so they
//! read as data, rustdoc and the compiler check them like any code, and their closures are
//! ordinary Rust. A macro could also have generated [`Config`] and [`super::Cli`], but the engine
//! reads those types every day: they stay hand-written structs, and only the closures of
//! the reload rules come from three small macros (`fixed!`, `live!`, `restart!`), which
//! write a field's name once instead of three times.
//!
//! Nested blocks (`authorization`, `accounts`, `tls`, `cluster`) are one entry each; their keys
//! are described once by their readers' serde structs in `file/` (names, nats-server's aliases,
//! types), which the `Config.toml` check lists too.

use super::Config;
use std::path::PathBuf;
use std::time::Duration;

mod table;

pub(crate) use table::OPTIONS;

/// One top-level option: its keys, value, reload rule, flags and documentation.
#[derive(Debug)]
pub(crate) struct Opt {
    /// nats-server's name for it: its key in both formats and its name in messages.
    pub name: &'static str,
    /// Other keys nats-server accepts for it (`net` for `host`). In `Config.toml`, giving two
    /// spellings of one option is an error (`duplicate field`); in nats-server's format the
    /// last one wins, as nats-server's map of options does.
    pub aliases: &'static [&'static str],
    /// The type of its value, its default, its checks and where it goes.
    pub value: Value,
    /// Whether a reload may change it.
    pub reload: Reload,
    /// Its command-line flags, with nats-server's names.
    pub flags: &'static [Flag],
    /// What it does, in one line of Markdown: the README's "meaning" column and, without the
    /// backticks, the `--help` line of the option's flags.
    pub doc: &'static str,
}

/// An option's value: how it is read and checked, its default, and where it goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value {
    /// `"HOST:PORT"`, `"[::1]:PORT"` or a port alone (nats-server's `listen`, `http`): a host,
    /// if given, and a port from -1 to 65535. No default: it sets other options.
    Address(fn(&mut Config, Option<String>, i32)),
    /// A string.
    Text {
        /// The default; `None`: unset (what that means is in `doc`).
        default: Option<&'static str>,
        /// Stores it.
        set: fn(&mut Config, String),
    },
    /// A path: a string in a file, any path the OS allows as a flag. No default.
    Path(fn(&mut Config, PathBuf)),
    /// An integer from `min` to `max` (`N is out of range (MIN to MAX)`).
    Int {
        /// Smallest accepted.
        min: i64,
        /// Largest accepted.
        max: i64,
        /// The default.
        default: i64,
        /// Stores it (it is in range).
        set: fn(&mut Config, i64),
    },
    /// A size in bytes: an integer, or a string with nats-server's suffixes (`"1MB"`).
    Size {
        /// The default, in bytes.
        default: usize,
        /// The option's own limits; the error is the message after the key.
        check: fn(usize) -> Result<(), String>,
        /// Stores it.
        set: fn(&mut Config, usize),
    },
    /// A duration: seconds as a number, or Go's syntax in a string (`"2m"`); at most
    /// [`super::MAX_DURATION`].
    Duration {
        /// The default.
        default: Duration,
        /// The option's own rule, given the configuration read so far (options earlier in
        /// the table are applied).
        check: fn(&Config, Duration) -> Result<(), String>,
        /// Stores it.
        set: fn(&mut Config, Duration),
        /// nats-server takes a plain number here with a warning (`... should be converted to
        /// a duration`), in its own format.
        number_warning: bool,
    },
    /// `true` or `false` (and nats-server's `yes`/`no`/`on`/`off`).
    Bool {
        /// The default.
        default: bool,
        /// Stores it.
        set: fn(&mut Config, bool),
    },
    /// A block with its own reader in `file/`: no default (unset, it is off).
    Block(Block),
}

/// The blocks, each read by its own module of `file/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// `authorization { user, password, token, timeout, users, default_permissions }`.
    Authorization,
    /// `accounts { NAME { users, default_permissions } }`, or a list of names.
    Accounts,
    /// `tls { cert_file, key_file, ca_file, verify, timeout }`.
    Tls,
    /// `cluster { name, listen, host, port, routes, ..., authorization }`.
    Cluster,
    /// `leafnodes { listen, host, port, authorization, remotes, reconnect }`.
    LeafNodes,
    /// `websocket { listen, host, port, no_tls, tls, same_origin, allowed_origins, ... }`.
    WebSocket,
    /// `jetstream { store_dir, max_memory_store, max_file_store, sync_interval }`, or
    /// `jetstream: enabled` / `true`.
    JetStream,
    /// `operator`: a JWT, a file holding one, or a list.
    Operator,
    /// `resolver`: `MEMORY`.
    Resolver,
    /// `resolver_preload { ACCOUNT_PUBLIC_KEY: JWT }`.
    ResolverPreload,
    /// `resolver_pinned_accounts`: an account public key, or a list.
    ResolverPinnedAccounts,
}

/// Whether a reload (SIGHUP) may change an option, as nats-server's `Server.Reload` decides.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reload {
    /// Takes effect while running; a change is logged as `Reloaded: {log} = {value}`.
    Live {
        /// The name in the log (nats-server's: `log_file` for `logfile`).
        log: &'static str,
        /// The field compared, and its value as logged.
        field: Field,
    },
    /// Needs a restart: `config reload not supported for {go}: old={old:?}, new={new:?}`.
    Fixed {
        /// nats-server's name of the field (`Port`).
        go: &'static str,
        /// The field compared, and its value as shown (`Debug`).
        field: Field,
    },
    /// Needs a restart, and the values are not shown (they hold passwords):
    /// `config reload not supported for {go}: {why}`. Checked after the [`Reload::Fixed`]
    /// options.
    Restart {
        /// nats-server's name (`Authorization`).
        go: &'static str,
        /// What to do instead.
        why: &'static str,
        /// The `Config` fields compared (for the test that every field has a rule).
        #[cfg_attr(not(test), allow(dead_code))]
        fields: &'static [&'static str],
        /// Whether any of them differs.
        differs: fn(&Config, &Config) -> bool,
    },
    /// Takes effect while running through code of its own (`crate::reload` rebuilds the
    /// authentication, or the TLS configuration): `check` refuses what nats-server refuses,
    /// `log` names what changed without showing values (they hold secrets), as nats-server
    /// logs them (`Reloaded: authorization users`).
    Applied {
        /// The `Config` fields it covers (for the test that every field has a rule).
        #[cfg_attr(not(test), allow(dead_code))]
        fields: &'static [&'static str],
        /// `Err`: the change needs a restart (the message after "config reload not
        /// supported for ").
        check: fn(&Config, &Config) -> Result<(), String>,
        /// What changed, each as logged after `Reloaded: `.
        log: fn(&Config, &Config) -> Vec<String>,
    },
    /// No field of its own: the rule of the options it sets applies (`listen`: `host` and
    /// `port`), or of the option named (`no_auth_user`: `authorization`).
    Covered(#[cfg_attr(not(test), allow(dead_code))] &'static str),
}

/// A `Config` field as a reload compares and shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// The field's name (for the test that every field has a rule).
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    /// Whether it differs between two configurations.
    pub differs: fn(&Config, &Config) -> bool,
    /// Its value, as the log or the refusal shows it.
    pub show: fn(&Config) -> String,
}

/// A command-line flag (nats-server's name), and what it sets.
#[derive(Debug)]
pub(crate) struct Flag {
    /// The long name (`port` for `--port`).
    pub long: &'static str,
    /// The one-letter name, if any (`p` for `-p`).
    pub short: Option<char>,
    /// Other long names, shown in `--help` (`net` for `--addr`).
    pub aliases: &'static [&'static str],
    /// Whether the long names are accepted with one dash too (`-port`), as Go's flag
    /// package does (see `table::two_dashes` for the flags that are not yet).
    pub one_dash: bool,
    /// What the flag sets.
    pub sets: Sets,
}

/// What a flag sets.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sets {
    /// Its option, with the same checks as the key in a file (`-p 70000` is out of range as
    /// `port = 70000` is); `--help` shows the option's doc line.
    Option(Arg),
    /// A field of its block (`--routes`: `cluster.routes`), with its own `--help` line.
    Block(&'static str, BlockSet),
}

/// How a flag's value is read from the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// `--flag` alone: true.
    Switch,
    /// `--flag` (true) or `--flag=BOOL`.
    Bool,
    /// `--flag VALUE`, a string; the value's name in `--help`.
    Text(&'static str),
    /// `--flag FILE`, any path the OS allows.
    Path(&'static str),
    /// `--flag N`, an integer of this width (negative numbers allowed when signed); one that
    /// does not fit is a usage error.
    Int(&'static str, Width),
}

/// How a flag of a block reads its value, and what it sets. The first flag of a block that
/// is given creates the block (`--tls` alone turns TLS on).
#[derive(Debug, Clone, Copy)]
pub(crate) enum BlockSet {
    /// `--flag` alone (`--tlsverify`).
    Switch(fn(&mut Config)),
    /// `--flag` or `--flag=BOOL` (`--no_advertise`).
    Bool(fn(&mut Config, bool)),
    /// `--flag VALUE` (`--routes URLS`); the error follows `flag --NAME: `.
    Text(&'static str, fn(&mut Config, String) -> Result<(), String>),
    /// `--flag FILE` (`--tlscert FILE`).
    Path(&'static str, fn(&mut Config, PathBuf)),
    /// `--flag N`, a count (`--connect_retries N`).
    Count(&'static str, fn(&mut Config, u32)),
}

/// The integer types of flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    /// `-p`, `-m`.
    I32,
    /// `--writers`.
    I64,
    /// `--connect_retries`.
    U32,
}

impl Opt {
    /// Whether `key` names this option, exactly (`Config.toml`'s rule; nats-server's format
    /// lowercases keys first).
    pub fn is_named(&self, key: &str) -> bool {
        self.name == key || self.aliases.contains(&key)
    }

    /// The option's default in `Config.toml`'s syntax (`4222`, `"2m"`), if it has one.
    pub fn default_toml(&self) -> Option<String> {
        match self.value {
            Value::Text {
                default: Some(s), ..
            } => Some(format!("{s:?}")),
            Value::Int { default, .. } => Some(default.to_string()),
            Value::Size { default, .. } => Some(default.to_string()),
            Value::Duration { default, .. } => {
                Some(format!("\"{}\"", humantime::format_duration(default)))
            }
            Value::Bool { default, .. } => Some(default.to_string()),
            _ => None,
        }
    }
}

impl Flag {
    /// How the flag is named in errors: `-p/--port`, or `--writers`.
    pub fn label(&self) -> String {
        match self.short {
            Some(s) => format!("-{s}/--{}", self.long),
            None => format!("--{}", self.long),
        }
    }

    /// How its value is read.
    pub fn arg(&self) -> Arg {
        match self.sets {
            Sets::Option(arg) => arg,
            Sets::Block(_, BlockSet::Switch(_)) => Arg::Switch,
            Sets::Block(_, BlockSet::Bool(_)) => Arg::Bool,
            Sets::Block(_, BlockSet::Text(name, _)) => Arg::Text(name),
            Sets::Block(_, BlockSet::Path(name, _)) => Arg::Path(name),
            Sets::Block(_, BlockSet::Count(name, _)) => Arg::Int(name, Width::U32),
        }
    }
}

/// The option named `key` (its name or an alias, exactly).
pub(crate) fn find(key: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.is_named(key))
}

/// Every accepted key, option by option in the table's order, each option's spellings in
/// alphabetical order (as serde lists a struct's fields and aliases in its `unknown field`
/// message).
pub(crate) fn keys() -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        OPTIONS
            .iter()
            .flat_map(|o| {
                let mut names: Vec<&'static str> = std::iter::once(o.name)
                    .chain(o.aliases.iter().copied())
                    .collect();
                names.sort_unstable();
                names
            })
            .collect()
    })
}

/// `N is out of range (MIN to MAX)`, the error of an integer option, in a file or as a flag.
pub(crate) fn in_range(n: i64, min: i64, max: i64) -> Result<i64, String> {
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is out of range ({min} to {max})"))
    }
}

/// Sets every option that has a default to it: [`Config::default`].
pub(crate) fn apply_defaults(config: &mut Config) {
    for o in OPTIONS {
        match o.value {
            Value::Text {
                default: Some(s),
                set,
            } => set(config, s.to_owned()),
            Value::Int { default, set, .. } => set(config, default),
            Value::Size { default, set, .. } => set(config, default),
            Value::Duration { default, set, .. } => set(config, default),
            Value::Bool { default, set } => set(config, default),
            Value::Text { default: None, .. }
            | Value::Address(_)
            | Value::Path(_)
            | Value::Block(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top-level field names of `Config`, from its pretty `Debug` form.
    fn config_fields() -> Vec<String> {
        format!("{:#?}", Config::default())
            .lines()
            .filter_map(|l| l.strip_prefix("    "))
            .filter(|l| !l.starts_with(' '))
            .filter_map(|l| l.split_once(':').map(|(name, _)| name.to_owned()))
            .collect()
    }

    #[test]
    fn every_config_field_has_a_reload_rule() {
        let mut covered: Vec<&str> = Vec::new();
        for o in OPTIONS {
            match o.reload {
                Reload::Live { field, .. } | Reload::Fixed { field, .. } => {
                    covered.push(field.name)
                }
                Reload::Restart { fields, .. } | Reload::Applied { fields, .. } => {
                    covered.extend(fields)
                }
                Reload::Covered(other) => {
                    assert!(find(other).is_some(), "{}: no option {other}", o.name)
                }
            }
        }
        let fields = config_fields();
        assert!(fields.len() > 20, "{fields:?}");
        for f in &fields {
            assert!(
                covered.contains(&f.as_str()),
                "Config::{f} has no reload rule in the option table"
            );
        }
    }

    #[test]
    fn names_are_unique_and_lowercase() {
        let keys = keys();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(*k, k.to_ascii_lowercase(), "{k}");
            assert!(!keys[i + 1..].contains(k), "{k} twice");
        }
    }

    #[test]
    fn flags_fit_their_options() {
        for o in OPTIONS {
            for f in o.flags {
                if let Sets::Option(arg) = f.sets {
                    let fits = matches!(
                        (arg, o.value),
                        (Arg::Switch | Arg::Bool, Value::Bool { .. })
                            | (Arg::Text(_), Value::Text { .. })
                            | (Arg::Path(_), Value::Path(_))
                            | (Arg::Int(_, Width::I32 | Width::I64), Value::Int { .. })
                    );
                    assert!(fits, "--{} does not fit option {}", f.long, o.name);
                }
            }
        }
    }

    #[test]
    fn defaults_pass_their_checks() {
        let config = Config::default();
        for o in OPTIONS {
            match o.value {
                Value::Int {
                    min, max, default, ..
                } => {
                    in_range(default, min, max).unwrap();
                }
                Value::Size { default, check, .. } => check(default).unwrap(),
                Value::Duration { default, check, .. } => check(&config, default).unwrap(),
                _ => {}
            }
        }
    }
}
