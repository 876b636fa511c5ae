//! Operator mode (decentralized JWT authentication) settings: `operator`, `system_account`,
//! `resolver` and `resolver_preload`, as nats-server 2.9.10 reads them, and the rules that
//! span them (`validateTrustedOperators`'s, in its words).
//!
//! The JWTs are kept as text: they are decoded and their signatures checked when read
//! (a bad one stops start-up naming the key and line), and again by `auth::operator` when
//! the server builds its trust chain.

use crate::jwt;

/// Where account JWTs come from (`resolver`): nats-server's memory resolver, or its full
/// directory resolver (the URL and cache resolvers are refused with a clear error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolver {
    /// `resolver: MEMORY` (or `MEM`): the accounts are those of `resolver_preload`, fixed
    /// until a restart.
    Memory,
    /// `resolver { type: full, dir }`: account JWTs are files in a directory, read at start
    /// and written by `$SYS.REQ.CLAIMS.UPDATE` (`nsc push`).
    Full(DirResolver),
}

/// The full resolver's settings (nats-server's `resolver { type: full ... }` block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirResolver {
    /// `dir`: where the `<account public key>.jwt` files are (relative to the working
    /// directory, as nats-server reads it); created at start when missing.
    pub dir: std::path::PathBuf,
    /// `allow_delete`: whether `$SYS.REQ.CLAIMS.DELETE` may remove accounts (their files are
    /// renamed `<key>.jwt.deleted`, as nats-server does).
    pub allow_delete: bool,
    /// `limit`: the most account JWTs the directory holds (`None`: no limit; nats-server's
    /// `0`). A push of one more is refused with `jwt store is full`.
    pub limit: Option<u64>,
    /// `interval`: how often nats-server compares its directory with the other servers'.
    /// Accepted and unused: beaver does not synchronise JWTs across routes.
    pub interval: Option<std::time::Duration>,
    /// `timeout`: how long nats-server waits for another server to send it an account it
    /// lacks. Accepted and unused, as `interval`.
    pub timeout: Option<std::time::Duration>,
}

/// Reads an operator JWT given as `operator`: a file holding it (decorated as nsc writes it,
/// or bare), or the JWT itself (nats-server's `readOperatorJWT`). Returns the JWT.
pub fn read_operator(value: &str) -> Result<String, String> {
    let text = match std::fs::read_to_string(value) {
        Ok(text) => text,
        // Inline JWTs start with the base64 of `{"` (nats-server's `jwtPrefix`).
        Err(_) if value.starts_with("eyJ") => value.to_owned(),
        Err(e) => return Err(format!("error parsing operator JWT: {value}: {e}")),
    };
    let token = jwt::undecorate(&text).to_owned();
    jwt::decode::<jwt::Operator>(&token).map_err(|e| format!("error parsing operator JWT: {e}"))?;
    Ok(token)
}

/// Checks one `resolver_preload` entry: an account's public key and its account JWT.
pub fn check_preload(key: &str, token: &str) -> Result<(), String> {
    let claims =
        jwt::decode::<jwt::Account>(token).map_err(|_| "invalid account JWT".to_owned())?;
    if claims.sub != key {
        return Err(format!(
            "the JWT of {key} is about another account ({})",
            claims.sub
        ));
    }
    Ok(())
}

/// The rules between the operator settings and the others (nats-server's
/// `validateTrustedOperators`, with its words).
pub(crate) fn validate(config: &super::Config) -> Result<(), String> {
    if config.operators.is_empty() {
        if config.resolver.is_some()
            || !config.resolver_preload.is_empty()
            || !config.resolver_pinned_accounts.is_empty()
        {
            return Err(
                "resolver: an account resolver needs `operator` (beaver reads account JWTs \
                 only in operator mode)"
                    .into(),
            );
        }
        return Ok(());
    }
    if config.resolver.is_none() {
        return Err("operators require an account resolver to be configured".into());
    }
    if !config.accounts.is_empty() {
        return Err("operators do not allow Accounts to be configured directly".into());
    }
    let users = config
        .authorization
        .as_ref()
        .is_some_and(|a| !a.users.is_empty() || !a.nkeys.is_empty());
    if users {
        return Err("operators do not allow users to be configured directly".into());
    }
    if config.no_auth_user.is_some() {
        return Err("no_auth_user not compatible with Trusted Operator".into());
    }
    let operators: Vec<_> = config
        .operators
        .iter()
        .filter_map(|t| jwt::decode::<jwt::Operator>(t).ok())
        .collect();
    if let Some(system) = &config.system_account {
        let named: Vec<&str> = operators
            .iter()
            .map(|o| o.nats.system_account.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        if !named.is_empty() && !named.contains(&system.as_str()) {
            return Err("system_account in config and operator JWT must be identical".into());
        }
    }
    for o in &operators {
        check_server_version(&o.sub, &o.nats.assert_server_version)?;
        // nats-server's words.
        for key in &o.nats.signing_keys {
            if !jwt::is_key(key, 'O') {
                return Err(format!(
                    "trusted Keys {key:?} are required to be a valid public operator nkey"
                ));
            }
        }
    }
    let system = config
        .system_account
        .clone()
        .or_else(|| operators.first().map(|o| o.nats.system_account.clone()))
        .unwrap_or_default();
    if !system.is_empty() && !jwt::is_key(&system, 'A') {
        return Err(format!(
            "system_account {system:?}: in operator mode, an account's public key"
        ));
    }
    Ok(())
}

/// An operator's `assert_server_version` against the version beaver speaks
/// ([`crate::protocol::NATS_VERSION`]), in nats-server's words.
fn check_server_version(operator: &str, wanted: &str) -> Result<(), String> {
    if wanted.is_empty() {
        return Ok(());
    }
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let v = v.trim_start_matches('v');
        let mut it = v.split('.').map(|p| p.parse::<u64>().ok());
        Some((it.next()??, it.next()??, it.next()??))
    };
    let Some(want) = parse(wanted) else {
        return Err(format!(
            "operator {operator} expects version {wanted} got error instead: invalid version"
        ));
    };
    let have = parse(crate::protocol::NATS_VERSION).unwrap_or((0, 0, 0));
    if want > have {
        return Err(format!(
            "operator {operator} expects version {wanted}, beaver speaks nats-server {}",
            crate::protocol::NATS_VERSION
        ));
    }
    Ok(())
}
