//! Property tests of the protocol parser (proptest): any split of a valid byte stream yields
//! the same operations as the whole stream, and arbitrary bytes never make it panic or
//! consume bytes it was not given.

use beaver::protocol::{ClientOp, Parser};
use proptest::prelude::*;

/// One valid client operation, and its bytes.
#[derive(Debug, Clone)]
enum Op {
    Connect(bool, bool),
    Pub(String, Option<String>, Vec<u8>),
    HPub(String, Vec<u8>, Vec<u8>),
    Sub(String, Option<String>, u32),
    Unsub(u32, Option<u32>),
    Ping,
    Pong,
}

fn token() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_$-]{1,8}"
}

fn subject() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 1..4).prop_map(|t| t.join("."))
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    // Payloads may contain anything, CR LF and op names included.
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        Just(b"PING\r\nPUB x 1\r\n".to_vec()),
        Just(b"\r\n\r\n".to_vec()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<bool>(), any::<bool>()).prop_map(|(v, p)| Op::Connect(v, p)),
        (subject(), prop::option::of(subject()), payload()).prop_map(|(s, r, p)| Op::Pub(s, r, p)),
        (subject(), "[A-Za-z]{1,6}", payload()).prop_map(|(s, k, p)| {
            let headers = format!("NATS/1.0\r\n{k}: v\r\n\r\n").into_bytes();
            Op::HPub(s, headers, p)
        }),
        (subject(), prop::option::of(token()), 1..1000u32)
            .prop_map(|(s, q, sid)| Op::Sub(s, q, sid)),
        (1..1000u32, prop::option::of(0..100u32)).prop_map(|(sid, max)| Op::Unsub(sid, max)),
        Just(Op::Ping),
        Just(Op::Pong),
    ]
}

fn encode(op: &Op, out: &mut Vec<u8>) {
    match op {
        Op::Connect(v, p) => out.extend_from_slice(
            format!("CONNECT {{\"verbose\":{v},\"pedantic\":{p},\"headers\":true}}\r\n").as_bytes(),
        ),
        Op::Pub(s, r, p) => {
            match r {
                Some(r) => out.extend_from_slice(format!("PUB {s} {r} {}\r\n", p.len()).as_bytes()),
                None => out.extend_from_slice(format!("PUB {s} {}\r\n", p.len()).as_bytes()),
            }
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        Op::HPub(s, h, p) => {
            out.extend_from_slice(
                format!("HPUB {s} {} {}\r\n", h.len(), h.len() + p.len()).as_bytes(),
            );
            out.extend_from_slice(h);
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        Op::Sub(s, q, sid) => match q {
            Some(q) => out.extend_from_slice(format!("SUB {s} {q} {sid}\r\n").as_bytes()),
            None => out.extend_from_slice(format!("SUB {s} {sid}\r\n").as_bytes()),
        },
        Op::Unsub(sid, max) => match max {
            Some(m) => out.extend_from_slice(format!("UNSUB {sid} {m}\r\n").as_bytes()),
            None => out.extend_from_slice(format!("UNSUB {sid}\r\n").as_bytes()),
        },
        Op::Ping => out.extend_from_slice(b"PING\r\n"),
        Op::Pong => out.extend_from_slice(b"PONG\r\n"),
    }
}

/// Parses `input` cut at the given positions, as a reader thread receives it. Returns the
/// operations (debug-formatted), or the error.
fn parse_split(input: &[u8], cuts: &[usize]) -> Result<Vec<String>, String> {
    let mut parser = Parser::new(4096, 1 << 20);
    parser.set_headers(true);
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    bounds.push(input.len());
    bounds.sort_unstable();
    let mut buf = Vec::new();
    let mut ops = Vec::new();
    let mut fed = 0;
    for b in bounds {
        buf.extend_from_slice(&input[fed..b]);
        fed = b;
        let mut pos = 0;
        loop {
            let step = parser.parse(&buf[pos..]).map_err(|e| format!("{e:?}"))?;
            if step.consumed > buf.len() - pos {
                return Err("consumed past the input".into());
            }
            pos += step.consumed;
            match step.op {
                Some(op) => ops.push(format!("{op:?}")),
                None if step.pub_line.is_some() => {}
                None => break,
            }
        }
        buf.drain(..pos);
    }
    if !buf.is_empty() {
        return Err(format!("{} bytes left over", buf.len()));
    }
    Ok(ops)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any split of a valid stream yields exactly the operations of the whole stream.
    #[test]
    fn any_split_yields_the_same_operations(
        ops in prop::collection::vec(op(), 1..20),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut stream = Vec::new();
        for op in &ops {
            encode(op, &mut stream);
        }
        let whole = parse_split(&stream, &[]).expect("a valid stream parses");
        prop_assert_eq!(whole.len(), ops.len());
        let split = parse_split(&stream, &cuts).expect("a valid stream parses, whatever the split");
        prop_assert_eq!(split, whole);
    }

    /// Arbitrary bytes: no panic, never more consumed than given.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let _ = parse_split(&bytes, &cuts);
    }
}

#[test]
fn a_publish_payload_is_returned_intact() {
    // A sanity check of the harness itself.
    let mut stream = Vec::new();
    encode(
        &Op::Pub("a.b".into(), Some("r".into()), b"x\r\ny".to_vec()),
        &mut stream,
    );
    let ops = parse_split(&stream, &[3, 9]).unwrap();
    assert_eq!(ops.len(), 1);
    let mut p = Parser::new(4096, 1024);
    match p.parse(&stream).unwrap().op {
        Some(ClientOp::Pub(pb)) => assert_eq!(pb.payload, b"x\r\ny"),
        other => panic!("unexpected {other:?}"),
    }
}
