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

    /// Configuration file (beaver's Config.toml format)
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
    #[arg(long = "writers", value_name = "N")]
    pub writers: Option<usize>,

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
}

impl Cli {
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
            if w > 1024 {
                return Err(bad("--writers", format!("{w} is out of range (0 to 1024)")));
            }
            config.writers = w;
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
    fn bad_flags() {
        assert!(Cli::try_parse_from(["beaver", "--nope"]).is_err());
        let mut c = Config::default();
        assert!(parse(&["-p", "70000"]).apply(&mut c).is_err());
    }
}
