//! Authentication: who may connect, checked at each `CONNECT` (nats-server's
//! `checkAuthentication` for clients, in its order).
//!
//! - **Users** (`authorization.users`, and the `users` of each account): the `user` in
//!   `CONNECT` picks the entry (or, with no credentials at all, `no_auth_user` does), then
//!   its password is compared. Users of `authorization` are in the global account `$G`,
//!   those of an account in that account.
//! - **Token** (`token`, `--auth`): `auth_token` is compared.
//! - **Single user** (`user`/`password`, `--user`/`--pass`): both compared.
//!
//! Secrets that look like bcrypt hashes (`$2a$`, `$2b$`, `$2x$`, `$2y$` and a two-digit cost,
//! nats-server's test) are checked with bcrypt; plain ones are compared in constant time.
//! Neither is ever logged. The outcome is a [`Login`]: the authorized user's name (shown by
//! `/connz?auth=1`), the [`Account`] the client is in, and, for users with permissions, the
//! compiled [`Permissions`].

pub mod permissions;
pub mod tls;

pub use permissions::{PermissionSet, Permissions, PubCache};

use crate::account::{Account, Accounts};
use crate::config::Config;
use crate::protocol::ConnectOptions;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Duration;

/// A configured password or token (of a client, or of a route: `cluster.authorization`).
#[derive(Clone)]
pub(crate) enum Secret {
    /// A bcrypt hash, checked with `bcrypt::verify`.
    Bcrypt(String),
    /// Plain text, compared in constant time.
    Plain(Vec<u8>),
}

impl Secret {
    /// A secret as configured: a bcrypt hash (nats-server's `isBcrypt`), or plain text.
    pub(crate) fn new(s: &str) -> Secret {
        if is_bcrypt(s) {
            Secret::Bcrypt(s.to_owned())
        } else {
            Secret::Plain(s.as_bytes().to_vec())
        }
    }

    /// Whether `given` is this secret: bcrypt's check, or a constant-time comparison.
    pub(crate) fn verify(&self, given: &str) -> bool {
        match self {
            // A malformed hash is an error: not a match.
            Secret::Bcrypt(hash) => bcrypt::verify(given, hash).unwrap_or(false),
            Secret::Plain(p) => constant_time_eq(p, given.as_bytes()),
        }
    }

    fn is_plain(&self) -> bool {
        matches!(self, Secret::Plain(_))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// nats-server's `isBcrypt`: `^\$2[abxy]\$\d{2}\$.*`.
pub fn is_bcrypt(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 7
        && b[0] == b'$'
        && b[1] == b'2'
        && matches!(b[2], b'a' | b'b' | b'x' | b'y')
        && b[3] == b'$'
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
        && b[6] == b'$'
}

/// Compares two byte strings in time that depends only on their lengths, never on where
/// they differ (the length of a configured secret is not treated as secret, as in Go's
/// `subtle.ConstantTimeCompare`).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // `black_box` keeps the optimiser from turning the loop into an early exit.
    std::hint::black_box(diff) == 0
}

/// One configured user.
#[derive(Debug)]
struct UserEntry<S> {
    name: String,
    password: Secret,
    permissions: Option<Arc<Permissions>>,
    /// The account the user logs in to.
    account: Arc<Account<S>>,
}

/// How clients authenticate. Every mode but `Users` logs in to the global account.
#[derive(Debug)]
enum Mode<S> {
    /// No authentication.
    None,
    /// `auth_token` must match.
    Token(Secret),
    /// `user` and `pass` must match.
    Single { user: String, password: Secret },
    /// `user` picks an entry, `pass` must match its password.
    Users {
        users: FxHashMap<String, Arc<UserEntry<S>>>,
        no_auth_user: Option<String>,
    },
}

/// The server's authentication settings, compiled once at start (see the module docs).
#[derive(Debug)]
pub struct Authenticator<S> {
    mode: Mode<S>,
    timeout: Duration,
    /// `$G`: the account of every login but those of account users.
    global: Arc<Account<S>>,
}

/// A successful authentication.
#[derive(Debug, Clone)]
pub struct Login<S> {
    /// The authorized user's name (nats-server's `getRawAuthUser`: the user name, or the
    /// token for token authentication; empty when no authentication is configured).
    pub user: String,
    /// The user's permissions; `None` allows everything.
    pub permissions: Option<Arc<Permissions>>,
    /// The account the client is in from now on (`$G` unless the user is an account's).
    pub account: Arc<Account<S>>,
}

/// A failed authentication: what nats-server logs (`authentication error`, with
/// ` - User "name"` when users are configured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthError(pub String);

impl<S> Authenticator<S> {
    /// Compiles the `authorization` settings, the accounts' users and `no_auth_user` of
    /// `config`; `accounts` is the server's registry (built from the same `config`).
    pub fn new(config: &Config, accounts: &Accounts<S>) -> Authenticator<S> {
        let global = accounts.global().clone();
        let auth = config.authorization.as_ref().filter(|a| a.is_enabled());
        let timeout = auth.map_or(crate::config::DEFAULT_AUTH_TIMEOUT, |a| {
            a.effective_timeout()
        });
        let entry = |u: &crate::config::User, account: &Arc<Account<S>>| {
            let entry = UserEntry {
                name: u.user.clone(),
                password: Secret::new(&u.password),
                permissions: u
                    .permissions
                    .as_ref()
                    .map(|p| Arc::new(Permissions::new(p))),
                account: account.clone(),
            };
            (u.user.clone(), Arc::new(entry))
        };
        let mut users: FxHashMap<String, Arc<UserEntry<S>>> = auth
            .iter()
            .flat_map(|a| a.users.iter())
            .map(|u| entry(u, &global))
            .collect();
        for a in &config.accounts {
            // The registry was built from the same configuration.
            let Some(account) = accounts.get(&a.name) else {
                continue;
            };
            users.extend(a.users.iter().map(|u| entry(u, account)));
        }
        let mode = if !users.is_empty() {
            Mode::Users {
                users,
                no_auth_user: config.no_auth_user.clone(),
            }
        } else if let Some(a) = auth {
            if let Some(t) = &a.token {
                Mode::Token(Secret::new(t))
            } else {
                Mode::Single {
                    user: a.user.clone().unwrap_or_default(),
                    password: Secret::new(a.password.as_deref().unwrap_or("")),
                }
            }
        } else {
            Mode::None
        };
        Authenticator {
            mode,
            timeout,
            global,
        }
    }

    /// Whether clients must authenticate (`auth_required` in `INFO`).
    pub fn required(&self) -> bool {
        !matches!(self.mode, Mode::None)
    }

    /// How long a client has to send a valid `CONNECT`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether some configured password is plain text (nats-server warns about it at
    /// start-up; tokens are not passwords there).
    pub fn has_plain_passwords(&self) -> bool {
        match &self.mode {
            Mode::None => false,
            // nats-server's `checkAuthforWarnings` looks at passwords only, not tokens.
            Mode::Token(_) => false,
            Mode::Single { password, .. } => password.is_plain(),
            Mode::Users { users, .. } => users.values().any(|u| u.password.is_plain()),
        }
    }

    /// The `no_auth_user`'s login, for a client whose first operation is not `CONNECT`
    /// (nats-server lets it in as that user).
    pub fn no_auth_login(&self) -> Option<Login<S>> {
        match &self.mode {
            Mode::Users {
                users,
                no_auth_user: Some(name),
            } => users.get(name).map(|u| login_of(u)),
            _ => None,
        }
    }

    /// What nats-server logs when `user` (as given by the client) is refused:
    /// `authentication error`, with ` - User "name"` when users are configured.
    pub fn error_message(&self, user: &str) -> String {
        match &self.mode {
            Mode::Users { .. } => {
                format!(
                    "authentication error - User {}",
                    crate::protocol::go_quote(user.as_bytes())
                )
            }
            _ => "authentication error".into(),
        }
    }

    /// Checks the credentials of a `CONNECT`.
    pub fn authenticate(&self, opts: &ConnectOptions) -> Result<Login<S>, AuthError> {
        match &self.mode {
            Mode::None => Ok(self.global_login(String::new())),
            Mode::Token(token) => {
                if token.verify(&opts.auth_token) {
                    Ok(self.global_login(opts.auth_token.clone()))
                } else {
                    Err(AuthError("authentication error".into()))
                }
            }
            Mode::Single { user, password } => {
                // Both compared, so a wrong user takes as long as a wrong password.
                let user_ok = constant_time_eq(user.as_bytes(), opts.user.as_bytes());
                let pass_ok = password.verify(&opts.pass);
                if user_ok && pass_ok {
                    Ok(self.global_login(user.clone()))
                } else {
                    Err(AuthError("authentication error".into()))
                }
            }
            Mode::Users {
                users,
                no_auth_user,
            } => {
                let no_credentials =
                    opts.user.is_empty() && opts.pass.is_empty() && opts.auth_token.is_empty();
                if no_credentials {
                    if let Some(u) = no_auth_user.as_ref().and_then(|n| users.get(n)) {
                        return Ok(login_of(u));
                    }
                }
                let fail = || AuthError(self.error_message(&opts.user));
                let Some(u) = users.get(&opts.user) else {
                    return Err(fail());
                };
                if u.password.verify(&opts.pass) {
                    Ok(login_of(u))
                } else {
                    Err(fail())
                }
            }
        }
    }
}

impl<S> Authenticator<S> {
    /// A login to `$G` without permissions.
    fn global_login(&self, user: String) -> Login<S> {
        Login {
            user,
            permissions: None,
            account: self.global.clone(),
        }
    }

    /// The login of a client that has not authenticated (yet): `$G`, no user.
    pub fn anonymous(&self) -> Login<S> {
        self.global_login(String::new())
    }
}

fn login_of<S>(u: &UserEntry<S>) -> Login<S> {
    Login {
        user: u.name.clone(),
        permissions: u.permissions.clone(),
        account: u.account.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(user: &str, pass: &str, token: &str) -> ConnectOptions {
        ConnectOptions {
            user: user.into(),
            pass: pass.into(),
            auth_token: token.into(),
            ..ConnectOptions::default()
        }
    }

    #[test]
    fn bcrypt_prefixes() {
        assert!(is_bcrypt("$2a$11$abc"));
        assert!(is_bcrypt("$2b$04$abc"));
        assert!(!is_bcrypt("$2c$11$abc"));
        assert!(!is_bcrypt("$2a$1$abc"));
        assert!(!is_bcrypt("plain"));
    }

    #[test]
    fn constant_time() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    /// The authenticator of `config`, over the server's account registry.
    fn authenticator(config: &Config) -> Authenticator<crate::account::tests::Sub> {
        let accounts = Accounts::new(config.accounts.iter().map(|a| a.name.as_str()));
        Authenticator::new(config, &accounts)
    }

    #[test]
    fn modes() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let config = Config::from_toml(&format!(
            "no_auth_user = \"bob\"\n[authorization]\nusers = [{{ user = \"alice\", password = \
             \"{hash}\" }}, {{ user = \"bob\", password = \"pw\", permissions = {{ publish = \
             [\"x\"] }} }}]\n"
        ))
        .unwrap();
        let a = authenticator(&config);
        assert!(a.required());
        assert_eq!(
            a.authenticate(&opts("alice", "s3cret", "")).unwrap().user,
            "alice"
        );
        assert_eq!(
            a.authenticate(&opts("alice", "nope", "")).unwrap_err().0,
            "authentication error - User \"alice\""
        );
        let bob = a.authenticate(&opts("", "", "")).unwrap();
        assert_eq!(bob.user, "bob");
        assert!(bob.permissions.is_some());
        assert!(a.authenticate(&opts("carol", "pw", "")).is_err());
        assert_eq!(a.no_auth_login().unwrap().user, "bob");

        let config = Config::from_toml("[authorization]\ntoken = \"t0k\"\n").unwrap();
        let a = authenticator(&config);
        assert!(a.authenticate(&opts("", "", "t0k")).is_ok());
        assert!(a.authenticate(&opts("", "", "t0")).is_err());
        // nats-server warns about plain-text passwords only, not tokens (issue 12, item 10;
        // tests/auth.rs checks it against nats-server).
        assert!(!a.has_plain_passwords());

        let a = authenticator(&Config::default());
        assert!(!a.required());
        assert!(a.authenticate(&opts("x", "y", "")).is_ok());
    }
}
