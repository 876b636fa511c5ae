//! Accounts: isolated subject spaces (nats-server's `Account`, minimal).
//!
//! Every client belongs to exactly one [`Account`]: the one of the user it authenticated
//! as (`accounts { A { users [...] } }`), or the global account `$G` (users of
//! `authorization`, `no_auth_user` when it is one of them, and every client when no
//! authentication is configured). Each account has its own subscription table, so a message
//! published in one account only reaches subscribers of that account; `_INBOX` replies and
//! no-responders stay inside it too.
//!
//! The registry ([`Accounts`], `Shared::accounts`) is built once at start from the
//! configuration and never changes afterwards (a reload that changes accounts is refused),
//! so it takes no lock: clients keep the `Arc<Account>` they logged in to, and the publish
//! path reaches the account's [`Sublist`] through that pointer.
//!
//! Not implemented (accepted in configuration files with a warning, see `config`):
//! imports and exports between accounts, JetStream, subject mappings, account limits, and
//! the system account (`$SYS` is an ordinary account here).

use crate::subjects::{Sublist, SublistStats, Subscriber};
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
}

impl<S: Subscriber> Account<S> {
    /// A new account with an empty subscription table.
    pub fn new(name: &str) -> Account<S> {
        Account {
            name: name.to_owned(),
            sublist: Sublist::new(),
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

/// The server's accounts: `$G` and those of the configuration. Fixed at start (see the
/// module docs), so read without a lock.
pub struct Accounts<S> {
    /// `$G`, first, then the configured accounts in the configuration's order.
    all: Vec<Arc<Account<S>>>,
    /// Index into `all` by name.
    by_name: FxHashMap<String, usize>,
}

impl<S> std::fmt::Debug for Accounts<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.all).finish()
    }
}

impl<S: Subscriber> Accounts<S> {
    /// `$G` and the accounts called `names` (the configuration's `accounts`, in its order;
    /// a repeated name, or `$G`, is added once).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Accounts<S> {
        let mut accounts = Accounts {
            all: Vec::new(),
            by_name: FxHashMap::default(),
        };
        accounts.add(GLOBAL_ACCOUNT);
        for name in names {
            accounts.add(name);
        }
        accounts
    }

    fn add(&mut self, name: &str) {
        if !self.by_name.contains_key(name) {
            self.by_name.insert(name.to_owned(), self.all.len());
            self.all.push(Arc::new(Account::new(name)));
        }
    }

    /// Subscriptions in every account (`/varz` `subscriptions`).
    pub fn subscription_count(&self) -> usize {
        self.all.iter().map(|a| a.sublist.count()).sum()
    }

    /// The subscription tables' statistics summed over the accounts whose name passes
    /// `filter` (nats-server's `SublistStats.add`: counters summed, the largest fan-out
    /// kept, the average recomputed from the sums).
    pub fn stats(&self, filter: impl Fn(&Account<S>) -> bool) -> SublistStats {
        let mut total = SublistStats::default();
        for a in self.all.iter().filter(|a| filter(a)) {
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
        &self.all[0]
    }

    /// The account called `name`, if there is one (`$G` included).
    pub fn get(&self, name: &str) -> Option<&Arc<Account<S>>> {
        self.by_name.get(name).map(|&i| &self.all[i])
    }

    /// Every account, `$G` first.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Account<S>>> {
        self.all.iter()
    }

    /// Whether accounts other than `$G` are configured.
    pub fn has_named(&self) -> bool {
        self.all.len() > 1
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
        let names: Vec<&str> = accounts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["$G", "A", "B"]);
        assert_eq!(accounts.get("B").unwrap().name, "B");
        assert!(accounts.get("C").is_none());
        assert!(Arc::ptr_eq(accounts.get("$G").unwrap(), accounts.global()));
        assert!(!Accounts::<Sub>::new([]).has_named());
    }
}
