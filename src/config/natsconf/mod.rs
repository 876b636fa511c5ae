//! nats-server's configuration file syntax ("NATS conf"), read into a tree of values with
//! the file, line and column of every key and value.
//!
//! The syntax is the one of nats-server 2.9.10's `conf` package (`conf/lex.go`,
//! `conf/parse.go`), re-implemented from its behaviour:
//!
//! - `key: value`, `key = value` and `key value`; keys are unquoted (ending at a blank, `:`
//!   or `=`) or quoted with `"` or `'`;
//! - `{ }` maps and `[ ]` arrays, their items separated by newlines, `,` or `;` (maps);
//! - `#` and `//` comments;
//! - strings: `"double"` (escapes `\t \n \r \" \\ \xHH`), `'single'` (raw), or unquoted
//!   (`>`, `/tmp/x`, `id:xyz`, `127.0.0.1:4222`), ending at a blank, newline, `,`, `;`, `]`
//!   or `}`;
//! - integers, with nats-server's size suffixes (`1K` = 1,000, `1KB` = `1Ki` = 1,024, up to
//!   `E`/`EB`), floats, booleans (`true`/`false`/`yes`/`no`/`on`/`off`, any case), Zulu
//!   datetimes (`2006-01-02T15:04:05Z`), and `( ... )` blocks (raw multi-line strings);
//! - `include path` (relative to the including file; the included file has its own
//!   variables);
//! - `$NAME` references to a key defined earlier in the same or an enclosing map, else to
//!   the environment variable `NAME` (whose text is parsed as a value).
//!
//! Like nats-server, a later key of the same name replaces an earlier one, and a number
//! directly followed by `]` does not close its array (`[1, 2]` is an error: nats-server's
//! lexer reads `2]` as a string; `[1, 2 ]` is fine).
//!
//! The parser is recursive but bounded ([`MAX_DEPTH`] levels of nesting, [`MAX_INCLUDE_DEPTH`]
//! of includes), so no input can exhaust the stack; `fuzz/fuzz_targets/natsconf.rs` runs it
//! on arbitrary bytes.

mod de;
mod parse;

pub use de::{DeError, Deserializer};

use std::path::{Path, PathBuf};

/// Deepest nesting of maps and arrays accepted.
pub const MAX_DEPTH: usize = 64;

/// Deepest chain of `include`s accepted (nats-server has no limit and recurses forever on a
/// cycle).
pub const MAX_INCLUDE_DEPTH: usize = 10;

/// Where something is: the file (an index into [`Document::files`]), its 1-based line and
/// column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// Index into [`Document::files`].
    pub file: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where it starts.
    pub at: Loc,
}

/// A value of the configuration tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A quoted or unquoted string, a block, or an IP address such as `1.2.3.4:4222`.
    String(String),
    /// An integer, suffixes applied (`1MB` is 1048576).
    Integer(i64),
    /// A floating-point number.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A Zulu datetime, as written (`2016-05-04T18:53:41Z`).
    Datetime(String),
    /// An array.
    Array(Vec<Node>),
    /// A map, in the order keys were first written.
    Map(Vec<Entry>),
}

impl Value {
    /// A short name of the value's type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Integer(_) => "integer",
            Value::Float(_) => "float",
            Value::Bool(_) => "boolean",
            Value::Datetime(_) => "datetime",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
        }
    }
}

/// One `key: value` of a map.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, as written (nats-server matches top-level keys case-insensitively).
    pub key: String,
    /// Where the key is.
    pub key_at: Loc,
    /// The value.
    pub value: Node,
    /// Whether a `$reference` used this entry as a variable (nats-server does not report
    /// an unknown key that is used as a variable).
    pub used: bool,
}

/// A parsed file: its top-level map, and the files it was read from (the first one, then
/// every included file).
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The top-level keys.
    pub root: Vec<Entry>,
    /// File names, indexed by [`Loc::file`]; the first is the file parsed (or the name given
    /// to [`parse_str`]).
    pub files: Vec<PathBuf>,
}

impl Document {
    /// `file:line:col`, as nats-server prints positions.
    pub fn position(&self, at: Loc) -> String {
        let file = self
            .files
            .get(at.file)
            .map_or(Path::new("?"), |p| p.as_path());
        format!("{}:{}:{}", file.display(), at.line, at.col)
    }
}

/// A syntax error, an unresolved variable, or an include that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// `file:line:col: what` (nested for errors inside included files).
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses the file at `path` (includes are read relative to its directory).
pub fn parse_file(path: &Path) -> Result<Document, ParseError> {
    let text = std::fs::read_to_string(path).map_err(|e| ParseError {
        message: format!("error opening config file {}: {e}", path.display()),
    })?;
    parse::parse(&text, path.to_path_buf(), true)
}

/// Parses `text`, named `name` in errors; includes are read relative to `name`'s directory
/// (the current directory if it has none).
pub fn parse_str(text: &str, name: &Path) -> Result<Document, ParseError> {
    parse::parse(text, name.to_path_buf(), true)
}

/// Parses `text` without following `include`s (each one is an error): for fuzzing, where
/// arbitrary input must not read arbitrary files.
pub fn parse_str_no_include(text: &str) -> Result<Document, ParseError> {
    parse::parse(text, PathBuf::from("<input>"), false)
}

#[cfg(test)]
mod tests;
