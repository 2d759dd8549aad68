//! The tokenizer of the expression engine: a formula's text to tokens, in the grammar
//! asked for (plain, extended, perf).

use super::{Cmp, Grammar, Op, ParseError, PERF_LITERALS};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Num(f64),
    Ident(String),
    Op(Op),
    Open,
    Close,
    Comma,
    Cmp(Cmp),
    And,
    Or,
    /// perf's `^` (perf grammar only).
    Xor,
    /// perf's `%` (perf grammar only).
    Mod,
}

pub(crate) fn tokenize(text: &str, grammar: Grammar) -> Result<Vec<(usize, Token)>, ParseError> {
    let extended = grammar != Grammar::Plain;
    let perf = grammar == Grammar::Perf;
    let err = |pos: usize, message: String| ParseError {
        formula: text.to_string(),
        position: pos + 1,
        message,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '+' => {
                out.push((i, Token::Op(Op::Add)));
                i += 1
            }
            '-' => {
                out.push((i, Token::Op(Op::Sub)));
                i += 1
            }
            '*' => {
                out.push((i, Token::Op(Op::Mul)));
                i += 1
            }
            '/' => {
                out.push((i, Token::Op(Op::Div)));
                i += 1
            }
            '%' if perf => {
                out.push((i, Token::Mod));
                i += 1
            }
            '^' if perf => {
                out.push((i, Token::Xor));
                i += 1
            }
            '(' => {
                out.push((i, Token::Open));
                i += 1
            }
            ')' => {
                out.push((i, Token::Close));
                i += 1
            }
            c if c.is_ascii_digit() || c == '.' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                // Exponent: 1e9, 2.5E-3.
                if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                    let mut j = i + 1;
                    if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                        j += 1;
                    }
                    if j < chars.len() && chars[j].is_ascii_digit() {
                        while j < chars.len() && chars[j].is_ascii_digit() {
                            j += 1;
                        }
                        i = j;
                    }
                }
                let s: String = chars[start..i].iter().collect();
                let v: f64 = s
                    .parse()
                    .map_err(|_| err(start, format!("bad number {s:?}")))?;
                out.push((start, Token::Num(v)));
            }
            '#' if perf => {
                let start = i;
                i += 1;
                // perf's expr.l: `#[0-9a-zA-Z_\.\-]+`, looked up without regard to case.
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || "_.-".contains(chars[i]))
                {
                    i += 1;
                }
                let lit: String = chars[start..i]
                    .iter()
                    .collect::<String>()
                    .to_ascii_lowercase();
                if !PERF_LITERALS.contains(&lit.as_str()) {
                    return Err(err(
                        start,
                        format!(
                            "unknown literal {lit:?} (perf's literals are {})",
                            PERF_LITERALS.join(", ")
                        ),
                    ));
                }
                out.push((start, Token::Ident(lit)));
            }
            c if perf && (c.is_ascii_alphabetic() || c == '_' || c == '\\') => {
                // perf's event names: letters, digits, `_ . : @ ?`, and any character
                // escaped with a backslash (kept without it).
                let start = i;
                let mut name = String::new();
                while i < chars.len() {
                    let c = chars[i];
                    if c == '\\' {
                        match chars.get(i + 1) {
                            Some(&n) => name.push(n),
                            None => return Err(err(i, "a backslash ends the formula".into())),
                        }
                        i += 2;
                    } else if c.is_ascii_alphanumeric() || "_.:@?".contains(c) {
                        name.push(c);
                        i += 1;
                    } else {
                        break;
                    }
                }
                // perf's expr.l reads `NaN` as the number NaN (not an event name).
                if name == "NaN" && chars[start] != '\\' {
                    out.push((start, Token::Num(f64::NAN)));
                } else {
                    out.push((start, Token::Ident(name)));
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                // Extended names may contain `.` and `:` (followed by a name character).
                let name_char = |j: usize| {
                    let c = chars[j];
                    c.is_ascii_alphanumeric()
                        || c == '_'
                        || (extended
                            && (c == '.' || c == ':')
                            && chars
                                .get(j + 1)
                                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_'))
                };
                while i < chars.len() && name_char(i) {
                    i += 1;
                }
                out.push((start, Token::Ident(chars[start..i].iter().collect())));
            }
            ',' if extended => {
                out.push((i, Token::Comma));
                i += 1
            }
            '&' | '|' if extended => {
                let start = i;
                i += 1;
                if chars.get(i) == Some(&c) {
                    i += 1;
                }
                out.push((start, if c == '&' { Token::And } else { Token::Or }));
            }
            '<' | '>' | '=' | '!' if extended => {
                let start = i;
                i += 1;
                // `>=` (Intel's files also write `> =`).
                let mut j = i;
                while j < chars.len() && chars[j] == ' ' {
                    j += 1;
                }
                let eq = chars.get(j) == Some(&'=');
                if eq {
                    i = j + 1;
                }
                let cmp = match (c, eq) {
                    ('<', false) => Cmp::Lt,
                    ('<', true) => Cmp::Le,
                    ('>', false) => Cmp::Gt,
                    ('>', true) => Cmp::Ge,
                    ('=', _) => Cmp::Eq,
                    ('!', true) => Cmp::Ne,
                    _ => return Err(err(start, format!("unexpected character {c:?}"))),
                };
                out.push((start, Token::Cmp(cmp)));
            }
            other => return Err(err(i, format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}
