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
//! [`parse_perf`] reads the metric expressions of Linux perf (`perf list -j`'s
//! `MetricExpr`): the extended grammar plus event names with perf's `pmu@event@` form,
//! `?` and backslash escapes (`cpu_core@INST_RETIRED.ANY@`, `msr@tsc@`,
//! `cstate_pkg@c10\-residency@`: the backslash is dropped, the character kept), perf's
//! literals (`#smt_on`, `#num_cpus`, ... see [`PERF_LITERALS`]), `d_ratio(a, b)`,
//! `source_count(EVENT)` and `has_event(EVENT)`. A literal, `source_count(E)` and
//! `has_event(E)` become inputs named as written (`#smt_on`, `source_count(E)`): the
//! caller gives their value from the machine, or they are missing; nothing is assumed.
//! `d_ratio(a, b)` is `a / b`, and 0 when `b` is 0: that is perf's rule for this
//! function, kept so a perf metric has perf's value; a plain `/` by zero stays "not
//! available". `strcmp_cpuid_str(...)` is refused with an error (it compares perf's own
//! CPUID string, which numalab does not evaluate).
//!
//! Checked against perf's own grammar (`tools/perf/util/expr.l` and `expr.y` of Linux,
//! as of the tool-PMU literals of 2024): perf also has `a % b` (the remainder of the
//! values truncated to integers, at the precedence of `*` and `/`; a zero divisor aborts
//! the metric, here "division by zero"), `a ^ b` (1 when exactly one side is nonzero, a
//! level between `|` and `&`) and the number `NaN` (a metric that yields it is "not a
//! finite number" here); all three are read by [`parse_perf`] only. perf's numbers are
//! decimal (`([0-9]+\.?[0-9]*|[0-9]*\.?[0-9]+)(e-?[0-9]+)?`: no hex literal), and perf
//! has no `!`, no `?:`, no `<=`, `>=`, `==`, `!=`, `&&` or `||`: the last six are
//! accepted here (Intel's perfmon files use them) but perf never prints them. A `?` in a
//! perf event name is perf's `--runtime` parameter; it is kept in the name here.
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

mod lex;
use lex::{tokenize, Token};

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
    /// perf's `d_ratio(a, b)`: `a / b`, and 0 when `b` is 0 (perf's rule).
    DRatio,
    /// perf's `a % b` (written infix): the remainder of the two values truncated to
    /// integers (perf's `(long)a % (long)b`); a divisor that truncates to 0 is a division
    /// by zero (perf aborts the metric).
    Mod,
    /// perf's `a ^ b` (written infix): 1 when exactly one of the two is nonzero.
    Xor,
}

impl Func {
    fn name(self) -> &'static str {
        match self {
            Func::Min => "min",
            Func::Max => "max",
            Func::DRatio => "d_ratio",
            Func::Mod => "%",
            Func::Xor => "^",
        }
    }
}

/// perf's metric literals (`#smt_on`: 1 when SMT is on; `#num_cpus`, `#num_cpus_online`,
/// `#num_packages`, `#num_dies`, `#num_cores`; `#core_wide`: 1 when events are counted
/// for whole cores; `#system_tsc_freq`: the TSC's frequency in Hz). In a formula parsed
/// with [`parse_perf`] each is an input of that name whose value the caller supplies.
///
/// perf reads `#NAME` for every event of its tool PMU (`tools/perf/util/tool_pmu.c`'s
/// `tool_pmu__event_names`, through `expr__get_literal` in `tools/perf/util/expr.c`), so
/// `#has_pmem`, `#slots`, `#duration_time`, `#user_time`, `#system_time` and
/// `#target_cpu` are literals too; perf looks them up without regard to case.
pub const PERF_LITERALS: &[&str] = &[
    "#smt_on",
    "#num_cpus",
    "#num_cpus_online",
    "#num_packages",
    "#num_dies",
    "#num_cores",
    "#core_wide",
    "#system_tsc_freq",
    "#has_pmem",
    "#slots",
    "#duration_time",
    "#user_time",
    "#system_time",
    "#target_cpu",
];

/// What an input of a perf formula ([`parse_perf`]) stands for, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfInput<'a> {
    /// A literal of [`PERF_LITERALS`] (`#smt_on`).
    Literal(&'a str),
    /// `source_count(EVENT)`: how many counters were summed into EVENT's count.
    SourceCount(&'a str),
    /// `has_event(EVENT)`: 1 when the machine has EVENT, 0 when not.
    HasEvent(&'a str),
    /// An event (or a metric that another metric names).
    Event(&'a str),
}

impl<'a> PerfInput<'a> {
    /// Classifies an input name of a perf formula.
    pub fn of(name: &'a str) -> PerfInput<'a> {
        let call = |f: &str| {
            name.strip_prefix(f)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
        };
        if name.starts_with('#') {
            PerfInput::Literal(name)
        } else if let Some(e) = call("source_count") {
            PerfInput::SourceCount(e)
        } else if let Some(e) = call("has_event") {
            PerfInput::HasEvent(e)
        } else {
            PerfInput::Event(name)
        }
    }
}

/// Which grammar a parse uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grammar {
    Plain,
    Extended,
    Perf,
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

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, Token)>,
    pos: usize,
    extended: bool,
    perf: bool,
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
        let mut lhs = self.xor()?;
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            lhs = Expr::Or(Box::new(lhs), Box::new(self.xor()?));
        }
        Ok(lhs)
    }

    /// perf's `^` (only its tokenizer gives it), between `|` and `&` as in perf.
    fn xor(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.and()?;
        while self.peek() == Some(&Token::Xor) {
            self.pos += 1;
            lhs = Expr::Call(Func::Xor, vec![lhs, self.and()?]);
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
        loop {
            match self.peek().cloned() {
                Some(Token::Op(op)) if op.precedence() >= min => {
                    self.pos += 1;
                    let rhs = self.expr(op.precedence() + 1)?;
                    lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
                }
                // perf's `%` binds as `*` and `/` (only its tokenizer gives it).
                Some(Token::Mod) if Op::Mul.precedence() >= min => {
                    self.pos += 1;
                    let rhs = self.expr(Op::Mul.precedence() + 1)?;
                    lhs = Expr::Call(Func::Mod, vec![lhs, rhs]);
                }
                _ => break,
            }
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

    /// perf's functions of an event (`source_count(E)`, `has_event(E)`), which become
    /// inputs named as written; `strcmp_cpuid_str` is refused. None for other names. The
    /// name's token has been taken, the `(` has not.
    fn perf_call(&mut self, name: &str) -> Result<Option<Expr>, ParseError> {
        match name {
            "source_count" | "has_event" => {
                self.pos += 1;
                let event = match self.peek().cloned() {
                    Some(Token::Ident(e)) if !e.starts_with('#') => e,
                    _ => return Err(self.error(format!("{name}(...) takes an event name"))),
                };
                self.pos += 1;
                if self.peek() != Some(&Token::Close) {
                    return Err(self.error("expected ')'"));
                }
                self.pos += 1;
                Ok(Some(Expr::Var(format!("{name}({event})"))))
            }
            "strcmp_cpuid_str" => {
                self.pos -= 1;
                Err(self.error(
                    "strcmp_cpuid_str(...) compares perf's own CPUID string, which numalab does not evaluate",
                ))
            }
            _ => Ok(None),
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
                    if self.perf {
                        if let Some(e) = self.perf_call(&name)? {
                            return Ok(e);
                        }
                    }
                    let func = match name.as_str() {
                        "min" if self.extended => Func::Min,
                        "max" if self.extended => Func::Max,
                        "d_ratio" if self.perf => Func::DRatio,
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
                    if func == Func::DRatio && args.len() != 2 {
                        return Err(
                            self.error(format!("d_ratio takes 2 arguments, not {}", args.len()))
                        );
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
            Some(Token::Xor) => Err(self.error("unexpected '^'")),
            Some(Token::Mod) => Err(self.error("unexpected '%'")),
            None => Err(self.error("the formula ends too early")),
        }
    }
}

/// Parses a formula (the plain grammar: numbers, names, `+ - * /`, parentheses).
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    parse_with(text, Grammar::Plain)
}

/// Parses a formula in the extended grammar of Intel's perfmon files (see the module
/// documentation).
pub fn parse_extended(text: &str) -> Result<Expr, ParseError> {
    parse_with(text, Grammar::Extended)
}

/// Parses a metric expression of Linux perf (`perf list -j`'s `MetricExpr`; see the
/// module documentation): the extended grammar plus perf's names, literals and
/// functions.
pub fn parse_perf(text: &str) -> Result<Expr, ParseError> {
    parse_with(text, Grammar::Perf)
}

fn parse_with(text: &str, grammar: Grammar) -> Result<Expr, ParseError> {
    let tokens = tokenize(text, grammar)?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        extended: grammar != Grammar::Plain,
        perf: grammar == Grammar::Perf,
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
            Expr::Call(Func::Mod, args) if args.len() == 2 => {
                let x = args[0].compute(input)?.trunc();
                let y = args[1].compute(input)?.trunc();
                if y == 0.0 {
                    return Err(NotAvailable::DivisionByZero {
                        denominator: args[1].to_string(),
                    });
                }
                // f64 `%` keeps the dividend's sign, as C's integer `%` does.
                x % y
            }
            Expr::Call(Func::Xor, args) if args.len() == 2 => {
                let x = truth(args[0].compute(input)?);
                let y = truth(args[1].compute(input)?);
                f64::from(u8::from(x != y))
            }
            Expr::Call(func, args) => {
                let mut out: Option<f64> = None;
                for a in args {
                    let v = a.compute(input)?;
                    out = Some(match (out, func) {
                        // d_ratio: perf's rule, 0 when the denominator is 0.
                        (Some(_), Func::DRatio) if v == 0.0 => 0.0,
                        (Some(o), Func::DRatio) => o / v,
                        (None, _) => v,
                        (Some(o), Func::Min) => o.min(v),
                        (Some(o), Func::Max) => o.max(v),
                        // Two operands are handled above; any other count has no value.
                        (Some(_), Func::Mod | Func::Xor) => f64::NAN,
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
            Expr::Call(func @ (Func::Mod | Func::Xor), args) if args.len() == 2 => {
                write!(f, "({} {} {})", args[0], func.name(), args[1])
            }
            Expr::Call(func, args) => {
                let name = func.name();
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

    fn eval_p(text: &str, pairs: &[(&str, f64)]) -> Result<f64, NotAvailable> {
        parse_perf(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .eval(&env(pairs))
    }

    #[test]
    fn perf_operators_of_expr_y() {
        // perf's expr.y: `%` on values truncated to integers, at the level of `*` and
        // `/` (left to right); C's `%` keeps the dividend's sign.
        assert_eq!(eval_p("a % b", &[("a", 17.0), ("b", 5.0)]).unwrap(), 2.0);
        assert_eq!(eval_p("a % b", &[("a", 17.9), ("b", 5.2)]).unwrap(), 2.0);
        assert_eq!(eval_p("a % b", &[("a", -17.0), ("b", 5.0)]).unwrap(), -2.0);
        assert_eq!(eval_p("2 * 17 % 5", &[]).unwrap(), 4.0);
        assert_eq!(eval_p("17 % 5 * 2", &[]).unwrap(), 4.0);
        assert_eq!(eval_p("1 + 17 % 5", &[]).unwrap(), 3.0);
        // A divisor that truncates to 0 aborts perf's metric: here division by zero.
        for b in [0.0, 0.5] {
            assert!(matches!(
                eval_p("a % b", &[("a", 3.0), ("b", b)]),
                Err(NotAvailable::DivisionByZero { .. })
            ));
        }
        // `^`: 1 when exactly one side is nonzero; between `|` and `&` in precedence.
        let xor = |a: f64, b: f64| eval_p("a ^ b", &[("a", a), ("b", b)]).unwrap();
        assert_eq!(
            [xor(0.0, 0.0), xor(3.0, 0.0), xor(0.0, 2.0), xor(3.0, 2.0)],
            [0.0, 1.0, 1.0, 0.0]
        );
        // 1 | (1 ^ 1) = 1 (`|` is looser); (1 ^ 1) | 1 would also be 1, so test `&`:
        // 1 ^ (1 & 0) = 1, while (1 ^ 1) & 0 = 0.
        assert_eq!(eval_p("1 ^ 1 & 0", &[]).unwrap(), 1.0);
        assert_eq!(eval_p("0 | 1 ^ 1", &[]).unwrap(), 0.0);
        // `NaN` is perf's number NaN: a metric that yields it has no value.
        assert_eq!(eval_p("a if a > 0 else NaN", &[("a", 2.0)]).unwrap(), 2.0);
        assert!(matches!(
            eval_p("a if a > 0 else NaN", &[("a", 0.0)]),
            Err(NotAvailable::NotFinite)
        ));
        assert!(parse_perf("NaN").unwrap().variables().is_empty());
        // Display round-trips `%` and `^`.
        for text in ["a % b * c", "(a ^ b) & c", "a ^ b & c", "x - y % 3"] {
            let e = parse_perf(text).unwrap();
            assert_eq!(parse_perf(&e.to_string()).unwrap(), e, "{text} -> {e}");
        }
        // Only perf's grammar has them.
        for text in ["a % b", "a ^ b"] {
            assert!(parse_extended(text).is_err(), "{text}");
            assert!(parse(text).is_err(), "{text}");
        }
        // perf's literals are the tool PMU's event names, in any case, with `.` and `-`
        // in the name's characters (expr.l: `#[0-9a-zA-Z_\.\-]+`).
        assert_eq!(
            parse_perf("x / #SMT_ON").unwrap().variables(),
            ["#smt_on".to_string(), "x".to_string()]
                .into_iter()
                .collect()
        );
        assert_eq!(
            eval_p(
                "#slots * #has_pmem + #duration_time",
                &[("#slots", 8.0), ("#has_pmem", 1.0), ("#duration_time", 2.0)]
            )
            .unwrap(),
            10.0
        );
        let e = parse_perf("#num_cpus-1").unwrap_err();
        assert!(e.message.contains("\"#num_cpus-1\""), "{e}");
        // No hex literal in perf's grammar: 0x10 is the number 0 followed by a name.
        assert!(parse_perf("0x10").is_err());
    }

    #[test]
    fn perf_grammar_known_answers() {
        // d_ratio: a / b, and 0 (perf's rule) when b is 0; a plain `/` by 0 stays missing.
        assert_eq!(
            eval_p("d_ratio(a, b)", &[("a", 6.0), ("b", 4.0)]).unwrap(),
            1.5
        );
        assert_eq!(
            eval_p("d_ratio(a, b)", &[("a", 6.0), ("b", 0.0)]).unwrap(),
            0.0
        );
        assert_eq!(
            eval_p("100 * d_ratio(a - 1, b * 2)", &[("a", 5.0), ("b", 8.0)]).unwrap(),
            25.0
        );
        assert!(matches!(
            eval_p("a / b", &[("a", 6.0), ("b", 0.0)]),
            Err(NotAvailable::DivisionByZero { .. })
        ));
        // Literals are inputs the caller gives; missing when it has none.
        assert_eq!(
            eval_p("a / 2 if #smt_on else a", &[("a", 10.0), ("#smt_on", 1.0)]).unwrap(),
            5.0
        );
        assert_eq!(
            eval_p("a / 2 if #smt_on else a", &[("a", 10.0), ("#smt_on", 0.0)]).unwrap(),
            10.0
        );
        let e = eval_p("tsc / #system_tsc_freq", &[("tsc", 3e9)]).unwrap_err();
        assert_eq!(e.to_string(), "missing input: #system_tsc_freq not counted");
        for lit in PERF_LITERALS {
            let e = parse_perf(&format!("x * {lit}")).unwrap();
            assert!(e.variables().contains(*lit), "{lit}");
            assert_eq!(PerfInput::of(lit), PerfInput::Literal(lit));
        }
        assert_eq!(
            eval_p(
                "#num_cpus_online / #num_packages + #num_dies * #num_cores - #core_wide + #num_cpus",
                &[
                    ("#num_cpus_online", 8.0),
                    ("#num_packages", 2.0),
                    ("#num_dies", 2.0),
                    ("#num_cores", 3.0),
                    ("#core_wide", 1.0),
                    ("#num_cpus", 16.0),
                ]
            )
            .unwrap(),
            4.0 + 6.0 - 1.0 + 16.0
        );
        let e = parse_perf("#smt_off").unwrap_err();
        assert!(e.message.contains("unknown literal"), "{e}");
        // source_count(E) and has_event(E) are inputs named as written.
        let e = parse_perf("d_ratio(x, source_count(x)) if has_event(x) else 0").unwrap();
        assert_eq!(
            e.ordered_variables(),
            ["has_event(x)", "x", "source_count(x)"]
        );
        assert_eq!(
            PerfInput::of("source_count(x)"),
            PerfInput::SourceCount("x")
        );
        assert_eq!(PerfInput::of("has_event(x)"), PerfInput::HasEvent("x"));
        assert_eq!(PerfInput::of("x"), PerfInput::Event("x"));
        let counts = [
            ("x", 300.0),
            ("source_count(x)", 3.0),
            ("has_event(x)", 1.0),
        ];
        assert_eq!(e.eval(&env(&counts)).unwrap(), 100.0);
        let counts = [
            ("x", 300.0),
            ("source_count(x)", 3.0),
            ("has_event(x)", 0.0),
        ];
        assert_eq!(e.eval(&env(&counts)).unwrap(), 0.0);
        // min/max, comparisons, & and |.
        assert_eq!(
            eval_p("max(a, b, 1) - min(a, b)", &[("a", 4.0), ("b", 9.0)]).unwrap(),
            5.0
        );
        assert_eq!(
            eval_p("(a > 1) & (b < 1) | 0", &[("a", 4.0), ("b", 0.5)]).unwrap(),
            1.0
        );
        // Numbers with exponents.
        assert_eq!(eval_p("2.5e3 + 1E-3 * 1e+3", &[]).unwrap(), 2501.0);
        // perf's event names: pmu@event@, modifiers, `?`, backslash escapes.
        let e = parse_perf(
            "cpu_core@INST_RETIRED.ANY@ / cpu_core@CPU_CLK_UNHALTED.THREAD@ + msr@tsc@ * tool@duration_time@ - duration_time + cstate_pkg@c10\\-residency@ + cpu@event\\=0x3c\\,umask\\=0x0@ + L1D_PEND_MISS.FB_FULL:c1",
        )
        .unwrap();
        assert_eq!(
            e.ordered_variables(),
            [
                "cpu_core@INST_RETIRED.ANY@",
                "cpu_core@CPU_CLK_UNHALTED.THREAD@",
                "msr@tsc@",
                "tool@duration_time@",
                "duration_time",
                "cstate_pkg@c10-residency@",
                "cpu@event=0x3c,umask=0x0@",
                "L1D_PEND_MISS.FB_FULL:c1",
            ]
        );
        assert_eq!(
            eval_p(
                "cpu_core@INST_RETIRED.ANY@ / cpu_core@CPU_CLK_UNHALTED.THREAD@",
                &[
                    ("cpu_core@INST_RETIRED.ANY@", 3000.0),
                    ("cpu_core@CPU_CLK_UNHALTED.THREAD@", 1200.0)
                ]
            )
            .unwrap(),
            2.5
        );
        // A metric that names another metric is a name like any other (the caller
        // substitutes its formula).
        assert_eq!(
            eval_p("tma_retiring * 2", &[("tma_retiring", 0.25)]).unwrap(),
            0.5
        );
        // strcmp_cpuid_str is refused clearly; bad calls are errors, not panics.
        let e = parse_perf("x if strcmp_cpuid_str(0x41f0d0c0) else y").unwrap_err();
        assert!(e.message.contains("strcmp_cpuid_str"), "{e}");
        for text in [
            "d_ratio(a)",
            "d_ratio(a, b, c)",
            "source_count(1)",
            "has_event(#smt_on)",
            "source_count(a b)",
            "a\\",
            "foo(a)",
        ] {
            assert!(parse_perf(text).is_err(), "{text}");
        }
        // The other grammars refuse perf's additions.
        for text in ["d_ratio(a, b)", "a * #smt_on", "cpu@x@", "source_count(a)"] {
            assert!(parse_extended(text).is_err(), "{text}");
            assert!(parse(text).is_err(), "{text}");
        }
        // Display round-trips for perf formulas without escapes.
        for text in [
            "d_ratio(a, b) * 100 if #smt_on else max(c, 2)",
            "cpu_core@X.Y@ / source_count(cpu_core@X.Y@)",
        ] {
            let e = parse_perf(text).unwrap();
            assert_eq!(parse_perf(&e.to_string()).unwrap(), e, "{text} -> {e}");
        }
    }
}
