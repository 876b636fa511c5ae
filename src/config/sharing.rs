//! What accounts share (nats-server's account `exports` and `imports`): plain structs any
//! front end fills, and the rules between accounts, checked once by `validate` with
//! nats-server's words.
//!
//! An account **exports** a stream (messages published on its subjects) or a service
//! (requests on its subjects, answered by its subscribers), to every account or to those
//! listed. Another account **imports** it: a stream's messages then reach the importer's
//! subscribers (under a `prefix`, or on the `to` subject); a service is reached by publishing
//! on the import's `to` subject (by default the exported one) in the importer, and its
//! answers come back to the requester. `crate::imports` carries the messages.

use crate::subjects::{has_wildcard, is_subset_match, is_valid_subscription_subject};
use std::time::Duration;

/// nats-server's default response threshold of a service export: how long its responses
/// are routed back to the requester (2 minutes).
pub const DEFAULT_RESPONSE_THRESHOLD: Duration = Duration::from_secs(120);

/// How many responses a service request gets (nats-server's `ServiceRespType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseType {
    /// One (the default): the way back closes after the first response.
    #[default]
    Singleton,
    /// Any number, until the response threshold passes.
    Stream,
    /// Any number, in chunks, until the response threshold passes.
    Chunked,
}

/// One entry of an account's `exports`.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    /// The subjects (wildcards allowed).
    pub subject: String,
    /// `Some` for a service (with how it answers), `None` for a stream.
    pub service: Option<ServiceExport>,
    /// The accounts that may import it; empty: all (a public export).
    pub accounts: Vec<String>,
}

/// What a service export adds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceExport {
    /// How many responses a request gets (`response`, `response_type`).
    pub response: ResponseType,
    /// How long responses are routed back (`response_threshold`, default 2 minutes).
    pub threshold: Duration,
}

impl Default for ServiceExport {
    /// nats-server's defaults: singleton, 2 minutes.
    fn default() -> Self {
        ServiceExport {
            response: ResponseType::Singleton,
            threshold: DEFAULT_RESPONSE_THRESHOLD,
        }
    }
}

/// One entry of an account's `imports`.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// The exporting account.
    pub account: String,
    /// The subjects in the exporting account (within one of its exports).
    pub subject: String,
    /// A stream or a service, and where it appears in the importer.
    pub kind: ImportKind,
    /// Operator mode: when the activation token that allows it expires (Unix seconds);
    /// from then on nothing crosses it (nats-server's `activationExpired`). `None` for a
    /// configuration file's imports.
    pub expires: Option<i64>,
}

/// Where an import appears in the importing account.
#[derive(Debug, Clone, PartialEq)]
pub enum ImportKind {
    /// Stream: its messages reach the importer's subscribers on `prefix.subject`, or on
    /// `to`, or on the same subject.
    Stream {
        /// `prefix`.
        prefix: Option<String>,
        /// `to`.
        to: Option<String>,
    },
    /// Service: the importer's clients publish requests on `to` (by default the exported
    /// subject).
    Service {
        /// `to`.
        to: Option<String>,
    },
}

impl Import {
    /// Whether this imports a service.
    pub fn is_service(&self) -> bool {
        matches!(self.kind, ImportKind::Service { .. })
    }

    /// The subject the importer sees (a stream's messages arrive on it; a service's requests
    /// are published to it).
    pub fn local_subject(&self) -> String {
        match &self.kind {
            ImportKind::Stream {
                prefix: Some(p), ..
            } => format!("{p}.{}", self.subject),
            ImportKind::Stream { to: Some(t), .. } | ImportKind::Service { to: Some(t) } => {
                t.clone()
            }
            _ => self.subject.clone(),
        }
    }
}

/// Checks every account's exports and imports against the others (nats-server's
/// `parseAccounts` checks, in its words where it has them).
pub(crate) fn validate(config: &super::Config) -> Result<(), String> {
    let find = |name: &str| config.accounts.iter().find(|a| a.name == name);
    for acc in &config.accounts {
        for e in &acc.exports {
            let what = if e.service.is_some() {
                "service"
            } else {
                "stream"
            };
            if !is_valid_subscription_subject(e.subject.as_bytes()) {
                return Err(format!(
                    "accounts.{}: Error adding {what} export {:?}: subject is not valid",
                    acc.name, e.subject
                ));
            }
            for a in &e.accounts {
                if find(a).is_none() {
                    return Err(format!(
                        "accounts.{}: {a:?} account not defined for {what} export",
                        acc.name
                    ));
                }
            }
        }
        for i in &acc.imports {
            let what = if i.is_service() { "service" } else { "stream" };
            let Some(exporter) = find(&i.account) else {
                return Err(format!(
                    "accounts.{}: {:?} account not defined for {what} import",
                    acc.name, i.account
                ));
            };
            if !is_valid_subscription_subject(i.subject.as_bytes()) {
                return Err(format!(
                    "accounts.{}: Error adding {what} import {:?}: subject is not valid",
                    acc.name, i.subject
                ));
            }
            let authorized = exporter.exports.iter().any(|e| {
                e.service.is_some() == i.is_service()
                    && is_subset_match(i.subject.as_bytes(), e.subject.as_bytes())
                    && (e.accounts.is_empty() || e.accounts.contains(&acc.name))
            });
            if !authorized {
                return Err(format!(
                    "accounts.{}: Error adding {what} import {:?}: {what} import not authorized",
                    acc.name, i.subject
                ));
            }
            if let ImportKind::Stream {
                prefix: Some(p), ..
            } = &i.kind
            {
                // nats-server's words.
                if has_wildcard(p.as_bytes()) {
                    return Err(format!(
                        "accounts.{}: Error adding stream import {:?}: stream import prefix \
                         can not contain wildcard tokens",
                        acc.name, i.subject
                    ));
                }
            }
            let local = i.local_subject();
            if !is_valid_subscription_subject(local.as_bytes()) {
                return Err(format!(
                    "accounts.{}: Error adding {what} import {:?}: {local:?} is not a valid \
                     subject",
                    acc.name, i.subject
                ));
            }
            // A `to` that renames wildcard tokens (a subject mapping) is not implemented:
            // wildcards must stay where they are, or the subjects be literal.
            let renamed = !matches!(
                &i.kind,
                ImportKind::Stream {
                    prefix: Some(_),
                    ..
                }
            ) && local != i.subject;
            if renamed && (has_wildcard(local.as_bytes()) || has_wildcard(i.subject.as_bytes())) {
                return Err(format!(
                    "accounts.{}: {what} import {:?} to {local:?}: mapping wildcard subjects \
                     is not supported by beaver yet",
                    acc.name, i.subject
                ));
            }
        }
    }
    check_cycles(&config.accounts, false)?;
    check_cycles(&config.accounts, true)
}

/// Refuses imports that form a cycle of accounts (A imports from B, which imports from A,
/// or A from itself): messages would go round. nats-server refuses those whose subjects
/// overlap; beaver refuses every cycle of stream imports, and of service imports
/// (`services`), stricter.
pub(crate) fn check_cycles(
    accounts: &[super::AccountConfig],
    services: bool,
) -> Result<(), String> {
    let what = if services { "service" } else { "stream" };
    // Edges: exporter -> importer (messages flow that way).
    let edges: Vec<Vec<usize>> = accounts
        .iter()
        .map(|exporter| {
            accounts
                .iter()
                .enumerate()
                .filter(|(_, importer)| {
                    importer
                        .imports
                        .iter()
                        .any(|i| i.is_service() == services && i.account == exporter.name)
                })
                .map(|(n, _)| n)
                .collect()
        })
        .collect();
    // Iterative depth-first search with colours (0 new, 1 on the path, 2 done).
    let mut colour = vec![0u8; accounts.len()];
    for start in 0..accounts.len() {
        if colour[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        colour[start] = 1;
        while let Some((node, next)) = stack.pop() {
            if let Some(&to) = edges[node].get(next) {
                stack.push((node, next + 1));
                match colour[to] {
                    0 => {
                        colour[to] = 1;
                        stack.push((to, 0));
                    }
                    1 => {
                        let name = &accounts[to].name;
                        return Err(format!(
                            "accounts.{name}: Error adding {what} import: import forms a cycle"
                        ));
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn both_formats_read_the_same_sharing() {
        let toml = Config::from_toml(
            "[accounts.A]\nexports = [{ service = \"svc.>\", response = \"stream\", \
             response_threshold = \"5s\" }, { stream = \"ev.>\", accounts = [\"B\"] }]\n\
             [accounts.B]\nimports = [{ service = { account = \"A\", subject = \"svc.x\" }, \
             to = \"x\" }, { stream = { account = \"A\", subject = \"ev.>\" }, prefix = \"a\" }]\n",
        )
        .unwrap();
        let conf = Config::from_nats_conf(
            "accounts {\n  A { exports = [ { service: \"svc.>\", response_type: stream, \
             threshold: \"5s\" }, { stream: \"ev.>\", accounts: [B] } ] }\n  \
             B { imports = [ { service: { account: A, subject: \"svc.x\" }, to: x }, \
             { stream: { account: A, subject: \"ev.>\" }, prefix: a } ] }\n}\n",
        )
        .unwrap();
        assert_eq!(toml.accounts, conf.0.accounts);
        let a = &toml.accounts[0];
        assert_eq!(
            a.exports[0].service,
            Some(ServiceExport {
                response: ResponseType::Stream,
                threshold: Duration::from_secs(5),
            })
        );
        assert_eq!(toml.accounts[1].imports[1].local_subject(), "a.ev.>");
        assert_eq!(toml.accounts[1].imports[0].local_subject(), "x");
    }
}
