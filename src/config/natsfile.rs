//! nats-server's configuration format mapped onto beaver's configuration: which top-level
//! keys beaver takes, which it accepts and ignores with a warning, and which are errors.
//!
//! The keys beaver takes are the option table's (`options`: names and nats-server's
//! aliases); they go, under their names, through the same `file::FileConfig` and
//! `file::apply` as `Config.toml`. Keys are matched case-insensitively, as nats-server does
//! (here at top level; inside blocks by the deserializer, which also skips unknown keys used
//! as variables). A key that nats-server does not know either is an error naming it, its
//! file, line and column (`nats.conf:2:1: unknown field "foo"`, nats-server's words), unless
//! a `$reference` used it as a variable, which nats-server also allows.

use super::file::{self, FileConfig};
use super::natsconf::{Deserializer, Document, Entry, Value};
use super::options::{self, Opt};
use super::{Config, ConfigError};

/// Security keys that beaver will implement but does not yet: accepted with a warning and
/// ignored. When one is implemented, move it to the option table (`options`). (None left:
/// `accounts` was the last.)
pub(super) const NOT_YET_KEYS: &[&str] = &[];

/// nats-server 2.9.10's other top-level keys (`server/opts.go`, `processConfigFileLine`):
/// features beaver does not have. Accepted with a warning and ignored.
pub(super) const IGNORED_KEYS: &[&str] = &[
    "client_advertise",
    "trace_verbose",
    "mappings",
    "maps",
    "disable_sublist_cache",
    "no_sublist_cache",
    "https",
    "https_port",
    "http_base_path",
    "gateway",
    "logfile_size_limit",
    "log_size_limit",
    "prof_port",
    "max_traced_msg_len",
    "max_sub_tokens",
    "max_subscription_tokens",
    "ocsp",
    "no_system_account",
    "no_system",
    "no_sys_acc",
    "no_header_support",
    "connect_error_reports",
    "reconnect_error_reports",
    "mqtt",
    "server_tags",
    "default_js_domain",
];

/// nats-server 2.9.10's security settings that beaver does not implement, and what each
/// is. A file that sets one is refused: ignoring it would start a server with less
/// protection than the file asks for (decentralized JWT authentication, say, would run with
/// no authentication at all), so start-up stops with an error naming the key and its line.
pub(super) const REFUSED_KEYS: &[(&str, &str)] = &[
    ("trusted", "JWT authentication (trusted operator keys)"),
    ("trusted_keys", "JWT authentication (trusted operator keys)"),
    ("resolver_tls", "JWT authentication (an account resolver)"),
    (
        "allow_non_tls",
        "TLS and plain-text clients on one port (`allow_non_tls`)",
    ),
];

/// What beaver does with one top-level key of a nats-server file.
#[derive(Debug, Clone, Copy)]
pub(super) enum KeyKind {
    /// Implemented: an option of the table (the key may be an alias).
    Beaver(&'static Opt),
    /// A security feature not implemented yet: warned about.
    NotYet,
    /// A nats-server feature beaver lacks: warned about.
    Ignored,
    /// A security setting beaver lacks: the file is refused (see [`REFUSED_KEYS`]).
    Refused(&'static str),
    /// Not a nats-server key.
    Unknown,
}

/// Classifies a top-level key (already lowercased).
pub(super) fn classify(key: &str) -> KeyKind {
    if let Some(opt) = options::find(key) {
        KeyKind::Beaver(opt)
    } else if NOT_YET_KEYS.contains(&key) {
        KeyKind::NotYet
    } else if IGNORED_KEYS.contains(&key) {
        KeyKind::Ignored
    } else if let Some((_, what)) = REFUSED_KEYS.iter().find(|(k, _)| *k == key) {
        KeyKind::Refused(what)
    } else {
        KeyKind::Unknown
    }
}

/// Applies a parsed nats-server configuration on top of `config`; returns the warnings (one
/// per key accepted and ignored).
pub(super) fn apply_document(
    config: &mut Config,
    doc: &Document,
) -> Result<Vec<String>, ConfigError> {
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    let mut taken: Vec<Entry> = Vec::new();
    for e in &doc.root {
        let key = e.key.to_ascii_lowercase();
        let at = doc.position(e.key_at);
        match classify(&key) {
            KeyKind::Beaver(opt) => {
                // One name per option, and a key given twice (`HOST` and `host`, `net` and
                // `host`) takes its last value, as nats-server's map of options does.
                let key = opt.name.to_owned();
                // nats-server still takes a number of seconds here, with this warning.
                if matches!(
                    opt.value,
                    options::Value::Duration {
                        number_warning: true,
                        ..
                    }
                ) && matches!(e.value.value, Value::Integer(_) | Value::Float(_))
                {
                    warnings.push(format!(
                        "{at}: invalid use of field {key:?}: {key} should be converted to a \
                         duration"
                    ));
                }
                taken.retain(|t| t.key != key);
                taken.push(Entry { key, ..e.clone() });
            }
            KeyKind::NotYet => {
                warnings.push(format!("{at}: {key:?} is not supported yet and is ignored"))
            }
            KeyKind::Ignored => warnings.push(format!(
                "{at}: {key:?} is a nats-server feature beaver does not have; ignored"
            )),
            KeyKind::Refused(what) => errors.push(format!(
                "{at}: {key:?}: beaver does not support {what} yet, and will not start \
                 without the security this file asks for"
            )),
            KeyKind::Unknown if e.used => {}
            KeyKind::Unknown => errors.push(format!("{at}: unknown field {:?}", e.key)),
        }
    }
    if !errors.is_empty() {
        return Err(ConfigError {
            message: errors.join("\n"),
        });
    }
    let de = Deserializer::new();
    let file: FileConfig = de.entries(&taken).map_err(|e| {
        let at = e.at.map_or_else(String::new, |l| {
            let file = doc
                .files
                .get(l.file)
                .map_or_else(String::new, |p| p.display().to_string());
            format!("{file}: line {}: ", l.line)
        });
        let key = e.key.map_or_else(String::new, |k| format!("key `{k}`: "));
        ConfigError {
            message: format!("{at}{key}{}", file::plain_words(&e.message)),
        }
    })?;
    let locate = |span: std::ops::Range<usize>| match de.location(span) {
        Some(l) => {
            let file = doc
                .files
                .get(l.file)
                .map_or_else(String::new, |p| p.display().to_string());
            format!("{file}: line {}", l.line)
        }
        None => "?".into(),
    };
    warnings.extend(file::apply(config, file, &locate)?);
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn key_lists_match_the_schema() {
        // The unknown-field message lists every key `Config.toml` takes.
        let err = toml::from_str::<FileConfig>("zz_not_a_key = 1")
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        let fields: Vec<&str> = err.split('`').skip(3).step_by(2).collect();
        assert!(fields.len() > 10, "{err}");
        for f in &fields {
            assert!(
                matches!(classify(f), KeyKind::Beaver(_)),
                "FileConfig field {f} is not a key of nats-server's format"
            );
        }
        for k in options::keys() {
            let doc =
                crate::config::natsconf::parse_str(&format!("{k}: {{}}\n"), "x.conf".as_ref())
                    .unwrap();
            let e = Deserializer::new().entries::<FileConfig>(&doc.root).err();
            let msg = e.map(|e| e.message).unwrap_or_default();
            assert!(!msg.contains("unknown field"), "{k}: {msg}");
        }
        for k in NOT_YET_KEYS.iter().chain(IGNORED_KEYS) {
            if NOT_YET_KEYS.contains(k) {
                assert!(matches!(classify(k), KeyKind::NotYet), "{k}");
            } else {
                assert!(matches!(classify(k), KeyKind::Ignored), "{k}");
            }
        }
    }

    #[test]
    fn nats_conf_maps_onto_the_same_config_as_toml() {
        let (conf, warnings) = Config::from_nats_conf(concat!(
            "listen: 127.0.0.1:4333\n",
            "server_name: n1\n",
            "http: \"127.0.0.1:8333\"\n",
            "max_payload: 2MB\n",
            "max_pending: 64MB\n",
            "max_conn: 100\n",
            "max_subs: 10\n",
            "ping_interval: \"30s\"\n",
            "PING_MAX = 3\n",
            "write_deadline: \"2s\"\n",
            "debug: true\ntrace: off\nlogtime: no\n",
            "log_file: /tmp/b.log\npidfile: /tmp/b.pid\nports_file_dir: /tmp\n",
            "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n",
            "jetstream { store_dir: /tmp/js }\n",
            "gateway { port: 1 }\n",
            "authorization { token: s3cr3t }\n",
        ))
        .unwrap();
        let toml = Config::from_toml(concat!(
            "host = \"127.0.0.1\"\nport = 4333\nserver_name = \"n1\"\n",
            "http_host = \"127.0.0.1\"\nhttp_port = 8333\n",
            "max_payload = \"2MB\"\nmax_pending = \"64MB\"\nmax_connections = 100\n",
            "max_subscriptions = 10\nping_interval = \"30s\"\nping_max = 3\n",
            "write_deadline = \"2s\"\ndebug = true\ntrace = false\nlogtime = false\n",
            "logfile = \"/tmp/b.log\"\npid_file = \"/tmp/b.pid\"\nports_file_dir = \"/tmp\"\n",
            "lame_duck_duration = \"30s\"\nlame_duck_grace_period = \"1s\"\n",
            "[jetstream]\nstore_dir = \"/tmp/js\"\n",
            "[authorization]\ntoken = \"s3cr3t\"\n",
        ))
        .unwrap();
        assert_eq!(conf, toml);
        assert_eq!(conf.lame_duck_grace_period, Duration::from_secs(1));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("\"gateway\"") && warnings[0].contains("nats.conf:20:1"));
        assert_eq!(
            conf.jetstream_store_dir().as_deref(),
            Some(std::path::Path::new("/tmp/js"))
        );
    }

    #[test]
    fn errors_name_the_key_and_line() {
        let e = Config::from_nats_conf("port: 1\nfoo: 1\nbar = 2\n").unwrap_err();
        assert_eq!(
            e.message,
            "nats.conf:2:1: unknown field \"foo\"\nnats.conf:3:1: unknown field \"bar\""
        );
        // Seconds as a number are taken, with nats-server's warning.
        let (c, w) = Config::from_nats_conf("ping_interval: 30\n").unwrap();
        assert_eq!(c.ping_interval, Duration::from_secs(30));
        assert_eq!(
            w,
            [
                "nats.conf:1:1: invalid use of field \"ping_interval\": ping_interval should be \
              converted to a duration"
            ]
        );
        // A key used as a variable is not unknown.
        Config::from_nats_conf("SIZE: 2MB\nmax_payload: $SIZE\n").unwrap();
        let e = Config::from_nats_conf("port: 1\n\nport: 70000\n").unwrap_err();
        assert_eq!(
            e.message,
            "nats.conf: line 3: key `port`: 70000 is out of range (-1 to 65535)"
        );
        let e = Config::from_nats_conf("debug: 1\n").unwrap_err();
        assert!(
            e.message
                .starts_with("nats.conf: line 1: key `debug`: invalid type"),
            "{e}"
        );
        let e = Config::from_nats_conf("\nping_interval: \"soon\"\n").unwrap_err();
        assert!(
            e.message
                .starts_with("nats.conf: line 2: key `ping_interval`"),
            "{e}"
        );
        // Durations are Go's (time.ParseDuration), as nats-server reads them.
        let e = Config::from_nats_conf("ping_interval: \"2 minutes\"\n").unwrap_err();
        assert!(e.message.ends_with("unknown unit \" minutes\""), "{e}");
        let (c, _) = Config::from_nats_conf("write_deadline: \"1.5h\"\n").unwrap();
        assert_eq!(c.write_deadline, Duration::from_secs(5400));
        let e = Config::from_nats_conf("port = \"abc\"\n").unwrap_err();
        assert_eq!(
            e.message,
            "nats.conf: line 1: key `port`: invalid type: string \"abc\", expected an integer"
        );
        let e = Config::from_toml("port = \"abc\"\n").unwrap_err();
        assert!(e.message.ends_with("expected an integer"), "{e}");
        let e = Config::from_nats_conf("lame_duck_duration: \"10s\"\n").unwrap_err();
        assert!(e.message.contains("minimum is 30 seconds"), "{e}");
        let e = Config::from_nats_conf("listen: \"nope\"\n").unwrap_err();
        assert!(e.message.contains("key `listen`"), "{e}");
    }

    #[test]
    fn variables_defined_inside_blocks() {
        // nats-server's documentation example.
        let (c, w) = Config::from_nats_conf(concat!(
            "authorization {\n",
            "  ADMIN = { publish = \">\", subscribe = \">\" }\n",
            "  REQUESTOR = { publish = [\"req.a\", \"req.b\"], subscribe = \"_INBOX.>\" }\n",
            "  users = [\n",
            "    { user: admin, password: secret, permissions: $ADMIN }\n",
            "    { user: client, password: pw, permissions: $REQUESTOR }\n",
            "  ]\n",
            "}\n",
        ))
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let users = &c.authorization.unwrap().users;
        let p = users[1].permissions.as_ref().unwrap();
        assert_eq!(p.publish.as_ref().unwrap().allow, ["req.a", "req.b"]);
        assert_eq!(p.subscribe.as_ref().unwrap().allow, ["_INBOX.>"]);
        // At any depth; an unknown key that is not used is still refused, with its line.
        Config::from_nats_conf(
            "accounts { A { P = { sub = x }\n users = [ {user: u, password: p, permissions: $P} ] } }\n",
        )
        .unwrap();
        // In `accounts`, a block used as a variable is not an account either.
        let (c, _) = Config::from_nats_conf(
            "accounts {\n  T = { users: [ {user: a, password: b} ] }\n  A: $T\n}\n",
        )
        .unwrap();
        let names: Vec<&str> = c.accounts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["A"]);
        let e = Config::from_nats_conf(
            "authorization {\n  users = [ {user: a, password: b} ]\n  NOPE = 1\n}\n",
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("nats.conf: line 3: key `NOPE`: unknown field"),
            "{e}"
        );
    }

    #[test]
    fn keys_are_case_insensitive_at_every_level() {
        let (c, _) = Config::from_nats_conf(concat!(
            "Authorization { Users: [ {User: a, PASSWORD: b, Permissions: {Publish: {Allow: [x], DENY: y}}} ] }\n",
            "Accounts { Acc: { Users: [ {user: c, password: d} ], Default_Permissions: {SUB: z} } }\n",
        ))
        .unwrap();
        let u = &c.authorization.unwrap().users[0];
        assert_eq!(u.user, "a");
        let p = u.permissions.as_ref().unwrap().publish.as_ref().unwrap();
        assert_eq!(
            (p.allow.as_slice(), p.deny.as_slice()),
            (&["x".to_owned()][..], &["y".to_owned()][..])
        );
        // Account names keep their case.
        assert_eq!(c.accounts[0].name, "Acc");
        assert!(c.accounts[0].users[0].permissions.is_some());
        // The last of two spellings wins, as at top level.
        let (c, _) =
            Config::from_nats_conf("authorization { user: a, USER: b, password: p }\n").unwrap();
        assert_eq!(c.authorization.unwrap().user.as_deref(), Some("b"));
        let e =
            Config::from_nats_conf("TLS { Cert_File: a, Key_File: b, Bogus: 1 }\n").unwrap_err();
        assert!(e.message.contains("key `Bogus`: unknown field"), "{e}");
        // Config.toml keeps TOML's exact names.
        assert!(Config::from_toml("[authorization]\nUser = \"a\"\n").is_err());
    }

    #[test]
    fn nats_server_features_beaver_lacks_inside_blocks() {
        // An nkey that is not a user's public key: nats-server's words, and the line.
        let e = Config::from_nats_conf(
            "authorization {\n  users = [\n    { nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF5 }\n  ]\n}\n",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "nats.conf: line 3: key `authorization.users`: Not a valid public nkey for a user"
        );
        let e = Config::from_nats_conf(
            "authorization { users = [ {user: a, password: b, allowed_connection_types: [WEBSOCKET]} ] }\n",
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("\"allowed_connection_types\" is not supported"),
            "{e}"
        );
        // allow_responses: `true`, a table (zero values take the defaults), `false`.
        let (c, w) = Config::from_nats_conf(concat!(
            "authorization { users = [\n",
            "  {user: a, password: b, permissions: {publish: x, allow_responses: true}}\n",
            "  {user: c, password: d, permissions: {subscribe: y, allow_responses: {max: 3, expires: \"5s\"}}}\n",
            "  {user: e, password: f, permissions: {allow_responses: false}}\n",
            "  {user: g, password: h, permissions: {allow_responses: {max: 0}}}\n",
            "] }\n",
        ))
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let users = c.authorization.unwrap().users;
        let response = |i: usize| users[i].permissions.clone().unwrap().response;
        use crate::config::ResponsePermission;
        assert_eq!(response(0), Some(ResponsePermission::default()));
        assert_eq!(
            response(1),
            Some(ResponsePermission {
                max: 3,
                expires: std::time::Duration::from_secs(5)
            })
        );
        assert_eq!(response(2), None);
        assert_eq!(response(3), Some(ResponsePermission::default()));
        let e = Config::from_nats_conf(
            "authorization { users = [ {user: a, password: b, permissions: {allow_responses: {maximum: 1}}} ] }\n",
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("Unknown field \"maximum\" parsing permissions"),
            "{e}"
        );
    }

    #[test]
    fn authorization_default_permissions() {
        let (c, w) = Config::from_nats_conf(concat!(
            "authorization {\n",
            "  default_permissions = { publish = \"a.>\" }\n",
            "  users = [ {user: a, password: b}, {user: c, password: d, permissions: {publish: x}} ]\n",
            "}\n",
        ))
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let users = c.authorization.unwrap().users;
        let allow = |i: usize| users[i].permissions.clone().unwrap().publish.unwrap().allow;
        assert_eq!(allow(0), ["a.>"]);
        assert_eq!(allow(1), ["x"]);
        let e = Config::from_nats_conf(
            "authorization {\n default_permissions = { publish = \"a b\" }\n users = [ {user: a, password: b} ] }\n",
        )
        .unwrap_err();
        assert!(
            e.message.contains("authorization.default_permissions"),
            "{e}"
        );
    }
}
