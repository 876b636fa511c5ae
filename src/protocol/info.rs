//! The `INFO` line a client gets first (client protocol doc, "INFO").

use serde::Serialize;

/// The nats-server version whose client protocol beaver implements. Clients gate features on
/// `version` in `INFO` (headers need 2.2, no_responders 2.2.0, ...), so this is the
/// reference's version, not beaver's; beaver's own version is in `beaver_version`.
pub const NATS_VERSION: &str = "2.9.10";

/// The `INFO` fields, in nats-server's order. Serialised once per connection.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Unique id of this server process (an NKEY-like string, as nats-server uses).
    pub server_id: String,
    /// Server name (defaults to the id).
    pub server_name: String,
    /// See [`NATS_VERSION`].
    pub version: &'static str,
    /// Protocol level: 1 (the server may send async INFO).
    pub proto: u8,
    /// The host the server listens on.
    pub host: String,
    /// The client port.
    pub port: u16,
    /// Headers (`HPUB`/`HMSG`) are supported.
    pub headers: bool,
    /// Clients must authenticate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auth_required: bool,
    /// Clients must use TLS.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_required: bool,
    /// Largest message accepted, in bytes (headers plus payload).
    pub max_payload: usize,
    /// This connection's id (`cid`).
    pub client_id: u64,
    /// This connection's remote IP address.
    pub client_ip: String,
    /// beaver's own version.
    pub beaver_version: &'static str,
}

impl ServerInfo {
    /// The full `INFO` line: `INFO {json} \r\n` (nats-server puts a space before CR LF).
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = b"INFO ".to_vec();
        // Serialising plain strings and numbers cannot fail.
        serde_json::to_writer(&mut line, self).expect("INFO serialises");
        line.extend_from_slice(b" \r\n");
        line
    }
}

/// A new server id: `N` followed by 55 base32 characters, the shape of nats-server's NKEY
/// server ids (tools display and compare them as opaque strings).
pub fn generate_server_id() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut id = String::with_capacity(56);
    id.push('N');
    for _ in 0..55 {
        id.push(ALPHABET[fastrand::usize(..ALPHABET.len())] as char);
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_line_shape() {
        let info = ServerInfo {
            server_id: "NABC".into(),
            server_name: "n1".into(),
            version: NATS_VERSION,
            proto: 1,
            host: "0.0.0.0".into(),
            port: 4222,
            headers: true,
            auth_required: false,
            tls_required: false,
            max_payload: 1048576,
            client_id: 7,
            client_ip: "127.0.0.1".into(),
            beaver_version: "0.1.0",
        };
        let line = String::from_utf8(info.to_line()).unwrap();
        assert_eq!(
            line,
            "INFO {\"server_id\":\"NABC\",\"server_name\":\"n1\",\"version\":\"2.9.10\",\"proto\":1,\
             \"host\":\"0.0.0.0\",\"port\":4222,\"headers\":true,\"max_payload\":1048576,\
             \"client_id\":7,\"client_ip\":\"127.0.0.1\",\"beaver_version\":\"0.1.0\"} \r\n"
        );
    }

    #[test]
    fn server_ids_look_like_nkeys() {
        let id = generate_server_id();
        assert_eq!(id.len(), 56);
        assert!(id.starts_with('N'));
        assert_ne!(id, generate_server_id());
    }
}
