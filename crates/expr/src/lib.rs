//! The one expression engine every metric formula goes through.
//!
//! Formulas are data (Arm's telemetry files, our per-architecture metric files), so
//! they must be parsed and checked, not trusted: a typo in a data file has to fail a
//! test, not print a wrong number. The grammar is what the vendor files use —
//! numbers, event names, `+ - * /`, unary minus and parentheses — with the usual
//! precedence and left associativity.
//!
//! Intel's perfmon metric files need more, so [`parse_extended`] also accepts what they
//! use: event names with `.` and `:` (`CPU_CLK_UNHALTED.THREAD`, `L1D_PEND_MISS.FB_FULL:c1`),
//! `min(...)`/`max(...)`, comparisons (`<`, `>`, `<=`, `>=`, `==`, `!=`; a comparison is
//! 1 when it holds and 0 when not), `&`/`&&` and `|`/`||` (nonzero is true), and
//! Python's conditional `X if C else Y`. Precedence, loosest first (as in perf's metric
//! parser): `if else`, `|`, `&`, comparisons, `+ -`, `* /`, unary minus. [`parse`] keeps
//! the plain grammar, so an Arm or numalab formula using any of this is still an error.
//!
//! Evaluation never turns a missing input into 0: an input that was not counted or is
//! not supported, or a division by zero, makes the whole metric "not available" with
//! the reason (every missing input is named, not just the first).
//!
//! It depends on nothing else of numalab, so the core metrics (`numalab-pmu`, which
//! re-exports it as `numalab_pmu::expr`) and the uncore figures (`numalab-uncore`) share it.

#![forbid(unsafe_code)]

mod interval;

pub use interval::Interval;
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

/// A comparison (extended grammar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Cmp {
    fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
        }
    }

    fn holds(self, x: f64, y: f64) -> bool {
        match self {
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
        }
    }
}

/// A function of the extended grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// The smallest argument.
    Min,
    /// The largest argument.
    Max,
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
    /// A comparison: 1 when it holds, 0 when not (extended grammar).
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    /// Both nonzero (`&`, `&&`; extended grammar).
    And(Box<Expr>, Box<Expr>),
    /// Either nonzero (`|`, `||`; extended grammar).
    Or(Box<Expr>, Box<Expr>),
    /// `min(...)` / `max(...)` (extended grammar).
    Call(Func, Vec<Expr>),
    /// `then if cond else otherwise` (extended grammar).
    If {
        /// The condition (nonzero is true).
        cond: Box<Expr>,
        /// Its value when the condition holds.
        then: Box<Expr>,
        /// Its value otherwise.
        otherwise: Box<Expr>,
    },
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
    Comma,
    Cmp(Cmp),
    And,
    Or,
}

fn tokenize(text: &str, extended: bool) -> Result<Vec<(usize, Token)>, ParseError> {
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

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, Token)>,
    pos: usize,
    extended: bool,
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

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(w)) if w == word)
    }

    /// A whole (sub)formula: arithmetic only, or in the extended grammar the loosest
    /// level, `X if C else Y`.
    fn full(&mut self) -> Result<Expr, ParseError> {
        if !self.extended {
            return self.expr(1);
        }
        let then = self.or()?;
        if !self.keyword("if") {
            return Ok(then);
        }
        self.pos += 1;
        let cond = self.or()?;
        if !self.keyword("else") {
            return Err(self.error("expected 'else'"));
        }
        self.pos += 1;
        let otherwise = self.full()?;
        Ok(Expr::If {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        })
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            lhs = Expr::Or(Box::new(lhs), Box::new(self.and()?));
        }
        Ok(lhs)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.comparison()?;
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            lhs = Expr::And(Box::new(lhs), Box::new(self.comparison()?));
        }
        Ok(lhs)
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.expr(1)?;
        while let Some(Token::Cmp(c)) = self.peek().cloned() {
            self.pos += 1;
            lhs = Expr::Cmp(c, Box::new(lhs), Box::new(self.expr(1)?));
        }
        Ok(lhs)
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
                    let func = match name.as_str() {
                        "min" if self.extended => Func::Min,
                        "max" if self.extended => Func::Max,
                        _ => {
                            return Err(self.error(format!(
                                "function calls such as {name}(...) are not part of the formula language"
                            )))
                        }
                    };
                    self.pos += 1;
                    let mut args = vec![self.full()?];
                    while self.peek() == Some(&Token::Comma) {
                        self.pos += 1;
                        args.push(self.full()?);
                    }
                    if self.peek() != Some(&Token::Close) {
                        return Err(self.error("expected ')'"));
                    }
                    self.pos += 1;
                    return Ok(Expr::Call(func, args));
                }
                if self.extended && (name == "if" || name == "else") {
                    self.pos -= 1;
                    return Err(self.error(format!("unexpected '{name}'")));
                }
                Ok(Expr::Var(name))
            }
            Some(Token::Open) => {
                self.pos += 1;
                let inner = self.full()?;
                if self.peek() != Some(&Token::Close) {
                    return Err(self.error("expected ')'"));
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(Token::Close) => Err(self.error("unexpected ')'")),
            Some(Token::Op(op)) => Err(self.error(format!("unexpected '{}'", op.symbol()))),
            Some(Token::Comma) => Err(self.error("unexpected ','")),
            Some(Token::Cmp(c)) => Err(self.error(format!("unexpected '{}'", c.symbol()))),
            Some(Token::And) => Err(self.error("unexpected '&'")),
            Some(Token::Or) => Err(self.error("unexpected '|'")),
            None => Err(self.error("the formula ends too early")),
        }
    }
}

/// Parses a formula (the plain grammar: numbers, names, `+ - * /`, parentheses).
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    parse_with(text, false)
}

/// Parses a formula in the extended grammar of Intel's perfmon files (see the module
/// documentation).
pub fn parse_extended(text: &str) -> Result<Expr, ParseError> {
    parse_with(text, true)
}

fn parse_with(text: &str, extended: bool) -> Result<Expr, ParseError> {
    let tokens = tokenize(text, extended)?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        extended,
    };
    if p.tokens.is_empty() {
        return Err(p.error("the formula is empty"));
    }
    let e = p.full()?;
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
            _ => {
                for c in self.children() {
                    c.collect(out);
                }
            }
        }
    }

    /// The direct sub-expressions.
    fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Num(_) | Expr::Var(_) => Vec::new(),
            Expr::Neg(e) => vec![e],
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                vec![a, b]
            }
            Expr::Call(_, args) => args.iter().collect(),
            Expr::If {
                cond,
                then,
                otherwise,
            } => vec![cond, then, otherwise],
        }
    }

    /// The formula with every variable `f` gives an expression for replaced (aliases
    /// by event names, constants by numbers).
    pub fn substitute(&self, f: &dyn Fn(&str) -> Option<Expr>) -> Expr {
        let sub = |e: &Expr| Box::new(e.substitute(f));
        match self {
            Expr::Num(v) => Expr::Num(*v),
            Expr::Var(v) => f(v).unwrap_or_else(|| Expr::Var(v.clone())),
            Expr::Neg(e) => Expr::Neg(sub(e)),
            Expr::Bin(op, a, b) => Expr::Bin(*op, sub(a), sub(b)),
            Expr::Cmp(c, a, b) => Expr::Cmp(*c, sub(a), sub(b)),
            Expr::And(a, b) => Expr::And(sub(a), sub(b)),
            Expr::Or(a, b) => Expr::Or(sub(a), sub(b)),
            Expr::Call(func, args) => {
                Expr::Call(*func, args.iter().map(|a| a.substitute(f)).collect())
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => Expr::If {
                cond: sub(cond),
                then: sub(then),
                otherwise: sub(otherwise),
            },
        }
    }

    /// Resolves every conditional whose condition has no variable (`X if 0 else Y` is
    /// `Y`), so the branch not taken names no event that would have to be counted.
    pub fn fold_conditions(&self) -> Expr {
        match self {
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = cond.fold_conditions();
                if cond.variables().is_empty() {
                    if let Ok(c) = cond.compute(&|_| Input::Missing(String::new())) {
                        return if truth(c) {
                            then.fold_conditions()
                        } else {
                            otherwise.fold_conditions()
                        };
                    }
                }
                Expr::If {
                    cond: Box::new(cond),
                    then: Box::new(then.fold_conditions()),
                    otherwise: Box::new(otherwise.fold_conditions()),
                }
            }
            other => {
                // Rebuild with folded children.
                let folded: Vec<Expr> = other
                    .children()
                    .iter()
                    .map(|c| c.fold_conditions())
                    .collect();
                let mut it = folded.into_iter();
                let mut next = || Box::new(it.next().expect("same arity"));
                match other {
                    Expr::Num(_) | Expr::Var(_) => other.clone(),
                    Expr::Neg(_) => Expr::Neg(next()),
                    Expr::Bin(op, _, _) => Expr::Bin(*op, next(), next()),
                    Expr::Cmp(c, _, _) => Expr::Cmp(*c, next(), next()),
                    Expr::And(_, _) => Expr::And(next(), next()),
                    Expr::Or(_, _) => Expr::Or(next(), next()),
                    Expr::Call(func, args) => {
                        Expr::Call(*func, (0..args.len()).map(|_| *next()).collect())
                    }
                    Expr::If { .. } => unreachable!("handled above"),
                }
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

    /// Every input name the formula uses, each once, in the order it first names them
    /// (the order [`Expr::eval`] reports missing inputs in).
    pub fn ordered_variables(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut Vec<String>) {
            match e {
                Expr::Num(_) => {}
                Expr::Var(v) => {
                    if !out.contains(v) {
                        out.push(v.clone())
                    }
                }
                other => {
                    for c in other.children() {
                        walk(c, out);
                    }
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
            Expr::Cmp(c, a, b) => {
                let x = a.compute(input)?;
                let y = b.compute(input)?;
                f64::from(u8::from(c.holds(x, y)))
            }
            Expr::And(a, b) => {
                let x = truth(a.compute(input)?);
                let y = truth(b.compute(input)?);
                f64::from(u8::from(x && y))
            }
            Expr::Or(a, b) => {
                let x = truth(a.compute(input)?);
                let y = truth(b.compute(input)?);
                f64::from(u8::from(x || y))
            }
            Expr::Call(func, args) => {
                let mut out: Option<f64> = None;
                for a in args {
                    let v = a.compute(input)?;
                    out = Some(match (out, func) {
                        (None, _) => v,
                        (Some(o), Func::Min) => o.min(v),
                        (Some(o), Func::Max) => o.max(v),
                    });
                }
                out.unwrap_or(f64::NAN)
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                if truth(cond.compute(input)?) {
                    then.compute(input)?
                } else {
                    otherwise.compute(input)?
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
            Expr::Cmp(c, a, b) => write!(f, "({a} {} {b})", c.symbol()),
            Expr::And(a, b) => write!(f, "({a} & {b})"),
            Expr::Or(a, b) => write!(f, "({a} | {b})"),
            Expr::Call(func, args) => {
                let name = match func {
                    Func::Min => "min",
                    Func::Max => "max",
                };
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                write!(f, "{name}({})", args.join(", "))
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => write!(f, "({then} if {cond} else {otherwise})"),
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

/// Nonzero (and not NaN) is true.
fn truth(v: f64) -> bool {
    v != 0.0 && !v.is_nan()
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

    fn eval_x(text: &str, pairs: &[(&str, f64)]) -> Result<f64, NotAvailable> {
        parse_extended(text).unwrap().eval(&env(pairs))
    }

    #[test]
    fn extended_grammar_of_intel_files() {
        // Names with dots and modifiers.
        let e = parse_extended("CPU_CLK_UNHALTED.THREAD / L1D_PEND_MISS.FB_FULL:c1").unwrap();
        assert_eq!(
            e.variables().into_iter().collect::<Vec<_>>(),
            ["CPU_CLK_UNHALTED.THREAD", "L1D_PEND_MISS.FB_FULL:c1"]
        );
        // min/max, nested.
        assert_eq!(
            eval_x("max(1 - (a + b), 0)", &[("a", 0.7), ("b", 0.6)]).unwrap(),
            0.0
        );
        assert_eq!(
            eval_x("min(a, b, 3)", &[("a", 5.0), ("b", 4.0)]).unwrap(),
            3.0
        );
        // Python's conditional, loosest of all; `> =` as Intel writes it.
        assert_eq!(
            eval_x("a / 2 if s else a", &[("a", 8.0), ("s", 1.0)]).unwrap(),
            4.0
        );
        assert_eq!(
            eval_x("a / 2 if s else a", &[("a", 8.0), ("s", 0.0)]).unwrap(),
            8.0
        );
        assert_eq!(
            eval_x("(a * 2 if (a > = 0) else 7) + 1", &[("a", -1.0)]).unwrap(),
            8.0
        );
        assert_eq!(
            eval_x("(a * 2 if (a >= 0) else 7) + 1", &[("a", 3.0)]).unwrap(),
            7.0
        );
        // Comparisons bind tighter than & and | (perf's precedence, not Python's).
        assert_eq!(
            eval_x("a > 20 & b > 20", &[("a", 30.0), ("b", 25.0)]).unwrap(),
            1.0
        );
        assert_eq!(
            eval_x("a > 20 & b > 20", &[("a", 30.0), ("b", 15.0)]).unwrap(),
            0.0
        );
        assert_eq!(
            eval_x("( a > 70 ) | ( b > 10 )", &[("a", 10.0), ("b", 15.0)]).unwrap(),
            1.0
        );
        assert_eq!(
            eval_x(
                "a >0.15 && b >0.20 || c < 1",
                &[("a", 0.1), ("b", 0.3), ("c", 0.5)]
            )
            .unwrap(),
            1.0
        );
        assert_eq!(eval_x("a != 1", &[("a", 1.0)]).unwrap(), 0.0);
        // Display round-trips.
        for text in [
            "100 * ( max( 1 - ( a + b ) , 0 ) )",
            "( a > 20 ) & ( b > 20 ) | c <= 2",
            "x if y > = 0 else min( z , 2 )",
            "- a if b else c / ( d - e )",
        ] {
            let e = parse_extended(text).unwrap();
            assert_eq!(parse_extended(&e.to_string()).unwrap(), e, "{text} -> {e}");
        }
        // Substitution and folding of constant conditions.
        let e = parse_extended("( b / 2 ) if smt_on else ( c )").unwrap();
        let folded = e
            .substitute(&|v| (v == "smt_on").then_some(Expr::Num(0.0)))
            .fold_conditions();
        assert_eq!(folded, Expr::Var("c".into()));
        let folded = e
            .substitute(&|v| (v == "smt_on").then_some(Expr::Num(1.0)))
            .fold_conditions();
        assert_eq!(folded.to_string(), "b / 2");
        // The plain grammar still refuses all of it.
        for text in ["max(a, b)", "a > b", "a & b", "a if b else c", "A.B"] {
            assert!(parse(text).is_err(), "{text}");
        }
        // Errors, not panics.
        for text in [
            "max(a,",
            "a if b",
            "a >",
            "min()",
            "if a else b",
            ",",
            "a & & b",
        ] {
            assert!(parse_extended(text).is_err(), "{text}");
        }
    }
}
