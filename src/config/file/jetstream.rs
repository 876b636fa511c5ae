//! The `jetstream` key (nats-server's): `jetstream: enabled` (or `true`, `disabled`,
//! `false`), or a block `{ store_dir, max_memory_store, max_file_store, sync_interval }`.

use super::values::{Seconds, Size};
use super::Apply;
use crate::config::{ConfigError, JetStream, JetStreamSync};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;

/// `jetstream`: a switch or a block.
pub(crate) enum FileJetStream {
    /// `enabled`/`true` or `disabled`/`false` (an unknown word is kept for the error).
    Switch(Result<bool, String>),
    /// The block (which turns JetStream on unless it says `enabled: false`).
    Block(Box<FileJetStreamBlock>),
}

/// The `jetstream { ... }` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileJetStreamBlock {
    enabled: Option<bool>,
    #[serde(alias = "storedir")]
    store_dir: Option<String>,
    #[serde(alias = "max_mem_store", alias = "max_mem", alias = "max_memory")]
    max_memory_store: Option<Spanned<Size>>,
    #[serde(alias = "max_file", alias = "max_store")]
    max_file_store: Option<Spanned<Size>>,
    sync_interval: Option<Spanned<SyncInterval>>,
    /// nats-server's JetStream domain: accepted, and refused if set (beaver has none).
    domain: Option<Spanned<String>>,
}

/// `sync_interval`: a duration, or `always`.
pub(crate) enum SyncInterval {
    Always,
    Every(Seconds),
}

impl<'de> Deserialize<'de> for SyncInterval {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SyncInterval;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration (\"2m\") or \"always\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SyncInterval, E> {
                if v.eq_ignore_ascii_case("always") {
                    return Ok(SyncInterval::Always);
                }
                Ok(SyncInterval::Every(Seconds(
                    crate::config::units::parse_duration(v),
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SyncInterval, E> {
                Seconds::deserialize(de::value::I64Deserializer::new(v)).map(SyncInterval::Every)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SyncInterval, E> {
                Seconds::deserialize(de::value::U64Deserializer::new(v)).map(SyncInterval::Every)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SyncInterval, E> {
                Seconds::deserialize(de::value::F64Deserializer::new(v)).map(SyncInterval::Every)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for FileJetStream {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileJetStream;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`enabled`, `disabled`, a boolean, or a block")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<FileJetStream, E> {
                Ok(FileJetStream::Switch(Ok(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FileJetStream, E> {
                // nats-server's words (`parseJetStream`): anything else is an error.
                Ok(FileJetStream::Switch(
                    match v.to_ascii_lowercase().as_str() {
                        "enabled" | "enable" | "true" | "yes" | "on" => Ok(true),
                        "disabled" | "disable" | "false" | "no" | "off" => Ok(false),
                        _ => Err(format!("expected `enabled` or `disabled`, got {v:?}")),
                    },
                ))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FileJetStream, A::Error> {
                let block =
                    FileJetStreamBlock::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(FileJetStream::Block(Box::new(block)))
            }
        }
        d.deserialize_any(V)
    }
}

/// Applies `jetstream`: on or off, and the block's settings.
pub(super) fn apply_jetstream(
    cx: &mut Apply,
    v: Spanned<FileJetStream>,
) -> Result<(), ConfigError> {
    let span = v.span();
    let block = match v.into_inner() {
        FileJetStream::Switch(Ok(on)) => {
            cx.config.jetstream = on.then(JetStream::default);
            return Ok(());
        }
        FileJetStream::Switch(Err(m)) => return Err(cx.err("jetstream", span, m)),
        FileJetStream::Block(b) => b,
    };
    if block.enabled == Some(false) {
        cx.config.jetstream = None;
        return Ok(());
    }
    let mut js = JetStream {
        store_dir: block.store_dir.map(PathBuf::from),
        ..JetStream::default()
    };
    let size = |cx: &Apply, key: &str, v: Spanned<Size>| {
        let span = v.span();
        v.into_inner().0.map_err(|m| cx.err(key, span, m))
    };
    if let Some(v) = block.max_memory_store {
        js.max_memory_store = Some(size(cx, "jetstream.max_memory_store", v)?);
    }
    if let Some(v) = block.max_file_store {
        js.max_file_store = Some(size(cx, "jetstream.max_file_store", v)?);
    }
    if let Some(v) = block.sync_interval {
        let vspan = v.span();
        js.sync = match v.into_inner() {
            SyncInterval::Always => JetStreamSync::Always,
            SyncInterval::Every(s) => {
                let (d, _) = cx.duration("jetstream.sync_interval", Spanned::new(vspan, s))?;
                JetStreamSync::Interval(d)
            }
        };
    }
    if let Some(d) = block.domain {
        if !d.get_ref().is_empty() {
            return Err(cx.err(
                "jetstream.domain",
                d.span(),
                "JetStream domains are not supported by beaver yet".into(),
            ));
        }
    }
    cx.config.jetstream = Some(js);
    Ok(())
}
