//! The recursive-descent reader behind [`super::parse_file`]: one pass over the characters,
//! following the states of nats-server's `conf/lex.go` (which ends a value where, and how
//! values are typed) and `conf/parse.go` (suffixes, variables, includes).

use super::{Document, Entry, Loc, Node, ParseError, Value, MAX_DEPTH, MAX_INCLUDE_DEPTH};
use std::path::{Path, PathBuf};

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

    /// A `\` escape (the backslash consumed), appended to `out`.
    fn escape(&mut self, out: &mut Vec<u8>) -> R<()> {
        let at = self.loc();
        match self.advance() {
            Some('t') => out.push(b'\t'),
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('"') => out.push(b'"'),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let (a, b) = (self.advance(), self.advance());
                let hex = |c: Option<char>| c.and_then(|c| c.to_digit(16));
                match (hex(a), hex(b)) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ if a.is_some_and(is_nl) || b.is_some_and(is_nl) || b.is_none() => {
                        return Err(self.err_at(
                            at,
                            "Expected two hexadecimal digits after '\\x', but hit end of line",
                        ))
                    }
                    _ => {
                        return Err(self.err_at(
                            at,
                            format!(
                                "Expected two hexadecimal digits after '\\x', but got '{}{}'",
                                show(a),
                                show(b)
                            ),
                        ))
                    }
                }
            }
            c => {
                return Err(self.err_at(
                    at,
                    format!(
                        "Invalid escape character '{}'. Only the following escape characters \
                         are allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.",
                        show(c)
                    ),
                ))
            }
        }
        Ok(())
    }

    /// A double-quoted string (the quote consumed).
    fn quoted(&mut self) -> R<Value> {
        let mut out = Vec::new();
        loop {
            match self.advance() {
                None => return Err(self.err("Unexpected EOF.")),
                Some('"') => break,
                Some('\\') => self.escape(&mut out)?,
                Some(c) => {
                    let mut b = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                }
            }
        }
        Ok(Value::String(String::from_utf8_lossy(&out).into_owned()))
    }

    /// An unquoted string from `start` (the scan may already be past it, as when a number
    /// turns out to be a string such as `2s`): up to a blank, newline, `,`, `;`, `]` or `}`
    /// (or a `'`, which is consumed). Without escapes it may be a boolean or a `$variable`.
    fn unquoted(&mut self, start: usize, at: Loc) -> R<Node> {
        let mut out: Vec<u8> = self.text(start).into_bytes();
        let mut has_escapes = false;
        loop {
            match self.peek() {
                None => break,
                Some(c) if is_nl(c) || is_blank(c) || matches!(c, ';' | ',' | ']' | '}') => break,
                Some('\'') => {
                    self.advance();
                    break;
                }
                Some('\\') => {
                    self.advance();
                    has_escapes = true;
                    self.escape(&mut out)?;
                }
                Some(c) => {
                    self.advance();
                    let mut b = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                }
            }
        }
        let text = String::from_utf8_lossy(&out).into_owned();
        if !has_escapes {
            match text.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" => {
                    return Ok(Node {
                        value: Value::Bool(true),
                        at,
                    })
                }
                "false" | "no" | "off" => {
                    return Ok(Node {
                        value: Value::Bool(false),
                        at,
                    })
                }
                _ => {}
            }
            if let Some(name) = text.strip_prefix('$') {
                return self.variable(name, at);
            }
        }
        Ok(Node {
            value: Value::String(text),
            at,
        })
    }

    /// `$name`: a key of this or an enclosing map, else the environment variable.
    fn variable(&mut self, name: &str, at: Loc) -> R<Node> {
        // A bcrypt hash (`$2a$...`) is a password, not a reference.
        if name.starts_with("2a$") {
            return Ok(Node {
                value: Value::String(format!("${name}")),
                at,
            });
        }
        for scope in self.scopes.iter_mut().rev() {
            if let Some(e) = scope.iter_mut().find(|e| e.key == name) {
                e.used = true;
                let mut node = e.value.clone();
                node.at = at;
                return Ok(node);
            }
        }
        if let Ok(text) = std::env::var(name) {
            let mut files = vec![PathBuf::from(format!("${name}"))];
            let parsed = parse_text(&format!("pk={text}"), 0, &mut files, false, 0);
            return match parsed {
                Ok(entries) => match entries.into_iter().find(|e| e.key == "pk") {
                    Some(e) => Ok(Node { at, ..e.value }),
                    None => Err(self.err_at(
                        at,
                        format!(
                            "variable reference for '{name}' on line {} can not be found",
                            at.line
                        ),
                    )),
                },
                Err(e) => Err(self.err_at(
                    at,
                    format!(
                        "variable reference for '{name}' on line {} could not be parsed: {e}",
                        at.line
                    ),
                )),
            };
        }
        Err(self.err_at(
            at,
            format!(
                "variable reference for '{name}' on line {} can not be found",
                at.line
            ),
        ))
    }

    /// A value starting with a digit: an integer (with an optional size suffix), a float, a
    /// datetime, an IP address (`1.2.3.4:4222`), or a string (`2s`, `100ms`).
    fn number(&mut self, at: Loc) -> R<Value> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.advance();
        }
        match self.peek() {
            Some('-') => {
                if self.pos - start != 4 {
                    return Err(self.err("All ISO8601 dates must be in full Zulu form."));
                }
                self.datetime(start)
            }
            Some('.') => {
                self.advance();
                self.float(start)
            }
            Some(c) if is_suffix(c) => {
                self.advance();
                self.suffixed(start, at)
            }
            Some(c) if !(is_nl(c) || is_blank(c) || matches!(c, '}' | ';' | ',')) => {
                // nats-server's lexer takes this character into the string before it looks
                // for the string's end, even `]` or `'`: `[1, 2]` leaves the array open.
                self.advance();
                Ok(self.unquoted(start, at)?.value)
            }
            _ => self.integer(start),
        }
    }

    /// After `-`: a negative integer or float.
    fn negative(&mut self, at: Loc) -> R<Value> {
        let start = self.pos - 1;
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {}
            Some('.') => return Err(self.err("Floats must start with a digit, not '.'.")),
            c => return Err(self.err(format!("Expected a digit but got '{}'.", show(c)))),
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.advance();
        }
        match self.peek() {
            Some('.') => {
                self.advance();
                self.float(start)
            }
            Some(c) if is_suffix(c) => {
                self.advance();
                self.suffixed(start, at)
            }
            _ => self.integer(start),
        }
    }

    /// After digits and a size-suffix letter: more `b`/`i` letters, then the number must end;
    /// otherwise it is a string (`100ms`).
    fn suffixed(&mut self, start: usize, at: Loc) -> R<Value> {
        while self
            .peek()
            .is_some_and(|c| matches!(c, 'b' | 'B' | 'i' | 'I'))
        {
            self.advance();
        }
        match self.peek() {
            None => self.integer(start),
            Some(c)
                if is_nl(c)
                    || is_blank(c)
                    || matches!(c, '}' | ';' | ',')
                    || c.is_ascii_digit() =>
            {
                self.integer(start)
            }
            Some(_) => Ok(self.unquoted(start, at)?.value),
        }
    }

    /// The text from `start` as an integer with nats-server's size suffixes.
    fn integer(&mut self, start: usize) -> R<Value> {
        let text = self.text(start);
        let digits_end = text
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(text.len());
        let (digits, suffix) = text.split_at(digits_end);
        let at = Loc {
            col: self.col.saturating_sub(text.chars().count()),
            ..self.loc()
        };
        let n: i64 = digits
            .parse()
            .map_err(|_| self.err_at(at, format!("integer '{text}' is out of the range")))?;
        let mult: i64 = match suffix.to_ascii_lowercase().as_str() {
            "" => 1,
            "k" => 1000,
            "kb" | "ki" | "kib" => 1 << 10,
            "m" => 1_000_000,
            "mb" | "mi" | "mib" => 1 << 20,
            "g" => 1_000_000_000,
            "gb" | "gi" | "gib" => 1 << 30,
            "t" => 1_000_000_000_000,
            "tb" | "ti" | "tib" => 1 << 40,
            "p" => 1_000_000_000_000_000,
            "pb" | "pi" | "pib" => 1 << 50,
            "e" => 1_000_000_000_000_000_000,
            "eb" | "ei" | "eib" => 1 << 60,
            _ => return Err(self.err_at(at, format!("unknown size suffix in '{text}'"))),
        };
        n.checked_mul(mult)
            .map(Value::Integer)
            .ok_or_else(|| self.err_at(at, format!("integer '{text}' is out of the range")))
    }

    /// After digits and `.`: a float, or an IP address string when a second `.` follows.
    fn float(&mut self, start: usize) -> R<Value> {
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.err(format!(
                "Floats must have a digit after the '.', but got '{}' instead.",
                show(self.peek())
            )));
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.advance();
        }
        if self.peek() == Some('.') {
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | ':' | '-'))
            {
                self.advance();
            }
            return Ok(Value::String(self.text(start)));
        }
        let text = self.text(start);
        text.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Value::Float)
            .ok_or_else(|| self.err(format!("float '{text}' is out of the range")))
    }

    /// After four digits, at `-`: `YYYY-MM-DDTHH:MM:SSZ`.
    fn datetime(&mut self, start: usize) -> R<Value> {
        for f in "-00-00T00:00:00Z".chars() {
            let c = self.advance();
            let ok = if f == '0' {
                c.is_some_and(|c| c.is_ascii_digit())
            } else {
                c == Some(f)
            };
            if !ok {
                let what = if f == '0' {
                    "digit".into()
                } else {
                    format!("'{f}'")
                };
                return Err(self.err(format!(
                    "Expected {what} in ISO8601 datetime, but found '{}' instead.",
                    show(c)
                )));
            }
        }
        let text = self.text(start);
        let num = |r: std::ops::Range<usize>| text[r].parse::<u32>().unwrap_or(99);
        let (mo, d, h, mi, s) = (num(5..7), num(8..10), num(11..13), num(14..16), num(17..19));
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 59 {
            return Err(self.err(format!(
                "expected Zulu formatted DateTime, but got '{text}'"
            )));
        }
        Ok(Value::Datetime(text))
    }

    /// After `(`: raw text up to a `)` alone at the start of a line.
    fn block(&mut self) -> R<Value> {
        let start = self.pos;
        loop {
            match self.advance() {
                None => return Err(self.err("Unexpected EOF processing block.")),
                Some(')') if self.pos >= 2 && self.s[self.pos - 2] == '\n' => match self.peek() {
                    Some('\n') => {
                        return Ok(Value::String(self.s[start..self.pos - 1].iter().collect()))
                    }
                    // At the very end nats-server keeps the ')' in the text.
                    None => return Ok(Value::String(self.text(start))),
                    Some(_) => {}
                },
                Some(_) => {}
            }
        }
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
