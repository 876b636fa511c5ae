//! The subscriptions on one subject ([`Subs`]) and what a match collects ([`MatchResult`]):
//! the leaf types shared by both indexes of the subscription table (the literal `DashMap` in
//! [`super::sublist`] and the wildcard [`super::trie`]), so neither index depends on the other.

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;
use std::sync::Arc;

/// What the table needs to know about a subscription. Implemented by the server's
/// subscription type, and by small test types.
pub trait Subscriber: Send + Sync {
    /// The subject (may contain wildcards).
    fn subject(&self) -> &[u8];
    /// The queue group name, if this is a queue subscription.
    fn queue(&self) -> Option<&[u8]>;
}

/// One queue group within a match: exactly one member gets each message.
#[derive(Debug)]
pub struct QueueGroup<S> {
    /// The queue group name.
    pub name: Box<[u8]>,
    /// Its members that match the subject.
    pub members: Vec<Arc<S>>,
}

/// The subscriptions a subject reaches: every plain subscription gets a copy; each queue group
/// gets one copy, delivered to one of its members.
#[derive(Debug)]
pub struct MatchResult<S> {
    /// Plain (non-queue) subscriptions.
    pub plain: Vec<Arc<S>>,
    /// Queue groups, with their matching members merged across literal and wildcard subjects.
    pub groups: Vec<QueueGroup<S>>,
}

impl<S> Default for MatchResult<S> {
    fn default() -> Self {
        MatchResult {
            plain: Vec::new(),
            groups: Vec::new(),
        }
    }
}

impl<S> MatchResult<S> {
    /// Whether nothing matched.
    pub fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.groups.is_empty()
    }

    /// Empties the result, keeping the capacity of its list of plain subscriptions.
    pub fn clear(&mut self) {
        self.plain.clear();
        self.groups.clear();
    }

    /// Number of subscriptions in the result (plain plus every queue member).
    pub fn len(&self) -> usize {
        self.plain.len() + self.groups.iter().map(|g| g.members.len()).sum::<usize>()
    }
}

/// Identity of a subscription: the address of its allocation (stable while it is shared).
#[inline]
fn key<S>(sub: &Arc<S>) -> usize {
    Arc::as_ptr(sub) as *const () as usize
}

/// The subscriptions on one subject, by identity, in insertion order.
type SubSet<S> = IndexMap<usize, Arc<S>, FxBuildHasher>;

/// The subscriptions registered on one subject (one `DashMap` value or one trie node).
///
/// Kept in insertion-ordered maps keyed by identity, so that removing one of many thousands
/// of subscriptions on a subject is O(1) (`swap_remove`), and iteration is a plain slice walk.
#[derive(Debug)]
pub(crate) struct Subs<S> {
    plain: SubSet<S>,
    groups: Vec<(Box<[u8]>, SubSet<S>)>,
}

impl<S> Default for Subs<S> {
    fn default() -> Self {
        Subs {
            plain: SubSet::default(),
            groups: Vec::new(),
        }
    }
}

impl<S> Subs<S> {
    pub(crate) fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.groups.is_empty()
    }

    pub(crate) fn add(&mut self, queue: Option<&[u8]>, sub: Arc<S>) {
        let set = match queue {
            None => &mut self.plain,
            Some(q) => match self.groups.iter().position(|(name, _)| &**name == q) {
                Some(i) => &mut self.groups[i].1,
                None => {
                    self.groups.push((q.into(), SubSet::default()));
                    &mut self.groups.last_mut().expect("just pushed").1
                }
            },
        };
        set.insert(key(&sub), sub);
    }

    /// Removes `sub` by identity. Order within a subject does not matter (queue members are
    /// picked at random, and nats-server's own order is map order), so `swap_remove` is fine.
    pub(crate) fn remove(&mut self, queue: Option<&[u8]>, sub: &Arc<S>) -> bool {
        match queue {
            None => self.plain.swap_remove(&key(sub)).is_some(),
            Some(q) => {
                let Some(gi) = self.groups.iter().position(|(name, _)| &**name == q) else {
                    return false;
                };
                let removed = self.groups[gi].1.swap_remove(&key(sub)).is_some();
                if self.groups[gi].1.is_empty() {
                    self.groups.remove(gi);
                }
                removed
            }
        }
    }

    /// Appends these subscriptions to a match result, merging queue groups by name.
    pub(crate) fn add_to(&self, result: &mut MatchResult<S>) {
        result.plain.extend(self.plain.values().cloned());
        for (name, members) in &self.groups {
            match result.groups.iter_mut().find(|r| r.name == *name) {
                Some(r) => r.members.extend(members.values().cloned()),
                None => result.groups.push(QueueGroup {
                    name: name.clone(),
                    members: members.values().cloned().collect(),
                }),
            }
        }
    }

    pub(crate) fn for_each(&self, f: &mut impl FnMut(&Arc<S>)) {
        self.plain.values().for_each(&mut *f);
        self.groups
            .iter()
            .flat_map(|(_, members)| members.values())
            .for_each(f);
    }
}
