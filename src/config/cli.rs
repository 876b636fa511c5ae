//! The command line: nats-server's flag names, parsed with `clap`.

use super::{Config, ConfigError};
use clap::Parser;
use std::path::PathBuf;

/// beaver: a NATS server. Flags use nats-server's names and override the config file.
#[derive(Parser, Debug, Clone, Default)]
#[command(
    name = "beaver",
    version = concat!(env!("CARGO_PKG_VERSION"), " (NATS client protocol of nats-server ", "2.9.10", ")"),
    about = "beaver: a NATS server speaking the core NATS client protocol",
    disable_version_flag = true,
    // As with nats-server (Go's flag package), a repeated flag takes its last value.
    args_override_self = true
)]
pub struct Cli {
    /// Client connection address to bind
    #[arg(short = 'a', long = "addr", visible_alias = "net", value_name = "HOST")]
    pub addr: Option<String>,

    /// Client connection port (-1 for a random port)
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT",
        allow_negative_numbers = true
    )]
    pub port: Option<i32>,

    /// Configuration file: nats-server's format (FILE.conf) or beaver's Config.toml
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Server name (defaults to the server id)
    #[arg(
        short = 'n',
        long = "name",
        visible_alias = "server_name",
        value_name = "NAME"
    )]
    pub name: Option<String>,

    /// HTTP monitoring port (-1 for a random port; 0, the default, disables monitoring)
    #[arg(
        short = 'm',
        long = "http_port",
        value_name = "PORT",
        allow_negative_numbers = true
    )]
    pub http_port: Option<i32>,

    /// Log to FILE instead of stderr
    #[arg(
        short = 'l',
        long = "log",
        visible_alias = "log_file",
        value_name = "FILE"
    )]
    pub log: Option<PathBuf>,

    /// Write the process id to FILE
    #[arg(short = 'P', long = "pid", value_name = "FILE")]
    pub pid: Option<PathBuf>,

    /// Write EXE_PID.ports (client and monitoring URLs, JSON) into DIR
    #[arg(long = "ports_file_dir", value_name = "DIR")]
    pub ports_file_dir: Option<PathBuf>,

    /// JetStream storage directory (accepted and ignored: beaver has no JetStream; also -sd)
    #[arg(long = "store_dir", value_name = "DIR")]
    pub store_dir: Option<PathBuf>,

    /// Send a signal to a running server and exit: ldm, stop, quit, term, reopen, reload;
    /// `=PID` or `=PIDFILE` names the process (also -sl)
    #[arg(long = "signal", value_name = "SIGNAL[=PID]")]
    pub signal: Option<String>,

    /// Enable debug logging
    #[arg(short = 'D', long = "debug")]
    pub debug: bool,

    /// Enable protocol tracing
    #[arg(short = 'V', long = "trace")]
    pub trace: bool,

    /// Timestamp log lines (default true; `-T=false` to disable)
    #[arg(short = 'T', long = "logtime", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub logtime: Option<bool>,

    /// Check the configuration and exit
    #[arg(short = 't')]
    pub test_config: bool,

    /// Writer threads (default: one per CPU)
    #[arg(long = "writers", value_name = "N", allow_negative_numbers = true)]
    pub writers: Option<i64>,

    /// Show version and exit
    #[arg(short = 'v', long = "version")]
    pub version: bool,

    /// User required for connections
    #[arg(long = "user", value_name = "USER")]
    pub user: Option<String>,

    /// Password required for connections (plain text or a bcrypt hash)
    #[arg(long = "pass", value_name = "PASSWORD")]
    pub pass: Option<String>,

    /// Authorization token required for connections (plain text or a bcrypt hash)
    #[arg(long = "auth", value_name = "TOKEN")]
    pub auth: Option<String>,

    /// Enable TLS, do not verify clients (default: false)
    #[arg(long = "tls")]
    pub tls: bool,

    /// Server certificate file (PEM)
    #[arg(long = "tlscert", value_name = "FILE")]
    pub tlscert: Option<PathBuf>,

    /// Private key for server certificate (PEM)
    #[arg(long = "tlskey", value_name = "FILE")]
    pub tlskey: Option<PathBuf>,

    /// Enable TLS, verify client certificates
    #[arg(long = "tlsverify")]
    pub tlsverify: bool,

    /// Client certificate CA for verification (PEM)
    #[arg(long = "tlscacert", value_name = "FILE")]
    pub tlscacert: Option<PathBuf>,

    /// Cluster URL for solicited routes: the route listen address (nats://HOST:PORT)
    #[arg(long = "cluster", value_name = "URL")]
    pub cluster: Option<String>,

    /// Cluster URL from which members can solicit routes (same as --cluster)
    #[arg(long = "cluster_listen", value_name = "URL")]
    pub cluster_listen: Option<String>,

    /// Routes to solicit and connect, comma separated (nats://HOST:PORT[,...])
    #[arg(long = "routes", value_name = "URLS")]
    pub routes: Option<String>,

    /// Cluster name (default: a random one)
    #[arg(long = "cluster_name", value_name = "NAME")]
    pub cluster_name: Option<String>,

    /// Do not advertise known cluster information to clients
    #[arg(long = "no_advertise", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub no_advertise: Option<bool>,

    /// Cluster URL to advertise to other servers (HOST:PORT)
    #[arg(long = "cluster_advertise", value_name = "HOST:PORT")]
    pub cluster_advertise: Option<String>,

    /// Times an implicit route is retried before giving up
    #[arg(long = "connect_retries", value_name = "N")]
    pub connect_retries: Option<u32>,
}

/// Long flags of nats-server written with one dash (Go's flag package accepts `-name` as
/// well as `--name`), including its two-letter ones (`-sd`, `-sl`), which clap cannot
/// declare as short flags. [`normalize_args`] rewrites them to `--name`.
const SINGLE_DASH_LONG: &[(&str, &str)] = &[
    ("sd", "store_dir"),
    ("sl", "signal"),
    ("store_dir", "store_dir"),
    ("signal", "signal"),
    ("pid", "pid"),
    ("ports_file_dir", "ports_file_dir"),
    ("addr", "addr"),
    ("net", "net"),
    ("port", "port"),
    ("config", "config"),
    ("name", "name"),
    ("server_name", "server_name"),
    ("http_port", "http_port"),
    ("log", "log"),
    ("log_file", "log_file"),
    ("debug", "debug"),
    ("trace", "trace"),
    ("logtime", "logtime"),
    ("writers", "writers"),
    ("version", "version"),
    ("help", "help"),
    ("cluster", "cluster"),
    ("cluster_listen", "cluster_listen"),
    ("routes", "routes"),
    ("cluster_name", "cluster_name"),
    ("no_advertise", "no_advertise"),
    ("cluster_advertise", "cluster_advertise"),
    ("connect_retries", "connect_retries"),
];

/// Rewrites nats-server's single-dash long flags (`-sd DIR`, `-sl ldm`,
/// `-ports_file_dir=DIR`) into clap's `--name` form; everything else is left as it is.
pub fn normalize_args<I: IntoIterator<Item = std::ffi::OsString>>(
    args: I,
) -> Vec<std::ffi::OsString> {
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
            match SINGLE_DASH_LONG.iter().find(|(short, _)| *short == name) {
                Some((_, long)) => match value {
                    Some(v) => format!("--{long}={v}").into(),
                    None => format!("--{long}").into(),
                },
                None => arg,
            }
        })
        .collect()
}

impl Cli {
    /// Parses the process's arguments (after `normalize_args`); exits with a usage error
    /// on bad flags.
    pub fn from_env() -> Cli {
        Cli::parse_from(normalize_args(std::env::args_os()))
    }

    /// Warnings about flags that are accepted and ignored, for the log.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(d) = &self.store_dir {
            w.push(format!(
                "--store_dir {}: beaver has no JetStream; ignored",
                d.display()
            ));
        }
        w
    }

    /// Applies the cluster flags (nats-server's `--cluster`, `--cluster_listen`, `--routes`,
    /// `--cluster_name`, `--no_advertise`, `--cluster_advertise`, `--connect_retries`).
    fn apply_cluster(&self, config: &mut Config) -> Result<(), ConfigError> {
        let listen = self.cluster_listen.as_ref().or(self.cluster.as_ref());
        let any = listen.is_some()
            || self.routes.is_some()
            || self.cluster_name.is_some()
            || self.no_advertise.is_some()
            || self.cluster_advertise.is_some()
            || self.connect_retries.is_some();
        if !any {
            return Ok(());
        }
        let cluster = config.cluster.get_or_insert_with(|| super::Cluster {
            host: "0.0.0.0".into(),
            ..Default::default()
        });
        if let Some(url) = listen {
            let (host, port) = super::parse_listen_url(url).map_err(|m| ConfigError {
                message: format!("flag --cluster: {m}"),
            })?;
            cluster.host = host;
            cluster.port = port;
        }
        if let Some(r) = &self.routes {
            cluster.routes = r
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some(n) = &self.cluster_name {
            cluster.name = Some(n.clone());
        }
        if let Some(b) = self.no_advertise {
            cluster.no_advertise = b;
        }
        if let Some(a) = &self.cluster_advertise {
            cluster.advertise = Some(a.clone());
        }
        if let Some(n) = self.connect_retries {
            cluster.connect_retries = n;
        }
        Ok(())
    }

    /// Applies the flags that were given on top of `config`.
    pub(super) fn apply(&self, config: &mut Config) -> Result<(), ConfigError> {
        let bad = |flag: &str, msg: String| ConfigError {
            message: format!("flag {flag}: {msg}"),
        };
        if let Some(a) = &self.addr {
            config.host = a.clone();
        }
        if let Some(p) = self.port {
            if !(-1..=65535).contains(&p) {
                return Err(bad(
                    "-p/--port",
                    format!("{p} is out of range (-1 to 65535)"),
                ));
            }
            config.port = p;
        }
        if let Some(n) = &self.name {
            config.server_name = Some(n.clone());
        }
        if let Some(p) = self.http_port {
            if !(-1..=65535).contains(&p) {
                return Err(bad(
                    "-m/--http_port",
                    format!("{p} is out of range (-1 to 65535)"),
                ));
            }
            config.http_port = p;
        }
        if let Some(l) = &self.log {
            config.logfile = Some(l.clone());
        }
        if let Some(p) = &self.pid {
            config.pid_file = Some(p.clone());
        }
        if let Some(d) = &self.ports_file_dir {
            config.ports_file_dir = Some(d.clone());
        }
        if self.debug {
            config.debug = true;
        }
        if self.trace {
            config.trace = true;
        }
        if let Some(t) = self.logtime {
            config.logtime = t;
        }
        if let Some(w) = self.writers {
            if !(0..=1024).contains(&w) {
                return Err(bad("--writers", format!("{w} is out of range (0 to 1024)")));
            }
            config.writers = w as usize;
        }
        // Authentication flags override the file's single user / token, as nats-server's do.
        if self.user.is_some() || self.pass.is_some() || self.auth.is_some() {
            let auth = config.authorization.get_or_insert_with(Default::default);
            if let Some(u) = &self.user {
                auth.user = Some(u.clone());
            }
            if let Some(p) = &self.pass {
                auth.password = Some(p.clone());
            }
            if let Some(t) = &self.auth {
                auth.token = Some(t.clone());
            }
        }
        self.apply_cluster(config)?;
        // Any TLS flag turns TLS on (nats-server: --tlscert/--tlskey imply --tls).
        let tls_flags = self.tls
            || self.tlsverify
            || self.tlscert.is_some()
            || self.tlskey.is_some()
            || self.tlscacert.is_some();
        if tls_flags {
            let tls = config.tls.get_or_insert_with(Default::default);
            if let Some(c) = &self.tlscert {
                tls.cert_file = c.clone();
            }
            if let Some(k) = &self.tlskey {
                tls.key_file = k.clone();
            }
            if let Some(ca) = &self.tlscacert {
                tls.ca_file = Some(ca.clone());
            }
            if self.tlsverify {
                tls.verify = true;
            }
        }
        Ok(())
    }
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
        assert_eq!(
            cli.store_dir.as_deref(),
            Some(std::path::Path::new("/tmp/js"))
        );
        assert_eq!(cli.signal.as_deref(), Some("ldm=12"));
        assert_eq!(
            cli.ports_file_dir.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert_eq!(cli.pid.as_deref(), Some(std::path::Path::new("/tmp/p")));
        assert!(cli.debug && cli.trace);
        assert_eq!(cli.port, Some(-1));
        assert_eq!(cli.logtime, Some(false));
        assert_eq!(cli.warnings().len(), 1);
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
