//! What account JWTs share (`jwt.Export`, `jwt.Import`, `jwt.ActivationClaims` of
//! `nats-io/jwt/v2`): an account's `exports` of streams and services, another account's
//! `imports` of them, and the activation tokens that let an account import a private export
//! (`token_req`).
//!
//! Plain claims, as the JWT carries them; whether an import is allowed is decided by
//! `auth::operator`, which knows the accounts ([`Import::authorized_by`] is the rule for one
//! import and one export).

use super::{decode, is_key, ClaimKind, Claims};
use serde::Deserialize;
use std::collections::HashMap;

/// One entry of an account JWT's `exports` (`jwt.Export`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
pub struct Export {
    /// A name for people.
    #[serde(default)]
    pub name: String,
    /// The exported subjects (wildcards allowed).
    #[serde(default)]
    pub subject: String,
    /// `stream` or `service`.
    #[serde(default, rename = "type")]
    pub kind: String,
    /// Private: an importer needs an activation token signed by the exporting account.
    #[serde(default)]
    pub token_req: bool,
    /// Revoked activations: importing account's public key (or `*`) to a Unix time; a token
    /// issued at or before it no longer activates.
    #[serde(default)]
    pub revocations: HashMap<String, i64>,
    /// A service's responses: `Singleton` (the default), `Stream` or `Chunked`.
    #[serde(default)]
    pub response_type: String,
    /// How long a service's responses are routed back, in nanoseconds (0: the default).
    #[serde(default)]
    pub response_threshold: i64,
    /// Non-zero: the subject's token at this position (from 1) must be the importing
    /// account's public key.
    #[serde(default)]
    pub account_token_position: usize,
}

/// One entry of an account JWT's `imports` (`jwt.Import`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
pub struct Import {
    /// A name for people.
    #[serde(default)]
    pub name: String,
    /// The subjects in the exporting account (for a service without `local_subject` but
    /// with `to`: the subject the importer publishes on, nats-server's legacy reading).
    #[serde(default)]
    pub subject: String,
    /// The exporting account's public key.
    #[serde(default)]
    pub account: String,
    /// The activation token (a JWT) of a private export.
    #[serde(default)]
    pub token: String,
    /// Deprecated by `local_subject`: a stream's prefix, or a service's subject in the
    /// exporting account.
    #[serde(default)]
    pub to: String,
    /// Where the import appears in the importing account.
    #[serde(default)]
    pub local_subject: String,
    /// `stream` or `service`.
    #[serde(default, rename = "type")]
    pub kind: String,
}

/// An activation token's claims (`jwt.Activation`): the exporting account (or one of its
/// signing keys, naming the account as `issuer_account`) lets the account `sub` import
/// `subject`.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Activation {
    /// The subjects it activates.
    #[serde(default)]
    pub subject: String,
    /// `stream` or `service`.
    #[serde(default)]
    pub kind: String,
    /// The exporting account, when a signing key of it signed the token.
    #[serde(default)]
    pub issuer_account: String,
}

impl ClaimKind for Activation {
    const KIND: &'static str = "activation";
    fn issuer_ok(issuer: &str) -> bool {
        is_key(issuer, 'A')
    }
}

/// Why an import is not allowed (for the log).
pub type Refusal = String;

/// The limits an account JWT sets on its own exports and imports (`jwt.Account.Validate`'s
/// errors, which make the account invalid in nats-server): at most `limits.imports`
/// imports and `limits.exports` exports (-1: no limit; a missing limit is 0, as Go reads
/// it), and no wildcard in an export unless `limits.wildcards`.
pub fn validate_limits(account: &super::Account) -> Result<(), String> {
    let limits = &account.limits;
    let over = |limit: i64, n: usize| limit != -1 && i64::try_from(n).map_or(true, |n| n > limit);
    if over(limits.imports, account.imports.len()) {
        return Err("the account contains more imports than allowed by the operator".into());
    }
    if limits.exports != -1 {
        if over(limits.exports, account.exports.len()) {
            return Err("the account contains more exports than allowed by the operator".into());
        }
        let wildcard = account
            .exports
            .iter()
            .any(|e| crate::subjects::has_wildcard(e.subject.as_bytes()));
        if !limits.wildcards && wildcard {
            return Err(
                "the account contains wildcard exports that are not allowed by the operator".into(),
            );
        }
    }
    Ok(())
}

/// The checks of an account JWT's `imports` that make the whole account invalid in
/// nats-server (`jwt.Import.Validate`'s errors: its users are then refused), for account
/// `account`: each import is of a known kind and names its exporter, `local_subject` does
/// not come with `to`, and an activation token decodes, was issued by the exporting account
/// (or for it), to `account`, for the import's kind and subjects. Its expiry is not checked
/// here: an expired token only leaves its import out ([`Import::authorized_by`]).
pub fn validate_imports(account: &str, imports: &[Import]) -> Result<(), String> {
    for i in imports {
        let kind = i.kind.to_ascii_lowercase();
        if kind != "stream" && kind != "service" {
            return Err(format!("invalid import type: {:?}", i.kind));
        }
        if i.account.is_empty() {
            return Err("account to import from is not specified".into());
        }
        if !i.local_subject.is_empty() && !i.to.is_empty() {
            return Err("Local Subject replaces To".into());
        }
        if i.token.is_empty() {
            continue;
        }
        let act: Claims<Activation> = decode(&i.token).map_err(|_| {
            format!(
                "import {:?} contains an invalid activation token",
                i.subject
            )
        })?;
        if act.iss != i.account && act.nats.issuer_account != i.account {
            return Err(format!(
                "activation token doesn't match account for import {:?}",
                i.subject
            ));
        }
        if act.sub != account {
            return Err(format!(
                "activation token doesn't match account it is being included in, {:?}",
                i.subject
            ));
        }
        if !act.nats.kind.eq_ignore_ascii_case(&i.kind) {
            return Err(format!(
                "mismatch between token import type {} and type of import {}",
                act.nats.kind, i.kind
            ));
        }
        let subject = i.exported_subject();
        if !crate::subjects::is_subset_match(subject.as_bytes(), act.nats.subject.as_bytes()) {
            return Err(format!(
                "activation token import subject {:?} doesn't match import {:?}",
                act.nats.subject, i.subject
            ));
        }
    }
    Ok(())
}

impl Import {
    /// Whether `importer` may take this import from `export` of account `exporter` (whose
    /// signing keys are `signers`), at Unix time `now` (nats-server's `checkAuth` and
    /// `checkActivation`): the kinds match and the import's subjects lie within the
    /// export's; then a public export allows it, an `account_token_position` needs the
    /// importer's key at that token of the subject, and a private one (`token_req`) a valid
    /// activation token: signed by the exporter (or one of its signing keys), for
    /// `importer`, covering the import's subjects, not expired, not revoked by the export.
    pub fn authorized_by(
        &self,
        importer: &str,
        exporter: &str,
        signers: &[String],
        export: &Export,
        now: i64,
    ) -> Result<(), Refusal> {
        if !export.kind.eq_ignore_ascii_case(&self.kind) {
            return Err("not of the export's kind".into());
        }
        let subject = self.exported_subject();
        if !crate::subjects::is_subset_match(subject.as_bytes(), export.subject.as_bytes()) {
            return Err("outside the export's subjects".into());
        }
        if export.account_token_position > 0 {
            let token = subject.split('.').nth(export.account_token_position - 1);
            return if token == Some(importer) {
                Ok(())
            } else {
                Err("the subject does not name the importing account".into())
            };
        }
        if !export.token_req {
            return Ok(());
        }
        if self.token.is_empty() {
            return Err("a private export needs an activation token".into());
        }
        let act: Claims<Activation> =
            decode(&self.token).map_err(|e| format!("activation token not valid: {e}"))?;
        if act.sub != importer {
            return Err("activation token doesn't match account for import".into());
        }
        let signed_by_exporter = act.iss == exporter
            || (act.nats.issuer_account == exporter && signers.contains(&act.iss));
        if !signed_by_exporter {
            return Err("activation token not signed by the account being imported from".into());
        }
        if !crate::subjects::is_subset_match(subject.as_bytes(), act.nats.subject.as_bytes()) {
            return Err(format!(
                "activation token import subject {:?} doesn't match import {subject:?}",
                act.nats.subject
            ));
        }
        if act.exp != 0 && act.exp <= now {
            return Err("activation token has expired".into());
        }
        let revoked = [act.sub.as_str(), "*"]
            .iter()
            .any(|k| export.revocations.get(*k).is_some_and(|&t| t >= act.iat));
        if revoked {
            return Err("activation token revoked".into());
        }
        Ok(())
    }

    /// The subjects in the exporting account (nats-server's reading: a service with `to`
    /// and no `local_subject` is published on `subject` and reaches `to`).
    pub fn exported_subject(&self) -> &str {
        if self.kind.eq_ignore_ascii_case("service")
            && self.local_subject.is_empty()
            && !self.to.is_empty()
        {
            &self.to
        } else {
            &self.subject
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service_import(subject: &str, token: String) -> Import {
        Import {
            subject: subject.into(),
            account: String::new(),
            token,
            kind: "service".into(),
            ..Import::default()
        }
    }

    #[test]
    fn public_private_and_positional_exports() {
        let exporter = nkeys::KeyPair::new_account();
        let importer = nkeys::KeyPair::new_account().public_key();
        let (e, now) = (exporter.public_key(), 1_000);
        let public = Export {
            subject: "help.>".into(),
            kind: "service".into(),
            ..Export::default()
        };
        let ok = |i: &Import, x: &Export| i.authorized_by(&importer, &e, &[], x, now).is_ok();
        assert!(ok(&service_import("help.me", String::new()), &public));
        assert!(!ok(&service_import("other", String::new()), &public));
        let mut stream = service_import("help.me", String::new());
        stream.kind = "stream".into();
        assert!(!ok(&stream, &public), "kinds must match");
        // The importer's key at the second token.
        let positional = Export {
            subject: "req.*.>".into(),
            kind: "service".into(),
            account_token_position: 2,
            ..Export::default()
        };
        assert!(ok(
            &service_import(&format!("req.{importer}.x"), String::new()),
            &positional
        ));
        assert!(!ok(
            &service_import("req.someone.x", String::new()),
            &positional
        ));
        // Private: a token of the exporter, for the importer and the subjects.
        let private = Export {
            token_req: true,
            ..public.clone()
        };
        let token = |sub: &str, subject: &str, iat: i64, exp: i64| {
            crate::jwt::encode(
                json!({"sub": sub, "iat": iat, "exp": exp, "nats": {"type": "activation",
                    "version": 2, "subject": subject, "kind": "service"}}),
                &exporter,
            )
        };
        assert!(!ok(&service_import("help.me", String::new()), &private));
        assert!(ok(
            &service_import("help.me", token(&importer, "help.>", 900, 0)),
            &private
        ));
        assert!(!ok(
            &service_import("help.me", token(&e, "help.>", 900, 0)),
            &private
        ));
        assert!(!ok(
            &service_import("help.me", token(&importer, "help.x", 900, 0)),
            &private
        ));
        assert!(!ok(
            &service_import("help.me", token(&importer, "help.>", 900, 999)),
            &private
        ));
        let revoked = Export {
            revocations: [(importer.clone(), 900)].into_iter().collect(),
            ..private.clone()
        };
        assert!(!ok(
            &service_import("help.me", token(&importer, "help.>", 900, 0)),
            &revoked
        ));
        assert!(ok(
            &service_import("help.me", token(&importer, "help.>", 901, 0)),
            &revoked
        ));
    }

    #[test]
    fn invalid_imports_invalidate_the_account() {
        let exporter = nkeys::KeyPair::new_account();
        let importer = nkeys::KeyPair::new_account().public_key();
        let token = |sub: &str, kind: &str| {
            crate::jwt::encode(
                json!({"sub": sub, "nats": {"type": "activation", "version": 2,
                    "subject": "help.>", "kind": kind}}),
                &exporter,
            )
        };
        let with = |token: String| {
            let mut i = service_import("help.me", token);
            i.account = exporter.public_key();
            vec![i]
        };
        assert!(validate_imports(&importer, &with(token(&importer, "service"))).is_ok());
        assert!(validate_imports(&importer, &with(token("ASOMEONE", "service"))).is_err());
        assert!(validate_imports(&importer, &with(token(&importer, "stream"))).is_err());
        assert!(validate_imports(&importer, &with("garbage".into())).is_err());
        let mut no_account = with(String::new());
        no_account[0].account.clear();
        assert!(validate_imports(&importer, &no_account).is_err());
    }
}
