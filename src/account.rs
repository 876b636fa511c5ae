//! Accounts: isolated subject spaces (nats-server's `Account`, minimal).
//!
//! Every client belongs to exactly one [`Account`]: the one of the user it authenticated
//! as (`accounts { A { users [...] } }`), or the global account `$G` (users of
//! `authorization`, `no_auth_user` when it is one of them, and every client when no
//! authentication is configured). Each account has its own subscription table, so a message
//! published in one account only reaches subscribers of that account; `_INBOX` replies and
//! no-responders stay inside it too.
//!
//! The registry ([`Accounts`], `Shared::accounts`) is built at start from the configuration
//! (a reload that changes the configured accounts is refused). In operator mode with a
//! directory resolver an account pushed while running (`$SYS.REQ.CLAIMS.UPDATE`) is added
//! to it; accounts are never removed (a deleted account's clients are closed, and the
//! account stays, empty). Clients keep the `Arc<Account>` they logged in to, and the
//! publish path reaches the account's [`Sublist`] through that pointer, so the registry's
//! lock is only taken to look an account up by name (a route's or leafnode's message, a
//! login, monitoring): a leaf lock, nothing is taken under it.

use crate::subjects::{Sublist, SublistStats, Subscriber};
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The name of the global account, `$G` (nats-server's `globalAccountName`): where clients
/// go when they authenticate without an account. Defined by `config`, which reserves it.
pub use crate::config::GLOBAL_ACCOUNT;

/// One account: a name and its own subscription table.
///
/// Generic over the subscription type `S` so that this module sits below the client module
/// (which defines the server's subscription, holding an `Arc` of its account): the server
/// uses `client::Account`, `Account<client::Subscription>`.
pub struct Account<S> {
    /// The account's name (`$G` for the global account).
    pub name: String,
    /// The account's subscriptions; messages published in the account are matched here
    /// only.
    pub sublist: Sublist<S>,
    /// When it was added to the registry (`update_time` in `/accountz`'s detail).
    pub created: std::time::SystemTime,
}

impl<S: Subscriber> Account<S> {
    /// A new account with an empty subscription table.
    pub fn new(name: &str) -> Account<S> {
        Account {
            name: name.to_owned(),
            sublist: Sublist::new(),
            created: std::time::SystemTime::now(),
        }
    }
}

impl<S> Account<S> {
    /// Whether this is the global account `$G`.
    pub fn is_global(&self) -> bool {
        self.name == GLOBAL_ACCOUNT
    }
}

impl<S> std::fmt::Debug for Account<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account").field("name", &self.name).finish()
    }
}

/// The server's accounts: `$G`, those of the configuration, and (operator mode) those
/// pushed while running. See the module docs.
pub struct Accounts<S> {
    /// `$G`, kept apart so that the commonest look-up takes no lock.
    global: Arc<Account<S>>,
    /// Every account, `$G` first, then in the order they were added; and an index by name.
    /// A `parking_lot` read-write lock: look-ups are reads, an account is added rarely.
    table: RwLock<Table<S>>,
}

struct Table<S> {
    all: Vec<Arc<Account<S>>>,
    by_name: FxHashMap<String, usize>,
}

impl<S> std::fmt::Debug for Accounts<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.table.read().all).finish()
    }
}

impl<S: Subscriber> Accounts<S> {
    /// `$G` and the accounts called `names` (the configuration's `accounts`, in its order;
    /// a repeated name, or `$G`, is added once).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Accounts<S> {
        let global = Arc::new(Account::new(GLOBAL_ACCOUNT));
        let accounts = Accounts {
            table: RwLock::new(Table {
                all: vec![global.clone()],
                by_name: [(GLOBAL_ACCOUNT.to_owned(), 0)].into_iter().collect(),
            }),
            global,
        };
        for name in names {
            accounts.get_or_add(name);
        }
        accounts
    }

    /// The account called `name`, added (empty) if there is none yet: for operator mode,
    /// whose accounts are known by their JWTs.
    pub fn get_or_add(&self, name: &str) -> Arc<Account<S>> {
        if let Some(a) = self.get(name) {
            return a;
        }
        let mut table = self.table.write();
        // Looked up again under the write lock: another thread may have added it.
        if let Some(&i) = table.by_name.get(name) {
            return table.all[i].clone();
        }
        let account = Arc::new(Account::new(name));
        let i = table.all.len();
        table.by_name.insert(name.to_owned(), i);
        table.all.push(account.clone());
        account
    }

    /// Subscriptions in every account (`/varz` `subscriptions`).
    pub fn subscription_count(&self) -> usize {
        self.table
            .read()
            .all
            .iter()
            .map(|a| a.sublist.count())
            .sum()
    }

    /// The subscription tables' statistics summed over the accounts whose name passes
    /// `filter` (nats-server's `SublistStats.add`: counters summed, the largest fan-out
    /// kept, the average recomputed from the sums).
    pub fn stats(&self, filter: impl Fn(&Account<S>) -> bool) -> SublistStats {
        let mut total = SublistStats::default();
        for a in self.list().iter().filter(|a| filter(a)) {
            let s = a.sublist.stats();
            total.subscriptions += s.subscriptions;
            total.cache_entries += s.cache_entries;
            total.inserts += s.inserts;
            total.removes += s.removes;
            total.matches += s.matches;
            total.cache_hits += s.cache_hits;
            total.max_fanout = total.max_fanout.max(s.max_fanout);
            total.total_fanout += s.total_fanout;
        }
        total
    }
}

impl<S> Accounts<S> {
    /// The global account, `$G`.
    pub fn global(&self) -> &Arc<Account<S>> {
        &self.global
    }

    /// The account called `name`, if there is one (`$G` included).
    pub fn get(&self, name: &str) -> Option<Arc<Account<S>>> {
        if name == GLOBAL_ACCOUNT {
            return Some(self.global.clone());
        }
        let table = self.table.read();
        table.by_name.get(name).map(|&i| table.all[i].clone())
    }

    /// Every account now, `$G` first (a snapshot: the lock is not held while the caller
    /// walks it).
    pub fn list(&self) -> Vec<Arc<Account<S>>> {
        self.table.read().all.clone()
    }

    /// Whether accounts other than `$G` exist.
    pub fn has_named(&self) -> bool {
        self.table.read().all.len() > 1
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The smallest subscription an account can hold, for tests of the modules that sit
    /// below the client (which defines the server's).
    #[derive(Debug)]
    pub(crate) struct Sub;

    impl Subscriber for Sub {
        fn subject(&self) -> &[u8] {
            b"x"
        }
        fn queue(&self) -> Option<&[u8]> {
            None
        }
    }

    #[test]
    fn registry() {
        let accounts = Accounts::<Sub>::new(["A", "B", "$G", "A"]);
        assert!(accounts.global().is_global());
        assert!(accounts.has_named());
        let names: Vec<String> = accounts.list().iter().map(|a| a.name.clone()).collect();
        assert_eq!(names, ["$G", "A", "B"]);
        assert_eq!(accounts.get("B").unwrap().name, "B");
        assert!(accounts.get("C").is_none());
        assert!(Arc::ptr_eq(&accounts.get("$G").unwrap(), accounts.global()));
        assert!(!Accounts::<Sub>::new([]).has_named());
        let c = accounts.get_or_add("C");
        assert!(Arc::ptr_eq(&accounts.get("C").unwrap(), &c));
        assert!(Arc::ptr_eq(&accounts.get_or_add("C"), &c));
        assert_eq!(accounts.list().len(), 4);
    }
}
