//! Reading a configuration tree with serde: the same `#[derive(Deserialize)]` structs that
//! read `Config.toml` read a nats-server config file, so one code path validates both.
//!
//! `toml::Spanned<T>` fields work too: their span is an index into the table of locations
//! the deserializer keeps ([`Deserializer::location`]), not a byte range, so errors found
//! after deserializing can still name the file and line.

use super::{Entry, Loc, Node, Value};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;

/// The struct name `toml::Spanned` (serde_spanned) asks deserializers for; a unit test
/// checks that `Spanned` still deserializes through it.
const SPANNED: &str = "$__serde_spanned_private_Spanned";

/// A deserialization error, with the key and place it concerns when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeError {
    /// What is wrong.
    pub message: String,
    /// The key being read, if any (innermost).
    pub key: Option<String>,
    /// Where, if known.
    pub at: Option<Loc>,
}

impl std::fmt::Display for DeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            key: None,
            at: None,
        }
    }
}

impl DeError {
    fn locate(mut self, key: Option<&str>, at: Loc) -> Self {
        // The innermost key and place win: they are set first, as the error unwinds.
        if self.at.is_none() {
            self.at = Some(at);
        }
        if self.key.is_none() {
            self.key = key.map(str::to_owned);
        }
        self
    }
}

/// Deserializes [`Node`]s, recording the location of every `Spanned` value it produces.
#[derive(Default)]
pub struct Deserializer {
    locations: RefCell<Vec<Loc>>,
}

impl Deserializer {
    /// A deserializer with an empty location table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Deserializes `T` from a map's entries (a document's root, or a nested map).
    pub fn entries<'de, T: de::Deserialize<'de>>(&self, entries: &[Entry]) -> Result<T, DeError> {
        T::deserialize(MapDe {
            de: self,
            entries,
            at: None,
            fields: None,
        })
    }

    /// Where the value with span `span` (as returned by `Spanned::span`) was written.
    pub fn location(&self, span: std::ops::Range<usize>) -> Option<Loc> {
        self.locations.borrow().get(span.start).copied()
    }
}

#[derive(Clone, Copy)]
struct NodeDe<'a> {
    de: &'a Deserializer,
    node: &'a Node,
}

#[derive(Clone, Copy)]
struct MapDe<'a> {
    de: &'a Deserializer,
    entries: &'a [Entry],
    at: Option<Loc>,
    /// The fields (aliases included) of the struct being read, if it is one: keys are then
    /// matched to them case-insensitively, as nats-server does at every level.
    fields: Option<&'static [&'static str]>,
}

impl<'de> de::Deserializer<'de> for MapDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let r = visitor.visit_map(Entries {
            de: self.de,
            iter: self.entries.iter(),
            current: None,
            fields: self.fields,
        });
        match self.at {
            Some(at) => r.map_err(|e| e.locate(None, at)),
            None => r,
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        MapDe {
            fields: Some(fields),
            ..self
        }
        .deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct Entries<'a> {
    de: &'a Deserializer,
    iter: std::slice::Iter<'a, Entry>,
    current: Option<&'a Entry>,
    fields: Option<&'static [&'static str]>,
}

/// The field of `fields` that `key` names, ignoring case.
fn field_of(fields: &'static [&'static str], key: &str) -> Option<&'static str> {
    fields.iter().copied().find(|f| f.eq_ignore_ascii_case(key))
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        loop {
            let Some(e) = self.iter.next() else {
                return Ok(None);
            };
            let key = match self.fields {
                // A map of names (`accounts { A {...} }`): an entry a `$reference` used is a
                // variable, not a name, as nats-server skips it.
                None if e.used => continue,
                None => e.key.as_str(),
                Some(fields) => match field_of(fields, &e.key) {
                    // A key given again later (in another case: `User` and `user`) takes
                    // its last value, as at top level.
                    Some(f)
                        if self
                            .iter
                            .as_slice()
                            .iter()
                            .any(|later| field_of(fields, &later.key) == Some(f)) =>
                    {
                        continue
                    }
                    Some(f) => f,
                    // An unknown key that a `$reference` used is a variable, not an option
                    // (nats-server allows it at any depth).
                    None if e.used => continue,
                    None => e.key.as_str(),
                },
            };
            self.current = Some(e);
            return seed
                .deserialize(key.into_deserializer())
                .map(Some)
                .map_err(|err: DeError| err.locate(Some(&e.key), e.key_at));
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some(e) = self.current.take() else {
            return Err(de::Error::custom("value without a key"));
        };
        seed.deserialize(NodeDe {
            de: self.de,
            node: &e.value,
        })
        .map_err(|err| err.locate(Some(&e.key), e.value.at))
    }
}

struct Items<'a> {
    de: &'a Deserializer,
    iter: std::slice::Iter<'a, Node>,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.iter.next() {
            None => Ok(None),
            Some(node) => seed
                .deserialize(NodeDe { de: self.de, node })
                .map(Some)
                .map_err(|e| e.locate(None, node.at)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// The three fields of a `Spanned` value: start, end, value.
struct SpannedAccess<'a> {
    node: NodeDe<'a>,
    fields: &'static [&'static str],
    index: usize,
    step: usize,
}

impl<'de> MapAccess<'de> for SpannedAccess<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match self.fields.get(self.step) {
            None => Ok(None),
            Some(f) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(f))
                .map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let step = self.step;
        self.step += 1;
        match step {
            0 => seed.deserialize(self.index.into_deserializer()),
            1 => seed.deserialize((self.index + 1).into_deserializer()),
            _ => seed.deserialize(self.node),
        }
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let at = self.node.at;
        let r = match &self.node.value {
            Value::String(s) => visitor.visit_str(s),
            // No option takes a datetime (nats-server fails on one where a string is due).
            Value::Datetime(s) => Err(de::Error::invalid_type(
                de::Unexpected::Other(&format!("datetime {s}")),
                &visitor,
            )),
            Value::Integer(n) => visitor.visit_i64(*n),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Array(items) => visitor.visit_seq(Items {
                de: self.de,
                iter: items.iter(),
            }),
            Value::Map(entries) => {
                return MapDe {
                    de: self.de,
                    entries,
                    at: Some(at),
                    fields: None,
                }
                .deserialize_any(visitor)
            }
        };
        r.map_err(|e| e.locate(None, at))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if name == SPANNED && fields.len() == 3 {
            let index = {
                let mut locations = self.de.locations.borrow_mut();
                locations.push(self.node.at);
                locations.len() - 1
            };
            return visitor.visit_map(SpannedAccess {
                node: self,
                fields,
                index,
                step: 0,
            });
        }
        match &self.node.value {
            Value::Map(entries) => MapDe {
                de: self.de,
                entries,
                at: Some(self.node.at),
                fields: Some(fields),
            }
            .deserialize_any(visitor),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::String(s) => visitor
                .visit_enum(s.as_str().into_deserializer())
                .map_err(|e: DeError| e.locate(None, self.node.at)),
            other => Err(DeError {
                message: format!("expected a string, found {}", other.kind()),
                key: None,
                at: Some(self.node.at),
            }),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_str;
    use super::*;
    use serde::Deserialize;
    use std::path::Path;
    use toml::Spanned;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        user: String,
        #[serde(default)]
        list: Vec<String>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Top {
        port: Spanned<i64>,
        name: Option<String>,
        auth: Option<Inner>,
        flag: Option<bool>,
    }

    #[test]
    fn structs_and_spans() {
        let doc = parse_str(
            "port: 4222\nname = x\nauth {\n  user: bob\n  list: [a, b]\n}\nflag: on\n",
            Path::new("t.conf"),
        )
        .unwrap();
        let de = Deserializer::new();
        let top: Top = de.entries(&doc.root).unwrap();
        assert_eq!(*top.port.get_ref(), 4222);
        assert_eq!(de.location(top.port.span()).map(|l| l.line), Some(1));
        assert_eq!(top.name.as_deref(), Some("x"));
        let auth = top.auth.unwrap();
        assert_eq!(auth.user, "bob");
        assert_eq!(auth.list, ["a", "b"]);
        assert_eq!(top.flag, Some(true));
    }

    #[test]
    fn errors_carry_key_and_line() {
        let doc = parse_str(
            "port: 1\nauth {\n  user: bob\n  nope: 1\n}\n",
            Path::new("t.conf"),
        )
        .unwrap();
        let e = Deserializer::new().entries::<Top>(&doc.root).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("nope"), "{e:?}");
        assert_eq!(e.at.map(|l| l.line), Some(4), "{e:?}");
        let doc = parse_str("port: x\n", Path::new("t.conf")).unwrap();
        let e = Deserializer::new().entries::<Top>(&doc.root).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("port"), "{e:?}");
        assert_eq!(e.at.map(|l| l.line), Some(1), "{e:?}");
    }
}
