//! The system account's periodic events (nats-server's `heartbeatStatsz` and account
//! connection heartbeats), sent by one thread, `beaver-sys`:
//!
//! - `$SYS.SERVER.<id>.STATSZ` with `{"server":{...},"statsz":{...}}` (the answer to
//!   `$SYS.REQ.SERVER.PING`), first 250 ms after start, then at doubling intervals up to
//!   every 30 seconds, as nats-server trails off;
//! - every 30 seconds, `$SYS.ACCOUNT.<account>.SERVER.CONNS` for each account with clients
//!   on this server (the `account_connections` event its connections also send).
//!
//! The thread holds the system account's services weakly and stops at shutdown (it checks
//! every 50 ms), or when they are gone.

use super::System;
use crate::shared::Shared;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// nats-server's `eventsHBInterval`: the longest wait between two STATSZ, and the account
/// heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(30);
/// The first wait (nats-server's starting `cstatsz`).
const FIRST: Duration = Duration::from_millis(250);

/// Starts the heartbeat thread of `system`. An error to start it is logged: the events
/// are then not sent, and everything else works.
pub(super) fn start(system: &Arc<System>, shared: &Arc<Shared>) {
    let (system, shared) = (Arc::downgrade(system), Arc::downgrade(shared));
    let spawned = std::thread::Builder::new()
        .name("beaver-sys".into())
        .stack_size(256 * 1024)
        .spawn(move || run(&system, &shared));
    if let Err(e) = spawned {
        log::error!("System account: could not start the events thread: {e}");
    }
}

fn run(system: &Weak<System>, shared: &Weak<Shared>) {
    let mut wait = FIRST;
    let mut next_statsz = Instant::now() + wait;
    let mut next_accounts = Instant::now() + HEARTBEAT;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let (Some(system), Some(shared)) = (system.upgrade(), shared.upgrade()) else {
            return;
        };
        if shared.is_shutting_down() {
            return;
        }
        let now = Instant::now();
        if now >= next_statsz {
            system.send_statsz(&shared);
            wait = (wait * 2).min(HEARTBEAT);
            next_statsz = now + wait;
        }
        if now >= next_accounts {
            system.send_account_heartbeats(&shared);
            next_accounts = now + HEARTBEAT;
        }
    }
}
