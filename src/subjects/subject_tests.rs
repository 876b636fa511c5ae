//! The subject rules nats-server's sublist tests check (`server/sublist_test.go`): which
//! subjects are valid literal subjects, which may be subscribed to, and which published
//! subjects reach which subscription subjects. Ported by behaviour, in our own words; what
//! was not ported is listed in `sublist_tests.rs`.

use super::{
    has_wildcard, is_valid_literal_subject, is_valid_subscription_subject, subject_matches, tokens,
};

/// Tokens that merely contain `*` or `>` are literal tokens, in every rule below.
const WILDCARD_CHARACTERS_IN_TOKENS: [&str; 15] = [
    "foo*",
    "foo**",
    "foo.**",
    "foo*bar",
    "foo.*bar",
    "foo*.bar",
    "*bar",
    "foo>",
    "foo>>",
    "foo.>>",
    "foo>bar",
    "foo.>bar",
    "foo>.bar",
    ">bar",
    "foo.***.bar",
];

#[test]
fn valid_literal_subjects() {
    for ok in ["foo", "foo.bar", "$SYS.x"]
        .into_iter()
        .chain(WILDCARD_CHARACTERS_IN_TOKENS)
    {
        assert!(is_valid_literal_subject(ok.as_bytes()), "{ok}");
    }
    // Empty tokens, and wildcard tokens anywhere.
    for bad in [
        "",
        ".foo",
        "foo.",
        "foo..bar",
        "foo.bar.*",
        "foo.bar.>",
        "*",
        ">",
        "foo.*.bar",
    ] {
        assert!(!is_valid_literal_subject(bad.as_bytes()), "{bad}");
    }
}

#[test]
fn valid_subscription_subjects() {
    for ok in [
        "foo",
        "foo.bar.*",
        "foo.bar.>",
        "*",
        ">",
        "*.*.>",
        "foo.*.bar",
    ]
    .into_iter()
    .chain(WILDCARD_CHARACTERS_IN_TOKENS)
    {
        assert!(is_valid_subscription_subject(ok.as_bytes()), "{ok}");
    }
    // Empty tokens, and `>` anywhere but last.
    for bad in [
        "",
        ".",
        ".foo",
        "foo.",
        "foo..bar",
        ">.bar",
        "foo.>.bar",
        ">.>",
    ] {
        assert!(!is_valid_subscription_subject(bad.as_bytes()), "{bad}");
    }
}

#[test]
fn published_subject_against_subscription_subject() {
    // (published, subscribed to, whether the message reaches the subscription)
    let cases = [
        ("foo", "foo", true),
        ("foo", "bar", false),
        ("foo", "*", true),
        ("foo", ">", true),
        ("foo.bar", ">", true),
        ("foo.bar", "foo.>", true),
        ("foo.bar", "bar.>", false),
        ("stats.test.22", "stats.>", true),
        ("stats.test.22", "stats.*.*", true),
        ("foo.bar", "foo", false),
        ("stats.test.foos", "stats.test.foos", true),
        ("stats.test.foos", "stats.test.foo", false),
        ("stats.test", "stats.test.*", false),
        ("stats.test.foos", "stats.*", false),
        ("stats.test.foos", "stats.*.*.foos", false),
        ("foo", "foo.>", false),
    ];
    for (published, subscribed, want) in cases {
        assert_eq!(
            subject_matches(published.as_bytes(), subscribed.as_bytes()),
            want,
            "{published} to {subscribed}"
        );
    }
    // A token that only contains wildcard characters matches itself and nothing else.
    for subject in WILDCARD_CHARACTERS_IN_TOKENS {
        assert!(
            subject_matches(subject.as_bytes(), subject.as_bytes()),
            "{subject}"
        );
        let other = subject.replace(['*', '>'], "x");
        assert!(
            !subject_matches(other.as_bytes(), subject.as_bytes()),
            "{subject}"
        );
    }
}

#[test]
fn subject_is_literal_unless_a_token_is_a_wildcard() {
    for literal in ["foo", "foo.bar", "foo*.bar"]
        .into_iter()
        .chain(WILDCARD_CHARACTERS_IN_TOKENS)
    {
        assert!(!has_wildcard(literal.as_bytes()), "{literal}");
    }
    for wild in [
        "*",
        ">",
        "foo.*",
        "foo.>",
        "foo.*.>",
        "foo.*.bar",
        "foo.bar.>",
    ] {
        assert!(has_wildcard(wild.as_bytes()), "{wild}");
    }
}

#[test]
fn tokens_of_a_subject() {
    let split = |s: &'static str| -> Vec<&[u8]> { tokens(s.as_bytes()).collect() };
    let want: [&[u8]; 4] = [b"foo", b"bar", b"baz", b"*"];
    assert_eq!(split("foo.bar.baz.*"), want);
    // Empty tokens are kept, for the validity checks to refuse them.
    let want: [&[u8]; 3] = [b"a", b"", b"b"];
    assert_eq!(split("a..b"), want);
}
