//! JSON as nats-server writes it: Go's `encoding/json` escapes `<`, `>` and `&` inside
//! strings (`"bar.\u003e"`), and times are RFC 3339 with nanoseconds, trailing zeros cut,
//! the zero time being `0001-01-01T00:00:00Z`.

use serde::Serialize;

/// `value` as JSON bytes, escaped as Go escapes them.
pub fn to_go_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing our own types to a Vec cannot fail (no maps with non-string keys).
    let plain = serde_json::to_vec(value).unwrap_or_default();
    go_escape(plain)
}

/// Go's HTML-safe escaping: `<`, `>` and `&` can only occur inside strings in JSON, so
/// replacing them byte for byte is exact.
fn go_escape(plain: Vec<u8>) -> Vec<u8> {
    if !plain.iter().any(|b| matches!(b, b'<' | b'>' | b'&')) {
        return plain;
    }
    let mut out = Vec::with_capacity(plain.len() + 16);
    for b in plain {
        match b {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            _ => out.push(b),
        }
    }
    out
}

/// Nanoseconds since the Unix epoch, now.
pub fn now_nanos() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// A time (nanoseconds since the epoch; 0 is Go's zero time) as Go's `time.Time` JSON:
/// `2026-12-01T19:03:39.917816641Z`.
pub fn go_time(nanos: i64) -> String {
    if nanos == 0 {
        return "0001-01-01T00:00:00Z".into();
    }
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(nanos)) else {
        return "0001-01-01T00:00:00Z".into();
    };
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let ns = t.nanosecond();
    if ns != 0 {
        let frac = format!("{ns:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// Parses Go's RFC 3339 time (with any offset) into nanoseconds since the epoch.
pub fn parse_go_time(s: &str) -> Option<i64> {
    if s == "0001-01-01T00:00:00Z" {
        return Some(0);
    }
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos()).ok()
}

/// Serializes a time field (nanoseconds) as [`go_time`].
pub fn ser_time<S: serde::Serializer>(nanos: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&go_time(*nanos))
}

/// A duration (nanoseconds) as Go's `time.Duration.String` writes it: `1.5s`, `2m0s`,
/// `300ms`, `0s`.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        // Below a second: the largest unit that keeps an integer part (Go writes µ).
        let (unit, div) = if u < 1_000 {
            ("ns", 1u64)
        } else if u < 1_000_000 {
            ("\u{b5}s", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&frac(u, div));
        out.push_str(unit);
    } else {
        let h = u / 3_600_000_000_000;
        let m = (u / 60_000_000_000) % 60;
        let s_ns = u % 60_000_000_000;
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&frac(s_ns, 1_000_000_000));
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `n / div` with its fraction, trailing zeros cut (`1.5`, `2`).
fn frac(n: u64, div: u64) -> String {
    let whole = n / div;
    let rest = n % div;
    if rest == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let f = format!("{rest:0width$}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_escapes_and_times() {
        assert_eq!(to_go_json(&"bar.>"), b"\"bar.\\u003e\"");
        assert_eq!(go_time(0), "0001-01-01T00:00:00Z");
        assert_eq!(go_time(1_000_000_000), "1970-01-01T00:00:01Z");
        assert_eq!(go_time(1_500_000_000), "1970-01-01T00:00:01.5Z");
        assert_eq!(parse_go_time("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(120_000_000_000), "2m0s");
        assert_eq!(go_duration(3_661_000_000_000), "1h1m1s");
        assert_eq!(go_duration(300_000_000), "300ms");
        assert_eq!(go_duration(1_500), "1.5\u{b5}s");
        assert_eq!(go_duration(0), "0s");
    }
}
