//! Differential tests: the same raw-protocol scripts against beaver and against Debian's
//! nats-server (the reference), comparing every frame each server sends.
//!
//! Each script is a list of steps on numbered connections. A step sends bytes, then `PING`,
//! and collects what the server sent up to the matching `PONG` (or until it closed the
//! connection). At the end every open connection is synced once more. The transcripts of the
//! two servers must be equal, frame for frame; INFO lines are compared separately, by field
//! names and stable fields.
//!
//! Where the reference's order is not defined (several subscriptions of one connection
//! matching one message: nats-server iterates a Go map), a script is marked `unordered` and
//! frames are compared as a sorted list per step.
//!
//! Needs nats-server (`apt-get install nats-server`); without it the tests say SKIPPED and
//! pass, except under `BEAVER_REQUIRE_NATS_SERVER=1` (CI), where they fail.

mod common;

use common::{show, Frame, Raw, ServerProcess};
use std::collections::BTreeMap;

/// One step of a script.
enum Step {
    /// Send on connection `.0`, then sync it.
    Send(usize, Vec<u8>),
    /// Send on connection `.0` one byte per write (no sync until the next step).
    Drip(usize, Vec<u8>),
}

struct Script {
    name: &'static str,
    steps: Vec<Step>,
    unordered: bool,
}

fn s(conn: usize, bytes: &[u8]) -> Step {
    Step::Send(conn, bytes.to_vec())
}

fn script(name: &'static str, steps: Vec<Step>) -> Script {
    Script {
        name,
        steps,
        unordered: false,
    }
}

fn one(name: &'static str, bytes: &[u8]) -> Script {
    script(name, vec![s(0, bytes)])
}

/// What one server did with a script.
#[derive(Debug, PartialEq, Eq)]
struct Transcript {
    /// (step, connection, frames received during that step's sync)
    steps: Vec<(usize, usize, Vec<Frame>)>,
    /// Connections the server closed.
    closed: Vec<usize>,
}

/// Waits until the server has dropped the subscriptions of the previous script's
/// connections, which closed when that script ended: a server handles a close on its own
/// time, and a leftover `SUB >` would swallow the next script's publishes (and so its
/// no-responders replies). Publishes to a one-token subject with no-responders on, until the
/// 503 comes back: then nothing else is subscribed to it. Gives up quietly after 5 s (the
/// comparison then shows what differs).
fn settle(server: &ServerProcess) {
    let mut probe = server.raw();
    probe.send(b"CONNECT {\"headers\":true,\"no_responders\":true,\"verbose\":false}\r\nSUB _settle.reply 1\r\n");
    for _ in 0..500 {
        let frames = probe.exchange(b"PUB settle _settle.reply 0\r\n\r\n");
        if frames
            .iter()
            .any(|f| matches!(f, Frame::Msg(line, _) if line.starts_with("HMSG _settle.reply 1 ")))
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn run(server: &ServerProcess, sc: &Script) -> Transcript {
    settle(server);
    let mut conns: BTreeMap<usize, Raw> = BTreeMap::new();
    let mut steps = Vec::new();
    for (i, step) in sc.steps.iter().enumerate() {
        match step {
            Step::Send(c, bytes) => {
                let conn = conns.entry(*c).or_insert_with(|| server.raw());
                let mut frames = conn.exchange(bytes);
                if sc.unordered {
                    frames.sort();
                }
                steps.push((i, *c, frames));
            }
            Step::Drip(c, bytes) => {
                let conn = conns.entry(*c).or_insert_with(|| server.raw());
                for b in bytes {
                    conn.send(std::slice::from_ref(b));
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
        }
    }
    let end = sc.steps.len();
    for (c, conn) in conns.iter_mut() {
        let mut frames = conn.sync();
        if sc.unordered {
            frames.sort();
        }
        steps.push((end, *c, frames));
    }
    let closed = conns
        .iter()
        .filter(|(_, r)| r.closed)
        .map(|(c, _)| *c)
        .collect();
    Transcript { steps, closed }
}

fn compare(scripts: &[Script], beaver_args: &[&str], nats_args: &[&str]) {
    let Some(reference) = ServerProcess::nats_server(nats_args) else {
        return;
    };
    let beaver = ServerProcess::beaver(beaver_args);
    let mut failures = Vec::new();
    for sc in scripts {
        let want = run(&reference, sc);
        let got = run(&beaver, sc);
        if want != got {
            let render = |t: &Transcript| {
                t.steps
                    .iter()
                    .map(|(i, c, f)| format!("  step {i} conn {c}: {:?}\n", show(f)))
                    .collect::<String>()
                    + &format!("  closed: {:?}\n", t.closed)
            };
            failures.push(format!(
                "script {:?}\nnats-server:\n{}beaver:\n{}",
                sc.name,
                render(&want),
                render(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scripts differ:\n{}",
        failures.len(),
        scripts.len(),
        failures.join("\n")
    );
}

/// Single-connection scripts: every operation, option and error of the client protocol.
fn protocol_scripts() -> Vec<Script> {
    let long = |n: usize| -> Vec<u8> { [b"SUB ".as_slice(), &vec![b'x'; n], b" 1\r\n"].concat() };
    vec![
        // Defaults before/without CONNECT: verbose and pedantic.
        one("no connect: verbose defaults", b"SUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\n"),
        one("connect {} keeps verbose", b"CONNECT {}\r\nSUB foo 1\r\n"),
        one(
            "connect verbose false",
            b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\n",
        ),
        one("connect without space", b"CONNECT{\"verbose\":false}\r\n"),
        one("connect twice merges", b"CONNECT {\"verbose\":false}\r\nCONNECT {\"name\":\"x\"}\r\nSUB a 1\r\n"),
        one("connect case-insensitive keys", b"CONNECT {\"Verbose\":false}\r\nSUB a 1\r\n"),
        one("connect bad json closes", b"CONNECT {bad\r\n"),
        one("connect empty closes", b"CONNECT\r\n"),
        one("connect wrong type closes", b"CONNECT {\"verbose\":\"yes\"}\r\n"),
        one("connect protocol 2", b"CONNECT {\"protocol\":2}\r\n"),
        one("connect protocol -1", b"CONNECT {\"protocol\":-1}\r\n"),
        one("connect account", b"CONNECT {\"account\":\"A\"}\r\n"),
        one("no_responders needs headers", b"CONNECT {\"no_responders\":true}\r\n"),
        // PUB / MSG framing.
        one("pub reply", b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo bar 2\r\nhi\r\n"),
        one("pub zero padded size", b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 002\r\nhi\r\n"),
        one("pub empty payload", b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 0\r\n\r\n"),
        one(
            "payload with CR LF inside",
            b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 6\r\na\r\nb\r\n\r\n",
        ),
        one("pub payload too short", b"PUB foo 5\r\nhi\r\n"),
        one("pub payload too long", b"PUB foo 1\r\nhi\r\n"),
        one("payload then bare LF", b"PUB foo 2\r\nhi\n"),
        one("pub no size", b"PUB foo\r\n"),
        one("pub bad size", b"PUB foo abc\r\n"),
        one("pub plus size", b"PUB foo +2\r\nhi\r\n"),
        one("pub 10 digit size", b"PUB foo 0000000002\r\nhi\r\n"),
        one("pub too many args", b"PUB a b c 2\r\nhi\r\n"),
        one("pub over max_payload", b"PUB foo 2000000\r\n"),
        one("pub exactly max_payload line", b"PUB foo 1048577\r\n"),
        one("pubx unknown", b"PUBX foo 2\r\n"),
        // Pedantic.
        one("pedantic pub wildcard", b"CONNECT {\"pedantic\":true,\"verbose\":false}\r\nSUB foo.* 1\r\nPUB foo.* 2\r\nhi\r\n"),
        one("pedantic pub empty token", b"CONNECT {\"verbose\":false}\r\nPUB foo..bar 2\r\nhi\r\n"),
        one("non-pedantic pub wildcard", b"CONNECT {\"pedantic\":false,\"verbose\":false}\r\nSUB foo.* 1\r\nPUB foo.* 2\r\nhi\r\n"),
        one("pub literal with star inside", b"CONNECT {\"verbose\":false}\r\nSUB foo* 1\r\nPUB foo* 2\r\nhi\r\n"),
        // SUB / UNSUB.
        one("sub one arg", b"SUB foo\r\n"),
        one("sub four args", b"SUB a b c d\r\n"),
        one("sub invalid subjects", b"SUB foo..bar 1\r\nSUB foo.>.bar 2\r\nSUB .foo 3\r\nSUB foo. 4\r\n"),
        one("sub wildcards valid", b"SUB * 1\r\nSUB > 2\r\nSUB a.*.>  3\r\n"),
        one("sub duplicate sid", b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nSUB bar 1\r\nPUB foo 1\r\na\r\nPUB bar 1\r\nb\r\n"),
        one("sub queue", b"CONNECT {\"verbose\":false}\r\nSUB foo q 1\r\nPUB foo 1\r\na\r\n"),
        one("unsub no args", b"UNSUB\r\n"),
        one("unsub bad max", b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nUNSUB 1 x\r\nPUB foo 1\r\na\r\n"),
        one("unsub zero max", b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nUNSUB 1 0\r\nPUB foo 1\r\na\r\n"),
        one("unsub unknown sid", b"UNSUB 99\r\n"),
        one("unsub three args", b"UNSUB 1 2 3\r\n"),
        one(
            "unsub max",
            b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nUNSUB 1 2\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nPUB foo 1\r\nc\r\n",
        ),
        one(
            "unsub max counts delivered",
            b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nUNSUB 1 3\r\nPUB foo 1\r\nc\r\nPUB foo 1\r\nd\r\n",
        ),
        one(
            "unsub max already reached",
            b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nPUB foo 1\r\nc\r\nUNSUB 1 2\r\nPUB foo 1\r\nd\r\n",
        ),
        // Headers.
        one("hpub without headers", b"CONNECT {}\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"),
        one("hpub without connect", b"HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"),
        one(
            "hpub",
            b"CONNECT {\"headers\":true,\"verbose\":false}\r\nSUB foo 1\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
        ),
        one(
            "hpub reply",
            b"CONNECT {\"headers\":true,\"verbose\":false}\r\nSUB foo 1\r\nHPUB foo r 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nhi\r\n",
        ),
        one("hpub header larger than total", b"CONNECT {\"headers\":true}\r\nHPUB foo 14 12\r\n"),
        one("hpub two args", b"CONNECT {\"headers\":true}\r\nHPUB foo 12\r\n"),
        one(
            "hpub zero header length",
            b"CONNECT {\"headers\":true,\"verbose\":false}\r\nSUB foo 1\r\nHPUB foo 0 2\r\nab\r\n",
        ),
        one(
            "hpub header not validated",
            b"CONNECT {\"headers\":true,\"verbose\":false}\r\nSUB foo 1\r\nHPUB foo 2 4\r\nab\r\n\r\n",
        ),
        // no_responders and echo.
        one(
            "no responders",
            b"CONNECT {\"headers\":true,\"no_responders\":true,\"verbose\":false}\r\nSUB r.* 7\r\nPUB nobody r.x 2\r\nhi\r\n",
        ),
        one(
            "no responders without reply",
            b"CONNECT {\"headers\":true,\"no_responders\":true,\"verbose\":false}\r\nSUB r 1\r\nPUB nobody 2\r\nhi\r\n",
        ),
        one(
            "no responders without own sub",
            b"CONNECT {\"headers\":true,\"no_responders\":true,\"verbose\":false}\r\nPUB nobody r 2\r\nhi\r\n",
        ),
        one(
            "echo false",
            b"CONNECT {\"echo\":false,\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\n",
        ),
        // Syntax.
        one("ops are case-insensitive", b"ping\r\npInG\r\nsub foo 1\r\npUb foo 2\r\nhi\r\nUnSuB 1\r\n"),
        one("junk after ping pong ok", b"PING foo\r\nPINGX\r\nPONGPONG\r\n+OKAY\r\n"),
        one("bare LF line ends", b"PING\nSUB foo 1\nPUB foo 2\nhi\r\nUNSUB 1\n"),
        one("tabs and runs of blanks", b"SUB\tfoo\t\t1\r\nPUB \t foo\t 2\r\nhi\r\n"),
        one("trailing blanks", b"SUB foo 1 \r\nPUB foo 2 \t\r\nhi\r\n"),
        one("leading space", b" PING\r\n"),
        one("empty line", b"\r\nPING\r\n"),
        one("unknown op", b"FOO\r\n"),
        one("client sends MSG", b"MSG foo 1 2\r\nhi\r\n"),
        one("client sends HMSG", b"HMSG foo 1 2\r\nhi\r\n"),
        one("client sends INFO", b"INFO {}\r\n"),
        one("client sends bad INFO", b"INFO {bad\r\n"),
        one("client sends +OK", b"+OK\r\n"),
        one("client sends -ERR", b"-ERR 'oops'\r\n"),
        // Limits.
        one("control line 4096", &long(4094)),
        one("control line 4097", &long(4095)),
        one("control line 5000", &long(5000)),
        script(
            "control line too long across reads",
            vec![
                Step::Drip(0, [b"PUB ".as_slice(), &[b'x'; 100]].concat()),
                s(0, &[vec![b'y'; 5000], b" 2\r\nhi\r\n".to_vec()].concat()),
            ],
        ),
        // The first byte after the blanks belongs to the arguments, even an LF.
        one("LF first in SUB arguments", b"SUB \nfoo 1\r\nPUB foo 1\r\nx\r\n"),
        one("LF first in CONNECT arguments", b"CONNECT \n{\"verbose\":false}\r\nSUB a 1\r\n"),
        one("CONNECT then LF", b"CONNECT\n{\"verbose\":false}\r\nSUB a 1\r\n"),
        // Pedantic errors come with the control line, before the payload.
        // (A payload split from its line is left out: nats-server then repeats the pedantic
        // error, depending on where its reads were cut. See README, known differences.)
        one("pedantic error then bad payload end", b"PUB foo.* 1\r\nxy"),
        // Split reads: one byte per write.
        script(
            "one byte per write",
            vec![
                Step::Drip(
                    0,
                    b"CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB foo 1\r\nPUB foo r 5\r\nhello\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"
                        .to_vec(),
                ),
                s(0, b""),
            ],
        ),
    ]
}

/// Scripts with several connections: routing between clients.
fn routing_scripts() -> Vec<Script> {
    let quiet = b"CONNECT {\"verbose\":false,\"headers\":true}\r\n";
    let plain = b"CONNECT {\"verbose\":false}\r\n";
    let mut v = vec![
        script(
            "pub to another connection",
            vec![
                s(0, &[quiet.as_slice(), b"SUB foo.* 1\r\nSUB foo.> 2\r\nSUB > 3\r\n"].concat()),
                s(1, &[quiet.as_slice(), b"PUB foo.bar reply 5\r\nhello\r\nPUB foo.bar.baz 3\r\nabc\r\nPUB other 0\r\n\r\n"].concat()),
                s(0, b""),
            ],
        ),
        script(
            "headers stripped for a subscriber without headers",
            vec![
                s(0, &[plain.as_slice(), b"SUB h 1\r\n"].concat()),
                s(1, &[quiet.as_slice(), b"HPUB h 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nhi\r\nHPUB h r 12 12\r\nNATS/1.0\r\n\r\n\r\n"].concat()),
                s(0, b""),
            ],
        ),
        script(
            "echo false only suppresses own messages",
            vec![
                s(0, b"CONNECT {\"verbose\":false,\"echo\":false}\r\nSUB e 1\r\n"),
                s(1, &[plain.as_slice(), b"SUB e 1\r\n"].concat()),
                s(0, b"PUB e 2\r\nhi\r\n"),
                s(1, b"PUB e 2\r\nho\r\n"),
                s(0, b""),
                s(1, b""),
            ],
        ),
        script(
            "single-member queue group and plain subscribers",
            vec![
                s(0, &[plain.as_slice(), b"SUB q work 1\r\n"].concat()),
                s(1, &[plain.as_slice(), b"SUB q 1\r\n"].concat()),
                s(2, &[plain.as_slice(), b"PUB q 1\r\na\r\nPUB q 1\r\nb\r\n"].concat()),
                s(0, b""),
                s(1, b""),
            ],
        ),
        script(
            "auto-unsubscribe with another publisher",
            vec![
                s(0, &[plain.as_slice(), b"SUB a 1\r\nUNSUB 1 3\r\n"].concat()),
                s(1, &[plain.as_slice(), b"PUB a 1\r\n1\r\nPUB a 1\r\n2\r\nPUB a 1\r\n3\r\nPUB a 1\r\n4\r\n"].concat()),
                s(0, b""),
            ],
        ),
        script(
            "request reply between connections",
            vec![
                s(0, &[plain.as_slice(), b"SUB svc 1\r\n"].concat()),
                s(1, &[plain.as_slice(), b"SUB _INBOX.x.* 9\r\nPUB svc _INBOX.x.1 4\r\nping\r\n"].concat()),
                s(0, b"PUB _INBOX.x.1 4\r\npong\r\n"),
                s(1, b""),
            ],
        ),
        script(
            "unsubscribe stops delivery",
            vec![
                s(0, &[plain.as_slice(), b"SUB u 1\r\n"].concat()),
                s(1, &[plain.as_slice(), b"PUB u 1\r\na\r\n"].concat()),
                s(0, b"UNSUB 1\r\n"),
                s(1, b"PUB u 1\r\nb\r\n"),
                s(0, b""),
            ],
        ),
        script(
            "large payload",
            vec![
                s(0, &[plain.as_slice(), b"SUB big 1\r\n"].concat()),
                s(
                    1,
                    &[plain.as_slice(), b"PUB big 100000\r\n", &vec![b'z'; 100_000], b"\r\n"].concat(),
                ),
                s(0, b""),
            ],
        ),
        script(
            "disconnect removes subscriptions",
            vec![
                s(0, &[plain.as_slice(), b"SUB gone 1\r\nPING\r\n"].concat()),
                s(0, b"PUB gone 1\r\n"), // malformed: closes the subscriber
                s(1, &[plain.as_slice(), b"SUB gone 2\r\nPUB gone 1\r\nx\r\n"].concat()),
            ],
        ),
    ];
    v.push(script(
        "order of several matching subscriptions on different subjects",
        vec![
            s(0, &[plain.as_slice(), b"SUB *.*.c 1\r\nSUB a.> 2\r\nSUB *.b.* 3\r\nSUB a.b.c 4\r\nSUB a.*.c 5\r\nSUB > 6\r\nSUB *.> 7\r\nSUB a.b.> 8\r\n"].concat()),
            s(1, &[plain.as_slice(), b"PUB a.b.c 1\r\nx\r\n"].concat()),
            s(0, b""),
        ],
    ));
    v.push(one(
        "no responders picks the sid nats-server picks",
        b"CONNECT {\"headers\":true,\"no_responders\":true,\"verbose\":false}\r\nSUB r.* 1\r\nSUB r.x 2\r\nPUB nobody r.x 0\r\n\r\n",
    ));
    let mut multi = script(
        "several subscriptions of one connection match",
        vec![
            s(
                0,
                &[
                    plain.as_slice(),
                    b"SUB m 1\r\nSUB m 2\r\nSUB * 3\r\nSUB > 4\r\nSUB m q 5\r\n",
                ]
                .concat(),
            ),
            s(1, &[plain.as_slice(), b"PUB m 2\r\nhi\r\n"].concat()),
            s(0, b""),
        ],
    );
    multi.unordered = true;
    v.push(multi);
    v
}

#[test]
fn protocol_matches_reference() {
    compare(&protocol_scripts(), &[], &[]);
}

#[test]
fn routing_matches_reference() {
    compare(&routing_scripts(), &[], &[]);
}

#[test]
fn configured_limits_match_reference() {
    let dir = std::env::temp_dir().join(format!("beaver-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let beaver_conf = dir.join("limits.toml");
    let nats_conf = dir.join("limits.conf");
    std::fs::write(&beaver_conf, "max_payload = 100\nmax_control_line = 64\n").unwrap();
    std::fs::write(&nats_conf, "max_payload: 100\nmax_control_line: 64\n").unwrap();
    let scripts = vec![
        one(
            "payload at limit",
            b"CONNECT {\"verbose\":false}\r\nSUB p 1\r\n",
        ),
        one(
            "payload over limit",
            &[
                b"CONNECT {\"verbose\":false}\r\nPUB p 101\r\n".as_slice(),
                &[b'x'; 101],
                b"\r\n",
            ]
            .concat(),
        ),
        one(
            "payload exactly the limit",
            &[
                b"CONNECT {\"verbose\":false}\r\nSUB p 1\r\nPUB p 100\r\n".as_slice(),
                &[b'x'; 100],
                b"\r\n",
            ]
            .concat(),
        ),
        one(
            "control line at limit",
            &[b"SUB ".as_slice(), &[b'a'; 62], b" 1\r\n"].concat(),
        ),
        one(
            "control line over limit",
            &[b"SUB ".as_slice(), &[b'a'; 63], b" 1\r\n"].concat(),
        ),
    ];
    let b = beaver_conf.to_string_lossy().into_owned();
    let n = nats_conf.to_string_lossy().into_owned();
    compare(&scripts, &["-c", &b], &["-c", &n]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// INFO has every field nats-server's has, in its order (`common::assert_info_fields_match`),
/// with authentication and with a cluster listener too, and the same values where they
/// are not the server's own (ids, ports, runtime).
#[test]
fn info_matches_reference() {
    let configs: [&[&str]; 3] = [
        &[],
        &["--user", "u", "--pass", "p"],
        &["--cluster", "nats://127.0.0.1:-1", "--cluster_name", "c1"],
    ];
    for args in configs {
        let Some(reference) = ServerProcess::nats_server(args) else {
            return;
        };
        let beaver = ServerProcess::beaver(args);
        let (want_raw, got_raw) = (reference.raw(), beaver.raw());
        common::assert_info_fields_match(
            &got_raw.info_json,
            &want_raw.info_json,
            &format!("{args:?}"),
        );
        let (want, got) = (want_raw.info, got_raw.info);
        for field in [
            "version",
            "proto",
            "headers",
            "max_payload",
            "host",
            "client_ip",
            "auth_required",
            "cluster",
        ] {
            assert_eq!(
                got.get(field),
                want.get(field),
                "INFO field {field} ({args:?})"
            );
        }
        assert_eq!(got["port"], beaver.port);
        assert!(got["client_id"].as_u64().is_some());
        assert!(got["go"].as_str().is_some_and(|g| g.starts_with("rust")));
        assert_eq!(
            got["server_id"].as_str().unwrap().len(),
            want["server_id"].as_str().unwrap().len()
        );
    }
}

/// The harness itself: a transcript really contains what the server sent (so an empty
/// comparison cannot pass by accident).
#[test]
fn harness_records_frames() {
    let beaver = ServerProcess::beaver(&[]);
    let t = run(
        &beaver,
        &one(
            "pub reply",
            b"CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo bar 2\r\nhi\r\n",
        ),
    );
    assert_eq!(
        t.steps[0].2,
        vec![
            Frame::Msg("MSG foo 1 bar 2".into(), b"hi".to_vec()),
            Frame::Pong
        ]
    );
    assert!(t.closed.is_empty());
}

/// INFO strings are escaped as Go's encoding/json escapes them (`<`, `>`, `&`, U+2028/9).
#[test]
fn info_escaping_matches_reference() {
    let name = "x<&>y\u{2028}";
    let Some(reference) = ServerProcess::nats_server(&["-n", name]) else {
        return;
    };
    let beaver = ServerProcess::beaver(&["-n", name]);
    let raw_info = |port: u16| -> String {
        use std::io::{BufRead, BufReader};
        let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).unwrap();
        let start = line.find("\"server_name\":").unwrap();
        let end = start + line[start..].find(",\"version\"").unwrap();
        line[start..end].to_string()
    };
    assert_eq!(raw_info(beaver.port), raw_info(reference.port));
}
