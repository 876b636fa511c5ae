//! Configuration: defaults, a configuration file (`-c FILE`: beaver's `Config.toml`, or
//! nats-server's own format), and the command line, in that order of precedence (the command
//! line wins).
//!
//! Every top-level option is described once, in the option table (`options`): its names
//! and nats-server's aliases, type, default, checks, reload rule, flags and doc line. The
//! file readers, [`Config::default`], the command line ([`Cli`], `--help`), the reload rules
//! ([`reload_rules`]) and the README's table are driven from it.
//!
//! Both file formats are read into the same schema (`file::FileConfig`, read by the table)
//! and validated by the same code (`file::apply`): `Config.toml` with the `toml` crate,
//! nats-server's format with [`natsconf`] (the syntax) and `natsfile` (which of nats-server's
//! keys beaver takes, ignores with a warning, or rejects).
//!
//! Key and flag names are nats-server's. Defaults are nats-server's too, and built in: beaver
//! needs no file to start. The repository's `Config.toml` lists every key with its default
//! (unit tests keep the two in step, and the README's table with the option table).
//!
//! This module depends on nothing of the server above it: the engine reads [`Config`]; only
//! the leaf `subjects` is used here (to check permission subjects).

mod auth;
mod cli;
#[cfg(test)]
mod docs;
mod file;
pub mod natsconf;
mod natsfile;
pub mod operator;
mod options;
pub mod reload_rules;
pub mod sharing;
mod syslog;
pub mod units;
mod websocket;

pub use auth::{
    split_queue, AccountConfig, Authorization, NkeyUser, Permissions, ResponsePermission,
    RoutePermissions, RouteTls, SubjectPermission, Tls, User, DEFAULT_AUTH_TIMEOUT,
    DEFAULT_TLS_TIMEOUT,
};
pub use cli::Cli;
pub use syslog::{SyslogTarget, DEFAULT_SYSLOG_PORT};
pub use websocket::{WebSocket, WebSocketAuth, DEFAULT_HANDSHAKE_TIMEOUT};

use std::path::PathBuf;
use std::time::Duration;

/// The name of the global account (nats-server's `globalAccountName`): where clients go
/// when they authenticate without an account. Reserved: no configured account may take it.
pub const GLOBAL_ACCOUNT: &str = "$G";

/// nats-server's default client port (`DEFAULT_PORT`); `port = 0` means it too.
pub const DEFAULT_PORT: i32 = 4222;

/// nats-server's default `max_connections` (`DEFAULT_MAX_CONNECTIONS`, 64K); 0 means it too.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64 * 1024;

/// nats-server's default `ping_max` (`DEFAULT_PING_MAX_OUT`); 0 means it too.
pub const DEFAULT_PING_MAX: u32 = 2;

/// nats-server's default `write_deadline` (`DEFAULT_FLUSH_DEADLINE`); 0 means it too.
pub const DEFAULT_WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// Longest duration accepted for `ping_interval` and `write_deadline` (timers must stay
/// representable when added to the clock).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Closed connections kept for monitoring by default (nats-server's
/// `DEFAULT_MAX_CLOSED_CLIENTS`).
pub const DEFAULT_MAX_CLOSED_CLIENTS: usize = 10_000;

/// nats-server's default `lame_duck_duration`: clients are closed over 2 minutes.
pub const DEFAULT_LAME_DUCK_DURATION: Duration = Duration::from_secs(120);

/// nats-server's default `lame_duck_grace_period`: the wait before the first client is closed.
pub const DEFAULT_LAME_DUCK_GRACE_PERIOD: Duration = Duration::from_secs(10);

/// nats-server's smallest `lame_duck_duration` in a configuration file.
pub const MIN_LAME_DUCK_DURATION: Duration = Duration::from_secs(30);

/// Largest `max_payload` accepted (nats-server's `MAX_PAYLOAD_MAX_SIZE`, 64 MiB).
pub const MAX_PAYLOAD_LIMIT: usize = 64 * 1024 * 1024;

/// The server's settings, resolved from defaults, file and command line.
///
/// Each field is the option of the same name (nats-server's key, in backticks where it
/// differs); its aliases, flags, default, checks and reload rule are in the option table,
/// `src/config/options/table.rs` ([`Config::default`] is its defaults). What is said here is
/// what the value means to the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Address to listen on for clients.
    pub host: String,
    /// Client port; 0 also means 4222 ([`DEFAULT_PORT`]) and -1 a random port, as in
    /// nats-server (see [`Config::bind_port`]).
    pub port: i32,
    /// Server name; `None`: the server id.
    pub server_name: Option<String>,
    /// Monitoring port: 0 disables monitoring, -1 picks a random free port, as in
    /// nats-server.
    pub http_port: i32,
    /// Monitoring host; `None`: `host`.
    pub http_host: Option<String>,
    /// Closed connections kept for `/connz?state=closed`; 0 means
    /// [`DEFAULT_MAX_CLOSED_CLIENTS`], as in nats-server.
    pub max_closed_clients: usize,
    /// Largest message, headers included, in bytes.
    pub max_payload: usize,
    /// Longest control line arguments, in bytes.
    pub max_control_line: usize,
    /// Most client connections; 0 means [`DEFAULT_MAX_CONNECTIONS`], negative means
    /// unlimited, as in nats-server (see [`Config::connection_limit`]).
    pub max_connections: i64,
    /// Most bytes queued for one client before it is a slow consumer.
    pub max_pending: usize,
    /// Most subscriptions per connection; 0 is unlimited.
    pub max_subscriptions: usize,
    /// How often the server PINGs an idle client.
    pub ping_interval: Duration,
    /// Unanswered PINGs before a client is stale; 0 means [`DEFAULT_PING_MAX`].
    pub ping_max: u32,
    /// A write that makes no progress for this long closes the client as a slow consumer;
    /// 0 means [`DEFAULT_WRITE_DEADLINE`].
    pub write_deadline: Duration,
    /// Writer threads; 0 means one per CPU (see [`Config::writer_threads`]).
    pub writers: usize,
    /// Debug logging: connections and close reasons.
    pub debug: bool,
    /// Protocol tracing: every operation in and out.
    pub trace: bool,
    /// Timestamps in log lines.
    pub logtime: bool,
    /// Log to this file instead of stderr (`logfile`).
    pub logfile: Option<PathBuf>,
    /// Log to the local syslog (the Windows event log on Windows) instead of stderr, when
    /// there is no `logfile` (`syslog`, `-s`).
    pub syslog: bool,
    /// Log to this syslog server (`remote_syslog`, `-r`): `udp://host:port`,
    /// `tcp://host:port` or `unix:///path`; checked by [`SyslogTarget::parse`].
    pub remote_syslog: Option<String>,
    /// The name syslog lines carry as their tag and the Windows event log's source
    /// (`syslog_name`, beaver's own key); `None`: the executable's name.
    pub syslog_name: Option<String>,
    /// Client authentication and permissions (`authorization`); `None`: no authentication.
    pub authorization: Option<Authorization>,
    /// A client that sends no credentials logs in as this user of `authorization.users` or
    /// of an account's `users`.
    pub no_auth_user: Option<String>,
    /// Accounts, in the order of the file; empty: every client is in the global account
    /// [`GLOBAL_ACCOUNT`].
    pub accounts: Vec<AccountConfig>,
    /// Operator mode: the trusted operators' JWTs (`operator`, each read from its file or
    /// given inline; see [`operator`]). Empty: no operator mode.
    pub operators: Vec<String>,
    /// The system account (`system_account`): an account's name, or in operator mode its
    /// public key (by default the operator's). Its users get the `$SYS.REQ.SERVER` requests
    /// (`crate::system`).
    pub system_account: Option<String>,
    /// Where account JWTs come from in operator mode (`resolver`).
    pub resolver: Option<operator::Resolver>,
    /// The account JWTs known at start (`resolver_preload`): public key and JWT, in the
    /// file's order.
    pub resolver_preload: Vec<(String, String)>,
    /// The only accounts whose users may log in (`resolver_pinned_accounts`), the system
    /// account always among them; empty: every trusted account.
    pub resolver_pinned_accounts: Vec<String>,
    /// TLS for client connections; `None`: plain TCP.
    pub tls: Option<Tls>,
    /// Write the process id to this file at start; like nats-server, the file is left in
    /// place at exit.
    pub pid_file: Option<PathBuf>,
    /// Write `<exe>_<pid>.ports` (the client and monitoring URLs, as JSON) into this
    /// directory once listening; removed at exit.
    pub ports_file_dir: Option<PathBuf>,
    /// Lame-duck mode (SIGUSR2) closes the clients over this long (at least 30 s in a
    /// file).
    pub lame_duck_duration: Duration,
    /// Lame-duck mode waits this long before it closes the first client (less than
    /// `lame_duck_duration`).
    pub lame_duck_grace_period: Duration,
    /// Clustering; `None`: no route listener, no routes.
    pub cluster: Option<Cluster>,
    /// Leafnodes (`leafnodes`); `None`: no leafnode listener, no remotes.
    pub leafnodes: Option<LeafNodes>,
    /// JetStream's storage directory (`store_dir`, `-sd`); also settable inside the
    /// `jetstream` block, which wins. Alone it does not turn JetStream on.
    pub store_dir: Option<PathBuf>,
    /// JetStream (`jetstream`, `-js`); `None`: off, and `$JS.API` requests get no
    /// responders.
    pub jetstream: Option<JetStream>,
    /// The WebSocket listener (`websocket`, `ws`); `None`: none.
    pub websocket: Option<WebSocket>,
}

/// The `jetstream` block (nats-server's `JetStreamConfig` options: `store_dir`,
/// `max_memory_store`, `max_file_store`, `sync_interval`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JetStream {
    /// Where file-backed streams live (`<store_dir>/jetstream/<account>/streams/<stream>`);
    /// `None`: the top-level `store_dir`, else `<temp dir>/nats` as nats-server.
    pub store_dir: Option<PathBuf>,
    /// Bytes all memory streams may hold; `None`: 75% of the machine's memory, as
    /// nats-server computes its default.
    pub max_memory_store: Option<u64>,
    /// Bytes all file streams may hold; `None`: 1 TB (nats-server's default when it cannot
    /// measure the disk).
    pub max_file_store: Option<u64>,
    /// `sync_interval`: how often file stores are synced to disk (default 2 minutes);
    /// `always` syncs every write.
    pub sync: JetStreamSync,
}

/// When file stores are made durable (`jetstream { sync_interval }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JetStreamSync {
    /// `sync_interval: always`: after every write.
    Always,
    /// Every this long (nats-server's default: 2 minutes).
    Interval(Duration),
}

impl Default for JetStreamSync {
    fn default() -> Self {
        JetStreamSync::Interval(DEFAULT_SYNC_INTERVAL)
    }
}

/// nats-server's default `sync_interval`.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(120);

impl Config {
    /// JetStream's storage directory: the `jetstream` block's, else `store_dir`, else
    /// `<temp dir>/nats` (nats-server's default); `None` when JetStream is off.
    pub fn jetstream_store_dir(&self) -> Option<PathBuf> {
        let js = self.jetstream.as_ref()?;
        Some(
            js.store_dir
                .clone()
                .or_else(|| self.store_dir.clone())
                .unwrap_or_else(|| std::env::temp_dir().join("nats")),
        )
    }
}

/// nats-server's default `connect_retries` for implicit routes: one attempt.
pub const DEFAULT_CONNECT_RETRIES: u32 = 0;

/// nats-server's `DEFAULT_LEAFNODE_PORT`: a remote URL without a port dials it.
pub const DEFAULT_LEAFNODE_PORT: u16 = 7422;

/// nats-server's `DEFAULT_LEAF_NODE_RECONNECT`: between attempts to dial a remote.
pub const DEFAULT_LEAF_RECONNECT: Duration = Duration::from_secs(1);

/// The `leafnodes` settings (nats-server's `LeafNodeOpts`): where this server listens for
/// leafs (the hub role), how it checks them, and which hubs it solicits (`remotes`: the
/// leaf role).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeafNodes {
    /// Listen host (`host`, or from `listen`). Default `0.0.0.0`.
    pub host: String,
    /// Listen port (`port`, or from `listen`); 0: no listener (remotes only); -1: a random
    /// free port.
    pub port: i32,
    /// Credentials required from leafs, and the account each binds to.
    pub authorization: Option<LeafAuth>,
    /// The hubs to solicit.
    pub remotes: Vec<LeafRemote>,
    /// Between attempts to dial a remote (`reconnect`, default 1 s).
    pub reconnect: Duration,
}

/// `leafnodes { authorization { user, password, token, account, users, timeout } }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeafAuth {
    /// The one user leafs authenticate as.
    pub user: Option<String>,
    /// Its password (plain text or a bcrypt hash).
    pub password: Option<String>,
    /// A token (sent by a leaf as its user: `nats-leaf://TOKEN@host`).
    pub token: Option<String>,
    /// The account `user` or `token` binds to (default `$G`).
    pub account: Option<String>,
    /// More users, each with its account.
    pub users: Vec<LeafUser>,
    /// How long an accepted leaf has to send `CONNECT` (default 2 s).
    pub timeout: Duration,
}

/// One of `leafnodes.authorization.users`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeafUser {
    /// User name.
    pub user: String,
    /// Password (plain text or a bcrypt hash).
    pub password: String,
    /// The account it binds to (default `$G`).
    pub account: Option<String>,
}

/// One of `leafnodes.remotes`: a hub to solicit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeafRemote {
    /// Its URLs (`url` or `urls`: `nats-leaf://[user:pass@]host[:port]`), dialled in turn.
    pub urls: Vec<String>,
    /// The local account bound to the connection (`account`, default `$G`).
    pub account: Option<String>,
    /// A credentials file (`credentials`): not supported yet; a remote with one is refused.
    pub credentials: Option<PathBuf>,
    /// Subjects not taken from the hub (`deny_imports`): our interest in them is not sent,
    /// messages on them are dropped, and the hub is asked not to send them (`deny_pub`).
    pub deny_imports: Vec<String>,
    /// Subjects not sent to the hub (`deny_exports`): the hub's interest in them is not
    /// taken, and no message on them crosses.
    pub deny_exports: Vec<String>,
}

/// The `cluster` settings: where this server listens for routes from other servers and which
/// servers it dials (nats-server's `ClusterOpts`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cluster {
    /// Cluster name (`name`, `--cluster_name`). `None`: a random name is made, and given up
    /// for the name of a configured remote (nats-server's "dynamic" cluster name).
    pub name: Option<String>,
    /// Route listen host (`host`, from `--cluster nats://HOST:PORT`). Default `0.0.0.0`.
    pub host: String,
    /// Route listen port (`port`); -1 picks a random free port, as in nats-server.
    pub port: i32,
    /// Explicit routes to dial (`routes`, `--routes`), as URLs (`nats://[user:pass@]host:port`).
    /// Redialled forever while configured.
    pub routes: Vec<String>,
    /// Do not advertise other servers' client URLs to clients (`no_advertise`,
    /// `--no_advertise`).
    pub no_advertise: bool,
    /// `HOST:PORT` other servers should dial to reach this one (`cluster_advertise`,
    /// `--cluster_advertise`); default: the address they reached us on.
    pub advertise: Option<String>,
    /// How many times an implicit (gossiped) route is retried (`connect_retries`,
    /// `--connect_retries`); 0: one attempt. Explicit routes are retried forever.
    pub connect_retries: u32,
    /// Credentials required from (and, without user info in a route URL, sent to) other
    /// servers (`authorization { user, password, timeout }`).
    pub authorization: Option<ClusterAuth>,
    /// TLS on routes, both ways (`tls { cert_file, key_file, ca_file, timeout, insecure }`);
    /// `None`: routes are plain text.
    pub tls: Option<RouteTls>,
    /// Which interest crosses routes (`permissions { import, export }`); `None`: all.
    pub permissions: Option<RoutePermissions>,
}

/// `cluster { authorization { user, password, timeout } }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusterAuth {
    /// User name routes must send in `CONNECT`.
    pub user: String,
    /// Password routes must send (plain text or a bcrypt hash).
    pub password: String,
    /// How long an accepted route has to send `CONNECT`; default 2 s, as for clients.
    pub timeout: Duration,
}

impl Default for Config {
    /// nats-server's defaults, as the option table gives them.
    fn default() -> Self {
        // Every field empty; the table's defaults are applied next.
        let mut config = Config {
            host: String::new(),
            port: 0,
            server_name: None,
            http_port: 0,
            http_host: None,
            max_closed_clients: 0,
            max_payload: 0,
            max_control_line: 0,
            max_connections: 0,
            max_pending: 0,
            max_subscriptions: 0,
            ping_interval: Duration::ZERO,
            ping_max: 0,
            write_deadline: Duration::ZERO,
            writers: 0,
            debug: false,
            trace: false,
            logtime: false,
            logfile: None,
            syslog: false,
            remote_syslog: None,
            syslog_name: None,
            authorization: None,
            no_auth_user: None,
            accounts: Vec::new(),
            operators: Vec::new(),
            system_account: None,
            resolver: None,
            resolver_preload: Vec::new(),
            resolver_pinned_accounts: Vec::new(),
            tls: None,
            pid_file: None,
            ports_file_dir: None,
            lame_duck_duration: Duration::ZERO,
            lame_duck_grace_period: Duration::ZERO,
            cluster: None,
            leafnodes: None,
            store_dir: None,
            jetstream: None,
            websocket: None,
        };
        options::apply_defaults(&mut config);
        config
    }
}

impl Cluster {
    /// A `cluster` block with nothing set yet: routes listen on every interface
    /// (`0.0.0.0`), as in nats-server.
    pub(crate) fn unset() -> Cluster {
        Cluster {
            host: "0.0.0.0".into(),
            ..Default::default()
        }
    }
}

/// A parsed route URL: credentials (user, password), host, port.
pub type RouteUrl = (Option<(String, String)>, String, i32);

/// Splits a route URL (`nats://[user:pass@]HOST:PORT`, the scheme optional) into its
/// credentials, host and port. The port may be -1 (random) only for a listen address.
///
/// Errors: a missing or non-numeric port, or an empty host, as a message.
pub fn parse_route_url(url: &str) -> Result<RouteUrl, String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.trim_end_matches('/');
    let (creds, hostport) = match rest.rsplit_once('@') {
        Some((c, h)) => {
            let (u, p) = c.split_once(':').unwrap_or((c, ""));
            (Some((u.to_owned(), p.to_owned())), h)
        }
        None => (None, rest),
    };
    let (host, port) = hostport
        .rsplit_once(':')
        .ok_or_else(|| format!("{url:?}: missing port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: i32 = port
        .parse()
        .map_err(|_| format!("{url:?}: invalid port {port:?}"))?;
    if !(-1..=65535).contains(&port) {
        return Err(format!(
            "{url:?}: port {port} is out of range (-1 to 65535)"
        ));
    }
    if host.is_empty() {
        return Err(format!("{url:?}: missing host"));
    }
    Ok((creds, host.to_owned(), port))
}

/// The host and port of a `--cluster`/`--cluster_listen` URL.
pub fn parse_listen_url(url: &str) -> Result<(String, i32), String> {
    parse_route_url(url).map(|(_, h, p)| (h, p))
}

/// A configuration problem; the message names the file, line and key when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Defaults, then the `-c` file if given, then the command line.
    pub fn load(cli: &Cli) -> Result<Config, ConfigError> {
        Self::load_with_warnings(cli).map(|(c, _)| c)
    }

    /// [`Config::load`], also returning the file's warnings (keys of nats-server's format
    /// that beaver accepts and ignores), for the caller to log once logging is set up.
    pub fn load_with_warnings(cli: &Cli) -> Result<(Config, Vec<String>), ConfigError> {
        let (mut config, warnings) = match &cli.config {
            Some(path) => Self::from_file(path)?,
            None => (Config::default(), Vec::new()),
        };
        cli.apply(&mut config)?;
        auth::validate(&config).map_err(|message| ConfigError { message })?;
        if let Some(url) = &config.remote_syslog {
            SyslogTarget::parse(url).map_err(|message| ConfigError { message })?;
        }
        if let Some(name) = &config.syslog_name {
            if name.is_empty() || name.contains(['\\', '/']) {
                return Err(ConfigError {
                    message: format!("syslog_name {name:?}: a name without slashes or backslashes"),
                });
            }
        }
        Ok((config, warnings))
    }

    /// Defaults, then the file at `path`: nats-server's format when the name ends in
    /// `.conf`, `Config.toml`'s when it ends in `.toml`, otherwise TOML if the text is valid
    /// TOML and nats-server's format if not. Returns the configuration and the warnings.
    pub fn from_file(path: &std::path::Path) -> Result<(Config, Vec<String>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            message: format!("cannot read config file {}: {e}", path.display()),
        })?;
        let mut config = Config::default();
        let nats_format = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("conf") => true,
            Some(e) if e.eq_ignore_ascii_case("toml") => false,
            _ => text.parse::<toml::Table>().is_err(),
        };
        let warnings = if nats_format {
            let doc =
                natsconf::parse_str(&text, path).map_err(|e| ConfigError { message: e.message })?;
            natsfile::apply_document(&mut config, &doc)?
        } else {
            file::apply_file(&mut config, &path.display().to_string(), &text)?
        };
        Ok((config, warnings))
    }

    /// Applies an already parsed nats-server configuration on top of the defaults (for
    /// fuzzing, and for callers that parse with [`natsconf`] themselves).
    pub fn from_nats_document(
        doc: &natsconf::Document,
    ) -> Result<(Config, Vec<String>), ConfigError> {
        let mut config = Config::default();
        let warnings = natsfile::apply_document(&mut config, doc)?;
        Ok((config, warnings))
    }

    /// Parses a text in nats-server's format on top of the defaults (includes are read
    /// relative to the current directory). Returns the configuration and the warnings.
    pub fn from_nats_conf(text: &str) -> Result<(Config, Vec<String>), ConfigError> {
        let doc = natsconf::parse_str(text, std::path::Path::new("nats.conf"))
            .map_err(|e| ConfigError { message: e.message })?;
        let mut config = Config::default();
        let warnings = natsfile::apply_document(&mut config, &doc)?;
        Ok((config, warnings))
    }

    /// Parses a `Config.toml` text on top of the defaults (used by tests and `-t`).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        file::apply_file(&mut config, "Config.toml", text)?;
        auth::validate(&config).map_err(|message| ConfigError { message })?;
        Ok(config)
    }

    /// The system account's name: `system_account`, else in operator mode the first
    /// operator JWT's, else `$SYS` when `accounts` defines it (nats-server's default name).
    pub fn system_account_name(&self) -> Option<String> {
        if let Some(name) = &self.system_account {
            return Some(name.clone());
        }
        if let Some(op) = self
            .operators
            .first()
            .and_then(|t| crate::jwt::decode::<crate::jwt::Operator>(t).ok())
        {
            return (!op.nats.system_account.is_empty()).then_some(op.nats.system_account);
        }
        self.accounts
            .iter()
            .any(|a| a.name == "$SYS")
            .then(|| "$SYS".to_owned())
    }

    /// Whether clients must authenticate (`auth_required` in `INFO`): some credential in
    /// `authorization`, or a user in an account.
    pub fn auth_required(&self) -> bool {
        self.authorization.as_ref().is_some_and(|a| a.is_enabled())
            || self
                .accounts
                .iter()
                .any(|a| !a.users.is_empty() || !a.nkeys.is_empty())
    }

    /// The port to bind: 0 (ask the OS) for -1, 4222 for 0.
    pub fn bind_port(&self) -> u16 {
        match self.port {
            -1 => 0,
            0 => DEFAULT_PORT as u16,
            p => p as u16,
        }
    }

    /// `max_connections` with nats-server's conventions applied: `None` is unlimited.
    pub fn connection_limit(&self) -> Option<usize> {
        match self.max_connections {
            0 => Some(DEFAULT_MAX_CONNECTIONS),
            n if n < 0 => None,
            n => Some(n as usize),
        }
    }

    /// Whether the monitoring endpoints are served (`http_port` is not 0).
    pub fn monitoring(&self) -> bool {
        self.http_port != 0
    }

    /// The monitoring host: `http_host`, or the client `host`.
    pub fn monitor_host(&self) -> &str {
        self.http_host.as_deref().unwrap_or(&self.host)
    }

    /// `max_closed_clients` with 0 meaning the default.
    pub fn closed_ring_size(&self) -> usize {
        if self.max_closed_clients == 0 {
            DEFAULT_MAX_CLOSED_CLIENTS
        } else {
            self.max_closed_clients
        }
    }

    /// `ping_max` with 0 meaning the default.
    pub fn effective_ping_max(&self) -> u32 {
        if self.ping_max == 0 {
            DEFAULT_PING_MAX
        } else {
            self.ping_max
        }
    }

    /// `write_deadline` with 0 meaning the default.
    pub fn effective_write_deadline(&self) -> Duration {
        if self.write_deadline.is_zero() {
            DEFAULT_WRITE_DEADLINE
        } else {
            self.write_deadline
        }
    }

    /// Number of writer threads: `writers`, or one per CPU.
    pub fn writer_threads(&self) -> usize {
        if self.writers > 0 {
            self.writers
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nats_server_syntax_in_a_toml_file_gets_a_hint() {
        let e = Config::from_toml("port: 4222\n").unwrap_err();
        assert_eq!(
            e.message,
            "Config.toml: line 1: key with no value, expected `=` (this looks like nats-server \
             syntax: name the file .conf)"
        );
        // A TOML mistake is not taken for nats-server syntax.
        let e = Config::from_toml("port = \n").unwrap_err();
        assert!(!e.message.contains("nats-server syntax"), "{e}");
    }

    #[test]
    fn values_and_units() {
        let c = Config::from_toml(
            "port = 5222\nmax_payload = \"2MB\"\nping_interval = \"30s\"\nwrite_deadline = 2.5\n\
             max_pending = 100000000\nwriters = 3\n",
        )
        .unwrap();
        assert_eq!(c.port, 5222);
        assert_eq!(c.max_payload, 2 << 20);
        assert_eq!(c.ping_interval, Duration::from_secs(30));
        assert_eq!(c.write_deadline, Duration::from_millis(2500));
        assert_eq!(c.writer_threads(), 3);
        let c = Config::from_toml(
            "host = \"0.0.0.0\"\nhttp_port = -1\nhttp_host = \"127.0.0.1\"\nmax_closed_clients = 5\n",
        )
        .unwrap();
        assert!(c.monitoring());
        assert_eq!(c.monitor_host(), "127.0.0.1");
        assert_eq!(c.closed_ring_size(), 5);
        let c = Config::from_toml("host = \"::1\"\nmax_closed_clients = 0\n").unwrap();
        assert!(!c.monitoring());
        assert_eq!(c.monitor_host(), "::1");
        assert_eq!(c.closed_ring_size(), 10_000);
    }

    #[test]
    fn authorization_and_tls_tables() {
        let c = Config::from_toml(
            "no_auth_user = \"b\"\n[authorization]\ntimeout = 0.5\nusers = [\n  \
             { user = \"a\", password = \"x\", permissions = { publish = \"foo\", subscribe = \
             { allow = [\"bar.*\", \"q.* g\"], deny = \"bar.x\" } } },\n  \
             { user = \"b\", password = \"y\", permissions = { pub = [\"p\"], sub = [\"s\"] } },\n]\n\
             [tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\nca_file = \"ca.pem\"\n\
             verify = true\ntimeout = 3\n",
        )
        .unwrap();
        let a = c.authorization.as_ref().unwrap();
        assert!(c.auth_required());
        assert_eq!(a.effective_timeout(), Duration::from_millis(500));
        assert_eq!(a.users.len(), 2);
        let p = a.users[0].permissions.as_ref().unwrap();
        assert_eq!(p.publish.as_ref().unwrap().allow, vec!["foo".to_string()]);
        let sub = p.subscribe.as_ref().unwrap();
        assert_eq!(sub.allow, vec!["bar.*".to_string(), "q.* g".to_string()]);
        assert_eq!(sub.deny, vec!["bar.x".to_string()]);
        let p = a.users[1].permissions.as_ref().unwrap();
        assert_eq!(p.subscribe.as_ref().unwrap().allow, vec!["s".to_string()]);
        assert_eq!(c.no_auth_user.as_deref(), Some("b"));
        let t = c.tls.as_ref().unwrap();
        assert!(t.verify);
        assert_eq!(t.effective_timeout(), Duration::from_secs(3));
        assert_eq!(t.ca_file.as_deref(), Some(std::path::Path::new("ca.pem")));

        for (text, needle) in [
            ("[authorization]\nusers = [{ user = \"a\" }]\n", "password"),
            (
                "[authorization]\nusers = [{ user = \"a\", password = \"b\", permissions = \
                 { publish = 1 } }]\n",
                "a subject, a list of subjects",
            ),
            (
                "[authorization]\nusers = [{ user = \"a\", password = \"b\", permissions = \
                 { subscribe = [\"foo.>.bar\"] } }]\n",
                "invalid subject",
            ),
            ("[authorization]\ntoken = \"t\"\nuser = \"u\"\n", "token"),
            (
                "[tls]\ncert_file = \"c\"\nkey_file = \"k\"\nverify = true\n",
                "ca_file",
            ),
            (
                "[tls]\ncert_file = \"c\"\nkey_file = \"k\"\nbogus = 1\n",
                "bogus",
            ),
        ] {
            let e = Config::from_toml(text).unwrap_err();
            assert!(e.message.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn errors_name_the_key_and_line() {
        let e = Config::from_toml("port = 4222\nfoo = 1\n").unwrap_err();
        assert!(
            e.message.contains("foo") && e.message.contains("line 2"),
            "{e}"
        );
        let e = Config::from_toml("\n\nport = 70000\n").unwrap_err();
        assert!(
            e.message.contains("line 3") && e.message.contains("`port`"),
            "{e}"
        );
        let e = Config::from_toml("max_payload = \"1XB\"\n").unwrap_err();
        assert!(
            e.message.contains("max_payload") && e.message.contains("line 1"),
            "{e}"
        );
        let e = Config::from_toml("ping_interval = true\n").unwrap_err();
        assert!(e.message.contains("ping_interval"), "{e}");
        let e = Config::from_toml("max_payload = 100\nmax_pending = 10\n").unwrap_err();
        assert!(
            e.message.contains("cannot be higher than max_pending"),
            "{e}"
        );
        let e = Config::from_toml("ping_interval = 1e19\n").unwrap_err();
        assert!(
            e.message.contains("ping_interval") && e.message.contains("365"),
            "{e}"
        );
        let e = Config::from_toml("max_payload = 0\n").unwrap_err();
        assert!(e.message.contains("max_payload"), "{e}");
        let e = Config::from_toml("max_closed_clients = -1\n").unwrap_err();
        assert!(e.message.contains("max_closed_clients"), "{e}");
        let e = Config::from_toml("http_host = 1\n").unwrap_err();
        assert!(e.message.contains("http_host"), "{e}");
    }
}
