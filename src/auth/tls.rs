//! TLS for client connections and routes, with rustls (pure Rust with the `ring` provider: it builds on
//! Linux, macOS and Windows alike).
//!
//! As NATS expects, the server sends `INFO` (with `tls_required: true`) in plain text, then
//! the client starts the TLS handshake. How the handshake and the encrypted traffic are split
//! between the reader thread and the writer threads is in `docs/architecture.md` ("TLS").

use crate::config::{RouteTls, Tls};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig};
use std::path::Path;
use std::sync::Arc;

/// Builds the rustls server configuration from the `[tls]` settings. The error names the
/// key and file at fault.
pub fn server_config(tls: &Tls) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (certs, key) = load_identity("tls", tls)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let builder = if tls.verify {
        let Some(ca) = &tls.ca_file else {
            return Err("tls: `verify` needs `ca_file`".into());
        };
        let roots = load_roots("tls", ca)?;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| format!("tls: ca_file {}: {e}", ca.display()))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| cert_key_error("tls", &e, tls))?;
    Ok(Arc::new(config))
}

/// The rustls configurations of TLS routes (`cluster.tls`): both sides present the
/// certificate and require the other's, verified against `ca_file`, as nats-server's routes
/// do whatever `verify` says.
pub struct RouteTlsConfig {
    /// For routes accepted on the route port (rustls server side; a client certificate is
    /// required).
    pub server: Arc<ServerConfig>,
    /// For routes we dial (rustls client side, presenting our certificate; the server's is
    /// verified unless `insecure`).
    pub client: Arc<ClientConfig>,
}

/// Builds both sides' configurations from `cluster.tls`. The error names the key and file
/// at fault (`cluster.tls: ca_file ...`).
pub fn route_configs(rt: &RouteTls) -> Result<RouteTlsConfig, String> {
    const AT: &str = "cluster.tls";
    let tls = &rt.tls;
    let Some(ca) = &tls.ca_file else {
        return Err(format!("{AT}: `ca_file` is required"));
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (certs, key) = load_identity(AT, tls)?;
    let roots = load_roots(AT, ca)?;
    let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
        .build()
        .map_err(|e| format!("{AT}: ca_file {}: {e}", ca.display()))?;
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{AT}: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| cert_key_error(AT, &e, tls))?;
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{AT}: {e}"))?;
    let builder = if rt.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)))
    } else {
        builder.with_root_certificates(roots)
    };
    let client = builder
        .with_client_auth_cert(certs, key)
        .map_err(|e| cert_key_error(AT, &e, tls))?;
    Ok(RouteTlsConfig {
        server: Arc::new(server),
        client: Arc::new(client),
    })
}

/// `insecure`: any certificate of the server dialled is taken (Go's `InsecureSkipVerify`);
/// the handshake's signatures are still checked, as the protocol needs them.
#[derive(Debug)]
struct AnyServerCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The certificate chain and private key of a `tls` block found at `at`.
fn load_identity(
    at: &str,
    tls: &Tls,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let certs = load_certs(at, "cert_file", &tls.cert_file)?;
    let key_pem = read(at, "key_file", &tls.key_file)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "{at}: key_file {}: no private key found ({e})",
            tls.key_file.display()
        )
    })?;
    Ok((certs, key))
}

/// The CA certificates of `ca_file`, as trust anchors.
fn load_roots(at: &str, ca: &Path) -> Result<Arc<RootCertStore>, String> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(at, "ca_file", ca)? {
        roots
            .add(cert)
            .map_err(|e| format!("{at}: ca_file {}: {e}", ca.display()))?;
    }
    Ok(Arc::new(roots))
}

/// `with_single_cert`'s error in words: rustls shows a mismatch as `keys may not be
/// consistent: KeyMismatch`.
fn cert_key_error(at: &str, e: &rustls::Error, tls: &Tls) -> String {
    let (cert, key) = (tls.cert_file.display(), tls.key_file.display());
    match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => format!(
            "{at}: key_file {key} is not the private key of the certificate in cert_file {cert}"
        ),
        rustls::Error::InconsistentKeys(_) => format!(
            "{at}: key_file {key}: cannot check that it is the private key of the certificate \
             in cert_file {cert}"
        ),
        e => format!("{at}: cert_file {cert} / key_file {key}: {e}"),
    }
}

fn read(at: &str, key: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{at}: {key} {}: {e}", path.display()))
}

fn load_certs(at: &str, key: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(at, key, path)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{at}: {key} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{at}: {key} {}: no certificate found",
            path.display()
        ));
    }
    Ok(certs)
}

/// A digest of the files `tls` names (certificate, key, CA), as they are now: a reload
/// compares it with the one of the files in use, so that a certificate replaced in place
/// (same file name, as certificate rotation does it) is noticed. Unreadable files count as
/// empty (loading them then fails with a clear error).
pub fn files_digest(tls: &Tls) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for path in [
        Some(&tls.cert_file),
        Some(&tls.key_file),
        tls.ca_file.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        std::fs::read(path).unwrap_or_default().hash(&mut h);
    }
    h.finish()
}

/// The negotiated protocol version as nats-server shows it in `/connz` (`1.2`, `1.3`).
pub fn version_name(conn: &rustls::CommonState) -> String {
    match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "1.3".into(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "1.2".into(),
        Some(v) => format!("{v:?}"),
        None => String::new(),
    }
}

/// The negotiated cipher suite with Go's name (`TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), as nats-server shows it in `/connz`.
pub fn cipher_name(conn: &rustls::CommonState) -> String {
    let Some(suite) = conn.negotiated_cipher_suite() else {
        return String::new();
    };
    let name = format!("{:?}", suite.suite());
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}
