//! Sizes and durations as written in configuration files.

use std::time::Duration;

/// Parses a size: a number of bytes, optionally followed by nats-server's suffixes
/// (case-insensitive): `k`/`m`/`g`/`t` are powers of 1000, `kb`/`mb`/`gb`/`tb` (and `ki`,
/// `kib`, ...) powers of 1024. `"64MB"` is 67108864.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (expected e.g. 1048576, \"1MB\", \"512KB\")"))?;
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" | "ki" | "kib" => 1 << 10,
        "m" => 1000 * 1000,
        "mb" | "mi" | "mib" => 1 << 20,
        "g" => 1000 * 1000 * 1000,
        "gb" | "gi" | "gib" => 1 << 30,
        "t" => 1000 * 1000 * 1000 * 1000,
        "tb" | "ti" | "tib" => 1 << 40,
        other => return Err(format!("unknown size suffix {other:?} in {s:?}")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

/// Parses a duration string such as `"2m"`, `"500ms"`, `"1m30s"` (Go's and humantime's
/// units: ns, us, ms, s, m, h, d).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{s:?} is not a duration (expected e.g. \"2m\", \"500ms\"): {e}"))
}

/// A duration given as seconds (integer or fractional).
pub fn duration_from_secs(secs: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("{secs} is not a valid number of seconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1048576"), Ok(1048576));
        assert_eq!(parse_size("1MB"), Ok(1 << 20));
        assert_eq!(parse_size("64mb"), Ok(64 << 20));
        assert_eq!(parse_size("128KB"), Ok(128 << 10));
        assert_eq!(parse_size("1k"), Ok(1000));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        assert!(parse_size("x").is_err());
        assert!(parse_size("1XB").is_err());
        assert!(parse_size("99999999999TB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(duration_from_secs(0.25), Ok(Duration::from_millis(250)));
        assert!(duration_from_secs(-1.0).is_err());
    }
}
