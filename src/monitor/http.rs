//! A small blocking HTTP/1.1 server: the transport of the monitoring port.
//!
//! It knows nothing of NATS. It reads requests, hands each to a [`Handler`] and writes the
//! [`Response`] back, and it is built to survive any bytes a client sends, with bounded
//! memory, threads and time. Request heads are parsed by `httparse`; everything around it
//! (limits, timeouts, bodies, connections) is here. Where a request is wrong, the answer is
//! the one Go's `net/http` gives (nats-server's HTTP server), byte for byte.
//!
//! ## Threads
//! - One **acceptor** thread accepts connections.
//! - One **connection** thread per connection, up to [`Limits::max_connections`] (64), with
//!   a small stack ([`Limits::stack_size`]). It reads a request, calls the handler, writes
//!   the response, and waits for the next request on the same connection (keep-alive).
//!
//! When every slot is taken, the acceptor makes room for the new connection by shutting
//! down another one: the one that has waited longest for a request (idle keep-alive
//! connections first), otherwise the one whose current request started first. So a
//! liveness probe always gets an answer, even while thousands of idle or slow sockets are
//! open, and one client cannot hold more than its own thread. The socket is shared as an
//! `Arc<TcpStream>` between the connection's thread and the slot table, so the acceptor
//! (and [`HttpServer::stop`]) can `shutdown()` it without a second file descriptor. On
//! Unix that wakes the thread's blocking read or write at once; the new connection's
//! thread starts once the evicted one has ended (and been joined), so there are never more
//! than 64 connection threads. Windows does not wake a blocked `recv` on `shutdown()`
//! (rust-lang/rust#121594): there, reads wait in 100 ms slices and look at the
//! connection's cancel flag between them, and up to 64 evicted connections may still be
//! ending while new ones take their slots, so that a flood of sockets is not served at one
//! eviction per 100 ms ([`Limits::read_slice`], [`Limits::max_evicting`]).
//!
//! Why threads and not a readiness poller: the rest of beaver is blocking `std::net`, a
//! poller is not in `std`, and 64 threads of 512 KiB (virtual; the resident part is a few
//! pages each) are cheap. Why evict instead of refusing: a refused probe is a failed probe;
//! an evicted keep-alive connection costs its client a reconnect.
//!
//! ## Limits (see [`Limits`] for the values)
//! - **Request head**: at most [`MAX_HEADER_BYTES`] (1 MiB) plus Go's 4 KiB of slack, as
//!   Go's `http.Server` with nats-server's settings (`MaxHeaderBytes` 1 MiB). Longer heads
//!   get Go's `431 Request Header Fields Too Large` and the connection is closed. The buffer
//!   grows only as bytes arrive and shrinks back after the request, so an idle connection
//!   holds a few KiB. At most [`MAX_HEADERS`] header fields (also a 431).
//! - **Bodies are never buffered.** The monitoring endpoints take no body. A declared
//!   `Content-Length` below 256 KiB (Go's `maxPostHandlerReadBytes`) is read and discarded
//!   in 8 KiB pieces, so the connection stays usable, as Go does; a longer one, a chunked
//!   body, or a body behind `Expect: 100-continue` is not read: the response says
//!   `Connection: close`, the write side is shut, and what the client still sends is
//!   drained for at most [`Limits::linger`] before the socket is closed (so the client gets
//!   the response rather than a reset; Go waits the same 500 ms). No allocation ever
//!   depends on a declared length. `100 Continue` is never sent, as in nats-server (its
//!   handlers never read a body).
//! - **Time**: the whole head must arrive within [`Limits::header_timeout`] of its first
//!   byte (a client sending a byte a second is cut there, without an answer, as Go's
//!   `ReadHeaderTimeout` does); a keep-alive connection may wait
//!   [`Limits::idle_timeout`] for its next request; a response must be written within
//!   [`Limits::write_timeout`] plus one second per MiB. nats-server sets none of these (a
//!   slow client holds a goroutine forever); beaver needs them because a thread is dearer
//!   than a goroutine.
//!
//! ## What is answered as Go answers
//! Heads are checked in Go's order and refused with Go's exact bytes (`HTTP/1.1 400 Bad
//! Request`, `400 Bad Request: missing required Host header`, `505 HTTP Version Not
//! Supported: unsupported protocol version`, `501 Not Implemented` for a transfer coding
//! other than `chunked`, `417 Expectation Failed`, `431`). A bad `Content-Length`
//! (not decimal, above 2^63-1, or two different ones) is a 400. The request target is read
//! as Go's `url.ParseRequestURI` reads it (origin form, absolute form, `*`), and its path
//! decoded; a bad `%` escape is a 400. Responses carry Go's headers: `Content-Type` (set by
//! the handler), `Date`, `Content-Length`, and `Connection: close` when the connection is
//! closed after an HTTP/1.1 request. Known differences: versions `HTTP/1.2` to `1.9` are
//! served as 1.1 (Go too), but a request target with raw bytes that are not UTF-8 is a 400
//! (Go accepts it), more than [`MAX_HEADERS`] fields is a 431 (Go has no count limit), and
//! chunked request bodies close the connection (Go reads up to 256 KiB of them).
//!
//! ## Robustness
//! A panic in the handler is caught: the request gets a 500 and the connection goes on. A
//! panic anywhere else in a connection thread ends that thread only; its slot is released
//! by a guard. [`HttpServer::stop`] shuts every connection down, wakes the acceptor with a
//! connection to itself, and waits for all of them for at most [`Limits::stop_wait`].

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Largest request head (request line and header fields), in bytes: nats-server's
/// `MaxHeaderBytes` (1 MiB). Go reads [`HEADER_SLACK`] more before refusing.
pub const MAX_HEADER_BYTES: usize = 1 << 20;

/// What Go's `net/http` reads beyond `MaxHeaderBytes` before it answers 431
/// (`initialReadLimitSize`).
pub const HEADER_SLACK: usize = 4096;

/// Most header fields in one request (beyond: 431). `httparse` needs a fixed array; 128
/// fields is far more than any monitoring client sends.
pub const MAX_HEADERS: usize = 128;

/// Largest declared request body that is read and thrown away to keep the connection
/// alive: Go's `maxPostHandlerReadBytes` (256 KiB). Anything longer closes the connection.
pub const MAX_DISCARD: u64 = 256 << 10;

/// Size of the pieces a body is discarded in, and of a connection's first read buffer.
const CHUNK: usize = 8 << 10;

/// A connection's head buffer above this size is given back after its request.
const KEEP_BUFFER: usize = 16 << 10;

/// Responses up to this size go out in one write with their head.
const COALESCE: usize = 64 << 10;

/// The limits of an [`HttpServer`]. [`Limits::default`] is what the monitoring port uses;
/// tests shorten the times.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most connections at once (each with its thread); beyond, one is evicted (see the
    /// module docs). Default 64.
    pub max_connections: usize,
    /// Largest request head in bytes before [`HEADER_SLACK`]. Default [`MAX_HEADER_BYTES`].
    pub max_header_bytes: usize,
    /// Time from the first byte of a request to the end of its head. Default 5 s.
    pub header_timeout: Duration,
    /// Time a keep-alive connection may wait for its next request. Default 60 s.
    pub idle_timeout: Duration,
    /// Time to write a response, plus one second per [`Limits::min_write_rate`] bytes.
    /// Default 10 s.
    pub write_timeout: Duration,
    /// Bytes per second a slow reader is granted on top of `write_timeout`. Default 1 MiB.
    pub min_write_rate: u64,
    /// Time spent draining what a client still sends after the write side was shut before
    /// a close (Go's `rstAvoidanceDelay`). Default 500 ms.
    pub linger: Duration,
    /// How long the acceptor waits for a thread to end (an evicted connection's, when
    /// [`Limits::max_evicting`] of them are still ending) before it drops the new
    /// connection instead. Default 1 s.
    pub evict_wait: Duration,
    /// How many evicted connections may still be ending, their threads alive, while new
    /// connections take their slots; the threads are at most `max_connections` plus this.
    /// Default 0 on Unix, where `shutdown()` wakes the evicted thread at once, so it ends
    /// before the next one starts; 64 on Windows, where an evicted thread notices only
    /// within a [`Limits::read_slice`] (or at its write deadline).
    pub max_evicting: usize,
    /// How long a blocking read waits before it looks whether its connection was evicted
    /// or the server is stopping (`None`: as long as its deadline). Default `None` on Unix,
    /// where `shutdown()` from another thread wakes a blocked read; 100 ms on Windows,
    /// where it does not (rust-lang/rust#121594).
    pub read_slice: Option<Duration>,
    /// How long [`HttpServer::stop`] waits for the threads to end. Default 2 s.
    pub stop_wait: Duration,
    /// Stack size of a connection thread, in bytes. Default 512 KiB.
    pub stack_size: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 64,
            max_header_bytes: MAX_HEADER_BYTES,
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(10),
            min_write_rate: 1 << 20,
            linger: Duration::from_millis(500),
            evict_wait: Duration::from_secs(1),
            max_evicting: if cfg!(unix) { 0 } else { 64 },
            read_slice: if cfg!(unix) {
                None
            } else {
                Some(Duration::from_millis(100))
            },
            stop_wait: Duration::from_secs(2),
            stack_size: 512 << 10,
        }
    }
}

impl Limits {
    /// Bytes read for a request head before it is refused with 431.
    fn read_limit(&self) -> usize {
        self.max_header_bytes.saturating_add(HEADER_SLACK)
    }

    /// The deadline for writing `len` bytes, from `now`.
    fn write_deadline(&self, now: Instant, len: usize) -> Instant {
        let rate = self.min_write_rate.max(1);
        let extra = Duration::from_secs((len as u64) / rate);
        now + self.write_timeout + extra
    }
}

/// Names used by an [`HttpServer`] for its threads and log lines.
#[derive(Debug, Clone)]
pub struct Config {
    /// Prefix of log lines, e.g. `Monitoring`.
    pub log_name: &'static str,
    /// Name of the acceptor thread.
    pub acceptor_thread: &'static str,
    /// Name of the connection threads.
    pub connection_thread: &'static str,
    /// The limits.
    pub limits: Limits,
}

/// A parsed request, as the handler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method token (`GET`, `HEAD`, `POST`, ...), as sent (case-sensitive).
    pub method: &'a str,
    /// The request target as sent (`/connz?subs=1`, `*`, `http://host/varz`).
    pub target: &'a str,
    /// The decoded path (Go's `URL.Path`): `%XX` escapes decoded, `+` kept. Empty for an
    /// absolute target without a path; `*` for the target `*`.
    pub path: Cow<'a, [u8]>,
    /// The query, undecoded, without the `?` (Go's `URL.RawQuery`).
    pub raw_query: &'a str,
    /// The minor HTTP version: 0 for HTTP/1.0, 1 for HTTP/1.1 (and 1.2 to 1.9).
    pub minor_version: u8,
}

/// A response from the handler. The server adds `Date`, `Content-Length` and, when needed,
/// `Connection`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields, written in this order (`Content-Type` first, by convention). CR and
    /// LF in a value are written as spaces, as Go does.
    pub headers: Vec<(&'static str, String)>,
    /// The body (not sent for `HEAD`; its length is).
    pub body: Vec<u8>,
}

/// Computes responses. Called from several connection threads at once.
pub trait Handler: Send + Sync + 'static {
    /// The response to `request`. A panic here is caught and answered with a 500.
    fn handle(&self, request: &Request<'_>) -> Response;
}

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
fn trim(mut v: &[u8]) -> &[u8] {
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
fn has_token(v: &[u8], token: &str) -> bool {
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

// ---------------------------------------------------------------------------------------
// Serving one connection
// ---------------------------------------------------------------------------------------

/// What a connection loop needs from its socket. Implemented by the TCP connection of an
/// [`HttpServer`], and by an in-memory script for tests and fuzzing ([`serve_script`]).
trait Transport {
    /// Reads into `buf`, waiting until `deadline` at most (then `TimedOut`). `Ok(0)`: the
    /// peer closed.
    fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<usize>;
    /// Writes all of `buf` by `deadline` (else `TimedOut`).
    fn write_all_by(&mut self, buf: &[u8], deadline: Instant) -> io::Result<()>;
    /// Shuts the write side (sends FIN).
    fn close_write(&mut self);
    /// The connection now waits for a request (`true`) or works on one (`false`).
    fn set_idle(&mut self, idle: bool);
}

/// A connection's read buffer: `data[..filled]` holds bytes not yet consumed. It grows
/// (doubling) up to the head limit only as bytes arrive.
struct Buffer {
    data: Vec<u8>,
    filled: usize,
    limit: usize,
}

impl Buffer {
    fn new(limit: usize) -> Buffer {
        Buffer {
            data: vec![0; CHUNK.min(limit).max(1)],
            filled: 0,
            limit: limit.max(1),
        }
    }

    /// Whether the head limit is reached.
    fn is_full(&self) -> bool {
        self.filled >= self.limit
    }

    /// Reads once more (growing the buffer if needed). `Ok(0)`: the peer closed, or the
    /// limit is reached.
    fn fill(&mut self, io: &mut impl Transport, deadline: Instant) -> io::Result<usize> {
        if self.filled == self.data.len() {
            let grown = (self.data.len() * 2).min(self.limit);
            if grown <= self.data.len() {
                return Ok(0);
            }
            self.data.resize(grown, 0);
        }
        let n = io.read_by(&mut self.data[self.filled..], deadline)?;
        self.filled += n;
        Ok(n)
    }

    /// Drops the first `n` bytes, keeping the rest (a pipelined request) at the front, and
    /// gives back a large allocation.
    fn consume(&mut self, n: usize) {
        let n = n.min(self.filled);
        self.data.copy_within(n..self.filled, 0);
        self.filled -= n;
        if self.data.len() > KEEP_BUFFER && self.filled <= CHUNK {
            self.data.truncate(CHUNK.min(self.limit).max(self.filled));
            self.data.shrink_to_fit();
        }
    }
}

/// What to do after a request.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    KeepAlive,
    Close,
}

/// Serves requests on one connection until it closes, times out or is refused.
fn serve(io: &mut impl Transport, handler: &dyn Handler, config: &Config) {
    let limits = &config.limits;
    let mut buf = Buffer::new(limits.read_limit());
    loop {
        if buf.filled == 0 {
            io.set_idle(true);
            match buf.fill(io, Instant::now() + limits.idle_timeout) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        io.set_idle(false);
        // The whole head must arrive within the header timeout (slowloris).
        let deadline = Instant::now() + limits.header_timeout;
        let mut scan = HeadScan::default();
        let head_len = loop {
            if let Some(end) = scan.find_end(&buf.data[..buf.filled]) {
                break end;
            }
            if buf.is_full() {
                refuse(io, Refusal::TooLarge, limits);
                return;
            }
            // A client that stops mid-head or is too slow gets no answer (as Go).
            match buf.fill(io, deadline) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        if respond(io, handler, config, &mut buf, head_len) == Next::Close {
            return;
        }
    }
}

/// Answers the request whose head is `buf.data[..head_len]`, and deals with its body.
fn respond(
    io: &mut impl Transport,
    handler: &dyn Handler,
    config: &Config,
    buf: &mut Buffer,
    head_len: usize,
) -> Next {
    let limits = &config.limits;
    let head = match parse_head(&mut buf.data[..head_len]) {
        Ok(head) => head,
        Err(refusal) => {
            refuse(io, refusal, limits);
            return Next::Close;
        }
    };
    if head.expectation_failed {
        let minor = head.request.minor_version;
        let failed = Response {
            status: 417,
            headers: Vec::new(),
            body: Vec::new(),
        };
        let _ = write_response(io, &failed, false, minor, Some("close"), limits);
        linger(io, limits);
        return Next::Close;
    }
    let response = match catch_unwind(AssertUnwindSafe(|| handler.handle(&head.request))) {
        Ok(r) => r,
        Err(_) => {
            log::error!(
                "{}: the handler for {:?} failed (a bug in beaver)",
                config.log_name,
                head.request.target
            );
            Response {
                status: 500,
                headers: vec![("Content-Type", "text/plain; charset=utf-8".into())],
                body: b"500 internal server error\n".to_vec(),
            }
        }
    };
    let head_only = head.request.method == "HEAD";
    let minor = head.request.minor_version;
    let Head {
        body,
        wants_close,
        keep_alive_10,
        expect_continue,
        ..
    } = head;

    // The body: discarded if small and the connection is to stay; otherwise left unread,
    // and the connection closes (see the module docs).
    let mut close = wants_close;
    let mut unread = false;
    let mut consumed = head_len;
    let mut say_close = false;
    match body {
        Body::Empty => {}
        _ if expect_continue && minor >= 1 => {
            // No 100 Continue was sent, so the client may or may not send the body: the
            // next bytes cannot be trusted to start a request (Go: issue 11549).
            close = true;
            unread = true;
        }
        Body::Chunked => {
            close = true;
            unread = true;
            say_close = true;
        }
        Body::Length(_) if close => unread = true,
        Body::Length(n) if n >= MAX_DISCARD => {
            close = true;
            unread = true;
            say_close = true;
        }
        Body::Length(n) => {
            let buffered = (buf.filled - head_len) as u64;
            let from_buf = n.min(buffered);
            consumed += from_buf as usize;
            if !discard(io, n - from_buf, Instant::now() + limits.header_timeout) {
                close = true;
                unread = true;
            }
        }
    }
    let connection = if close && (minor >= 1 || keep_alive_10 || say_close) {
        Some("close")
    } else if !close && minor == 0 {
        Some("keep-alive")
    } else {
        None
    };
    if write_response(io, &response, head_only, minor, connection, limits).is_err() {
        return Next::Close;
    }
    if close {
        if unread {
            linger(io, limits);
        }
        return Next::Close;
    }
    buf.consume(consumed);
    Next::KeepAlive
}

/// Reads and throws away `n` bytes (in pieces), by `deadline`. False if they did not all
/// come.
fn discard(io: &mut impl Transport, mut n: u64, deadline: Instant) -> bool {
    let mut scratch = [0u8; CHUNK];
    while n > 0 {
        let want = n.min(CHUNK as u64) as usize;
        match io.read_by(&mut scratch[..want], deadline) {
            Ok(0) | Err(_) => return false,
            Ok(got) => n -= got as u64,
        }
    }
    true
}

/// Writes Go's answer to a refused head, then closes after a linger.
fn refuse(io: &mut impl Transport, refusal: Refusal, limits: &Limits) {
    let bytes = refusal.to_bytes();
    let deadline = limits.write_deadline(Instant::now(), bytes.len());
    let _ = io.write_all_by(&bytes, deadline);
    linger(io, limits);
}

/// Shuts the write side, then drains what the client still sends, until it closes or
/// [`Limits::linger`] passes, so that closing with unread bytes does not reset the
/// connection before the client has read the response.
fn linger(io: &mut impl Transport, limits: &Limits) {
    io.close_write();
    let deadline = Instant::now() + limits.linger;
    let mut scratch = [0u8; CHUNK];
    while let Ok(n) = io.read_by(&mut scratch, deadline) {
        if n == 0 {
            break;
        }
    }
}

/// Writes `response` with Go's status line and headers: the handler's headers, then
/// `Date`, `Content-Length`, and `Connection` if given.
fn write_response(
    io: &mut impl Transport,
    response: &Response,
    head_only: bool,
    minor: u8,
    connection: Option<&str>,
    limits: &Limits,
) -> io::Result<()> {
    use std::fmt::Write as _;
    let mut head = String::with_capacity(256);
    let _ = write!(
        head,
        "HTTP/1.{} {} {}\r\n",
        minor.min(1),
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        let value = value.replace(['\r', '\n'], " ");
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let _ = write!(
        head,
        "Date: {}\r\nContent-Length: {}\r\n",
        http_date(SystemTime::now()),
        response.body.len()
    );
    if let Some(c) = connection {
        let _ = write!(head, "Connection: {c}\r\n");
    }
    head.push_str("\r\n");
    let body: &[u8] = if head_only { &[] } else { &response.body };
    let deadline = limits.write_deadline(Instant::now(), head.len() + body.len());
    if body.len() <= COALESCE {
        let mut all = head.into_bytes();
        all.extend_from_slice(body);
        io.write_all_by(&all, deadline)
    } else {
        io.write_all_by(head.as_bytes(), deadline)?;
        io.write_all_by(body, deadline)
    }
}

/// Go's `http.TimeFormat`: `Tue, 01 Dec 2026 15:30:34 GMT`.
pub fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let d = time::OffsetDateTime::from(t);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[d.weekday().number_days_from_monday() as usize],
        d.day(),
        MONTHS[(d.month() as usize).saturating_sub(1) % 12],
        d.year(),
        d.hour(),
        d.minute(),
        d.second()
    )
}

/// An in-memory client for tests and fuzzing: the input arrives in pieces of at most
/// `chunk` bytes, then the client closes its side. Nothing ever times out.
struct Script<'a> {
    input: &'a [u8],
    chunk: usize,
    output: Vec<u8>,
    write_closed: bool,
}

impl Transport for Script<'_> {
    fn read_by(&mut self, buf: &mut [u8], _deadline: Instant) -> io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.input.len());
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input = &self.input[n..];
        Ok(n)
    }

    fn write_all_by(&mut self, buf: &[u8], _deadline: Instant) -> io::Result<()> {
        if self.write_closed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.output.extend_from_slice(buf);
        Ok(())
    }

    fn close_write(&mut self) {
        self.write_closed = true;
    }

    fn set_idle(&mut self, _idle: bool) {}
}

/// Serves one in-memory connection whose client sends `input` in pieces of at most `chunk`
/// bytes (at least 1) and then closes; returns every byte the server wrote. For tests and
/// the `http` fuzz target: it runs the same connection loop as a real socket.
pub fn serve_script(input: &[u8], chunk: usize, handler: &dyn Handler, limits: &Limits) -> Vec<u8> {
    let config = Config {
        log_name: "HTTP",
        acceptor_thread: "",
        connection_thread: "",
        limits: limits.clone(),
    };
    let mut script = Script {
        input,
        chunk: chunk.max(1),
        output: Vec::new(),
        write_closed: false,
    };
    serve(&mut script, handler, &config);
    script.output
}

// ---------------------------------------------------------------------------------------
// The server: acceptor, slots, connection threads
// ---------------------------------------------------------------------------------------

/// A running HTTP server (see the module docs). Stopped by [`HttpServer::stop`] or drop.
pub struct HttpServer {
    state: Arc<State>,
    acceptor: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// What the acceptor, the connection threads and `stop` share.
struct State {
    config: Config,
    handler: Arc<dyn Handler>,
    /// The connection slots. One `parking_lot::Mutex`, taken briefly by the acceptor (admit,
    /// evict), by each connection thread when it goes idle or busy and when it ends, and by
    /// `stop`. Nothing else is locked under it, and no socket I/O is done under it (the
    /// acceptor shuts a victim down after unlocking).
    table: Mutex<Table>,
    /// Signalled when a slot is released, the acceptor ends, or stopping begins.
    changed: Condvar,
}

#[derive(Default)]
struct Table {
    stopping: bool,
    acceptor_done: bool,
    next_id: u64,
    /// The open connections (at most `max_connections`).
    slots: Vec<Slot>,
    /// Connections shut down to make room, whose threads have not ended yet (at most
    /// `max_evicting`, or one).
    evicted: Vec<Slot>,
    /// Threads that have ended (released their slot): they are joined before another
    /// thread starts, so that the number of threads, not only of slots, stays bounded.
    finished: Vec<JoinHandle<()>>,
}

/// One connection: its socket (shared with its thread) and what eviction looks at.
struct Slot {
    id: u64,
    stream: Arc<TcpStream>,
    /// Waiting for a request (rather than reading, computing or writing one).
    idle: bool,
    /// When `idle` last changed (or the connection was accepted).
    since: Instant,
    /// Set when the connection is evicted or the server stops; its thread looks at it
    /// between read slices (see [`Limits::read_slice`]). Relaxed: it publishes nothing,
    /// and the `shutdown()` that follows it is what wakes the thread where it can.
    cancel: Arc<AtomicBool>,
    /// The connection's thread, once started.
    thread: Option<JoinHandle<()>>,
}

impl Slot {
    /// Tells the connection's thread to end, and shuts its socket down (which wakes it at
    /// once on Unix). Called without the table lock held.
    fn cancel(cancel: &AtomicBool, stream: &TcpStream) {
        cancel.store(true, Ordering::Relaxed);
        let _ = stream.shutdown(Shutdown::Both);
    }
}

impl Table {
    /// Evicts a connection, the longest idle one, else the longest busy one: moves it to
    /// `evicted` and returns what is needed to cancel it.
    fn evict(&mut self) -> Option<(Arc<AtomicBool>, Arc<TcpStream>)> {
        let i = self
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| (!s.idle, s.since))
            .map(|(i, _)| i)?;
        let victim = self.slots.swap_remove(i);
        let handles = (victim.cancel.clone(), victim.stream.clone());
        self.evicted.push(victim);
        Some(handles)
    }
}

/// Admission of a new connection.
enum Admit {
    /// Registered under this id, with this cancel flag.
    Slot(u64, Arc<AtomicBool>),
    /// No slot came free in time: drop the connection.
    NoRoom,
    /// The server is stopping.
    Stopping,
}

impl State {
    /// Registers `stream`, evicting another connection if every slot is taken (see
    /// [`Limits::max_evicting`] for when the new connection waits for the evicted one's
    /// thread to end). Returns the new connection's id and its cancel flag.
    fn admit(&self, stream: &Arc<TcpStream>) -> Admit {
        let limits = &self.config.limits;
        let max = limits.max_connections.max(1);
        let deadline = Instant::now() + limits.evict_wait;
        let mut table = self.table.lock();
        loop {
            if table.stopping {
                return Admit::Stopping;
            }
            let threads = table.slots.len() + table.evicted.len();
            if table.slots.len() < max && threads < max + limits.max_evicting {
                let id = table.next_id;
                table.next_id += 1;
                let cancel = Arc::new(AtomicBool::new(false));
                table.slots.push(Slot {
                    id,
                    stream: stream.clone(),
                    idle: true,
                    since: Instant::now(),
                    cancel: cancel.clone(),
                    thread: None,
                });
                return Admit::Slot(id, cancel);
            }
            // Full: evict one connection, unless as many as allowed are still ending; then
            // wait for a thread to end.
            if table.slots.len() >= max && table.evicted.len() < limits.max_evicting.max(1) {
                if let Some((cancel, victim)) = table.evict() {
                    MutexGuard::unlocked(&mut table, || Slot::cancel(&cancel, &victim));
                    continue;
                }
            }
            if self.changed.wait_until(&mut table, deadline).timed_out() {
                return Admit::NoRoom;
            }
        }
    }

    fn set_idle(&self, id: u64, idle: bool) {
        let mut table = self.table.lock();
        if let Some(s) = table.slots.iter_mut().find(|s| s.id == id) {
            if s.idle != idle {
                s.idle = idle;
                s.since = Instant::now();
            }
        }
    }

    /// Called by a connection's thread as it ends (see [`SlotGuard`]).
    fn release(&self, id: u64) {
        let slot = {
            let mut table = self.table.lock();
            let mut slot = match table.slots.iter().position(|s| s.id == id) {
                Some(i) => Some(table.slots.swap_remove(i)),
                None => {
                    let i = table.evicted.iter().position(|s| s.id == id);
                    i.map(|i| table.evicted.swap_remove(i))
                }
            };
            if let Some(thread) = slot.as_mut().and_then(|s| s.thread.take()) {
                table.finished.push(thread);
            }
            self.changed.notify_all();
            slot
        };
        // The socket is closed (if this was its last handle) outside the lock.
        drop(slot);
    }

    /// Records the thread of connection `id`; joins it later if it already ended.
    fn started(&self, id: u64, thread: JoinHandle<()>) {
        let mut table = self.table.lock();
        let Table {
            slots,
            evicted,
            finished,
            ..
        } = &mut *table;
        match slots
            .iter_mut()
            .chain(evicted.iter_mut())
            .find(|s| s.id == id)
        {
            Some(slot) => slot.thread = Some(thread),
            None => finished.push(thread),
        }
    }

    /// Joins the threads whose slot was released. They are past their last line, so each
    /// join returns at once.
    fn reap(&self) {
        let finished = std::mem::take(&mut self.table.lock().finished);
        for thread in finished {
            let _ = thread.join();
        }
    }
}

/// Releases a connection's slot when its thread ends, normally or by a panic.
struct SlotGuard {
    state: Arc<State>,
    id: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.state.release(self.id);
    }
}

/// A connection thread's socket.
struct Tcp {
    stream: Arc<TcpStream>,
    state: Arc<State>,
    id: u64,
    /// Set when the connection is evicted or the server stops (see [`Slot::cancel`]).
    cancel: Arc<AtomicBool>,
    /// [`Limits::read_slice`].
    read_slice: Option<Duration>,
}

impl Tcp {
    /// The error a cancelled connection's I/O returns.
    fn cancelled(&self) -> Option<io::Error> {
        self.cancel
            .load(Ordering::Relaxed)
            .then(|| io::ErrorKind::ConnectionAborted.into())
    }
}

/// Whether an I/O error is a timeout of the socket's read or write timeout.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Transport for Tcp {
    fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
        loop {
            if let Some(e) = self.cancelled() {
                return Err(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            let wait = self.read_slice.map_or(left, |slice| left.min(slice));
            self.stream.set_read_timeout(Some(wait))?;
            match (&*self.stream).read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => {}
                r => return r,
            }
        }
    }

    // Writes are not cut into slices: after a send times out, Windows leaves the socket in
    // an undefined state. A cancelled connection blocked in a write on Windows ends at its
    // write deadline; `max_evicting` bounds how many may be doing that.
    fn write_all_by(&mut self, mut buf: &[u8], deadline: Instant) -> io::Result<()> {
        while !buf.is_empty() {
            if let Some(e) = self.cancelled() {
                return Err(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.stream.set_write_timeout(Some(left))?;
            match (&*self.stream).write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn close_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    fn set_idle(&mut self, idle: bool) {
        self.state.set_idle(self.id, idle);
    }
}

impl HttpServer {
    /// Starts serving `listener` with `handler`: the acceptor thread starts now, connection
    /// threads as connections come. Errors: the acceptor thread could not be started.
    pub fn spawn(
        listener: TcpListener,
        handler: Arc<dyn Handler>,
        config: Config,
    ) -> io::Result<HttpServer> {
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            config,
            handler,
            table: Mutex::new(Table::default()),
            changed: Condvar::new(),
        });
        let acceptor = {
            let state = state.clone();
            std::thread::Builder::new()
                .name(state.config.acceptor_thread.into())
                .spawn(move || accept_loop(&state, &listener))?
        };
        Ok(HttpServer {
            state,
            acceptor: Some(acceptor),
            addr,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections open now (each has its thread; evicted ones still ending not counted).
    pub fn connections(&self) -> usize {
        self.state.table.lock().slots.len()
    }

    /// Stops accepting, shuts every connection down (a response being written is cut), and
    /// waits at most [`Limits::stop_wait`] for the threads to end; a thread still busy then
    /// (a handler that does not return) is left to finish on its own.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        let conns: Vec<(Arc<AtomicBool>, Arc<TcpStream>)> = {
            let mut table = self.state.table.lock();
            table.stopping = true;
            self.state.changed.notify_all();
            let all = table.slots.iter().chain(table.evicted.iter());
            all.map(|s| (s.cancel.clone(), s.stream.clone())).collect()
        };
        for (cancel, stream) in conns {
            Slot::cancel(&cancel, &stream);
        }
        // The acceptor is blocked in accept(): a connection to ourselves wakes it.
        let _ = TcpStream::connect_timeout(&wake_addr(self.addr), Duration::from_secs(1));
        let name = self.state.config.log_name;
        let deadline = Instant::now() + self.state.config.limits.stop_wait;
        let mut table = self.state.table.lock();
        while !(table.acceptor_done && table.slots.is_empty() && table.evicted.is_empty()) {
            if self
                .state
                .changed
                .wait_until(&mut table, deadline)
                .timed_out()
            {
                break;
            }
        }
        let (done, left) = (table.acceptor_done, table.slots.len() + table.evicted.len());
        drop(table);
        self.state.reap();
        if done {
            let _ = acceptor.join();
        } else {
            log::warn!("{name}: the HTTP acceptor did not stop in time");
        }
        if left > 0 {
            log::warn!("{name}: {left} HTTP connections still busy at shutdown");
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Where to connect to reach a listener bound to `local` (loopback for a wildcard).
fn wake_addr(local: SocketAddr) -> SocketAddr {
    let mut a = local;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

fn accept_loop(state: &Arc<State>, listener: &TcpListener) {
    let name = state.config.log_name;
    // After an accept error (e.g. out of file descriptors) back off from 10 ms doubling up
    // to 1 s, instead of spinning.
    let mut backoff = Duration::from_millis(10);
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                if state.table.lock().stopping {
                    break;
                }
                if e.kind() != io::ErrorKind::Interrupted {
                    log::error!(
                        "{name}: error accepting a connection: {e}; retrying in {backoff:?}"
                    );
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                continue;
            }
        };
        backoff = Duration::from_millis(10);
        let stream = Arc::new(stream);
        let (id, cancel) = match state.admit(&stream) {
            Admit::Slot(id, cancel) => (id, cancel),
            Admit::NoRoom => {
                log::debug!("{name}: no connection slot came free; connection dropped");
                continue;
            }
            Admit::Stopping => break,
        };
        // Threads of released slots end before a new one starts: at most
        // `max_connections` connection threads exist at any time.
        state.reap();
        // Small responses should not wait for the client's delayed ACK (Nagle).
        let _ = stream.set_nodelay(true);
        let guard = SlotGuard {
            state: state.clone(),
            id,
        };
        let spawned = {
            let shared = state.clone();
            let handler = state.handler.clone();
            std::thread::Builder::new()
                .name(state.config.connection_thread.into())
                .stack_size(state.config.limits.stack_size)
                .spawn(move || {
                    let _guard = guard;
                    let mut tcp = Tcp {
                        stream,
                        state: shared.clone(),
                        id,
                        cancel,
                        read_slice: shared.config.limits.read_slice,
                    };
                    serve(&mut tcp, &*handler, &shared.config);
                })
        };
        match spawned {
            Ok(thread) => state.started(id, thread),
            // The closure (and the guard in it) is dropped: the slot is released.
            Err(e) => log::error!("{name}: error starting a connection thread: {e}"),
        }
    }
    let mut table = state.table.lock();
    table.acceptor_done = true;
    state.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Head<'static>, Refusal> {
        let leaked: &'static mut [u8] = Box::leak(text.as_bytes().to_vec().into_boxed_slice());
        parse_head(leaked)
    }

    fn ok(text: &str) -> Head<'static> {
        parse(text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
    }

    #[test]
    fn scans_heads_however_they_arrive() {
        let text = b"GET /varz HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
        let end = 31;
        assert_eq!(HeadScan::default().find_end(text), Some(end));
        for split in 0..text.len() {
            let mut scan = HeadScan::default();
            let first = scan.find_end(&text[..split]);
            let got = first.or_else(|| scan.find_end(text));
            assert_eq!(got, Some(end), "split at {split}");
        }
        // A byte at a time.
        let mut scan = HeadScan::default();
        let got = (1..=text.len()).find_map(|n| scan.find_end(&text[..n]));
        assert_eq!(got, Some(end));
        // Bare LF line ends, and an empty first line (a 400 for the parser).
        assert_eq!(
            HeadScan::default().find_end(b"GET / HTTP/1.0\n\n"),
            Some(16)
        );
        assert_eq!(HeadScan::default().find_end(b"\r\nGET"), Some(2));
        assert_eq!(
            HeadScan::default().find_end(b"GET / HTTP/1.1\r\nHost"),
            None
        );
    }

    #[test]
    fn parses_valid_heads() {
        let h = ok("GET /connz?subs=1 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(h.request.method, "GET");
        assert_eq!(h.request.target, "/connz?subs=1");
        assert_eq!(&*h.request.path, b"/connz");
        assert_eq!(h.request.raw_query, "subs=1");
        assert_eq!(h.request.minor_version, 1);
        assert_eq!(h.body, Body::Empty);
        assert!(!h.wants_close && !h.keep_alive_10 && !h.expect_continue);

        let h = ok("GET /var%7A HTTP/1.0\n\n");
        assert_eq!(&*h.request.path, b"/varz");
        assert!(h.wants_close, "HTTP/1.0 closes by default");
        let h = ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(h.keep_alive_10 && !h.wants_close);
        let h = ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n");
        assert!(h.wants_close);
        // Absolute form, `*`, versions 1.2-1.9 served as 1.1.
        let h = ok("GET http://example.com/healthz?x=%2F HTTP/1.1\r\nHost: y\r\n\r\n");
        assert_eq!(
            (&*h.request.path, h.request.raw_query),
            (&b"/healthz"[..], "x=%2F")
        );
        let h = ok("GET http://example.com HTTP/1.1\r\nHost: y\r\n\r\n");
        assert_eq!(&*h.request.path, b"");
        assert_eq!(
            &*ok("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").request.path,
            b"*"
        );
        assert_eq!(
            ok("GET / HTTP/1.7\r\nHost: x\r\n\r\n")
                .request
                .minor_version,
            1
        );
        // `+` is kept in paths; `%ff` decodes to a byte that is not UTF-8.
        assert_eq!(
            &*ok("GET /a+b%ff HTTP/1.0\r\n\r\n").request.path,
            b"/a+b\xff"
        );
    }

    #[test]
    fn bodies_and_expectations() {
        let h = ok("POST /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n");
        assert_eq!(h.body, Body::Length(99_999_999_999));
        let h = ok("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n");
        assert_eq!(h.body, Body::Length(i64::MAX as u64));
        let h = ok("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  0 \r\n\r\n");
        assert_eq!(h.body, Body::Empty);
        let h = ok("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(h.body, Body::Length(5));
        let h = ok(
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        );
        assert_eq!(h.body, Body::Chunked);
        // HTTP/1.0 ignores Transfer-Encoding.
        let h = ok("POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n");
        assert_eq!(h.body, Body::Length(3));
        let h =
            ok("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 9\r\n\r\n");
        assert!(h.expect_continue);

        for bad in [
            "18446744073709551615",
            "9223372036854775808",
            "+5",
            "-1",
            "0x10",
            "1 2",
        ] {
            let text = format!("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: {bad}\r\n\r\n");
            assert_eq!(parse(&text), Err(Refusal::BadRequest), "{bad}");
        }
        assert_eq!(
            parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(Refusal::BadRequest)
        );
        assert_eq!(
            parse("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"),
            Err(Refusal::UnsupportedTransferEncoding)
        );
        assert_eq!(
            parse("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(Refusal::UnsupportedTransferEncoding)
        );
        assert!(ok("GET / HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n").expectation_failed);
        assert!(
            !ok("GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n").expectation_failed
        );
    }

    #[test]
    fn refuses_as_go_does() {
        let status = |code, why| Err(Refusal::Status(code, why));
        for (text, want) in [
            (
                "GET /healthz HTTP/1.1\r\n\r\n",
                status(400, "missing required Host header"),
            ),
            (
                "GET / HTTP/2.0\r\nHost: x\r\n\r\n",
                status(505, "unsupported protocol version"),
            ),
            (
                "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
                status(400, "malformed Host header"),
            ),
            (
                "GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n",
                status(400, "malformed Host header"),
            ),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n",
                status(400, "invalid header name"),
            ),
            (
                "GET / HTTX/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET / HTTP/1.10\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            ("GET /\r\n\r\n", Err(Refusal::BadRequest)),
            ("\r\n", Err(Refusal::BadRequest)),
            (
                "G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET varz HTTP/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET :x HTTP/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET /bad%zz HTTP/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET /bad%f HTTP/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
            (
                "GET  / HTTP/1.1\r\nHost: x\r\n\r\n",
                Err(Refusal::BadRequest),
            ),
        ] {
            assert_eq!(parse(text).map(|_| ()), want.map(|_: ()| ()), "{text:?}");
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(
            parse(&format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n")).map(|_| ()),
            Err(Refusal::TooLarge)
        );
        assert_eq!(
            Refusal::Status(400, "missing required Host header").to_bytes(),
            b"HTTP/1.1 400 Bad Request: missing required Host header\r\n\
              Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n\
              400 Bad Request: missing required Host header"
        );
        assert_eq!(
            Refusal::BadRequest.to_bytes(),
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Connection: close\r\n\r\n400 Bad Request"
        );
    }

    #[test]
    fn tokens_and_dates() {
        assert!(has_token(b"keep-alive, Close", "close"));
        assert!(!has_token(b"closed", "close"));
        assert!(!has_token(b"", "close"));
        assert!(has_token(b"100-continue", "100-continue"));
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_139_034);
        assert_eq!(http_date(t), "Tue, 01 Dec 2026 15:30:34 GMT");
        assert_eq!(trim(b" \t5 \r"), b"5");
        assert_eq!(unescape(b"a+b%41", true).as_deref(), Some(&b"a bA"[..]));
        assert_eq!(unescape(b"a+b", false).as_deref(), Some(&b"a+b"[..]));
        assert_eq!(unescape(b"%4", false), None);
    }

    /// Echoes the method and path; panics on `/panic`.
    struct Echo;

    impl Handler for Echo {
        fn handle(&self, r: &Request<'_>) -> Response {
            assert!(&*r.path != b"/panic", "asked to panic");
            if &*r.path == b"/big" {
                return Response {
                    status: 200,
                    headers: Vec::new(),
                    body: vec![b'x'; 32 << 20],
                };
            }
            Response {
                status: 200,
                headers: vec![("Content-Type", "text/plain".into())],
                body: format!("{} {}", r.method, String::from_utf8_lossy(&r.path)).into_bytes(),
            }
        }
    }

    /// The responses in `out`: (status line, Connection header, body).
    fn responses(out: &[u8]) -> Vec<(String, String, String)> {
        let mut rest = out;
        let mut got = Vec::new();
        while !rest.is_empty() {
            let mut fields = [httparse::EMPTY_HEADER; 16];
            let mut resp = httparse::Response::new(&mut fields);
            let n = match resp.parse(rest) {
                Ok(httparse::Status::Complete(n)) => n,
                other => panic!(
                    "bad response {other:?}: {:?}",
                    String::from_utf8_lossy(rest)
                ),
            };
            let field = |name: &str| {
                resp.headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned())
                    .unwrap_or_default()
            };
            let len: usize = field("Content-Length").parse().unwrap_or(rest.len() - n);
            let status = format!("{} {}", resp.code.unwrap_or(0), resp.reason.unwrap_or(""));
            got.push((
                status,
                field("Connection"),
                String::from_utf8_lossy(&rest[n..n + len]).into_owned(),
            ));
            rest = &rest[n + len..];
        }
        got
    }

    fn run(input: &[u8]) -> Vec<(String, String, String)> {
        let limits = Limits::default();
        let whole = responses(&serve_script(input, usize::MAX, &Echo, &limits));
        // Any split of the input gives the same answers.
        for chunk in [1, 2, 7, 100] {
            let split = responses(&serve_script(input, chunk, &Echo, &limits));
            assert_eq!(split, whole, "in pieces of {chunk}");
        }
        whole
    }

    fn r(status: &str, conn: &str, body: &str) -> (String, String, String) {
        (status.into(), conn.into(), body.into())
    }

    #[test]
    fn keeps_alive_pipelines_and_discards_small_bodies() {
        let got = run(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\
              POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\
              GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n\
              GET /never HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(
            got,
            vec![
                r("200 OK", "", "GET /a"),
                r("200 OK", "", "POST /b"),
                r("200 OK", "close", "GET /c"),
            ]
        );
        // HTTP/1.0 keep-alive.
        assert_eq!(
            run(b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n"),
            vec![
                r("200 OK", "keep-alive", "GET /a"),
                r("200 OK", "", "GET /b")
            ]
        );
        // HEAD: the length of the body, not the body. The exact bytes of a response.
        let out = serve_script(
            b"HEAD /c HTTP/1.1\r\nHost: x\r\n\r\nGET /d HTTP/1.0\r\n\r\n",
            usize::MAX,
            &Echo,
            &Limits::default(),
        );
        let text = String::from_utf8_lossy(&out);
        let date = http_date(SystemTime::now());
        let (first, second) = text.split_once("\r\n\r\n").expect("two responses");
        assert!(
            first.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: "),
            "{text}"
        );
        assert!(first.ends_with("\r\nContent-Length: 7"), "{text}");
        assert!(second.starts_with("HTTP/1.0 200 OK\r\n"), "{text}");
        assert!(
            second.ends_with("Content-Length: 6\r\n\r\nGET /d"),
            "{text}"
        );
        assert_eq!(date.len(), 29);
    }

    #[test]
    fn large_bodies_close_instead_of_being_read() {
        for head in [
            "POST /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nabc",
            "POST /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 262144\r\n\r\nabc",
            "POST /varz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "POST /varz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 99999999999\r\n\r\n",
            "POST /varz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        ] {
            let mut input = head.as_bytes().to_vec();
            input.extend_from_slice(b"GET /second HTTP/1.1\r\nHost: x\r\n\r\n");
            assert_eq!(run(&input), vec![r("200 OK", "close", "POST /varz")], "{head}");
        }
        // A body that ends early: answered, then closed.
        assert_eq!(
            run(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"),
            vec![r("200 OK", "close", "POST /x")]
        );
    }

    #[test]
    fn refusals_are_answered_and_close() {
        let out = serve_script(
            b"GET /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\nGET / HTTP/1.1\r\n\r\n",
            usize::MAX,
            &Echo,
            &Limits::default(),
        );
        assert_eq!(out, Refusal::BadRequest.to_bytes());
        assert_eq!(
            run(b"GET /x HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n"),
            vec![r("417 Expectation Failed", "close", "")]
        );
        // Heads over the limit: 431, whether or not a line ever ends.
        let limits = Limits {
            max_header_bytes: 1000,
            ..Limits::default()
        };
        let mut long = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
        long.resize(200_000, b'a');
        for chunk in [1, 1000, usize::MAX] {
            let out = serve_script(&long, chunk, &Echo, &limits);
            assert_eq!(out, Refusal::TooLarge.to_bytes(), "chunk {chunk}");
        }
        let mut fits = b"GET /fits HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
        fits.resize(1000 + HEADER_SLACK - 4, b'a');
        fits.extend_from_slice(b"\r\n\r\n");
        let out = serve_script(&fits, 100, &Echo, &limits);
        assert_eq!(responses(&out), vec![r("200 OK", "", "GET /fits")]);
        // A client that stops mid-head gets nothing.
        assert!(serve_script(b"GET / HTTP/1.1\r\nHo", 3, &Echo, &limits).is_empty());
    }

    #[test]
    fn a_panicking_handler_gets_a_500_and_the_connection_goes_on() {
        assert_eq!(
            run(b"GET /panic HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n"),
            vec![
                r(
                    "500 Internal Server Error",
                    "",
                    "500 internal server error\n"
                ),
                r("200 OK", "", "GET /after")
            ]
        );
    }

    // The server, over real loopback sockets with short limits.

    fn server(limits: Limits) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let config = Config {
            log_name: "test",
            acceptor_thread: "test-http",
            connection_thread: "test-http-conn",
            limits,
        };
        HttpServer::spawn(listener, Arc::new(Echo), config).unwrap()
    }

    fn connect(s: &HttpServer) -> TcpStream {
        let c = TcpStream::connect(s.local_addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c
    }

    fn get(s: &HttpServer, path: &str) -> String {
        let mut c = connect(s);
        write!(c, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    /// Reads until the server closes; false if it does not within `limit`.
    fn closed_within(c: &mut TcpStream, limit: Duration) -> bool {
        c.set_read_timeout(Some(limit)).unwrap();
        let mut sink = [0u8; 65536];
        loop {
            match c.read(&mut sink) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if is_timeout(&e) => return false,
                Err(_) => return true, // reset
            }
        }
    }

    /// Connection threads alive or ending (the slots and the evicted connections).
    fn threads(s: &HttpServer) -> usize {
        let table = s.state.table.lock();
        table.slots.len() + table.evicted.len()
    }

    #[test]
    fn evicts_the_oldest_idle_connection_when_full() {
        // This platform's settings, then Windows' (an evicted thread notices its flag
        // between read slices, and up to three may still be ending while new connections
        // come in). Unix's (no slices, no evicted thread still ending) need `shutdown()` to
        // wake a blocked read, which Windows does not do.
        let here = Limits::default();
        for (max_evicting, read_slice) in [
            (here.max_evicting.min(3), here.read_slice),
            (3, Some(Duration::from_millis(50))),
        ] {
            let s = server(Limits {
                max_connections: 3,
                max_evicting,
                read_slice,
                ..Limits::default()
            });
            let mut idle: Vec<TcpStream> = (0..3).map(|_| connect(&s)).collect();
            // Wait until all three have their slot.
            let deadline = Instant::now() + Duration::from_secs(10);
            while s.connections() < 3 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(get(&s, "/probe").ends_with("GET /probe"));
            assert!(
                closed_within(&mut idle[0], Duration::from_secs(10)),
                "the oldest went"
            );
            assert!(s.connections() <= 3);
            // Two hundred more: the threads stay bounded and the probe still gets through.
            let many: Vec<TcpStream> = (0..200).map(|_| connect(&s)).collect();
            assert!(get(&s, "/probe2").ends_with("GET /probe2"));
            assert!(s.connections() <= 3);
            assert!(threads(&s) <= 3 + max_evicting);
            drop(many);
            s.stop();
        }
    }

    #[test]
    fn slow_heads_idle_connections_and_non_readers_are_cut() {
        let s = server(Limits {
            header_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            write_timeout: Duration::from_millis(300),
            min_write_rate: u64::MAX,
            ..Limits::default()
        });
        // Slowloris: one byte every 50 ms never finishes its head.
        let mut c = connect(&s);
        c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let start = Instant::now();
        let mut cut = false;
        while start.elapsed() < Duration::from_secs(10) {
            if c.write_all(b"X").is_err() || closed_within(&mut c, Duration::from_millis(50)) {
                cut = true;
                break;
            }
        }
        assert!(cut, "a slow head is cut");
        // Idle keep-alive connection.
        let mut c = connect(&s);
        assert!(closed_within(&mut c, Duration::from_secs(10)));
        // A client that never reads a large response: cut at the write timeout (the
        // connection is busy writing, so neither of the other timeouts applies).
        let mut c = connect(&s);
        c.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.connections() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(s.connections(), 0, "the non-reader was cut");
        assert!(get(&s, "/still").ends_with("GET /still"));
        s.stop();
    }

    #[test]
    fn stop_ends_every_connection_and_returns() {
        let s = server(Limits::default());
        let conns: Vec<TcpStream> = (0..10).map(|_| connect(&s)).collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.connections() < 10 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let start = Instant::now();
        s.stop();
        assert!(start.elapsed() < Duration::from_secs(5));
        for mut c in conns {
            assert!(closed_within(&mut c, Duration::from_secs(10)));
        }
    }
}
