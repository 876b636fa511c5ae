//! Secrets out of traced `CONNECT`s: the trace (`-V`) shows a client's `CONNECT` as sent,
//! except the values of the keys the decoder would read as a password or a token.

use super::connect::{fold_key_char, prepare_string};
#[cfg(test)]
use super::ConnectOptions;

/// The text of a `CONNECT`'s JSON for a trace line, with the value of each secret replaced
/// by `"[REDACTED]"`; everything else is kept as sent, in order.
///
/// A key is a secret when the decoder ([`super::ConnectOptions::merge_json`]) would read it as
/// `pass` or `auth_token`: its escapes decoded (`"p\u0061ss"`), folded as Go folds keys
/// (`"PASS"`, `"Pass"`, `"AUTH_TOKEN"`). Keys that merely start with `pass` are hidden too,
/// as nats-server's trace hides them (`"password"` is no field, but it is what a user who
/// mistyped the key meant). Keys are recognised at any depth and in any JSON, valid or not:
/// the trace is written before the JSON is decoded, and whatever the decoder makes of it,
/// no secret reaches the log.
pub fn redact_secrets(json: &[u8]) -> String {
    let b = json;
    let mut out = Vec::with_capacity(b.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let key_end = string_end(b, i + 1);
        let is_secret = is_secret_key(&b[i..key_end]);
        i = key_end;
        // A key is a string followed by a colon.
        let colon = skip_blanks(b, i);
        if !is_secret || b.get(colon) != Some(&b':') {
            continue;
        }
        let value_start = skip_blanks(b, colon + 1);
        if value_start >= b.len() {
            break;
        }
        let value_end = value_end(b, value_start);
        out.extend_from_slice(&b[copied..value_start]);
        out.extend_from_slice(b"\"[REDACTED]\"");
        copied = value_end;
        i = value_end;
    }
    out.extend_from_slice(&b[copied.min(b.len())..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `quoted` (a JSON string with its quotes; the closing one may be missing) names a
/// secret (see [`redact_secrets`]).
fn is_secret_key(quoted: &[u8]) -> bool {
    let mut text = String::new();
    prepare_string(quoted, 1, &mut text);
    // Decoded as the decoder decodes it. An unterminated string is closed first; one it
    // cannot decode (a bad escape) is compared as written: redacting too much is harmless.
    let decoded = serde_json::from_str::<String>(&text)
        .or_else(|_| serde_json::from_str::<String>(&format!("{text}\"")))
        .unwrap_or_else(|_| {
            let raw = &quoted[1..];
            String::from_utf8_lossy(raw.strip_suffix(b"\"").unwrap_or(raw)).into_owned()
        });
    let folded: Vec<u8> = decoded
        .chars()
        .map(|c| fold_key_char(c).unwrap_or(0))
        .collect();
    folded.starts_with(b"pass") || folded == b"auth_token"
}

/// The index just after the string that starts at `b[i]` (just after its opening quote), or
/// the end of the input.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
    {
        i += 1;
    }
    i
}

/// The end of the JSON value starting at `b[i]`: a string, a nested object or array (with the
/// strings in it), or a scalar up to the next `,`, `}` or `]`; the end of the input at most.
fn value_end(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'"' => string_end(b, i + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j + 1);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') {
                j += 1;
            }
            j
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_hidden_and_order_kept() {
        let r = |j: &str| redact_secrets(j.as_bytes());
        assert_eq!(
            r(r#"{"user":"a","pass":"x\"y","verbose":false,"auth_token":"t"}"#),
            r#"{"user":"a","pass":"[REDACTED]","verbose":false,"auth_token":"[REDACTED]"}"#
        );
        assert_eq!(r(r#"{"pass": 12}"#), r#"{"pass": "[REDACTED]"}"#);
        assert_eq!(r(r#"{"pass":"unterminated"#), r#"{"pass":"[REDACTED]""#);
        assert_eq!(
            r(r#"{"pass":{"a":"}x"},"b":1}"#),
            r#"{"pass":"[REDACTED]","b":1}"#
        );
        assert!(!r(r#"{"password" : "zz""#).contains("zz"));
        assert_eq!(r(r#"{"name":"pass"}"#), r#"{"name":"pass"}"#);
        assert_eq!(r(r#"{"passport"#), r#"{"passport"#);
    }

    /// Every key the decoder reads as `pass` or `auth_token` is redacted: the decoder is
    /// asked first, so the test cannot drift from it.
    #[test]
    fn redaction_covers_every_spelling_the_decoder_reads() {
        let spellings = [
            r#""pass""#,
            r#""PASS""#,
            r#""Pass""#,
            r#""pASs""#,
            r#""p\u0061ss""#,
            r#""\u0050ASS""#,
            "\"pa\u{17f}\u{17f}\"",
            r#""pa\u017fs""#,
            r#""auth_token""#,
            r#""AUTH_TOKEN""#,
            r#""Auth_Token""#,
            r#""auth_to\u006ben""#,
            "\"auth_to\u{212a}en\"",
        ];
        for key in spellings {
            let json = format!(r#"{{"verbose":false,{key}:"s3cret","name":"n"}}"#);
            let mut o = ConnectOptions::default();
            o.merge_json(json.as_bytes()).unwrap();
            assert!(
                o.pass == "s3cret" || o.auth_token == "s3cret",
                "the decoder reads {key} as a secret"
            );
            let traced = redact_secrets(json.as_bytes());
            assert!(!traced.contains("s3cret"), "{key}: {traced}");
            assert!(traced.contains(r#""name":"n""#), "{traced}");
        }
    }
}
