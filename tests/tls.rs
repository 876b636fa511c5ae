//! TLS end to end: throwaway certificates made at test time (rcgen), the real binary, the
//! official Rust client (async-nats over rustls), and raw sockets for what a client should
//! not do (speak plain text to a TLS server, die in the middle of a handshake).

mod common;

use common::{Frame, ServerProcess};
use futures::StreamExt;
use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest any await in these tests may take.
const LIMIT: Duration = Duration::from_secs(10);

/// PEM files for one test: a CA, a server certificate for 127.0.0.1 signed by it, a client
/// certificate signed by it, and a client certificate signed by another CA.
struct Certs {
    dir: PathBuf,
}

/// A bare rustls client configuration that trusts the test CA (for clients that speak TLS
/// by hand: one that stops reading, a WebSocket client).
fn bare_client_config(certs: &Certs) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let ca_pem = std::fs::read(certs.path("ca.pem")).unwrap();
    use rustls::pki_types::pem::PemObject;
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca_pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

impl Certs {
    fn new(name: &str) -> Certs {
        let dir = std::env::temp_dir().join(format!("beaver-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (ca_pem, ca) = new_ca("beaver test CA");
        let (_, rogue) = new_ca("rogue CA");
        write(&dir, "ca.pem", &ca_pem);
        let (cert, key) = leaf(
            &ca,
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        write(&dir, "server-cert.pem", &cert);
        write(&dir, "server-key.pem", &key);
        let (cert, key) = leaf(&ca, &["client"], ExtendedKeyUsagePurpose::ClientAuth);
        write(&dir, "client-cert.pem", &cert);
        write(&dir, "client-key.pem", &key);
        let (cert, key) = leaf(&rogue, &["client"], ExtendedKeyUsagePurpose::ClientAuth);
        write(&dir, "rogue-cert.pem", &cert);
        write(&dir, "rogue-key.pem", &key);
        Certs { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name)
            .to_str()
            .expect("UTF-8 temp path")
            .to_owned()
    }

    /// `--tls --tlscert .. --tlskey ..`.
    fn server_args(&self) -> Vec<String> {
        vec![
            "--tls".into(),
            "--tlscert".into(),
            self.arg("server-cert.pem"),
            "--tlskey".into(),
            self.arg("server-key.pem"),
        ]
    }

    /// A client that trusts the test CA, optionally presenting `client` (a file prefix).
    fn client(&self, client: Option<&str>) -> async_nats::ConnectOptions {
        let mut o = async_nats::ConnectOptions::new()
            .require_tls(true)
            .add_root_certificates(self.path("ca.pem"));
        if let Some(c) = client {
            o = o.add_client_certificate(
                self.path(&format!("{c}-cert.pem")),
                self.path(&format!("{c}-key.pem")),
            );
        }
        o
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write PEM");
}

fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    let key = KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("self-signed CA");
    (cert.pem(), Issuer::new(params, key))
}

fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let mut params =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, names[0]);
    params.use_authority_key_identifier_extension = true;
    params.key_usages.push(KeyUsagePurpose::DigitalSignature);
    params.extended_key_usages.push(usage);
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, issuer).expect("signed");
    (cert.pem(), key.serialize_pem())
}

fn beaver(args: &[String]) -> ServerProcess {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ServerProcess::beaver(&args)
}

async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// The official client over TLS: messages small and large arrive intact and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_nats_over_tls() {
    let certs = Certs::new("roundtrip");
    let server = beaver(&certs.server_args());
    assert_eq!(server.raw().info["tls_required"], true);
    let client = within("connect", certs.client(None).connect(server.url()))
        .await
        .expect("async-nats connects over TLS");
    let mut sub = client.subscribe("data").await.unwrap();
    client.flush().await.unwrap();
    let big = vec![7u8; 600 * 1024];
    for i in 0..500u32 {
        client
            .publish("data", i.to_string().into_bytes().into())
            .await
            .unwrap();
    }
    client.publish("data", big.clone().into()).await.unwrap();
    client.flush().await.unwrap();
    for i in 0..500u32 {
        let m = within("a message", sub.next()).await.expect("message");
        assert_eq!(m.payload, i.to_string().into_bytes());
    }
    let m = within("the large message", sub.next())
        .await
        .expect("message");
    assert_eq!(m.payload.len(), big.len());
    assert!(m.payload.iter().all(|b| *b == 7));

    // Request/reply between two TLS clients.
    let responder = within("connect", certs.client(None).connect(server.url()))
        .await
        .expect("second client");
    let mut service = responder.subscribe("svc").await.unwrap();
    common::round_trip(&responder).await;
    let task = tokio::spawn(async move {
        if let Some(req) = service.next().await {
            if let Some(reply) = req.reply {
                responder.publish(reply, "pong".into()).await.unwrap();
                responder.flush().await.unwrap();
            }
        }
    });
    let answer = within("the reply", client.request("svc", "ping".into()))
        .await
        .expect("a reply");
    assert_eq!(&answer.payload[..], b"pong");
    task.await.unwrap();
}

/// With verification on, only clients with a certificate signed by the CA get in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_requires_a_client_certificate_from_the_ca() {
    let certs = Certs::new("verify");
    let mut args = certs.server_args();
    args.extend([
        "--tlsverify".into(),
        "--tlscacert".into(),
        certs.arg("ca.pem"),
    ]);
    let server = beaver(&args);
    let refused = within("connect", certs.client(None).connect(server.url())).await;
    assert!(refused.is_err(), "no client certificate: refused");
    let refused = within("connect", certs.client(Some("rogue")).connect(server.url())).await;
    assert!(refused.is_err(), "certificate from another CA: refused");
    let client = within(
        "connect",
        certs.client(Some("client")).connect(server.url()),
    )
    .await
    .expect("certificate from the CA: accepted");
    let mut sub = client.subscribe("x").await.unwrap();
    client.publish("x", "ok".into()).await.unwrap();
    let m = within("a message", sub.next()).await.expect("message");
    assert_eq!(&m.payload[..], b"ok");
    assert!(server.wait_for_log("TLS handshake error"));
}

/// With TLS and `verify`, INFO has nats-server's fields (`tls_required`, `tls_verify`), in
/// its order.
#[test]
fn info_fields_with_tls_verify_match_reference() {
    let certs = Certs::new("info");
    let mut args = certs.server_args();
    args.extend([
        "--tlsverify".into(),
        "--tlscacert".into(),
        certs.arg("ca.pem"),
    ]);
    let ours = beaver(&args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(reference) = ServerProcess::nats_server(&args) else {
        return;
    };
    let (got, want) = (ours.raw(), reference.raw());
    common::assert_info_fields_match(&got.info_json, &want.info_json, "tls verify");
    let (got, want) = (got.info, want.info);
    assert_eq!(
        (&got["tls_required"], &got["tls_verify"]),
        (&want["tls_required"], &want["tls_verify"])
    );
}

/// A client that speaks plain text after INFO is disconnected without a word, as
/// nats-server does (its TLS stack sees a first record that is not a handshake).
#[test]
fn plain_text_client_on_a_tls_server() {
    let certs = Certs::new("plain");
    let mut servers = vec![beaver(&certs.server_args())];
    let nats_args: Vec<String> = certs.server_args();
    let nats_args: Vec<&str> = nats_args.iter().map(String::as_str).collect();
    servers.extend(ServerProcess::nats_server(&nats_args));
    for server in &servers {
        let mut raw = server.raw();
        assert_eq!(raw.info["tls_required"], true, "{}", server.name);
        raw.stream
            .write_all(b"CONNECT {\"verbose\":false}\r\nPING\r\n")
            .unwrap();
        let frames = raw.until_closed();
        assert_eq!(frames, Vec::<Frame>::new(), "{}", server.name);
    }
    assert!(servers[0]
        .wait_for_log("TLS handshake error: tls: first record does not look like a TLS handshake"));
}

/// Clients that die in the middle of the handshake, or never start it, cost the server
/// nothing lasting: they are dropped (after the TLS `timeout` at worst) and real clients
/// keep connecting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_killed_mid_handshake() {
    let certs = Certs::new("killed");
    let config = certs.path("beaver.toml");
    std::fs::write(
        &config,
        format!(
            "[tls]\ncert_file = {:?}\nkey_file = {:?}\ntimeout = 0.5\n",
            certs.arg("server-cert.pem"),
            certs.arg("server-key.pem")
        ),
    )
    .unwrap();
    let server = ServerProcess::beaver(&["-c", config.to_str().unwrap()]);
    // A real ClientHello's first bytes, then nothing: the server must not wait forever.
    let partial_hello: &[u8] = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    let mut killed = Vec::new();
    for i in 0..40 {
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        let mut info = [0u8; 4096];
        let _ = s.read(&mut info).unwrap();
        if i % 2 == 0 {
            s.write_all(partial_hello).unwrap();
        }
        killed.push(s);
    }
    // Half of them die now, mid-handshake.
    killed.truncate(20);
    // The other half are left hanging: the server closes them after the timeout.
    for mut s in killed {
        s.set_read_timeout(Some(LIMIT)).unwrap();
        let mut buf = [0u8; 64];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                // Only a timeout means the server kept the connection; any other error
                // (a reset, or an abort on a loaded machine) is the connection ending.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    panic!("the server did not close a stalled handshake: {e}")
                }
                Err(_) => break,
            }
        }
    }
    let client = within("connect", certs.client(None).connect(server.url()))
        .await
        .expect("a real client still connects");
    let mut sub = client.subscribe("after").await.unwrap();
    client.publish("after", "fine".into()).await.unwrap();
    let m = within("a message", sub.next()).await.expect("message");
    assert_eq!(&m.payload[..], b"fine");
    assert!(server.wait_for_log("TLS handshake timeout"));
}

/// A TLS subscriber that stops reading is closed as a slow consumer (through the writers'
/// TLS path), while a TLS subscriber that reads gets every message in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_slow_consumer() {
    let certs = Certs::new("slow");
    let config = certs.path("slow.toml");
    std::fs::write(
        &config,
        format!(
            "max_pending = \"2MB\"\nmax_payload = \"64KB\"\n[tls]\ncert_file = {:?}\nkey_file = {:?}\n",
            certs.arg("server-cert.pem"),
            certs.arg("server-key.pem")
        ),
    )
    .unwrap();
    let server = ServerProcess::beaver(&["-c", config.to_str().unwrap()]);

    // The subscriber that stops reading once subscribed: a bare rustls client.
    let client_config = bare_client_config(&certs);
    let mut tcp = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    tcp.set_read_timeout(Some(LIMIT)).unwrap();
    let mut info = [0u8; 4096];
    let _ = tcp.read(&mut info).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(client_config), name).unwrap();
    let mut stuck = rustls::StreamOwned::new(conn, tcp);
    stuck
        .write_all(b"CONNECT {\"verbose\":false}\r\nSUB flood 1\r\nPING\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(6).any(|w| w == b"PONG\r\n") {
        let n = stuck.read(&mut buf).expect("PONG over TLS");
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }

    let reader = within("connect", certs.client(None).connect(server.url()))
        .await
        .unwrap();
    let mut sub = reader.subscribe("flood").await.unwrap();
    common::round_trip(&reader).await;
    let publisher = within("connect", certs.client(None).connect(server.url()))
        .await
        .unwrap();
    // The publisher stays at most WINDOW messages (~270 KB, below max_pending) ahead of the
    // reading subscriber: the test is about the stuck one, not about whether a client that
    // reads keeps up with an unbounded publisher (on a slow machine, under Wine, it may not,
    // and would then rightly be a slow consumer too).
    const N: usize = 20_000;
    const WINDOW: usize = 500;
    for start in (0..N).step_by(WINDOW) {
        for i in start..start + WINDOW {
            let mut payload = format!("{i:08}").into_bytes();
            payload.resize(512, b'.');
            publisher.publish("flood", payload.into()).await.unwrap();
        }
        within("flush", publisher.flush()).await.unwrap();
        for i in start..start + WINDOW {
            let m = within("a message", sub.next()).await.expect("message");
            assert_eq!(
                &m.payload[..8],
                format!("{i:08}").as_bytes(),
                "message {i} in order"
            );
        }
    }
    assert!(server.wait_for_log("Slow Consumer Detected"));
    // The stuck subscriber's connection ends once it reads what the kernel held.
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stuck.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!("the slow consumer was never closed")
            }
            Err(_) => break, // reset, or closed without close_notify
        }
    }
}

/// A certificate file that cannot be read fails `-t` (as nats-server's `-t` does) and
/// start-up, with the configuration file and the key named.
#[test]
fn missing_certificate_fails_the_configuration_check() {
    let dir = std::env::temp_dir().join(format!("beaver-tls-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("missing.conf");
    let cert = dir.join("nope.pem");
    std::fs::write(
        &conf,
        format!(
            "tls {{\n  cert_file: {:?}\n  key_file: {:?}\n}}\n",
            cert.display().to_string(),
            dir.join("nope-key.pem").display().to_string()
        ),
    )
    .unwrap();
    for extra in [&["-t"][..], &["-p", "-1"][..]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_beaver"))
            .arg("-c")
            .arg(&conf)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "beaver: {}: tls: cert_file {}: ",
                conf.display(),
                cert.display()
            )),
            "{extra:?}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key that is not the certificate's is refused in words, naming both files.
#[test]
fn key_file_not_matching_cert_file() {
    let certs = Certs::new("mismatch");
    for check in [true, false] {
        let mut args = vec![
            "--tls".to_owned(),
            "--tlscert".into(),
            certs.arg("server-cert.pem"),
            "--tlskey".into(),
            certs.arg("client-key.pem"),
            "-p".into(),
            "-1".into(),
        ];
        if check {
            args.push("-t".into());
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_beaver"))
            .args(&args)
            .output()
            .expect("run beaver");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "tls: key_file {} is not the private key of the certificate in cert_file {}",
                certs.arg("client-key.pem"),
                certs.arg("server-cert.pem")
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("KeyMismatch"), "{stderr}");
    }
}

/// `wss://`: the WebSocket listener's own `tls` block (the client port stays plain); the
/// TLS handshake, then the upgrade and NATS in frames, all encrypted.
#[test]
fn websocket_over_tls() {
    let certs = Certs::new("wss");
    let config = certs.path("wss.conf");
    std::fs::write(
        &config,
        format!(
            "websocket {{\n  listen: \"127.0.0.1:-1\"\n  tls {{ cert_file: {:?}, key_file: {:?} }}\n}}\n",
            certs.arg("server-cert.pem"),
            certs.arg("server-key.pem")
        ),
    )
    .unwrap();
    let server = ServerProcess::beaver(&["-c", config.to_str().unwrap()]);
    assert!(server.wait_for_log("Listening for websocket clients on wss://127.0.0.1:"));
    let port = server.websocket_port().unwrap();

    let client_config = bare_client_config(&certs);
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(LIMIT)).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(client_config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let want_head: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    // The answer, then INFO in a binary frame (its payload ends with CR LF).
    while got.len() < want_head.len() + 2 || !got.ends_with(b"\r\n") {
        let n = tls.read(&mut buf).expect("the upgrade's answer over TLS");
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.starts_with(want_head),
        "{}",
        String::from_utf8_lossy(&got)
    );
    let info = &got[want_head.len()..];
    assert_eq!(info[0], 0x82, "INFO in a final binary frame");
    assert!(String::from_utf8_lossy(info).contains("INFO {"));
    // CONNECT and PING in one masked frame; PONG comes back in a frame.
    let payload = b"CONNECT {\"verbose\":false}\r\nPING\r\n";
    let mask = [1u8, 2, 3, 4];
    let mut frame = vec![0x82, 0x80 | payload.len() as u8];
    frame.extend(mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    tls.write_all(&frame).unwrap();
    let mut got = Vec::new();
    while !got.ends_with(b"PONG\r\n") {
        let n = tls.read(&mut buf).expect("PONG over wss");
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"\x82\x06PONG\r\n");
}

/// A reload (SIGHUP) with the certificate files replaced in place, as certificate rotation
/// does it: new handshakes present the new certificate, the connection made before keeps
/// working, and the log says `Reloaded: tls = enabled`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_rotates_the_certificate() {
    let certs = Certs::new("rotate");
    let conf = certs.path("server.conf");
    write(
        &certs.dir,
        "server.conf",
        &format!(
            "tls {{\n  cert_file: \"{}\"\n  key_file: \"{}\"\n}}\n",
            certs.arg("server-cert.pem"),
            certs.arg("server-key.pem")
        ),
    );
    let server = beaver(&["-c".into(), conf.to_str().unwrap().to_owned()]);
    let before = within("connect", certs.client(None).connect(server.url()))
        .await
        .expect("connects with the first certificate");
    // A new CA and a certificate from it, written over the old files.
    let (new_ca_pem, new_ca) = new_ca("rotated CA");
    let (cert, key) = leaf(
        &new_ca,
        &["127.0.0.1", "localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    write(&certs.dir, "server-cert.pem", &cert);
    write(&certs.dir, "server-key.pem", &key);
    write(&certs.dir, "new-ca.pem", &new_ca_pem);
    let ok = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    assert!(
        server.wait_for_log("Reloaded: tls = enabled"),
        "{:#?}",
        server.log_lines()
    );
    // A client that trusts only the old CA no longer gets in; one that trusts the new does.
    let refused = within(
        "a refused handshake",
        certs.client(None).connect(server.url()),
    )
    .await
    .is_err();
    assert!(refused, "the old certificate is still served");
    let after = within(
        "connect",
        async_nats::ConnectOptions::new()
            .require_tls(true)
            .add_root_certificates(certs.path("new-ca.pem"))
            .connect(server.url()),
    )
    .await
    .expect("connects with the new certificate");
    // The connection made before the reload still works, and both see each other.
    let mut sub = before.subscribe("rotated").await.unwrap();
    common::round_trip(&before).await;
    after.publish("rotated", "hi".into()).await.unwrap();
    after.flush().await.unwrap();
    let m = within("the message", sub.next()).await.expect("message");
    assert_eq!(&m.payload[..], b"hi");
}
