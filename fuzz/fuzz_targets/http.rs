//! Fuzz target for the monitoring port's HTTP server (`beaver::monitor::http`).
//!
//! The input's first byte chooses how the rest is cut into reads (0: all at once); the rest
//! is what a client sends on one connection. It runs through the same connection loop as a
//! real socket (`serve_script`), with a 4 KiB head limit so that the fuzzer reaches it.
//! Checked: nothing panics (a panic in the handler would be caught and answered 500, so the
//! handler here checks the request it is given and any such answer fails the run); what the
//! server writes is a sequence of well-formed responses; how the input is cut does not
//! change it (apart from `Date`); and `parse_head` accepts or refuses every complete head
//! without panicking.
//!
//! Run (stable Rust; cargo-fuzz needs nightly flags, which RUSTC_BOOTSTRAP allows):
//! `mkdir -p fuzz/corpus/http && RUSTC_BOOTSTRAP=1 cargo fuzz run http fuzz/corpus/http fuzz/seeds/http -- -max_total_time=180`.
#![no_main]

use beaver::monitor::http::{parse_head, serve_script, HeadScan, Handler, Limits, Request, Response};
use libfuzzer_sys::fuzz_target;

/// Answers every request with its method and path; `HEAD` requests are marked, so that the
/// checker knows their body is not sent.
struct Echo;

impl Handler for Echo {
    fn handle(&self, r: &Request<'_>) -> Response {
        assert!(r.minor_version <= 1);
        assert!(!r.method.is_empty() && r.target.len() >= r.raw_query.len());
        let mut headers = vec![("Content-Type", "text/plain".to_owned())];
        if r.method == "HEAD" {
            headers.push(("X-Head", "1".to_owned()));
        }
        let mut body = r.method.as_bytes().to_vec();
        body.push(b' ');
        body.extend_from_slice(&r.path);
        Response {
            status: 200,
            headers,
            body,
        }
    }
}

/// Splits `out` into responses; panics on anything that is not one. Returns them with their
/// `Date` lines removed (the only part allowed to differ between runs).
fn responses(out: &[u8]) -> Vec<Vec<u8>> {
    let mut rest = out;
    let mut all = Vec::new();
    while !rest.is_empty() {
        let mut fields = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut fields);
        let head = match resp.parse(rest) {
            Ok(httparse::Status::Complete(n)) => n,
            other => panic!("not a response: {other:?}: {:?}", String::from_utf8_lossy(rest)),
        };
        let code = resp.code.expect("a status code");
        assert!(
            matches!(code, 200 | 400 | 417 | 431 | 501 | 505),
            "unexpected status {code}"
        );
        let field = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let is_head = field("X-Head").is_some();
        let body = match field("Content-Length") {
            Some(len) if !is_head => std::str::from_utf8(len)
                .ok()
                .and_then(|l| l.parse::<usize>().ok())
                .expect("a numeric Content-Length"),
            Some(_) => 0,
            // Go's refusals have no length: the body runs to the end, and nothing follows.
            None => rest.len() - head,
        };
        assert!(head + body <= rest.len(), "a body shorter than its length");
        let text = String::from_utf8_lossy(&rest[..head + body]);
        let no_date: String = text
            .split_inclusive("\r\n")
            .filter(|l| !l.starts_with("Date: "))
            .collect();
        all.push(no_date.into_bytes());
        rest = &rest[head + body..];
    }
    all
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, input)) = data.split_first() else {
        return;
    };
    let limits = Limits {
        max_header_bytes: 4096,
        ..Limits::default()
    };
    let chunk = if cut == 0 { usize::MAX } else { cut as usize };
    let whole = responses(&serve_script(input, usize::MAX, &Echo, &limits));
    if chunk != usize::MAX {
        let pieces = responses(&serve_script(input, chunk, &Echo, &limits));
        assert_eq!(pieces, whole, "the same answers however the input is cut");
    }

    let mut buf = input.to_vec();
    if let Some(end) = HeadScan::default().find_end(&buf) {
        if let Ok(head) = parse_head(&mut buf[..end]) {
            assert!(head.request.minor_version <= 1);
        }
    }
});
