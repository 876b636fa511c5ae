//! The `INFO` line a client gets first (client protocol doc, "INFO").
//!
//! nats-server marshals `INFO` with Go's `encoding/json`, whose string escaping differs from
//! serde_json's: it escapes `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026` (HTML-safe
//! output), U+2028 and U+2029 as `\u2028` and `\u2029`, and (Go 1.19, as in Debian's
//! nats-server 2.9.10) backspace and form feed as `\u0008` and `\u000c` rather than `\b`
//! and `\f`. `GoFormatter` reproduces that, so a server name such as `x<&>y` appears as
//! `"x\u003c\u0026\u003ey"`, as nats-server sends it.

use serde::{Deserialize, Serialize};
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};
use std::io;

/// The nats-server version whose client protocol beaver implements. Clients gate features on
/// `version` in `INFO` (headers need 2.2, no_responders 2.2.0, ...), so this is the
/// reference's version, not beaver's; beaver's own version is in `beaver_version`.
pub const NATS_VERSION: &str = "2.9.10";

/// The compiler that built beaver, in the shape of Go's `runtime.Version()`: `rust1.95.0`
/// (recorded by `build.rs`). Sent where nats-server sends its Go version (`INFO` and
/// `/varz` `go`).
pub const RUNTIME_VERSION: &str = env!("BEAVER_RUSTC_VERSION");

/// The `INFO` fields, in nats-server's order. Every field nats-server 2.9.10 sends to a
/// client is here, except those of features beaver does not have (`git_commit`,
/// `tls_available`, `ip`, `domain`, `ws_connect_urls`), which
/// nats-server omits too when they are off. Serialised once per connection.
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
    /// The runtime that built the server: nats-server sends Go's version (`go1.19.8`),
    /// beaver sends [`RUNTIME_VERSION`]. Some clients require the field (nats.py's
    /// `nats-core` reads it unconditionally).
    pub go: &'static str,
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
    /// Clients must present a certificate the server verifies (TLS `verify`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_verify: bool,
    /// Largest message accepted, in bytes (headers plus payload).
    pub max_payload: usize,
    /// JetStream is on (omitted when off, as nats-server does).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub jetstream: bool,
    /// This connection's id (`cid`).
    pub client_id: u64,
    /// This connection's remote IP address.
    pub client_ip: String,
    /// The challenge an nkey user signs (`sig` in `CONNECT`): on the first `INFO` of a
    /// connection, when nkey users are configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// The cluster's name, when clustering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Every server's client URL (`HOST:PORT`), when clustering: clients discover the other
    /// servers with it (updated by async `INFO` as servers join and leave).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connect_urls: Vec<String>,
    /// Lame-duck mode: the server will close this connection soon (async INFO only).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ldm: bool,
    /// beaver's own version.
    pub beaver_version: &'static str,
}

impl ServerInfo {
    /// The full `INFO` line: `INFO {json} \r\n` (nats-server puts a space before CR LF).
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = b"INFO ".to_vec();
        let mut ser = serde_json::Serializer::with_formatter(&mut line, GoFormatter);
        // Serialising plain strings and numbers into a Vec cannot fail.
        self.serialize(&mut ser).expect("INFO serialises");
        line.extend_from_slice(b" \r\n");
        line
    }
}

/// Compact JSON with Go `encoding/json`'s string escaping (see the module docs). Only string
/// contents pass through `write_string_fragment` and `write_char_escape`, so keys, numbers
/// and punctuation are untouched.
pub(crate) struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        go_write_string_fragment(writer, fragment)
    }

    fn write_char_escape<W>(&mut self, writer: &mut W, char_escape: CharEscape) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        go_write_char_escape(writer, char_escape)
    }
}

/// Writes an unescaped run of a JSON string as Go's `encoding/json` does: `<`, `>`, `&`,
/// U+2028 and U+2029 as `\u` escapes (see the module docs). Shared with the monitoring
/// endpoints, whose JSON is Go's too.
pub(crate) fn go_write_string_fragment<W>(writer: &mut W, fragment: &str) -> io::Result<()>
where
    W: ?Sized + io::Write,
{
    let mut start = 0;
    for (i, c) in fragment.char_indices() {
        let escape: &[u8] = match c {
            '<' => br"\u003c",
            '>' => br"\u003e",
            '&' => br"\u0026",
            '\u{2028}' => br"\u2028",
            '\u{2029}' => br"\u2029",
            _ => continue,
        };
        writer.write_all(&fragment.as_bytes()[start..i])?;
        writer.write_all(escape)?;
        start = i + c.len_utf8();
    }
    writer.write_all(&fragment.as_bytes()[start..])
}

/// Writes a character escape as Go 1.19's `encoding/json` does (no short forms for
/// backspace and form feed).
pub(crate) fn go_write_char_escape<W>(writer: &mut W, char_escape: CharEscape) -> io::Result<()>
where
    W: ?Sized + io::Write,
{
    match char_escape {
        // Go 1.19 has no short forms for these two.
        CharEscape::Backspace => writer.write_all(br"\u0008"),
        CharEscape::FormFeed => writer.write_all(br"\u000c"),
        other => CompactFormatter.write_char_escape(writer, other),
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

/// Allowed and denied subjects in a route `INFO` (nats-server's `SubjectPermission`, whose
/// JSON leaves out an empty list).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SubjectPermission {
    /// Subjects allowed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Subjects denied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
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
            go: "rust1.95.0",
            host: "0.0.0.0".into(),
            port: 4222,
            headers: true,
            auth_required: false,
            tls_required: false,
            tls_verify: false,
            max_payload: 1048576,
            jetstream: false,
            client_id: 7,
            client_ip: "127.0.0.1".into(),
            nonce: None,
            cluster: None,
            connect_urls: Vec::new(),
            ldm: false,
            beaver_version: "0.1.0",
        };
        let line = String::from_utf8(info.to_line()).unwrap();
        assert_eq!(
            line,
            "INFO {\"server_id\":\"NABC\",\"server_name\":\"n1\",\"version\":\"2.9.10\",\"proto\":1,\
             \"go\":\"rust1.95.0\",\"host\":\"0.0.0.0\",\"port\":4222,\"headers\":true,\"max_payload\":1048576,\
             \"client_id\":7,\"client_ip\":\"127.0.0.1\",\"beaver_version\":\"0.1.0\"} \r\n"
        );
    }

    /// Expected bytes taken from nats-server 2.9.10 (Debian, Go 1.19.8), started with
    /// `-n 'x<&>y'` and with `-n $'a\b\f\x01\t\n\r\x7f\u2028\u2029\\"</é'`.
    #[test]
    fn strings_are_escaped_as_go_does() {
        let mut info = ServerInfo {
            server_id: "NABC".into(),
            server_name: "x<&>y".into(),
            version: NATS_VERSION,
            proto: 1,
            go: "rust1.95.0",
            host: "127.0.0.1".into(),
            port: 4222,
            headers: true,
            auth_required: false,
            tls_required: false,
            tls_verify: false,
            max_payload: 1048576,
            jetstream: false,
            client_id: 1,
            client_ip: "127.0.0.1".into(),
            nonce: None,
            cluster: None,
            connect_urls: Vec::new(),
            ldm: false,
            beaver_version: "0.1.0",
        };
        let line = info.to_line();
        let needle = br#""server_name":"x\u003c\u0026\u003ey","#;
        assert!(
            line.windows(needle.len()).any(|w| w == needle),
            "{}",
            String::from_utf8_lossy(&line)
        );
        info.server_name = "a\u{8}\u{c}\u{1}\t\n\r\u{7f}\u{2028}\u{2029}\\\"</é".into();
        let line = info.to_line();
        let needle = "\"server_name\":\"a\\u0008\\u000c\\u0001\\t\\n\\r\u{7f}\\u2028\\u2029\\\\\\\"\\u003c/é\",";
        let needle = needle.as_bytes();
        assert!(
            line.windows(needle.len()).any(|w| w == needle),
            "{}",
            String::from_utf8_lossy(&line)
        );
        // The line is still valid JSON that decodes back to the same name.
        let json = &line[5..line.len() - 3];
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        assert_eq!(v["server_name"], info.server_name.as_str());
    }

    #[test]
    fn server_ids_look_like_nkeys() {
        let id = generate_server_id();
        assert_eq!(id.len(), 56);
        assert!(id.starts_with('N'));
        assert_ne!(id, generate_server_id());
    }
}
