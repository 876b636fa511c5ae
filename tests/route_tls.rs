//! TLS on routes and route permissions (`cluster { tls { ... } permissions { ... } }`), on
//! beaver nodes and in mixed clusters with Debian's nats-server 2.9.10, each node started
//! from a nats-server configuration file (paths in single quotes: Windows paths keep their
//! backslashes). Certificates are made at test time (rcgen): one CA, and a node certificate
//! for 127.0.0.1 good for both server and client authentication, since a route is both.
//!
//! Synchronisation: no fixed sleeps. Interest is known to have crossed when a message
//! published on the other node reaches a fresh probe subscription (interest lines travel in
//! order on a route); a message known to be filtered out is checked after a later message
//! on the same connection arrived.

mod common;

use async_nats::Client;
use common::ServerProcess;
use futures::StreamExt;
use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

/// Which server a node runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Beaver,
    Nats,
}

/// A test's directory: the certificates and the nodes' configuration files.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir =
            std::env::temp_dir().join(format!("beaver-route-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (ca_pem, ca) = new_ca("beaver route CA");
        std::fs::write(dir.join("ca.pem"), ca_pem).unwrap();
        let (cert, key) = node_cert(&ca);
        std::fs::write(dir.join("node-cert.pem"), cert).unwrap();
        std::fs::write(dir.join("node-key.pem"), key).unwrap();
        // A node certificate from another CA: refused by the cluster's nodes.
        let (_, rogue) = new_ca("rogue CA");
        let (cert, key) = node_cert(&rogue);
        std::fs::write(dir.join("rogue-cert.pem"), cert).unwrap();
        std::fs::write(dir.join("rogue-key.pem"), key).unwrap();
        Dir(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0
            .join(name)
            .to_str()
            .expect("UTF-8 temp path")
            .to_owned()
    }

    /// A node's `tls` block: `cert` names the certificate pair (`node`, `rogue`).
    fn tls_block(&self, cert: &str) -> String {
        format!(
            "tls {{ cert_file: '{}', key_file: '{}', ca_file: '{}', timeout: 5 }}",
            self.path(&format!("{cert}-cert.pem")),
            self.path(&format!("{cert}-key.pem")),
            self.path("ca.pem")
        )
    }

    /// Writes `name.conf`: server `name`, cluster `t` on a random route port, dialing
    /// `routes`, with `extra` in the cluster block.
    fn conf(&self, name: &str, routes: &[u16], extra: &str) -> String {
        let routes = routes
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!(
            "server_name: {name}\ncluster {{\n  name: t\n  listen: 127.0.0.1:-1\n  \
             routes: [{routes}]\n  {extra}\n}}\n"
        );
        let path = self.path(&format!("{name}.conf"));
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

/// A route certificate: for 127.0.0.1 and localhost, server and client authentication.
fn node_cert(issuer: &Issuer<'static, KeyPair>) -> (String, String) {
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "node");
    params.use_authority_key_identifier_extension = true;
    params.key_usages.push(KeyUsagePurpose::DigitalSignature);
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, issuer).expect("signed");
    (cert.pem(), key.serialize_pem())
}

struct Node {
    server: ServerProcess,
    route_port: u16,
}

/// Starts a node from `conf`; `None` when nats-server is asked for and not installed.
fn start(kind: Kind, conf: &str) -> Option<Node> {
    let args = ["-c", conf];
    let server = match kind {
        Kind::Beaver => ServerProcess::beaver(&args),
        Kind::Nats => ServerProcess::nats_server(&args)?,
    };
    let route_port = server.port_in_log("Listening for route connections on ");
    Some(Node { server, route_port })
}

async fn connect(n: &Node) -> Client {
    async_nats::ConnectOptions::new()
        .subscription_capacity(100_000)
        .connect(n.server.url())
        .await
        .expect("connect")
}

/// Waits until a message on `prefix.<random>` published by `from` reaches a fresh
/// subscription of `to` (so every interest `to` created before has crossed).
async fn propagate(to: &Client, from: &Client, prefix: &str) {
    let subject = format!("{prefix}.{}", fastrand::u64(..));
    let mut sub = to.subscribe(subject.clone()).await.unwrap();
    to.flush().await.unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "interest on {prefix} never crossed"
        );
        from.publish(subject.clone(), "p".into()).await.unwrap();
        from.flush().await.unwrap();
        if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(50), sub.next()).await {
            break;
        }
    }
    sub.unsubscribe().await.unwrap();
}

/// The payloads `sub` has received, without waiting: the caller knows they have arrived.
async fn received(sub: &mut async_nats::Subscriber) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(100), sub.next()).await {
        out.push(format!(
            "{} {}",
            m.subject,
            String::from_utf8_lossy(&m.payload)
        ));
    }
    out
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The next message of `sub`, failing after [`LIMIT`].
async fn next(sub: &mut async_nats::Subscriber) -> async_nats::Message {
    tokio::time::timeout(LIMIT, sub.next())
        .await
        .ok()
        .flatten()
        .expect("a message")
}

/// The next two messages of `sub`, as `what: subject payload`.
async fn two(sub: &mut async_nats::Subscriber, what: &str) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..2 {
        let m = next(sub).await;
        out.push(format!(
            "{what}: {} {}",
            m.subject,
            String::from_utf8_lossy(&m.payload)
        ));
    }
    out
}

/// Messages and interest cross a TLS route both ways: wildcards, a queue group, a 1 MiB
/// message with headers (many TLS records), 5,000 messages in order.
async fn exercise(a: &Node, b: &Node) {
    let (ca, cb) = (connect(a).await, connect(b).await);
    let mut on_a = ca.subscribe("to_a.*").await.unwrap();
    let mut on_b = cb.subscribe("to_b.>").await.unwrap();
    let mut q = cb.queue_subscribe("work", "w".into()).await.unwrap();
    ca.flush().await.unwrap();
    cb.flush().await.unwrap();
    propagate(&ca, &cb, "probe").await;
    propagate(&cb, &ca, "probe").await;
    cb.publish("to_a.x", "from b".into()).await.unwrap();
    ca.publish("to_b.x.y", "from a".into()).await.unwrap();
    ca.publish("work", "job".into()).await.unwrap();
    assert_eq!(&next(&mut on_a).await.payload[..], b"from b");
    assert_eq!(&next(&mut on_b).await.payload[..], b"from a");
    assert_eq!(&next(&mut q).await.payload[..], b"job");
    let payload: Vec<u8> = (0..1024 * 1024 - 100).map(|i| (i % 251) as u8).collect();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Trace-Id", "42");
    ca.publish_with_headers("to_b.big", headers, payload.clone().into())
        .await
        .unwrap();
    let m = next(&mut on_b).await;
    assert!(m.payload[..] == payload[..], "payload unchanged");
    assert_eq!(
        m.headers
            .as_ref()
            .and_then(|h| h.get("Trace-Id"))
            .map(|v| v.as_str()),
        Some("42")
    );
    for i in 0..5_000u32 {
        cb.publish("to_a.seq", i.to_string().into()).await.unwrap();
    }
    cb.flush().await.unwrap();
    for i in 0..5_000u32 {
        assert_eq!(
            next(&mut on_a).await.payload,
            i.to_string().as_bytes(),
            "in order"
        );
    }
}

/// Two nodes with TLS routes: `kinds[1]` dials `kinds[0]`.
fn tls_pair(kinds: [Kind; 2], name: &str) {
    let dir = Dir::new(name);
    let tls = dir.tls_block("node");
    let Some(a) = start(kinds[0], &dir.conf("A", &[], &tls)) else {
        return;
    };
    let Some(b) = start(kinds[1], &dir.conf("B", &[a.route_port], &tls)) else {
        return;
    };
    rt().block_on(exercise(&a, &b));
}

#[test]
fn tls_route_between_beaver_nodes() {
    tls_pair([Kind::Beaver, Kind::Beaver], "bb");
}

#[test]
fn tls_route_beaver_dials_nats_server() {
    tls_pair([Kind::Nats, Kind::Beaver], "nb");
}

#[test]
fn tls_route_nats_server_dials_beaver() {
    tls_pair([Kind::Beaver, Kind::Nats], "bn");
}

/// What a peer speaking plain text to a TLS route port gets: nothing, then the end of the
/// connection (no alert either: the first record is not TLS); and the server's log line.
fn plaintext_peer(kind: Kind, dir: &Dir) -> Option<Vec<u8>> {
    let n = start(
        kind,
        &dir.conf(&format!("{kind:?}"), &[], &dir.tls_block("node")),
    )?;
    let mut s = TcpStream::connect(("127.0.0.1", n.route_port)).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(b"CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"headers\":true,\"name\":\"NPEER\",\"cluster\":\"t\",\"lnoc\":true}\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(
        n.server.wait_for_log(
            "TLS route handshake error: tls: first record does not look like a TLS handshake"
        ),
        "{kind:?} logs the refusal"
    );
    Some(got)
}

#[test]
fn a_plaintext_route_is_refused_as_by_nats_server() {
    let dir = Dir::new("plain");
    let beaver = plaintext_peer(Kind::Beaver, &dir).unwrap();
    assert_eq!(beaver, b"", "no INFO before the handshake, no alert");
    if let Some(reference) = plaintext_peer(Kind::Nats, &dir) {
        assert_eq!(beaver, reference);
    }
}

/// A node whose certificate another CA signed cannot join.
#[test]
fn a_certificate_of_another_ca_is_refused() {
    let dir = Dir::new("rogue");
    let a = start(Kind::Beaver, &dir.conf("A", &[], &dir.tls_block("node"))).unwrap();
    let rogue = start(
        Kind::Beaver,
        &dir.conf("R", &[a.route_port], &dir.tls_block("rogue")),
    )
    .unwrap();
    // In TLS 1.3 the dialer's handshake is over before its certificate is checked: the
    // accepting side is the one to refuse it.
    assert!(a.server.wait_for_log("TLS route handshake error"));
    let registered = |n: &Node| {
        n.server
            .log_lines()
            .iter()
            .any(|l| l.contains("Registering remote route"))
    };
    assert!(
        !registered(&a) && !registered(&rogue),
        "no route registered"
    );
}

/// The deliveries of the permissions scenario: `A` has
/// `permissions { import: "in.>", export: { allow: "out.>", deny: "out.secret" } }`, `B`
/// none. Interest of A's that A does not import is not sent (B drops those messages);
/// B's interest in what A does not export is ignored, and a wildcard one covering a
/// denied subject does not get it.
async fn permissions_scenario(a: &Node, b: &Node) -> Vec<String> {
    let (ca, cb) = (connect(a).await, connect(b).await);
    // B → A: `in.x` is imported, `other.x` is not.
    let mut a_in = ca.subscribe("in.x").await.unwrap();
    let mut a_other = ca.subscribe("other.x").await.unwrap();
    // A → B: `out.x` is exported, `out.*` too (but not `out.secret` under it), `nope.x` not.
    let mut b_out = cb.subscribe("out.x").await.unwrap();
    let mut b_wild = cb.subscribe("out.*").await.unwrap();
    let mut b_nope = cb.subscribe("nope.x").await.unwrap();
    ca.flush().await.unwrap();
    cb.flush().await.unwrap();
    propagate(&ca, &cb, "in.probe").await;
    propagate(&cb, &ca, "out.probe").await;
    for s in ["in.x", "other.x", "in.x"] {
        cb.publish(s, "b".into()).await.unwrap();
    }
    for s in ["out.x", "out.secret", "nope.x", "out.x"] {
        ca.publish(s, "a".into()).await.unwrap();
    }
    ca.flush().await.unwrap();
    cb.flush().await.unwrap();
    // The last message of each direction arrived: whatever came before it did too.
    let mut out = Vec::new();
    out.extend(two(&mut a_in, "A in.x").await);
    out.extend(two(&mut b_out, "B out.x").await);
    for (sub, what) in [
        (&mut a_other, "A other.x"),
        (&mut b_wild, "B out.*"),
        (&mut b_nope, "B nope.x"),
    ] {
        out.extend(
            received(sub)
                .await
                .into_iter()
                .map(|m| format!("{what}: {m}")),
        );
    }
    out
}

const PERMISSIONS: &str =
    "permissions { import: \"in.>\", export: { allow: \"out.>\", deny: \"out.secret\" } }";

/// The permissions scenario on `A` (with the permissions) and `B`, of `kinds`; `a_dials`:
/// A dials B (otherwise B dials A); `tls`: over TLS routes.
fn permissions_pair(kinds: [Kind; 2], a_dials: bool, tls: bool, dir: &Dir) -> Option<Vec<String>> {
    let tls = if tls {
        dir.tls_block("node")
    } else {
        String::new()
    };
    let a_extra = format!("{PERMISSIONS}\n  {tls}");
    let (a, b) = if a_dials {
        let b = start(kinds[1], &dir.conf("B", &[], &tls))?;
        (
            start(kinds[0], &dir.conf("A", &[b.route_port], &a_extra))?,
            b,
        )
    } else {
        let a = start(kinds[0], &dir.conf("A", &[], &a_extra))?;
        let b = start(kinds[1], &dir.conf("B", &[a.route_port], &tls))?;
        (a, b)
    };
    Some(rt().block_on(permissions_scenario(&a, &b)))
}

/// What nats-server 2.9.10 delivers in [`permissions_scenario`] (checked against it below).
fn expected_deliveries() -> Vec<String> {
    [
        "A in.x: in.x b",
        "A in.x: in.x b",
        "B out.x: out.x a",
        "B out.x: out.x a",
        "B out.*: out.x a",
        "B out.*: out.x a",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn route_permissions_as_nats_server_applies_them() {
    let dir = Dir::new("perms");
    let want = expected_deliveries();
    // The reference, with the same files.
    if let Some(reference) = permissions_pair([Kind::Nats, Kind::Nats], false, false, &dir) {
        assert_eq!(reference, want, "nats-server's deliveries");
    }
    for (kinds, a_dials, tls) in [
        ([Kind::Beaver, Kind::Beaver], false, false),
        ([Kind::Beaver, Kind::Beaver], true, true),
    ] {
        let got = permissions_pair(kinds, a_dials, tls, &dir).unwrap();
        assert_eq!(got, want, "{kinds:?}, A dials: {a_dials}, TLS: {tls}");
    }
}

#[test]
fn route_permissions_in_a_mixed_cluster() {
    let dir = Dir::new("perms-mixed");
    let want = expected_deliveries();
    // beaver applies the permissions whichever side dials; and a nats-server with them
    // treats a beaver node as it treats its own kind.
    for (kinds, a_dials) in [
        ([Kind::Beaver, Kind::Nats], false),
        ([Kind::Beaver, Kind::Nats], true),
        ([Kind::Nats, Kind::Beaver], false),
        ([Kind::Nats, Kind::Beaver], true),
    ] {
        let Some(got) = permissions_pair(kinds, a_dials, true, &dir) else {
            return;
        };
        assert_eq!(got, want, "{kinds:?}, A dials: {a_dials}");
    }
}

/// `cluster.tls` and `cluster.permissions` mistakes are refused with the key and line.
#[test]
fn bad_cluster_tls_and_permissions_are_refused() {
    let dir = Dir::new("bad");
    let write = |name: &str, text: &str| -> PathBuf {
        let p = Path::new(&dir.path(name)).to_owned();
        std::fs::write(&p, text).unwrap();
        p
    };
    let no_ca = write(
        "no_ca.conf",
        &format!(
            "cluster {{\n  listen: 127.0.0.1:-1\n  tls {{ cert_file: '{}', key_file: '{}' }}\n}}\n",
            dir.path("node-cert.pem"),
            dir.path("node-key.pem")
        ),
    );
    let e = common::refused_config(&no_ca);
    assert!(
        e.contains("line 3") && e.contains("cluster.tls") && e.contains("ca_file"),
        "{e}"
    );
    let missing = write(
        "missing.conf",
        &format!(
            "cluster {{\n  listen: 127.0.0.1:-1\n  tls {{ cert_file: '{}', key_file: '{}', ca_file: '{}' }}\n}}\n",
            dir.path("nothere.pem"),
            dir.path("node-key.pem"),
            dir.path("ca.pem")
        ),
    );
    let e = common::refused_config(&missing);
    assert!(
        e.contains("cluster.tls: cert_file") && e.contains("nothere.pem"),
        "{e}"
    );
    let responses = write(
        "responses.conf",
        "cluster {\n  listen: 127.0.0.1:-1\n  permissions {\n    import: foo\n    allow_responses: true\n  }\n}\n",
    );
    let e = common::refused_config(&responses);
    assert!(
        e.contains("cluster.permissions")
            && e.contains("Cluster permissions do not support dynamic responses"),
        "{e}"
    );
    let insecure = write(
        "insecure.conf",
        &format!(
            "tls {{ cert_file: '{}', key_file: '{}', insecure: true }}\n",
            dir.path("node-cert.pem"),
            dir.path("node-key.pem")
        ),
    );
    let e = common::refused_config(&insecure);
    assert!(e.contains("line 1") && e.contains("insecure"), "{e}");
}
