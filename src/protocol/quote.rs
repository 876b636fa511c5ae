//! Go's `%q` / `strconv.Quote`, which nats-server uses for the subjects, user names and query
//! values it puts in its errors and logs: one implementation for the whole server.

/// Quotes bytes as Go's `strconv.Quote` does: in double quotes, with `"` and `\` escaped,
/// printable characters kept, the usual short escapes (`\n`, `\t`, `\a`, ...), other ASCII
/// control characters and each byte that is not valid UTF-8 as `\xNN`, and other control
/// characters as `\uNNNN`.
///
/// ```
/// # use beaver::protocol::go_quote;
/// assert_eq!(go_quote(b"foo.bar"), r#""foo.bar""#);
/// assert_eq!(go_quote(b"a\"b\\c\td\x01\xff"), r#""a\"b\\c\td\x01\xff""#);
/// assert_eq!(go_quote("é".as_bytes()), r#""é""#);
/// ```
pub fn go_quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{b}' => out.push_str("\\v"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                }
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}
