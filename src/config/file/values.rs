//! The scalar value types of the file formats, read with serde: sizes, durations and
//! `host:port` addresses. Each keeps a parse error for later, so that it is reported with
//! the key and line (`file::Apply`), as nats-server reports a bad value.

use crate::config::units::{duration_from_secs, parse_duration, parse_size};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::time::Duration;

/// `listen`/`http`: a port, or `host:port` (`[::1]:4222` for IPv6), as nats-server's
/// `parseListen` accepts.
pub(crate) struct HostPort(pub(crate) Result<(Option<String>, i64), String>);

impl<'de> Deserialize<'de> for HostPort {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HostPort;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a port or \"host:port\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HostPort, E> {
                Ok(HostPort(Ok((None, v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HostPort, E> {
                Ok(HostPort(
                    i64::try_from(v)
                        .map(|v| (None, v))
                        .map_err(|_| format!("{v} is too large")),
                ))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HostPort, E> {
                Ok(HostPort(split_host_port(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// Splits `host:port` like Go's `net.SplitHostPort` (an IPv6 host in brackets).
fn split_host_port(v: &str) -> Result<(Option<String>, i64), String> {
    let bad = || format!("could not parse address string {v:?}");
    let (host, port) = v.rsplit_once(':').ok_or_else(bad)?;
    let host = match host.strip_prefix('[') {
        Some(h) => h.strip_suffix(']').ok_or_else(bad)?,
        None if host.contains(':') => return Err(bad()),
        None => host,
    };
    let port = port
        .parse::<i64>()
        .map_err(|_| format!("could not parse port {port:?}"))?;
    Ok((Some(host.to_owned()), port))
}

/// A size: an integer number of bytes or a string with a suffix (`"1MB"`).
pub(crate) struct Size(pub(crate) Result<u64, String>);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a size: bytes as an integer, or a string like \"1MB\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                Ok(Size(
                    u64::try_from(v).map_err(|_| format!("{v} is negative")),
                ))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(Ok(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                Ok(Size(parse_size(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration: seconds as a number, or a string like `"2m"` or `"500ms"`.
pub(crate) struct Seconds(pub(crate) Result<Duration, String>);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration: seconds as a number, or a string like \"2m\" or \"500ms\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Seconds, E> {
                Ok(Seconds(duration_from_secs(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Seconds, E> {
                Ok(Seconds(duration_from_secs(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Seconds, E> {
                Ok(Seconds(duration_from_secs(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Seconds, E> {
                Ok(Seconds(parse_duration(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// serde's words for Rust types, in the file's terms: `invalid type: string "abc", expected
/// i64` becomes `..., expected an integer`.
pub(crate) fn plain_words(message: &str) -> String {
    let mut out = message.to_owned();
    for (rust, words) in [
        ("i8", "an integer"),
        ("i16", "an integer"),
        ("i32", "an integer"),
        ("i64", "an integer"),
        ("u8", "a non-negative integer"),
        ("u16", "a non-negative integer"),
        ("u32", "a non-negative integer"),
        ("u64", "a non-negative integer"),
        ("usize", "a non-negative integer"),
        ("f32", "a number"),
        ("f64", "a number"),
    ] {
        let from = format!("expected {rust}");
        if out.ends_with(&from) || out.contains(&format!("{from}\n")) {
            out = out.replace(&from, &format!("expected {words}"));
        }
    }
    out
}
