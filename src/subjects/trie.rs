//! The token trie that holds subscriptions whose subject contains a wildcard.
//!
//! Shaped like nats-server's sublist: each node is "the subjects that start with these tokens";
//! a node's children are keyed by the next literal token, plus one slot for `*` and one for `>`.
//! Unlike the reference, nodes live in an arena (`Vec`) and refer to each other by index. That
//! keeps every walk iterative (a subject may have ~2,000 tokens within the default 4 KiB control
//! line, and reader threads run on small stacks), lets removal prune empty nodes on the way up
//! without recursion, and means dropping a deep trie never recurses either.
//!
//! The trie is not synchronised itself: [`super::Sublist`] keeps it behind a `RwLock`.
//!
//! Its tokens are chosen by clients, and it sits behind one lock per account: a client able
//! to make many tokens collide in a node's map would slow every publisher of the account.
//! So the maps use std's `RandomState` (SipHash with keys random per trie), not a fixed-seed
//! hash. (Its cost is paid on match-cache misses only.)

use super::subs::{MatchResult, Subs};
use super::{tokens, FWC, PWC};
use smallvec::SmallVec;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::sync::Arc;

const ROOT: usize = 0;

/// How a node hangs off its parent: needed to unlink it when pruning.
#[derive(Debug, Clone)]
enum Edge {
    Root,
    Literal(Box<[u8]>),
    Pwc,
    Fwc,
}

struct Node<S> {
    /// Children by literal token (keys chosen by clients: a seeded hasher, see the module
    /// docs).
    literal: HashMap<Box<[u8]>, usize, RandomState>,
    /// The child for a `*` token.
    pwc: Option<usize>,
    /// The child for a `>` token (always a leaf: `>` is only valid last).
    fwc: Option<usize>,
    /// Subscriptions whose subject ends exactly here.
    subs: Subs<S>,
    parent: usize,
    edge: Edge,
}

impl<S> Node<S> {
    fn new(parent: usize, edge: Edge, hasher: &RandomState) -> Self {
        Node {
            literal: HashMap::with_hasher(hasher.clone()),
            pwc: None,
            fwc: None,
            subs: Subs::default(),
            parent,
            edge,
        }
    }

    fn is_prunable(&self) -> bool {
        self.subs.is_empty() && self.literal.is_empty() && self.pwc.is_none() && self.fwc.is_none()
    }
}

/// A token trie of subscriptions (see the module docs).
pub(crate) struct Trie<S> {
    nodes: Vec<Node<S>>,
    /// Indexes of unlinked nodes, reused by the next insert.
    free: Vec<usize>,
    /// The keys of every node's map: random, chosen when the trie is made.
    hasher: RandomState,
}

impl<S> Default for Trie<S> {
    fn default() -> Self {
        let hasher = RandomState::new();
        Trie {
            nodes: vec![Node::new(ROOT, Edge::Root, &hasher)],
            free: Vec::new(),
            hasher,
        }
    }
}

impl<S> Trie<S> {
    fn alloc(&mut self, parent: usize, edge: Edge) -> usize {
        let node = Node::new(parent, edge, &self.hasher);
        match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    /// The child of `at` for `token`, if any.
    fn child(&self, at: usize, token: &[u8]) -> Option<usize> {
        let node = &self.nodes[at];
        match token {
            [PWC] => node.pwc,
            [FWC] => node.fwc,
            _ => node.literal.get(token).copied(),
        }
    }

    /// The child of `at` for `token`, created if missing.
    fn child_or_insert(&mut self, at: usize, token: &[u8]) -> usize {
        if let Some(i) = self.child(at, token) {
            return i;
        }
        let edge = match token {
            [PWC] => Edge::Pwc,
            [FWC] => Edge::Fwc,
            _ => Edge::Literal(token.into()),
        };
        let i = self.alloc(at, edge.clone());
        let node = &mut self.nodes[at];
        match edge {
            Edge::Pwc => node.pwc = Some(i),
            Edge::Fwc => node.fwc = Some(i),
            Edge::Literal(t) => {
                node.literal.insert(t, i);
            }
            Edge::Root => unreachable!("only the root has the root edge"),
        }
        i
    }

    /// Adds `sub` under `subject`, which the caller has validated.
    pub(crate) fn insert(&mut self, subject: &[u8], queue: Option<&[u8]>, sub: Arc<S>) {
        let mut at = ROOT;
        for token in tokens(subject) {
            at = self.child_or_insert(at, token);
        }
        self.nodes[at].subs.add(queue, sub);
    }

    /// Removes `sub` (by identity) from `subject`; prunes nodes left empty. Returns whether it
    /// was there.
    pub(crate) fn remove(&mut self, subject: &[u8], queue: Option<&[u8]>, sub: &Arc<S>) -> bool {
        let mut at = ROOT;
        for token in tokens(subject) {
            match self.child(at, token) {
                Some(i) => at = i,
                None => return false,
            }
        }
        if !self.nodes[at].subs.remove(queue, sub) {
            return false;
        }
        // Walk back up, unlinking every node that no longer holds anything.
        while at != ROOT && self.nodes[at].is_prunable() {
            let parent = self.nodes[at].parent;
            let edge = std::mem::replace(&mut self.nodes[at].edge, Edge::Root);
            let p = &mut self.nodes[parent];
            match edge {
                Edge::Literal(t) => {
                    p.literal.remove(&t);
                }
                Edge::Pwc => p.pwc = None,
                Edge::Fwc => p.fwc = None,
                Edge::Root => unreachable!("non-root node with a root edge"),
            }
            self.free.push(at);
            at = parent;
        }
        true
    }

    /// Adds every subscription matching the published subject `subject` to `result`, in
    /// nats-server's order, calling `literal` at the point where nats-server would add the
    /// subscriptions on the plain literal subject (which beaver keeps outside the trie).
    ///
    /// `*` matches any one token and `>` one or more trailing tokens. The order matters only
    /// when one connection has several matching subscriptions (it decides the order of their
    /// `MSG`s, and which one gets a no-responders status); nats-server's recursive
    /// `matchLevel` visits, at each level, the `>` node, then everything below the `*` node,
    /// then the literal child, and at the end of the walk the literal node before the last
    /// `*` node. This is the same walk with an explicit stack instead of recursion (reader
    /// threads run on small stacks). Each trie node is visited at most once per call, so the
    /// cost is bounded by the size of the trie, whatever the subject.
    pub(crate) fn collect(
        &self,
        subject: &[u8],
        result: &mut MatchResult<S>,
        literal: &mut dyn FnMut(&mut MatchResult<S>),
    ) {
        // Tokens of the published subject, and the walk's stack, on the stack for ordinary
        // subjects (no allocation unless a subject has more than 16 tokens).
        let toks: SmallVec<[&[u8]; 16]> = tokens(subject).collect();
        let n = toks.len();
        /// One activation of nats-server's `matchLevel`.
        struct Frame {
            /// The node whose children are tried for token `i`.
            at: usize,
            i: usize,
            /// The top-level call (its final literal node is the plain literal subject).
            top: bool,
            /// Whether the `*` subtree for token `i` has been visited already.
            after_pwc: bool,
            /// Whether a literal step was taken (nats-server's `n != nil`).
            moved: bool,
            /// The `*` child of the last level visited (nats-server's `pwc`).
            last_pwc: Option<usize>,
        }
        let mut stack: SmallVec<[Frame; 16]> = SmallVec::new();
        stack.push(Frame {
            at: ROOT,
            i: 0,
            top: true,
            after_pwc: false,
            moved: false,
            last_pwc: None,
        });
        while let Some(f) = stack.last_mut() {
            if f.i == n {
                // The loop over the tokens ended: the final node, then the last `*` node.
                if f.moved {
                    if f.top {
                        literal(result);
                    } else {
                        self.nodes[f.at].subs.add_to(result);
                    }
                }
                if let Some(p) = f.last_pwc {
                    self.nodes[p].subs.add_to(result);
                }
                stack.pop();
                continue;
            }
            let node = &self.nodes[f.at];
            if !f.after_pwc {
                // Token `i` remains, so a `>` child matches it and everything after.
                if let Some(fw) = node.fwc {
                    self.nodes[fw].subs.add_to(result);
                }
                f.last_pwc = node.pwc;
                f.after_pwc = true;
                if let Some(p) = node.pwc {
                    let i = f.i + 1;
                    stack.push(Frame {
                        at: p,
                        i,
                        top: false,
                        after_pwc: false,
                        moved: false,
                        last_pwc: None,
                    });
                }
                continue;
            }
            match node.literal.get(toks[f.i]) {
                Some(&child) => {
                    f.at = child;
                    f.i += 1;
                    f.moved = true;
                    f.after_pwc = false;
                }
                None => {
                    // The literal path ends here. nats-server's walk stops; if this was the
                    // last token its final step still adds the last `*` node. The literal
                    // subject's own subscriptions (outside the trie) come first, where
                    // nats-server's final literal node would be.
                    let last = f.i + 1 == n;
                    let (top, last_pwc) = (f.top, f.last_pwc);
                    stack.pop();
                    if top {
                        literal(result);
                    }
                    if last {
                        if let Some(p) = last_pwc {
                            self.nodes[p].subs.add_to(result);
                        }
                    }
                }
            }
        }
    }

    /// Number of live nodes, root included (for tests and monitoring).
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    /// Calls `f` on every subscription in the trie.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Arc<S>)) {
        let free: rustc_hash::FxHashSet<usize> = self.free.iter().copied().collect();
        for (i, node) in self.nodes.iter().enumerate() {
            if !free.contains(&i) {
                node.subs.for_each(&mut f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Token hashes differ from one trie to the next (and from one run to the next), so a
    /// client cannot prepare tokens that collide in the server's tables.
    #[test]
    fn token_hashes_are_seeded_per_trie() {
        let (a, b): (Trie<()>, Trie<()>) = (Trie::default(), Trie::default());
        let differ = (0..8).any(|i| {
            let token: Box<[u8]> = format!("token{i}").into_bytes().into();
            a.hasher.hash_one(&token) != b.hasher.hash_one(&token)
        });
        assert!(differ, "the hasher's keys are random per trie");
    }
}
