//! Tests of the `CONNECT` options (kept apart so that the code reads in one file).

use super::*;

#[test]
fn defaults_before_connect() {
    let o = ConnectOptions::default();
    assert!(o.verbose && o.pedantic && o.echo);
    assert!(!o.headers && !o.no_responders);
}

#[test]
fn merge_keeps_absent_fields() {
    let mut o = ConnectOptions::default();
    o.merge_json(b"{}").unwrap();
    assert!(o.verbose && o.pedantic, "CONNECT {{}} keeps the defaults");
    o.merge_json(br#"{"verbose":false,"name":"x","headers":true}"#)
        .unwrap();
    assert!(!o.verbose && o.pedantic && o.headers);
    o.merge_json(br#"{"verbose":null,"lang":"rust"}"#).unwrap();
    assert!(!o.verbose, "null leaves a field unchanged");
    assert_eq!((o.name.as_str(), o.lang.as_str()), ("x", "rust"));
    o.merge_json(b"null").unwrap();
    assert_eq!(o.name, "x");
}

#[test]
fn a_refused_connect_changes_nothing() {
    let mut o = ConnectOptions::default();
    o.merge_json(br#"{"verbose":false,"name":"a"}"#).unwrap();
    let before = o.clone();
    assert!(o
        .merge_json(br#"{"name":"b","verbose":true,"sig":1}"#)
        .is_err());
    assert_eq!(o, before);
}

#[test]
fn keys_are_case_insensitive_and_unknown_keys_ignored() {
    let mut o = ConnectOptions::default();
    // (`sig`, `jwt` and `nkey` are not unknown: Go type-checks them as strings.)
    o.merge_json(br#"{"Verbose":false,"PEDANTIC":false,"jwt":"x","foo":1}"#)
        .unwrap();
    assert!(!o.verbose && !o.pedantic);
}

#[test]
fn bad_json_is_an_error() {
    for bad in [
        &b""[..],
        b"{bad",
        b"[]",
        b"1",
        br#"{"verbose":"yes"}"#,
        br#"{"protocol":1.5}"#,
        b"{} x",
    ] {
        assert!(
            ConnectOptions::default().merge_json(bad).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

/// The expected outcome of one `CONNECT`: refused, or accepted with these fields changed
/// from the defaults (every other field must keep its default).
type Expect = Option<&'static [(&'static str, &'static str)]>;

const REJECT: Expect = None;

const fn ok(changed: &'static [(&'static str, &'static str)]) -> Expect {
    Some(changed)
}

fn expected(changed: &[(&str, &str)]) -> ConnectOptions {
    let mut o = ConnectOptions::default();
    for &(field, value) in changed {
        let flag = value == "true";
        match field {
            "verbose" => o.verbose = flag,
            "pedantic" => o.pedantic = flag,
            "echo" => o.echo = flag,
            "headers" => o.headers = flag,
            "no_responders" => o.no_responders = flag,
            "tls_required" => o.tls_required = flag,
            "new_account" => o.new_account = flag,
            "name" => o.name = value.into(),
            "lang" => o.lang = value.into(),
            "version" => o.version = value.into(),
            "user" => o.user = value.into(),
            "pass" => o.pass = value.into(),
            "auth_token" => o.auth_token = value.into(),
            "account" => o.account = value.into(),
            "nkey" => o.nkey = value.into(),
            "jwt" => o.jwt = value.into(),
            "sig" => o.sig = value.into(),
            "protocol" => o.protocol = value.parse().unwrap(),
            other => panic!("no field {other}"),
        }
    }
    o
}

/// Taken from nats-server 2.9.10 (Debian's build, Go 1.19.8): each JSON was sent as
/// `CONNECT <json>\r\nPING\r\n` on a fresh connection. `REJECT`: the server closed the
/// connection without `PONG` (and without `-ERR`). `ok`: it answered `PONG`; the values of
/// `verbose` (`+OK` before the `PONG`), `echo` (`SUB foo`/`PUB foo` on the same
/// connection), `pedantic` (`PUB foo.*` gets `-ERR 'Invalid Publish Subject'`), `headers`
/// (`HPUB` accepted) and `name`/`lang`/`version` (`/connz?cid=`) were observed. The other
/// fields cannot be seen from outside; their values follow the same decoding. Lines marked
/// "then -ERR" were decoded fine and then refused by the checks after decoding (beaver's
/// reader does those too), so `merge_json` accepts them.
const ORACLE: &[(&[u8], Expect)] = &[
    (br#"{}"#, ok(&[])),
    (br#"null"#, ok(&[])),
    (br#" null "#, ok(&[])),
    (br#""#, REJECT),
    (br#" "#, REJECT),
    (br#"[]"#, REJECT),
    (br#"1"#, REJECT),
    (br#""x""#, REJECT),
    (br#"true"#, REJECT),
    (br#"{"a":1"#, REJECT),
    (br#"{"verbose":false}"#, ok(&[("verbose", "false")])),
    (br#"{"verbose":null}"#, ok(&[])),
    (br#"{"Verbose":false}"#, ok(&[("verbose", "false")])),
    (br#"{"VERBOSE":false}"#, ok(&[("verbose", "false")])),
    (br#"{"verbose":false,"verbose":true}"#, ok(&[])),
    (
        br#"{"verbose":false,"Verbose":null}"#,
        ok(&[("verbose", "false")]),
    ),
    (br#"{"verbose":"false"}"#, REJECT),
    (br#"{"verbose":0}"#, REJECT),
    (br#"{"verbose":False}"#, REJECT),
    (br#"{"protocol":1}"#, ok(&[("protocol", "1")])),
    (br#"{"protocol":-0}"#, ok(&[])),
    (
        br#"{"protocol":-0 ,"verbose":false}"#,
        ok(&[("verbose", "false")]),
    ),
    (br#"{"protocol":1.0}"#, REJECT),
    (br#"{"protocol":1e0}"#, REJECT),
    (br#"{"protocol":1.5}"#, REJECT),
    (br#"{"protocol":1e2}"#, REJECT),
    (br#"{"protocol":"1"}"#, REJECT),
    (br#"{"protocol":-0.0}"#, REJECT),
    (br#"{"protocol":-0e0}"#, REJECT),
    (br#"{"protocol":9223372036854775808}"#, REJECT),
    (
        br#"{"protocol":-9223372036854775808}"#,
        ok(&[("protocol", "-9223372036854775808")]),
    ), // then -ERR 'invalid client protocol'
    (br#"{"protocol":2}"#, ok(&[("protocol", "2")])), // then -ERR 'invalid client protocol'
    (br#"{"protocol":-1}"#, ok(&[("protocol", "-1")])), // then -ERR 'invalid client protocol'
    (br#"{"protocol":1e999}"#, REJECT),
    (br#"{"protocol":-00}"#, REJECT),
    (br#"{"x":1e999}"#, ok(&[])),
    (br#"{"x":-1e999,"y":1.5e-999}"#, ok(&[])),
    (br#"{"x":1e-0,"y":[-0,1E+2,-0.0e-0]}"#, ok(&[])),
    (br#"{"name":"\ud800"}"#, ok(&[("name", "\u{FFFD}")])),
    (br#"{"name":"\udc00x"}"#, ok(&[("name", "\u{FFFD}x")])),
    (
        br#"{"name":"\ud800\ud800\udc00"}"#,
        ok(&[("name", "\u{FFFD}\u{10000}")]),
    ),
    (br#"{"name":"\ud83d\ude00"}"#, ok(&[("name", "\u{1F600}")])),
    (br#"{"name":"\ud800\n"}"#, ok(&[("name", "\u{FFFD}\n")])),
    (br#"{"x":"\ud800"}"#, ok(&[])),
    (br#"{"\ud800":1}"#, ok(&[])),
    (b"{\"name\":\"a\xffb\"}", ok(&[("name", "a\u{FFFD}b")])),
    (
        b"{\"name\":\"\xe2\x82A\"}",
        ok(&[("name", "\u{FFFD}\u{FFFD}A")]),
    ),
    (
        b"{\"name\":\"\xed\xa0\x80\"}",
        ok(&[("name", "\u{FFFD}\u{FFFD}\u{FFFD}")]),
    ),
    (
        b"{\"name\":\"\xf4\x90\x80\x80\"}",
        ok(&[("name", "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}")]),
    ),
    (
        b"{\"name\":\"\xc0\xaf\"}",
        ok(&[("name", "\u{FFFD}\u{FFFD}")]),
    ),
    (
        b"{\"name\":\"\xe2\x82\xac\xc3\xa9\"}",
        ok(&[("name", "\u{20AC}\u{E9}")]),
    ),
    (b"{\"verbose\xff\":false}", ok(&[])),
    (b"{\xff}", REJECT),
    (b"{\"verbose\":false}\xff", REJECT),
    (br#"{"name":1}"#, REJECT),
    (br#"{"name":true}"#, REJECT),
    (br#"{"name":null}"#, ok(&[])),
    (br#"{"name":"a\u0000b"}"#, ok(&[("name", "a\u{0}b")])),
    (b"{\"name\":\"a\tb\"}", REJECT),
    (b"{\"name\":\"a\x01b\"}", REJECT),
    (b"{\"name\":\"a\x7fb\"}", ok(&[("name", "a\u{7F}b")])),
    (br#"{"sig":1}"#, REJECT),
    (
        br#"{"jwt":"x","nkey":"y","sig":"z"}"#,
        ok(&[("jwt", "x"), ("nkey", "y"), ("sig", "z")]),
    ),
    (br#"{"nkey":[]}"#, REJECT),
    (br#"{"remote_account":1}"#, ok(&[])),
    (br#"{"ssl_required":1}"#, ok(&[])),
    (br#"{"import":{"allow":["a"]}}"#, ok(&[])),
    (br#"{"import":"a"}"#, REJECT),
    (br#"{"import":{"allow":"a"}}"#, REJECT),
    (br#"{"import":[]}"#, REJECT),
    (br#"{"export":null}"#, ok(&[])),
    (
        br#"{"import":{"allow":[null,"a"],"Deny":null,"x":[[1e999]]}}"#,
        ok(&[]),
    ),
    (br#"{"import":{"allow":[1]}}"#, REJECT),
    (br#"{"export":{"DENY":{}}}"#, REJECT),
    (br#"{"import":{"allow":null}}"#, ok(&[])),
    (br#"{} x"#, REJECT),
    (br#"{}{}"#, REJECT),
    (br#"{"a":1,}"#, REJECT),
    (br#"{'a':1}"#, REJECT),
    (br#"{"x":01}"#, REJECT),
    (br#"{"x":-}"#, REJECT),
    (br#"{"x":NaN}"#, REJECT),
    (br#"{"x":tru}"#, REJECT),
    (br#"{"x":"\x"}"#, REJECT),
    (br#"{"x":"\u12"}"#, REJECT),
    (br#"{"x":"\u12G4"}"#, REJECT),
    (b"{\"verbo\xc5\xbfe\":false}", ok(&[("verbose", "false")])),
    (br#"{"verbo\u017fe":false}"#, ok(&[("verbose", "false")])),
    (br#"{"\u0076erbose":false}"#, ok(&[("verbose", "false")])),
    (
        b"{\"auth_to\xe2\x84\xaaen\":\"t\",\"verbose\":false}",
        ok(&[("verbose", "false"), ("auth_token", "t")]),
    ),
    (
        b"{\"verbose\":false,\"n\xc4\xb1me\":1}",
        ok(&[("verbose", "false")]),
    ),
    (b"{\"ver\xc4\xb1bose\":1}", ok(&[])),
    (br#"{"echo":false}"#, ok(&[("echo", "false")])),
    (br#"{"pedantic":false}"#, ok(&[("pedantic", "false")])),
    (br#"{"headers":true}"#, ok(&[("headers", "true")])),
    (
        br#"{"headers":true,"no_responders":true}"#,
        ok(&[("headers", "true"), ("no_responders", "true")]),
    ),
    (
        br#"{"no_responders":true}"#,
        ok(&[("no_responders", "true")]),
    ), // then -ERR 'no responders requires headers support'
    (
        br#"{"ECHO":false,"Pedantic":false,"HeAdErS":true,"verbose":false}"#,
        ok(&[
            ("verbose", "false"),
            ("echo", "false"),
            ("pedantic", "false"),
            ("headers", "true"),
        ]),
    ),
    (
        br#"{"lang":"go","version":"1.2.3","name":"n"}"#,
        ok(&[("name", "n"), ("lang", "go"), ("version", "1.2.3")]),
    ),
    (br#"{"tls_required":true}"#, ok(&[("tls_required", "true")])),
    (br#"{"account":"x"}"#, ok(&[("account", "x")])), // then -ERR 'Authorization Violation'
    (br#"{"new_account":true}"#, ok(&[("new_account", "true")])), // then -ERR 'Authorization Violation'
    (br#"{"new_account":1}"#, REJECT),
    (
        br#"{"user":"u","pass":"p","auth_token":"t"}"#,
        ok(&[("user", "u"), ("pass", "p"), ("auth_token", "t")]),
    ),
    (br#"{"":1}"#, ok(&[])),
    (br#" {"verbose" : false } "#, ok(&[("verbose", "false")])),
    (
        br#"{"verbose":false,"x":{"a":[1,{"b":null}]}}"#,
        ok(&[("verbose", "false")]),
    ),
    (
        br#"{"protocol":1,"protocol":null}"#,
        ok(&[("protocol", "1")]),
    ),
    (br#"{"verbose":false,"name":5}"#, REJECT),
    (br#"{"name":"x","name":"y"}"#, ok(&[("name", "y")])),
    (br#"{"NAME":"x","name":"y"}"#, ok(&[("name", "y")])),
    (br#"{"name":"x","NAME":"y"}"#, ok(&[("name", "y")])),
    (br#"{"x":"\/\b\f\n\r\t\"\\"}"#, ok(&[])),
    (
        br#"{"name":"\u00e9\u20ac"}"#,
        ok(&[("name", "\u{E9}\u{20AC}")]),
    ),
    (br#"{"verbose":true,"x":1e999,"y":"\ud800"}"#, ok(&[])),
    (br#"{"x":[1,2,]}"#, REJECT),
    (br#"{"x":[,]}"#, REJECT),
    (br#"{,}"#, REJECT),
    (br#"{"x" 1}"#, REJECT),
    (br#"{"x":1 "y":2}"#, REJECT),
    (br#"{"verbose":falsey}"#, REJECT),
    (br#"{"verbose":false}}"#, REJECT),
];

#[test]
fn agrees_with_nats_server() {
    let mut failures = Vec::new();
    for &(json, expect) in ORACLE {
        let mut o = ConnectOptions::default();
        let got = o.merge_json(json);
        let ok = match (expect, &got) {
            (None, Err(_)) => true,
            (Some(changed), Ok(())) => o == expected(changed),
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{}: expected {:?}, got {:?} {:?}",
                String::from_utf8_lossy(json),
                expect,
                got.err(),
                o
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn nested(depth: usize, open: &str, inner: &str, close: &str) -> Vec<u8> {
    // `depth` counts the top-level object, as Go's limit does.
    let n = depth - 1;
    format!(r#"{{"x":{}{inner}{}}}"#, open.repeat(n), close.repeat(n)).into_bytes()
}

/// nats-server 2.9.10 accepts nesting up to 10000 levels inside an unknown key and closes
/// the connection at 10001 ("exceeded max depth"); checked with `max_control_line` raised
/// so that such a `CONNECT` fits.
#[test]
fn deep_nesting_in_unknown_keys_is_limited_like_go() {
    for (depth, accepted) in [(200, true), (10_000, true), (10_001, false)] {
        for json in [
            nested(depth, "[", "", "]"),
            nested(depth, r#"{"a":"#, "1", "}"),
        ] {
            let mut o = ConnectOptions::default();
            assert_eq!(
                o.merge_json(&json).is_ok(),
                accepted,
                "depth {depth}: {}",
                String::from_utf8_lossy(&json[..20])
            );
        }
    }
}

/// Deep nesting must not recurse: reader threads have small stacks.
#[test]
fn deep_nesting_runs_on_a_small_stack() {
    let json = nested(10_000, r#"{"a":"#, "1", "}");
    let ok = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || ConnectOptions::default().merge_json(&json).is_ok())
        .unwrap()
        .join()
        .unwrap();
    assert!(ok);
}

#[test]
fn prepare_only_touches_what_go_reads_differently() {
    let p = |j: &[u8]| prepare(j).unwrap();
    assert_eq!(
        p(br#"[-0,-0.0,-0e1,-01,1e-0,"-0"]"#),
        r#"[ 0,-0.0,-0e1,-01,1e-0,"-0"]"#
    );
    assert_eq!(
        p(br#""\"\ud800\\ud800\uDBFF\uDFFF\udc00\ud800\u0041""#),
        r#""\"\ufffd\\ud800\uDBFF\uDFFF\ufffd\ufffd\u0041""#
    );
    assert_eq!(p(b"\"\xe2\x82A\xc3\xa9\""), "\"\u{FFFD}\u{FFFD}A\u{E9}\"");
    assert!(prepare(b"{\"a\":1}\xc3\xa9").is_err());
}
