//! Authentication, permissions and TLS settings: plain structs that any front end fills
//! (`Config.toml`'s `[authorization]` and `[tls]` tables, the command line, or a nats-server
//! configuration file), checked once by [`validate`].
//!
//! Names are nats-server's: `authorization { user, password, token, timeout, users }`,
//! `no_auth_user`, `permissions { publish { allow, deny }, subscribe { allow, deny } }`,
//! `tls { cert_file, key_file, ca_file, verify, timeout }`.

use crate::subjects::is_valid_subscription_subject;
use std::path::PathBuf;
use std::time::Duration;

/// nats-server's default authentication timeout (`AUTH_TIMEOUT`): 2 seconds.
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(2);
/// nats-server's default TLS handshake timeout (`TLS_TIMEOUT`): 2 seconds.
pub const DEFAULT_TLS_TIMEOUT: Duration = Duration::from_secs(2);

/// Who may connect (nats-server's `authorization` block). Exactly one way is used: a single
/// `user`/`password`, a `token`, or a list of `users`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Authorization {
    /// The single user's name (`user`, `--user`).
    pub user: Option<String>,
    /// The single user's password (`password`, `--pass`): plain text or a bcrypt hash
    /// (`$2a$`, `$2b$`, `$2x$`, `$2y$`).
    pub password: Option<String>,
    /// The token clients send as `auth_token` (`token`, `--auth`): plain or bcrypt.
    pub token: Option<String>,
    /// Users, each with an optional set of permissions (`users`).
    pub users: Vec<User>,
    /// Users known by their public nkey (`users` entries with `nkey`).
    pub nkeys: Vec<NkeyUser>,
    /// How long a client has to send a valid `CONNECT` (`timeout`, in seconds in the file).
    /// Default 2 s.
    pub timeout: Duration,
}

impl Authorization {
    /// Whether any credential is configured (otherwise clients need none).
    pub fn is_enabled(&self) -> bool {
        self.user.is_some()
            || self.token.is_some()
            || !self.users.is_empty()
            || !self.nkeys.is_empty()
    }

    /// The authentication timeout, with zero meaning the default 2 s.
    pub fn effective_timeout(&self) -> Duration {
        if self.timeout.is_zero() {
            DEFAULT_AUTH_TIMEOUT
        } else {
            self.timeout
        }
    }
}

/// One account of the `accounts` block (nats-server's `accounts { NAME { users [...] } }`):
/// a name and the users that log in to it. Subjects do not cross accounts: a message
/// published by a user of one account reaches only subscribers of the same account. Users
/// of `authorization.users` (and clients when no authentication is configured) are in the
/// global account, `$G`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccountConfig {
    /// The account's name (the key in `accounts`); `$G` is reserved.
    pub name: String,
    /// Its users (`users`), authenticated like those of `authorization.users`.
    pub users: Vec<User>,
    /// Its nkey users (`users` entries with `nkey`).
    pub nkeys: Vec<NkeyUser>,
    /// Permissions of its users that have none of their own (`default_permissions`).
    pub default_permissions: Option<Permissions>,
    /// What it shares (`exports`).
    pub exports: Vec<super::sharing::Export>,
    /// What it takes from others (`imports`).
    pub imports: Vec<super::sharing::Import>,
}

/// One entry of `authorization.users` or of an account's `users`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct User {
    /// Name (`user`).
    pub user: String,
    /// Password (`password`): plain text or a bcrypt hash.
    pub password: String,
    /// What the user may publish and subscribe to; `None` allows everything.
    pub permissions: Option<Permissions>,
}

/// One entry of `users` with an `nkey` instead of a name and password (nats-server's
/// `NkeyUser`): the client proves it holds the key by signing `INFO`'s `nonce` (the sig in
/// `CONNECT`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NkeyUser {
    /// The user's public key: 56 characters of base32 starting with `U`.
    pub nkey: String,
    /// What the user may publish and subscribe to; `None` allows everything.
    pub permissions: Option<Permissions>,
}

/// A user's publish and subscribe permissions (nats-server's `Permissions`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Permissions {
    /// Subjects the user may publish to; `None` allows all.
    pub publish: Option<SubjectPermission>,
    /// Subjects the user may subscribe to; `None` allows all. An entry may name a queue
    /// group after a space (`"foo.* workers"`): it then allows (or denies) that subject only
    /// for subscriptions in that queue group.
    pub subscribe: Option<SubjectPermission>,
    /// Publishing to the reply subjects of received messages (`allow_responses`), even where
    /// `publish` does not allow it; with no `publish.allow`, only that is allowed.
    pub response: Option<ResponsePermission>,
}

/// nats-server's default `allow_responses` limits: one response per request, within 2
/// minutes (`DEFAULT_ALLOW_RESPONSE_MAX_MSGS`, `DEFAULT_ALLOW_RESPONSE_EXPIRATION`).
pub const DEFAULT_RESPONSE_MAX: usize = 1;
/// See [`DEFAULT_RESPONSE_MAX`].
pub const DEFAULT_RESPONSE_EXPIRES: Duration = Duration::from_secs(120);

/// `allow_responses`: how many responses a received message's reply subject takes, and for
/// how long (`true` means the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponsePermission {
    /// Responses per reply subject (`max`).
    pub max: usize,
    /// For how long after the message arrived (`expires`).
    pub expires: Duration,
}

impl Default for ResponsePermission {
    fn default() -> Self {
        ResponsePermission {
            max: DEFAULT_RESPONSE_MAX,
            expires: DEFAULT_RESPONSE_EXPIRES,
        }
    }
}

/// Allowed and denied subjects, wildcards included (nats-server's `SubjectPermission`).
/// An empty `allow` allows everything that `deny` does not deny; deny wins over allow.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubjectPermission {
    /// Subjects allowed.
    pub allow: Vec<String>,
    /// Subjects denied.
    pub deny: Vec<String>,
}

/// TLS for client connections (nats-server's `tls` block and `--tls*` flags).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tls {
    /// The server's certificate chain, PEM (`cert_file`, `--tlscert`).
    pub cert_file: PathBuf,
    /// The server's private key, PEM (`key_file`, `--tlskey`).
    pub key_file: PathBuf,
    /// CA certificates, PEM, that client certificates must chain to (`ca_file`,
    /// `--tlscacert`).
    pub ca_file: Option<PathBuf>,
    /// Require a client certificate signed by `ca_file` (`verify`, `--tlsverify`).
    pub verify: bool,
    /// Longest TLS handshake (`timeout`, seconds in the file); zero means the default 2 s.
    pub timeout: Duration,
}

impl Tls {
    /// The handshake timeout, with zero meaning the default 2 s.
    pub fn effective_timeout(&self) -> Duration {
        if self.timeout.is_zero() {
            DEFAULT_TLS_TIMEOUT
        } else {
            self.timeout
        }
    }
}

/// TLS on routes (nats-server's `cluster { tls { ... } }`). Routes use mutual TLS whatever
/// `verify` says, as nats-server's: each side presents `tls.cert_file` and verifies the
/// other's certificate against `tls.ca_file` (required), so a route certificate must be
/// good for both server and client authentication (both extended key usages, or none).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RouteTls {
    /// The certificate, key, CA and handshake timeout (`verify` is implied).
    pub tls: Tls,
    /// A dialling server does not verify the certificate of the server it dials (`insecure`;
    /// nats-server warns that this is not for production). Its own certificate is still
    /// verified by the other side.
    pub insecure: bool,
}

/// Which interest crosses routes (nats-server's `cluster { permissions { import, export } }`,
/// its `RoutePermissions`). Both only filter interest, as nats-server's: a message crosses a
/// route only where the interest did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoutePermissions {
    /// Subjects this server takes messages on from other servers: its local interest in
    /// other subjects is not sent to routes (nats-server's `canImport`, checked as a
    /// publish permission on the subscription's subject). `None` imports everything.
    pub import: Option<SubjectPermission>,
    /// Subjects this server sends messages on to other servers: their interest (`RS+`) in
    /// other subjects is ignored (nats-server's `canExport`, checked as a subscribe
    /// permission), and a wildcard interest covering a denied subject does not get its
    /// messages. `None` exports everything.
    pub export: Option<SubjectPermission>,
}

impl RoutePermissions {
    /// As a user's permissions, which is how nats-server checks them: `import` is the
    /// publish side, `export` the subscribe side.
    pub fn as_user_permissions(&self) -> Permissions {
        Permissions {
            publish: self.import.clone(),
            subscribe: self.export.clone(),
            response: None,
        }
    }
}

/// Whether `key` is a valid public nkey of a user (`U...`, nats-server's
/// `nkeys.IsValidPublicUserKey`: the prefix, the base32 and the checksum).
pub fn is_public_user_key(key: &str) -> bool {
    key.starts_with('U') && nkeys::KeyPair::from_public_key(key).is_ok()
}

/// Checks the rules that span keys (the same ones nats-server enforces), whatever filled
/// the settings. The error names the keys.
pub(crate) fn validate(config: &super::Config) -> Result<(), String> {
    if let Some(a) = &config.authorization {
        if a.user.is_some() && !a.users.is_empty() {
            return Err(
                "authorization: can not have a single user/pass (`user`) and a users array \
                 (`users`)"
                    .into(),
            );
        }
        if a.token.is_some() && (a.user.is_some() || !a.users.is_empty()) {
            return Err(
                "authorization: can not have a token (`token`) and a user (`user` or `users`)"
                    .into(),
            );
        }
        if a.password.is_some() && a.user.is_none() {
            return Err("authorization: `password` (--pass) needs a `user` (--user)".into());
        }
        if !config.accounts.is_empty() {
            // nats-server's words.
            if a.token.is_some() {
                return Err("authorization: can not have a token (`token`) and accounts".into());
            }
            if a.user.is_some() {
                return Err(
                    "authorization: can not have a single user/pass (`user`) and accounts".into(),
                );
            }
        }
    }
    // User names are unique across `authorization.users` and every account's `users`.
    let mut seen = std::collections::HashSet::new();
    let auth_users = config
        .authorization
        .iter()
        .flat_map(|a| a.users.iter().enumerate())
        .map(|(i, u)| (format!("authorization.users[{i}]"), u));
    let account_users = config.accounts.iter().flat_map(|acc| {
        acc.users
            .iter()
            .enumerate()
            .map(move |(i, u)| (format!("accounts.{}.users[{i}]", acc.name), u))
    });
    for (at, u) in auth_users.chain(account_users) {
        if u.user.is_empty() {
            return Err(format!("{at}: `user` is empty"));
        }
        if !seen.insert(u.user.as_str()) {
            return Err(format!("{at}: Duplicate user {:?} detected", u.user));
        }
        if let Some(p) = &u.permissions {
            check_permissions(p).map_err(|e| format!("{at} (user {:?}): {e}", u.user))?;
        }
    }
    // Nkeys are unique too, each a user's public key (nats-server's words).
    let mut seen_nkeys = std::collections::HashSet::new();
    let auth_nkeys = config
        .authorization
        .iter()
        .flat_map(|a| a.nkeys.iter().enumerate())
        .map(|(i, u)| (format!("authorization.users[{i}]"), u));
    let account_nkeys = config.accounts.iter().flat_map(|acc| {
        acc.nkeys
            .iter()
            .enumerate()
            .map(move |(i, u)| (format!("accounts.{}.users[{i}]", acc.name), u))
    });
    for (at, u) in auth_nkeys.chain(account_nkeys) {
        if !is_public_user_key(&u.nkey) {
            return Err(format!("{at}: Not a valid public nkey for a user"));
        }
        if !seen_nkeys.insert(u.nkey.as_str()) {
            return Err(format!("{at}: Duplicate nkey {:?} detected", u.nkey));
        }
        if let Some(p) = &u.permissions {
            check_permissions(p).map_err(|e| format!("{at} (nkey {:?}): {e}", u.nkey))?;
        }
    }
    for acc in &config.accounts {
        if acc.name == super::GLOBAL_ACCOUNT {
            return Err(format!("accounts: {:?} is a Reserved Account", acc.name));
        }
        if let Some(p) = &acc.default_permissions {
            check_permissions(p)
                .map_err(|e| format!("accounts.{}.default_permissions: {e}", acc.name))?;
        }
    }
    if let Some(ws) = &config.websocket {
        ws.check_block()?;
        let has_users = !seen.is_empty() || !seen_nkeys.is_empty();
        ws.check_auth(has_users, &|name| seen.contains(name))?;
    }
    super::operator::validate(config)?;
    super::sharing::validate(config)?;
    if let Some(name) = &config.no_auth_user {
        if !seen.contains(name.as_str()) {
            return Err(format!(
                "no_auth_user: {name:?} not present as user in authorization block or account \
                 configuration"
            ));
        }
    }
    if let Some(t) = &config.tls {
        if t.cert_file.as_os_str().is_empty() || t.key_file.as_os_str().is_empty() {
            return Err(
                "tls: `cert_file` (--tlscert) and `key_file` (--tlskey) are required".into(),
            );
        }
        if t.verify && t.ca_file.is_none() {
            return Err("tls: `verify` (--tlsverify) needs `ca_file` (--tlscacert)".into());
        }
    }
    Ok(())
}

/// Every subject must be a valid subscription subject; subscribe entries may carry a queue
/// group after one space.
pub(crate) fn check_permissions(p: &Permissions) -> Result<(), String> {
    for (what, perm, queues) in [
        ("publish", &p.publish, false),
        ("subscribe", &p.subscribe, true),
    ] {
        let Some(perm) = perm else { continue };
        for (list, entries) in [("allow", &perm.allow), ("deny", &perm.deny)] {
            for entry in entries {
                let subject = if queues {
                    split_queue(entry).0
                } else {
                    entry.as_str()
                };
                if !is_valid_subscription_subject(subject.as_bytes()) || subject.contains(' ') {
                    return Err(format!(
                        "permissions.{what}.{list}: invalid subject {entry:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Splits a subscribe permission entry into its subject and optional queue group
/// (`"foo.* workers"`), as nats-server does.
pub fn split_queue(entry: &str) -> (&str, Option<&str>) {
    let entry = entry.trim();
    match entry.split_once(char::is_whitespace) {
        Some((subject, queue)) if !queue.trim().is_empty() => (subject, Some(queue.trim())),
        _ => (entry, None),
    }
}
