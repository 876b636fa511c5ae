//! Fuzz target for the nats-server configuration reader (`beaver::config::natsconf`) and its
//! mapping onto beaver's configuration.
//!
//! Checked: no input makes either panic or overflow the stack (nesting is bounded), parsing
//! is deterministic, and every location in the tree names a real line of the input.
//! Includes are refused (`parse_str_no_include`), so the fuzzer never reads files.
//!
//! Run (stable Rust; cargo-fuzz needs nightly flags, which RUSTC_BOOTSTRAP allows):
//! `cd fuzz && mkdir -p corpus/natsconf && RUSTC_BOOTSTRAP=1 cargo fuzz run natsconf corpus/natsconf seeds/natsconf -- -max_total_time=60`.
#![no_main]

use beaver::config::natsconf::{parse_str_no_include, Entry, Node, Value};
use beaver::config::Config;
use libfuzzer_sys::fuzz_target;

fn check_node(node: &Node, lines: usize) {
    assert!(node.at.line >= 1 && node.at.line <= lines, "{:?} of {lines} lines", node.at);
    match &node.value {
        Value::Array(items) => items.iter().for_each(|n| check_node(n, lines)),
        Value::Map(entries) => check_entries(entries, lines),
        _ => {}
    }
}

fn check_entries(entries: &[Entry], lines: usize) {
    for e in entries {
        assert!(e.key_at.line >= 1 && e.key_at.line <= lines, "{:?}", e.key_at);
        check_node(&e.value, lines);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = parse_str_no_include(text);
    assert_eq!(first, parse_str_no_include(text), "parsing is deterministic");
    if let Ok(doc) = first {
        // Values taken from the environment come from one-line texts.
        let lines = text.split('\n').count().max(1);
        for e in &doc.root {
            if e.value.at.file == 0 {
                assert!(e.key_at.line <= lines);
            }
        }
        if doc.files.len() == 1 {
            check_entries(&doc.root, lines);
        }
        let _ = Config::from_nats_document(&doc);
    }
});
