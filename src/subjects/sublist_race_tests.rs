//! Races nats-server's sublist tests check: SUB, UNSUB and matching from several threads at
//! once. Every thread runs a bounded loop (no waiting on another thread's progress, no
//! timing), and every lookup's result is checked by `Seen::of`.

use super::{each_way, nothing, qsub, sub, Reader, Seen, Sublist, TestSub, Way};
use std::sync::Arc;

/// The subscriptions for one round of a race test: plain ones, or members of queue group
/// `bar`, with ids from `first`.
fn round_of(queue: Option<&str>, first: u32) -> Vec<Arc<TestSub>> {
    (first..first + 100)
        .map(|id| match queue {
            Some(q) => qsub("foo", q, id),
            None => sub("foo", id),
        })
        .collect()
}

/// Lookups made while another thread removes the subscriptions see a consistent part of
/// them (each result checked by `Seen::of`), and once the removals are done, none.
#[test]
fn remove_while_matching() {
    each_way(|r| {
        let sl = Sublist::new();
        for queue in [Some("bar"), None] {
            let subs = round_of(queue, 0);
            for round in 0..2 {
                for s in &subs {
                    sl.insert(s.clone()).unwrap();
                }
                // In the second round the lookup below is answered from a cache.
                if round == 1 {
                    r.lookup(&sl, "foo");
                }
                let (plain, members) = r.lookup(&sl, "foo").interest();
                assert_eq!(plain + members, 100);
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        for s in &subs {
                            assert!(sl.remove(s));
                        }
                    });
                    for _ in 0..200 {
                        let (plain, members) = r.lookup(&sl, "foo").interest();
                        assert!(plain + members <= 100);
                    }
                });
                r.check(&sl, "foo", nothing());
                assert_eq!(sl.count(), 0);
            }
        }
    });
}

/// Lookups made while another thread inserts see a consistent part of the subscriptions,
/// never fewer than the lookup before (an insert, once seen, is not undone), and once the
/// inserts are done, all of them.
#[test]
fn insert_while_matching() {
    each_way(|r| {
        let sl = Sublist::new();
        let queued = round_of(Some("bar"), 0);
        let plain = round_of(None, 100);
        for subs in [&queued, &plain] {
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    for s in subs {
                        sl.insert(s.clone()).unwrap();
                    }
                });
                let mut last = 0;
                for _ in 0..1000 {
                    let (plain, members) = r.lookup(&sl, "foo").interest();
                    let now = plain + members;
                    assert!(now >= last, "{:?}: saw {now} after {last}", r.way);
                    last = now;
                }
            });
        }
        let all = Seen::plain(100..200).group("bar", 0..100);
        r.check(&sl, "foo", all);
    });
}

/// Readers of every way match at once, while a writer keeps changing subscriptions that do
/// not match their subject (so caches keep being invalidated under them): every lookup
/// gives the same exact result.
#[test]
fn match_from_several_threads() {
    let sl = Sublist::new();
    sl.insert(qsub("foo.*", "workers", 1)).unwrap();
    sl.insert(qsub("foo.bar", "workers", 2)).unwrap();
    sl.insert(sub("foo.*", 3)).unwrap();
    sl.insert(sub("foo.bar", 4)).unwrap();
    let want = || Seen::plain([3, 4]).group("workers", [1, 2]);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..2_000 {
                let s = if i % 2 == 0 {
                    sub("foo.baz", 10 + i)
                } else {
                    qsub("foo.*.x", "workers", 10 + i)
                };
                sl.insert(s.clone()).unwrap();
                assert!(sl.remove(&s));
            }
        });
        for way in [Way::Direct, Way::Shared, Way::Private] {
            let sl = &sl;
            scope.spawn(move || {
                let mut r = Reader::new(way);
                for _ in 0..1_000 {
                    assert_eq!(r.lookup(sl, "foo.bar"), want(), "{way:?}");
                }
            });
        }
    });
    assert_eq!(sl.count(), 4);
    assert_eq!(sl.trie_node_count(), 1 + 2, "foo and foo.* are left");
}
