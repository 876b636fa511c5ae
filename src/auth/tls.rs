//! TLS for client connections, with rustls (pure Rust with the `ring` provider: it builds on
//! Linux, macOS and Windows alike).
//!
//! As NATS expects, the server sends `INFO` (with `tls_required: true`) in plain text, then
//! the client starts the TLS handshake. How the handshake and the encrypted traffic are split
//! between the reader thread and the writer threads is in `docs/architecture.md` ("TLS").

use crate::config::Tls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::path::Path;
use std::sync::Arc;

/// Builds the rustls server configuration from the `[tls]` settings. The error names the
/// key and file at fault.
pub fn server_config(tls: &Tls) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = load_certs("cert_file", &tls.cert_file)?;
    let key_pem = read("key_file", &tls.key_file)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "tls: key_file {}: no private key found ({e})",
            tls.key_file.display()
        )
    })?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let builder = if tls.verify {
        let Some(ca) = &tls.ca_file else {
            return Err("tls: `verify` needs `ca_file`".into());
        };
        let mut roots = RootCertStore::empty();
        for cert in load_certs("ca_file", ca)? {
            roots
                .add(cert)
                .map_err(|e| format!("tls: ca_file {}: {e}", ca.display()))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| format!("tls: ca_file {}: {e}", ca.display()))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| cert_key_error(&e, tls))?;
    Ok(Arc::new(config))
}

/// `with_single_cert`'s error in words: rustls shows a mismatch as `keys may not be
/// consistent: KeyMismatch`.
fn cert_key_error(e: &rustls::Error, tls: &Tls) -> String {
    let (cert, key) = (tls.cert_file.display(), tls.key_file.display());
    match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => format!(
            "tls: key_file {key} is not the private key of the certificate in cert_file {cert}"
        ),
        rustls::Error::InconsistentKeys(_) => format!(
            "tls: key_file {key}: cannot check that it is the private key of the certificate in \
             cert_file {cert}"
        ),
        e => format!("tls: cert_file {cert} / key_file {key}: {e}"),
    }
}

fn read(key: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("tls: {key} {}: {e}", path.display()))
}

fn load_certs(key: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(key, path)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls: {key} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "tls: {key} {}: no certificate found",
            path.display()
        ));
    }
    Ok(certs)
}

/// The negotiated protocol version as nats-server shows it in `/connz` (`1.2`, `1.3`).
pub fn version_name(conn: &rustls::ServerConnection) -> String {
    match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "1.3".into(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "1.2".into(),
        Some(v) => format!("{v:?}"),
        None => String::new(),
    }
}

/// The negotiated cipher suite with Go's name (`TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), as nats-server shows it in `/connz`.
pub fn cipher_name(conn: &rustls::ServerConnection) -> String {
    let Some(suite) = conn.negotiated_cipher_suite() else {
        return String::new();
    };
    let name = format!("{:?}", suite.suite());
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}
