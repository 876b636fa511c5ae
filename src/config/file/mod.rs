//! The configuration file's schema ([`FileConfig`]) and turning it into [`Config`] with errors
//! that name the key and line. `Config.toml` is read here; nats-server's format is read into
//! the same [`FileConfig`] by [`super::natsfile`], and both go through [`apply`].

mod values;

pub(super) use values::plain_words;

use super::auth::check_permissions;
use super::{
    AccountConfig, Authorization, Config, ConfigError, Permissions, SubjectPermission, Tls, User,
};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;
use values::{HostPort, Seconds, Size};

/// The file's keys: nats-server's option names (and its aliases), at top level. Every key is
/// optional; unknown keys are an error (`deny_unknown_fields`), reported with their line.
/// `natsfile::BEAVER_KEYS` lists the same keys (a unit test keeps them in step).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    /// `host:port`, or a port alone (nats-server's `listen`).
    listen: Option<Spanned<HostPort>>,
    host: Option<Spanned<String>>,
    /// nats-server's alias for `host`.
    net: Option<Spanned<String>>,
    port: Option<Spanned<i64>>,
    server_name: Option<Spanned<String>>,
    /// Monitoring `host:port`, or a port alone (nats-server's `http`).
    http: Option<Spanned<HostPort>>,
    #[serde(alias = "monitor_port")]
    http_port: Option<Spanned<i64>>,
    http_host: Option<Spanned<String>>,
    max_closed_clients: Option<Spanned<i64>>,
    max_payload: Option<Spanned<Size>>,
    max_control_line: Option<Spanned<Size>>,
    #[serde(alias = "max_conn")]
    max_connections: Option<Spanned<i64>>,
    max_pending: Option<Spanned<Size>>,
    #[serde(alias = "max_subs")]
    max_subscriptions: Option<Spanned<i64>>,
    ping_interval: Option<Spanned<Seconds>>,
    ping_max: Option<Spanned<i64>>,
    write_deadline: Option<Spanned<Seconds>>,
    writers: Option<Spanned<i64>>,
    debug: Option<bool>,
    trace: Option<bool>,
    logtime: Option<bool>,
    #[serde(alias = "log_file")]
    logfile: Option<Spanned<String>>,
    authorization: Option<Spanned<FileAuthorization>>,
    no_auth_user: Option<Spanned<String>>,
    accounts: Option<FileAccounts>,
    tls: Option<Spanned<FileTls>>,
    #[serde(alias = "pidfile")]
    pid_file: Option<Spanned<String>>,
    ports_file_dir: Option<Spanned<String>>,
    lame_duck_duration: Option<Spanned<Seconds>>,
    lame_duck_grace_period: Option<Spanned<Seconds>>,
    cluster: Option<Spanned<FileCluster>>,
}

/// `[cluster]`: nats-server's `cluster` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCluster {
    name: Option<String>,
    /// `host:port`, or a port alone.
    listen: Option<Spanned<HostPort>>,
    host: Option<String>,
    port: Option<Spanned<i64>>,
    routes: Option<Vec<String>>,
    no_advertise: Option<bool>,
    /// nats-server's `cluster_advertise` (`advertise` is its alias).
    #[serde(alias = "advertise")]
    cluster_advertise: Option<String>,
    connect_retries: Option<Spanned<i64>>,
    authorization: Option<FileClusterAuth>,
}

/// `cluster.authorization`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileClusterAuth {
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    timeout: Option<Spanned<Seconds>>,
}

/// `[authorization]`: nats-server's `authorization` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuthorization {
    #[serde(alias = "username")]
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    token: Option<String>,
    timeout: Option<Spanned<Seconds>>,
    users: Option<Vec<Spanned<FileUser>>>,
    /// Permissions of the `users` that have none of their own.
    #[serde(alias = "default_permission")]
    default_permissions: Option<Spanned<FilePermissions>>,
}

/// `accounts`: a map from account name to its block (`accounts { A { users [...] } }`,
/// `[accounts.A]`), or nats-server's list of names (`accounts [A, B]`: accounts without
/// users). A name given twice takes its last block, as nats-server's map of accounts does.
struct FileAccounts(Vec<(String, Spanned<FileAccount>)>);

impl<'de> Deserialize<'de> for FileAccounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileAccounts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("map entries for accounts (`accounts { NAME { users [...] } }`)")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut m: A) -> Result<FileAccounts, A::Error> {
                let mut out: Vec<(String, Spanned<FileAccount>)> = Vec::new();
                while let Some(name) = m.next_key::<String>()? {
                    let block = m.next_value::<Spanned<FileAccount>>()?;
                    out.retain(|(n, _)| *n != name);
                    out.push((name, block));
                }
                Ok(FileAccounts(out))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<FileAccounts, A::Error> {
                let mut out: Vec<(String, Spanned<FileAccount>)> = Vec::new();
                while let Some(name) = s.next_element::<Spanned<String>>()? {
                    let span = name.span();
                    let name = name.into_inner();
                    out.retain(|(n, _)| *n != name);
                    out.push((name, Spanned::new(span, FileAccount::default())));
                }
                Ok(FileAccounts(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One account's block. `users` and `default_permissions` are read; the other keys
/// nats-server knows are features beaver does not have yet: accepted, warned about, ignored.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileAccount {
    users: Option<Vec<Spanned<FileUser>>>,
    default_permissions: Option<Spanned<FilePermissions>>,
    exports: Option<Spanned<de::IgnoredAny>>,
    imports: Option<Spanned<de::IgnoredAny>>,
    jetstream: Option<Spanned<de::IgnoredAny>>,
    #[serde(alias = "maps")]
    mappings: Option<Spanned<de::IgnoredAny>>,
    limits: Option<Spanned<de::IgnoredAny>>,
    nkey: Option<Spanned<de::IgnoredAny>>,
}

/// One entry of `users`. `nkey` and `allowed_connection_types` are nats-server's, not
/// beaver's: they are read only to be refused by name (ignoring them would lock the user out
/// or let it in where the file says not to).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUser {
    #[serde(alias = "username")]
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    #[serde(alias = "permission")]
    permissions: Option<FilePermissions>,
    nkey: Option<Spanned<de::IgnoredAny>>,
    allowed_connection_types: Option<Spanned<de::IgnoredAny>>,
}

/// `permissions = { publish = ..., subscribe = ... }` (nats-server also says `pub`/`sub`).
/// `allow_responses` is read but not implemented: see [`FilePermissions::into_permissions`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePermissions {
    #[serde(alias = "pub")]
    publish: Option<PermSpec>,
    #[serde(alias = "sub")]
    subscribe: Option<PermSpec>,
    allow_responses: Option<Spanned<AllowResponses>>,
}

/// nats-server's `allow_responses`: `true`/`false`, or `{ max, expires }` (enabled).
struct AllowResponses(bool);

impl<'de> Deserialize<'de> for AllowResponses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AllowResponses;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, or a table with `max` and `expires`")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<AllowResponses, E> {
                Ok(AllowResponses(v))
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<AllowResponses, A::Error> {
                while m.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
                Ok(AllowResponses(true))
            }
        }
        d.deserialize_any(V)
    }
}

/// A permission: one subject, a list of subjects (both mean allow), or a table with `allow`
/// and `deny`. Read as a struct, so that the table's keys are matched like any other block's
/// (case-insensitively in a nats-server file).
enum PermSpec {
    One(String),
    List(Vec<String>),
    Table(FileSubjectPermission),
}

impl<'de> Deserialize<'de> for PermSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PermSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a subject, a list of subjects, or a table with `allow` and `deny` lists",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PermSpec, E> {
                Ok(PermSpec::One(v.to_owned()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<PermSpec, A::Error> {
                let mut list = Vec::new();
                while let Some(subject) = s.next_element::<String>()? {
                    list.push(subject);
                }
                Ok(PermSpec::List(list))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, m: A) -> Result<PermSpec, A::Error> {
                FileSubjectPermission::deserialize(de::value::MapAccessDeserializer::new(m))
                    .map(PermSpec::Table)
            }
        }
        d.deserialize_struct("PermSpec", FILE_SUBJECT_PERMISSION_FIELDS, V)
    }
}

/// [`FileSubjectPermission`]'s keys.
const FILE_SUBJECT_PERMISSION_FIELDS: &[&str] = &["allow", "deny"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSubjectPermission {
    allow: Option<OneOrMany>,
    deny: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a subject or a list of subjects")]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl FilePermissions {
    /// The permissions, and a warning if `allow_responses` was given. beaver does not have
    /// it: the user may not publish to the reply subjects of the requests it receives unless
    /// its publish permissions allow them. Where nats-server would allow responses only (no
    /// `publish.allow`), every publish is denied, never more than the file allows.
    fn into_permissions(
        self,
        locate: &dyn Fn(std::ops::Range<usize>) -> String,
    ) -> (Permissions, Option<String>) {
        let mut p = Permissions {
            publish: self.publish.map(PermSpec::into_permission),
            subscribe: self.subscribe.map(PermSpec::into_permission),
        };
        let warning = match self.allow_responses {
            Some(r) if r.get_ref().0 => {
                let pubs = p.publish.get_or_insert_with(SubjectPermission::default);
                let only_responses = pubs.allow.is_empty();
                if only_responses {
                    pubs.deny = vec![">".to_owned()];
                }
                Some(format!(
                    "{}: \"allow_responses\" is not supported by beaver yet: ignored; {}",
                    locate(r.span()),
                    if only_responses {
                        "this user may not publish at all (nats-server would allow it replies)"
                    } else {
                        "this user may publish replies only where `publish` allows"
                    }
                ))
            }
            _ => None,
        };
        (p, warning)
    }
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

impl PermSpec {
    fn into_permission(self) -> SubjectPermission {
        match self {
            PermSpec::One(s) => SubjectPermission {
                allow: vec![s],
                deny: Vec::new(),
            },
            PermSpec::List(allow) => SubjectPermission {
                allow,
                deny: Vec::new(),
            },
            PermSpec::Table(t) => SubjectPermission {
                allow: t.allow.map(OneOrMany::into_vec).unwrap_or_default(),
                deny: t.deny.map(OneOrMany::into_vec).unwrap_or_default(),
            },
        }
    }
}

/// `[tls]`: nats-server's `tls` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    ca_file: Option<String>,
    verify: Option<bool>,
    timeout: Option<Spanned<Seconds>>,
}

/// Parses `text` (the contents of `path`, in TOML) and applies it on top of `config`;
/// returns the warnings (keys accepted and ignored).
pub(super) fn apply_file(
    config: &mut Config,
    path: &str,
    text: &str,
) -> Result<Vec<String>, ConfigError> {
    let line_of = |span: std::ops::Range<usize>| text[..span.start].matches('\n').count() + 1;
    let file: FileConfig = toml::from_str(text).map_err(|e| {
        // Name the line and the key the parser stopped at, like the range checks below.
        let message = match e.span() {
            Some(span) => {
                let line = line_of(span.clone());
                let key = text
                    .lines()
                    .nth(line - 1)
                    .and_then(|l| l.split('=').next())
                    .map(|k| k.trim().trim_matches('"'))
                    .filter(|k| !k.is_empty() && !k.starts_with('['));
                let m = plain_words(e.message().trim());
                // `port: 4222`, `authorization {`: nats-server's syntax in a .toml file.
                if m.contains("expected `=`") && super::natsconf::parse_str_no_include(text).is_ok()
                {
                    return ConfigError {
                        message: format!(
                            "{path}: line {line}: {m} (this looks like nats-server syntax: name \
                             the file .conf)"
                        ),
                    };
                }
                match key {
                    Some(k) => format!("{path}: line {line}: key `{k}`: {m}"),
                    None => format!("{path}: line {line}: {m}"),
                }
            }
            None => format!("{path}: {}", plain_words(e.message().trim())),
        };
        ConfigError { message }
    })?;
    apply(config, file, &|span| {
        format!("{path}: line {}", line_of(span))
    })
}

/// Validates `file` and applies it on top of `config`. `locate` turns a value's span into
/// `FILE: line N` for error messages. Returns the warnings (keys accepted and ignored).
pub(super) fn apply(
    config: &mut Config,
    file: FileConfig,
    locate: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<Vec<String>, ConfigError> {
    let mut warnings = Vec::new();
    // User names seen so far: unique across `authorization.users` and the accounts.
    let mut seen = std::collections::HashSet::new();
    // Builds "path: line N: key `k`: message".
    let err = |key: &str, span: std::ops::Range<usize>, msg: String| ConfigError {
        message: format!("{}: key `{key}`: {msg}", locate(span)),
    };
    macro_rules! int_in {
        ($key:literal, $v:expr, $lo:expr, $hi:expr) => {{
            let v = $v;
            let n = *v.get_ref();
            if !($lo..=$hi).contains(&n) {
                return Err(err(
                    $key,
                    v.span(),
                    format!("{} is out of range ({} to {})", n, $lo, $hi),
                ));
            }
            n
        }};
    }
    macro_rules! size {
        ($key:literal, $v:expr) => {{
            let v = $v;
            let span = v.span();
            match v.into_inner().0 {
                Ok(n) => {
                    usize::try_from(n).map_err(|_| err($key, span, format!("{n} is too large")))?
                }
                Err(m) => return Err(err($key, span, m)),
            }
        }};
    }
    macro_rules! duration {
        ($key:literal, $v:expr) => {{
            let v = $v;
            let span = v.span();
            match v.into_inner().0 {
                Ok(d) if d > super::MAX_DURATION => {
                    return Err(err($key, span, "must be at most 365 days".into()))
                }
                Ok(d) => (d, span),
                Err(m) => return Err(err($key, span, m)),
            }
        }};
    }

    // `listen` first, so that `host` and `port` given too take precedence.
    if let Some(v) = file.listen {
        let span = v.span();
        let (host, port) = v
            .into_inner()
            .0
            .map_err(|m| err("listen", span.clone(), m))?;
        if !(-1..=65535).contains(&port) {
            return Err(err(
                "listen",
                span,
                format!("port {port} is out of range (-1 to 65535)"),
            ));
        }
        if let Some(h) = host {
            config.host = h;
        }
        config.port = port as i32;
    }
    if let Some(v) = file.http {
        let span = v.span();
        let (host, port) = v.into_inner().0.map_err(|m| err("http", span.clone(), m))?;
        if !(-1..=65535).contains(&port) {
            return Err(err(
                "http",
                span,
                format!("port {port} is out of range (-1 to 65535)"),
            ));
        }
        if host.is_some() {
            config.http_host = host;
        }
        config.http_port = port as i32;
    }
    if let Some(v) = file.net {
        config.host = v.into_inner();
    }
    if let Some(v) = file.host {
        config.host = v.into_inner();
    }
    if let Some(v) = file.port {
        config.port = int_in!("port", v, -1, 65535) as i32;
    }
    if let Some(v) = file.server_name {
        config.server_name = Some(v.into_inner());
    }
    if let Some(v) = file.http_port {
        config.http_port = int_in!("http_port", v, -1, 65535) as i32;
    }
    if let Some(v) = file.http_host {
        config.http_host = Some(v.into_inner());
    }
    if let Some(v) = file.max_closed_clients {
        config.max_closed_clients =
            int_in!("max_closed_clients", v, 0, i64::from(i32::MAX)) as usize;
    }
    let max_payload_span = file.max_payload.as_ref().map(|v| v.span());
    if let Some(v) = file.max_payload {
        let span = v.span();
        config.max_payload = size!("max_payload", v);
        if config.max_payload == 0 || config.max_payload > super::MAX_PAYLOAD_LIMIT {
            return Err(err(
                "max_payload",
                span,
                format!(
                    "must be between 1 and {} bytes (64 MiB, nats-server's limit)",
                    super::MAX_PAYLOAD_LIMIT
                ),
            ));
        }
    }
    if let Some(v) = file.max_control_line {
        let span = v.span();
        config.max_control_line = size!("max_control_line", v);
        if config.max_control_line == 0 || config.max_control_line > super::MAX_PAYLOAD_LIMIT {
            return Err(err(
                "max_control_line",
                span,
                "must be between 1 and 64 MiB".into(),
            ));
        }
    }
    if let Some(v) = file.max_connections {
        config.max_connections = int_in!("max_connections", v, -1, i64::from(i32::MAX));
    }
    if let Some(v) = file.max_pending {
        let span = v.span();
        config.max_pending = size!("max_pending", v);
        if config.max_pending == 0 {
            return Err(err("max_pending", span, "must be at least 1 byte".into()));
        }
    }
    if let Some(v) = file.max_subscriptions {
        config.max_subscriptions = int_in!("max_subscriptions", v, 0, i64::from(i32::MAX)) as usize;
    }
    if let Some(v) = file.ping_interval {
        let (d, span) = duration!("ping_interval", v);
        if d.is_zero() {
            return Err(err("ping_interval", span, "must be more than 0".into()));
        }
        config.ping_interval = d;
    }
    if let Some(v) = file.ping_max {
        config.ping_max = int_in!("ping_max", v, 0, 1_000_000) as u32;
    }
    if let Some(v) = file.write_deadline {
        let (d, _) = duration!("write_deadline", v);
        config.write_deadline = d;
    }
    if let Some(v) = file.writers {
        config.writers = int_in!("writers", v, 0, 1024) as usize;
    }
    if let Some(v) = file.debug {
        config.debug = v;
    }
    if let Some(v) = file.trace {
        config.trace = v;
    }
    if let Some(v) = file.logtime {
        config.logtime = v;
    }
    if let Some(v) = file.logfile {
        config.logfile = Some(PathBuf::from(v.into_inner()));
    }
    if let Some(a) = file.authorization {
        let span = a.span();
        let a = a.into_inner();
        let mut auth = Authorization {
            user: a.user,
            password: a.password,
            token: a.token,
            ..Authorization::default()
        };
        if let Some(v) = a.timeout {
            let (d, _) = duration!("authorization.timeout", v);
            auth.timeout = d;
        }
        auth.users = users(
            a.users,
            "authorization.users",
            &mut seen,
            &err,
            locate,
            &mut warnings,
        )?;
        // Users without permissions of their own get `default_permissions`.
        if let Some(p) = a.default_permissions {
            let pspan = p.span();
            let (p, warning) = p.into_inner().into_permissions(locate);
            warnings.extend(warning);
            check_permissions(&p)
                .map_err(|m| err("authorization.default_permissions", pspan, m))?;
            for u in &mut auth.users {
                if u.permissions.is_none() {
                    u.permissions = Some(p.clone());
                }
            }
        }
        if auth.user.is_some() && !auth.users.is_empty() {
            return Err(err(
                "authorization",
                span,
                "can not have a single user/pass (`user`) and a users array (`users`)".into(),
            ));
        }
        if auth.token.is_some() && (auth.user.is_some() || !auth.users.is_empty()) {
            return Err(err(
                "authorization",
                span,
                "can not have a token (`token`) and a user (`user` or `users`)".into(),
            ));
        }
        config.authorization = Some(auth);
    }
    if let Some(accounts) = file.accounts {
        config.accounts.clear();
        let accounts_span = accounts.0.first().map(|(_, b)| b.span());
        for (name, block) in accounts.0 {
            let span = block.span();
            if name == super::GLOBAL_ACCOUNT {
                return Err(err(
                    "accounts",
                    span,
                    format!("{name:?} is a Reserved Account"),
                ));
            }
            let block = block.into_inner();
            let key = format!("accounts.{name}");
            // An account's nkey is its identity in JWT authentication (operator mode), which
            // beaver does not have: refused, as the other JWT settings are
            // (`natsfile::REFUSED_KEYS`).
            if let Some(v) = &block.nkey {
                return Err(ConfigError {
                    message: format!(
                        "{}: key `{key}.nkey`: beaver does not support JWT authentication \
                         (account nkeys) yet, and will not start without the security this \
                         file asks for",
                        locate(v.span())
                    ),
                });
            }
            let default_permissions = block.default_permissions.map(|p| {
                let (p, warning) = p.into_inner().into_permissions(locate);
                warnings.extend(warning);
                p
            });
            let mut account = AccountConfig {
                users: users(
                    block.users,
                    &format!("{key}.users"),
                    &mut seen,
                    &err,
                    locate,
                    &mut warnings,
                )?,
                default_permissions,
                name,
            };
            if let Some(p) = &account.default_permissions {
                check_permissions(p)
                    .map_err(|m| err(&format!("{key}.default_permissions"), span.clone(), m))?;
            }
            for (k, v, what) in [
                (
                    "exports",
                    &block.exports,
                    "imports and exports are not supported yet",
                ),
                (
                    "imports",
                    &block.imports,
                    "imports and exports are not supported yet",
                ),
                ("jetstream", &block.jetstream, "beaver has no JetStream"),
                (
                    "mappings",
                    &block.mappings,
                    "subject mappings are not supported yet",
                ),
                (
                    "limits",
                    &block.limits,
                    "account limits are not supported yet",
                ),
            ] {
                if let Some(v) = v {
                    warnings.push(format!(
                        "{}: key `{key}.{k}`: {what}; ignored",
                        locate(v.span())
                    ));
                }
            }
            if account.name == "$SYS" {
                warnings.push(format!(
                    "{}: key `{key}`: beaver has no system account; \"$SYS\" is an ordinary \
                     account (no $SYS.> events or requests)",
                    locate(span)
                ));
            }
            // Users without permissions of their own get the account's defaults.
            if let Some(p) = &account.default_permissions {
                for u in &mut account.users {
                    if u.permissions.is_none() {
                        u.permissions = Some(p.clone());
                    }
                }
            }
            config.accounts.push(account);
        }
        if let (Some(a), Some(account)) = (config.authorization.as_ref(), accounts_span) {
            if !config.accounts.is_empty() && (a.token.is_some() || a.user.is_some()) {
                let what = if a.token.is_some() {
                    "a token"
                } else {
                    "a single user/pass"
                };
                return Err(err(
                    "accounts",
                    account,
                    format!("can not have {what} (in `authorization`) and accounts"),
                ));
            }
        }
    }
    if let Some(v) = file.no_auth_user {
        let span = v.span();
        let name = v.into_inner();
        let known = config
            .authorization
            .iter()
            .flat_map(|a| a.users.iter())
            .chain(config.accounts.iter().flat_map(|a| a.users.iter()))
            .any(|u| u.user == name);
        if !known {
            return Err(err(
                "no_auth_user",
                span,
                format!(
                    "{name:?} not present as user in authorization block or account \
                     configuration"
                ),
            ));
        }
        config.no_auth_user = Some(name);
    }
    if let Some(t) = file.tls {
        let span = t.span();
        let t = t.into_inner();
        let (Some(cert), Some(key)) = (t.cert_file, t.key_file) else {
            return Err(err(
                "tls",
                span,
                "`cert_file` and `key_file` are required".into(),
            ));
        };
        let mut tls = Tls {
            cert_file: PathBuf::from(cert),
            key_file: PathBuf::from(key),
            ca_file: t.ca_file.map(PathBuf::from),
            verify: t.verify.unwrap_or(false),
            timeout: Duration::ZERO,
        };
        if let Some(v) = t.timeout {
            let (d, _) = duration!("tls.timeout", v);
            tls.timeout = d;
        }
        if tls.verify && tls.ca_file.is_none() {
            return Err(err("tls", span, "`verify` needs `ca_file`".into()));
        }
        config.tls = Some(tls);
    }
    if let Some(c) = file.cluster {
        let span = c.span();
        let c = c.into_inner();
        let mut cluster = super::Cluster {
            host: "0.0.0.0".into(),
            ..Default::default()
        };
        cluster.name = c.name;
        if let Some(h) = c.host {
            cluster.host = h;
        }
        if let Some(p) = c.port {
            let pspan = p.span();
            let n = p.into_inner();
            if !(-1..=65535).contains(&n) {
                return Err(err(
                    "cluster.port",
                    pspan,
                    format!("{n} is out of range (-1 to 65535)"),
                ));
            }
            cluster.port = n as i32;
        }
        if let Some(l) = c.listen {
            let lspan = l.span();
            match l.into_inner().0 {
                Ok((host, port)) if (-1..=65535).contains(&port) => {
                    if let Some(h) = host {
                        cluster.host = h;
                    }
                    cluster.port = port as i32;
                }
                Ok((_, port)) => {
                    return Err(err(
                        "cluster.listen",
                        lspan,
                        format!("{port} is out of range (-1 to 65535)"),
                    ))
                }
                Err(m) => return Err(err("cluster.listen", lspan, m)),
            }
        }
        for r in c.routes.unwrap_or_default() {
            if let Err(m) = super::parse_route_url(&r) {
                return Err(err("cluster.routes", span.clone(), m));
            }
            cluster.routes.push(r);
        }
        cluster.no_advertise = c.no_advertise.unwrap_or(false);
        cluster.advertise = c.cluster_advertise;
        if let Some(n) = c.connect_retries {
            let nspan = n.span();
            cluster.connect_retries = u32::try_from(n.into_inner()).map_err(|_| {
                err(
                    "cluster.connect_retries",
                    nspan,
                    "must be a non-negative number".into(),
                )
            })?;
        }
        if let Some(a) = c.authorization {
            let mut auth = super::ClusterAuth {
                user: a.user.unwrap_or_default(),
                password: a.password.unwrap_or_default(),
                timeout: super::DEFAULT_AUTH_TIMEOUT,
            };
            if let Some(v) = a.timeout {
                let (d, _) = duration!("cluster.authorization.timeout", v);
                auth.timeout = d;
            }
            cluster.authorization = Some(auth);
        }
        config.cluster = Some(cluster);
    }
    if let Some(v) = file.pid_file {
        config.pid_file = Some(PathBuf::from(v.into_inner()));
    }
    if let Some(v) = file.ports_file_dir {
        config.ports_file_dir = Some(PathBuf::from(v.into_inner()));
    }
    if let Some(v) = file.lame_duck_duration {
        let (d, span) = duration!("lame_duck_duration", v);
        // nats-server's minimum.
        if d < super::MIN_LAME_DUCK_DURATION {
            return Err(err(
                "lame_duck_duration",
                span,
                format!("invalid lame_duck_duration of {d:?}, minimum is 30 seconds"),
            ));
        }
        config.lame_duck_duration = d;
    }
    let grace_span = file.lame_duck_grace_period.as_ref().map(|v| v.span());
    if let Some(v) = file.lame_duck_grace_period {
        let (d, _) = duration!("lame_duck_grace_period", v);
        config.lame_duck_grace_period = d;
    }
    if let Some(span) = grace_span {
        if config.lame_duck_grace_period >= config.lame_duck_duration {
            return Err(err(
                "lame_duck_grace_period",
                span,
                format!(
                    "lame duck grace period ({:?}) should be strictly lower than lame duck \
                     duration ({:?})",
                    config.lame_duck_grace_period, config.lame_duck_duration
                ),
            ));
        }
    }
    // Cross-key rule from nats-server: a message must fit in a client's pending buffer.
    if config.max_payload > config.max_pending {
        let at = max_payload_span.map_or(String::new(), |s| format!("{}: ", locate(s)));
        return Err(ConfigError {
            message: format!(
                "{at}key `max_payload`: max_payload ({}) cannot be higher than \
                 max_pending ({})",
                config.max_payload, config.max_pending
            ),
        });
    }
    Ok(warnings)
}

/// Reads a `users` list (of `authorization` or of an account, named `key` in errors).
fn users(
    list: Option<Vec<Spanned<FileUser>>>,
    key: &str,
    seen: &mut std::collections::HashSet<String>,
    err: &dyn Fn(&str, std::ops::Range<usize>, String) -> ConfigError,
    locate: &dyn Fn(std::ops::Range<usize>) -> String,
    warnings: &mut Vec<String>,
) -> Result<Vec<User>, ConfigError> {
    let mut out = Vec::new();
    for u in list.unwrap_or_default() {
        let uspan = u.span();
        let u = u.into_inner();
        // Refused rather than ignored: an nkey user would be locked out, and a user limited
        // to other connection types would be let in.
        if let Some(v) = &u.nkey {
            return Err(ConfigError {
                message: format!(
                    "{}: \"nkey\" (nkeys) is not supported by beaver yet",
                    locate(v.span())
                ),
            });
        }
        if let Some(v) = &u.allowed_connection_types {
            return Err(ConfigError {
                message: format!(
                    "{}: \"allowed_connection_types\" is not supported by beaver yet",
                    locate(v.span())
                ),
            });
        }
        let (Some(user), Some(password)) = (u.user, u.password) else {
            return Err(err(
                key,
                uspan,
                "each user needs `user` and `password`".into(),
            ));
        };
        let permissions = u.permissions.map(|p| {
            let (p, warning) = p.into_permissions(locate);
            warnings.extend(warning);
            p
        });
        if let Some(p) = &permissions {
            check_permissions(p).map_err(|m| err(key, uspan.clone(), m))?;
        }
        if user.is_empty() {
            return Err(err(key, uspan, "`user` is empty".into()));
        }
        // nats-server's words.
        if !seen.insert(user.clone()) {
            return Err(err(key, uspan, format!("Duplicate user {user:?} detected")));
        }
        out.push(User {
            user,
            password,
            permissions,
        });
    }
    Ok(out)
}
