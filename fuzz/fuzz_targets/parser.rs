//! Fuzz target for the client protocol parser.
//!
//! The input's first byte chooses how the rest is cut into reads (as a reader thread would
//! receive it); the rest is the byte stream. Checked: the parser never panics, never
//! consumes more than it was given, and yields the same operations (or the same error)
//! whether the stream arrives whole or cut into pieces.
//!
//! Run (stable Rust; cargo-fuzz needs nightly flags, which RUSTC_BOOTSTRAP allows):
//! `cd fuzz && mkdir -p corpus/parser && RUSTC_BOOTSTRAP=1 cargo fuzz run parser corpus/parser seeds/parser -- -max_total_time=60`.
#![no_main]

use beaver::protocol::{ClientOp, ParseError, Parser};
use libfuzzer_sys::fuzz_target;

/// Parses `input` delivered in chunks of `chunk` bytes (0: all at once), the way the reader
/// does: unconsumed bytes stay at the front, new bytes are appended.
fn parse(input: &[u8], chunk: usize) -> (Vec<String>, Option<ParseError>) {
    let mut parser = Parser::new(256, 4096);
    parser.set_headers(true);
    let mut buf: Vec<u8> = Vec::new();
    let mut ops = Vec::new();
    let mut fed = 0;
    while fed < input.len() {
        let n = if chunk == 0 { input.len() } else { chunk.min(input.len() - fed) };
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        let mut pos = 0;
        loop {
            match parser.parse(&buf[pos..]) {
                Ok(step) => {
                    assert!(step.consumed <= buf.len() - pos, "consumed past the input");
                    pos += step.consumed;
                    match step.op {
                        Some(op) => ops.push(describe(&op)),
                        None if step.pub_line.is_some() => {}
                        None => break,
                    }
                }
                Err(e) => return (ops, Some(e)),
            }
        }
        buf.drain(..pos);
    }
    (ops, None)
}

fn describe(op: &ClientOp<'_>) -> String {
    format!("{op:?}")
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 16) + 1;
    let (whole_ops, whole_err) = parse(stream, 0);
    let (split_ops, split_err) = parse(stream, chunk);
    // A split stream may stop earlier (an error detected on a partial line comes as soon as
    // the bytes prove it), but never yields different operations.
    let common = whole_ops.len().min(split_ops.len());
    assert_eq!(whole_ops[..common], split_ops[..common]);
    if whole_err.is_none() && split_err.is_none() {
        assert_eq!(whole_ops, split_ops);
    }
});
