//! The recursive-descent reader behind [`super::parse_file`]: one pass over the characters,
//! following the states of nats-server's `conf/lex.go` (which ends a value where, and how
//! values are typed) and `conf/parse.go` (suffixes, variables, includes).

use super::{Document, Entry, Loc, Node, ParseError, Value, MAX_DEPTH, MAX_INCLUDE_DEPTH};
use std::path::{Path, PathBuf};

mod scalars;

/// Parses `text` read from `path` into a document.
pub(super) fn parse(
    text: &str,
    path: PathBuf,
    follow_includes: bool,
) -> Result<Document, ParseError> {
    let mut files = vec![path];
    let root = parse_text(text, 0, &mut files, follow_includes, 0)?;
    Ok(Document { root, files })
}

/// Parses one file's text (`files[file]`) into its top-level entries.
fn parse_text(
    text: &str,
    file: usize,
    files: &mut Vec<PathBuf>,
    follow_includes: bool,
    include_depth: usize,
) -> Result<Vec<Entry>, ParseError> {
    // nats-server's lexer reads a NUL as the end of the input, wherever it is, and then
    // fails with "Unexpected EOF." on its line. A file of NULs (as a crash can leave one)
    // is therefore refused, never read as an empty configuration: it must not start a
    // server without the authentication the real file had.
    let nul = text.find('\0');
    let mut p = Parser {
        s: text.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        file,
        files,
        scopes: Vec::new(),
        depth: 0,
        follow_includes,
        include_depth,
    };
    if let Some(at) = nul {
        let before = &text[..at];
        p.line = 1 + before.matches('\n').count();
        p.col = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
        return Err(p.err("Unexpected EOF. (a NUL byte: the file is not a text file)"));
    }
    p.top()
}

/// Where a key/value pair is being read: at top level or inside a `{ }` map.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    Map,
}

/// What reading one entry of a map found.
enum Step {
    /// An entry (or include) was read.
    Entry,
    /// The map ended (`}`) where a value was expected: nats-server drops the key.
    MapEnd,
}

struct Parser<'f> {
    s: Vec<char>,
    pos: usize,
    line: usize,
    col: usize,
    file: usize,
    files: &'f mut Vec<PathBuf>,
    /// The maps being read, outermost first: where `$variables` are looked up.
    scopes: Vec<Vec<Entry>>,
    depth: usize,
    follow_includes: bool,
    include_depth: usize,
}

type R<T> = Result<T, ParseError>;

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_nl(c: char) -> bool {
    c == '\n' || c == '\r'
}

fn is_suffix(c: char) -> bool {
    matches!(
        c,
        'k' | 'K' | 'm' | 'M' | 'g' | 'G' | 't' | 'T' | 'p' | 'P' | 'e' | 'E'
    )
}

/// Shows a character in an error message as nats-server does (a newline as `\n`).
fn show(c: Option<char>) -> String {
    match c {
        None => "EOF".into(),
        Some('\n') => "\\n".into(),
        Some(c) => c.to_string(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.s.get(self.pos + n).copied()
    }

    fn advance(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn loc(&self) -> Loc {
        Loc {
            file: self.file,
            line: self.line,
            col: self.col,
        }
    }

    fn err_at(&self, at: Loc, msg: impl std::fmt::Display) -> ParseError {
        let file = self
            .files
            .get(at.file)
            .map_or_else(|| "?".into(), |p| p.display().to_string());
        ParseError {
            message: format!("{file}:{}:{}: {msg}", at.line, at.col),
        }
    }

    fn err(&self, msg: impl std::fmt::Display) -> ParseError {
        self.err_at(self.loc(), msg)
    }

    fn text(&self, from: usize) -> String {
        self.s[from..self.pos].iter().collect()
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if is_nl(c) {
                break;
            }
            self.advance();
        }
    }

    /// At `#` or `//`: skips the comment (not its newline) and returns true.
    fn comment(&mut self) -> bool {
        match (self.peek(), self.peek_at(1)) {
            (Some('#'), _) | (Some('/'), Some('/')) => {
                self.skip_comment();
                true
            }
            _ => false,
        }
    }

    fn top(&mut self) -> R<Vec<Entry>> {
        self.scopes.push(Vec::new());
        loop {
            match self.peek() {
                None => break,
                // nats-server ignores braces around the whole file.
                Some(c) if c.is_whitespace() || c == '{' || c == '}' => {
                    self.advance();
                }
                Some('#') | Some('/') if self.comment() => {}
                Some('/') => return Err(self.err("unexpected '/'")),
                Some(_) => {
                    self.entry(Ctx::Top)?;
                    self.top_value_end()?;
                }
            }
        }
        Ok(self.scopes.pop().unwrap_or_default())
    }

    fn top_value_end(&mut self) -> R<()> {
        loop {
            match self.peek() {
                Some(c) if is_blank(c) => {
                    self.advance();
                }
                Some('#') | Some('/') if self.comment() => return Ok(()),
                // A lone '/' is skipped like a blank (nats-server's lexer falls through).
                Some('/') => {
                    self.advance();
                }
                None => return Ok(()),
                Some(c) if is_nl(c) || c == ';' || c == ',' || c == '}' => {
                    self.advance();
                    return Ok(());
                }
                c => {
                    return Err(self.err(format!(
                        "Expected a top-level value to end with a new line, comment or EOF, \
                         but got '{}' instead.",
                        show(c)
                    )))
                }
            }
        }
    }

    /// Reads `key [sep] value` (or `include path`) and stores it in the innermost map.
    fn entry(&mut self, ctx: Ctx) -> R<Step> {
        let key_at = self.loc();
        let (key, quoted) = match self.peek() {
            Some(q @ ('"' | '\'')) => {
                self.advance();
                let start = self.pos;
                loop {
                    match self.advance() {
                        None => return Err(self.err("Unexpected EOF processing quoted key.")),
                        Some(c) if c == q => break,
                        Some(_) => {}
                    }
                }
                (self.s[start..self.pos - 1].iter().collect::<String>(), true)
            }
            Some(c @ (':' | '=')) => {
                return Err(self.err(format!("Unexpected key separator '{c}'")))
            }
            _ => {
                let start = self.pos;
                while let Some(c) = self.peek() {
                    if c.is_whitespace() || c == ':' || c == '=' {
                        break;
                    }
                    self.advance();
                }
                if ctx == Ctx::Map && self.peek().is_none() {
                    return Err(self.err("Unexpected EOF processing map key."));
                }
                (self.text(start), false)
            }
        };
        if !quoted
            && key.eq_ignore_ascii_case("include")
            && self.peek().is_some_and(char::is_whitespace)
        {
            self.include(key_at)?;
            return Ok(Step::Entry);
        }
        // After the key: blanks and newlines, then an optional ':' or '='.
        while self.peek().is_some_and(char::is_whitespace) {
            self.advance();
        }
        let sep = matches!(self.peek(), Some(':' | '='));
        if sep {
            self.advance();
        }
        match ctx {
            Ctx::Top => {
                if sep {
                    while self.peek().is_some_and(is_blank) {
                        self.advance();
                    }
                } else if self.peek().is_none() {
                    return Ok(Step::Entry); // a last key without a value is dropped
                }
            }
            Ctx::Map => {
                while self.peek().is_some_and(char::is_whitespace) {
                    self.advance();
                }
                match self.peek() {
                    Some(',') => return Err(self.err("Unexpected map value terminator ','.")),
                    Some('}') => {
                        self.advance();
                        return Ok(Step::MapEnd);
                    }
                    None => return Err(self.err("Unexpected EOF processing map.")),
                    _ => {}
                }
            }
        }
        let value = self.value()?;
        self.set(key, key_at, value);
        Ok(Step::Entry)
    }

    /// Stores an entry in the innermost map; a key written again replaces its value (Go map
    /// semantics).
    fn set(&mut self, key: String, key_at: Loc, value: Node) {
        self.set_entry(Entry {
            key,
            key_at,
            value,
            used: false,
        });
    }

    fn set_entry(&mut self, entry: Entry) {
        let Some(scope) = self.scopes.last_mut() else {
            return;
        };
        match scope.iter_mut().find(|e| e.key == entry.key) {
            Some(old) => *old = entry,
            None => scope.push(entry),
        }
    }

    fn value(&mut self) -> R<Node> {
        let at = self.loc();
        let value = match self.peek() {
            // `key:` at the very end: nats-server's lexer yields an empty string.
            None => Value::String(String::new()),
            Some('[') => self.array()?,
            Some('{') => self.map()?,
            Some('\'') => {
                self.advance();
                let start = self.pos;
                loop {
                    match self.advance() {
                        None => return Err(self.err("Unexpected EOF.")),
                        Some('\'') => break,
                        Some(_) => {}
                    }
                }
                Value::String(self.s[start..self.pos - 1].iter().collect())
            }
            Some('"') => {
                self.advance();
                self.quoted()?
            }
            Some('-') => {
                self.advance();
                self.negative(at)?
            }
            Some('(') => {
                self.advance();
                self.block()?
            }
            Some(c) if c.is_ascii_digit() => self.number(at)?,
            Some('.') => return Err(self.err("Floats must start with a digit")),
            Some(c) if is_nl(c) => return Err(self.err("Expected value but found new line")),
            Some(_) => return self.unquoted(self.pos, at),
        };
        Ok(Node { value, at })
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn array(&mut self) -> R<Value> {
        self.advance(); // '['
        self.enter()?;
        let mut items = Vec::new();
        'values: loop {
            // Before a value.
            loop {
                match self.peek() {
                    Some(c) if c.is_whitespace() => {
                        self.advance();
                    }
                    Some('#') | Some('/') if self.comment() => {}
                    Some('/') | Some(',') => {
                        return Err(self.err("Unexpected array value terminator ','."))
                    }
                    Some(']') => {
                        self.advance();
                        break 'values;
                    }
                    None => return Err(self.err("Unexpected EOF processing array.")),
                    Some(_) => break,
                }
            }
            items.push(self.value()?);
            // After a value.
            loop {
                match self.peek() {
                    Some(c) if is_blank(c) => {
                        self.advance();
                    }
                    Some('#') | Some('/') if self.comment() => {}
                    Some(c) if c == '/' || c == ',' || is_nl(c) => {
                        self.advance();
                        continue 'values;
                    }
                    Some(']') => {
                        self.advance();
                        break 'values;
                    }
                    c => {
                        return Err(self.err(format!(
                            "Expected an array value terminator ',' or an array terminator \
                             ']', but got '{}' instead.",
                            show(c)
                        )))
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn map(&mut self) -> R<Value> {
        self.advance(); // '{'
        self.enter()?;
        self.scopes.push(Vec::new());
        'keys: loop {
            // Before a key.
            loop {
                match self.peek() {
                    Some(c @ (':' | '=')) => {
                        return Err(self.err(format!("Unexpected key separator '{c}'.")))
                    }
                    Some(']') => return Err(self.err("Unexpected array end ']' processing map.")),
                    Some(c) if c.is_whitespace() => {
                        self.advance();
                    }
                    Some('}') => {
                        self.advance();
                        break 'keys;
                    }
                    Some('#') | Some('/') if self.comment() => {}
                    None => return Err(self.err("Unexpected EOF processing map.")),
                    Some(_) => break,
                }
            }
            if let Step::MapEnd = self.entry(Ctx::Map)? {
                break 'keys;
            }
            // After a value.
            loop {
                match self.peek() {
                    Some(c) if is_blank(c) => {
                        self.advance();
                    }
                    Some('#') | Some('/') if self.comment() => {}
                    Some(c) if c == '/' || c == ';' || c == ',' || is_nl(c) => {
                        self.advance();
                        continue 'keys;
                    }
                    Some('}') => {
                        self.advance();
                        break 'keys;
                    }
                    c => {
                        return Err(self.err(format!(
                            "Expected a map value terminator ',' or a map terminator '}}', \
                             but got '{}' instead.",
                            show(c)
                        )))
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Map(self.scopes.pop().unwrap_or_default()))
    }

    /// After `include` and a blank: the path, then the included file's keys are added to the
    /// innermost map.
    fn include(&mut self, at: Loc) -> R<()> {
        while self.peek().is_some_and(is_blank) {
            self.advance();
        }
        let path: String = match self.peek() {
            Some(q @ ('"' | '\'')) => {
                self.advance();
                let start = self.pos;
                loop {
                    match self.advance() {
                        None => return Err(self.err("Unexpected EOF in quoted include")),
                        Some(c) if c == q => break,
                        Some(_) => {}
                    }
                }
                self.s[start..self.pos - 1].iter().collect()
            }
            Some('[') => return Err(self.err("Expected include value but found start of an array")),
            Some('{') => return Err(self.err("Expected include value but found start of a map")),
            Some('(') => return Err(self.err("Expected include value but found start of a block")),
            Some(c) if c.is_ascii_digit() || c == '-' => {
                return Err(self.err("Expected include value but found start of a number"))
            }
            Some('\\') => return Err(self.err("Expected include value but found escape sequence")),
            Some(c) if is_nl(c) => {
                return Err(self.err("Expected include value but found new line"))
            }
            _ => {
                let start = self.pos;
                let mut end = None;
                while let Some(c) = self.peek() {
                    if is_nl(c) || is_blank(c) || c == ';' || c == '}' {
                        break;
                    }
                    if c == '\'' {
                        end = Some(self.pos);
                        self.advance();
                        break;
                    }
                    self.advance();
                }
                self.s[start..end.unwrap_or(self.pos)].iter().collect()
            }
        };
        if !self.follow_includes {
            return Err(self.err_at(at, format!("include '{path}' is not allowed here")));
        }
        if self.include_depth >= MAX_INCLUDE_DEPTH {
            return Err(self.err_at(
                at,
                format!("include '{path}': includes nested more than {MAX_INCLUDE_DEPTH} deep"),
            ));
        }
        let dir = self
            .files
            .get(self.file)
            .and_then(|f| f.parent())
            .map_or_else(PathBuf::new, Path::to_path_buf);
        let full = dir.join(&path);
        let text = std::fs::read_to_string(&full).map_err(|e| {
            self.err_at(
                at,
                format!("error parsing include file '{path}', error opening config file: {e}"),
            )
        })?;
        let index = self.files.len();
        self.files.push(full);
        let entries = parse_text(&text, index, self.files, true, self.include_depth + 1)
            .map_err(|e| self.err_at(at, format!("error parsing include file '{path}', {e}")))?;
        for e in entries {
            // Keeps `used`: a variable defined and used in the included file is fine.
            self.set_entry(e);
        }
        Ok(())
    }
}
