//! What Go's `http.ServeMux` does to a path before nats-server's handlers see it: a path
//! that is not clean (`//connz`, `/./varz`, `/a/../subsz`) is redirected, `301 Moved
//! Permanently`, to its clean form (`cleanPath`, then `http.Redirect`), with the query kept.
//! Monitoring clients that follow redirects (curl -L, Go's and Python's HTTP clients) then
//! get the endpoint, as from nats-server.

/// Go's `path.Clean` of a path that starts with `/`: one `/` between elements, no `.`
/// elements, `..` elements removed with the element before them (and at the root).
fn clean(p: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(p.len());
    out.push(b'/');
    for element in p.split(|&b| b == b'/') {
        match element {
            b"" | b"." => {}
            b".." => {
                // Back to the previous '/' (never past the root).
                let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(cut.max(1));
            }
            e => {
                if out.len() > 1 {
                    out.push(b'/');
                }
                out.extend_from_slice(e);
            }
        }
    }
    out
}

/// Go's `cleanPath` (`net/http`): `/` in front if missing, `path.Clean`, and a trailing
/// slash kept.
pub fn clean_path(p: &[u8]) -> Vec<u8> {
    if p.is_empty() {
        return b"/".to_vec();
    }
    let mut rooted = Vec::with_capacity(p.len() + 1);
    if p[0] != b'/' {
        rooted.push(b'/');
    }
    rooted.extend_from_slice(p);
    let mut np = clean(&rooted);
    if rooted.ends_with(b"/") && np != b"/" {
        np.push(b'/');
    }
    np
}

/// Go's `url.PathEscape`-like escaping of a path for `URL.String()` (`encodePath` mode):
/// letters, digits, `-_.~` and `$&+,/:;=@` stay, every other byte is `%XX`.
fn escape_path(p: &[u8]) -> String {
    let mut out = String::with_capacity(p.len());
    for &b in p {
        if b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Go's `hexEscapeNonASCII`: bytes above 0x7f as `%XX`.
fn hex_escape_non_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b < 0x80 {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Go's `htmlEscape`.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A redirect to a clean path: the `Location` header, and the body Go's `http.Redirect`
/// writes for `GET` (empty for other methods; `HEAD` gets the content type but no body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The `Location` header value.
    pub location: String,
    /// `Content-Type: text/html; charset=utf-8` is sent (`GET` and `HEAD`).
    pub html: bool,
    /// The body.
    pub body: String,
}

/// The redirect Go's `ServeMux` answers for a request whose decoded path `path` is not
/// clean, or `None` when it is. `raw_query` is kept in the new location; `method` decides
/// the body as `http.Redirect` does.
pub fn redirect(method: &str, path: &[u8], raw_query: &str) -> Option<Redirect> {
    let clean = clean_path(path);
    if clean == path {
        return None;
    }
    let mut url = escape_path(&clean);
    if !raw_query.is_empty() {
        url.push('?');
        url.push_str(raw_query);
    }
    let body = if method == "GET" {
        format!(
            "<a href=\"{}\">Moved Permanently</a>.\n\n",
            html_escape(&url)
        )
    } else {
        String::new()
    };
    Some(Redirect {
        location: hex_escape_non_ascii(&url),
        html: method == "GET" || method == "HEAD",
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_as_go() {
        // Cases from Go's path.Clean and cleanPath tests.
        for (input, want) in [
            ("", "/"),
            ("/", "/"),
            ("//", "/"),
            ("//connz", "/connz"),
            ("/varz", "/varz"),
            ("/varz/", "/varz/"),
            ("/varz//", "/varz/"),
            ("varz", "/varz"),
            ("/./varz", "/varz"),
            ("/a/../varz", "/varz"),
            ("/../../varz", "/varz"),
            ("/a/b/..", "/a"),
            ("/a/b/../", "/a/"),
            ("/abc/def/../../..", "/"),
            ("/a/./b/./c/", "/a/b/c/"),
            ("*", "/*"),
            ("/..", "/"),
            ("/...", "/..."),
        ] {
            assert_eq!(
                String::from_utf8(clean_path(input.as_bytes())).unwrap(),
                want,
                "{input:?}"
            );
        }
    }

    #[test]
    fn redirects_as_go() {
        assert_eq!(redirect("GET", b"/connz", "subs=1"), None);
        assert_eq!(redirect("GET", b"/varz/", ""), None);
        assert_eq!(
            redirect("GET", b"//connz", ""),
            Some(Redirect {
                location: "/connz".into(),
                html: true,
                body: "<a href=\"/connz\">Moved Permanently</a>.\n\n".into(),
            })
        );
        let r = redirect("GET", b"//connz", "a=1&b=<x>").unwrap();
        assert_eq!(r.location, "/connz?a=1&b=<x>");
        assert_eq!(
            r.body,
            "<a href=\"/connz?a=1&amp;b=&lt;x&gt;\">Moved Permanently</a>.\n\n"
        );
        let r = redirect("POST", b"/a b/../x?", "").unwrap();
        assert_eq!(
            (r.location.as_str(), r.html, r.body.as_str()),
            ("/x%3F", false, "")
        );
        let r = redirect("HEAD", b"*", "").unwrap();
        assert_eq!(
            (r.location.as_str(), r.html, r.body.as_str()),
            ("/%2A", true, "")
        );
        let r = redirect("GET", b"//\xc3\xa9", "q=\u{e9}").unwrap();
        assert_eq!(r.location, "/%C3%A9?q=%C3%A9");
    }
}
