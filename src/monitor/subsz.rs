//! `GET /subsz` (alias `/subscriptionsz`): the subscription table's statistics, and
//! optionally its subscriptions (nats-server's `Subsz`).
//!
//! Query parameters: `subs=1` lists the subscriptions; `test=SUBJECT` (a valid publish
//! subject) keeps only those a message on `SUBJECT` would reach; `offset`, `limit`
//! (default 1024) page the list; `acc=NAME`: only that account's table (statistics and
//! subscriptions); without it, every account's tables, their statistics summed.
//!
//! As in nats-server 2.9, without a (non-empty) list the response is the statistics object
//! alone, with no `server_id`, `now`, `total`, `offset` or `limit`.
//!
//! What the statistics mean for beaver (see [`crate::subjects::SublistStats`]):
//! `num_matches` counts lookups that reached the shared table because a reader's private
//! cache missed, `cache_hit_rate` is the share of those the shared cache answered, and
//! `num_cache`, `max_fanout`, `avg_fanout` describe the shared cache's current entries.

use super::connz::{sid_order, SubDetail, DEFAULT_LIMIT};
use super::json::{go_float, GoTime};
use super::query::{decode_bool, decode_int, Query};
use crate::client::{SubSnapshot, Subscription};
use crate::shared::Shared;
use crate::subjects::{is_valid_literal_subject, subject_matches, SublistStats};
use serde::Serialize;
use std::sync::Arc;
use std::time::SystemTime;

/// The statistics (nats-server's `SublistStats`, same names and order).
#[derive(Debug, Clone, Serialize, Default)]
pub struct SubszStats {
    /// Subscriptions in the table.
    pub num_subscriptions: usize,
    /// Current entries of the shared match cache.
    pub num_cache: usize,
    /// Subscriptions ever added.
    pub num_inserts: u64,
    /// Subscriptions ever removed.
    pub num_removes: u64,
    /// Lookups that reached the shared table.
    pub num_matches: u64,
    /// Share of those answered by the shared cache (0 to 1).
    #[serde(serialize_with = "go_float")]
    pub cache_hit_rate: f64,
    /// Largest fan-out of a cached result (plain subscriptions plus queue groups).
    pub max_fanout: usize,
    /// Mean fan-out of the cached results.
    #[serde(serialize_with = "go_float")]
    pub avg_fanout: f64,
}

impl From<SublistStats> for SubszStats {
    fn from(st: SublistStats) -> Self {
        SubszStats {
            num_subscriptions: st.subscriptions,
            num_cache: st.cache_entries,
            num_inserts: st.inserts,
            num_removes: st.removes,
            num_matches: st.matches,
            cache_hit_rate: if st.matches > 0 {
                st.cache_hits as f64 / st.matches as f64
            } else {
                0.0
            },
            max_fanout: st.max_fanout,
            avg_fanout: if st.cache_entries > 0 {
                st.total_fanout as f64 / st.cache_entries as f64
            } else {
                0.0
            },
        }
    }
}

/// The `/subsz` document when it lists subscriptions.
#[derive(Debug, Serialize)]
pub struct Subsz {
    /// This server's id.
    pub server_id: String,
    /// When this was computed.
    pub now: GoTime,
    /// The statistics, inline.
    #[serde(flatten)]
    pub stats: SubszStats,
    /// Subscriptions that matched (before `offset`/`limit`).
    pub total: usize,
    /// The `offset` applied.
    pub offset: u64,
    /// The `limit` applied.
    pub limit: u64,
    /// The subscriptions, by cid then sid.
    pub subscriptions_list: Vec<SubDetail>,
}

/// What `/subsz` answers: the statistics alone, or with a list.
#[derive(Debug)]
pub enum SubszReply {
    /// No list asked for, or none left after filtering and paging.
    Stats(SubszStats),
    /// The list and the statistics.
    List(Subsz),
}

/// Decodes the query and builds the answer; the error is the 400 message.
pub fn subsz(shared: &Shared, q: &Query) -> Result<SubszReply, String> {
    let list = decode_bool(q, "subs")?;
    let offset = decode_int(q, "offset")?.max(0) as u64;
    let limit = match decode_int(q, "limit")? {
        l if l <= 0 => DEFAULT_LIMIT,
        l => l as u64,
    };
    // Raw bytes: a value that is not UTF-8 tests (or names) nothing, as in nats-server.
    let test = q.get_raw("test");
    if !test.is_empty() && !is_valid_literal_subject(test) {
        return Err(format!(
            "invalid test subject, must be valid publish subject: {}",
            q.get("test")
        ));
    }
    let account = q.get_raw("acc");
    let wanted = |a: &crate::client::Account| account.is_empty() || a.name.as_bytes() == account;
    let now = SystemTime::now();
    let stats = SubszStats::from(shared.accounts.stats(wanted));
    if !list {
        return Ok(SubszReply::Stats(stats));
    }
    // Collect the subscriptions (the sublist's shard locks are held only while cloning the
    // `Arc`s), then describe them with no lock held.
    let mut subs: Vec<Arc<Subscription>> = Vec::new();
    for a in shared.accounts.list().iter().filter(|a| wanted(a)) {
        a.sublist.for_each(|s| {
            if test.is_empty() || subject_matches(test, &s.subject) {
                subs.push(s.clone());
            }
        });
    }
    let mut details: Vec<SubDetail> = subs
        .iter()
        .map(|s| SubDetail::of(&SubSnapshot::of(s), true))
        .collect();
    details.sort_by(|a, b| a.cid.cmp(&b.cid).then(sid_order(&a.sid, &b.sid)));
    let total = details.len();
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
    let end = usize::try_from(offset.saturating_add(limit))
        .unwrap_or(usize::MAX)
        .min(total);
    let page: Vec<SubDetail> = details.drain(start..end).collect();
    if page.is_empty() {
        return Ok(SubszReply::Stats(stats));
    }
    Ok(SubszReply::List(Subsz {
        server_id: shared.server_id.clone(),
        now: GoTime(now),
        stats,
        total,
        offset,
        limit,
        subscriptions_list: page,
    }))
}
