//! The monitoring endpoints' formats, as nats-server (Go) writes them.
//!
//! - JSON is Go's `json.MarshalIndent(v, "", "  ")`: two-space indentation, `"key": value`,
//!   `{}` and `[]` when empty, no trailing newline, and Go's string escaping (`<`, `>`, `&`
//!   as `\u003c`... ; see `protocol::info`).
//! - Times (`time.Time`) are RFC 3339 in UTC with nanoseconds, trailing zeros of the fraction
//!   removed (Go's `RFC3339Nano`): `2026-11-30T06:06:04.79935965Z`.
//! - Durations are either integer nanoseconds (`time.Duration` fields such as
//!   `ping_interval`), Go's `Duration.String()` (`rtt`: `595µs`, `1.5s`, `2m0s`), or
//!   nats-server's `myUptime` (`uptime`, `idle`: `1m30s`, `1d2h3m4s`).
//! - Floats are Go's: `2`, not `2.0`.

use crate::protocol::{go_write_char_escape, go_write_string_fragment};
use serde::{Serialize, Serializer};
use serde_json::ser::{CharEscape, Formatter, PrettyFormatter};
use std::io;
use std::time::{Duration, SystemTime};

/// Serialises `value` as Go's `json.MarshalIndent(value, "", "  ")` does.
pub fn to_go_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoPretty::default());
    // The monitoring types hold strings, integers, finite floats and maps with string keys:
    // serialising them into a Vec cannot fail. Should it ever, the caller gets what was
    // written and the handler's response shows it.
    if let Err(e) = value.serialize(&mut ser) {
        log::error!("Error marshaling monitoring response: {e}");
    }
    out
}

/// Serialises `value` as Go's `json.Marshal(value)` does: compact, Go's string escaping
/// (what nats-server sends in answer to the system account's requests).
pub fn to_go_json_compact<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoCompact);
    // As in `to_go_json`: cannot fail for these types; logged should it ever.
    if let Err(e) = value.serialize(&mut ser) {
        log::error!("Error marshaling monitoring response: {e}");
    }
    out
}

/// serde_json's compact layout with Go's string escaping.
struct GoCompact;

impl Formatter for GoCompact {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        go_write_string_fragment(writer, fragment)
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        go_write_char_escape(writer, char_escape)
    }
}

/// serde_json's pretty layout (two spaces) with Go's string escaping.
#[derive(Default)]
struct GoPretty<'a> {
    layout: PrettyFormatter<'a>,
}

impl Formatter for GoPretty<'_> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        go_write_string_fragment(writer, fragment)
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        go_write_char_escape(writer, char_escape)
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.layout.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.layout.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.layout.end_object_value(writer)
    }
}

/// A wall-clock time that serialises as Go's `time.Time` in UTC (see [`rfc3339_nano`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GoTime(pub SystemTime);

impl Serialize for GoTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&rfc3339_nano(self.0))
    }
}

/// `t` in UTC as Go's `time.RFC3339Nano`: `2026-11-30T06:06:04.79935965Z`; the fraction
/// loses its trailing zeros, and disappears when it is zero.
pub fn rfc3339_nano(t: SystemTime) -> String {
    let dt = time::OffsetDateTime::from(t).to_offset(time::UtcOffset::UTC);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    push_fraction(&mut s, u64::from(dt.nanosecond()), 9);
    s.push('Z');
    s
}

/// Appends `.ddd` for `frac` / 10^`digits`, without trailing zeros; nothing when zero
/// (Go's `fmtFrac`).
fn push_fraction(s: &mut String, frac: u64, digits: usize) {
    if frac == 0 {
        return;
    }
    let text = format!("{frac:0digits$}");
    s.push('.');
    s.push_str(text.trim_end_matches('0'));
}

/// `d` as Go's `time.Duration.String()`: `0s`, `850ns`, `595µs`, `1.234567ms`, `1.5s`,
/// `2m0s`, `1h2m3.004s`. Durations past Go's range (about 292 years) saturate.
pub fn go_duration(d: Duration) -> String {
    let u = u64::try_from(d.as_nanos()).unwrap_or(i64::MAX as u64);
    let mut s = String::new();
    if u == 0 {
        return "0s".into();
    }
    if u < 1_000_000_000 {
        let (unit, digits, scale) = if u < 1_000 {
            ("ns", 0, 1)
        } else if u < 1_000_000 {
            ("µs", 3, 1_000)
        } else {
            ("ms", 6, 1_000_000)
        };
        s.push_str(&(u / scale).to_string());
        push_fraction(&mut s, u % scale, digits);
        s.push_str(unit);
        return s;
    }
    let secs = u / 1_000_000_000;
    let (h, m, sec) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        s.push_str(&format!("{h}h{m}m"));
    } else if m > 0 {
        s.push_str(&format!("{m}m"));
    }
    s.push_str(&sec.to_string());
    push_fraction(&mut s, u % 1_000_000_000, 9);
    s.push('s');
    s
}

/// A round trip as nats-server shows it (`getRTT`): truncated to microseconds when between
/// 1µs and 1ms, then [`go_duration`]; `0s` when not measured yet.
pub fn go_rtt(rtt: Duration) -> String {
    let micro = Duration::from_micros(1);
    let milli = Duration::from_millis(1);
    if rtt > micro && rtt < milli {
        go_duration(Duration::from_micros(rtt.as_micros() as u64))
    } else {
        go_duration(rtt)
    }
}

/// `d` as nats-server's `myUptime`: whole seconds, with years (365 days), days, hours and
/// minutes as needed: `0s`, `45s`, `1m30s`, `1h2m3s`, `1d2h3m4s`, `1y0d0h0m1s`.
pub fn uptime(d: Duration) -> String {
    let tsecs = d.as_secs();
    let (tmins, thrs) = (tsecs / 60, tsecs / 3600);
    let (tdays, tyrs) = (thrs / 24, thrs / 24 / 365);
    if tyrs > 0 {
        format!(
            "{tyrs}y{}d{}h{}m{}s",
            tdays % 365,
            thrs % 24,
            tmins % 60,
            tsecs % 60
        )
    } else if tdays > 0 {
        format!("{tdays}d{}h{}m{}s", thrs % 24, tmins % 60, tsecs % 60)
    } else if thrs > 0 {
        format!("{thrs}h{}m{}s", tmins % 60, tsecs % 60)
    } else if tmins > 0 {
        format!("{tmins}m{}s", tsecs % 60)
    } else {
        format!("{tsecs}s")
    }
}

/// Serialises a float as Go's `encoding/json` does for the values monitoring shows: a whole
/// number without a fraction (`2`, not `2.0`), others in shortest form (`0.875`).
pub fn go_float<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        s.serialize_i64(*v as i64)
    } else if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        // Go refuses NaN and infinities; monitoring never produces them. Zero is harmless.
        s.serialize_i64(0)
    }
}

/// Whether a number is zero (for `skip_serializing_if`, Go's `omitempty`).
pub fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn durations_as_go_prints_them() {
        let cases: &[(u64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (850, "850ns"),
            (1_000, "1µs"),
            (1_500, "1.5µs"),
            (595_000, "595µs"),
            (1_234_567, "1.234567ms"),
            (999_999_999, "999.999999ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (62_000_000_000, "1m2s"),
            (120_000_000_000, "2m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_004_000_000, "1h2m3.004s"),
            (90_000_000_000_000, "25h0m0s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(go_duration(Duration::from_nanos(*nanos)), *want, "{nanos}");
        }
    }

    #[test]
    fn rtt_truncates_microseconds() {
        assert_eq!(go_rtt(Duration::ZERO), "0s");
        assert_eq!(go_rtt(Duration::from_nanos(595_123)), "595µs");
        assert_eq!(go_rtt(Duration::from_nanos(1_000)), "1µs");
        assert_eq!(go_rtt(Duration::from_nanos(999)), "999ns");
        assert_eq!(go_rtt(Duration::from_nanos(1_234_567)), "1.234567ms");
    }

    #[test]
    fn uptime_as_nats_server_prints_it() {
        let cases: &[(u64, &str)] = &[
            (0, "0s"),
            (59, "59s"),
            (90, "1m30s"),
            (3_723, "1h2m3s"),
            (93_784, "1d2h3m4s"),
            (365 * 86_400 + 1, "1y0d0h0m1s"),
        ];
        for (secs, want) in cases {
            assert_eq!(uptime(Duration::from_secs(*secs)), *want, "{secs}");
        }
        assert_eq!(uptime(Duration::from_millis(1_999)), "1s");
    }

    #[test]
    fn times_as_go_prints_them() {
        // Multiples of 100 ns: Windows' `SystemTime` has that resolution.
        let t = UNIX_EPOCH + Duration::new(1_796_018_764, 799_359_600);
        assert_eq!(rfc3339_nano(t), "2026-11-30T06:06:04.7993596Z");
        let t = UNIX_EPOCH + Duration::new(1_796_018_764, 0);
        assert_eq!(rfc3339_nano(t), "2026-11-30T06:06:04Z");
        let t = UNIX_EPOCH + Duration::new(0, 100);
        assert_eq!(rfc3339_nano(t), "1970-01-01T00:00:00.0000001Z");
    }

    #[test]
    fn json_as_go_marshal_indent() {
        #[derive(Serialize)]
        struct Empty {}
        #[derive(Serialize)]
        struct T {
            name: &'static str,
            #[serde(serialize_with = "go_float")]
            whole: f64,
            #[serde(serialize_with = "go_float")]
            frac: f64,
            empty: Empty,
            list: Vec<u8>,
            some: Vec<u8>,
        }
        let out = to_go_json(&T {
            name: "a<b>&c",
            whole: 2.0,
            frac: 0.875,
            empty: Empty {},
            list: vec![],
            some: vec![1, 2],
        });
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"name\": \"a\\u003cb\\u003e\\u0026c\",\n  \"whole\": 2,\n  \"frac\": 0.875,\n  \
             \"empty\": {},\n  \"list\": [],\n  \"some\": [\n    1,\n    2\n  ]\n}"
        );
    }

    #[test]
    fn quoting_as_go() {
        use crate::protocol::go_quote;
        assert_eq!(go_quote(b"abc"), "\"abc\"");
        assert_eq!(go_quote(b"a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\x01\"");
        assert_eq!(go_quote("µ".as_bytes()), "\"µ\"");
        assert_eq!(go_quote(b"a\xffb\n"), "\"a\\xffb\\n\"");
    }
}
