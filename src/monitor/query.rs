//! Query strings, decoded as nats-server's monitoring handlers decode them (Go's
//! `url.ParseQuery` and `strconv`), with the same 400 messages.
//!
//! - Pairs are split on `&`; `+` is a space and `%XX` an escaped byte. A pair with a bad
//!   escape or a `;` is skipped, as Go skips it.
//! - A parameter given twice counts with its first value; an empty value is as if absent.
//! - Integers are Go's `strconv.Atoi` (optional sign, decimal, 64 bits), unsigned integers
//!   `strconv.ParseUint` (no sign), booleans `strconv.ParseBool` (`1`, `t`, `T`, `true`,
//!   `TRUE`, `True`, and the same for false).

use super::http::unescape;
use crate::protocol::go_quote;

/// A decoded query string.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pairs: Vec<Param>,
}

/// One `key=value` pair.
#[derive(Debug, Clone)]
struct Param {
    key: String,
    /// The value as text (bytes that are not UTF-8 replaced by U+FFFD).
    text: String,
    /// The value's bytes, when they are not UTF-8 (otherwise `text` holds them).
    raw: Option<Vec<u8>>,
}

impl Query {
    /// Decodes the part of a URL after `?` (without the `?`).
    pub fn parse(raw: &str) -> Query {
        let mut pairs = Vec::new();
        for part in raw.split('&') {
            if part.is_empty() || part.contains(';') {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let (Some(k), Some(v)) = (unescape(k.as_bytes(), true), unescape(v.as_bytes(), true))
            else {
                continue;
            };
            let key = String::from_utf8_lossy(&k).into_owned();
            let (text, raw) = match String::from_utf8(v.into_owned()) {
                Ok(text) => (text, None),
                Err(e) => (
                    String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    Some(e.into_bytes()),
                ),
            };
            pairs.push(Param { key, text, raw });
        }
        Query { pairs }
    }

    /// A query made of `key=value` pairs as given (already decoded): the options of a
    /// report asked for over NATS, which come as JSON.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Query {
        Query {
            pairs: pairs
                .into_iter()
                .map(|(key, text)| Param {
                    key,
                    text,
                    raw: None,
                })
                .collect(),
        }
    }

    fn find(&self, key: &str) -> Option<&Param> {
        self.pairs.iter().find(|p| p.key == key)
    }

    /// The first value of `key` as text, or `""`.
    pub fn get(&self, key: &str) -> &str {
        self.find(key).map_or("", |p| p.text.as_str())
    }

    /// The first value of `key` as bytes, or empty: what filters compare (Go compares the
    /// bytes, so a value that is not UTF-8 matches no name).
    pub fn get_raw(&self, key: &str) -> &[u8] {
        self.find(key)
            .map_or(&[][..], |p| p.raw.as_deref().unwrap_or(p.text.as_bytes()))
    }
}

/// `strconv.Atoi` of parameter `name` (0 when absent); the error is nats-server's message.
pub fn decode_int(q: &Query, name: &str) -> Result<i64, String> {
    let v = q.get(name);
    if v.is_empty() {
        return Ok(0);
    }
    let bad = |what: &str| {
        format!(
            "Error decoding int for '{name}': strconv.Atoi: parsing {}: {what}",
            go_quote(q.get_raw(name))
        )
    };
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad("invalid syntax"));
    }
    v.parse::<i64>().map_err(|_| bad("value out of range"))
}

/// `strconv.ParseUint(v, 10, 64)` of parameter `name` (0 when absent).
pub fn decode_uint(q: &Query, name: &str) -> Result<u64, String> {
    let v = q.get(name);
    if v.is_empty() {
        return Ok(0);
    }
    let bad = |what: &str| {
        format!(
            "Error decoding uint64 for '{name}': strconv.ParseUint: parsing {}: {what}",
            go_quote(q.get_raw(name))
        )
    };
    if !v.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad("invalid syntax"));
    }
    v.parse::<u64>().map_err(|_| bad("value out of range"))
}

/// `strconv.ParseBool` of parameter `name` (false when absent).
pub fn decode_bool(q: &Query, name: &str) -> Result<bool, String> {
    match q.get(name) {
        "" => Ok(false),
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!(
            "Error decoding boolean for '{name}': strconv.ParseBool: parsing {}: invalid syntax",
            go_quote(q.get_raw(name))
        )),
    }
}

/// What `subs=` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubsMode {
    /// No subscription lists.
    None,
    /// `subs=1` (any true boolean): subjects.
    List,
    /// `subs=detail` (any case): subscription objects.
    Detail,
}

/// nats-server's `decodeSubs`: `detail`, or a boolean.
pub fn decode_subs(q: &Query) -> Result<SubsMode, String> {
    if q.get("subs").eq_ignore_ascii_case("detail") {
        return Ok(SubsMode::Detail);
    }
    Ok(if decode_bool(q, "subs")? {
        SubsMode::List
    } else {
        SubsMode::None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go() {
        let q = Query::parse("a=1&b=x+y%21&a=2&bad=%zz&semi=1;2&empty=&flag");
        assert_eq!(q.get("a"), "1");
        assert_eq!(q.get("b"), "x y!");
        assert_eq!(q.get("bad"), "");
        assert_eq!(q.get("semi"), "");
        assert_eq!(q.get("empty"), "");
        assert_eq!(q.get("flag"), "");
        assert_eq!(q.get("missing"), "");
        // A value that is not UTF-8 is kept (Go keeps it), not dropped.
        let q = Query::parse("user=%ff&x=1");
        assert_eq!(q.get_raw("user"), b"\xff");
        assert_eq!(q.get("user"), "\u{fffd}");
        assert_eq!(q.get_raw("x"), b"1");
        assert_eq!(q.get_raw("missing"), b"");
        assert_eq!(
            decode_int(&Query::parse("limit=%ff"), "limit").unwrap_err(),
            "Error decoding int for 'limit': strconv.Atoi: parsing \"\\xff\": invalid syntax"
        );
    }

    #[test]
    fn numbers_and_messages() {
        let q = Query::parse("a=abc&b=-5&c=%2B7&d=99999999999999999999&e=-1&f=%2B1&g=x");
        assert_eq!(
            decode_int(&q, "a").unwrap_err(),
            "Error decoding int for 'a': strconv.Atoi: parsing \"abc\": invalid syntax"
        );
        assert_eq!(decode_int(&q, "b"), Ok(-5));
        assert_eq!(decode_int(&q, "c"), Ok(7));
        assert_eq!(
            decode_int(&q, "d").unwrap_err(),
            "Error decoding int for 'd': strconv.Atoi: parsing \"99999999999999999999\": \
             value out of range"
        );
        assert_eq!(decode_int(&q, "none"), Ok(0));
        assert_eq!(
            decode_uint(&q, "e").unwrap_err(),
            "Error decoding uint64 for 'e': strconv.ParseUint: parsing \"-1\": invalid syntax"
        );
        assert!(decode_uint(&q, "f").is_err(), "no sign for ParseUint");
        assert_eq!(
            decode_bool(&q, "g").unwrap_err(),
            "Error decoding boolean for 'g': strconv.ParseBool: parsing \"x\": invalid syntax"
        );
        for (v, want) in [("1", true), ("True", true), ("f", false), ("FALSE", false)] {
            assert_eq!(decode_bool(&Query::parse(&format!("s={v}")), "s"), Ok(want));
        }
        assert_eq!(
            decode_subs(&Query::parse("subs=DETAIL")),
            Ok(SubsMode::Detail)
        );
        assert_eq!(decode_subs(&Query::parse("subs=1")), Ok(SubsMode::List));
        assert_eq!(decode_subs(&Query::parse("subs=0")), Ok(SubsMode::None));
    }
}
