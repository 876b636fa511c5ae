//! Subjects: what a valid subject is, and the subscription table that matches them.
//!
//! A subject is a string of *tokens* separated by `.` (client protocol doc, "Subject names").
//! In a subscription, the token `*` matches exactly one token and the token `>` matches one or
//! more trailing tokens; a token that merely *contains* `*` or `>` (such as `foo*`) is a literal.
//! Subjects are handled as bytes, as nats-server does: the protocol never requires UTF-8.
//!
//! - [`Sublist`] is the subscription table (literal subjects in a `dashmap`, wildcard ones in a
//!   token trie, a generation counter for caches);
//! - [`MatchCache`] is one reader thread's private cache of match results.

mod cache;
mod sublist;
mod subs;
mod trie;

/// The subject rules nats-server's own sublist tests check.
#[cfg(test)]
mod subject_tests;

pub use cache::{MatchCache, DEFAULT_CAPACITY as MATCH_CACHE_CAPACITY};
pub use sublist::{Sublist, SublistError, SublistStats};
pub use subs::{MatchResult, QueueGroup, Subscriber};

/// The token separator.
pub const TSEP: u8 = b'.';
/// The partial wildcard token: matches exactly one token.
pub const PWC: u8 = b'*';
/// The full wildcard token: matches one or more trailing tokens; only valid as the last token.
pub const FWC: u8 = b'>';

/// Splits a subject into its tokens. Empty tokens are yielded as empty slices (so `a..b` yields
/// `a`, ``, `b`), which lets callers decide what an empty token means.
pub fn tokens(subject: &[u8]) -> impl Iterator<Item = &[u8]> {
    subject.split(|&b| b == TSEP)
}

/// Whether a token is a wildcard (`*` or `>` on its own).
#[inline]
pub fn is_wildcard_token(token: &[u8]) -> bool {
    token == [PWC] || token == [FWC]
}

/// Whether `subject` may be subscribed to: it is non-empty, no token is empty, and `>` appears
/// only as the last token.
///
/// This is the check nats-server's sublist makes on insert; a `SUB` that fails it gets
/// `-ERR 'Invalid Subject'` and the connection stays open.
pub fn is_valid_subscription_subject(subject: &[u8]) -> bool {
    if subject.is_empty() {
        return false;
    }
    let mut after_fwc = false;
    for token in tokens(subject) {
        if token.is_empty() || after_fwc {
            return false;
        }
        if token == [FWC] {
            after_fwc = true;
        }
    }
    true
}

/// Whether `subject` is a valid literal subject: non-empty tokens, none of which is a wildcard.
///
/// nats-server's `IsValidLiteralSubject`; a client in pedantic mode that publishes to a subject
/// failing it gets `-ERR 'Invalid Publish Subject'` (the message is still processed).
pub fn is_valid_literal_subject(subject: &[u8]) -> bool {
    tokens(subject).all(|t| !t.is_empty() && !is_wildcard_token(t))
}

/// Whether `subject` contains a wildcard token (`*` or `>` on its own). Does not validate.
pub fn has_wildcard(subject: &[u8]) -> bool {
    tokens(subject).any(is_wildcard_token)
}

/// Whether a published subject can match anything at all: nats-server matches nothing for a
/// subject that is empty or has an empty token (`foo..bar`, `.foo`, `foo.`).
pub fn is_matchable_publish_subject(subject: &[u8]) -> bool {
    !subject.is_empty() && tokens(subject).all(|t| !t.is_empty())
}

/// Whether a message published to the literal subject `literal` reaches a subscription to
/// `pattern` (nats-server's `matchLiteral`, used by `/subsz?test=`): `*` matches exactly one
/// token, `>` one or more trailing tokens, anything else itself.
pub fn subject_matches(literal: &[u8], pattern: &[u8]) -> bool {
    let mut lit = tokens(literal);
    for p in tokens(pattern) {
        if p == [FWC] {
            return lit.next().is_some();
        }
        match lit.next() {
            Some(l) if p == [PWC] || p == l => {}
            _ => return false,
        }
    }
    lit.next().is_none()
}

/// Whether every subject matching `subject` also matches `test` (both may hold wildcards;
/// nats-server's `subjectIsSubsetMatch`).
pub fn is_subset_match(subject: &[u8], test: &[u8]) -> bool {
    let mut sub = tokens(subject);
    for t2 in tokens(test) {
        let Some(t1) = sub.next() else {
            return false;
        };
        if t2.is_empty() {
            return false;
        }
        if t2 == [FWC] {
            return true;
        }
        if t1.is_empty() || t1 == [FWC] {
            return false;
        }
        if t1 == [PWC] {
            if t2 != [PWC] {
                return false;
            }
            continue;
        }
        if t2 != [PWC] && t1 != t2 {
            return false;
        }
    }
    sub.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_subjects() {
        for ok in [
            "foo", "foo.bar", "*", ">", "foo.*", "foo.>", "*.*.>", "foo*.bar", "a.>b",
        ] {
            assert!(is_valid_subscription_subject(ok.as_bytes()), "{ok}");
        }
        for bad in ["", ".", "foo.", ".foo", "foo..bar", "foo.>.bar", ">.foo"] {
            assert!(!is_valid_subscription_subject(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn literal_subjects() {
        for ok in ["foo", "foo.bar", "foo*", "a.>b.c", "$SYS.x"] {
            assert!(is_valid_literal_subject(ok.as_bytes()), "{ok}");
        }
        for bad in ["", "foo.*", "foo.>", "*", ">", "foo..bar", "foo."] {
            assert!(!is_valid_literal_subject(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn literal_against_pattern() {
        let yes = [
            ("foo", "foo"),
            ("foo.bar", "foo.*"),
            ("foo.bar", "*.bar"),
            ("foo.bar.baz", "foo.>"),
            ("foo.bar", ">"),
            ("foo", "*"),
            ("foo*.bar", "foo*.bar"),
        ];
        for (l, p) in yes {
            assert!(subject_matches(l.as_bytes(), p.as_bytes()), "{l} ~ {p}");
        }
        let no = [
            ("foo", "bar"),
            ("foo", "foo.>"),
            ("foo.bar", "foo"),
            ("foo", "foo.bar"),
            ("foo.bar.baz", "foo.*"),
            ("foox.bar", "foo*.bar"),
        ];
        for (l, p) in no {
            assert!(!subject_matches(l.as_bytes(), p.as_bytes()), "{l} !~ {p}");
        }
    }

    #[test]
    fn wildcards_and_matchable() {
        assert!(has_wildcard(b"foo.*"));
        assert!(has_wildcard(b">"));
        assert!(!has_wildcard(b"foo*.bar>"));
        assert!(is_matchable_publish_subject(b"foo.*"));
        assert!(!is_matchable_publish_subject(b"foo..bar"));
        assert!(!is_matchable_publish_subject(b""));
    }
}
