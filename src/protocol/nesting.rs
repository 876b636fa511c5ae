//! How deeply a JSON document nests, measured without parsing it: JSON that clients send
//! (JetStream API requests, JWT claims) is checked against a small depth before serde reads
//! it, because serde_json recurses and reader threads have small stacks.

/// How deeply `json`'s arrays and objects nest: the largest number of `{`/`[` open at once,
/// brackets inside strings (with their `\` escapes) not counted. Linear, no recursion, no
/// allocation; malformed JSON gets a number too (serde refuses it afterwards).
///
/// ```
/// use beaver::protocol::json_nesting_depth;
/// assert_eq!(json_nesting_depth(br#"{"a":"[[[[\"{{","b":[1,{"c":2}]}"#), 3);
/// assert_eq!(json_nesting_depth(b"42"), 0);
/// ```
pub fn json_nesting_depth(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::json_nesting_depth;

    #[test]
    fn counts_only_brackets_outside_strings() {
        let deep = "[".repeat(100_000);
        assert_eq!(json_nesting_depth(deep.as_bytes()), 100_000);
        assert_eq!(json_nesting_depth(br#"["]]]]", {"x": "\\"}]"#), 2);
        assert_eq!(json_nesting_depth(b"}}}{"), 1);
    }
}
