//! A web page in headless Chromium connects to beaver over WebSocket with the official
//! JavaScript client for browsers (nats.ws) and exchanges messages, headers and requests with
//! a TCP client (async-nats): the page is `tests/browser/index.html`, served by a small HTTP
//! server of this test.
//!
//! Needs `chromium` (Debian's package) and `npm` (to fetch nats.ws once into
//! `target/official-clients/browser`). Without them the test is skipped, unless
//! `BEAVER_REQUIRE_BROWSER=1` (set by `.ci/run`).

mod common;

use common::ServerProcess;
use futures::StreamExt;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn unavailable(what: &str) {
    if std::env::var("BEAVER_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!("{what} is required (BEAVER_REQUIRE_BROWSER=1) but not available");
    }
    eprintln!("SKIPPED: {what} is not available");
}

/// The Chromium binary, if there is one.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
}

/// A directory with nats.ws's browser bundle (`nats.js`) and the test page.
fn page_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/official-clients/browser");
    std::fs::create_dir_all(&dir).ok()?;
    let bundle = dir.join("node_modules/nats.ws/esm/nats.js");
    if !bundle.exists() {
        std::fs::write(dir.join("package.json"), "{\"private\": true}\n").ok()?;
        let ok = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                "nats.ws@1",
            ])
            .current_dir(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok || !bundle.exists() {
            return None;
        }
    }
    std::fs::copy(&bundle, dir.join("nats.js")).ok()?;
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/index.html");
    std::fs::copy(page, dir.join("index.html")).ok()?;
    Some(dir)
}

/// Serves the files of `dir` over HTTP on a random loopback port (one thread per request;
/// enough for one page and its script). Returns the port.
fn serve(dir: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let dir = dir.clone();
            std::thread::spawn(move || answer(&dir, stream));
        }
    });
    port
}

fn answer(dir: &Path, mut stream: TcpStream) {
    let mut line = String::new();
    if BufReader::new(&stream).read_line(&mut line).is_err() {
        return;
    }
    // `GET /index.html?ws=... HTTP/1.1`: the file name, without the query.
    let path = line.split(' ').nth(1).unwrap_or("/");
    let name = path.split('?').next().unwrap_or("").trim_start_matches('/');
    let (status, body, kind) = match name {
        "index.html" | "nats.js" => (
            "200 OK",
            std::fs::read(dir.join(name)).unwrap_or_default(),
            if name.ends_with(".js") {
                "text/javascript"
            } else {
                "text/html"
            },
        ),
        _ => ("404 Not Found", Vec::new(), "text/plain"),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

/// Kills Chromium (and its helper processes, in its process group) when the test ends.
struct Browser(std::process::Child);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_talks_to_a_tcp_client_through_beaver() {
    let Some(chromium) = chromium() else {
        return unavailable("chromium (apt-get install chromium)");
    };
    let Some(dir) = page_dir() else {
        return unavailable("npm install nats.ws@1");
    };
    let conf = dir.join("ws.conf");
    std::fs::write(
        &conf,
        // Chromium offers permessage-deflate: compression on, both ways.
        "websocket { host: 127.0.0.1, port: -1, no_tls: true, compression: true }\n",
    )
    .unwrap();
    let server = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let ws = server
        .websocket_port()
        .expect("the websocket port is logged");
    let http = serve(dir.clone());

    // The TCP side: ready for the page's request and its "ready" before the page loads.
    let tcp = async_nats::connect(server.url()).await.unwrap();
    let mut ready = tcp.subscribe("browser.ready").await.unwrap();
    let mut out = tcp.subscribe("browser.out").await.unwrap();
    let mut svc = tcp.subscribe("tcp.svc").await.unwrap();
    tcp.flush().await.unwrap();
    let responder = tcp.clone();
    tokio::spawn(async move {
        while let Some(m) = svc.next().await {
            if let Some(reply) = m.reply {
                let text = format!("hello {}", String::from_utf8_lossy(&m.payload));
                let _ = responder.publish(reply, text.into()).await;
            }
        }
    });

    let profile = dir.join(format!("profile-{}", std::process::id()));
    let _browser = Browser(
        Command::new(chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-dev-shm-usage",
                &format!("--user-data-dir={}", profile.display()),
                &format!("http://127.0.0.1:{http}/index.html?ws=ws://127.0.0.1:{ws}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts"),
    );

    // The page asked us something (a browser request answered over TCP), then is ready.
    let m = tokio::time::timeout(LIMIT, ready.next())
        .await
        .expect("the page says it is ready")
        .unwrap();
    assert_eq!(&m.payload[..], b"ready; tcp said hello from the page");

    // TCP to browser and back, with a header.
    let mut h = async_nats::HeaderMap::new();
    h.insert("X-From", "tcp");
    tcp.publish_with_headers("browser.in", h, "ping".into())
        .await
        .unwrap();
    let m = tokio::time::timeout(LIMIT, out.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"echo ping");
    assert_eq!(
        m.headers
            .as_ref()
            .and_then(|h| h.get("X-From"))
            .map(|v| v.as_str()),
        Some("browser tcp")
    );

    // A request the browser answers, with a 64 KiB payload (frames of at most 4 KiB to a
    // browser).
    let big = "x".repeat(64 * 1024);
    let r = tokio::time::timeout(LIMIT, tcp.request("browser.svc", big.clone().into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.payload.len(), "answer to ".len() + big.len());
    assert!(r.payload.starts_with(b"answer to xxx"));

    let _ = std::fs::remove_dir_all(&profile);
}
