//! Tests of the parser (kept apart so that the code reads in one file).

use super::*;

/// Parses a whole stream fed in pieces of the given sizes, the way the reader does:
/// unconsumed bytes stay at the front and new bytes are appended.
fn parse_in_chunks(
    input: &[u8],
    chunks: &[usize],
    headers: bool,
) -> Result<Vec<String>, ParseError> {
    let mut parser = Parser::new(4096, 1024 * 1024);
    parser.set_headers(headers);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut fed = 0;
    let mut chunk_iter = chunks.iter().copied().chain(std::iter::repeat(1));
    while fed < input.len() {
        let n = chunk_iter.next().unwrap().max(1).min(input.len() - fed);
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        let mut pos = 0;
        loop {
            let step = parser.parse(&buf[pos..])?;
            pos += step.consumed;
            match step.op {
                Some(op) => out.push(describe(&op)),
                None if step.pub_line.is_some() => {}
                None => break,
            }
        }
        buf.drain(..pos);
    }
    Ok(out)
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn describe(op: &ClientOp) -> String {
    match op {
        ClientOp::Connect(j) => format!("CONNECT {}", s(j)),
        ClientOp::Pub(p) => format!(
            "PUB subj={} reply={:?} hdr={:?} size={} payload={:?}",
            s(p.subject),
            p.reply.map(s),
            p.headers.map(|(n, t)| (n, s(t))),
            s(p.size_token),
            s(p.payload)
        ),
        ClientOp::Sub {
            subject,
            queue,
            sid,
        } => format!("SUB {} {:?} {}", s(subject), queue.map(s), s(sid)),
        ClientOp::Unsub { sid, max } => format!("UNSUB {} {:?}", s(sid), max),
        ClientOp::Ping => "PING".into(),
        ClientOp::Pong => "PONG".into(),
        ClientOp::Info(j) => format!("INFO {}", s(j)),
        ClientOp::Ok => "+OK".into(),
        ClientOp::Err(e) => format!("-ERR {}", s(e)),
    }
}

fn parse_all(input: &[u8]) -> Result<Vec<String>, ParseError> {
    parse_in_chunks(input, &[input.len()], true)
}

/// Fixtures: streams and the operations they must yield, whatever the split.
const FIXTURES: &[(&[u8], &[&str])] = &[
    (b"PING\r\n", &["PING"]),
    (b"ping\r\nPoNg\r\n", &["PING", "PONG"]),
    (b"PING\nPONG\n", &["PING", "PONG"]),
    (b"PING junk\r\nPONGPONG\r\n+ok\r\n", &["PING", "PONG", "+OK"]),
    (
        b"CONNECT {\"verbose\":false}\r\n",
        &["CONNECT {\"verbose\":false}"],
    ),
    (b"CONNECT{}\r\n", &["CONNECT {}"]),
    (b"connect   {}\r\n", &["CONNECT {}"]),
    (
        b"PUB foo 5\r\nhello\r\n",
        &["PUB subj=foo reply=None hdr=None size=5 payload=\"hello\""],
    ),
    (
        b"pub\tfoo \t bar\t 02\r\nhi\r\n",
        &["PUB subj=foo reply=Some(\"bar\") hdr=None size=02 payload=\"hi\""],
    ),
    (
        b"PUB foo 4\r\n\r\n\r\n\r\n",
        &["PUB subj=foo reply=None hdr=None size=4 payload=\"\\r\\n\\r\\n\""],
    ),
    (
        b"PUB foo 0\r\n\r\nPING\r\n",
        &["PUB subj=foo reply=None hdr=None size=0 payload=\"\"", "PING"],
    ),
    (
        b"PUB foo 2\nhi\r\n",
        &["PUB subj=foo reply=None hdr=None size=2 payload=\"hi\""],
    ),
    (
        b"PUB foo 2 \r\nhi\r\n",
        &["PUB subj=foo reply=None hdr=None size=2 payload=\"hi\""],
    ),
    (
        b"HPUB foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
        &["PUB subj=foo reply=Some(\"r\") hdr=Some((12, \"12\")) size=14 payload=\"NATS/1.0\\r\\n\\r\\nhi\""],
    ),
    (b"SUB foo 1\r\n", &["SUB foo None 1"]),
    (b"sub foo.* q 22\r\n", &["SUB foo.* Some(\"q\") 22"]),
    (b"SUB foo 1 \r\n", &["SUB foo None 1"]),
    (b"UNSUB 1\r\n", &["UNSUB 1 None"]),
    (b"UNSUB 1 5\r\n", &["UNSUB 1 Some(5)"]),
    (b"UNSUB 1 x\r\n", &["UNSUB 1 None"]),
    (b"INFO {}\r\n", &["INFO {}"]),
    (b"-ERR 'x'\r\n", &["-ERR 'x'"]),
    (b"+OK\r\n", &["+OK"]),
    // The first byte after the blanks is part of the arguments, even an LF.
    (b"SUB \nfoo 1\r\n", &["SUB foo None 1"]),
    (b"CONNECT\n{}\r\n", &["CONNECT \n{}"]),
];

#[test]
fn fixtures_whole() {
    for (input, want) in FIXTURES {
        assert_eq!(parse_all(input).unwrap(), *want, "{}", s(input));
    }
}

#[test]
fn fixtures_every_split_point() {
    for (input, want) in FIXTURES {
        // Two pieces, split at every position.
        for cut in 0..=input.len() {
            let got = parse_in_chunks(input, &[cut, input.len()], true).unwrap();
            assert_eq!(got, *want, "{} split at {cut}", s(input));
        }
        // One byte per read.
        assert_eq!(
            parse_in_chunks(input, &[1], true).unwrap(),
            *want,
            "{} byte by byte",
            s(input)
        );
    }
}

#[test]
fn all_fixtures_concatenated_every_split() {
    let mut stream = Vec::new();
    let mut want: Vec<&str> = Vec::new();
    for (input, ops) in FIXTURES {
        stream.extend_from_slice(input);
        want.extend(ops.iter());
    }
    for cut in 0..=stream.len() {
        let got = parse_in_chunks(&stream, &[cut, 7, 13, 1, 64], true).unwrap();
        assert_eq!(got, want, "split at {cut}");
    }
}

#[test]
fn errors() {
    let cases: &[(&[u8], ParseError)] = &[
        (b"FOO\r\n", ParseError::UnknownOp),
        (b"PX", ParseError::UnknownOp),
        (b"PUBX foo 2\r\n", ParseError::UnknownOp),
        (b" PING\r\n", ParseError::UnknownOp),
        (b"\r\nPING\r\n", ParseError::UnknownOp),
        (b"MSG foo 1 2\r\nhi\r\n", ParseError::UnknownOp),
        (b"PUB foo 1\r\nhi\r\n", ParseError::UnknownOp),
        (b"PUB foo 2\r\nhi\n", ParseError::UnknownOp),
        (
            b"PUB foo\r\n",
            ParseError::BadArgs("processPub Parse Error"),
        ),
        (
            b"PUB foo abc\r\n",
            ParseError::BadArgs("processPub Bad or Missing Size"),
        ),
        (
            b"PUB foo +2\r\n",
            ParseError::BadArgs("processPub Bad or Missing Size"),
        ),
        (
            b"PUB foo 0000000002\r\n",
            ParseError::BadArgs("processPub Bad or Missing Size"),
        ),
        (
            b"PUB foo 2000000\r\n",
            ParseError::MaxPayload { size: 2_000_000 },
        ),
        (
            b"SUB foo\r\n",
            ParseError::BadArgs("processSub Parse Error"),
        ),
        (
            b"SUB a b c d\r\n",
            ParseError::BadArgs("processSub Parse Error"),
        ),
        (
            b"UNSUB\r\n",
            ParseError::UnknownOp, // UNSUB needs a separator before its arguments
        ),
        (
            b"UNSUB 1 2 3\r\n",
            ParseError::BadArgs("processUnsub Parse Error"),
        ),
        (
            b"HPUB foo 14 12\r\n",
            ParseError::BadArgs("processHeaderPub Header Size larger then TotalSize"),
        ),
        (
            b"HPUB foo 12\r\n",
            ParseError::BadArgs("processHeaderPub Parse Error"),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse_all(input).unwrap_err(), *want, "{}", s(input));
        // The same error whatever the split.
        assert_eq!(
            parse_in_chunks(input, &[1], true).unwrap_err(),
            *want,
            "{} byte by byte",
            s(input)
        );
    }
}

#[test]
fn hpub_needs_headers() {
    assert_eq!(
        parse_in_chunks(b"HPUB foo 12 14\r\n", &[64], false).unwrap_err(),
        ParseError::HeadersNotSupported
    );
}

#[test]
fn control_line_limit() {
    let ok = [b"SUB ".as_slice(), &[b'x'; 4094], b" 1\r\n"].concat();
    assert_eq!(parse_all(&ok).unwrap().len(), 1); // 4096 bytes of arguments
    let too_long = [b"SUB ".as_slice(), &[b'x'; 4095], b" 1\r\n"].concat();
    assert_eq!(
        parse_all(&too_long).unwrap_err(),
        ParseError::MaxControlLine
    );
    // Detected before the line ends, like nats-server.
    let partial = [b"PUB ".as_slice(), &[b'x'; 5000]].concat();
    assert_eq!(parse_all(&partial).unwrap_err(), ParseError::MaxControlLine);
}

#[test]
fn ping_junk_does_not_accumulate() {
    let mut p = Parser::new(4096, 1024);
    let junk = [b"PING".as_slice(), &[b'x'; 10_000]].concat();
    let step = p.parse(&junk).unwrap();
    assert_eq!(step.consumed, junk.len());
    assert!(step.op.is_none());
    let step = p.parse(b"yy\r\nPONG\r\n").unwrap();
    assert_eq!(step.consumed, 4);
    assert_eq!(step.op, Some(ClientOp::Ping));
}

#[test]
fn payload_wait_reports_size_and_is_parsed_once() {
    let mut p = Parser::new(4096, 1 << 20);
    let line = b"PUB big 100000\r\n";
    let step = p.parse(line).unwrap();
    assert!(step.op.is_none());
    assert_eq!(step.consumed, 0);
    assert_eq!(p.bytes_needed(), Some(line.len() + 100_000 + 2));
    let mut full = line.to_vec();
    full.extend(std::iter::repeat_n(b'z', 100_000));
    full.extend_from_slice(b"\r\n");
    let step = p.parse(&full).unwrap();
    assert_eq!(step.consumed, full.len());
    match step.op {
        Some(ClientOp::Pub(pub_)) => {
            assert_eq!(pub_.payload.len(), 100_000);
            assert_eq!(pub_.payload_offset, line.len());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(p.bytes_needed(), None);
}

#[test]
fn parse_size_matches_reference() {
    assert_eq!(parse_size(b"0"), Some(0));
    assert_eq!(parse_size(b"007"), Some(7));
    assert_eq!(parse_size(b"999999999"), Some(999_999_999));
    assert_eq!(parse_size(b"1000000000"), None);
    assert_eq!(parse_size(b""), None);
    assert_eq!(parse_size(b"-1"), None);
    assert_eq!(parse_size(b"1x"), None);
}
