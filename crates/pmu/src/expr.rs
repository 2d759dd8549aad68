//! The one expression engine every metric formula goes through.
//!
//! Formulas are data (Arm's telemetry files, our per-architecture metric files), so
//! they must be parsed and checked, not trusted: a typo in a data file has to fail a
//! test, not print a wrong number. The grammar is what the vendor files use —
//! numbers, event names, `+ - * /`, unary minus and parentheses — with the usual
//! precedence and left associativity.
//!
//! Evaluation never turns a missing input into 0: an input that was not counted or is
//! not supported, or a division by zero, makes the whole metric "not available" with
//! the reason (every missing input is named, not just the first).

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

impl Op {
    fn symbol(self) -> char {
        match self {
            Op::Add => '+',
            Op::Sub => '-',
            Op::Mul => '*',
            Op::Div => '/',
        }
    }

    fn precedence(self) -> u8 {
        match self {
            Op::Add | Op::Sub => 1,
            Op::Mul | Op::Div => 2,
        }
    }
}

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A numeric constant.
    Num(f64),
    /// An event (or other input) by name.
    Var(String),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(Op, Box<Expr>, Box<Expr>),
}

/// Why a formula could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at character {position} of {formula:?}")]
pub struct ParseError {
    /// The formula.
    pub formula: String,
    /// 1-based character position.
    pub position: usize,
    /// What is wrong.
    pub message: String,
}

/// The value of one input, as the evaluator sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A measured (or imported) value.
    Value(f64),
    /// No value, and why ("not supported by this PMU", "not counted", "not in the file").
    Missing(String),
}

/// Why a formula has no value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NotAvailable {
    /// Inputs without a value, each with its reason.
    #[error("{}", missing_text(.inputs))]
    MissingInputs {
        /// (input name, reason) pairs.
        inputs: Vec<(String, String)>,
    },
    /// A denominator was zero.
    #[error("division by zero: {denominator} is 0")]
    DivisionByZero {
        /// The denominator as written.
        denominator: String,
    },
    /// The result is not a finite number.
    #[error("the result is not a finite number")]
    NotFinite,
}

/// "missing input: A, B not supported by this PMU; C was not counted" (inputs with the
/// same reason are named together).
fn missing_text(inputs: &[(String, String)]) -> String {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for (name, why) in inputs {
        match groups.iter_mut().find(|(_, w)| *w == why) {
            Some((names, _)) => names.push(name),
            None => groups.push((vec![name], why)),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(names, why)| format!("{} {why}", names.join(", ")))
        .collect();
    format!("missing input: {}", parts.join("; "))
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(f64),
    Ident(String),
    Op(Op),
    Open,
    Close,
}

fn tokenize(text: &str) -> Result<Vec<(usize, Token)>, ParseError> {
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
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push((start, Token::Ident(chars[start..i].iter().collect())));
            }
            other => return Err(err(i, format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, Token)>,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> ParseError {
        let position = self
            .tokens
            .get(self.pos)
            .map(|(p, _)| *p)
            .unwrap_or(self.text.chars().count());
        ParseError {
            formula: self.text.to_string(),
            position: position + 1,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    /// Precedence climbing: parses an expression whose operators bind at least `min`.
    fn expr(&mut self, min: u8) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        while let Some(Token::Op(op)) = self.peek().cloned() {
            if op.precedence() < min {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(op.precedence() + 1)?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        match self.peek().cloned() {
            Some(Token::Op(Op::Sub)) => {
                self.pos += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some(Token::Op(Op::Add)) => {
                self.pos += 1;
                self.unary()
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        match self.peek().cloned() {
            Some(Token::Num(v)) => {
                self.pos += 1;
                Ok(Expr::Num(v))
            }
            Some(Token::Ident(name)) => {
                self.pos += 1;
                if self.peek() == Some(&Token::Open) {
                    return Err(self.error(format!(
                        "function calls such as {name}(...) are not part of the formula language"
                    )));
                }
                Ok(Expr::Var(name))
            }
            Some(Token::Open) => {
                self.pos += 1;
                let inner = self.expr(1)?;
                if self.peek() != Some(&Token::Close) {
                    return Err(self.error("expected ')'"));
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(Token::Close) => Err(self.error("unexpected ')'")),
            Some(Token::Op(op)) => Err(self.error(format!("unexpected '{}'", op.symbol()))),
            None => Err(self.error("the formula ends too early")),
        }
    }
}

/// Parses a formula.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let tokens = tokenize(text)?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
    };
    if p.tokens.is_empty() {
        return Err(p.error("the formula is empty"));
    }
    let e = p.expr(1)?;
    if p.pos < p.tokens.len() {
        return Err(p.error("unexpected text after the end of the formula"));
    }
    Ok(e)
}

impl Expr {
    /// Every input name the formula uses.
    pub fn variables(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut BTreeSet<String>) {
        match self {
            Expr::Num(_) => {}
            Expr::Var(v) => {
                out.insert(v.clone());
            }
            Expr::Neg(e) => e.collect(out),
            Expr::Bin(_, a, b) => {
                a.collect(out);
                b.collect(out);
            }
        }
    }

    /// Evaluates with `input` giving each variable's value or why it has none.
    pub fn eval(&self, input: &dyn Fn(&str) -> Input) -> Result<f64, NotAvailable> {
        // All missing inputs are reported together, in formula order.
        let mut missing: Vec<(String, String)> = Vec::new();
        for name in self.ordered_variables() {
            if let Input::Missing(why) = input(&name) {
                missing.push((name, why));
            }
        }
        if !missing.is_empty() {
            return Err(NotAvailable::MissingInputs { inputs: missing });
        }
        let v = self.compute(input)?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(NotAvailable::NotFinite)
        }
    }

    fn ordered_variables(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut Vec<String>) {
            match e {
                Expr::Num(_) => {}
                Expr::Var(v) => {
                    if !out.contains(v) {
                        out.push(v.clone())
                    }
                }
                Expr::Neg(x) => walk(x, out),
                Expr::Bin(_, a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }

    fn compute(&self, input: &dyn Fn(&str) -> Input) -> Result<f64, NotAvailable> {
        Ok(match self {
            Expr::Num(v) => *v,
            Expr::Var(name) => match input(name) {
                Input::Value(v) => v,
                Input::Missing(why) => {
                    return Err(NotAvailable::MissingInputs {
                        inputs: vec![(name.clone(), why)],
                    })
                }
            },
            Expr::Neg(e) => -e.compute(input)?,
            Expr::Bin(op, a, b) => {
                let x = a.compute(input)?;
                let y = b.compute(input)?;
                match op {
                    Op::Add => x + y,
                    Op::Sub => x - y,
                    Op::Mul => x * y,
                    Op::Div => {
                        if y == 0.0 {
                            return Err(NotAvailable::DivisionByZero {
                                denominator: b.to_string(),
                            });
                        }
                        x / y
                    }
                }
            }
        })
    }

    fn fmt_prec(&self, f: &mut fmt::Formatter<'_>, parent: u8, right: bool) -> fmt::Result {
        match self {
            Expr::Num(v) => write!(f, "{v}"),
            Expr::Var(v) => write!(f, "{v}"),
            Expr::Neg(e) => {
                write!(f, "-")?;
                e.fmt_prec(f, 3, false)
            }
            Expr::Bin(op, a, b) => {
                let p = op.precedence();
                // Parentheses where precedence or (on the right of - and /) associativity
                // needs them.
                let paren = p < parent || (right && p == parent);
                if paren {
                    write!(f, "(")?;
                }
                a.fmt_prec(f, p, false)?;
                write!(f, " {} ", op.symbol())?;
                b.fmt_prec(f, p, true)?;
                if paren {
                    write!(f, ")")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_prec(f, 0, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, f64)]) -> impl Fn(&str) -> Input {
        let m: HashMap<String, f64> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        move |name: &str| match m.get(name) {
            Some(v) => Input::Value(*v),
            None => Input::Missing("not counted".into()),
        }
    }

    fn eval(text: &str, pairs: &[(&str, f64)]) -> Result<f64, NotAvailable> {
        parse(text).unwrap().eval(&env(pairs))
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(eval("1 + 2 * 3", &[]).unwrap(), 7.0);
        assert_eq!(eval("(1 + 2) * 3", &[]).unwrap(), 9.0);
        assert_eq!(eval("8 / 4 / 2", &[]).unwrap(), 1.0); // left associative
        assert_eq!(eval("10 - 4 - 3", &[]).unwrap(), 3.0);
        assert_eq!(eval("-2 * 3 + 10", &[]).unwrap(), 4.0);
        assert_eq!(eval("2 * -3", &[]).unwrap(), -6.0);
        assert_eq!(eval("1e3 * 2.5", &[]).unwrap(), 2500.0);
        // Arm's N2 frontend_bound formula shape.
        let v = eval(
            "100 * ((STALL_SLOT_FRONTEND - CPU_CYCLES) / (5 * CPU_CYCLES) - BR_MIS_PRED / CPU_CYCLES)",
            &[
                ("STALL_SLOT_FRONTEND", 3000.0),
                ("CPU_CYCLES", 1000.0),
                ("BR_MIS_PRED", 10.0),
            ],
        )
        .unwrap();
        assert!((v - 100.0 * (2000.0 / 5000.0 - 0.01)).abs() < 1e-9, "{v}");
    }

    #[test]
    fn division_by_zero_is_not_available_not_zero() {
        let e = eval(
            "INST_RETIRED / CPU_CYCLES",
            &[("INST_RETIRED", 5.0), ("CPU_CYCLES", 0.0)],
        )
        .unwrap_err();
        assert_eq!(
            e,
            NotAvailable::DivisionByZero {
                denominator: "CPU_CYCLES".into()
            }
        );
        assert_eq!(e.to_string(), "division by zero: CPU_CYCLES is 0");
        let e = eval("A / (B - C)", &[("A", 1.0), ("B", 2.0), ("C", 2.0)]).unwrap_err();
        assert_eq!(e.to_string(), "division by zero: B - C is 0");
        // 0 / x is a value.
        assert_eq!(eval("A / B", &[("A", 0.0), ("B", 2.0)]).unwrap(), 0.0);
    }

    #[test]
    fn every_missing_input_is_named() {
        let e = eval("(A - B) / C * 1000", &[("B", 1.0)]).unwrap_err();
        match &e {
            NotAvailable::MissingInputs { inputs } => {
                let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(names, ["A", "C"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(e.to_string(), "missing input: A, C not counted");
    }

    #[test]
    fn syntax_errors_say_where() {
        for (text, pos) in [
            ("A +", 4),
            ("(A + B", 7),
            ("A + * B", 5),
            ("A B", 3),
            ("A ^ 2", 3),
            ("", 1),
            ("max(A)", 4),
            (")", 1),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.position, pos, "{text:?}: {e}");
        }
    }

    #[test]
    fn variables_and_display_round_trip() {
        let text = "(LL_CACHE_RD - LL_CACHE_MISS_RD) / LL_CACHE_RD * 100";
        let e = parse(text).unwrap();
        assert_eq!(
            e.variables().into_iter().collect::<Vec<_>>(),
            ["LL_CACHE_MISS_RD", "LL_CACHE_RD"]
        );
        assert_eq!(e.to_string(), text);
        assert_eq!(parse(&e.to_string()).unwrap(), e);
        let e = parse("A - (B - C)").unwrap();
        assert_eq!(e.to_string(), "A - (B - C)");
        let e = parse("A / (B * C)").unwrap();
        assert_eq!(e.to_string(), "A / (B * C)");
    }
}
