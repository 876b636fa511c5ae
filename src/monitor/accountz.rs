//! `GET /accountz` (and the system account's `ACCOUNTZ`): the server's accounts (nats-server's
//! `Accountz`), and with `?acc=NAME` one account's detail (`account_detail`, nats-server's
//! `AccountInfo`): its connections, subscriptions, exports and imports, and in operator mode
//! its JWT, issuer, name and tags. An unknown account is a 400 (`Account X does not exist`).
//!
//! Left out of the detail: nats-server's own imports of the system account's services
//! (beaver answers those requests without imports), `decoded_jwt`,
//! `validation_result_jwt`, `responses` and `mappings`.

use super::json::GoTime;
use super::query::Query;
use crate::config::sharing::{ImportKind, ResponseType};
use crate::shared::Shared;
use serde::Serialize;
use std::time::SystemTime;

/// The `/accountz` document, in nats-server's field order.
#[derive(Debug, Serialize)]
pub struct Accountz {
    /// This server's id.
    pub server_id: String,
    /// When this was computed.
    pub now: GoTime,
    /// The system account, when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub system_account: String,
    /// Every account's name, `$G` first (without `acc=`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
    /// With `acc=`: that account's detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_detail: Option<AccountInfo>,
}

/// One account's detail (nats-server's `AccountInfo`, in its field order).
#[derive(Debug, Serialize)]
pub struct AccountInfo {
    /// Its name (a public key in operator mode).
    pub account_name: String,
    /// When it was added (or its JWT last taken).
    pub update_time: GoTime,
    /// Whether it is the system account.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_system: bool,
    /// Whether its JWT expired.
    pub expired: bool,
    /// Whether every import could be set up (beaver leaves out those that cannot: true).
    pub complete: bool,
    /// Whether its clients have JetStream.
    pub jetstream_enabled: bool,
    /// Leafnode connections bound to it.
    pub leafnode_connections: usize,
    /// Client connections in it.
    pub client_connections: usize,
    /// Subscriptions in its table.
    pub subscriptions: usize,
    /// What it exports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<ExtExport>,
    /// What it imports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ExtImport>,
    /// Its account JWT (operator mode).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub jwt: String,
    /// The key that signed its JWT.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub issuer_key: String,
    /// Its JWT's `name`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name_tag: String,
    /// Its JWT's tags.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Its revoked users, with the time of each revocation.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub revoked_user: std::collections::BTreeMap<String, GoTime>,
    /// Its subscription table's statistics.
    pub sublist_stats: super::subsz::SubszStats,
}

/// An export (nats-server's `ExtExport`: `jwt.Export` and who may import it).
#[derive(Debug, Serialize)]
pub struct ExtExport {
    /// Its subjects.
    pub subject: String,
    /// `stream` or `service`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Private (an activation token is needed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub token_req: bool,
    /// A service's `Singleton`, `Stream` or `Chunked`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_type: Option<&'static str>,
    /// The accounts it is restricted to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approved_accounts: Vec<String>,
}

/// An import (nats-server's `ExtImport`: `jwt.Import` and its state).
#[derive(Debug, Serialize)]
pub struct ExtImport {
    /// A service's subject in the importing account; a stream's in the exporting one.
    pub subject: String,
    /// The exporting account.
    pub account: String,
    /// A service's subject in the exporting account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// A stream's subject in the importing account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_subject: Option<String>,
    /// `stream` or `service`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// It could not be set up (never, in beaver: such imports are left out).
    pub invalid: bool,
    /// Latency sharing (not implemented: false).
    pub share: bool,
    /// Latency tracking (not implemented: false).
    pub tracking: bool,
}

/// Builds `/accountz`; `Err`: the 400 message.
pub fn accountz(shared: &Shared, q: &Query) -> Result<Accountz, String> {
    let config = shared.config();
    let system_account = config
        .system_account_name()
        .filter(|name| shared.accounts.get(name).is_some())
        .unwrap_or_default();
    let acc = q.get("acc");
    let (accounts, account_detail) = if acc.is_empty() {
        let names = shared
            .accounts
            .list()
            .iter()
            .map(|a| a.name.clone())
            .collect();
        (names, None)
    } else {
        (
            Vec::new(),
            Some(account_info(shared, acc, &system_account)?),
        )
    };
    Ok(Accountz {
        server_id: shared.server_id.clone(),
        now: GoTime(SystemTime::now()),
        system_account,
        accounts,
        account_detail,
    })
}

/// Account `name`'s detail; `Err`: nats-server's words for an unknown account.
pub fn account_info(shared: &Shared, name: &str, system: &str) -> Result<AccountInfo, String> {
    let account = shared
        .accounts
        .get(name)
        .ok_or_else(|| format!("Account {name} does not exist"))?;
    let (mut clients, mut leafs) = (0, 0);
    for c in shared.registry.client_list() {
        if c.is_route() || c.service().is_some() || c.account().name != name {
            continue;
        }
        if c.is_leaf() {
            leafs += 1;
        } else {
            clients += 1;
        }
    }
    let sharing = crate::imports::sharing_accounts(shared);
    let mine = sharing.iter().find(|a| a.name == name);
    let exports = mine
        .iter()
        .flat_map(|a| a.exports.iter())
        .map(|e| ExtExport {
            subject: e.subject.clone(),
            kind: if e.service.is_some() {
                "service"
            } else {
                "stream"
            },
            token_req: false,
            response_type: e.service.map(|s| match s.response {
                ResponseType::Singleton => "Singleton",
                ResponseType::Stream => "Stream",
                ResponseType::Chunked => "Chunked",
            }),
            approved_accounts: e.accounts.clone(),
        })
        .collect();
    let imports = mine
        .iter()
        .flat_map(|a| a.imports.iter())
        .map(|i| match &i.kind {
            ImportKind::Service { .. } => ExtImport {
                subject: i.local_subject(),
                account: i.account.clone(),
                to: Some(i.subject.clone()),
                local_subject: None,
                kind: "service",
                invalid: false,
                share: false,
                tracking: false,
            },
            ImportKind::Stream { .. } => ExtImport {
                subject: i.subject.clone(),
                account: i.account.clone(),
                to: None,
                local_subject: Some(i.local_subject()),
                kind: "stream",
                invalid: false,
                share: false,
                tracking: false,
            },
        })
        .collect();
    let auth = shared.auth();
    let jwt = auth.trust().and_then(|t| t.account_jwt(name));
    let mut info = AccountInfo {
        account_name: name.to_owned(),
        update_time: GoTime(account.created),
        is_system: name == system,
        expired: false,
        complete: true,
        jetstream_enabled: shared.config().jetstream.is_some() && name != system,
        leafnode_connections: leafs,
        client_connections: clients,
        subscriptions: account.sublist.count(),
        exports,
        imports,
        jwt: String::new(),
        issuer_key: String::new(),
        name_tag: String::new(),
        tags: Vec::new(),
        revoked_user: Default::default(),
        sublist_stats: account.sublist.stats().into(),
    };
    if let Some((token, claims)) = jwt {
        let now = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        info.expired = claims.expired(now);
        info.jwt = token;
        info.issuer_key = claims.iss.clone();
        info.name_tag = claims.name.clone();
        info.tags = claims.nats.tags.clone();
        info.revoked_user = claims
            .nats
            .revocations
            .iter()
            .map(|(k, &t)| {
                let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(t.max(0) as u64);
                (k.clone(), GoTime(at))
            })
            .collect();
    }
    Ok(info)
}
