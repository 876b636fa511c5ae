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

/// Parses a duration string as Go's `time.ParseDuration` does, which is what nats-server
/// uses: an optional sign, then one or more decimal numbers, each with an optional fraction
/// and a unit: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h` (`"2m"`, `"500ms"`, `"1m30s"`,
/// `"1.5h"`). No blanks; a number without a unit is an error, except `"0"`. Negative
/// durations are refused (no option takes one).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad =
        |why: String| format!("{s:?} is not a duration (expected e.g. \"2m\", \"500ms\"): {why}");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(bad("invalid duration".into()));
    }
    // Nanoseconds, as Go counts them (at most i64::MAX).
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(bad("invalid duration".into()));
        }
        let unit_len = after
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let nanos: u128 = match unit {
            "" => return Err(bad("missing unit".into())),
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => return Err(bad(format!("unknown unit {other:?}"))),
        };
        let too_large = || bad("too large".into());
        let whole: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| too_large())?
        };
        total = whole
            .checked_mul(nanos)
            .and_then(|n| n.checked_add(total))
            .ok_or_else(too_large)?;
        // The fraction, to the nanosecond (Go drops what is below it, too).
        let mut scale: u128 = 1;
        let mut f: u128 = 0;
        for d in frac.bytes().take(20) {
            f = f * 10 + u128::from(d - b'0');
            scale *= 10;
        }
        total += f * nanos / scale;
        if total > i64::MAX as u128 {
            return Err(too_large());
        }
        rest = after;
    }
    if negative && total > 0 {
        return Err(bad("negative".into()));
    }
    Ok(Duration::from_nanos(total as u64))
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
        // Go's time.ParseDuration, as nats-server reads durations.
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(
            parse_duration("1h2m3.5s"),
            Ok(Duration::from_millis(3_723_500))
        );
        assert_eq!(parse_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5.s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("+2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1µs"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_duration("1us"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_duration("100ns"), Ok(Duration::from_nanos(100)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("-0s"), Ok(Duration::ZERO));
        let err = |s: &str| parse_duration(s).unwrap_err();
        assert!(
            err("2 minutes").ends_with("unknown unit \" minutes\""),
            "{}",
            err("2 minutes")
        );
        assert!(err("30").ends_with("missing unit"));
        assert!(err("1d").ends_with("unknown unit \"d\""));
        assert!(err("1e3s").ends_with("unknown unit \"e\""));
        assert!(err("").ends_with("invalid duration"));
        assert!(err(".s").ends_with("invalid duration"));
        assert!(err(" 2s").ends_with("invalid duration"));
        assert!(err("-1s").ends_with("negative"));
        assert!(err("3000000h").ends_with("too large"));
        assert!(err("99999999999999999999999999999999999999999s").ends_with("too large"));
        assert_eq!(duration_from_secs(0.25), Ok(Duration::from_millis(250)));
        assert!(duration_from_secs(-1.0).is_err());
    }
}
