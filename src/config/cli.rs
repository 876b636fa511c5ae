//! The command line, with nats-server's flag names, parsed with `clap`.
//!
//! The flags of options come from the option table (`options`): their names, values,
//! `--help` lines (the option's doc line and default), the one-dash spellings Go's flag
//! package accepts, and what each sets, checked like the same key in a file (`-p 70000` is
//! out of range as `port: 70000` is). The flags that say what the process does (`-c`, `-t`,
//! `--signal`, `-v`) are described here, in [`CONTROL`].

use super::options::{in_range, Arg, BlockSet, Flag, Opt, Sets, Value, Width, OPTIONS};
use super::{Config, ConfigError};
use clap::{ArgAction, ArgMatches, Command};
use std::ffi::OsString;
use std::path::PathBuf;

/// beaver: a NATS server. Flags use nats-server's names and override the config file.
#[derive(Debug, Clone, Default)]
pub struct Cli {
    /// The configuration file (`-c/--config FILE`): nats-server's format or `Config.toml`.
    pub config: Option<PathBuf>,
    /// `--signal SIGNAL[=PID|PIDFILE]` (`-sl`): send a signal to a running server and exit.
    pub signal: Option<String>,
    /// `-t`: check the configuration and exit.
    pub test_config: bool,
    /// `-v/--version`: print the version and exit.
    pub version: bool,
    /// Everything parsed: [`Cli::apply`] reads the flags of the options from it.
    matches: ArgMatches,
}

/// A flag that is not an option: what the process does.
pub(super) struct Control {
    /// clap's id, and the long name unless `long` is `None`.
    pub id: &'static str,
    /// The one-letter name, if any.
    pub short: Option<char>,
    /// The long name, if any.
    pub long: Option<&'static str>,
    /// How its value is read.
    pub arg: Arg,
    /// Its `--help` line (and the README's).
    pub help: &'static str,
}

/// The flags that are not options, in the order `--help` shows them: `-c` first, the others
/// after the options.
pub(super) const CONTROL: &[Control] = &[
    Control {
        id: "config",
        short: Some('c'),
        long: Some("config"),
        arg: Arg::Path("FILE"),
        help: "Configuration file: nats-server's format (FILE.conf) or beaver's Config.toml",
    },
    Control {
        id: "test_config",
        short: Some('t'),
        long: None,
        arg: Arg::Switch,
        help: "Check the configuration and exit",
    },
    Control {
        id: "signal",
        short: None,
        long: Some("signal"),
        arg: Arg::Text("SIGNAL[=PID]"),
        help: "Send a signal to a running server and exit: ldm, stop, quit, term, reopen, \
               reload; `=PID` or `=PIDFILE` names the process, on Windows `=SERVICE` a \
               service (also -sl)",
    },
    Control {
        id: "version",
        short: Some('v'),
        long: Some("version"),
        arg: Arg::Switch,
        help: "Show version and exit",
    },
];

/// nats-server's two-letter flags (`-sd`, `-sl`), which clap cannot declare as short ones.
const TWO_LETTER: &[(&str, &str)] = &[("sd", "store_dir"), ("sl", "signal"), ("js", "jetstream")];

/// A clap argument reading `arg`.
fn clap_arg(
    id: &'static str,
    short: Option<char>,
    long: Option<&'static str>,
    arg: Arg,
) -> clap::Arg {
    let mut a = clap::Arg::new(id);
    if let Some(s) = short {
        a = a.short(s);
    }
    if let Some(l) = long {
        a = a.long(l);
    }
    match arg {
        Arg::Switch => a.action(ArgAction::SetTrue),
        Arg::Bool => a
            .value_name("BOOL")
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true")
            .value_parser(clap::value_parser!(bool)),
        Arg::Text(name) => a.value_name(name),
        Arg::Path(name) => a
            .value_name(name)
            .value_parser(clap::value_parser!(PathBuf)),
        Arg::Int(name, Width::I32) => a
            .value_name(name)
            .allow_negative_numbers(true)
            .value_parser(clap::value_parser!(i32)),
        Arg::Int(name, Width::I64) => a
            .value_name(name)
            .allow_negative_numbers(true)
            .value_parser(clap::value_parser!(i64)),
        Arg::Int(name, Width::U32) => a.value_name(name).value_parser(clap::value_parser!(u32)),
    }
}

/// An option's `--help` line: its doc line without Markdown, and its default.
pub(super) fn option_help(o: &Opt) -> String {
    let doc = o.doc.replace('`', "");
    let mut chars = doc.chars();
    let mut help: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    if let Some(d) = o.default_toml() {
        help.push_str(&format!(" (default: {})", d.trim_matches('"')));
    }
    help
}

/// The clap argument of a flag of `o`.
fn flag_arg(o: &Opt, f: &'static Flag) -> clap::Arg {
    let help = match f.sets {
        Sets::Option(_) => option_help(o),
        Sets::Block(help, _) => help.to_owned(),
    };
    clap_arg(f.long, f.short, Some(f.long), f.arg())
        .visible_aliases(f.aliases)
        .help(help)
}

impl Cli {
    /// The command line's definition: the control flags and every option's flags, in the
    /// table's order.
    pub fn command() -> Command {
        let control = |c: &Control| clap_arg(c.id, c.short, c.long, c.arg).help(c.help);
        let (first, rest) = CONTROL.split_at(1);
        Command::new("beaver")
            .version(concat!(
                env!("CARGO_PKG_VERSION"),
                " (NATS client protocol of nats-server ",
                "2.9.10",
                ")"
            ))
            .about("beaver: a NATS server speaking the core NATS client protocol")
            .disable_version_flag(true)
            // As with nats-server (Go's flag package), a repeated flag takes its last value.
            .args_override_self(true)
            .args(first.iter().map(control))
            .args(
                OPTIONS
                    .iter()
                    .flat_map(|o| o.flags.iter().map(move |f| flag_arg(o, f))),
            )
            .args(rest.iter().map(control))
    }

    /// Parses `args` (the program name first, as clap expects), without nats-server's
    /// one-dash spellings (see `normalize_args`). Errors are clap's usage errors.
    pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Self::command()
            .try_get_matches_from(args)
            .map(Self::from_matches)
    }

    /// Parses the process's arguments (after `normalize_args`); exits with a usage error
    /// (code 2) on bad flags, and prints `--help`.
    pub fn from_env() -> Cli {
        Self::from_matches(Self::command().get_matches_from(normalize_args(std::env::args_os())))
    }

    fn from_matches(matches: ArgMatches) -> Cli {
        let path = |id: &str| matches.try_get_one::<PathBuf>(id).ok().flatten().cloned();
        let switch = |id: &str| matches.try_get_one::<bool>(id).ok().flatten() == Some(&true);
        Cli {
            config: path("config"),
            signal: matches
                .try_get_one::<String>("signal")
                .ok()
                .flatten()
                .cloned(),
            test_config: switch("test_config"),
            version: switch("version"),
            matches,
        }
    }

    /// Warnings about flags that are accepted and ignored, for the log.
    pub fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Applies the flags that were given on top of `config`, in the option table's order.
    pub(super) fn apply(&self, config: &mut Config) -> Result<(), ConfigError> {
        for o in OPTIONS {
            for f in o.flags {
                self.apply_flag(o, f, config).map_err(|m| ConfigError {
                    message: format!("flag {}: {m}", f.label()),
                })?;
            }
        }
        Ok(())
    }

    /// Applies flag `f` of option `o`, if it was given.
    fn apply_flag(&self, o: &Opt, f: &Flag, config: &mut Config) -> Result<(), String> {
        let id = f.long;
        let m = &self.matches;
        let given = || m.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        match f.sets {
            Sets::Option(arg) => match (arg, o.value) {
                (Arg::Switch, Value::Bool { set, .. }) => {
                    if given() {
                        set(config, true);
                    }
                }
                (Arg::Bool, Value::Bool { set, .. }) => {
                    if let Some(b) = get::<bool>(m, id)? {
                        set(config, b);
                    }
                }
                (Arg::Text(_), Value::Text { set, .. }) => {
                    if let Some(s) = get::<String>(m, id)? {
                        set(config, s);
                    }
                }
                (Arg::Path(_), Value::Path(set)) => {
                    if let Some(p) = get::<PathBuf>(m, id)? {
                        set(config, p);
                    }
                }
                (Arg::Int(_, width), Value::Int { min, max, set, .. }) => {
                    let n = match width {
                        Width::I32 => get::<i32>(m, id)?.map(i64::from),
                        Width::I64 => get::<i64>(m, id)?,
                        Width::U32 => get::<u32>(m, id)?.map(i64::from),
                    };
                    if let Some(n) = n {
                        set(config, in_range(n, min, max)?);
                    }
                }
                _ => return Err(format!("does not fit option {}", o.name)),
            },
            Sets::Block(_, BlockSet::Switch(set)) => {
                if given() {
                    set(config);
                }
            }
            Sets::Block(_, BlockSet::Bool(set)) => {
                if let Some(b) = get::<bool>(m, id)? {
                    set(config, b);
                }
            }
            Sets::Block(_, BlockSet::Text(_, set)) => {
                if let Some(s) = get::<String>(m, id)? {
                    set(config, s)?;
                }
            }
            Sets::Block(_, BlockSet::Path(_, set)) => {
                if let Some(p) = get::<PathBuf>(m, id)? {
                    set(config, p);
                }
            }
            Sets::Block(_, BlockSet::Count(_, set)) => {
                if let Some(n) = get::<u32>(m, id)? {
                    set(config, n);
                }
            }
        }
        Ok(())
    }
}

/// The value of flag `id`, if given (its type is the one `clap_arg` declared).
fn get<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Result<Option<T>, String> {
    m.try_get_one::<T>(id)
        .map(|v| v.cloned())
        .map_err(|e| e.to_string())
}

/// The long name a one-dash flag stands for (`-ports_file_dir`, `-sd`), if it is one.
fn one_dash_long(name: &str) -> Option<&'static str> {
    let options = OPTIONS
        .iter()
        .flat_map(|o| o.flags)
        .filter(|f| f.one_dash)
        .flat_map(|f| std::iter::once(f.long).chain(f.aliases.iter().copied()));
    let control = CONTROL.iter().filter_map(|c| c.long).chain(["help"]);
    TWO_LETTER
        .iter()
        .find(|(short, _)| *short == name)
        .map(|(_, long)| *long)
        .or_else(|| options.chain(control).find(|l| *l == name))
}

/// Rewrites nats-server's single-dash long flags (`-sd DIR`, `-sl ldm`,
/// `-ports_file_dir=DIR`) into clap's `--name` form; everything else is left as it is.
pub fn normalize_args<I: IntoIterator<Item = OsString>>(args: I) -> Vec<OsString> {
    args.into_iter()
        .map(|arg| {
            let Some(s) = arg.to_str() else { return arg };
            let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
                return arg;
            };
            let (name, value) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (rest, None),
            };
            match one_dash_long(name) {
                Some(long) => match value {
                    Some(v) => format!("--{long}={v}").into(),
                    None => format!("--{long}").into(),
                },
                None => arg,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("beaver").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn nats_server_flags() {
        let cli = parse(&[
            "-a",
            "127.0.0.1",
            "-p",
            "-1",
            "-DV",
            "--writers",
            "3",
            "-n",
            "x",
        ]);
        let mut c = Config::default();
        cli.apply(&mut c).unwrap();
        assert_eq!(c.host, "127.0.0.1");
        assert_eq!(c.port, -1);
        assert_eq!(c.bind_port(), 0);
        assert!(c.debug && c.trace);
        assert_eq!(c.writers, 3);
        assert_eq!(c.server_name.as_deref(), Some("x"));
        let cli = parse(&[
            "--net",
            "::1",
            "--log_file",
            "/tmp/x.log",
            "-T=false",
            "-m",
            "8222",
        ]);
        cli.apply(&mut c).unwrap();
        assert_eq!(c.host, "::1");
        assert!(!c.logtime);
        assert_eq!(c.http_port, 8222);
    }

    #[test]
    fn auth_and_tls_flags() {
        let mut c = Config::default();
        parse(&[
            "--user",
            "u",
            "--pass",
            "p",
            "--tlscert",
            "c",
            "--tlskey",
            "k",
        ])
        .apply(&mut c)
        .unwrap();
        let a = c.authorization.as_ref().unwrap();
        assert_eq!(
            (a.user.as_deref(), a.password.as_deref()),
            (Some("u"), Some("p"))
        );
        let t = c.tls.as_ref().unwrap();
        assert_eq!(t.cert_file, PathBuf::from("c"));
        assert!(!t.verify);
        let mut c = Config::default();
        parse(&["--auth", "t", "--tlsverify", "--tlscacert", "ca"])
            .apply(&mut c)
            .unwrap();
        assert_eq!(c.authorization.unwrap().token.as_deref(), Some("t"));
        assert!(c.tls.unwrap().verify);
    }

    #[test]
    fn single_dash_long_flags() {
        let args: Vec<std::ffi::OsString> = [
            "beaver",
            "-sd",
            "/tmp/js",
            "-sl=ldm=12",
            "-ports_file_dir",
            "/tmp",
            "-DV",
            "-p",
            "-1",
            "-pid",
            "/tmp/p",
            "-T=false",
        ]
        .iter()
        .map(Into::into)
        .collect();
        let cli = Cli::try_parse_from(normalize_args(args)).unwrap();
        assert_eq!(cli.signal.as_deref(), Some("ldm=12"));
        // The option flags, as they set the configuration.
        let mut c = Config::default();
        cli.apply(&mut c).unwrap();
        assert_eq!(
            c.ports_file_dir.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert_eq!(c.pid_file.as_deref(), Some(std::path::Path::new("/tmp/p")));
        assert_eq!(
            c.store_dir.as_deref(),
            Some(std::path::Path::new("/tmp/js"))
        );
        assert!(c.debug && c.trace);
        assert_eq!(c.port, -1);
        assert!(!c.logtime);
        assert!(cli.warnings().is_empty());
    }

    #[test]
    fn bad_flags() {
        assert!(Cli::try_parse_from(["beaver", "--nope"]).is_err());
        let mut c = Config::default();
        assert!(parse(&["-p", "70000"]).apply(&mut c).is_err());
        // A negative number reaches the range check (not clap's "unexpected argument").
        let e = parse(&["--writers", "-1"]).apply(&mut c).unwrap_err();
        assert!(e.message.contains("-1 is out of range (0 to 1024)"), "{e}");
    }
}
