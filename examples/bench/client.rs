//! A minimal blocking NATS client speaking the raw text protocol: just what the load generator
//! needs, tuned so that the client is never the bottleneck.
//!
//! - [`Conn::connect`] reads the server's `INFO`, sends `CONNECT` and confirms it with
//!   `PING`/`PONG`.
//! - [`Reader`] owns a large read buffer. [`Reader::next_frame`] returns whole frames (a `MSG`
//!   frame with its payload contiguous in the buffer); [`Reader::count_msgs`] is the
//!   subscriber's hot loop, which finds each `MSG` line with `memchr`, reads the payload size
//!   from the end of the line and skips the payload by size without copying it.
//! - [`Writer`] owns the socket's write half and a reusable output buffer.
//! - [`publish`] writes pre-formatted `PUB` frames in large chunks from one reused buffer.
//!
//! Server `PING`s are answered with `PONG` everywhere. Every blocking read and write has a
//! timeout, so no call blocks forever. Nothing allocates per message.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use memchr::memchr;

/// Size of a subscriber's or requester's read buffer (it grows if one frame needs more).
pub const READ_BUF: usize = 256 * 1024;
/// Target size of one publisher write: as many whole `PUB` frames as fit.
pub const PUB_CHUNK: usize = 64 * 1024;
/// A control line (`INFO`, `-ERR`, a `MSG` line) longer than this is a protocol error.
const MAX_CONTROL_LINE: usize = 1024 * 1024;
/// How often a publisher looks for server `PING`s and `-ERR`s while it writes.
const PUB_POLL_EVERY: Duration = Duration::from_millis(500);

/// The `CONNECT` options this client sends (no verbose `+OK`s, no headers, echo on).
const CONNECT_OPTIONS: &str =
    r#"{"verbose":false,"pedantic":false,"headers":false,"echo":true,"protocol":1,"name":"bench"}"#;

/// Where to connect: the first entry of nats-bench's `-s` list.
#[derive(Debug, Clone)]
pub struct Server {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub pass: Option<String>,
}

impl Server {
    /// Parses `nats://host:port`, `host:port`, `host`, `nats://user:pass@host:port`, or a
    /// comma-separated list of those (the first one is used, as nats-bench uses the first
    /// reachable one).
    pub fn parse(spec: &str) -> Result<Server, String> {
        let first = spec.split(',').map(str::trim).find(|s| !s.is_empty());
        let Some(first) = first else {
            return Err(format!("invalid server URL {spec:?}: it is empty"));
        };
        let rest = match first.find("://") {
            Some(i) => {
                let scheme = &first[..i];
                if !scheme.eq_ignore_ascii_case("nats") {
                    return Err(format!(
                        "invalid server URL {first:?}: only nats:// is supported (no TLS, no websocket)"
                    ));
                }
                &first[i + 3..]
            }
            None => first,
        };
        let rest = rest.trim_end_matches('/');
        let (user, pass, hostport) = match rest.rsplit_once('@') {
            Some((cred, hp)) => {
                let (u, p) = match cred.split_once(':') {
                    Some((u, p)) => (u.to_string(), Some(p.to_string())),
                    None => (cred.to_string(), None),
                };
                (Some(u), p, hp)
            }
            None => (None, None, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            // [::1]:4222 or [::1]
            let Some((h, after)) = v6.split_once(']') else {
                return Err(format!("invalid server URL {first:?}: unclosed '['"));
            };
            match after.strip_prefix(':') {
                Some(p) => (h.to_string(), Some(p)),
                None if after.is_empty() => (h.to_string(), None),
                None => return Err(format!("invalid server URL {first:?}")),
            }
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        let host = if host.is_empty() {
            "127.0.0.1".to_string()
        } else {
            host
        };
        let port = match port {
            None => 4222,
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| format!("invalid server URL {first:?}: bad port {p:?}"))?,
        };
        Ok(Server {
            host,
            port,
            user,
            pass,
        })
    }

    /// `nats://host:port`, without credentials (for reports).
    pub fn url(&self) -> String {
        if self.host.contains(':') {
            format!("nats://[{}]:{}", self.host, self.port)
        } else {
            format!("nats://{}:{}", self.host, self.port)
        }
    }

    fn addrs(&self) -> Result<Vec<SocketAddr>, String> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.url()))?
            .collect();
        if addrs.is_empty() {
            return Err(format!("cannot resolve {}: no address", self.url()));
        }
        Ok(addrs)
    }

    fn connect_json(&self) -> String {
        if self.user.is_none() {
            return CONNECT_OPTIONS.to_string();
        }
        let mut json = CONNECT_OPTIONS.trim_end_matches('}').to_string();
        if let Some(user) = &self.user {
            json.push_str(",\"user\":");
            json.push_str(&serde_json::Value::from(user.as_str()).to_string());
        }
        if let Some(pass) = &self.pass {
            json.push_str(",\"pass\":");
            json.push_str(&serde_json::Value::from(pass.as_str()).to_string());
        }
        json.push('}');
        json
    }
}

/// Says what an I/O error means for a benchmark client, in words.
pub fn describe(err: &io::Error, timeout: Duration) -> String {
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("no progress for {} s (timed out)", timeout.as_secs_f64())
        }
        io::ErrorKind::UnexpectedEof => "the server closed the connection".to_string(),
        io::ErrorKind::ConnectionReset => "the server reset the connection".to_string(),
        io::ErrorKind::BrokenPipe => "the server closed the connection (broken pipe)".to_string(),
        _ => err.to_string(),
    }
}

fn eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the server closed the connection",
    )
}

fn protocol_error(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn server_error(msg: &[u8]) -> io::Error {
    io::Error::other(format!(
        "server error: -ERR {}",
        String::from_utf8_lossy(msg).trim()
    ))
}

/// One frame from the server, borrowing the reader's buffer. `PING`s never show up here: the
/// reader answers them itself.
#[derive(Debug)]
pub enum Frame<'a> {
    /// A `MSG`, or an `HMSG` (on connections made with headers on): `headers` is the
    /// header block (`NATS/1.0 ...\r\n...\r\n\r\n`), empty for a `MSG`.
    Msg {
        subject: &'a [u8],
        reply: Option<&'a [u8]>,
        headers: &'a [u8],
        payload: &'a [u8],
    },
    Pong,
    Ok,
    Err(&'a [u8]),
    Info(&'a [u8]),
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Msg,
    Ping,
    Pong,
    Ok,
    Err,
    Info,
}

/// A parsed frame as byte ranges of the buffer, so the parser can be called in a loop
/// without holding a borrow.
#[derive(Debug, Clone, Copy)]
struct Raw {
    kind: Kind,
    /// MSG subject, or the argument of -ERR / INFO.
    a: (usize, usize),
    reply: Option<(usize, usize)>,
    /// HMSG's header block (empty for everything else).
    headers: (usize, usize),
    payload: (usize, usize),
}

/// The read half of a connection.
pub struct Reader {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// The write half of a connection, with a reusable output buffer.
pub struct Writer {
    stream: TcpStream,
    pub out: Vec<u8>,
}

impl Writer {
    /// Writes and clears the output buffer.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    fn pong(&mut self) -> io::Result<()> {
        self.out.extend_from_slice(b"PONG\r\n");
        self.flush()
    }
}

/// Progress of a counting subscriber: how many messages so far, and when the first and the
/// target-th message were complete.
#[derive(Debug, Default, Clone, Copy)]
pub struct SubProgress {
    pub received: u64,
    pub first: Option<Instant>,
    pub last: Option<Instant>,
}

/// Positions of the space-separated tokens of a line (at most `N`; more is an error).
fn tokens<const N: usize>(line: &[u8], base: usize) -> Option<([(usize, usize); N], usize)> {
    let mut out = [(0usize, 0usize); N];
    let mut n = 0;
    let mut i = 0;
    while i < line.len() {
        while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i == line.len() {
            break;
        }
        let s = i;
        while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        if n == N {
            return None;
        }
        out[n] = (base + s, base + i);
        n += 1;
    }
    Some((out, n))
}

fn parse_usize(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v = 0usize;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (d - b'0') as usize;
    }
    Some(v)
}

/// The payload size at the end of a `MSG` line (the line without its `\n`, maybe with `\r`).
#[inline]
fn msg_size(line: &[u8]) -> io::Result<usize> {
    let mut end = line.len();
    if end > 0 && line[end - 1] == b'\r' {
        end -= 1;
    }
    let mut i = end;
    let mut v = 0usize;
    let mut mul = 1usize;
    while i > 4 && line[i - 1].is_ascii_digit() && end - i < 18 {
        v += (line[i - 1] - b'0') as usize * mul;
        mul *= 10;
        i -= 1;
    }
    if i == end || !(line[i - 1] == b' ' || line[i - 1] == b'\t') {
        return Err(protocol_error(format!(
            "bad MSG line from the server: {:?}",
            String::from_utf8_lossy(line)
        )));
    }
    Ok(v)
}

fn starts_with_ignore_case(line: &[u8], op: &[u8]) -> bool {
    line.len() >= op.len() && line[..op.len()].eq_ignore_ascii_case(op)
}

impl Reader {
    fn new(stream: TcpStream, cap: usize) -> Reader {
        Reader {
            stream,
            buf: vec![0; cap],
            start: 0,
            end: 0,
        }
    }

    /// Reads more bytes (blocking, with the socket's timeout), making room first.
    fn fill(&mut self) -> io::Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && (self.end == self.buf.len() || self.buf.len() - self.end < 4096)
        {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let len = self.buf.len().max(4096) * 2;
            self.buf.resize(len, 0);
        }
        loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(eof()),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Makes sure a frame of `total` bytes starting at `start` can fit in the buffer.
    fn reserve_frame(&mut self, total: usize) {
        if self.buf.len() - self.start < total {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < total {
                self.buf.resize(total.next_power_of_two(), 0);
            }
        }
    }

    /// Parses one whole frame from the buffered bytes, if there is one, and consumes it.
    fn parse_buffered(&mut self) -> io::Result<Option<Raw>> {
        let avail = &self.buf[self.start..self.end];
        let Some(nl) = memchr(b'\n', avail) else {
            if avail.len() > MAX_CONTROL_LINE {
                return Err(protocol_error(
                    "protocol line from the server is too long".to_string(),
                ));
            }
            return Ok(None);
        };
        let base = self.start;
        let mut line = &avail[..nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        let none = (0, 0);
        let raw = if starts_with_ignore_case(line, b"MSG ") {
            let Some((t, n)) = tokens::<5>(line, base) else {
                return Err(bad_line(line));
            };
            let (subject, reply, size_tok) = match n {
                4 => (t[1], None, t[3]),
                5 => (t[1], Some(t[3]), t[4]),
                _ => return Err(bad_line(line)),
            };
            let Some(size) = parse_usize(&self.buf[size_tok.0..size_tok.1]) else {
                return Err(bad_line(&self.buf[base..base + nl]));
            };
            let total = nl + 1 + size + 2;
            if self.end - self.start < total {
                self.reserve_frame(total);
                return Ok(None);
            }
            let p0 = base + nl + 1;
            if &self.buf[p0 + size..p0 + size + 2] != b"\r\n" {
                return Err(protocol_error(
                    "MSG payload from the server is not followed by CRLF".to_string(),
                ));
            }
            self.start += total;
            return Ok(Some(Raw {
                kind: Kind::Msg,
                a: subject,
                reply,
                headers: none,
                payload: (p0, p0 + size),
            }));
        } else if starts_with_ignore_case(line, b"HMSG ") {
            // HMSG <subject> <sid> [reply] <header bytes> <total bytes>
            let Some((t, n)) = tokens::<6>(line, base) else {
                return Err(bad_line(line));
            };
            let (subject, reply, hdr_tok, size_tok) = match n {
                5 => (t[1], None, t[3], t[4]),
                6 => (t[1], Some(t[3]), t[4], t[5]),
                _ => return Err(bad_line(line)),
            };
            let (Some(hdr), Some(size)) = (
                parse_usize(&self.buf[hdr_tok.0..hdr_tok.1]),
                parse_usize(&self.buf[size_tok.0..size_tok.1]),
            ) else {
                return Err(bad_line(&self.buf[base..base + nl]));
            };
            if hdr > size {
                return Err(bad_line(&self.buf[base..base + nl]));
            }
            let total = nl + 1 + size + 2;
            if self.end - self.start < total {
                self.reserve_frame(total);
                return Ok(None);
            }
            let p0 = base + nl + 1;
            if &self.buf[p0 + size..p0 + size + 2] != b"\r\n" {
                return Err(protocol_error(
                    "HMSG payload from the server is not followed by CRLF".to_string(),
                ));
            }
            self.start += total;
            return Ok(Some(Raw {
                kind: Kind::Msg,
                a: subject,
                reply,
                headers: (p0, p0 + hdr),
                payload: (p0 + hdr, p0 + size),
            }));
        } else if starts_with_ignore_case(line, b"PING") {
            Raw {
                kind: Kind::Ping,
                a: none,
                reply: None,
                headers: none,
                payload: none,
            }
        } else if starts_with_ignore_case(line, b"PONG") {
            Raw {
                kind: Kind::Pong,
                a: none,
                reply: None,
                headers: none,
                payload: none,
            }
        } else if starts_with_ignore_case(line, b"+OK") {
            Raw {
                kind: Kind::Ok,
                a: none,
                reply: None,
                headers: none,
                payload: none,
            }
        } else if starts_with_ignore_case(line, b"-ERR") {
            Raw {
                kind: Kind::Err,
                a: (base + 4, base + line.len()),
                reply: None,
                headers: none,
                payload: none,
            }
        } else if starts_with_ignore_case(line, b"INFO") {
            Raw {
                kind: Kind::Info,
                a: (base + 4, base + line.len()),
                reply: None,
                headers: none,
                payload: none,
            }
        } else {
            return Err(bad_line(line));
        };
        self.start += nl + 1;
        Ok(Some(raw))
    }

    fn frame(&self, raw: Raw) -> Frame<'_> {
        let slice = |r: (usize, usize)| &self.buf[r.0..r.1];
        match raw.kind {
            Kind::Msg => Frame::Msg {
                subject: slice(raw.a),
                reply: raw.reply.map(slice),
                headers: slice(raw.headers),
                payload: slice(raw.payload),
            },
            Kind::Pong => Frame::Pong,
            Kind::Ok => Frame::Ok,
            Kind::Err => Frame::Err(slice(raw.a)),
            Kind::Info => Frame::Info(slice(raw.a)),
            Kind::Ping => unreachable!("PING is answered by the reader"),
        }
    }

    /// The next frame from the server (blocking, with the socket's timeout). Flushes `w`
    /// before blocking, and answers `PING`s through it.
    pub fn next_frame(&mut self, w: &mut Writer) -> io::Result<Frame<'_>> {
        loop {
            if let Some(raw) = self.parse_buffered()? {
                if let Kind::Ping = raw.kind {
                    w.pong()?;
                    continue;
                }
                return Ok(self.frame(raw));
            }
            w.flush()?;
            self.fill()?;
        }
    }

    /// Waits for the next `PONG`, skipping `INFO` and `+OK`; a `-ERR` is an error.
    pub fn wait_pong(&mut self, w: &mut Writer) -> io::Result<()> {
        loop {
            match self.next_frame(w)? {
                Frame::Pong => return Ok(()),
                Frame::Err(msg) => return Err(server_error(msg)),
                Frame::Ok | Frame::Info(_) | Frame::Msg { .. } => {}
            }
        }
    }

    /// The subscriber's hot loop: counts `MSG` frames until `target`, skipping payloads by
    /// size. Records the instants at which the first and the `target`-th message were
    /// complete in `prog`, which also tells how far it got if it fails.
    pub fn count_msgs(
        &mut self,
        w: &mut Writer,
        target: u64,
        prog: &mut SubProgress,
    ) -> io::Result<()> {
        if prog.received >= target {
            return Ok(());
        }
        // Bytes of the current message's payload (and its CRLF) still to skip.
        let mut skip = 0usize;
        loop {
            let end = self.end;
            let mut p = self.start;
            let mut control = false;
            {
                let buf = &self.buf[..end];
                while p < end {
                    if skip != 0 {
                        let n = skip.min(end - p);
                        p += n;
                        skip -= n;
                        if skip != 0 {
                            break;
                        }
                        prog.received += 1;
                        if prog.received == 1 {
                            prog.first = Some(Instant::now());
                        }
                        if prog.received == target {
                            prog.last = Some(Instant::now());
                            self.start = p;
                            return Ok(());
                        }
                        continue;
                    }
                    let Some(i) = memchr(b'\n', &buf[p..]) else {
                        break;
                    };
                    let line = &buf[p..p + i];
                    if line.len() > 4 && line[..4] == *b"MSG " {
                        skip = msg_size(line)? + 2;
                        p += i + 1;
                    } else {
                        control = true;
                        break;
                    }
                }
            }
            self.start = p;
            if control {
                if let Some(raw) = self.parse_buffered()? {
                    match raw.kind {
                        Kind::Ping => w.pong()?,
                        Kind::Err => return Err(server_error(&self.buf[raw.a.0..raw.a.1])),
                        // Another MSG spelling (lower case) would be miscounted: refuse it.
                        Kind::Msg => {
                            return Err(protocol_error(
                                "unexpected lower-case MSG from the server".to_string(),
                            ))
                        }
                        Kind::Pong | Kind::Ok | Kind::Info => {}
                    }
                    continue;
                }
            }
            self.fill()?;
        }
    }

    /// Handles whatever the server has sent so far without blocking: answers `PING`s, turns a
    /// `-ERR` into an error. For publishers, between two writes.
    fn poll(&mut self, w: &mut Writer) -> io::Result<()> {
        self.stream.set_nonblocking(true)?;
        let read = loop {
            match self.fill() {
                Ok(()) => {
                    if self.end < self.buf.len() {
                        continue;
                    }
                    break Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.stream.set_nonblocking(false)?;
        let read_err = read.err();
        while let Some(raw) = self.parse_buffered()? {
            match raw.kind {
                Kind::Ping => w.pong()?,
                Kind::Err => return Err(server_error(&self.buf[raw.a.0..raw.a.1])),
                _ => {}
            }
        }
        match read_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// After a failed write: looks (for at most a second) for the `-ERR` that explains it.
    fn explain(&mut self, w: &mut Writer, err: io::Error) -> io::Error {
        let _ = self
            .stream
            .set_read_timeout(Some(Duration::from_millis(1000)));
        loop {
            match self.next_frame(w) {
                Ok(Frame::Err(msg)) => return server_error(msg),
                Ok(_) => continue,
                Err(_) => return err,
            }
        }
    }
}

/// The server's `INFO`, as far as the benchmark cares.
#[derive(Debug, Clone, Default)]
pub struct Info {
    pub max_payload: Option<u64>,
}

/// One connection to the server.
pub struct Conn {
    pub r: Reader,
    pub w: Writer,
    pub info: Info,
    timeout: Duration,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn").field("info", &self.info).finish()
    }
}

impl Conn {
    /// Connects (TCP_NODELAY, read and write timeouts), reads `INFO`, sends `CONNECT` and
    /// confirms it with `PING`/`PONG`.
    pub fn connect(server: &Server, timeout: Duration, read_buf: usize) -> Result<Conn, String> {
        Conn::connect_opts(server, timeout, read_buf, false)
    }

    /// [`Conn::connect`], with `"headers":true` in `CONNECT` if `headers` (the server then
    /// sends `HMSG` frames: JetStream's status messages and direct gets need them).
    pub fn connect_opts(
        server: &Server,
        timeout: Duration,
        read_buf: usize,
        headers: bool,
    ) -> Result<Conn, String> {
        let url = server.url();
        let mut last_err = None;
        let mut stream = None;
        for addr in server.addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last_err = Some(e),
            }
        }
        let Some(stream) = stream else {
            let e = last_err.map(|e| e.to_string()).unwrap_or_default();
            return Err(format!("cannot connect to {url}: {e}"));
        };
        let setup = |s: &TcpStream| -> io::Result<()> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))
        };
        setup(&stream).map_err(|e| format!("cannot set up the socket to {url}: {e}"))?;
        let write_half = stream
            .try_clone()
            .map_err(|e| format!("cannot clone the socket to {url}: {e}"))?;
        let mut conn = Conn {
            r: Reader::new(stream, read_buf),
            w: Writer {
                stream: write_half,
                out: Vec::with_capacity(4096),
            },
            info: Info::default(),
            timeout,
        };
        conn.handshake(server, headers)
            .map_err(|e| format!("{url}: {}", describe(&e, timeout)))?;
        Ok(conn)
    }

    fn handshake(&mut self, server: &Server, headers: bool) -> io::Result<()> {
        let info = match self.r.next_frame(&mut self.w)? {
            Frame::Info(json) => json.to_vec(),
            Frame::Err(msg) => return Err(server_error(msg)),
            _ => {
                return Err(protocol_error(
                    "the server did not start with INFO: is it a NATS server?".to_string(),
                ))
            }
        };
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&info) {
            self.info.max_payload = v.get("max_payload").and_then(|m| m.as_u64());
        }
        let w = &mut self.w;
        w.out.extend_from_slice(b"CONNECT ");
        let mut json = server.connect_json();
        if headers {
            json = json.replacen(r#""headers":false"#, r#""headers":true"#, 1);
        }
        w.out.extend_from_slice(json.as_bytes());
        w.out.extend_from_slice(b"\r\nPING\r\n");
        w.flush()?;
        self.r.wait_pong(&mut self.w)
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `SUB subject [queue] sid`, confirmed by `PING`/`PONG`.
    pub fn subscribe(&mut self, subject: &str, queue: Option<&str>, sid: u32) -> io::Result<()> {
        let w = &mut self.w;
        w.out.extend_from_slice(b"SUB ");
        w.out.extend_from_slice(subject.as_bytes());
        if let Some(q) = queue {
            w.out.push(b' ');
            w.out.extend_from_slice(q.as_bytes());
        }
        w.out.push(b' ');
        w.out
            .extend_from_slice(itoa::Buffer::new().format(sid).as_bytes());
        w.out.extend_from_slice(b"\r\nPING\r\n");
        w.flush()?;
        self.r.wait_pong(&mut self.w)
    }

    /// `PING`, then waits for the `PONG`: the server has processed everything sent before.
    pub fn flush_pong(&mut self) -> io::Result<()> {
        self.w.out.extend_from_slice(b"PING\r\n");
        self.w.flush()?;
        self.r.wait_pong(&mut self.w)
    }

    /// Changes how long a blocking read may wait (a read that times out leaves the buffered
    /// bytes as they were: call again).
    pub fn set_read_timeout(&self, d: Duration) -> io::Result<()> {
        self.r.stream.set_read_timeout(Some(d))
    }

    /// A handle to shut the socket down from another thread (to abort a blocked reader).
    pub fn shutdown_handle(&self) -> io::Result<TcpStream> {
        self.r.stream.try_clone()
    }

    pub fn close(self) {
        let _ = self.r.stream.shutdown(Shutdown::Both);
    }
}

fn bad_line(line: &[u8]) -> io::Error {
    let mut shown = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if line.len() > 200 {
        shown.push_str("...");
    }
    protocol_error(format!(
        "unexpected protocol line from the server: {shown:?}"
    ))
}

/// Builds one `PUB subject size\r\n<payload>\r\n` frame with a zero payload (as nats-bench).
pub fn pub_frame(subject: &str, reply: Option<&[u8]>, payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"PUB ");
    out.extend_from_slice(subject.as_bytes());
    out.push(b' ');
    if let Some(reply) = reply {
        out.extend_from_slice(reply);
        out.push(b' ');
    }
    out.extend_from_slice(itoa::Buffer::new().format(payload.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

/// Publishes `count` messages of `size` zero bytes to `subject`: as many whole frames as fit
/// in [`PUB_CHUNK`] are formatted once, and that buffer is written over and over. Between
/// writes, every [`PUB_POLL_EVERY`], it answers server `PING`s and notices `-ERR`s. Does not
/// wait for the server: call [`Conn::flush_pong`] for that.
pub fn publish(conn: &mut Conn, subject: &str, size: usize, count: u64) -> io::Result<()> {
    let payload = vec![0u8; size];
    let mut frame = Vec::new();
    pub_frame(subject, None, &payload, &mut frame);
    let per_chunk = (PUB_CHUNK / frame.len()).max(1);
    let mut chunk = Vec::with_capacity(per_chunk * frame.len());
    for _ in 0..per_chunk {
        chunk.extend_from_slice(&frame);
    }
    let per_chunk = per_chunk as u64;
    let mut left = count;
    let mut next_poll = Instant::now() + PUB_POLL_EVERY;
    while left > 0 {
        let n = left.min(per_chunk);
        let bytes = &chunk[..n as usize * frame.len()];
        if let Err(e) = conn.w.stream.write_all(bytes) {
            return Err(conn.r.explain(&mut conn.w, e));
        }
        left -= n;
        if left > 0 {
            let now = Instant::now();
            if now >= next_poll {
                conn.r.poll(&mut conn.w)?;
                next_poll = now + PUB_POLL_EVERY;
            }
        }
    }
    Ok(())
}

/// Where [`scan_acks`] stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum AckStop {
    /// The rest is an incomplete frame (or nothing): read more.
    NeedMore,
    /// A line that is not `MSG ` starts here (`PING`, `-ERR`, ...): parse it as a frame.
    Control,
    /// The reply whose payload is at this range of the scanned slice is an error (or not a
    /// PubAck at all). The frame has been consumed.
    Error(usize, usize),
}

/// Whether a reply payload is a PubAck (`{"stream":"S", "seq":N}`, maybe with
/// `"duplicate"` or `"domain"`), not an error (`{"error":{...},"stream":"S","seq":0}`).
/// nats-server and beaver both start a PubAck with `{"stream"`, the fast path.
#[inline]
pub fn is_pub_ack(payload: &[u8]) -> bool {
    if payload.starts_with(br#"{"stream""#) {
        return memchr::memmem::find(payload, br#""error""#).is_none();
    }
    memchr::memmem::find(payload, br#""error""#).is_none()
        && memchr::memmem::find(payload, br#""seq""#).is_some()
}

/// The PubAck counter's hot loop, over the buffered bytes `buf`: counts every whole `MSG`
/// frame whose payload is a PubAck into `acks` (finding lines with `memchr`, reading the
/// size from the end of the line, never copying), and stops at an incomplete frame, at a
/// line that is not a `MSG`, or after an error reply. Returns the bytes consumed. Every
/// `MSG` counts: the connection it reads subscribes to its publisher's inbox only.
pub fn scan_acks(buf: &[u8], acks: &mut u64) -> io::Result<(usize, AckStop)> {
    let mut p = 0;
    loop {
        let Some(i) = memchr(b'\n', &buf[p..]) else {
            return Ok((p, AckStop::NeedMore));
        };
        let line = &buf[p..p + i];
        if !(line.len() > 4 && line[..4] == *b"MSG ") {
            return Ok((p, AckStop::Control));
        }
        let size = msg_size(line)?;
        let p0 = p + i + 1;
        let next = p0 + size + 2;
        if next > buf.len() {
            return Ok((p, AckStop::NeedMore));
        }
        if buf[p0 + size..next] != *b"\r\n" {
            return Err(protocol_error(
                "MSG payload from the server is not followed by CRLF".to_string(),
            ));
        }
        if !is_pub_ack(&buf[p0..p0 + size]) {
            return Ok((next, AckStop::Error(p0, p0 + size)));
        }
        *acks += 1;
        p = next;
    }
}

impl Reader {
    /// Blocks until at least one more PubAck has arrived (or one is already buffered), and
    /// counts every PubAck buffered by then into `acks`: one read system call brings as
    /// many as the socket holds. Answers `PING`s; an error reply or a `-ERR` is an error.
    pub fn read_acks(&mut self, w: &mut Writer, acks: &mut u64) -> io::Result<()> {
        let before = *acks;
        loop {
            let (used, stop) = scan_acks(&self.buf[self.start..self.end], acks)?;
            let at = self.start;
            self.start += used;
            match stop {
                AckStop::NeedMore => {
                    if *acks > before {
                        return Ok(());
                    }
                    w.flush()?;
                    self.fill()?;
                }
                AckStop::Error(a, b) => {
                    return Err(io::Error::other(format!(
                        "JetStream error reply: {}",
                        String::from_utf8_lossy(&self.buf[at + a..at + b])
                    )))
                }
                AckStop::Control => match self.parse_buffered()? {
                    Some(raw) => match raw.kind {
                        Kind::Ping => w.pong()?,
                        Kind::Err => return Err(server_error(&self.buf[raw.a.0..raw.a.1])),
                        Kind::Msg => {
                            return Err(protocol_error(
                                "unexpected lower-case MSG from the server".to_string(),
                            ))
                        }
                        Kind::Pong | Kind::Ok | Kind::Info => {}
                    },
                    None => self.fill()?,
                },
            }
        }
    }
}

/// How a JetStream publisher paces itself.
#[derive(Debug, Clone, Copy)]
pub struct JsPace {
    /// At most this many publishes without their PubAck (1: synchronous).
    pub max_pending: u64,
    /// Once `max_pending` are out, wait for all of them before publishing again (nats
    /// bench's `--pubbatch`), instead of publishing again as acks free the window.
    pub batch: bool,
}

/// Length of the token that makes each publish's reply subject unique.
pub const REPLY_TOKEN: usize = 8;

/// Writes `n` as [`REPLY_TOKEN`] lower-case hex digits into `out`.
#[inline]
fn put_token(out: &mut [u8], n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in out.iter_mut().enumerate() {
        *b = HEX[((n >> (4 * (REPLY_TOKEN - 1 - i))) & 0xf) as usize];
    }
}

/// Publishes `count` messages of `size` zero bytes to `subject`, each with its own reply
/// subject `<inbox_prefix><8 hex digits>` (as nats.go's `PublishAsync` makes one per
/// message under one wildcard inbox), and counts the PubAcks that come back on the
/// connection's inbox subscription, keeping at most `pace.max_pending` unacknowledged.
/// The frames are formatted once, in one chunk of [`PUB_CHUNK`] bytes; only the tokens
/// are rewritten per message. It writes when at least a quarter of the window (at most a
/// chunk) is free, so a large window does not cost a system call per message; with a
/// window of 1 (synchronous) every publish waits for its ack. Returns when all are acked.
pub fn publish_js(
    conn: &mut Conn,
    subject: &str,
    inbox_prefix: &str,
    size: usize,
    count: u64,
    pace: JsPace,
) -> io::Result<()> {
    let payload = vec![0u8; size];
    let mut reply = inbox_prefix.as_bytes().to_vec();
    reply.extend_from_slice(&[b'0'; REPLY_TOKEN]);
    let mut frame = Vec::new();
    pub_frame(subject, Some(&reply), &payload, &mut frame);
    let token_at = 4 + subject.len() + 1 + inbox_prefix.len();
    let window = pace.max_pending.max(1);
    let per_chunk = ((PUB_CHUNK / frame.len()).max(1) as u64).min(window);
    let mut chunk = Vec::with_capacity(per_chunk as usize * frame.len());
    for _ in 0..per_chunk {
        chunk.extend_from_slice(&frame);
    }
    // Without batches: write once this many publishes fit in the window.
    let min_room = (window / 4).clamp(1, per_chunk);
    let (mut sent, mut acked, mut batch_end) = (0u64, 0u64, 0u64);
    while acked < count {
        let room = if pace.batch {
            if sent == acked && sent < count {
                batch_end = (sent + window).min(count);
            }
            (batch_end - sent).min(per_chunk)
        } else {
            let free = (window - (sent - acked)).min(count - sent).min(per_chunk);
            if free >= min_room || (free > 0 && sent + free == count) {
                free
            } else {
                0
            }
        };
        if room > 0 {
            let bytes = &mut chunk[..room as usize * frame.len()];
            for (i, f) in bytes.chunks_exact_mut(frame.len()).enumerate() {
                put_token(&mut f[token_at..token_at + REPLY_TOKEN], sent + i as u64);
            }
            if let Err(e) = conn.w.stream.write_all(bytes) {
                return Err(conn.r.explain(&mut conn.w, e));
            }
            sent += room;
            continue;
        }
        conn.r.read_acks(&mut conn.w, &mut acked)?;
        if acked > sent {
            return Err(protocol_error(format!(
                "{acked} replies for {sent} publishes: is another client publishing to this \
                 connection's inbox?"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls() {
        let s = Server::parse("nats://127.0.0.1:4555").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("127.0.0.1", 4555));
        let s = Server::parse("localhost:4556, nats://other:1").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("localhost", 4556));
        let s = Server::parse("nats://u:p@h").unwrap();
        assert_eq!(
            (
                s.host.as_str(),
                s.port,
                s.user.as_deref(),
                s.pass.as_deref()
            ),
            ("h", 4222, Some("u"), Some("p"))
        );
        assert!(s.connect_json().ends_with(r#","user":"u","pass":"p"}"#));
        let s = Server::parse("[::1]:5000").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("::1", 5000));
        assert_eq!(s.url(), "nats://[::1]:5000");
        assert!(Server::parse("tls://h:1").is_err());
        assert!(Server::parse("h:x").is_err());
        assert!(Server::parse("").is_err());
    }

    #[test]
    fn msg_sizes() {
        assert_eq!(msg_size(b"MSG foo 1 16\r").unwrap(), 16);
        assert_eq!(msg_size(b"MSG foo 1 _INBOX.x 0").unwrap(), 0);
        assert_eq!(msg_size(b"MSG foo 1 65536\r").unwrap(), 65536);
        assert!(msg_size(b"MSG foo 1 x\r").is_err());
        assert!(msg_size(b"MSG foo1\r").is_err());
    }

    #[test]
    fn pub_acks_are_told_from_errors() {
        assert!(is_pub_ack(br#"{"stream":"benchstream", "seq":1}"#));
        assert!(is_pub_ack(br#"{"stream":"s","seq":2,"duplicate":true}"#));
        assert!(is_pub_ack(br#"{"stream":"s", "domain":"d", "seq":3}"#));
        assert!(is_pub_ack(br#"{"seq":3,"stream":"s"}"#));
        assert!(!is_pub_ack(
            br#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"s","seq":0}"#
        ));
        assert!(!is_pub_ack(
            br#"{"stream":"s","seq":0,"error":{"code":400}}"#
        ));
        assert!(!is_pub_ack(b""));
        assert!(!is_pub_ack(b"hello"));
    }

    #[test]
    fn pub_acks_are_counted_over_partial_reads() {
        let ack = |seq: u64| {
            let body = format!(r#"{{"stream":"benchstream", "seq":{seq}}}"#);
            format!("MSG _INBOX.abc.{seq:08x} 1 {}\r\n{body}\r\n", body.len())
        };
        let mut wire = String::new();
        for seq in 1..=5 {
            wire.push_str(&ack(seq));
        }
        wire.push_str("PING\r\n");
        wire.push_str(&ack(6));
        let wire = wire.as_bytes();
        // Every split of the bytes into two reads counts the same acks, consuming whole
        // frames only.
        let ping_at = wire.windows(4).position(|w| w == b"PING").unwrap();
        for cut in 0..=wire.len() {
            let mut acks = 0;
            let (used, stop) = scan_acks(&wire[..cut], &mut acks).unwrap();
            if cut < ping_at {
                assert_eq!(stop, AckStop::NeedMore, "cut {cut}");
            }
            assert!(used <= cut && (used == 0 || &wire[used - 2..used] == b"\r\n"));
            let (more, stop) = scan_acks(&wire[used..ping_at], &mut acks).unwrap();
            assert_eq!((used + more, stop, acks), (ping_at, AckStop::NeedMore, 5));
        }
        let mut acks = 0;
        let (used, stop) = scan_acks(wire, &mut acks).unwrap();
        assert_eq!((used, stop, acks), (ping_at, AckStop::Control, 5));
        let (used, stop) = scan_acks(&wire[ping_at + 6..], &mut acks).unwrap();
        assert_eq!(
            (used, stop, acks),
            (wire.len() - ping_at - 6, AckStop::NeedMore, 6)
        );

        // An error reply stops the scan after it, pointing at its payload.
        let err = r#"{"error":{"code":503,"description":"no space"},"stream":"s","seq":0}"#;
        let wire = format!(
            "{}MSG _INBOX.abc.2 1 {}\r\n{err}\r\n{}",
            ack(1),
            err.len(),
            ack(3)
        );
        let mut acks = 0;
        let (used, stop) = scan_acks(wire.as_bytes(), &mut acks).unwrap();
        let AckStop::Error(a, b) = stop else {
            panic!("{stop:?}")
        };
        assert_eq!((&wire[a..b], acks), (err, 1));
        assert_eq!(&wire[used..], ack(3));
        assert!(scan_acks(b"MSG x 1 4\r\nabcdXX", &mut acks).is_err());
        assert!(scan_acks(b"MSG x 1 y\r\n", &mut acks).is_err());
    }

    #[test]
    fn reply_tokens() {
        let mut t = [0u8; REPLY_TOKEN];
        put_token(&mut t, 0);
        assert_eq!(&t, b"00000000");
        put_token(&mut t, 0x1234abcd);
        assert_eq!(&t, b"1234abcd");
    }
}
