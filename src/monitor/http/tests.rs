use super::head::{has_token, trim};
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
    let h =
        ok("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(h.body, Body::Chunked);
    // HTTP/1.0 ignores Transfer-Encoding.
    let h = ok("POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n");
    assert_eq!(h.body, Body::Length(3));
    let h = ok("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 9\r\n\r\n");
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
    assert!(!ok("GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n").expectation_failed);
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
    // The first byte of the answer proves the connection holds its slot: without it
    // the wait below could see zero before the server had even accepted it.
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut first = [0u8; 1];
    assert_eq!(c.read(&mut first).unwrap(), 1, "the answer starts");
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
