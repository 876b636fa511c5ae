//! The syntax, construct by construct (each checked against nats-server 2.9.10's behaviour).

use super::*;

fn doc(text: &str) -> Document {
    parse_str(text, Path::new("t.conf")).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn get<'a>(entries: &'a [Entry], key: &str) -> &'a Value {
    &entries
        .iter()
        .find(|e| e.key == key)
        .unwrap_or_else(|| panic!("no key {key} in {entries:#?}"))
        .value
        .value
}

fn s(v: &str) -> Value {
    Value::String(v.into())
}

fn err(text: &str) -> String {
    parse_str(text, Path::new("t.conf"))
        .map(|d| panic!("{text:?} parsed: {d:#?}"))
        .unwrap_err()
        .message
}

#[test]
fn separators_and_comments() {
    let d = doc("# comment\na: 1\nb = 2\nc 3\n// another\nd:4 # trailing\ne=5; f=6, g: 7 // x\n");
    for (k, n) in [
        ("a", 1),
        ("b", 2),
        ("c", 3),
        ("d", 4),
        ("e", 5),
        ("f", 6),
        ("g", 7),
    ] {
        assert_eq!(get(&d.root, k), &Value::Integer(n), "{k}");
    }
    assert_eq!(
        d.root[1].key_at,
        Loc {
            file: 0,
            line: 3,
            col: 1
        }
    );
}

#[test]
fn strings() {
    let d = doc(concat!(
        "a: \"x y\\t\\\"q\\\"\\x41\"\n",
        "b: 'raw \\n'\n",
        "c: >\n",
        "d: /tmp/x\n",
        "e: id:xyz\n",
        "f: 127.0.0.1:4222\n",
        "g: nats://h:4222\n",
        "h: 2s\n",
        "i: 100ms\n",
        "j: \"2m\"\n",
        "k: foo.*.bar\n",
        "l: ::1\n",
    ));
    assert_eq!(get(&d.root, "a"), &s("x y\t\"q\"A"));
    assert_eq!(get(&d.root, "b"), &s("raw \\n"));
    assert_eq!(get(&d.root, "c"), &s(">"));
    assert_eq!(get(&d.root, "d"), &s("/tmp/x"));
    assert_eq!(get(&d.root, "e"), &s("id:xyz"));
    assert_eq!(get(&d.root, "f"), &s("127.0.0.1:4222"));
    assert_eq!(get(&d.root, "g"), &s("nats://h:4222"));
    assert_eq!(get(&d.root, "h"), &s("2s"));
    assert_eq!(get(&d.root, "i"), &s("100ms"));
    assert_eq!(get(&d.root, "j"), &s("2m"));
    assert_eq!(get(&d.root, "k"), &s("foo.*.bar"));
    assert_eq!(doc("x: 1x\n").root[0].value.value, s("1x"));
    assert_eq!(get(&d.root, "l"), &s("::1"));
}

#[test]
fn numbers_sizes_booleans_dates() {
    let d = doc(concat!(
        "a: 1MB\nb: 128KB\nc: 64MB\nd: 1K\ne: 1k\nf: 2Gi\ng: -1\nh: 1.5\ni: -2.5\n",
        "j: true\nk: FALSE\nl: yes\nm: no\nn: on\no: Off\np: 2016-05-04T18:53:41Z\n",
        "q: 1KiB\nr: 2m\n",
    ));
    let int = |k| match get(&d.root, k) {
        Value::Integer(n) => *n,
        v => panic!("{k}: {v:?}"),
    };
    assert_eq!(int("a"), 1 << 20);
    assert_eq!(int("b"), 128 << 10);
    assert_eq!(int("c"), 64 << 20);
    assert_eq!(int("d"), 1000);
    assert_eq!(int("e"), 1000);
    assert_eq!(int("f"), 2 << 30);
    assert_eq!(int("g"), -1);
    assert_eq!(int("q"), 1024);
    // Unquoted `2m` is two million (a size), as in nats-server: durations must be quoted.
    assert_eq!(int("r"), 2_000_000);
    assert_eq!(get(&d.root, "h"), &Value::Float(1.5));
    assert_eq!(get(&d.root, "i"), &Value::Float(-2.5));
    for (k, b) in [
        ("j", true),
        ("k", false),
        ("l", true),
        ("m", false),
        ("n", true),
        ("o", false),
    ] {
        assert_eq!(get(&d.root, k), &Value::Bool(b), "{k}");
    }
    assert_eq!(
        get(&d.root, "p"),
        &Value::Datetime("2016-05-04T18:53:41Z".into())
    );
}

#[test]
fn maps_and_arrays() {
    let d = doc(concat!(
        "{\n",
        "m { a: 1, b: 2; c: 3\n  d: { e: [x, y] } }\n",
        "arr: [\n  1\n  \"two\" # c\n  {k: v}\n]\n",
        "list [a, b, c]\n",
        "nums [1, 2 ]\n",
        "}\n",
    ));
    let Value::Map(m) = get(&d.root, "m") else {
        panic!()
    };
    assert_eq!(get(m, "c"), &Value::Integer(3));
    let Value::Map(dm) = get(m, "d") else {
        panic!()
    };
    assert_eq!(
        get(dm, "e"),
        &Value::Array(vec![
            Node {
                value: s("x"),
                at: Loc {
                    file: 0,
                    line: 3,
                    col: 12
                }
            },
            Node {
                value: s("y"),
                at: Loc {
                    file: 0,
                    line: 3,
                    col: 15
                }
            },
        ])
    );
    let Value::Array(a) = get(&d.root, "arr") else {
        panic!()
    };
    assert_eq!(a.len(), 3);
    assert_eq!(a[0].value, Value::Integer(1));
    assert_eq!(a[1].value, s("two"));
    assert_eq!(a[2].at.line, 7);
    let Value::Array(l) = get(&d.root, "list") else {
        panic!()
    };
    assert_eq!(
        l.iter().map(|n| n.value.clone()).collect::<Vec<_>>(),
        [s("a"), s("b"), s("c")]
    );
    let Value::Array(n) = get(&d.root, "nums") else {
        panic!()
    };
    assert_eq!(n[0].value, Value::Integer(1));
    assert_eq!(n[1].value, Value::Integer(2));
    // nats-server's lexer does not end a number at `]`: it reads `2]` as a string, and the
    // array is never closed.
    assert!(err("nums [1, 2]\n").contains("Unexpected EOF processing array"));
}

#[test]
fn variables() {
    std::env::set_var("BEAVER_NATSCONF_TEST_PORT", "4333");
    let d = doc(concat!(
        "PAYLOAD: 2MB\n",
        "max_payload: $PAYLOAD\n",
        "port: $BEAVER_NATSCONF_TEST_PORT\n",
        "m { inner: $PAYLOAD }\n",
        "pw: $2a$11$abc\n",
    ));
    assert_eq!(get(&d.root, "max_payload"), &Value::Integer(2 << 20));
    assert_eq!(get(&d.root, "port"), &Value::Integer(4333));
    let Value::Map(m) = get(&d.root, "m") else {
        panic!()
    };
    assert_eq!(get(m, "inner"), &Value::Integer(2 << 20));
    assert_eq!(get(&d.root, "pw"), &s("$2a$11$abc"));
    assert!(d.root[0].used);
    assert!(!d.root[1].used);
    let e = err("a: $BEAVER_NO_SUCH_VARIABLE_ANYWHERE\n");
    assert!(
        e.contains("t.conf:1:4") && e.contains("can not be found"),
        "{e}"
    );
}

#[test]
fn include_is_relative_to_the_including_file() {
    let dir = std::env::temp_dir().join(format!("beaver-natsconf-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("sub/inner.conf"),
        "SIZE: 2MB\ndebug: true\nmax_payload: $SIZE\n",
    )
    .unwrap();
    std::fs::write(dir.join("sub/mid.conf"), "include ./inner.conf\nport: 1\n").unwrap();
    std::fs::write(
        dir.join("main.conf"),
        "port: 2\ninclude 'sub/mid.conf'\nm { include \"sub/inner.conf\" }\n",
    )
    .unwrap();
    std::fs::write(dir.join("loop.conf"), "include loop.conf\n").unwrap();
    let d = parse_file(&dir.join("main.conf")).unwrap();
    assert_eq!(get(&d.root, "port"), &Value::Integer(1));
    assert_eq!(get(&d.root, "debug"), &Value::Bool(true));
    let size = d.root.iter().find(|e| e.key == "SIZE").unwrap();
    assert!(size.used, "used in the included file");
    let debug = d.root.iter().find(|e| e.key == "debug").unwrap();
    assert!(
        d.position(debug.key_at).ends_with("inner.conf:2:1"),
        "{}",
        d.position(debug.key_at)
    );
    let Value::Map(m) = get(&d.root, "m") else {
        panic!()
    };
    assert_eq!(get(m, "max_payload"), &Value::Integer(2 << 20));
    let e = parse_file(&dir.join("loop.conf")).unwrap_err().message;
    assert!(e.contains("nested more than"), "{e}");
    let e = parse_str("include nope.conf\n", &dir.join("x.conf"))
        .unwrap_err()
        .message;
    assert!(e.contains("x.conf:1:1") && e.contains("nope.conf"), "{e}");
    assert!(parse_str_no_include("include a.conf\n").is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blocks() {
    let d = doc("a: (\nline one\n  line two\n)\nb: 1\n");
    assert_eq!(get(&d.root, "a"), &s("\nline one\n  line two\n"));
    assert_eq!(get(&d.root, "b"), &Value::Integer(1));
}

#[test]
fn errors_name_the_line() {
    for (text, line) in [
        ("a: 1\nb: \"open\n", "t.conf:3:"),
        ("a: 1\nb: [1, 2\n", "t.conf:3:"),
        ("a: 1\n\nb: 1.5x\n", "t.conf:3:"),
        ("a: {\n", "t.conf:2:"),
        ("a: \"\\q\"\n", "t.conf:1:"),
        ("a: 1.\n", "t.conf:1:"),
        ("a: 20-1\n", "t.conf:1:"),
        ("a: 1kbi\n", "t.conf:1:"),
        ("a: 99999999999999999999\n", "t.conf:1:"),
        ("a:\n1\n", "t.conf:1:"),
    ] {
        let e = err(text);
        assert!(e.starts_with(line), "{text:?}: {e}");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = format!(
        "a: {}{}\n",
        "[".repeat(MAX_DEPTH + 1),
        "]".repeat(MAX_DEPTH + 1)
    );
    assert!(err(&deep).contains("nesting"));
    let ok = format!("a: {}{}\n", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    doc(&ok);
}
