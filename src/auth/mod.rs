//! Authentication: who may connect, checked at each `CONNECT` (nats-server's
//! `checkAuthentication` for clients, in its order).
//!
//! - **Users** (`authorization.users`, and the `users` of each account): the `user` in
//!   `CONNECT` picks the entry (or, with no credentials at all, `no_auth_user` does), then
//!   its password is compared. Users of `authorization` are in the global account `$G`,
//!   those of an account in that account.
//! - **Nkey users** (entries of those lists with `nkey`): when any is configured, `INFO`
//!   carries a `nonce` (see [`Nonce`]); a `CONNECT` with `nkey` picks the entry, and its
//!   `sig` must be that key's ed25519 signature of the nonce (nats-server checks the nkey
//!   before the user name, and so does beaver).
//! - **Token** (`token`, `--auth`): `auth_token` is compared.
//! - **Single user** (`user`/`password`, `--user`/`--pass`): both compared.
//!
//! Secrets that look like bcrypt hashes (`$2a$`, `$2b$`, `$2x$`, `$2y$` and a two-digit cost,
//! nats-server's test) are checked with bcrypt; plain ones are compared in constant time.
//! Neither is ever logged. The outcome is a [`Login`]: the authorized user's name (shown by
//! `/connz?auth=1`), the [`Account`] the client is in, and, for users with permissions, the
//! compiled [`Permissions`].

pub mod operator;
pub mod permissions;
pub mod resolver;
pub mod sharing;
mod templates;
pub mod tls;

pub use operator::{JwtLogin, Peer, Trust};
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

/// How a configured user proves who it is.
enum Proof {
    /// The password (or its bcrypt hash) of a user with a name.
    Password(Secret),
    /// The public key of an nkey user: the signature of the nonce must verify with it
    /// (boxed: a key pair is several hundred bytes, a secret a pointer and two words).
    Nkey(Box<nkeys::KeyPair>),
}

impl std::fmt::Debug for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proof::Password(_) => f.write_str("Password([REDACTED])"),
            Proof::Nkey(k) => write!(f, "Nkey({})", k.public_key()),
        }
    }
}

/// One configured user.
#[derive(Debug)]
struct UserEntry<S> {
    /// The user name, or the public nkey of an nkey user (what `/connz` shows).
    name: String,
    proof: Proof,
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
    /// Operator mode: a user JWT, checked against the operators' chain of trust.
    Operator(Box<Trust<S>>),
    /// `nkey` picks an entry of `nkeys`, whose key must verify `sig`; otherwise `user`
    /// picks an entry of `users`, `pass` must match its password.
    Users {
        users: FxHashMap<String, Arc<UserEntry<S>>>,
        nkeys: FxHashMap<String, Arc<UserEntry<S>>>,
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
    /// In operator mode: the JWT's expiry and limits.
    pub jwt: Option<JwtLogin>,
}

/// A failed authentication: what nats-server logs (`authentication error`, with
/// ` - User "name"` when users are configured), and whether the refusal is the account's
/// connection limit (the client then gets nats-server's
/// `-ERR 'maximum account active connections exceeded'` instead of `Authorization
/// Violation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthError {
    /// The log line.
    pub message: String,
    /// The account's `limits.conn` was reached.
    pub account_full: bool,
}

impl AuthError {
    fn new(message: impl Into<String>) -> AuthError {
        AuthError {
            message: message.into(),
            account_full: false,
        }
    }
}

impl<S: crate::subjects::Subscriber> Authenticator<S> {
    /// Compiles the `authorization` settings, the accounts' users and `no_auth_user` of
    /// `config`; `accounts` is the server's registry (built from the same `config`).
    pub fn new(config: &Config, accounts: &Accounts<S>) -> Authenticator<S> {
        let global = accounts.global().clone();
        let auth = config.authorization.as_ref().filter(|a| a.is_enabled());
        let timeout = auth.map_or(crate::config::DEFAULT_AUTH_TIMEOUT, |a| {
            a.effective_timeout()
        });
        let compile = |p: &Option<crate::config::Permissions>| {
            p.as_ref().map(|p| Arc::new(Permissions::new(p)))
        };
        let entry = |u: &crate::config::User, account: &Arc<Account<S>>| {
            let entry = UserEntry {
                name: u.user.clone(),
                proof: Proof::Password(Secret::new(&u.password)),
                permissions: compile(&u.permissions),
                account: account.clone(),
            };
            (u.user.clone(), Arc::new(entry))
        };
        // The configuration was validated: every nkey is a user's public key.
        let nkey_entry = |u: &crate::config::NkeyUser, account: &Arc<Account<S>>| {
            let key = nkeys::KeyPair::from_public_key(&u.nkey).ok()?;
            let entry = UserEntry {
                name: u.nkey.clone(),
                proof: Proof::Nkey(Box::new(key)),
                permissions: compile(&u.permissions),
                account: account.clone(),
            };
            Some((u.nkey.clone(), Arc::new(entry)))
        };
        let mut users: FxHashMap<String, Arc<UserEntry<S>>> = auth
            .iter()
            .flat_map(|a| a.users.iter())
            .map(|u| entry(u, &global))
            .collect();
        let mut nkeys: FxHashMap<String, Arc<UserEntry<S>>> = auth
            .iter()
            .flat_map(|a| a.nkeys.iter())
            .filter_map(|u| nkey_entry(u, &global))
            .collect();
        for a in &config.accounts {
            // Added when new: a reload may add accounts.
            let account = accounts.get_or_add(&a.name);
            users.extend(a.users.iter().map(|u| entry(u, &account)));
            nkeys.extend(a.nkeys.iter().filter_map(|u| nkey_entry(u, &account)));
        }
        let mode = if let Some(trust) = Trust::new(config, accounts) {
            Mode::Operator(Box::new(trust))
        } else if !users.is_empty() || !nkeys.is_empty() {
            Mode::Users {
                users,
                nkeys,
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
}

impl<S> Authenticator<S> {
    /// Operator mode's chain of trust, `None` in the other modes.
    pub fn trust(&self) -> Option<&Trust<S>> {
        match &self.mode {
            Mode::Operator(t) => Some(t),
            _ => None,
        }
    }

    /// Whether clients must authenticate (`auth_required` in `INFO`).
    pub fn required(&self) -> bool {
        !matches!(self.mode, Mode::None)
    }

    /// Whether `INFO` carries a [`Nonce`] for the client to sign (nats-server's
    /// `nonceRequired`: some nkey user is configured).
    pub fn nonce_required(&self) -> bool {
        match &self.mode {
            Mode::Users { nkeys, .. } => !nkeys.is_empty(),
            Mode::Operator(_) => true,
            _ => false,
        }
    }

    /// How long a client has to send a valid `CONNECT`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether some configured password is plain text (nats-server warns about it at
    /// start-up; tokens are not passwords there).
    pub fn has_plain_passwords(&self) -> bool {
        match &self.mode {
            Mode::None | Mode::Operator(_) => false,
            // nats-server's `checkAuthforWarnings` looks at passwords only, not tokens.
            Mode::Token(_) => false,
            Mode::Single { password, .. } => password.is_plain(),
            Mode::Users { users, .. } => users
                .values()
                .any(|u| matches!(&u.proof, Proof::Password(p) if p.is_plain())),
        }
    }

    /// The `no_auth_user`'s login, for a client whose first operation is not `CONNECT`
    /// (nats-server lets it in as that user).
    pub fn no_auth_login(&self) -> Option<Login<S>> {
        match &self.mode {
            Mode::Users {
                users,
                no_auth_user: Some(name),
                ..
            } => users.get(name).map(|u| login_of(u)),
            _ => None,
        }
    }

    /// After a reload, whether a client that logged in with `opts` to `account` must go
    /// because its user moved (nats-server's `clientHasMovedToDifferentAccount`): its nkey
    /// or user name is no longer configured, or is now in another account. Such a client is
    /// closed without an `-ERR` (it reconnects, into the right account if any); one that
    /// sent neither stays for the normal check.
    pub fn moved(&self, opts: &ConnectOptions, account: &Account<S>) -> bool {
        let (users, nkeys) = match &self.mode {
            Mode::Users { users, nkeys, .. } => (Some(users), Some(nkeys)),
            _ => (None, None),
        };
        let entry = if !opts.nkey.is_empty() {
            nkeys.and_then(|m| m.get(&opts.nkey))
        } else if !opts.user.is_empty() {
            users.and_then(|m| m.get(&opts.user))
        } else {
            return false;
        };
        entry.is_none_or(|u| u.account.name != account.name)
    }

    /// What nats-server logs when a client with the options `opts` is refused
    /// (`authViolation`): `authentication error`, with ` - Nkey "U..."` when nkey users are
    /// configured, or else ` - User "name"` when users are.
    pub fn error_message(&self, opts: &ConnectOptions) -> String {
        let quote = |s: &str| crate::protocol::go_quote(s.as_bytes());
        match &self.mode {
            Mode::Users { nkeys, .. } if !nkeys.is_empty() => {
                format!("authentication error - Nkey {}", quote(&opts.nkey))
            }
            Mode::Users { .. } => {
                format!("authentication error - User {}", quote(&opts.user))
            }
            _ => "authentication error".into(),
        }
    }

    /// Checks the credentials of a `CONNECT` from `peer` (whose nonce is empty when its
    /// `INFO` carried none: then no nkey or JWT user can log in).
    pub fn authenticate(&self, opts: &ConnectOptions, peer: &Peer) -> Result<Login<S>, AuthError> {
        let nonce = peer.nonce;
        match &self.mode {
            Mode::Operator(trust) => trust.authenticate(opts, peer),
            Mode::None => Ok(self.global_login(String::new())),
            Mode::Token(token) => {
                if token.verify(&opts.auth_token) {
                    Ok(self.global_login(opts.auth_token.clone()))
                } else {
                    Err(AuthError::new("authentication error"))
                }
            }
            Mode::Single { user, password } => {
                // Both compared, so a wrong user takes as long as a wrong password.
                let user_ok = constant_time_eq(user.as_bytes(), opts.user.as_bytes());
                let pass_ok = password.verify(&opts.pass);
                if user_ok && pass_ok {
                    Ok(self.global_login(user.clone()))
                } else {
                    Err(AuthError::new("authentication error"))
                }
            }
            Mode::Users {
                users,
                nkeys,
                no_auth_user,
            } => {
                let fail = || AuthError::new(self.error_message(opts));
                // nats-server's order: an nkey first (when nkey users exist), then users.
                if !nkeys.is_empty() && !opts.nkey.is_empty() {
                    let Some(u) = nkeys.get(&opts.nkey) else {
                        return Err(fail());
                    };
                    return match &u.proof {
                        Proof::Nkey(key)
                            if !nonce.is_empty() && verify_sig(key, nonce, &opts.sig) =>
                        {
                            Ok(login_of(u))
                        }
                        _ => Err(fail()),
                    };
                }
                let no_credentials =
                    opts.user.is_empty() && opts.pass.is_empty() && opts.auth_token.is_empty();
                if no_credentials {
                    if let Some(u) = no_auth_user.as_ref().and_then(|n| users.get(n)) {
                        return Ok(login_of(u));
                    }
                }
                let Some(u) = users.get(&opts.user) else {
                    return Err(fail());
                };
                match &u.proof {
                    Proof::Password(p) if p.verify(&opts.pass) => Ok(login_of(u)),
                    _ => Err(fail()),
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
            jwt: None,
        }
    }

    /// The login of a client that has not authenticated (yet): `$G`, no user.
    pub fn anonymous(&self) -> Login<S> {
        self.global_login(String::new())
    }
}

/// What a client authenticated with: its `CONNECT` options and what the server knew of it
/// then. Kept (in `client::Client`) so that a reload can check the client again against the
/// new settings, as nats-server keeps each client's options. Never logged.
#[derive(Clone)]
pub struct Credentials {
    /// The `CONNECT` options (user, password, token, nkey, signature, JWT).
    pub opts: ConnectOptions,
    /// The nonce its `INFO` carried (empty: none).
    pub nonce: Vec<u8>,
    /// Its address.
    pub ip: std::net::IpAddr,
    /// Its connection type (`STANDARD`, `WEBSOCKET`).
    pub connection_type: &'static str,
}

impl Credentials {
    /// The [`Peer`] these credentials were presented by.
    pub fn peer(&self) -> Peer<'_> {
        Peer {
            nonce: &self.nonce,
            ip: self.ip,
            connection_type: self.connection_type,
        }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials([REDACTED])")
    }
}

/// Whether `sig` (base64, URL-safe without padding, or else standard: nats-server accepts
/// both) is `key`'s signature of `nonce`.
fn verify_sig(key: &nkeys::KeyPair, nonce: &[u8], sig: &str) -> bool {
    use base64::Engine;
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(sig)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(sig));
    decoded.is_ok_and(|sig| key.verify(nonce, &sig).is_ok())
}

/// The challenge a client signs to prove it holds an nkey: 11 random bytes from the OS, in
/// base64 URL-safe without padding (15 characters), sent as `INFO`'s `nonce` (nats-server's
/// `generateNonce`). One per connection, never reused.
#[derive(Clone, PartialEq, Eq)]
pub struct Nonce(String);

impl Nonce {
    /// A fresh nonce; `None` when the OS has no random bytes to give (the connection is then
    /// refused rather than given a guessable challenge).
    pub fn generate() -> Option<Nonce> {
        use base64::Engine;
        let mut raw = [0u8; 11];
        getrandom::getrandom(&mut raw).ok()?;
        Some(Nonce(
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw),
        ))
    }

    /// The nonce as sent in `INFO`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Nonce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Nonce({})", self.0)
    }
}

fn login_of<S>(u: &UserEntry<S>) -> Login<S> {
    Login {
        user: u.name.clone(),
        permissions: u.permissions.clone(),
        account: u.account.clone(),
        jwt: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client on the loopback interface, over TCP, that was sent `nonce`.
    fn peer(nonce: &[u8]) -> Peer<'_> {
        Peer {
            nonce,
            ip: std::net::Ipv4Addr::LOCALHOST.into(),
            connection_type: "STANDARD",
        }
    }

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
            a.authenticate(&opts("alice", "s3cret", ""), &peer(b""))
                .unwrap()
                .user,
            "alice"
        );
        assert_eq!(
            a.authenticate(&opts("alice", "nope", ""), &peer(b""))
                .unwrap_err()
                .message,
            "authentication error - User \"alice\""
        );
        let bob = a.authenticate(&opts("", "", ""), &peer(b"")).unwrap();
        assert_eq!(bob.user, "bob");
        assert!(bob.permissions.is_some());
        assert!(a
            .authenticate(&opts("carol", "pw", ""), &peer(b""))
            .is_err());
        assert_eq!(a.no_auth_login().unwrap().user, "bob");

        let config = Config::from_toml("[authorization]\ntoken = \"t0k\"\n").unwrap();
        let a = authenticator(&config);
        assert!(a.authenticate(&opts("", "", "t0k"), &peer(b"")).is_ok());
        assert!(a.authenticate(&opts("", "", "t0"), &peer(b"")).is_err());
        // nats-server warns about plain-text passwords only, not tokens (issue 12, item 10;
        // tests/auth.rs checks it against nats-server).
        assert!(!a.has_plain_passwords());

        let a = authenticator(&Config::default());
        assert!(!a.required());
        assert!(!a.nonce_required());
        assert!(a.authenticate(&opts("x", "y", ""), &peer(b"")).is_ok());
    }

    #[test]
    fn nkey_users() {
        let key = nkeys::KeyPair::new_user();
        let other = nkeys::KeyPair::new_user();
        let config = Config::from_toml(&format!(
            "[authorization]\nusers = [{{ nkey = \"{}\" }}, {{ user = \"a\", password = \"b\" }}]\n",
            key.public_key()
        ))
        .unwrap();
        let a = authenticator(&config);
        assert!(a.nonce_required());
        let nonce = Nonce::generate().unwrap();
        assert_eq!(nonce.as_str().len(), 15);
        let n = nonce.as_str().as_bytes();
        use base64::Engine;
        let sign =
            |k: &nkeys::KeyPair, e: &base64::engine::GeneralPurpose| e.encode(k.sign(n).unwrap());
        let with = |nkey: &str, sig: String| ConnectOptions {
            nkey: nkey.into(),
            sig,
            ..ConnectOptions::default()
        };
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let std = base64::engine::general_purpose::STANDARD;
        // Both encodings of the signature are accepted, as nats-server accepts them.
        for e in [&url, &std] {
            let login = a
                .authenticate(&with(&key.public_key(), sign(&key, e)), &peer(n))
                .unwrap();
            assert_eq!(login.user, key.public_key());
        }
        // Another key's signature, an unknown key, no signature, garbage, no nonce.
        let refused = [
            with(&key.public_key(), sign(&other, &url)),
            with(&other.public_key(), sign(&other, &url)),
            with(&key.public_key(), String::new()),
            with(&key.public_key(), "!!".into()),
        ];
        for o in &refused {
            assert_eq!(
                a.authenticate(o, &peer(n)).unwrap_err().message,
                format!("authentication error - Nkey {:?}", o.nkey)
            );
        }
        assert!(a
            .authenticate(&with(&key.public_key(), sign(&key, &url)), &peer(b""))
            .is_err());
        // The password users still log in.
        assert_eq!(
            a.authenticate(&opts("a", "b", ""), &peer(n)).unwrap().user,
            "a"
        );
    }
}
