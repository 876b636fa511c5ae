//! Operator mode's exports and imports: the account JWTs' `exports` and `imports` turned into
//! what a configuration file's accounts share ([`crate::config::sharing`]), so that
//! `crate::imports` bridges them the same way.
//!
//! Each import is checked as nats-server checks it when it loads an account
//! (`UpdateAccountClaims` with `checkAuth` and `checkActivation`): the exporting account must
//! be trusted and have an export of the same kind whose subjects hold the import's, public,
//! or naming the importer at its `account_token_position`, or private (`token_req`) with a
//! valid activation token. An import that fails is left out, with an error in the log naming
//! both accounts, and the importer's other imports still work (nats-server marks such an
//! account incomplete and carries on). Then, as for configuration files, imports that would
//! make a cycle of accounts, and `local_subject`s that rename wildcard subjects (a subject
//! mapping, which beaver lacks), are left out too.

use crate::config::sharing::{
    self, Export, Import, ImportKind, ResponseType, ServiceExport, DEFAULT_RESPONSE_THRESHOLD,
};
use crate::config::AccountConfig;
use crate::jwt::{self, Claims};
use crate::subjects::has_wildcard;
use std::time::Duration;

/// What the trusted accounts (`accounts`: public key and claims) share, at Unix time `now`,
/// as accounts of a configuration (named by their public keys, with no users).
pub fn from_jwts(accounts: &[(String, Claims<jwt::Account>)], now: i64) -> Vec<AccountConfig> {
    let mut out: Vec<AccountConfig> = accounts
        .iter()
        .map(|(key, claims)| AccountConfig {
            name: key.clone(),
            exports: claims.nats.exports.iter().filter_map(export).collect(),
            imports: claims
                .nats
                .imports
                .iter()
                .filter_map(|i| import(key, i, accounts, now))
                .collect(),
            ..AccountConfig::default()
        })
        .collect();
    // Cycles: the configuration's rule, applied by dropping an importer's imports until
    // none is left (an account JWT cannot stop start-up the way a file's error does).
    for services in [false, true] {
        while let Err(e) = sharing::check_cycles(&out, services) {
            let Some(name) = cycle_account(&e) else {
                break;
            };
            log::error!("Account {name}: {e}: its imports of that kind are left out");
            if let Some(a) = out.iter_mut().find(|a| a.name == name) {
                a.imports.retain(|i| i.is_service() != services);
            }
        }
    }
    out
}

/// The account a cycle error names (`accounts.<name>: ...`).
fn cycle_account(error: &str) -> Option<String> {
    let rest = error.strip_prefix("accounts.")?;
    Some(rest.split(':').next()?.to_owned())
}

/// One JWT export as a configuration's (who may import it was checked per import, so it is
/// public here).
fn export(e: &jwt::Export) -> Option<Export> {
    let service = match e.kind.to_ascii_lowercase().as_str() {
        "stream" => None,
        "service" => Some(ServiceExport {
            response: match e.response_type.to_ascii_lowercase().as_str() {
                "stream" => ResponseType::Stream,
                "chunked" => ResponseType::Chunked,
                _ => ResponseType::Singleton,
            },
            threshold: match e.response_threshold {
                t if t > 0 => Duration::from_nanos(t.unsigned_abs()),
                _ => DEFAULT_RESPONSE_THRESHOLD,
            },
        }),
        _ => return None,
    };
    Some(Export {
        subject: e.subject.clone(),
        service,
        accounts: Vec::new(),
    })
}

/// One JWT import of account `importer`, if allowed (see the module docs).
fn import(
    importer: &str,
    i: &jwt::Import,
    accounts: &[(String, Claims<jwt::Account>)],
    now: i64,
) -> Option<Import> {
    let refuse = |why: &str| {
        log::error!(
            "Account {importer}: {} import of {:?} from {}: {why}: left out",
            i.kind,
            i.subject,
            i.account
        );
        None
    };
    let Some((_, exporter)) = accounts.iter().find(|(k, _)| *k == i.account) else {
        return refuse("the exporting account is not known");
    };
    if i.account == importer {
        return refuse("an account cannot import from itself");
    }
    let signers: Vec<String> = exporter
        .nats
        .signing_keys
        .iter()
        .map(|k| k.key().to_owned())
        .collect();
    let mut why = "no export of that kind holds its subjects".to_owned();
    let allowing = exporter.nats.exports.iter().find(|e| {
        match i.authorized_by(importer, &exporter.sub, &signers, e, now) {
            Ok(()) => true,
            Err(reason) => {
                // The reason of the export that came closest: one of the right kind whose
                // subjects hold the import's.
                if e.kind.eq_ignore_ascii_case(&i.kind)
                    && crate::subjects::is_subset_match(
                        i.exported_subject().as_bytes(),
                        e.subject.as_bytes(),
                    )
                {
                    why = reason;
                }
                false
            }
        }
    });
    let Some(allowing) = allowing else {
        return refuse(&why);
    };
    // A private export's import ends when its activation token expires (an
    // `account_token_position` export needs no token: nats-server checks that first).
    let expires = (allowing.token_req && allowing.account_token_position == 0)
        .then(|| jwt::decode::<jwt::sharing::Activation>(&i.token).ok())
        .flatten()
        .map(|act| act.exp)
        .filter(|&exp| exp > 0);
    let subject = i.exported_subject().to_owned();
    let local = (!i.local_subject.is_empty()).then(|| i.local_subject.clone());
    let kind = if i.kind.eq_ignore_ascii_case("service") {
        // `local_subject`, or (legacy) `subject` when `to` named the exported one.
        let to = local.or_else(|| (subject != i.subject).then(|| i.subject.clone()));
        ImportKind::Service { to }
    } else {
        match local {
            Some(to) => ImportKind::Stream {
                prefix: None,
                to: Some(to),
            },
            // `to` is a stream's prefix (nats-server's `AddStreamImportWithClaim`).
            None => ImportKind::Stream {
                prefix: (!i.to.is_empty()).then(|| i.to.trim_end_matches('.').to_owned()),
                to: None,
            },
        }
    };
    let out = Import {
        account: i.account.clone(),
        subject,
        kind,
        expires,
    };
    let local = out.local_subject();
    let renamed = !matches!(
        out.kind,
        ImportKind::Stream {
            prefix: Some(_),
            ..
        }
    ) && local != out.subject;
    if renamed && (has_wildcard(local.as_bytes()) || has_wildcard(out.subject.as_bytes())) {
        return refuse("mapping wildcard subjects is not supported by beaver yet");
    }
    if let ImportKind::Stream {
        prefix: Some(p), ..
    } = &out.kind
    {
        if has_wildcard(p.as_bytes()) {
            return refuse("stream import prefix can not contain wildcard tokens");
        }
    }
    Some(out)
}
