//! The documentation kept in step with the option table (tests only): the README's table
//! of options is generated from it (`BEAVER_UPDATE_DOCS=1 cargo test --lib config::docs`
//! rewrites it), and the repository's `Config.toml` must list every key, top-level (from the
//! table) and in the blocks (from their readers), with the defaults.

use super::cli::{option_help, CONTROL};
use super::file::{
    authorization::FileAuthorization, cluster::FileCluster, jetstream::FileJetStreamBlock,
    leafnodes::FileLeafNodes, tls::FileTls, websocket::FileWebSocket,
};
use super::options::{Arg, Flag, Opt, Sets, Value, OPTIONS};
use super::Config;
use serde::de::{self, DeserializeOwned, IntoDeserializer, MapAccess, Visitor};
use std::cell::Cell;

const README_BEGIN: &str = "<!-- options: generated from the option table \
     (src/config/options/table.rs); `BEAVER_UPDATE_DOCS=1 cargo test --lib config::docs` \
     rewrites it -->\n";
const README_END: &str = "<!-- end of options -->";

/// A flag as the README shows it: `-p`, `--port PORT`, then its aliases.
fn flag_cell(short: Option<char>, long: Option<&str>, aliases: &[&str], arg: Arg) -> String {
    let value = match arg {
        Arg::Switch => String::new(),
        Arg::Bool => "[=BOOL]".into(),
        Arg::Text(v) | Arg::Path(v) | Arg::Int(v, _) => format!(" {v}"),
    };
    short
        .map(|s| format!("`-{s}`"))
        .into_iter()
        .chain(long.map(|l| format!("`--{l}{value}`")))
        .chain(aliases.iter().map(|a| format!("`--{a}`")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn flag_of(f: &Flag) -> String {
    flag_cell(f.short, Some(f.long), f.aliases, f.arg())
}

/// The key column: the name, nats-server's aliases, and how a block is written.
fn key_cell(o: &Opt) -> String {
    let mut cell = format!("`{}`", o.name);
    if !o.aliases.is_empty() {
        let aliases: Vec<String> = o.aliases.iter().map(|a| format!("`{a}`")).collect();
        cell.push_str(&format!(" ({})", aliases.join(", ")));
    }
    if matches!(o.value, Value::Block(_)) {
        cell.push_str(&format!(" block, `[{}]`", o.name));
    }
    cell
}

/// The README's table of options: one row per option (with the flags that set it), one per
/// flag of a block, then the flags that are not options.
pub(super) fn readme_table() -> String {
    let mut out = String::from("| key | flag | default | meaning |\n| --- | --- | --- | --- |\n");
    let mut row = |cells: [String; 4]| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    };
    for o in OPTIONS {
        let option_flags: Vec<String> = o
            .flags
            .iter()
            .filter(|f| matches!(f.sets, Sets::Option(_)))
            .map(flag_of)
            .collect();
        let default = o.default_toml().map_or(String::new(), |d| format!("`{d}`"));
        row([
            key_cell(o),
            option_flags.join(", "),
            default,
            o.doc.to_owned(),
        ]);
        for f in o.flags {
            if let Sets::Block(help, _) = f.sets {
                row([String::new(), flag_of(f), String::new(), help.to_owned()]);
            }
        }
    }
    for c in CONTROL {
        let flag = flag_cell(c.short, c.long, &[], c.arg);
        row([String::new(), flag, String::new(), c.help.to_owned()]);
    }
    row([
        String::new(),
        "`-h`, `--help`".into(),
        String::new(),
        "Print help".into(),
    ]);
    out
}

#[test]
fn readme_table_is_the_option_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let (before, rest) = readme
        .split_once(README_BEGIN)
        .expect("README's begin marker");
    let (_, after) = rest.split_once(README_END).expect("README's end marker");
    let expected = format!(
        "{before}{README_BEGIN}{}{README_END}{after}",
        readme_table()
    );
    if readme != expected {
        if std::env::var("BEAVER_UPDATE_DOCS").as_deref() == Ok("1") {
            std::fs::write(path, expected).expect("write README.md");
        } else {
            panic!(
                "README.md's table of options differs from the option table: run \
                 `BEAVER_UPDATE_DOCS=1 cargo test --lib config::docs`"
            );
        }
    }
}

#[test]
fn help_shows_every_option_flag_with_its_doc_line() {
    let help = super::Cli::command().render_help().to_string();
    for o in OPTIONS {
        for f in o.flags {
            assert!(help.contains(&format!("--{}", f.long)), "{}", f.long);
            if let Sets::Option(_) = f.sets {
                assert!(help.contains(&option_help(o)), "{}:\n{help}", o.name);
            }
        }
    }
}

/// Records a struct's fields and feeds it keys (each with the value `None`), to learn a
/// block reader's keys: serde names the field of a key given twice (`duplicate field
/// `password``), which tells an alias (`pass`) from its field.
struct Probe<'a> {
    keys: &'a [&'static str],
    fields: &'a Cell<&'static [&'static str]>,
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(ProbeKeys {
            keys: self.keys.iter(),
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.fields.set(fields);
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct ProbeKeys<'a> {
    keys: std::slice::Iter<'a, &'static str>,
}

impl<'de> MapAccess<'de> for ProbeKeys<'_> {
    type Error = de::value::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.keys
            .next()
            .map(|k| seed.deserialize((*k).into_deserializer()))
            .transpose()
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        // Every field of a block is optional: a unit deserializer reads as `None`.
        seed.deserialize(().into_deserializer())
    }
}

/// The fields of the block read by `T`, each once (aliases left out).
fn block_fields<T: DeserializeOwned>() -> Vec<String> {
    let fields = Cell::new(&[][..]);
    let _ = T::deserialize(Probe {
        keys: &[],
        fields: &fields,
    });
    let mut out: Vec<String> = Vec::new();
    for key in fields.get() {
        let twice = [*key, *key];
        let e = T::deserialize(Probe {
            keys: &twice,
            fields: &fields,
        });
        let field = e
            .err()
            .and_then(|e| e.to_string().split('`').nth(1).map(str::to_owned))
            .unwrap_or_else(|| panic!("{key}: no duplicate-field error"));
        if !out.contains(&field) {
            out.push(field);
        }
    }
    out
}

#[test]
fn block_fields_leave_out_aliases() {
    let fields = block_fields::<FileAuthorization>();
    assert!(fields.contains(&"password".to_owned()), "{fields:?}");
    assert!(!fields.contains(&"pass".to_owned()), "{fields:?}");
}

#[test]
fn repository_config_toml_lists_the_defaults() {
    let text = include_str!("../../Config.toml");
    assert_eq!(Config::from_toml(text).unwrap(), Config::default());
    // Every key is there, set or commented out: `key = ...`, or `[key]` for a block.
    let documented = |key: &str| {
        text.lines().any(|l| {
            let l = l.trim_start_matches("# ");
            l.starts_with(&format!("{key} ="))
                || l.starts_with(&format!("[{key}]"))
                || l.starts_with(&format!("[{key}."))
        })
    };
    for o in OPTIONS {
        assert!(documented(o.name), "Config.toml documents {}", o.name);
    }
    for (block, fields) in [
        ("authorization", block_fields::<FileAuthorization>()),
        ("tls", block_fields::<FileTls>()),
        ("cluster", block_fields::<FileCluster>()),
        ("jetstream", block_fields::<FileJetStreamBlock>()),
        ("leafnodes", block_fields::<FileLeafNodes>()),
        ("websocket", block_fields::<FileWebSocket>()),
    ] {
        assert!(fields.len() > 3, "{block}: {fields:?}");
        for f in fields {
            assert!(documented(&f), "Config.toml documents {block}.{f}");
        }
    }
}
