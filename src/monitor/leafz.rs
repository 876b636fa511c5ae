//! `/leafz`: the leafnode connections (nats-server's `Leafz`, `LeafInfo`, in its field
//! order), with `?subs=1` for each one's interest and `?acc=NAME` to keep one account's.

use super::json::{go_rtt, GoTime};
use crate::leaf::Leafnodes;
use crate::shared::Shared;
use serde::Serialize;
use std::time::SystemTime;

/// The `/leafz` document.
#[derive(Debug, Serialize)]
pub struct Leafz {
    /// This server's id.
    pub server_id: String,
    /// Now.
    pub now: GoTime,
    /// How many leafnode connections are listed.
    pub leafnodes: u32,
    /// The connections, by lid (`null` when there is none, as nats-server).
    pub leafs: Option<Vec<LeafInfoz>>,
}

/// One leafnode connection.
#[derive(Debug, Serialize)]
pub struct LeafInfoz {
    /// The account it is bound to.
    pub account: String,
    /// The other side's address.
    pub ip: String,
    /// Its port.
    pub port: u16,
    /// The last PING round trip (Go's duration text).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rtt: String,
    /// Messages received from it.
    pub in_msgs: u64,
    /// Messages sent to it.
    pub out_msgs: u64,
    /// Bytes received from it.
    pub in_bytes: u64,
    /// Bytes sent to it.
    pub out_bytes: u64,
    /// Its interest (`LS+` received) in our account.
    pub subscriptions: u32,
    /// That interest, with `?subs=1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriptions_list: Option<Vec<String>>,
}

/// Builds `/leafz`: `subs` lists each connection's interest; `account` keeps only that
/// account's connections.
pub fn leafz(shared: &Shared, leafs: Option<&Leafnodes>, subs: bool, account: &str) -> Leafz {
    let list: Vec<LeafInfoz> = leafs
        .map(|l| l.all())
        .unwrap_or_default()
        .into_iter()
        .filter(|l| account.is_empty() || l.account.name == account)
        .map(|l| {
            let t = l.client.stats.snapshot();
            let interest = l.subs.lock();
            let rtt = l.client.rtt();
            LeafInfoz {
                account: l.account.name.clone(),
                ip: l.client.addr.ip().to_string(),
                port: l.client.addr.port(),
                rtt: if rtt.is_zero() {
                    String::new()
                } else {
                    go_rtt(rtt)
                },
                in_msgs: t.in_msgs,
                out_msgs: t.out_msgs,
                in_bytes: t.in_bytes,
                out_bytes: t.out_bytes,
                subscriptions: u32::try_from(interest.len()).unwrap_or(u32::MAX),
                subscriptions_list: subs.then(|| {
                    interest
                        .keys()
                        .map(|(s, _)| String::from_utf8_lossy(s).into_owned())
                        .collect()
                }),
            }
        })
        .collect();
    Leafz {
        server_id: shared.server_id.clone(),
        now: GoTime(SystemTime::now()),
        leafnodes: u32::try_from(list.len()).unwrap_or(u32::MAX),
        leafs: (!list.is_empty()).then_some(list),
    }
}
