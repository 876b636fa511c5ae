//! The opening handshake (RFC 6455, section 4.2): a client's HTTP upgrade request, checked in
//! nats-server 2.9.10's order (`wsUpgrade`), and the server's answers: `101 Switching
//! Protocols`, or the same refusals as nats-server's (Go's `http.Error`, with the
//! `Sec-Websocket-Version: 13` header). The request head is parsed by `httparse`, the accept
//! key derived by tungstenite.

use std::collections::HashMap;

/// The longest request head read (Go's server allows 1 MiB; a browser sends under 2 KiB).
pub const MAX_HEAD: usize = 16 * 1024;
/// The most headers a request may have.
const MAX_HEADERS: usize = 64;

/// What a request head came to.
#[derive(Debug)]
pub enum Head {
    /// More bytes are needed.
    Partial,
    /// The whole head, `len` bytes, and what to do with it.
    Complete {
        /// Bytes of the head; anything after it was sent before the handshake was done.
        len: usize,
        /// The upgrade to make, or the refusal to send.
        result: Result<Upgrade, Refusal>,
    },
}

/// An accepted upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgrade {
    /// The `Sec-WebSocket-Accept` value.
    pub accept: String,
    /// The `User-Agent` starts with `Mozilla/`: frames to it are cut at
    /// [`super::BROWSER_FRAME`] bytes, as nats-server does.
    pub browser: bool,
    /// The client asked for `Nats-No-Masking: true` (its frames may be unmasked).
    pub no_masking: bool,
    /// `permessage-deflate` is on: the server has `compression` and the client offered it.
    pub compress: bool,
    /// The address in `X-Forwarded-For`, if it is one (nats-server shows it as the client's
    /// address).
    pub forwarded_for: Option<std::net::IpAddr>,
}

/// A refused request: the status to answer with, and the reason for the log (nats-server's
/// `websocket handshake error: <reason>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status; 0: close without an answer.
    pub status: u16,
    /// Why, in nats-server's words.
    pub reason: String,
}

impl Refusal {
    fn new(status: u16, reason: impl Into<String>) -> Refusal {
        Refusal {
            status,
            reason: reason.into(),
        }
    }
}

/// `same_origin` and `allowed_origins`: which web pages may connect (nats-server's
/// `checkOrigin`). A request without `Origin` is always accepted (RFC 6455, 1.6: only
/// browsers send one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    /// The origin must be the host and port the request was sent to.
    pub same_origin: bool,
    /// Allowed origins by lower-case host: (scheme, port).
    allowed: HashMap<String, (String, String)>,
}

impl Origins {
    /// The policy of `same_origin` and the `allowed_origins` URLs. Errors name the URL that
    /// is not one (`http://host[:port]`).
    pub fn new(same_origin: bool, allowed: &[String]) -> Result<Origins, String> {
        let mut map = HashMap::new();
        for url in allowed {
            let (scheme, host, port) = split_origin(url)
                .ok_or_else(|| format!("unable to parse allowed origin: {url:?}"))?;
            map.insert(host, (scheme, port));
        }
        Ok(Origins {
            same_origin,
            allowed: map,
        })
    }

    /// Whether anything is checked at all.
    fn checks(&self) -> bool {
        self.same_origin || !self.allowed.is_empty()
    }

    /// Checks the request's `origin` against the policy; `host` is its `Host` header, `tls`
    /// whether it came over TLS (the default port).
    fn check(&self, origin: &str, host: &str, tls: bool) -> Result<(), String> {
        let (scheme, oh, op) = split_origin(origin).ok_or_else(|| "invalid origin".to_string())?;
        if self.same_origin {
            let (rh, rp) = host_port(host, tls);
            if oh != rh || op != rp {
                return Err("not same origin".into());
            }
        }
        if !self.allowed.is_empty() {
            match self.allowed.get(&oh) {
                Some((s, p)) if *s == scheme && *p == op => {}
                _ => return Err("not in the allowed list".into()),
            }
        }
        Ok(())
    }
}

/// `scheme://host[:port][/...]` → (scheme, lower-case host, port or the scheme's default).
fn split_origin(url: &str) -> Option<(String, String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty() {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return None;
    }
    let (host, port) = host_port(authority, scheme.eq_ignore_ascii_case("https"));
    Some((scheme.to_string(), host, port))
}

/// `host[:port]` → (lower-case host, port or 443/80); IPv6 in brackets.
fn host_port(hostport: &str, tls: bool) -> (String, String) {
    let default = if tls { "443" } else { "80" };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') && (!h.contains(':') || h.ends_with(']')) => {
            (h, p.to_string())
        }
        _ => (hostport, default.to_string()),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host.to_ascii_lowercase(), port)
}

/// Whether header `name` has `value` among its comma-separated tokens (case-insensitive).
fn has_token(headers: &[httparse::Header<'_>], name: &str, value: &str) -> bool {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .filter_map(|h| std::str::from_utf8(h.value).ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim_matches([' ', '\t']).eq_ignore_ascii_case(value))
}

/// The first value of header `name`.
fn header<'a>(headers: &'a [httparse::Header<'_>], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .and_then(|h| std::str::from_utf8(h.value).ok())
}

/// Reads the request head at the start of `buf` and checks it as nats-server does; `tls`:
/// it came over TLS (for the origin's default port); `compression`: the server offers
/// `permessage-deflate` to clients that ask for it.
///
/// ```
/// use beaver::websocket::{handshake::{parse, Head}, Origins};
/// let req = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
///             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
/// let Head::Complete { len, result } = parse(req, &Origins::default(), false, false) else {
///     panic!()
/// };
/// assert_eq!(len, req.len());
/// // RFC 6455's example key and answer.
/// assert_eq!(result.unwrap().accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
/// ```
pub fn parse(buf: &[u8], origins: &Origins, tls: bool, compression: bool) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        // One read may bring more than the limit at once: the limit holds either way.
        Ok(httparse::Status::Complete(len)) if len > MAX_HEAD => {
            return Head::Complete {
                len: buf.len(),
                result: Err(Refusal::new(431, "request head too large")),
            }
        }
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Head::Partial,
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            return Head::Complete {
                len: buf.len(),
                result: Err(Refusal::new(431, "request head too large")),
            }
        }
        Err(e) => {
            return Head::Complete {
                len: buf.len(),
                result: Err(Refusal::new(400, format!("malformed request: {e}"))),
            }
        }
    };
    Head::Complete {
        len,
        result: check(&req, origins, tls, compression),
    }
}

/// nats-server's checks, in its order (RFC 6455, 4.2.1, points 1 to 7).
fn check(
    req: &httparse::Request<'_, '_>,
    origins: &Origins,
    tls: bool,
    compression: bool,
) -> Result<Upgrade, Refusal> {
    let headers = &*req.headers;
    let host = header(headers, "Host").unwrap_or("");
    if host.is_empty() && req.version == Some(1) {
        // Go's server refuses it before nats-server sees it.
        return Err(Refusal::new(400, "missing required Host header"));
    }
    if req.method != Some("GET") {
        return Err(Refusal::new(405, "request method must be GET"));
    }
    if host.is_empty() {
        return Err(Refusal::new(400, "'Host' missing in request"));
    }
    if !has_token(headers, "Upgrade", "websocket") {
        return Err(Refusal::new(400, "invalid value for header 'Upgrade'"));
    }
    if !has_token(headers, "Connection", "Upgrade") {
        return Err(Refusal::new(400, "invalid value for header 'Connection'"));
    }
    let key = header(headers, "Sec-WebSocket-Key").unwrap_or("");
    if key.is_empty() {
        return Err(Refusal::new(400, "key missing"));
    }
    if !has_token(headers, "Sec-WebSocket-Version", "13") {
        return Err(Refusal::new(400, "invalid version"));
    }
    if origins.checks() {
        let origin = header(headers, "Origin")
            .filter(|o| !o.is_empty())
            .or_else(|| header(headers, "Sec-WebSocket-Origin"))
            .unwrap_or("");
        if !origin.is_empty() {
            origins
                .check(origin, host, tls)
                .map_err(|e| Refusal::new(403, format!("origin not allowed: {e}")))?;
        }
    }
    Ok(Upgrade {
        accept: tungstenite::handshake::derive_accept_key(key.as_bytes()),
        browser: header(headers, "User-Agent").is_some_and(|ua| ua.starts_with("Mozilla/")),
        no_masking: header(headers, "Nats-No-Masking") == Some("true"),
        // nats-server looks for the extension's name alone; the parameters it answers with
        // (no context takeover either way) are ones every client must accept.
        compress: compression && offers_deflate(headers),
        forwarded_for: header(headers, "X-Forwarded-For").and_then(|ip| ip.trim().parse().ok()),
    })
}

/// Whether `Sec-WebSocket-Extensions` names `permessage-deflate`.
fn offers_deflate(headers: &[httparse::Header<'_>]) -> bool {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("Sec-WebSocket-Extensions"))
        .filter_map(|h| std::str::from_utf8(h.value).ok())
        .flat_map(|v| v.split([',', ';']))
        .any(|t| {
            t.trim_matches([' ', '\t'])
                .eq_ignore_ascii_case("permessage-deflate")
        })
}

/// The `101 Switching Protocols` answer, byte for byte nats-server's.
pub fn switching_protocols(upgrade: &Upgrade) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n",
        upgrade.accept
    );
    if upgrade.compress {
        out.push_str(
            "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; \
             client_no_context_takeover\r\n",
        );
    }
    if upgrade.no_masking {
        out.push_str("Nats-No-Masking: true\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The answer to a refused request, as Go's `http.Error` writes it for nats-server (`date`
/// in `http.TimeFormat`); malformed requests and missing hosts get Go's server's own
/// terse answer. `None`: close without one.
pub fn refusal(refusal: &Refusal, date: &str) -> Option<Vec<u8>> {
    let text = match refusal.status {
        0 => return None,
        400 if refusal.reason == "missing required Host header" => {
            return Some(go_terse(400, "Bad Request: missing required Host header"))
        }
        400 if refusal.reason.starts_with("malformed request") => {
            return Some(go_terse(400, "Bad Request"))
        }
        431 => return Some(go_terse(431, "Request Header Fields Too Large")),
        400 => "Bad Request",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    };
    Some(
        format!(
            "HTTP/1.1 {} {text}\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Sec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\nDate: {date}\r\n\
             Content-Length: {}\r\n\r\n{text}\n",
            refusal.status,
            text.len() + 1
        )
        .into_bytes(),
    )
}

/// Go's server's answer to a request it cannot read, before any handler runs.
fn go_terse(status: u16, text: &str) -> Vec<u8> {
    let name = text.split(':').next().unwrap_or(text);
    format!(
        "HTTP/1.1 {status} {name}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Connection: close\r\n\r\n{status} {text}"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUpgrade: websocket\r\n\
                        Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\n\
                        Sec-WebSocket-Version: 13\r\n";

    fn run(req: &str, origins: &Origins) -> Result<Upgrade, Refusal> {
        match parse(req.as_bytes(), origins, false, true) {
            Head::Complete { result, .. } => result,
            Head::Partial => panic!("partial: {req}"),
        }
    }

    #[test]
    fn checks_in_nats_server_order() {
        let none = Origins::default();
        let ok = run(&format!("{GOOD}\r\n"), &none).unwrap();
        // nats-server 2.9.10's answer to this key.
        assert_eq!(ok.accept, "BACScCJPNqyz+UBoqMH89VmURoA=");
        assert!(!ok.browser);
        let status = |req: String| run(&req, &none).unwrap_err();
        assert_eq!(
            status(format!("{}\r\n", GOOD.replace("GET", "POST"))).status,
            405
        );
        for (from, to, reason) in [
            (
                "Upgrade: websocket\r\n",
                "",
                "invalid value for header 'Upgrade'",
            ),
            (
                "Connection: keep-alive, Upgrade\r\n",
                "",
                "invalid value for header 'Connection'",
            ),
            (
                "Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\n",
                "",
                "key missing",
            ),
            ("Version: 13", "Version: 12", "invalid version"),
        ] {
            let r = status(format!("{}\r\n", GOOD.replace(from, to)));
            assert_eq!((r.status, r.reason.as_str()), (400, reason));
        }
        assert_eq!(
            status(format!(
                "{}\r\n",
                GOOD.replace("Host: 127.0.0.1:8080\r\n", "")
            ))
            .status,
            400
        );
        assert!(matches!(
            parse(GOOD.as_bytes(), &none, false, false),
            Head::Partial
        ));
        // Over 16 KiB, whether it comes in pieces or at once.
        let big = format!("{GOOD}X-Big: {}\r\n\r\n", "x".repeat(MAX_HEAD));
        assert!(matches!(
            parse(big.as_bytes(), &none, false, false),
            Head::Complete {
                result: Err(Refusal { status: 431, .. }),
                ..
            }
        ));
        assert!(matches!(
            parse(b"HELLO\r\n\r\n", &none, false, false),
            Head::Complete {
                result: Err(Refusal { status: 400, .. }),
                ..
            }
        ));
    }

    #[test]
    fn origins_as_nats_server() {
        let same = Origins::new(true, &[]).unwrap();
        let with = |o: &str, origins: &Origins| run(&format!("{GOOD}Origin: {o}\r\n\r\n"), origins);
        assert!(with("http://127.0.0.1:8080", &same).is_ok());
        let r = with("http://127.0.0.1:8081", &same).unwrap_err();
        assert_eq!(
            (r.status, r.reason.as_str()),
            (403, "origin not allowed: not same origin")
        );
        let list = Origins::new(false, &["https://example.com".into()]).unwrap();
        assert!(with("https://Example.com:443", &list).is_ok());
        assert_eq!(
            with("http://example.com", &list).unwrap_err().reason,
            "origin not allowed: not in the allowed list"
        );
        // No Origin: accepted whatever the policy.
        assert!(run(&format!("{GOOD}\r\n"), &list).is_ok());
        assert!(Origins::new(false, &["nope".into()]).is_err());
    }

    #[test]
    fn answers_byte_for_byte() {
        let up = run(
            &format!("{GOOD}User-Agent: Mozilla/5.0\r\n\r\n"),
            &Origins::default(),
        )
        .unwrap();
        assert!(up.browser);
        assert_eq!(
            switching_protocols(&up),
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Accept: BACScCJPNqyz+UBoqMH89VmURoA=\r\n\r\n"
        );
        let date = "Wed, 02 Dec 2026 00:16:36 GMT";
        assert_eq!(
            refusal(&Refusal::new(405, "request method must be GET"), date).unwrap(),
            format!(
                "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Sec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\nDate: {date}\r\n\
                 Content-Length: 19\r\n\r\nMethod Not Allowed\n"
            )
            .into_bytes()
        );
        assert_eq!(
            refusal(&Refusal::new(400, "malformed request: x"), date).unwrap(),
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Connection: close\r\n\r\n400 Bad Request"
        );
    }
}
