//! Serving one connection, whatever carries it (a socket, or an in-memory script for tests
//! and fuzzing): read a head within its deadline, call the handler, write the response,
//! discard or refuse a body, keep the connection alive or close it.

use super::*;

// ---------------------------------------------------------------------------------------
// Serving one connection
// ---------------------------------------------------------------------------------------

/// What a connection loop needs from its socket. Implemented by the TCP connection of an
/// [`HttpServer`], and by an in-memory script for tests and fuzzing ([`serve_script`]).
pub(super) trait Transport {
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
pub(super) fn serve(io: &mut impl Transport, handler: &dyn Handler, config: &Config) {
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

pub use crate::httpdate::http_date;

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
