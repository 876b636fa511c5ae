//! `CONNECT` options (client protocol doc, "CONNECT").
//!
//! nats-server decodes each `CONNECT` *into the options it already has*, with Go's
//! `encoding/json`: fields absent from the JSON keep their previous value, `null` leaves a
//! field unchanged, keys match field names case-insensitively, and before any `CONNECT` the
//! options are `verbose`, `pedantic` and `echo` all true. So a client that sends `CONNECT {}`
//! (or no `CONNECT` at all, as a telnet user does) gets `+OK` after every operation and
//! pedantic subject checks. beaver reproduces this exactly.
//!
//! # Matching Go's decoder
//!
//! [`ConnectOptions::merge_json`] accepts exactly the `CONNECT` JSON that nats-server 2.9.10
//! (built with Go 1.19) accepts, and yields the same values; the table in the tests was taken
//! from the real server. It deserialises straight into the options with a serde visitor (no
//! `serde_json::Value` in between), after a byte-level pass (`prepare`) that removes the places
//! where serde_json is stricter than Go:
//!
//! - **Keys** match field names exactly or by ASCII case folding, plus the two non-ASCII
//!   letters Go 1.19 folds to ASCII: U+212A KELVIN SIGN (`k`) and U+017F LATIN SMALL LETTER
//!   LONG S (`s`). The last of duplicate keys wins. Unknown keys are skipped with
//!   `serde::de::IgnoredAny`, which serde_json does *without* converting numbers (so `1e999`
//!   is fine there, as in Go) and without recursion (so deep nesting is fine there too).
//! - **Types**: booleans must be `true`/`false`, strings JSON strings, and `protocol` an
//!   integer literal that fits an `i64` (Go's `strconv.ParseInt`): `1.0`, `1e0`, `-0.0` and
//!   `9223372036854775808` are errors. Go also type-checks the fields beaver does not use:
//!   `import`/`export` must be objects whose `allow`/`deny` are arrays of strings (each may
//!   also be `null`), so `{"export":1}` is refused; beaver checks and discards them.
//!   (`ssl_required` and `remote_account` are not fields of 2.9.10's client options:
//!   ignored like any unknown key.)
//! - **Invalid UTF-8** inside strings is accepted; Go replaces each byte that does not start
//!   a valid sequence with U+FFFD (one per byte: `E2 82 41` is `"\u{FFFD}\u{FFFD}A"`, not
//!   the single U+FFFD of `String::from_utf8_lossy`). Outside strings any byte >= 0x80 is a
//!   syntax error for both decoders, so `prepare` refuses it at once.
//! - **Lone surrogate escapes** (`"\ud800"`, `"\udc00"`, a high surrogate not followed by a
//!   low one) decode to U+FFFD in Go; serde_json refuses them in strings it decodes, so
//!   `prepare` rewrites them to `\ufffd` (inside strings only; valid pairs are kept).
//! - **`-0`**: serde_json reads the integer `-0` as the float `-0.0`, which an `i64` refuses;
//!   Go's `ParseInt("-0")` is 0. `prepare` turns the number token `-0` (exactly; not `-0.0`
//!   or `-0e0`) into ` 0`, which has the same meaning wherever it appears.
//! - **Nesting**: Go refuses input nested deeper than 10000 arrays/objects ("exceeded max
//!   depth", counting the top-level object); `prepare` counts the same way. serde_json's own
//!   recursion limit (128) stays on but is never reached: the known fields nest at most three
//!   levels deep and unknown values are skipped iteratively.
//!
//! Remaining differences, none visible to a client: the error texts differ (nats-server logs
//! its own and closes the connection without an `-ERR`, as beaver does); and on a type
//! mismatch Go has already applied the fields before it (and keeps decoding the rest), whereas
//! `merge_json` leaves the options untouched; the connection is closed either way.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A client's connection options: the reference's defaults, updated by each `CONNECT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Send `+OK` after each operation (default true until a `CONNECT` says otherwise).
    pub verbose: bool,
    /// Check subjects strictly (default true until a `CONNECT` says otherwise).
    pub pedantic: bool,
    /// Deliver this client's own messages to its own subscriptions (default true).
    pub echo: bool,
    /// The client understands `HMSG` and may send `HPUB`.
    pub headers: bool,
    /// The client wants a 503 status message when a request has no responders.
    pub no_responders: bool,
    /// The client requires TLS.
    pub tls_required: bool,
    /// Client name (for logs and monitoring).
    pub name: String,
    /// Client library language.
    pub lang: String,
    /// Client library version.
    pub version: String,
    /// Protocol level: 0 (original) or 1 (understands async INFO).
    pub protocol: i64,
    /// User name, for authentication.
    pub user: String,
    /// Password, for authentication. Never logged.
    pub pass: String,
    /// Authentication token. Never logged.
    pub auth_token: String,
    /// The client's public nkey (`U...`), for nkey authentication. Public, so logged.
    pub nkey: String,
    /// The client's user JWT, for operator-mode (JWT) authentication.
    pub jwt: String,
    /// The signature of `INFO`'s `nonce` by the client's nkey (base64, URL-safe without
    /// padding or standard). Never logged.
    pub sig: String,
    /// Account name: nats-server refuses a client that names one (Authorization Violation).
    pub account: String,
    /// Whether the client asked for a new account (refused likewise).
    pub new_account: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            verbose: true,
            pedantic: true,
            echo: true,
            headers: false,
            no_responders: false,
            tls_required: false,
            name: String::new(),
            lang: String::new(),
            version: String::new(),
            protocol: 0,
            user: String::new(),
            pass: String::new(),
            auth_token: String::new(),
            nkey: String::new(),
            jwt: String::new(),
            sig: String::new(),
            account: String::new(),
            new_account: false,
        }
    }
}

/// A `CONNECT` whose JSON could not be decoded. nats-server closes such a connection without
/// sending an `-ERR`.
#[derive(Debug)]
pub struct ConnectError(pub String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

impl ConnectOptions {
    /// Applies a `CONNECT`'s JSON on top of the current options (see the module docs). On
    /// error the options are left unchanged.
    pub fn merge_json(&mut self, json: &[u8]) -> Result<(), ConnectError> {
        let text = prepare(json)?;
        let mut merged = self.clone();
        let mut de = serde_json::Deserializer::from_str(&text);
        Merge(&mut merged)
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| ConnectError(e.to_string()))?;
        *self = merged;
        Ok(())
    }
}

/// Go's `encoding/json` nesting limit (`maxNestingDepth`); the top-level value counts as 1.
const MAX_NESTING_DEPTH: usize = 10_000;

/// Rewrites `json` into text that serde_json decodes as Go would decode the original (see the
/// module docs): invalid UTF-8 in strings becomes U+FFFD (one per bad byte), lone surrogate
/// escapes become `\ufffd`, the number `-0` becomes ` 0`, and nesting beyond Go's limit or a
/// non-ASCII byte outside a string is an error.
///
/// The string tracking is exact for any prefix that is valid JSON; where the input is already
/// invalid, whatever happens after that point cannot make it valid (only hex digits in `\u`
/// escapes, bytes inside strings, and a `-` before a lone `0` change), so serde_json still
/// refuses it, as Go does.
fn prepare(json: &[u8]) -> Result<String, ConnectError> {
    let mut out = String::with_capacity(json.len() + 8);
    let mut depth = 0usize;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        match b {
            b'"' => {
                i = prepare_string(json, i + 1, &mut out);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return Err(ConnectError(format!(
                        "invalid character '{}' exceeded max depth",
                        b as char
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'-' if is_negative_zero(json, i) => {
                out.push(' ');
                i += 1;
                continue;
            }
            0x80.. => {
                return Err(ConnectError(format!(
                    "invalid byte {b:#04x} outside a JSON string"
                )))
            }
            _ => {}
        }
        out.push(b as char);
        i += 1;
    }
    Ok(out)
}

/// Copies the string that starts at `json[i]` (just after its opening quote) into `out`, with
/// the quotes, and returns the index after its closing quote (or the end of the input).
pub(super) fn prepare_string(json: &[u8], mut i: usize, out: &mut String) -> usize {
    out.push('"');
    while i < json.len() {
        let b = json[i];
        match b {
            b'"' => {
                out.push('"');
                return i + 1;
            }
            b'\\' if json.get(i + 1) == Some(&b'u') => {
                let Some(unit) = hex4(json, i + 2) else {
                    // A bad `\u` escape: copied as it is, serde_json refuses it.
                    out.push_str("\\u");
                    i += 2;
                    continue;
                };
                if (0xD800..0xDC00).contains(&unit)
                    && json.get(i + 6..i + 8) == Some(b"\\u")
                    && hex4(json, i + 8).is_some_and(|low| (0xDC00..0xE000).contains(&low))
                {
                    // A valid surrogate pair: both escapes are ASCII.
                    push_ascii(out, &json[i..i + 12]);
                    i += 12;
                } else if (0xD800..0xE000).contains(&unit) {
                    // Go: "Invalid surrogate; fall back to replacement rune."
                    out.push_str("\\ufffd");
                    i += 6;
                } else {
                    push_ascii(out, &json[i..i + 6]);
                    i += 6;
                }
            }
            b'\\' => {
                // Any other escape: copy it whole, so that `\"` does not end the string.
                out.push('\\');
                i += 1;
                if let Some(&next) = json.get(i).filter(|c| c.is_ascii()) {
                    out.push(next as char);
                    i += 1;
                }
            }
            0x00..=0x7F => {
                out.push(b as char);
                i += 1;
            }
            _ => {
                // Go's utf8.DecodeRune: a valid sequence is kept, anything else is one bad
                // byte, replaced by U+FFFD, and decoding resumes at the next byte.
                let len = match b {
                    0xC2..=0xDF => 2,
                    0xE0..=0xEF => 3,
                    0xF0..=0xF4 => 4,
                    _ => 1,
                };
                match json.get(i..i + len).map(std::str::from_utf8) {
                    Some(Ok(c)) => {
                        out.push_str(c);
                        i += len;
                    }
                    _ => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        i += 1;
                    }
                }
            }
        }
    }
    i
}

/// Appends bytes already known to be ASCII (an escape: `\\u` and hex digits).
fn push_ascii(out: &mut String, ascii: &[u8]) {
    out.extend(ascii.iter().map(|&b| b as char));
}

/// The four hex digits at `json[i..i + 4]`, if they are hex digits.
fn hex4(json: &[u8], i: usize) -> Option<u32> {
    json.get(i..i + 4)?
        .iter()
        .try_fold(0, |acc, &d| Some((acc << 4) | (d as char).to_digit(16)?))
}

/// Whether the `-` at `json[i]` (outside a string) starts the number token `-0` exactly: a
/// value position (start, after `[`, `,`, `:` or whitespace) and no fraction, exponent or
/// further digit after the `0`.
fn is_negative_zero(json: &[u8], i: usize) -> bool {
    let value_position = i == 0
        || matches!(
            json[i - 1],
            b'[' | b',' | b':' | b' ' | b'\t' | b'\n' | b'\r'
        );
    value_position
        && json.get(i + 1) == Some(&b'0')
        && !matches!(json.get(i + 2), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))
}

/// Sets a field when the JSON gave a value (`null` leaves it unchanged, as in Go).
fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// The longest key that can match a field (`no_responders`), with room to spare.
const KEY_CAP: usize = 16;

/// An object key folded the way Go 1.19 matches keys to struct fields (ASCII case folding,
/// U+212A to `k`, U+017F to `s`), or empty if it cannot match any field.
struct Key {
    folded: [u8; KEY_CAP],
    len: usize,
}

impl Key {
    /// A key that matches no field (the empty name is no field's name).
    const NO_FIELD: Key = Key {
        folded: [0; KEY_CAP],
        len: 0,
    };

    fn as_bytes(&self) -> &[u8] {
        &self.folded[..self.len]
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                let mut k = Key {
                    folded: [0; KEY_CAP],
                    len: 0,
                };
                for c in key.chars() {
                    let Some(folded) = fold_key_char(c) else {
                        return Ok(Key::NO_FIELD);
                    };
                    if k.len == KEY_CAP {
                        return Ok(Key::NO_FIELD);
                    }
                    k.folded[k.len] = folded;
                    k.len += 1;
                }
                Ok(k)
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// One character of an object key folded as Go 1.19 folds keys to match field names (ASCII
/// case folding, U+212A KELVIN SIGN to `k`, U+017F LONG S to `s`); `None` for a character
/// that no field name can match.
pub(super) fn fold_key_char(c: char) -> Option<u8> {
    match c {
        '\u{212A}' => Some(b'k'),
        '\u{017F}' => Some(b's'),
        c if c.is_ascii() => Some(c.to_ascii_lowercase() as u8),
        _ => None,
    }
}

/// Decodes a `CONNECT` object into the options it borrows; `null` is a no-op.
struct Merge<'a>(&'a mut ConnectOptions);

impl<'de> DeserializeSeed<'de> for Merge<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Merge<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object (CONNECT options)")
    }

    // Go: unmarshalling `null` into a struct is a no-op.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let o = self.0;
        while let Some(key) = map.next_key::<Key>()? {
            match key.as_bytes() {
                b"verbose" => set(&mut o.verbose, map.next_value()?),
                b"pedantic" => set(&mut o.pedantic, map.next_value()?),
                b"echo" => set(&mut o.echo, map.next_value()?),
                b"headers" => set(&mut o.headers, map.next_value()?),
                b"no_responders" => set(&mut o.no_responders, map.next_value()?),
                b"tls_required" => set(&mut o.tls_required, map.next_value()?),
                b"name" => set(&mut o.name, map.next_value()?),
                b"lang" => set(&mut o.lang, map.next_value()?),
                b"version" => set(&mut o.version, map.next_value()?),
                b"protocol" => set(&mut o.protocol, map.next_value()?),
                b"user" => set(&mut o.user, map.next_value()?),
                b"pass" => set(&mut o.pass, map.next_value()?),
                b"auth_token" => set(&mut o.auth_token, map.next_value()?),
                b"account" => set(&mut o.account, map.next_value()?),
                b"new_account" => set(&mut o.new_account, map.next_value()?),
                b"nkey" => set(&mut o.nkey, map.next_value()?),
                b"jwt" => set(&mut o.jwt, map.next_value()?),
                b"sig" => set(&mut o.sig, map.next_value()?),
                // Fields of nats-server's options that beaver has no use for: type-checked
                // as Go does, then dropped.
                b"import" | b"export" => {
                    map.next_value::<Option<SubjectPermission>>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// nats-server's `SubjectPermission` (`import`/`export`, for routes and leaf nodes): an
/// object whose `allow` and `deny` are arrays of strings. Only checked, never used.
struct SubjectPermission;

impl<'de> Deserialize<'de> for SubjectPermission {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PermissionVisitor;
        impl<'de> Visitor<'de> for PermissionVisitor {
            type Value = SubjectPermission;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a subject permission object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while let Some(key) = map.next_key::<Key>()? {
                    match key.as_bytes() {
                        b"allow" | b"deny" => {
                            map.next_value::<Option<Vec<Option<String>>>>()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(SubjectPermission)
            }
        }
        deserializer.deserialize_map(PermissionVisitor)
    }
}

#[cfg(test)]
mod tests;
