//! Operator mode: the chain of trust of decentralized JWT authentication (nats-server's
//! `processClientOrLeafAuthentication` with `trustedKeys`, in its order).
//!
//! ```text
//! operator JWT (configured) ──signs──▶ account JWTs (resolver_preload) ──sign──▶ user JWTs
//!   its key and signing keys          its key and signing keys              (sent in CONNECT)
//! ```
//!
//! At start, [`Trust::new`] keeps the operators' keys (their own, unless
//! `strict_signing_key_usage`, and their signing keys) and every account whose JWT one of
//! them signed: the preloaded ones (`resolver_preload`) and, with the full resolver, those
//! of its directory ([`super::resolver::DirStore`], which the preloads are written to); an
//! account signed by no trusted key is left out with an error in the log, so its users
//! cannot log in. With the full resolver, [`Trust::update`] takes a pushed account JWT
//! (`$SYS.REQ.CLAIMS.UPDATE`) into the directory and the trust at once, and
//! [`Trust::evictions`] says which of the account's clients the new JWT no longer lets in. At each `CONNECT`, [`Trust::authenticate`] checks the
//! user JWT: signature, kind and expiry ([`crate::jwt::decode`]), the connection type, the
//! account (`issuer_account`, or the issuer itself) and that the issuer is the account or one
//! of its signing keys, the account's expiry, bearer tokens, the signature of the nonce by
//! the user's key, revocations, source networks. Clients only ever see
//! `Authorization Violation`; the reason goes to the debug log, as nats-server's.

use super::resolver::{DirStore, Saved};
use super::{AuthError, Login, Permissions};
use crate::account::{Account, Accounts};
use crate::config::operator::Resolver;
use crate::config::Config;
use crate::jwt::{self, Claims, SigningKey};
use crate::subjects::Subscriber;
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the server knows of the client being authenticated, besides its `CONNECT`.
#[derive(Debug, Clone, Copy)]
pub struct Peer<'a> {
    /// The nonce its `INFO` carried (empty: none was sent).
    pub nonce: &'a [u8],
    /// Its address (for the user JWT's `src`).
    pub ip: IpAddr,
    /// Its connection type, as user JWTs name them (`STANDARD`, `WEBSOCKET`).
    pub connection_type: &'static str,
}

/// One trusted account: its claims, its place in the registry, and its connection count.
struct TrustedAccount<S> {
    claims: Claims<jwt::Account>,
    /// The JWT as received (for `/accountz`'s account detail).
    jwt: String,
    account: Arc<Account<S>>,
    /// Clients logged in to it now (for `limits.conn`), counted by [`AccountSeat`].
    connections: Arc<AtomicI64>,
    /// Its default permissions, compiled (`None`: everything allowed).
    default_permissions: Option<Arc<Permissions>>,
}

/// A client's place in its account's `limits.conn`: given back when dropped (the connection
/// ends).
#[derive(Debug)]
pub struct AccountSeat(Arc<AtomicI64>);

impl Drop for AccountSeat {
    fn drop(&mut self) {
        // Relaxed: a counter; the admission decision tolerates a race of one connection, as
        // nats-server's (it counts under the account's lock but checks before registering).
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The operators' trust, and the accounts it covers (see the module docs).
pub struct Trust<S> {
    /// Keys that may sign account JWTs.
    operator_keys: Vec<String>,
    /// The first operator's own key when `strict_signing_key_usage` forbids it to sign
    /// accounts (pushes signed by it get nats-server's error).
    strict_operator: Option<String>,
    /// The trusted accounts by public key. A `parking_lot` read-write lock: every login
    /// reads it, a push replaces one entry. A leaf lock: nothing is taken under it (the
    /// account registry's lock, for a pushed account that is new, is taken and released
    /// before).
    accounts: RwLock<FxHashMap<String, Arc<TrustedAccount<S>>>>,
    /// The full resolver's directory, `None` with the memory resolver.
    store: Option<DirStore>,
    /// `resolver_pinned_accounts` with the system account: the only accounts whose users
    /// may log in; empty: all.
    pinned: Vec<String>,
    /// Held by a push from its write to the directory to its entry in `accounts`: two
    /// pushes of one account must leave in force the JWT the directory keeps (the last
    /// written), not whichever finished last. Taken before the directory's lock, the
    /// account registry's and `accounts`.
    pushes: parking_lot::Mutex<()>,
}

impl<S> std::fmt::Debug for Trust<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("operator_keys", &self.operator_keys)
            .field("accounts", &self.accounts.read().keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a push of an account JWT (`$SYS.REQ.CLAIMS.UPDATE`) did, in nats-server's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsUpdate {
    /// The account concerned (`n/a` when the JWT could not be read).
    pub account: String,
    /// `Ok(message)` (`jwt updated`), or `Err((message, error))`
    /// (`jwt update resulted in error` or `jwt validation failed`, and why).
    pub outcome: Result<String, (String, String)>,
    /// Whether the account's trust changed (its clients are then checked again with
    /// [`Trust::evictions`]).
    pub changed: bool,
    /// Whether what it shares changed: its exports, imports or signing keys (the import
    /// bridges are then rebuilt; other pushes leave them alone, as nats-server leaves the
    /// imports of other accounts).
    pub sharing_changed: bool,
}

/// A client that an account's new JWT no longer lets in, and how nats-server closes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Its user was revoked: `-ERR 'User Authentication Revoked'`.
    Revoked,
    /// A bearer token the account now refuses: `-ERR 'Authorization Violation'`.
    BearerRefused,
    /// The signing key that issued its user is gone: closed without an `-ERR`.
    SignerRemoved,
    /// Over the account's new connection limit (the oldest go first):
    /// `-ERR 'maximum account active connections exceeded'`.
    TooManyConnections,
}

/// The current time in Unix seconds.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl<S: Subscriber> Trust<S> {
    /// The operators and accounts of `config` (validated: every JWT decodes); `accounts` is
    /// the registry, to which each trusted account is added. `None` when `config` is not in
    /// operator mode.
    pub fn new(config: &Config, accounts: &Accounts<S>) -> Option<Trust<S>> {
        if config.operators.is_empty() {
            return None;
        }
        let mut operator_keys = Vec::new();
        let mut strict_operator = None;
        for (i, token) in config.operators.iter().enumerate() {
            let Ok(op) = jwt::decode::<jwt::Operator>(token) else {
                continue;
            };
            if !op.nats.strict_signing_key_usage {
                operator_keys.push(op.sub.clone());
            } else if i == 0 {
                strict_operator = Some(op.sub.clone());
            }
            operator_keys.extend(op.nats.signing_keys.iter().cloned());
        }
        let store = match &config.resolver {
            Some(Resolver::Full(dir)) => match DirStore::open(dir) {
                Ok(store) => Some(store),
                Err(e) => {
                    log::error!("{e}");
                    None
                }
            },
            _ => None,
        };
        let mut jwts = config.resolver_preload.clone();
        if let Some(store) = &store {
            // Preloads go to the directory unless it holds a newer JWT of the account
            // (nats-server's `saveIfNewer`); then the directory is the truth.
            let iat = |t: &str| jwt::decode::<jwt::Account>(t).ok().map(|c| c.iat);
            for (key, token) in &jwts {
                if let Err(e) = store.save_if_newer(key, token, iat) {
                    log::error!("Account JWT of {key}: could not store the preload: {e}");
                }
            }
            jwts = store.load_all();
            log::info!(
                "Managing all jwt in exclusive directory {}",
                store.dir().display()
            );
        }
        let mut pinned = config.resolver_pinned_accounts.clone();
        if !pinned.is_empty() {
            // The system account is always pinned (nats-server adds it).
            pinned.extend(config.system_account_name());
        }
        let trust = Trust {
            pinned,
            operator_keys,
            strict_operator,
            accounts: RwLock::new(FxHashMap::default()),
            store,
            pushes: parking_lot::Mutex::new(()),
        };
        for (key, token) in &jwts {
            match trust.trusted(key, token, accounts) {
                Ok(t) => {
                    trust.accounts.write().insert(key.clone(), Arc::new(t));
                }
                Err(e) => log::error!("{e}"),
            }
        }
        Some(trust)
    }

    /// Account `key`'s JWT `token`, checked against the operators (the reason of a refusal
    /// is an error for the log), with its place in `accounts` (added if new).
    fn trusted(
        &self,
        key: &str,
        token: &str,
        accounts: &Accounts<S>,
    ) -> Result<TrustedAccount<S>, String> {
        let claims = jwt::decode::<jwt::Account>(token)
            .map_err(|e| format!("Account JWT of {key} not valid: {e}"))?;
        if claims.sub != key {
            return Err(format!("Account JWT of {key} is about {}", claims.sub));
        }
        if !self.operator_keys.contains(&claims.iss) {
            return Err(format!(
                "Account JWT of {key} not signed by a trusted operator: ignored"
            ));
        }
        // nats-server refuses the users of an account whose imports do not validate.
        jwt::sharing::validate_imports(key, &claims.nats.imports)
            .and_then(|()| jwt::sharing::validate_limits(&claims.nats))
            .map_err(|e| format!("Account JWT of {key} has validation issues: {e}"))?;
        if claims.expired(unix_now()) {
            // nats-server loads it and refuses its users; so does beaver (at login).
            log::warn!("Account JWT of {key} has expired");
        }
        if claims.nats.mappings.is_some() {
            log::warn!("Account {key}: mappings are not supported by beaver yet: ignored");
        }
        let defaults = &claims.nats.default_permissions;
        let default_permissions =
            (!defaults.is_empty()).then(|| Arc::new(Permissions::new(&to_config(defaults))));
        // The connection count carries over from the account's previous JWT.
        let connections = self
            .accounts
            .read()
            .get(key)
            .map_or_else(|| Arc::new(AtomicI64::new(0)), |t| t.connections.clone());
        Ok(TrustedAccount {
            jwt: token.to_owned(),
            account: accounts.get_or_add(key),
            connections,
            default_permissions,
            claims,
        })
    }

    /// Takes a pushed account JWT (`$SYS.REQ.CLAIMS.UPDATE`, or
    /// `$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE` when `key` is given), in nats-server's order:
    /// the JWT must decode and verify, be about `key`, not be signed by a strict
    /// operator's own key; it is then written to the directory and, when one of the
    /// operators signed it, trusted at once (a JWT signed by no trusted key is stored, as
    /// nats-server stores it, and its users stay refused). Without a directory (the memory
    /// resolver) nothing is done: `None`.
    pub fn update(
        &self,
        token: &str,
        key: Option<&str>,
        accounts: &Accounts<S>,
    ) -> Option<ClaimsUpdate> {
        let store = self.store.as_ref()?;
        let failed = |account: &str, error: String| ClaimsUpdate {
            account: account.to_owned(),
            outcome: Err(("jwt update resulted in error".to_owned(), error)),
            changed: false,
            sharing_changed: false,
        };
        let claims = match jwt::decode::<jwt::Account>(token) {
            Ok(c) => c,
            Err(e) => return Some(failed("n/a", e.to_string())),
        };
        // nats-server's `claimValidate`: a JWT that does not validate is not stored (its
        // users would be refused at the next start). Its order differs by subject: after
        // the strict operator check on `$SYS.REQ.CLAIMS.UPDATE`, before the subject check on
        // the subjects naming the account.
        let invalid = || {
            validation_errors(&claims).map(|e| ClaimsUpdate {
                account: claims.sub.clone(),
                outcome: Err(("jwt validation failed".to_owned(), e)),
                changed: false,
                sharing_changed: false,
            })
        };
        let strict = self.strict_operator.as_deref() == Some(claims.iss.as_str());
        let account = key.unwrap_or(&claims.sub).to_owned();
        if key.is_some() {
            if let Some(refused) = invalid() {
                return Some(refused);
            }
        }
        if claims.sub != account {
            return Some(failed(
                &account,
                "subject does not match jwt content".into(),
            ));
        }
        if strict {
            return Some(failed(
                &account,
                "operator requires issuer to be a signing key".into(),
            ));
        }
        if key.is_none() {
            if let Some(refused) = invalid() {
                return Some(refused);
            }
        }
        let _push = self.pushes.lock();
        match store.save(&account, token) {
            Err(e) => Some(failed(&account, e)),
            Ok(saved) => {
                let (mut changed, mut sharing_changed) = (false, false);
                if saved == Saved::Changed {
                    match self.trusted(&account, token, accounts) {
                        Ok(t) => {
                            let shares = |c: &Claims<jwt::Account>| {
                                let n = &c.nats;
                                (n.exports.clone(), n.imports.clone(), n.signing_keys.clone())
                            };
                            let new = shares(&t.claims);
                            let old = self
                                .accounts
                                .write()
                                .insert(account.clone(), Arc::new(t))
                                .map(|old| shares(&old.claims))
                                .unwrap_or_default();
                            changed = true;
                            sharing_changed = new != old;
                        }
                        Err(e) => log::error!("update resulted in error {e}"),
                    }
                }
                Some(ClaimsUpdate {
                    account,
                    outcome: Ok("jwt updated".to_owned()),
                    changed,
                    sharing_changed,
                })
            }
        }
    }
}

/// What a `$SYS.REQ.CLAIMS.DELETE` did, in nats-server's words: `Ok(message)` or
/// `Err((message, error))`, and the accounts deleted (their clients are then closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsDelete {
    /// `deleted 2 accounts`, or the error's message and text.
    pub outcome: Result<String, (String, String)>,
    /// The accounts removed from the directory and the trust.
    pub deleted: Vec<String>,
}

impl<S> Trust<S> {
    /// Deletes accounts as `$SYS.REQ.CLAIMS.DELETE` asks (nats-server's
    /// `handleDeleteRequest`): `token` is a JWT of any kind, self-signed by an operator key
    /// (its own or a signing key), whose `nats.accounts` lists account public keys; the
    /// resolver must allow deleting (`allow_delete`), and the system account
    /// (`system_account`) cannot be deleted. Each account's file is renamed
    /// `<key>.jwt.deleted` and the account is no longer trusted. `None` without a directory.
    pub fn delete(&self, token: &str, system_account: Option<&str>) -> Option<ClaimsDelete> {
        let store = self.store.as_ref()?;
        let request = jwt::decode_generic(token);
        let by = request.as_ref().map(|c| c.sub.clone()).unwrap_or_default();
        let failed = |error: String| ClaimsDelete {
            outcome: Err((format!("delete accounts request by {by} failed"), error)),
            deleted: Vec::new(),
        };
        let request = match request {
            Ok(r) => r,
            Err(e) => return Some(failed(e.to_string())),
        };
        if !store.allows_delete() {
            return Some(failed("delete must be enabled in server config".into()));
        }
        if request.sub != request.iss {
            return Some(failed("not self signed".into()));
        }
        let operator_key = self.operator_keys.contains(&request.iss)
            || self.strict_operator.as_deref() == Some(request.iss.as_str());
        if !operator_key {
            return Some(failed("not trusted".into()));
        }
        let Some(list) = request.nats.get("accounts").and_then(|a| a.as_array()) else {
            return Some(failed("malformed request".into()));
        };
        let mut keys = Vec::new();
        for entry in list {
            match entry.as_str() {
                Some(k) if jwt::is_key(k, 'A') => {
                    if Some(k) == system_account {
                        return Some(failed("not allowed to delete system account".into()));
                    }
                    keys.push(k.to_owned());
                }
                _ => return Some(failed("malformed request".into())),
            }
        }
        let (mut deleted, mut errors) = (Vec::new(), Vec::new());
        for key in keys {
            match store.delete(&key) {
                Ok(()) => {
                    self.accounts.write().remove(&key);
                    deleted.push(key);
                }
                // nats-server counts a missing file as deleted.
                Err(_) if store.load(&key).is_none() => deleted.push(key),
                Err(e) => errors.push(e),
            }
        }
        let outcome = if errors.is_empty() {
            Ok(format!("deleted {} accounts", deleted.len()))
        } else {
            Err((
                format!(
                    "deleted {} accounts, failed for {}",
                    deleted.len(),
                    errors.len()
                ),
                errors.join("\n"),
            ))
        };
        Some(ClaimsDelete { outcome, deleted })
    }

    /// Every trusted account's public key and claims, sorted by key (for what they share:
    /// [`super::sharing::from_jwts`]).
    pub fn account_claims(&self) -> Vec<(String, Claims<jwt::Account>)> {
        let mut all: Vec<_> = self
            .accounts
            .read()
            .iter()
            .map(|(k, t)| (k.clone(), t.claims.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Account `key`'s JWT and claims, when it is trusted.
    pub fn account_jwt(&self, key: &str) -> Option<(String, Claims<jwt::Account>)> {
        let accounts = self.accounts.read();
        let t = accounts.get(key)?;
        Some((t.jwt.clone(), t.claims.clone()))
    }

    /// The full resolver's directory, if that is the resolver.
    pub fn store(&self) -> Option<&DirStore> {
        self.store.as_ref()
    }

    /// Account `key`'s JWT as the directory holds it (`$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP`).
    pub fn lookup(&self, key: &str) -> Option<String> {
        self.store.as_ref()?.load(key)
    }

    /// Which of account `key`'s clients its JWT no longer lets in (nats-server's
    /// `updateAccountClaimsWithRefresh`): `clients` are their user JWTs, newest connection
    /// first; the answer names clients by their index in it. Checks, in nats-server's
    /// order: the connection limit (clients past it, the oldest, go), then for each
    /// remaining client a bearer token the account refuses and a revoked user, then a user
    /// whose issuing signing key the account no longer lists.
    pub fn evictions(&self, key: &str, clients: &[&str]) -> Vec<(usize, Eviction)> {
        let Some(trusted) = self.accounts.read().get(key).cloned() else {
            return Vec::new();
        };
        let account = &trusted.claims;
        let limit = account.nats.limits.conn;
        let mut out = Vec::new();
        for (i, token) in clients.iter().enumerate() {
            if limit >= 0 && i as i64 >= limit {
                out.push((i, Eviction::TooManyConnections));
                continue;
            }
            // Decoded without checking expiry: a user JWT that expired is closed by its
            // own timer.
            let Ok(user) = jwt::decode::<jwt::User>(token) else {
                out.push((i, Eviction::BearerRefused));
                continue;
            };
            if user.nats.template.bearer_token && account.nats.limits.disallow_bearer {
                out.push((i, Eviction::BearerRefused));
            } else if account.nats.is_revoked(&user.sub, user.iat) {
                out.push((i, Eviction::Revoked));
            } else if user.iss != account.sub
                && !account
                    .nats
                    .signing_keys
                    .iter()
                    .any(|k| k.key() == user.iss)
            {
                out.push((i, Eviction::SignerRemoved));
            }
        }
        out
    }

    /// Checks a user JWT `CONNECT` (see the module docs). The reason of a refusal is logged
    /// at debug level; the error is nats-server's log line, `authentication error`.
    pub fn authenticate(
        &self,
        opts: &crate::protocol::ConnectOptions,
        peer: &Peer,
    ) -> Result<Login<S>, AuthError> {
        self.check(opts, peer).map_err(|why| {
            log::debug!("{why}");
            AuthError {
                account_full: why == TOO_MANY_ACCOUNT_CONNECTIONS,
                message: if why == TOO_MANY_ACCOUNT_CONNECTIONS {
                    why
                } else {
                    "authentication error".into()
                },
            }
        })
    }

    fn check(
        &self,
        opts: &crate::protocol::ConnectOptions,
        peer: &Peer,
    ) -> Result<Login<S>, String> {
        if opts.jwt.is_empty() {
            return Err("Authentication requires a user JWT".into());
        }
        let user =
            jwt::decode::<jwt::User>(&opts.jwt).map_err(|e| format!("User JWT not valid: {e}"))?;
        let now = unix_now();
        if user.expired(now) {
            return Err("User JWT no longer valid: claim is expired".into());
        }
        if user.not_yet_valid(now) {
            return Err("User JWT no longer valid: claim is not yet valid".into());
        }
        if !user.nats.issuer_account.is_empty() && !jwt::is_key(&user.nats.issuer_account, 'A') {
            return Err("User JWT not valid: account_id is not an account public key".into());
        }
        if !jwt::is_key(&user.sub, 'U') {
            return Err("User JWT not valid: subject is not a user public key".into());
        }
        let types = &user.nats.template.allowed_connection_types;
        if !types.is_empty()
            && !types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(peer.connection_type))
        {
            return Err("Connection type not allowed".into());
        }
        let issuer = if user.nats.issuer_account.is_empty() {
            &user.iss
        } else {
            &user.nats.issuer_account
        };
        if !self.pinned.is_empty() && !self.pinned.iter().any(|p| p == issuer) {
            return Err(format!(
                "Account {issuer} not listed as operator pinned account"
            ));
        }
        let trusted = self
            .accounts
            .read()
            .get(issuer)
            .cloned()
            .ok_or_else(|| format!("Account JWT lookup error: {issuer} is not known"))?;
        let account = &trusted.claims;
        // The user's issuer: the account itself, or one of its signing keys (which may be
        // scoped: then the scope's template replaces the user's own permissions).
        let scope = if user.iss == account.sub {
            None
        } else {
            match account
                .nats
                .signing_keys
                .iter()
                .find(|k| k.key() == user.iss)
            {
                None => return Err("User JWT issuer is not known".into()),
                Some(SigningKey::Plain(_)) => None,
                Some(SigningKey::Scoped { template, .. }) => {
                    if !user.nats.template.is_empty() {
                        return Err(
                            "User JWT is not valid: scoped users require no permissions or \
                             limits set"
                                .into(),
                        );
                    }
                    Some(&**template)
                }
            }
        };
        if account.expired(now) {
            return Err("Account JWT has expired".into());
        }
        if account.not_yet_valid(now) {
            return Err("Account JWT is not yet valid".into());
        }
        // A scoped key's users get its template whole (bearer_token included), its
        // permission templates filled in for the user.
        let expanded;
        let template = match scope {
            Some(scope) => {
                let permissions = super::templates::expand(&scope.permissions, &user, account)
                    .map_err(|_| "User JWT generated invalid permissions".to_owned())?;
                expanded = jwt::UserTemplate {
                    permissions,
                    ..scope.clone()
                };
                &expanded
            }
            None => &user.nats.template,
        };
        if template.bearer_token && account.nats.limits.disallow_bearer {
            return Err("Account does not allow bearer token".into());
        }
        if !template.bearer_token {
            if opts.sig.is_empty() {
                return Err("Signature missing".into());
            }
            let key = nkeys::KeyPair::from_public_key(&user.sub)
                .map_err(|e| format!("User nkey not valid: {e}"))?;
            if peer.nonce.is_empty() || !super::verify_sig(&key, peer.nonce, &opts.sig) {
                return Err("Signature not verified".into());
            }
        }
        if account.nats.is_revoked(&user.sub, user.iat) {
            return Err("User authentication revoked".into());
        }
        if !jwt::sources_valid(&user.nats.template.src) || !jwt::sources_valid(&template.src) {
            return Err("User JWT not valid: invalid cidr in user src limits".into());
        }
        if !jwt::source_allowed(&template.src, peer.ip) {
            // nats-server logs this one at error level.
            log::error!("Bad src Ip {}", peer.ip);
            return Err(format!("Bad src Ip {}", peer.ip));
        }
        if !template.times.is_empty() {
            log::error!(
                "User {}: connect `times` are not supported by beaver yet: refused",
                user.sub
            );
            return Err("Outside connect times".into());
        }
        // The account's defaults only when the user has no permissions at all (a user with
        // only `resp` has its own, empty, ones: nats-server's `buildInternalNkeyUser`).
        let permissions = if template.permissions.is_empty() && template.permissions.resp.is_none()
        {
            trusted.default_permissions.clone()
        } else {
            Some(Arc::new(Permissions::new(&to_config(
                &template.permissions,
            ))))
        };
        let limit = account.nats.limits.conn;
        let seat = AccountSeat(trusted.connections.clone());
        // Relaxed: see `AccountSeat`.
        let before = trusted.connections.fetch_add(1, Ordering::Relaxed);
        if limit >= 0 && before >= limit {
            return Err(TOO_MANY_ACCOUNT_CONNECTIONS.into());
        }
        // The earlier of the user's and the account's expiry (a time past what the clock
        // can hold is no expiry).
        let at = |t: i64| UNIX_EPOCH.checked_add(Duration::from_secs(t as u64));
        let (expires, account_expires) = match (user.exp > 0, account.exp > 0) {
            (true, true) if account.exp < user.exp => (at(account.exp), true),
            (true, _) => (at(user.exp), false),
            (false, true) => (at(account.exp), true),
            (false, false) => (None, false),
        };
        // -1 (or any negative) is "no limit".
        let lower = |a: i64, b: i64| {
            let limit = |n: i64| usize::try_from(n).ok();
            limit(a).into_iter().chain(limit(b)).min()
        };
        log::debug!(
            "Authenticated JWT: Client {:?} (claim-name: {:?}) signed with {:?} by Account {:?}",
            user.sub,
            user.name,
            user.iss,
            issuer
        );
        Ok(Login {
            user: user.sub.clone(),
            permissions,
            account: trusted.account.clone(),
            jwt: Some(JwtLogin {
                expires,
                account_expires,
                // Per connection, the lower of the user's and the account's (nats-server's
                // `applyAccountLimits`).
                max_subscriptions: lower(template.subs, account.nats.limits.subs),
                max_payload: lower(template.payload, account.nats.limits.payload),
                seat: Arc::new(seat),
            }),
        })
    }
}

/// The blocking validation errors of an account JWT (jwt's `Account.Validate`, as far as
/// beaver checks it), in nats-server's words (`validation errors: [...]`); `None` when valid.
fn validation_errors(claims: &Claims<jwt::Account>) -> Option<String> {
    let result = jwt::sharing::validate_imports(&claims.sub, &claims.nats.imports)
        .and_then(|()| jwt::sharing::validate_limits(&claims.nats));
    result.err().map(|e| format!("validation errors: [{e}]"))
}

/// nats-server's `ErrTooManyAccountConnections`.
pub const TOO_MANY_ACCOUNT_CONNECTIONS: &str = "maximum account active connections exceeded";

/// What a JWT login adds to a [`Login`]: when it expires and the limits of the user and its
/// account.
#[derive(Debug, Clone)]
pub struct JwtLogin {
    /// When the user's (or its account's) JWT expires: the client is then closed with
    /// `User Authentication Expired`.
    pub expires: Option<SystemTime>,
    /// The expiry is the account's (`Account Authentication Expired`), not the user's.
    pub account_expires: bool,
    /// The lower of the user's and the account's `subs` limits (per connection, as
    /// nats-server applies both).
    pub max_subscriptions: Option<usize>,
    /// The lower of the user's and the account's `payload` limits, in bytes.
    pub max_payload: Option<usize>,
    /// The client's place under the account's `conn` limit.
    pub seat: Arc<AccountSeat>,
}

/// JWT permissions as the server compiles them.
fn to_config(p: &jwt::Permissions) -> crate::config::Permissions {
    let side = |p: &jwt::Permission| {
        (!p.is_empty()).then(|| crate::config::SubjectPermission {
            allow: p.allow.clone(),
            deny: p.deny.clone(),
        })
    };
    // `resp`: `{"max": N, "ttl": NANOSECONDS}`, zero meaning the defaults.
    let response = p.resp.as_ref().map(|r| {
        let mut out = crate::config::ResponsePermission::default();
        // 0 takes the default, a negative value is no limit (nats-server's).
        match r.get("max").and_then(|v| v.as_i64()) {
            Some(max) if max < 0 => out.max = usize::MAX,
            Some(max) if max > 0 => out.max = usize::try_from(max).unwrap_or(usize::MAX),
            _ => {}
        }
        match r.get("ttl").and_then(|v| v.as_i64()) {
            Some(ttl) if ttl < 0 => out.expires = Duration::MAX,
            Some(ttl) if ttl > 0 => out.expires = Duration::from_nanos(ttl.unsigned_abs()),
            _ => {}
        }
        out
    });
    crate::config::Permissions {
        publish: side(&p.publish),
        subscribe: side(&p.subscribe),
        response,
    }
}
