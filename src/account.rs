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

use crate::client::Subscription;
use crate::config::Config;
use crate::subjects::{Sublist, SublistStats};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The name of the global account, `$G` (nats-server's `globalAccountName`): where clients
/// go when they authenticate without an account. Defined by `config`, which reserves it.
pub use crate::config::GLOBAL_ACCOUNT;

/// One account: a name and its own subscription table.
pub struct Account {
    /// The account's name (`$G` for the global account).
    pub name: String,
    /// The account's subscriptions; messages published in the account are matched here
    /// only.
    pub sublist: Sublist<Subscription>,
}

impl Account {
    /// A new account with an empty subscription table.
    pub fn new(name: &str) -> Account {
        Account {
            name: name.to_owned(),
            sublist: Sublist::new(),
        }
    }

    /// Whether this is the global account `$G`.
    pub fn is_global(&self) -> bool {
        self.name == GLOBAL_ACCOUNT
    }
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account").field("name", &self.name).finish()
    }
}

/// The server's accounts: `$G` and those of the configuration. Fixed at start (see the
/// module docs), so read without a lock.
#[derive(Debug)]
pub struct Accounts {
    /// `$G`, first, then the configured accounts in the configuration's order.
    all: Vec<Arc<Account>>,
    /// Index into `all` by name.
    by_name: FxHashMap<String, usize>,
}

impl Accounts {
    /// `$G` and the accounts of `config.accounts`.
    pub fn new(config: &Config) -> Accounts {
        let mut accounts = Accounts {
            all: Vec::new(),
            by_name: FxHashMap::default(),
        };
        accounts.add(GLOBAL_ACCOUNT);
        for a in &config.accounts {
            accounts.add(&a.name);
        }
        accounts
    }

    fn add(&mut self, name: &str) {
        if !self.by_name.contains_key(name) {
            self.by_name.insert(name.to_owned(), self.all.len());
            self.all.push(Arc::new(Account::new(name)));
        }
    }

    /// The global account, `$G`.
    pub fn global(&self) -> &Arc<Account> {
        &self.all[0]
    }

    /// The account called `name`, if there is one (`$G` included).
    pub fn get(&self, name: &str) -> Option<&Arc<Account>> {
        self.by_name.get(name).map(|&i| &self.all[i])
    }

    /// Every account, `$G` first.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Account>> {
        self.all.iter()
    }

    /// Whether accounts other than `$G` are configured.
    pub fn has_named(&self) -> bool {
        self.all.len() > 1
    }

    /// Subscriptions in every account (`/varz` `subscriptions`).
    pub fn subscription_count(&self) -> usize {
        self.all.iter().map(|a| a.sublist.count()).sum()
    }

    /// The subscription tables' statistics summed over the accounts whose name passes
    /// `filter` (nats-server's `SublistStats.add`: counters summed, the largest fan-out
    /// kept, the average recomputed from the sums).
    pub fn stats(&self, filter: impl Fn(&Account) -> bool) -> SublistStats {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry() {
        let config = Config::from_toml(
            "[accounts.A]\nusers = [{ user = \"a\", password = \"x\" }]\n[accounts.B]\n",
        )
        .unwrap();
        let accounts = Accounts::new(&config);
        assert!(accounts.global().is_global());
        assert!(accounts.has_named());
        let names: Vec<&str> = accounts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["$G", "A", "B"]);
        assert_eq!(accounts.get("B").unwrap().name, "B");
        assert!(accounts.get("C").is_none());
        assert!(Arc::ptr_eq(accounts.get("$G").unwrap(), accounts.global()));
        assert!(!Accounts::new(&Config::default()).has_named());
    }
}
