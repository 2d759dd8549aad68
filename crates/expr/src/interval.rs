//! Evaluating a formula over intervals: what a metric can be when each input is only
//! known to lie in `[lo, hi]` (multiplexed counts, `numalab_pmu::mux`).
//!
//! This is plain interval arithmetic over the expression tree, chosen over first-order
//! (derivative) propagation because it is a guaranteed outer bound, needs no
//! assumption that errors are small or independent, and handles `min`, `max`,
//! comparisons and `if` exactly where first-order propagation has no derivative. Its
//! price is the dependency problem: a variable named twice is treated as two
//! independent inputs, so `X / (X + Y)` gets a wider interval than it can really
//! take. The result is never narrower than the truth, only sometimes wider.
//!
//! Rules: `+ - *` and unary minus take the extremes of the endpoint combinations; a
//! division whose denominator interval is exactly `[0, 0]` is a division by zero (the
//! metric has no value, as in [`Expr::eval`]), one whose denominator interval merely
//! contains 0 is unbounded (`[-inf, +inf]`: the caller says "no finite bound");
//! `min`/`max` take the minimum/maximum of the endpoints; a comparison is `[1, 1]`
//! when it holds for every point of its operands, `[0, 0]` when for none, else
//! `[0, 1]`; `&`, `|` likewise; `then if cond else otherwise` is the branch the
//! condition decides, or the hull of both branches when the condition's interval
//! holds both true and false points.

use crate::{Cmp, Expr, Func, Input, NotAvailable, Op};

/// A closed interval `[lo, hi]` (`lo <= hi`; either may be infinite).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

impl Interval {
    /// The interval `[lo, hi]` (the ends are sorted).
    pub fn new(lo: f64, hi: f64) -> Self {
        Interval {
            lo: lo.min(hi),
            hi: lo.max(hi),
        }
    }

    /// The single point `v`.
    pub fn point(v: f64) -> Self {
        Interval { lo: v, hi: v }
    }

    /// `v` give or take `rel * |v|`.
    pub fn relative(v: f64, rel: f64) -> Self {
        let d = v.abs() * rel.abs();
        Interval::new(v - d, v + d)
    }

    /// Whether both ends are finite.
    pub fn is_bounded(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// Whether `x` lies in it.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    fn unbounded() -> Self {
        Interval {
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        }
    }

    fn hull(self, o: Interval) -> Self {
        Interval {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
        }
    }

    fn of4(a: f64, b: f64, c: f64, d: f64) -> Self {
        // 0 * inf is NaN: an unbounded factor times a bounded one stays unbounded.
        let vals = [a, b, c, d];
        if vals.iter().any(|v| v.is_nan()) {
            return Interval::unbounded();
        }
        Interval {
            lo: vals.iter().copied().fold(f64::INFINITY, f64::min),
            hi: vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// Truth of an interval: Some(true) when no point is 0, Some(false) when it is `[0, 0]`,
/// None when it holds both.
fn truth_of(x: Interval) -> Option<bool> {
    if x.lo == 0.0 && x.hi == 0.0 {
        Some(false)
    } else if x.contains(0.0) || x.lo.is_nan() || x.hi.is_nan() {
        None
    } else {
        Some(true)
    }
}

fn from_truth(t: Option<bool>) -> Interval {
    match t {
        Some(true) => Interval::point(1.0),
        Some(false) => Interval::point(0.0),
        None => Interval::new(0.0, 1.0),
    }
}

/// Whether `c` holds for every pair of points (Some(true)), for none (Some(false)).
fn cmp_of(c: Cmp, x: Interval, y: Interval) -> Option<bool> {
    let all_lt = x.hi < y.lo;
    let all_le = x.hi <= y.lo;
    let all_gt = x.lo > y.hi;
    let all_ge = x.lo >= y.hi;
    let disjoint = all_lt || all_gt;
    let same_point = x.lo == x.hi && y.lo == y.hi && x.lo == y.lo;
    let (all, none) = match c {
        Cmp::Lt => (all_lt, all_ge),
        Cmp::Le => (all_le, all_gt),
        Cmp::Gt => (all_gt, all_le),
        Cmp::Ge => (all_ge, all_lt),
        Cmp::Eq => (same_point, disjoint),
        Cmp::Ne => (disjoint, same_point),
    };
    if all {
        Some(true)
    } else if none {
        Some(false)
    } else {
        None
    }
}

impl Expr {
    /// Evaluates over intervals: `input` gives each variable's value and `range` the
    /// interval it is known to lie in (None: the value itself, exact). Missing inputs
    /// and a denominator that is exactly 0 are errors as in [`Expr::eval`]; a
    /// denominator interval containing 0 gives `[-inf, +inf]`.
    pub fn eval_interval(
        &self,
        input: &dyn Fn(&str) -> Input,
        range: &dyn Fn(&str) -> Option<Interval>,
    ) -> Result<Interval, NotAvailable> {
        // Missing inputs are reported as eval reports them.
        self.eval(input)?;
        self.interval(input, range)
    }

    fn interval(
        &self,
        input: &dyn Fn(&str) -> Input,
        range: &dyn Fn(&str) -> Option<Interval>,
    ) -> Result<Interval, NotAvailable> {
        let go = |e: &Expr| e.interval(input, range);
        Ok(match self {
            Expr::Num(v) => Interval::point(*v),
            Expr::Var(name) => match range(name) {
                Some(r) => r,
                None => match input(name) {
                    Input::Value(v) => Interval::point(v),
                    Input::Missing(why) => {
                        return Err(NotAvailable::MissingInputs {
                            inputs: vec![(name.clone(), why)],
                        })
                    }
                },
            },
            Expr::Neg(e) => {
                let x = go(e)?;
                Interval::new(-x.hi, -x.lo)
            }
            Expr::Bin(op, a, b) => {
                let x = go(a)?;
                let y = go(b)?;
                match op {
                    Op::Add => Interval::new(x.lo + y.lo, x.hi + y.hi),
                    Op::Sub => Interval::new(x.lo - y.hi, x.hi - y.lo),
                    Op::Mul => Interval::of4(x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi),
                    Op::Div => {
                        if y.lo == 0.0 && y.hi == 0.0 {
                            return Err(NotAvailable::DivisionByZero {
                                denominator: b.to_string(),
                            });
                        }
                        if y.contains(0.0) {
                            Interval::unbounded()
                        } else {
                            let (r1, r2) = (1.0 / y.lo, 1.0 / y.hi);
                            Interval::of4(x.lo * r1, x.lo * r2, x.hi * r1, x.hi * r2)
                        }
                    }
                }
            }
            Expr::Cmp(c, a, b) => from_truth(cmp_of(*c, go(a)?, go(b)?)),
            Expr::And(a, b) => {
                let (x, y) = (truth_of(go(a)?), truth_of(go(b)?));
                from_truth(match (x, y) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Expr::Or(a, b) => {
                let (x, y) = (truth_of(go(a)?), truth_of(go(b)?));
                from_truth(match (x, y) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Expr::Call(Func::Mod | Func::Xor, _) => {
                // perf's `%` and `^`: exact where every input is exact, else no bound
                // is claimed.
                let v = self.eval(input)?;
                let exact = self
                    .ordered_variables()
                    .iter()
                    .all(|n| range(n).is_none_or(|r| r.lo == r.hi));
                if exact {
                    Interval::point(v)
                } else {
                    Interval::unbounded()
                }
            }
            Expr::Call(func, args) => {
                let mut out: Option<Interval> = None;
                for a in args {
                    let v = go(a)?;
                    out = Some(match (out, func) {
                        (None, _) => v,
                        (Some(o), Func::Min) => Interval::new(o.lo.min(v.lo), o.hi.min(v.hi)),
                        (Some(o), Func::Max) => Interval::new(o.lo.max(v.lo), o.hi.max(v.hi)),
                        // d_ratio: perf's rule, 0 where the denominator is 0; a
                        // denominator that may be 0 but need not be leaves it unbounded.
                        (Some(_), Func::DRatio) if v.lo == 0.0 && v.hi == 0.0 => {
                            Interval::point(0.0)
                        }
                        (Some(_), Func::DRatio) if v.contains(0.0) => Interval::unbounded(),
                        (Some(o), Func::DRatio) => {
                            let (r1, r2) = (1.0 / v.lo, 1.0 / v.hi);
                            Interval::of4(o.lo * r1, o.lo * r2, o.hi * r1, o.hi * r2)
                        }
                        (Some(_), Func::Mod | Func::Xor) => Interval::unbounded(),
                    });
                }
                out.unwrap_or(Interval::point(f64::NAN))
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => match truth_of(go(cond)?) {
                Some(true) => go(then)?,
                Some(false) => go(otherwise)?,
                None => go(then)?.hull(go(otherwise)?),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_extended;
    use std::collections::HashMap;

    /// Evaluates `text` with each (name, value, relative half-width).
    fn iv(text: &str, vars: &[(&str, f64, f64)]) -> Result<Interval, NotAvailable> {
        let m: HashMap<String, (f64, f64)> = vars
            .iter()
            .map(|(k, v, r)| (k.to_string(), (*v, *r)))
            .collect();
        let e = parse_extended(text).unwrap();
        e.eval_interval(
            &|n| match m.get(n) {
                Some((v, _)) => Input::Value(*v),
                None => Input::Missing("not counted".into()),
            },
            &|n| m.get(n).map(|(v, r)| Interval::relative(*v, *r)),
        )
    }

    fn close(i: Interval, lo: f64, hi: f64) {
        assert!(
            (i.lo - lo).abs() < 1e-9 && (i.hi - hi).abs() < 1e-9,
            "{i:?} != [{lo}, {hi}]"
        );
    }

    #[test]
    fn add_sub_mul_neg() {
        // A in [9, 11], B in [18, 22].
        let v = [("A", 10.0, 0.1), ("B", 20.0, 0.1)];
        close(iv("A + B", &v).unwrap(), 27.0, 33.0);
        close(iv("A - B", &v).unwrap(), -13.0, -7.0);
        close(iv("A * B", &v).unwrap(), 162.0, 242.0);
        close(iv("-A", &v).unwrap(), -11.0, -9.0);
        // Signs: [-1, 3] * [-2, 4] = [-6, 12] (3 * -2 is the lowest).
        let s = [("X", 1.0, 2.0), ("Y", 1.0, 3.0)];
        close(iv("X * Y", &s).unwrap(), -6.0, 12.0);
        // Exact inputs stay exact.
        close(
            iv("A + B", &[("A", 1.0, 0.0), ("B", 2.0, 0.0)]).unwrap(),
            3.0,
            3.0,
        );
    }

    #[test]
    fn perfs_d_ratio_over_intervals() {
        let e = crate::parse_perf("d_ratio(a, b)").unwrap();
        let at = |a: Interval, b: Interval| {
            let input = |_: &str| Input::Value(1.0);
            let range = move |n: &str| Some(if n == "a" { a } else { b });
            e.eval_interval(&input, &range).unwrap()
        };
        let r = at(Interval::new(2.0, 4.0), Interval::new(1.0, 2.0));
        assert_eq!((r.lo, r.hi), (1.0, 4.0));
        let r = at(Interval::new(2.0, 4.0), Interval::point(0.0));
        assert_eq!((r.lo, r.hi), (0.0, 0.0));
        assert!(!at(Interval::new(2.0, 4.0), Interval::new(0.0, 1.0)).is_bounded());
    }

    #[test]
    fn division() {
        // [9, 11] / [18, 22] = [9/22, 11/18].
        let v = [("A", 10.0, 0.1), ("B", 20.0, 0.1)];
        close(iv("A / B", &v).unwrap(), 9.0 / 22.0, 11.0 / 18.0);
        // Negative denominator: [9, 11] / [-22, -18] = [-11/18, -9/22].
        close(iv("A / -B", &v).unwrap(), -11.0 / 18.0, -9.0 / 22.0);
        // A denominator interval containing 0 has no finite bound...
        let z = iv("A / B", &[("A", 10.0, 0.1), ("B", 1.0, 1.5)]).unwrap();
        assert!(!z.is_bounded(), "{z:?}");
        // ...and an exact zero is a division by zero, as in eval.
        assert!(matches!(
            iv("A / B", &[("A", 10.0, 0.1), ("B", 0.0, 0.5)]),
            Err(NotAvailable::DivisionByZero { .. })
        ));
        // The dependency problem: X / X is 1, the interval is wider (an outer bound).
        let d = iv("A / A", &v).unwrap();
        assert!(d.contains(1.0) && d.lo < 0.9 && d.hi > 1.1, "{d:?}");
    }

    #[test]
    fn min_max() {
        // A in [9, 11], B in [10.5, 11.5], C exact 5.
        let v = [("A", 10.0, 0.1), ("B", 11.0, 0.5 / 11.0), ("C", 5.0, 0.0)];
        close(iv("min(A, B)", &v).unwrap(), 9.0, 11.0);
        close(iv("max(A, B)", &v).unwrap(), 10.5, 11.5);
        close(iv("min(A, B, C)", &v).unwrap(), 5.0, 5.0);
        close(iv("max(A, C)", &v).unwrap(), 9.0, 11.0);
    }

    #[test]
    fn comparisons_and_conditionals() {
        let v = [("A", 10.0, 0.1), ("B", 20.0, 0.1), ("C", 10.5, 0.1)];
        // Decided for every point.
        close(iv("A < B", &v).unwrap(), 1.0, 1.0);
        close(iv("A > B", &v).unwrap(), 0.0, 0.0);
        // Overlapping: undecided.
        close(iv("A < C", &v).unwrap(), 0.0, 1.0);
        close(iv("(A < B) & (A < C)", &v).unwrap(), 0.0, 1.0);
        close(iv("(A > B) & (A < C)", &v).unwrap(), 0.0, 0.0);
        close(iv("(A < B) | (A < C)", &v).unwrap(), 1.0, 1.0);
        // if: the decided branch only, else the hull of both.
        close(iv("A if A < B else B", &v).unwrap(), 9.0, 11.0);
        close(iv("A if A > B else B", &v).unwrap(), 18.0, 22.0);
        close(iv("A if A < C else B", &v).unwrap(), 9.0, 22.0);
    }

    #[test]
    fn missing_inputs_are_named() {
        let e = iv("A / Q", &[("A", 1.0, 0.1)]).unwrap_err();
        assert_eq!(e.to_string(), "missing input: Q not counted");
    }

    #[test]
    fn truth_rules_agree() {
        // `truth` (the point rule) and `truth_of` (its interval form) in step.
        for v in [0.0, 1.0, -2.0, 0.5] {
            assert_eq!(truth_of(Interval::point(v)), Some(crate::truth(v)), "{v}");
        }
    }
}
