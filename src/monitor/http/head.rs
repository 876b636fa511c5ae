//! Reading a request head: `httparse` for the syntax, then what Go's `net/http` checks
//! (host, version, body framing, expectations), the request target as Go's
//! `url.ParseRequestURI` reads it, and Go's answers to what it refuses.

use super::*;

/// How a request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body.
    Empty,
    /// `Content-Length` bytes (more than zero).
    Length(u64),
    /// `Transfer-Encoding: chunked` (HTTP/1.1).
    Chunked,
}

/// A complete, valid request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head<'a> {
    /// The request.
    pub request: Request<'a>,
    /// Its body's framing.
    pub body: Body,
    /// The client asked to close after the response (`Connection: close`, or HTTP/1.0
    /// without `keep-alive`).
    pub wants_close: bool,
    /// An HTTP/1.0 client asked for keep-alive (`Connection: keep-alive`).
    pub keep_alive_10: bool,
    /// `Expect: 100-continue`.
    pub expect_continue: bool,
    /// An `Expect` other than `100-continue`: answered 417 without calling the handler, as
    /// Go does.
    pub expectation_failed: bool,
}

/// Why a request head is refused, each answered as Go's `net/http` answers it (see
/// [`Refusal::to_bytes`]). The connection is closed after the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The head passed the size limit or [`MAX_HEADERS`]: 431.
    TooLarge,
    /// A malformed request that Go answers with a plain `400 Bad Request`.
    BadRequest,
    /// Go's `statusError`: a code and a reason, e.g. 400 `missing required Host header`,
    /// 505 `unsupported protocol version`.
    Status(u16, &'static str),
    /// A `Transfer-Encoding` other than one `chunked`: 501.
    UnsupportedTransferEncoding,
}

impl Refusal {
    /// The bytes Go writes for this refusal.
    pub fn to_bytes(&self) -> Vec<u8> {
        const HEADERS: &str =
            "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n";
        let text = match *self {
            Refusal::TooLarge => {
                let e = "431 Request Header Fields Too Large";
                format!("HTTP/1.1 {e}{HEADERS}{e}")
            }
            Refusal::BadRequest => {
                let e = "400 Bad Request";
                format!("HTTP/1.1 {e}{HEADERS}{e}")
            }
            Refusal::Status(code, why) => {
                let e = format!("{code} {}: {why}", reason(code));
                format!("HTTP/1.1 {e}{HEADERS}{e}")
            }
            Refusal::UnsupportedTransferEncoding => {
                format!("HTTP/1.1 501 Not Implemented{HEADERS}Unsupported transfer encoding")
            }
        };
        text.into_bytes()
    }
}

/// Go's `StatusText` for the codes beaver sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        301 => "Moved Permanently",
        400 => "Bad Request",
        404 => "Not Found",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

// ---------------------------------------------------------------------------------------
// Parsing a request head
// ---------------------------------------------------------------------------------------

/// Finds the end of a request head (the empty line) in a buffer that grows, scanning each
/// byte once however the head arrives (a byte at a time included).
#[derive(Debug, Default, Clone)]
pub struct HeadScan {
    /// Bytes already scanned.
    scanned: usize,
    /// Start of the line being scanned.
    line_start: usize,
}

impl HeadScan {
    /// The length of the head (through its empty line) if `buf` holds all of it. `buf` must
    /// start with the bytes given to the previous calls. An empty first line ends the head
    /// too: it is a malformed request, and Go answers it with a 400.
    pub fn find_end(&mut self, buf: &[u8]) -> Option<usize> {
        while let Some(i) = memchr::memchr(b'\n', buf.get(self.scanned..)?) {
            let nl = self.scanned + i;
            let line = &buf[self.line_start..nl];
            self.scanned = nl + 1;
            self.line_start = nl + 1;
            if line.is_empty() || line == b"\r" {
                return Some(nl + 1);
            }
        }
        self.scanned = buf.len();
        None
    }
}

/// Parses a complete request head (as delimited by [`HeadScan`]) and checks it as Go's
/// `net/http` server does, in Go's order where it matters. `head` is mutable only to
/// rewrite a version `HTTP/1.2`..`HTTP/1.9` to 1.1 for `httparse` (Go serves those as 1.x).
pub fn parse_head(head: &mut [u8]) -> Result<Head<'_>, Refusal> {
    // The request line, split as Go splits it: METHOD SP TARGET SP PROTO.
    let line_end = memchr::memchr(b'\n', head).ok_or(Refusal::BadRequest)?;
    let line = &head[..line_end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let sp1 = memchr::memchr(b' ', line).ok_or(Refusal::BadRequest)?;
    let sp2 = sp1 + 1 + memchr::memchr(b' ', &line[sp1 + 1..]).ok_or(Refusal::BadRequest)?;
    let proto = &line[sp2 + 1..];
    let (major, minor) = parse_http_version(proto).ok_or(Refusal::BadRequest)?;
    if major != 1 {
        return Err(Refusal::Status(505, "unsupported protocol version"));
    }
    if minor > 1 {
        // "HTTP/1.x": the minor digit is the last byte of the version.
        head[sp2 + 1 + 7] = b'1';
    }
    let minor = minor.min(1);
    let head: &[u8] = head;

    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(Refusal::BadRequest),
        Err(httparse::Error::TooManyHeaders) => return Err(Refusal::TooLarge),
        Err(httparse::Error::HeaderName) => {
            return Err(Refusal::Status(400, "invalid header name"))
        }
        Err(httparse::Error::HeaderValue) => {
            return Err(Refusal::Status(400, "invalid header value"))
        }
        Err(_) => return Err(Refusal::BadRequest),
    }
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Err(Refusal::BadRequest);
    };
    let (path, raw_query) = parse_target(target).ok_or(Refusal::BadRequest)?;

    let fields = &*req.headers;
    let values = |name: &'static str| {
        fields
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| trim(h.value))
    };
    if values("Host").count() > 1 {
        return Err(Refusal::BadRequest);
    }
    // Transfer-Encoding is ignored in HTTP/1.0; in 1.1 only one `chunked` is accepted, and
    // it overrides Content-Length (Go: "like nginx").
    let mut body = Body::Empty;
    if minor >= 1 && values("Transfer-Encoding").next().is_some() {
        let mut te = values("Transfer-Encoding");
        match (te.next(), te.next()) {
            (Some(v), None) if v.eq_ignore_ascii_case(b"chunked") => body = Body::Chunked,
            _ => return Err(Refusal::UnsupportedTransferEncoding),
        }
    }
    if body == Body::Empty {
        let mut lengths = values("Content-Length");
        if let Some(first) = lengths.next() {
            if lengths.any(|other| other != first) {
                return Err(Refusal::BadRequest);
            }
            body = match parse_content_length(first) {
                Some(0) => Body::Empty,
                Some(n) => Body::Length(n),
                None => return Err(Refusal::BadRequest),
            };
        }
    }
    if minor >= 1 && values("Host").next().is_none() && method != "CONNECT" {
        return Err(Refusal::Status(400, "missing required Host header"));
    }
    if let Some(host) = values("Host").next() {
        if !host.iter().all(|&b| valid_host_byte(b)) {
            return Err(Refusal::Status(400, "malformed Host header"));
        }
    }
    let connection = |token: &str| values("Connection").any(|v| has_token(v, token));
    let keep_alive_10 = minor == 0 && connection("keep-alive");
    let wants_close = connection("close") || (minor == 0 && !keep_alive_10);
    let expect = values("Expect").next().unwrap_or_default();
    let expect_continue = has_token(expect, "100-continue");
    Ok(Head {
        request: Request {
            method,
            target,
            path,
            raw_query,
            minor_version: minor,
        },
        body,
        wants_close,
        keep_alive_10,
        expect_continue,
        expectation_failed: !expect_continue && !expect.is_empty(),
    })
}

/// Go's `ParseHTTPVersion`: `HTTP/1.1`, `HTTP/1.0`, or `HTTP/` one digit `.` one digit.
fn parse_http_version(proto: &[u8]) -> Option<(u8, u8)> {
    match proto {
        b"HTTP/1.1" => Some((1, 1)),
        b"HTTP/1.0" => Some((1, 0)),
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Some((major - b'0', minor - b'0'))
        }
        _ => None,
    }
}

/// Go's `parseContentLength`: empty is no length (0 here), otherwise decimal digits only,
/// at most 2^63-1.
fn parse_content_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return Some(0);
    }
    if !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v)
        .ok()?
        .parse::<u64>()
        .ok()
        .filter(|&n| n <= i64::MAX as u64)
}

/// Go's `textproto.TrimString`: ASCII space, tab, CR and LF off both ends.
pub(super) fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r' | b'\n', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r' | b'\n'] = v {
        v = rest;
    }
    v
}

/// Go's `hasToken`: `token` appears in `v`, ASCII case-insensitively, between token
/// boundaries (space, comma, tab, or the ends).
pub(super) fn has_token(v: &[u8], token: &str) -> bool {
    let t = token.as_bytes();
    if t.is_empty() || t.len() > v.len() {
        return false;
    }
    let boundary = |b: u8| matches!(b, b' ' | b',' | b'\t');
    (0..=v.len() - t.len()).any(|sp| {
        let end = sp + t.len();
        (sp == 0 || boundary(v[sp - 1]))
            && (end == v.len() || boundary(v[end]))
            && v[sp..end].eq_ignore_ascii_case(t)
    })
}

/// Go's `httpguts.ValidHostHeader` byte set.
fn valid_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!$%&()*+,-.:;=[]'_~".contains(&b)
}

/// The request target read as Go's `url.ParseRequestURI` reads it: the decoded path and
/// the raw query. `None` where Go fails (relative target, bad `%` escape).
pub fn parse_target(target: &str) -> Option<(Cow<'_, [u8]>, &str)> {
    if target.is_empty() {
        return None;
    }
    if target == "*" {
        return Some((Cow::Borrowed(b"*"), ""));
    }
    let (scheme, rest) = split_scheme(target)?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    if !rest.starts_with('/') {
        // "scheme:opaque": no path. A target without a scheme must start with '/'.
        return scheme.map(|_| (Cow::Borrowed(&b""[..]), query));
    }
    let path = match rest.strip_prefix("//") {
        // "scheme://authority/path": the authority is not ours to check.
        Some(after) if scheme.is_some() => after.find('/').map_or("", |i| &after[i..]),
        _ => rest,
    };
    Some((unescape(path.as_bytes(), false)?, query))
}

/// Go's `getScheme`: `Some(scheme)` before a `:` when the target starts with one; `None`
/// for a target that starts with `:`.
fn split_scheme(s: &str) -> Option<(Option<&str>, &str)> {
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return None,
            b':' => return Some((Some(&s[..i]), &s[i + 1..])),
            _ => return Some((None, s)),
        }
    }
    Some((None, s))
}

/// Go's `unescape`: `%XX` is a byte (two hex digits required, else `None`); with
/// `plus_is_space` (query components) `+` is a space. Borrowed when nothing changes.
pub fn unescape(s: &[u8], plus_is_space: bool) -> Option<Cow<'_, [u8]>> {
    let changes = |b: &u8| *b == b'%' || (plus_is_space && *b == b'+');
    if !s.iter().any(changes) {
        return Some(Cow::Borrowed(s));
    }
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                let hi = hex(*s.get(i + 1)?)?;
                let lo = hex(*s.get(i + 2)?)?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(Cow::Owned(out))
}
