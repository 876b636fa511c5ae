//! The values of nats-server's syntax that are not maps or arrays: strings (quoted,
//! unquoted, with escapes), `$variables`, numbers with size suffixes, floats, datetimes and
//! `( ... )` blocks, following nats-server's `conf/lex.go` (where a value ends, and how it is
//! typed) and `conf/parse.go` (suffixes, variables).

use super::{is_blank, is_nl, is_suffix, parse_text, show, Parser, R};
use crate::config::natsconf::{Loc, Node, Value};
use std::path::PathBuf;

impl Parser<'_> {
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
    pub(super) fn quoted(&mut self) -> R<Value> {
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
    pub(super) fn unquoted(&mut self, start: usize, at: Loc) -> R<Node> {
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
    pub(super) fn number(&mut self, at: Loc) -> R<Value> {
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
            Some(c)
                if c != '.'
                    && !is_suffix(c)
                    && !(is_nl(c) || is_blank(c) || matches!(c, '}' | ';' | ',')) =>
            {
                // nats-server's lexer takes this character into the string before it looks
                // for the string's end, even `]` or `'`: `[1, 2]` leaves the array open.
                self.advance();
                Ok(self.unquoted(start, at)?.value)
            }
            _ => self.number_end(start, at),
        }
    }

    /// After a number's digits (from `start`): a float (`.`), a size with its suffix, or
    /// the integer.
    fn number_end(&mut self, start: usize, at: Loc) -> R<Value> {
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

    /// After `-`: a negative integer or float.
    pub(super) fn negative(&mut self, at: Loc) -> R<Value> {
        let start = self.pos - 1;
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {}
            Some('.') => return Err(self.err("Floats must start with a digit, not '.'.")),
            c => return Err(self.err(format!("Expected a digit but got '{}'.", show(c)))),
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.advance();
        }
        self.number_end(start, at)
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
    pub(super) fn block(&mut self) -> R<Value> {
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
}
