//! The table of options (see the module docs of `options`): one entry per top-level key, in
//! the order files are applied in, which is also the order of `Config.toml`'s schema.
//!
//! Over 800 lines: it is one table, one entry per nats-server option, each entry a dozen
//! lines of data; splitting it would scatter what the README's options table is made from.

use super::{Arg, Block, BlockSet, Field, Flag, Opt, Reload, Sets, Value, Width};
use crate::config::reload_rules::{self, Logged};
use crate::config::{
    parse_listen_url, Authorization, Cluster, Config, JetStream, Tls, DEFAULT_LAME_DUCK_DURATION,
    DEFAULT_LAME_DUCK_GRACE_PERIOD, DEFAULT_MAX_CLOSED_CLIENTS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PING_MAX, DEFAULT_PORT, DEFAULT_WRITE_DEADLINE, MAX_PAYLOAD_LIMIT,
    MIN_LAME_DUCK_DURATION,
};
use std::time::Duration;

/// [`Reload::Fixed`] for the `Config` field `$field`, named `$go` (nats-server's field name)
/// in the refusal, which shows the old and new values.
macro_rules! fixed {
    ($go:literal, $field:ident) => {
        Reload::Fixed {
            go: $go,
            field: Field {
                name: stringify!($field),
                differs: |a, b| a.$field != b.$field,
                show: |c| format!("{:?}", c.$field),
            },
        }
    };
}

/// [`Reload::Live`] for the `Config` field `$field`, logged under the option's name, or
/// under `$log`.
macro_rules! live {
    ($field:ident) => {
        live!(stringify!($field), $field)
    };
    ($log:expr, $field:ident) => {
        Reload::Live {
            log: $log,
            field: Field {
                name: stringify!($field),
                differs: |a, b| a.$field != b.$field,
                show: |c| Logged::logged(&c.$field),
            },
        }
    };
}

/// [`Reload::Restart`] for the `Config` fields listed.
macro_rules! restart {
    ($go:literal, $why:literal, $first:ident $(, $field:ident)*) => {
        Reload::Restart {
            go: $go,
            why: $why,
            fields: &[stringify!($first) $(, stringify!($field))*],
            differs: |a, b| a.$first != b.$first $(|| a.$field != b.$field)*,
        }
    };
}

/// `-a/--addr`-style flag of an option (also accepted with one dash).
const fn flag(short: Option<char>, long: &'static str, arg: Arg) -> Flag {
    Flag {
        long,
        short,
        aliases: &[],
        one_dash: true,
        sets: Sets::Option(arg),
    }
}

/// A flag of a block, with its help line.
const fn block_flag(long: &'static str, help: &'static str, set: BlockSet) -> Flag {
    Flag {
        long,
        short: None,
        aliases: &[],
        one_dash: true,
        sets: Sets::Block(help, set),
    }
}

/// A flag accepted with two dashes only (`--tls`: `-tls` reads as `-t -l s`, as it always
/// has; the authentication and TLS flags do not take one dash yet).
const fn two_dashes(flag: Flag) -> Flag {
    Flag {
        one_dash: false,
        ..flag
    }
}

/// The `authorization` block, created by the first flag that sets part of it.
fn authorization(c: &mut Config) -> &mut Authorization {
    c.authorization.get_or_insert_with(Default::default)
}

/// The `tls` block, created by the first TLS flag.
fn tls(c: &mut Config) -> &mut Tls {
    c.tls.get_or_insert_with(Default::default)
}

/// The `cluster` block, created by the first cluster flag.
fn cluster(c: &mut Config) -> &mut Cluster {
    c.cluster.get_or_insert_with(Cluster::unset)
}

/// The `jetstream` block, created by the first JetStream flag.
fn jetstream(c: &mut Config) -> &mut JetStream {
    c.jetstream.get_or_insert_with(Default::default)
}

/// No rule of its own.
fn any(_: &Config, _: Duration) -> Result<(), String> {
    Ok(())
}

/// Every top-level option. The order matters: files are applied in it (`listen` before
/// `host` and `port`, which override it; `lame_duck_duration` before the grace period that
/// must be shorter), a reload reports the first option it refuses in it, and `Config.toml`'s
/// `unknown field` message lists the keys in it.
pub(crate) const OPTIONS: &[Opt] = &[
    Opt {
        name: "listen",
        aliases: &[],
        value: Value::Address(|c, host, port| {
            if let Some(h) = host {
                c.host = h;
            }
            c.port = port;
        }),
        reload: Reload::Covered("port"),
        flags: &[],
        doc: "`\"HOST:PORT\"` (or a port alone): `host` and `port` in one key",
    },
    Opt {
        name: "host",
        aliases: &["net"],
        value: Value::Text {
            default: Some("0.0.0.0"),
            set: |c, v| c.host = v,
        },
        reload: fixed!("Host", host),
        flags: &[Flag {
            aliases: &["net"],
            ..flag(Some('a'), "addr", Arg::Text("HOST"))
        }],
        doc: "address to listen on for clients",
    },
    Opt {
        name: "port",
        aliases: &[],
        value: Value::Int {
            min: -1,
            max: 65535,
            default: DEFAULT_PORT as i64,
            set: |c, n| c.port = n as i32,
        },
        reload: fixed!("Port", port),
        flags: &[flag(Some('p'), "port", Arg::Int("PORT", Width::I32))],
        doc: "client port; `-1` picks a random free port",
    },
    Opt {
        name: "server_name",
        aliases: &[],
        value: Value::Text {
            default: None,
            set: |c, v| c.server_name = Some(v),
        },
        reload: fixed!("ServerName", server_name),
        flags: &[Flag {
            aliases: &["server_name"],
            ..flag(Some('n'), "name", Arg::Text("NAME"))
        }],
        doc: "server name, in `INFO`; by default the server id",
    },
    Opt {
        name: "http",
        aliases: &[],
        value: Value::Address(|c, host, port| {
            if host.is_some() {
                c.http_host = host;
            }
            c.http_port = port;
        }),
        reload: Reload::Covered("http_port"),
        flags: &[],
        doc: "`\"HOST:PORT\"` (or a port alone): `http_host` and `http_port` in one key",
    },
    Opt {
        name: "http_port",
        aliases: &["monitor_port"],
        value: Value::Int {
            min: -1,
            max: 65535,
            default: 0,
            set: |c, n| c.http_port = n as i32,
        },
        reload: fixed!("HTTPPort", http_port),
        flags: &[flag(Some('m'), "http_port", Arg::Int("PORT", Width::I32))],
        doc: "monitoring HTTP port (`/varz`, `/connz`, ...); `0` turns monitoring off, `-1` \
              picks a random free port",
    },
    Opt {
        name: "http_host",
        aliases: &[],
        value: Value::Text {
            default: None,
            set: |c, v| c.http_host = Some(v),
        },
        reload: fixed!("HTTPHost", http_host),
        flags: &[],
        doc: "address the monitoring port listens on; by default the client `host`",
    },
    Opt {
        name: "max_closed_clients",
        aliases: &[],
        value: Value::Int {
            min: 0,
            max: i32::MAX as i64,
            default: DEFAULT_MAX_CLOSED_CLIENTS as i64,
            set: |c, n| c.max_closed_clients = n as usize,
        },
        reload: fixed!("MaxClosedClients", max_closed_clients),
        flags: &[],
        doc: "closed connections kept for `/connz?state=closed`; `0` means the default",
    },
    Opt {
        name: "max_payload",
        aliases: &[],
        value: Value::Size {
            default: 1024 * 1024,
            check: |n| {
                if n == 0 || n > MAX_PAYLOAD_LIMIT {
                    Err(format!(
                        "must be between 1 and {MAX_PAYLOAD_LIMIT} bytes (64 MiB, nats-server's \
                         limit)"
                    ))
                } else {
                    Ok(())
                }
            },
            set: |c, n| c.max_payload = n,
        },
        reload: live!(max_payload),
        flags: &[],
        doc: "largest message, headers included; at most 64 MiB",
    },
    Opt {
        name: "max_control_line",
        aliases: &[],
        value: Value::Size {
            default: 4096,
            check: |n| {
                if n == 0 || n > MAX_PAYLOAD_LIMIT {
                    Err("must be between 1 and 64 MiB".into())
                } else {
                    Ok(())
                }
            },
            set: |c, n| c.max_control_line = n,
        },
        reload: live!(max_control_line),
        flags: &[],
        doc: "longest protocol line arguments",
    },
    Opt {
        name: "max_connections",
        aliases: &["max_conn"],
        value: Value::Int {
            min: -1,
            max: i32::MAX as i64,
            default: DEFAULT_MAX_CONNECTIONS as i64,
            set: |c, n| c.max_connections = n,
        },
        reload: live!(max_connections),
        flags: &[],
        doc: "most client connections; `0` means the default, a negative number unlimited",
    },
    Opt {
        name: "max_pending",
        aliases: &[],
        value: Value::Size {
            default: 64 * 1024 * 1024,
            check: |n| {
                if n == 0 {
                    Err("must be at least 1 byte".into())
                } else {
                    Ok(())
                }
            },
            set: |c, n| c.max_pending = n,
        },
        reload: fixed!("MaxPending", max_pending),
        flags: &[],
        doc: "bytes queued for one client before it is a slow consumer",
    },
    Opt {
        name: "max_subscriptions",
        aliases: &["max_subs"],
        value: Value::Int {
            min: 0,
            max: i32::MAX as i64,
            default: 0,
            set: |c, n| c.max_subscriptions = n as usize,
        },
        reload: fixed!("MaxSubs", max_subscriptions),
        flags: &[],
        doc: "subscriptions per connection; `0` means unlimited",
    },
    Opt {
        name: "ping_interval",
        aliases: &[],
        value: Value::Duration {
            default: Duration::from_secs(120),
            check: |_, d| {
                if d.is_zero() {
                    Err("must be more than 0".into())
                } else {
                    Ok(())
                }
            },
            set: |c, d| c.ping_interval = d,
            number_warning: true,
        },
        reload: live!(ping_interval),
        flags: &[],
        doc: "how often an idle client is PINGed",
    },
    Opt {
        name: "ping_max",
        aliases: &[],
        value: Value::Int {
            min: 0,
            max: 1_000_000,
            default: DEFAULT_PING_MAX as i64,
            set: |c, n| c.ping_max = n as u32,
        },
        reload: live!(ping_max),
        flags: &[],
        doc: "unanswered PINGs before `Stale Connection`",
    },
    Opt {
        name: "write_deadline",
        aliases: &[],
        value: Value::Duration {
            default: DEFAULT_WRITE_DEADLINE,
            check: any,
            set: |c, d| c.write_deadline = d,
            number_warning: true,
        },
        reload: live!(write_deadline),
        flags: &[],
        doc: "a write stuck this long closes the client as a slow consumer",
    },
    Opt {
        name: "writers",
        aliases: &[],
        value: Value::Int {
            min: 0,
            max: 1024,
            default: 0,
            set: |c, n| c.writers = n as usize,
        },
        reload: fixed!("Writers", writers),
        flags: &[flag(None, "writers", Arg::Int("N", Width::I64))],
        doc: "writer threads; `0` means one per CPU",
    },
    Opt {
        name: "debug",
        aliases: &[],
        value: Value::Bool {
            default: false,
            set: |c, b| c.debug = b,
        },
        reload: live!(debug),
        flags: &[flag(Some('D'), "debug", Arg::Switch)],
        doc: "log connections and close reasons",
    },
    Opt {
        name: "trace",
        aliases: &[],
        value: Value::Bool {
            default: false,
            set: |c, b| c.trace = b,
        },
        reload: live!(trace),
        flags: &[flag(Some('V'), "trace", Arg::Switch)],
        doc: "log every protocol operation; `-DV` for both",
    },
    Opt {
        name: "logtime",
        aliases: &[],
        value: Value::Bool {
            default: true,
            set: |c, b| c.logtime = b,
        },
        reload: live!(logtime),
        flags: &[flag(Some('T'), "logtime", Arg::Bool)],
        doc: "timestamps in the log; `-T=false` turns them off",
    },
    Opt {
        name: "logfile",
        aliases: &["log_file"],
        value: Value::Path(|c, p| c.logfile = Some(p)),
        reload: live!("log_file", logfile),
        flags: &[Flag {
            aliases: &["log_file"],
            ..flag(Some('l'), "log", Arg::Path("FILE"))
        }],
        doc: "log to this file instead of stderr",
    },
    Opt {
        name: "syslog",
        aliases: &[],
        value: Value::Bool {
            default: false,
            set: |c, b| c.syslog = b,
        },
        reload: live!(syslog),
        flags: &[flag(Some('s'), "syslog", Arg::Switch)],
        doc: "log to syslog (on Windows, the event log) when there is no `logfile`",
    },
    Opt {
        name: "remote_syslog",
        aliases: &[],
        value: Value::Text {
            default: None,
            // Empty is unset, as in nats-server.
            set: |c, v| c.remote_syslog = Some(v).filter(|v| !v.is_empty()),
        },
        reload: live!(remote_syslog),
        flags: &[flag(Some('r'), "remote_syslog", Arg::Text("URL"))],
        doc: "log to this syslog server when there is no `logfile`: `udp://host:514`, \
              `tcp://host:514` or `unix:///dev/log`",
    },
    Opt {
        name: "syslog_name",
        aliases: &[],
        value: Value::Text {
            default: None,
            set: |c, v| c.syslog_name = Some(v),
        },
        reload: live!(syslog_name),
        flags: &[],
        doc: "the name on syslog lines and the Windows event log's source; by default the \
              executable's (beaver's own key)",
    },
    Opt {
        name: "authorization",
        aliases: &[],
        value: Value::Block(Block::Authorization),
        reload: Reload::Applied {
            fields: &["authorization", "no_auth_user"],
            check: |_, _| Ok(()),
            log: reload_rules::authorization_changes,
        },
        flags: &[
            two_dashes(block_flag(
                "user",
                "User required for connections",
                BlockSet::Text("USER", |c, v| {
                    authorization(c).user = Some(v);
                    Ok(())
                }),
            )),
            two_dashes(block_flag(
                "pass",
                "Password required for connections (plain text or a bcrypt hash)",
                BlockSet::Text("PASSWORD", |c, v| {
                    authorization(c).password = Some(v);
                    Ok(())
                }),
            )),
            two_dashes(block_flag(
                "auth",
                "Authorization token required for connections (plain text or a bcrypt hash)",
                BlockSet::Text("TOKEN", |c, v| {
                    authorization(c).token = Some(v);
                    Ok(())
                }),
            )),
        ],
        doc: "who may connect, and their permissions: see [Authentication and \
              permissions](#authentication-and-permissions)",
    },
    Opt {
        name: "no_auth_user",
        aliases: &[],
        value: Value::Text {
            default: None,
            set: |c, v| c.no_auth_user = Some(v),
        },
        reload: Reload::Covered("authorization"),
        flags: &[],
        doc: "the user (of `authorization` or of an account) a client that sends no \
              credentials logs in as",
    },
    Opt {
        name: "accounts",
        aliases: &[],
        value: Value::Block(Block::Accounts),
        reload: Reload::Applied {
            fields: &["accounts"],
            check: reload_rules::accounts_check,
            log: reload_rules::accounts_changes,
        },
        flags: &[],
        doc: "accounts, isolated subject spaces with their own users: see [Accounts](#accounts)",
    },
    Opt {
        name: "operator",
        aliases: &[
            "operators",
            "root",
            "roots",
            "root_operator",
            "root_operators",
        ],
        value: Value::Block(Block::Operator),
        reload: restart!(
            "TrustedOperators",
            "restart the server to change operators",
            operators
        ),
        flags: &[],
        doc: "operator mode (JWT authentication): the operator's JWT, a file holding it, or a list; see [Operator mode](#operator-mode-jwt-authentication)",
    },
    Opt {
        name: "system_account",
        aliases: &["system"],
        value: Value::Text {
            default: None,
            set: |c, v| c.system_account = Some(v),
        },
        reload: restart!(
            "SystemAccount",
            "restart the server to change the system account",
            system_account
        ),
        flags: &[],
        doc: "the system account, whose users may ask for the server's reports over NATS \
              (`$SYS.REQ.SERVER.PING`, ...); in operator mode, by default the operator's",
    },
    Opt {
        name: "resolver",
        aliases: &["account_resolver", "accounts_resolver"],
        value: Value::Block(Block::Resolver),
        reload: restart!(
            "AccountResolver",
            "restart the server to change the account resolver",
            resolver
        ),
        flags: &[],
        doc: "where account JWTs come from in operator mode: `MEMORY` (with \
              `resolver_preload`), or `{ type: full, dir: DIR }`: files in `DIR`, updated by \
              `nsc push` (`$SYS.REQ.CLAIMS.UPDATE`); `allow_delete`, `limit`, `interval`, \
              `timeout` as nats-server's",
    },
    Opt {
        name: "resolver_pinned_accounts",
        aliases: &[],
        value: Value::Block(Block::ResolverPinnedAccounts),
        reload: restart!(
            "resolverPinnedAccounts",
            "restart the server to change the pinned accounts",
            resolver_pinned_accounts
        ),
        flags: &[],
        doc: "operator mode: the only accounts whose users may log in (public keys; the \
              system account is always one)",
    },
    Opt {
        name: "resolver_preload",
        aliases: &[],
        value: Value::Block(Block::ResolverPreload),
        reload: restart!(
            "resolverPreloads",
            "restart the server to change the preloaded accounts",
            resolver_preload
        ),
        flags: &[],
        doc: "account JWTs known at start: `{ ACCOUNT_PUBLIC_KEY: JWT }` (with the full \
              resolver, written to its directory unless it holds a newer one)",
    },
    Opt {
        name: "tls",
        aliases: &[],
        value: Value::Block(Block::Tls),
        reload: Reload::Applied {
            fields: &["tls"],
            check: |_, _| Ok(()),
            log: reload_rules::tls_changes,
        },
        flags: &[
            two_dashes(block_flag(
                "tls",
                "Enable TLS, do not verify clients (default: false)",
                BlockSet::Switch(|c| {
                    tls(c);
                }),
            )),
            two_dashes(block_flag(
                "tlscert",
                "Server certificate file (PEM)",
                BlockSet::Path("FILE", |c, p| tls(c).cert_file = p),
            )),
            two_dashes(block_flag(
                "tlskey",
                "Private key for server certificate (PEM)",
                BlockSet::Path("FILE", |c, p| tls(c).key_file = p),
            )),
            two_dashes(block_flag(
                "tlsverify",
                "Enable TLS, verify client certificates",
                BlockSet::Switch(|c| tls(c).verify = true),
            )),
            two_dashes(block_flag(
                "tlscacert",
                "Client certificate CA for verification (PEM)",
                BlockSet::Path("FILE", |c, p| tls(c).ca_file = Some(p)),
            )),
        ],
        doc: "TLS for client connections: see [TLS](#tls)",
    },
    Opt {
        name: "pid_file",
        aliases: &["pidfile"],
        value: Value::Path(|c, p| c.pid_file = Some(p)),
        reload: live!(pid_file),
        flags: &[flag(Some('P'), "pid", Arg::Path("FILE"))],
        doc: "write the process id to this file (left in place at exit, as nats-server does)",
    },
    Opt {
        name: "ports_file_dir",
        aliases: &[],
        value: Value::Path(|c, p| c.ports_file_dir = Some(p)),
        reload: live!(ports_file_dir),
        flags: &[flag(None, "ports_file_dir", Arg::Path("DIR"))],
        doc: "write `<exe>_<pid>.ports` (the client and monitoring URLs, JSON) into this \
              directory (removed at exit)",
    },
    Opt {
        name: "lame_duck_duration",
        aliases: &[],
        value: Value::Duration {
            default: DEFAULT_LAME_DUCK_DURATION,
            // nats-server's minimum, in its words.
            check: |_, d| {
                if d < MIN_LAME_DUCK_DURATION {
                    Err(format!(
                        "invalid lame_duck_duration of {d:?}, minimum is 30 seconds"
                    ))
                } else {
                    Ok(())
                }
            },
            set: |c, d| c.lame_duck_duration = d,
            number_warning: false,
        },
        reload: fixed!("LameDuckDuration", lame_duck_duration),
        flags: &[],
        doc: "lame-duck mode closes the clients over this long (at least 30 s)",
    },
    Opt {
        name: "lame_duck_grace_period",
        aliases: &[],
        value: Value::Duration {
            default: DEFAULT_LAME_DUCK_GRACE_PERIOD,
            check: |c, d| {
                if d >= c.lame_duck_duration {
                    Err(format!(
                        "lame duck grace period ({d:?}) should be strictly lower than lame duck \
                         duration ({:?})",
                        c.lame_duck_duration
                    ))
                } else {
                    Ok(())
                }
            },
            set: |c, d| c.lame_duck_grace_period = d,
            number_warning: false,
        },
        reload: fixed!("LameDuckGracePeriod", lame_duck_grace_period),
        flags: &[],
        doc: "lame-duck mode waits this long before closing the first client",
    },
    Opt {
        name: "cluster",
        aliases: &[],
        value: Value::Block(Block::Cluster),
        // `routes` are reloaded (added ones dialled, removed ones closed), as nats-server
        // does; the other cluster settings need a restart in beaver (nats-server reloads a
        // few, its TLS and permissions among them). Errors show no values but the host
        // and port: the block holds the cluster password.
        reload: Reload::Applied {
            fields: &["cluster"],
            check: reload_rules::cluster_check,
            log: reload_rules::cluster_changes,
        },
        flags: &[
            // Both names set the listen address, the last one given winning, as in
            // nats-server.
            Flag {
                aliases: &["cluster_listen"],
                ..block_flag(
                    "cluster",
                    "Cluster URL for solicited routes: the route listen address \
                     (nats://HOST:PORT)",
                    BlockSet::Text("URL", |c, url| {
                        let (host, port) = parse_listen_url(&url)?;
                        let listen = cluster(c);
                        listen.host = host;
                        listen.port = port;
                        Ok(())
                    }),
                )
            },
            block_flag(
                "routes",
                "Routes to solicit and connect, comma separated (nats://HOST:PORT[,...])",
                BlockSet::Text("URLS", |c, routes| {
                    cluster(c).routes = routes
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                    Ok(())
                }),
            ),
            block_flag(
                "cluster_name",
                "Cluster name (default: a random one)",
                BlockSet::Text("NAME", |c, name| {
                    cluster(c).name = Some(name);
                    Ok(())
                }),
            ),
            block_flag(
                "no_advertise",
                "Do not advertise known cluster information to clients",
                BlockSet::Bool(|c, b| cluster(c).no_advertise = b),
            ),
            block_flag(
                "cluster_advertise",
                "Cluster URL to advertise to other servers (HOST:PORT)",
                BlockSet::Text("HOST:PORT", |c, a| {
                    cluster(c).advertise = Some(a);
                    Ok(())
                }),
            ),
            block_flag(
                "connect_retries",
                "Times an implicit route is retried before giving up",
                BlockSet::Count("N", |c, n| cluster(c).connect_retries = n),
            ),
        ],
        doc: "clustering: the route port, the routes to dial, their TLS and permissions; see \
              [Clustering](#clustering)",
    },
    Opt {
        name: "leafnodes",
        aliases: &["leaf"],
        value: Value::Block(Block::LeafNodes),
        // Not reloaded (nats-server reloads a few leafnode options); without the values:
        // they hold passwords.
        reload: restart!("LeafNode", "restart the server to change it", leafnodes),
        flags: &[],
        doc: "leafnodes: the leafnode port leafs connect to, their `authorization`, and the \
              `remotes` (hubs) to connect to; see [Leafnodes](#leafnodes)",
    },
    Opt {
        name: "store_dir",
        aliases: &["storedir"],
        value: Value::Path(|c, p| c.store_dir = Some(p)),
        reload: restart!("StoreDir", "restart the server to change it", store_dir),
        flags: &[flag(None, "store_dir", Arg::Path("DIR"))],
        doc: "JetStream's storage directory (default: `<temp dir>/nats`); does not turn \
              JetStream on (see [JetStream](#jetstream))",
    },
    Opt {
        name: "jetstream",
        aliases: &[],
        value: Value::Block(Block::JetStream),
        reload: restart!("JetStream", "restart the server to change it", jetstream),
        flags: &[block_flag(
            "jetstream",
            "Enable JetStream (also -js)",
            BlockSet::Switch(|c| {
                jetstream(c);
            }),
        )],
        doc: "JetStream: `enabled`, or a block with `store_dir`, `max_memory_store`, \
              `max_file_store`, `sync_interval`; see [JetStream](#jetstream)",
    },
    Opt {
        name: "websocket",
        aliases: &["ws"],
        value: Value::Block(Block::WebSocket),
        reload: restart!("Websocket", "restart the server to change it", websocket),
        flags: &[],
        doc: "WebSocket clients: a block with `listen` (or `host`, `port`), `no_tls` or `tls`, \
              `same_origin`, `allowed_origins`, `handshake_timeout`, `advertise`, \
              `authorization`, `no_auth_user`; see [WebSocket](#websocket)",
    },
];
