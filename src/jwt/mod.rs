//! NATS JWTs: decoding and checking the operator, account and user claims of decentralized
//! authentication (operator mode), as nats-server reads them with `nats-io/jwt/v2`.
//!
//! A JWT is three base64url parts joined by dots: a header (`{"typ":"JWT",
//! "alg":"ed25519-nkey"}`), the claims (JSON), and the ed25519 signature of the first two
//! parts, as sent, by the claims' issuer (`iss`, an nkey public key). [`decode`] checks the
//! header, the signature, the kind of claims (`nats.type`) and the kind of key that may issue
//! them; whether that issuer is *trusted* (the operator's key, an account's signing key) is
//! the caller's business (`auth::operator`). A leaf module: it knows nothing of beaver. Only version 2 JWTs (`alg` `ed25519-nkey`,
//! made by nsc since 2020) are read; version 1 ones are refused with a clear error.
//!
//! The claims are plain serde structs with the field names of `nats-io/jwt/v2`; fields beaver
//! does not use are ignored, as Go's decoder ignores unknown ones. Account exports, imports
//! and the activation tokens of private exports are in [`sharing`].

pub mod sharing;

pub use sharing::{Activation, Export, Import};

use crate::protocol::json_nesting_depth;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::HashMap;

/// The largest JWT read, in bytes (`jwt.MaxTokenSize`: 1 MiB).
pub const MAX_TOKEN_SIZE: usize = 1024 * 1024;

/// The deepest nesting of arrays and objects read in claims (nsc's go 5 deep). Checked
/// before serde, without recursion: the claims come before their signature is checked, and
/// a reader thread's stack is small (a few hundred KiB).
pub const MAX_CLAIMS_DEPTH: usize = 32;

/// Why a JWT was refused: a message for the log (nats-server says the same things in its
/// debug lines; clients only ever see `Authorization Violation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtError(pub String);

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(message: impl Into<String>) -> Result<T, JwtError> {
    Err(JwtError(message.into()))
}

/// The claims every JWT has (`jwt.ClaimsData`), with the kind-specific ones in `nats`.
#[derive(Debug, Clone, Deserialize)]
pub struct Claims<N> {
    /// The JWT's id (`jti`).
    #[serde(default)]
    pub jti: String,
    /// When it was issued, in Unix seconds (`iat`): revocations compare with it.
    #[serde(default)]
    pub iat: i64,
    /// The public key that signed it (`iss`).
    #[serde(default)]
    pub iss: String,
    /// The public key it is about (`sub`): the operator, account or user.
    #[serde(default)]
    pub sub: String,
    /// A human name (`name`).
    #[serde(default)]
    pub name: String,
    /// When it expires, in Unix seconds; 0: never (`exp`).
    #[serde(default)]
    pub exp: i64,
    /// Not valid before this, in Unix seconds; 0: at once (`nbf`).
    #[serde(default)]
    pub nbf: i64,
    /// The kind-specific claims.
    pub nats: N,
}

impl<N> Claims<N> {
    /// Whether it has expired at `now` (Unix seconds): `exp` set and passed (jwt's
    /// `ClaimsData.Validate`: `now > exp`).
    pub fn expired(&self, now: i64) -> bool {
        self.exp > 0 && now > self.exp
    }

    /// Whether it is not valid yet at `now` (`nbf` in the future).
    pub fn not_yet_valid(&self, now: i64) -> bool {
        self.nbf > 0 && self.nbf > now
    }
}

/// What every `nats` object says about itself: its kind and format version.
#[derive(Debug, Clone, Deserialize)]
struct Kind {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    version: u32,
}

/// The identifying part of any claims, read first to know their kind.
#[derive(Deserialize)]
struct Identify {
    #[serde(default)]
    nats: Option<Kind>,
}

/// An operator's claims (`jwt.Operator`): its signing keys and its system account.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Operator {
    /// Keys that may sign account JWTs besides the operator's own.
    #[serde(default)]
    pub signing_keys: Vec<String>,
    /// The system account's public key, when the operator names one.
    #[serde(default)]
    pub system_account: String,
    /// The lowest server version the operator accepts (`2.9.0`), when set.
    #[serde(default)]
    pub assert_server_version: String,
    /// Only the signing keys, not the operator's own key, may sign accounts.
    #[serde(default)]
    pub strict_signing_key_usage: bool,
}

/// Allowed and denied subjects (`jwt.Permission`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
pub struct Permission {
    /// Subjects allowed (empty: all not denied).
    #[serde(default, deserialize_with = "string_list")]
    pub allow: Vec<String>,
    /// Subjects denied.
    #[serde(default, deserialize_with = "string_list")]
    pub deny: Vec<String>,
}

impl Permission {
    /// Whether it restricts nothing (no `allow`, no `deny`).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

/// Publish and subscribe permissions (`jwt.Permissions`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
pub struct Permissions {
    /// What may be published.
    #[serde(rename = "pub", default)]
    pub publish: Permission,
    /// What may be subscribed to.
    #[serde(rename = "sub", default)]
    pub subscribe: Permission,
    /// Permission to publish replies to received messages (`resp`: `{"max": N, "ttl":
    /// NANOSECONDS}`), as `allow_responses`.
    #[serde(default)]
    pub resp: Option<serde_json::Value>,
}

impl Permissions {
    /// Whether no subject is restricted (`HasEmptyPermissions`).
    pub fn is_empty(&self) -> bool {
        self.publish.is_empty() && self.subscribe.is_empty()
    }
}

/// An account's limits (`jwt.OperatorLimits`). -1 is "no limit"; a missing field is 0, as
/// Go decodes it (nsc writes -1 for every limit it does not set).
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
pub struct AccountLimits {
    /// Most subscriptions of each of its connections.
    #[serde(default)]
    pub subs: i64,
    /// Largest message payload, in bytes.
    #[serde(default)]
    pub payload: i64,
    /// Most client connections at once.
    #[serde(default)]
    pub conn: i64,
    /// Users may not use bearer tokens.
    #[serde(default)]
    pub disallow_bearer: bool,
    /// Most entries in its `imports`.
    #[serde(default)]
    pub imports: i64,
    /// Most entries in its `exports`.
    #[serde(default)]
    pub exports: i64,
    /// Its exports may use wildcards.
    #[serde(default)]
    pub wildcards: bool,
}

/// A key that may sign an account's users: plain, or scoped (the users it signs get the
/// scope's permissions, not their own).
#[derive(Debug, Clone, PartialEq)]
pub enum SigningKey {
    /// Signs users with the permissions in their JWTs.
    Plain(String),
    /// `{"kind":"user_scope","key":...,"template":{...}}`: signs users whose permissions are
    /// the template's.
    Scoped {
        /// The public key.
        key: String,
        /// The template's permissions and limits (boxed: much larger than a key).
        template: Box<UserTemplate>,
    },
}

impl SigningKey {
    /// The signing key's public key.
    pub fn key(&self) -> &str {
        match self {
            SigningKey::Plain(k) | SigningKey::Scoped { key: k, .. } => k,
        }
    }
}

impl<'de> Deserialize<'de> for SigningKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Plain(String),
            Scoped {
                #[serde(default)]
                kind: String,
                key: String,
                #[serde(default)]
                template: Box<UserTemplate>,
            },
        }
        match Either::deserialize(d)? {
            Either::Plain(k) => Ok(SigningKey::Plain(k)),
            Either::Scoped {
                kind,
                key,
                template,
            } => {
                if kind != "user_scope" {
                    return Err(serde::de::Error::custom(format!(
                        "signing key {key}: unknown scope kind {kind:?}"
                    )));
                }
                Ok(SigningKey::Scoped { key, template })
            }
        }
    }
}

/// An account's claims (`jwt.Account`).
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Account {
    /// Its limits.
    #[serde(default)]
    pub limits: AccountLimits,
    /// Keys that may sign its users besides the account's own.
    #[serde(default)]
    pub signing_keys: Vec<SigningKey>,
    /// Revoked users: public key (or `*` for all) to a Unix time; a user JWT issued at or
    /// before it is refused.
    #[serde(default)]
    pub revocations: HashMap<String, i64>,
    /// Permissions of its users that have none (`default_permissions`).
    #[serde(default)]
    pub default_permissions: Permissions,
    /// What it shares with other accounts (see [`sharing`]).
    #[serde(default)]
    pub exports: Vec<Export>,
    /// What it takes from other accounts.
    #[serde(default)]
    pub imports: Vec<Import>,
    /// Its tags (`key:value`), for scoped signing keys' templates (`{{account-tag(key)}}`).
    #[serde(default, deserialize_with = "string_list")]
    pub tags: Vec<String>,
    /// Subject mappings: beaver does not implement them yet (warned about).
    #[serde(default)]
    pub mappings: Option<serde_json::Value>,
}

impl Account {
    /// Whether the user `subject`, whose JWT was issued at `issued_at`, is revoked (the
    /// server's `isRevoked`: its own entry, or `*`, at or after that time).
    pub fn is_revoked(&self, subject: &str, issued_at: i64) -> bool {
        [subject, "*"]
            .iter()
            .any(|k| self.revocations.get(*k).is_some_and(|&t| t >= issued_at))
    }
}

/// What a user may do (`jwt.UserPermissionLimits`): in a user JWT, and as a scoped signing
/// key's template. Limits are -1 for "no limit"; a missing one is 0, as Go decodes it.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
pub struct UserTemplate {
    /// Its permissions.
    #[serde(flatten)]
    pub permissions: Permissions,
    /// Networks it may connect from (CIDRs: an array, or one comma-separated string).
    #[serde(default, deserialize_with = "cidr_list")]
    pub src: Vec<String>,
    /// Times of day it may connect (`times`): beaver refuses users that have them.
    #[serde(default)]
    pub times: Vec<serde_json::Value>,
    /// Most subscriptions.
    #[serde(default)]
    pub subs: i64,
    /// Most bytes (not enforced, as in nats-server 2.9).
    #[serde(default)]
    pub data: i64,
    /// Largest payload, in bytes.
    #[serde(default)]
    pub payload: i64,
    /// It logs in without signing the nonce (its JWT alone is the credential).
    #[serde(default)]
    pub bearer_token: bool,
    /// The connection types it may use (`STANDARD`, `WEBSOCKET`, ...); empty: all.
    #[serde(default, deserialize_with = "string_list")]
    pub allowed_connection_types: Vec<String>,
}

impl UserTemplate {
    /// Whether nothing at all is set (jwt's `HasEmptyPermissions`): what a user signed by a
    /// scoped key must be.
    pub fn is_empty(&self) -> bool {
        *self == UserTemplate::default()
    }
}

/// A user's claims (`jwt.User`).
#[derive(Debug, Clone, Deserialize, Default)]
pub struct User {
    /// Its permissions and limits.
    #[serde(flatten)]
    pub template: UserTemplate,
    /// The account it belongs to, when signed by one of that account's signing keys.
    #[serde(default)]
    pub issuer_account: String,
    /// Its tags (`key:value`), for a scoped signing key's templates (`{{tag(key)}}`).
    #[serde(default, deserialize_with = "string_list")]
    pub tags: Vec<String>,
}

/// The kinds of claims [`decode`] reads, with the keys that may issue each.
pub trait ClaimKind: DeserializeOwned {
    /// `nats.type`.
    const KIND: &'static str;
    /// Whether `issuer` may issue this kind (jwt's `ExpectedPrefixes`).
    fn issuer_ok(issuer: &str) -> bool;
}

impl ClaimKind for Operator {
    const KIND: &'static str = "operator";
    fn issuer_ok(issuer: &str) -> bool {
        is_key(issuer, 'O')
    }
}

impl ClaimKind for Account {
    const KIND: &'static str = "account";
    fn issuer_ok(issuer: &str) -> bool {
        is_key(issuer, 'O') || is_key(issuer, 'A')
    }
}

impl ClaimKind for User {
    const KIND: &'static str = "user";
    fn issuer_ok(issuer: &str) -> bool {
        is_key(issuer, 'A')
    }
}

/// Whether `key` is a valid public nkey with the prefix `prefix` (`O` operator, `A`
/// account, `U` user).
pub fn is_key(key: &str, prefix: char) -> bool {
    key.starts_with(prefix) && nkeys::KeyPair::from_public_key(key).is_ok()
}

/// base64url, without padding or (as Go's decoder also takes) with it.
fn decode_part(part: &str) -> Result<Vec<u8>, JwtError> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(part))
        .map_err(|e| JwtError(format!("bad base64: {e}")))
}

/// Decodes `token` as claims of kind `C`, checking the header, the kind, the issuer's kind of
/// key and the issuer's signature (see the module docs). Not checked here: expiry, and whether
/// the issuer is trusted.
pub fn decode<C: ClaimKind>(token: &str) -> Result<Claims<C>, JwtError> {
    let json = verified_claims(token)?;
    let id: Identify =
        serde_json::from_slice(&json).map_err(|e| JwtError(format!("bad claims: {e}")))?;
    let kind = id.nats.unwrap_or(Kind {
        kind: String::new(),
        version: 0,
    });
    if kind.version < 2 {
        return err("version 1 JWTs are not supported by beaver");
    }
    if kind.kind != C::KIND {
        return err(format!("expected {} claims, got {:?}", C::KIND, kind.kind));
    }
    let claims: Claims<C> =
        serde_json::from_slice(&json).map_err(|e| JwtError(format!("bad claims: {e}")))?;
    if !C::issuer_ok(&claims.iss) {
        return err(format!(
            "{} claims may not be issued by {}",
            C::KIND,
            claims.iss
        ));
    }
    Ok(claims)
}

/// Decodes `token` as claims of any kind, `nats` kept as JSON (`jwt.DecodeGeneric`: what
/// `nsc` signs for requests such as `$SYS.REQ.CLAIMS.DELETE`), checking the header and the
/// issuer's signature only.
pub fn decode_generic(token: &str) -> Result<Claims<serde_json::Value>, JwtError> {
    #[derive(Deserialize)]
    struct Generic {
        #[serde(default)]
        jti: String,
        #[serde(default)]
        iat: i64,
        #[serde(default)]
        iss: String,
        #[serde(default)]
        sub: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        exp: i64,
        #[serde(default)]
        nbf: i64,
        #[serde(default)]
        nats: serde_json::Value,
    }
    let json = verified_claims(token)?;
    let g: Generic =
        serde_json::from_slice(&json).map_err(|e| JwtError(format!("bad claims: {e}")))?;
    Ok(Claims {
        jti: g.jti,
        iat: g.iat,
        iss: g.iss,
        sub: g.sub,
        name: g.name,
        exp: g.exp,
        nbf: g.nbf,
        nats: g.nats,
    })
}

/// The claims JSON of `token`, once its size, header, nesting and its issuer's signature
/// (ed25519 by the nkey `iss` names, over the first two parts as sent) are checked.
fn verified_claims(token: &str) -> Result<Vec<u8>, JwtError> {
    if token.len() > MAX_TOKEN_SIZE {
        return err(format!(
            "token size {} exceeds maximum of {MAX_TOKEN_SIZE} bytes",
            token.len()
        ));
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, sig] = parts[..] else {
        return err("expected 3 chunks");
    };
    #[derive(Deserialize)]
    struct Header {
        #[serde(default)]
        typ: String,
        #[serde(default)]
        alg: String,
    }
    let h: Header = serde_json::from_slice(&decode_part(header)?)
        .map_err(|e| JwtError(format!("bad header: {e}")))?;
    if !h.typ.eq_ignore_ascii_case("JWT") {
        return err(format!("not supported type {:?}", h.typ));
    }
    match h.alg.to_ascii_lowercase().as_str() {
        "ed25519-nkey" => {}
        "ed25519" => return err("version 1 JWTs (alg \"ed25519\") are not supported by beaver"),
        other => return err(format!("unexpected {other:?} algorithm")),
    }
    let json = decode_part(payload)?;
    if json_nesting_depth(&json) > MAX_CLAIMS_DEPTH {
        return err(format!("claims nest deeper than {MAX_CLAIMS_DEPTH} levels"));
    }
    #[derive(Deserialize)]
    struct Issuer {
        #[serde(default)]
        iss: String,
    }
    let issuer: Issuer =
        serde_json::from_slice(&json).map_err(|e| JwtError(format!("bad claims: {e}")))?;
    let sig = decode_part(sig)?;
    let signed = &token[..header.len() + 1 + payload.len()];
    let verified = nkeys::KeyPair::from_public_key(&issuer.iss)
        .is_ok_and(|k| k.verify(signed.as_bytes(), &sig).is_ok());
    if !verified {
        return err("claim failed V2 signature verification");
    }
    Ok(json)
}

/// Encodes `claims` (a JSON object whose `nats` says the kind) as a version 2 JWT signed by
/// `signer`, as `nsc` makes them: `iss` is set to the signer's public key, and `iat` (now)
/// and `jti` (random) are filled in when absent. The server never signs JWTs; this is for
/// setting up an operator and for tests (`examples/nsc_setup.rs`, `tests/jwt.rs`).
///
/// ```
/// let operator = nkeys::KeyPair::new_operator();
/// let claims = serde_json::json!({
///     "sub": operator.public_key(),
///     "name": "O",
///     "nats": {"type": "operator", "version": 2},
/// });
/// let token = beaver::jwt::encode(claims, &operator);
/// let decoded = beaver::jwt::decode::<beaver::jwt::Operator>(&token).unwrap();
/// assert_eq!(decoded.sub, operator.public_key());
/// ```
pub fn encode(mut claims: serde_json::Value, signer: &nkeys::KeyPair) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    claims["iss"] = signer.public_key().into();
    if claims.get("iat").is_none() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        claims["iat"] = now.into();
    }
    if claims.get("jti").is_none() {
        claims["jti"] = format!("{:032X}", fastrand::u128(..)).into();
    }
    let header = b64.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let payload = b64.encode(claims.to_string());
    let signed = format!("{header}.{payload}");
    // Signing with a key pair that has its seed cannot fail; one without (a public key
    // only) yields an unsigned token, which every decoder refuses.
    let sig = signer.sign(signed.as_bytes()).unwrap_or_default();
    format!("{signed}.{}", b64.encode(sig))
}

/// The claims of `token` as JSON, undecoded beyond that (for `/varz`
/// `trusted_operators_claim`); `None` if they are not JSON. The signature is not checked.
pub fn claims_json(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    serde_json::from_slice(&decode_part(payload).ok()?).ok()
}

/// The JWT inside a credentials or decorated JWT file (`-----BEGIN NATS ... JWT-----`
/// lines around it), or the text itself, trimmed, when it has no such lines (jwt's
/// `ParseDecoratedJWT`).
pub fn undecorate(text: &str) -> &str {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with("-----BEGIN") && line.contains("JWT") {
            return lines.next().map(str::trim).unwrap_or("");
        }
    }
    text.trim()
}

/// A list of strings as JWTs write them: an array, one string, or `null`.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    Many(Vec<String>),
    One(String),
}

/// A list of strings (Go's `StringList`): a single string is a list of one.
fn string_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::Many(v)) => v,
        Some(OneOrMany::One(s)) => vec![s],
    })
}

/// CIDRs (jwt's `CIDRList`): a single string is a comma-separated list.
fn cidr_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::Many(v)) => v,
        Some(OneOrMany::One(s)) => s
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect(),
    })
}

/// Whether every entry of `cidrs` is a CIDR as Go's `net.ParseCIDR` reads them (an address,
/// `/`, and the prefix length in decimal digits): jwt's `UserClaims.Validate` refuses the
/// JWT otherwise.
pub fn sources_valid(cidrs: &[String]) -> bool {
    cidrs.iter().all(|c| parse_cidr(c).is_some())
}

/// Whether the address `ip` is in one of `cidrs` (checked by [`sources_valid`]); an empty
/// list allows every address.
pub fn source_allowed(cidrs: &[String], ip: std::net::IpAddr) -> bool {
    cidrs.is_empty() || cidrs.iter().any(|c| cidr_contains(c, ip))
}

/// `addr/bits`, the way Go's `net.ParseCIDR` takes it.
fn parse_cidr(cidr: &str) -> Option<(std::net::IpAddr, u32)> {
    let (net, bits) = cidr.split_once('/')?;
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let net = net.parse::<std::net::IpAddr>().ok()?;
    let bits = bits.parse::<u32>().ok()?;
    let max = if net.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((net, bits))
}

fn cidr_contains(cidr: &str, ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    let Some((net, bits)) = parse_cidr(cidr) else {
        return false;
    };
    // An IPv4 client on a dual-stack socket may appear as ::ffff:a.b.c.d.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn decodes_and_checks_the_chain_links() {
        let op = nkeys::KeyPair::new_operator();
        let acc = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user();
        let op_jwt = encode(
            serde_json::json!({"sub": op.public_key(), "iat": 1, "nats": {"type": "operator", "version": 2, "system_account": acc.public_key()}}),
            &op,
        );
        assert_eq!(decode::<Operator>(&op_jwt).unwrap().iat, 1);
        let c = decode::<Operator>(&op_jwt).unwrap();
        assert_eq!(c.sub, op.public_key());
        assert_eq!(c.nats.system_account, acc.public_key());
        // The wrong kind.
        assert!(decode::<Account>(&op_jwt)
            .unwrap_err()
            .0
            .contains("expected account"));
        // A user JWT signed by an operator key: not an allowed issuer.
        let bad = encode(
            serde_json::json!({"sub": user.public_key(), "nats": {"type": "user", "version": 2}}),
            &op,
        );
        assert!(decode::<User>(&bad)
            .unwrap_err()
            .0
            .contains("may not be issued"));
        // A tampered payload.
        let good = encode(
            serde_json::json!({"sub": user.public_key(), "nats": {"type": "user", "version": 2, "pub": {"allow": "x"}, "src": "127.0.0.1/8, ::1"}}),
            &acc,
        );
        let u = decode::<User>(&good).unwrap();
        assert_eq!(u.nats.template.permissions.publish.allow, ["x"]);
        assert_eq!(u.nats.template.src, ["127.0.0.1/8", "::1"]);
        // A missing limit is 0, as Go decodes it.
        assert_eq!(u.nats.template.subs, 0);
        let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
        parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
            serde_json::json!({"iss": acc.public_key(), "sub": user.public_key(), "nats": {"type": "user", "version": 2}}).to_string(),
        );
        assert!(decode::<User>(&parts.join("."))
            .unwrap_err()
            .0
            .contains("signature"));
        assert_eq!(decode::<User>("a.b").unwrap_err().0, "expected 3 chunks");
        assert!(decode::<User>("!.!.!").is_err());
    }

    #[test]
    fn revocations_expiry_and_sources() {
        let a = Account {
            revocations: [("UX".to_owned(), 100), ("*".to_owned(), 50)].into(),
            ..Account::default()
        };
        assert!(a.is_revoked("UX", 100));
        assert!(!a.is_revoked("UX", 101));
        assert!(a.is_revoked("UY", 50));
        assert!(!a.is_revoked("UY", 51));
        let c = Claims {
            jti: String::new(),
            iat: 0,
            iss: String::new(),
            sub: String::new(),
            name: String::new(),
            exp: 10,
            nbf: 5,
            nats: (),
        };
        assert!(!c.expired(10) && c.expired(11));
        assert!(c.not_yet_valid(4) && !c.not_yet_valid(5));
        let ip = |s: &str| s.parse().unwrap();
        let cidrs = vec!["10.0.0.0/8".to_owned(), "::1/128".to_owned()];
        assert!(sources_valid(&cidrs));
        assert!(source_allowed(&cidrs, ip("10.1.2.3")));
        assert!(source_allowed(&cidrs, ip("::1")));
        assert!(!source_allowed(&cidrs, ip("127.0.0.1")));
        assert!(source_allowed(&[], ip("127.0.0.1")));
        assert!(source_allowed(
            &["127.0.0.1/32".into()],
            ip("::ffff:127.0.0.1")
        ));
        // Go's ParseCIDR: a bare address, a sign, a prefix too long are all invalid.
        for bad in [
            "nonsense",
            "127.0.0.1",
            "127.0.0.1/+8",
            "127.0.0.1/33",
            "::1/129",
            "1.2.3.4/",
        ] {
            assert!(!sources_valid(&[bad.to_owned()]), "{bad}");
        }
    }

    #[test]
    fn deep_claims_are_refused_without_recursion() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let claims = format!(r#"{{"nats":{{"type":"user","version":2,"x":{deep}}}}}"#);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = format!(
            "{}.{}.AA",
            b64.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#),
            b64.encode(claims)
        );
        // On a small stack, as a reader thread's.
        let refused = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || decode::<User>(&token).unwrap_err().0)
            .unwrap()
            .join()
            .unwrap();
        assert!(refused.contains("deeper"), "{refused}");
    }

    #[test]
    fn decorated_files() {
        let text = "-----BEGIN NATS OPERATOR JWT-----\neyJabc.def.ghi\n------END NATS OPERATOR JWT------\n";
        assert_eq!(undecorate(text), "eyJabc.def.ghi");
        assert_eq!(undecorate("  eyJabc.def.ghi\n"), "eyJabc.def.ghi");
    }
}
