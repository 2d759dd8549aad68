//! The uncore's formulas as data (`data/formulas.toml`), parsed once: per figure and
//! device class the per-box expressions over event roles, evaluated by numalab's one
//! expression engine (`numalab-expr`), the formula and source reports cite, and the
//! named constants (bytes per count) with their sources.

use numalab_expr::{Expr, Input, NotAvailable};
use numalab_records::uncore::Derived;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The data file, built in.
const FORMULAS_TOML: &str = include_str!("../data/formulas.toml");

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    constant: Vec<ConstantText>,
    formula: Vec<FormulaText>,
}

/// A `[[constant]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConstantText {
    name: String,
    value: String,
    source: String,
}

/// A `[[formula]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FormulaText {
    figure: String,
    class: Option<String>,
    formula: String,
    source: String,
    #[serde(default)]
    per_box: BTreeMap<String, String>,
}

/// A named number with its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    /// What expressions call it.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Where it comes from.
    pub source: String,
}

/// A formula with its source, and the per-box expressions that compute it.
#[derive(Debug, Clone, PartialEq)]
pub struct FormulaDef {
    /// Figure and class, as reports cite it.
    pub figure: String,
    /// The class key whose event roles the expressions name (None: not per box).
    pub class: Option<String>,
    /// Formula, as reports print it.
    pub formula: String,
    /// Source.
    pub source: String,
    /// Per-box figure -> its expression over event roles (constants already replaced
    /// by their values; `_N` names still to be given a channel or link number).
    pub per_box: BTreeMap<String, Expr>,
}

impl FormulaDef {
    /// The expression of one per-box figure.
    ///
    /// # Panics
    /// When the data file gives this formula no such figure (a test checks every one
    /// derive.rs asks for).
    pub fn per_box(&self, figure: &str) -> &Expr {
        self.per_box.get(figure).unwrap_or_else(|| {
            panic!(
                "data/formulas.toml: {:?} has no per_box.{figure}",
                self.figure
            )
        })
    }
}

/// Everything the data file says.
#[derive(Debug, Clone, PartialEq)]
pub struct Formulas {
    /// The constants, in file order.
    pub constants: Vec<Constant>,
    /// The formulas, in file order (the order reports cite them in).
    pub formulas: Vec<FormulaDef>,
}

impl Formulas {
    /// Parses and checks a formulas file: every value and expression in the plain
    /// grammar, constants known, figures named once.
    pub fn parse(text: &str) -> Result<Formulas, String> {
        let file: FileText = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut constants: Vec<Constant> = Vec::new();
        for c in file.constant {
            let e =
                numalab_expr::parse(&c.value).map_err(|e| format!("constant {}: {e}", c.name))?;
            let value = e
                .eval(&|v| Input::Missing(format!("{v} is not a number")))
                .map_err(|e| format!("constant {}: {e}", c.name))?;
            if constants.iter().any(|k| k.name == c.name) {
                return Err(format!("constant {} is defined twice", c.name));
            }
            constants.push(Constant {
                name: c.name,
                value,
                source: c.source,
            });
        }
        let mut formulas: Vec<FormulaDef> = Vec::new();
        for f in file.formula {
            if formulas.iter().any(|k| k.figure == f.figure) {
                return Err(format!("formula {:?} is defined twice", f.figure));
            }
            let mut per_box = BTreeMap::new();
            for (name, text) in &f.per_box {
                let e = numalab_expr::parse(text)
                    .map_err(|e| format!("{:?} per_box.{name}: {e}", f.figure))?;
                let e = e.substitute(&|v| {
                    constants
                        .iter()
                        .find(|c| c.name == v)
                        .map(|c| Expr::Num(c.value))
                });
                per_box.insert(name.clone(), e);
            }
            formulas.push(FormulaDef {
                figure: f.figure,
                class: f.class,
                formula: f.formula,
                source: f.source,
                per_box,
            });
        }
        Ok(Formulas {
            constants,
            formulas,
        })
    }
}

/// The built-in formulas, parsed on first use.
///
/// # Panics
/// When the built-in file does not parse (a unit test parses it).
pub fn formulas() -> &'static Formulas {
    static PARSED: OnceLock<Formulas> = OnceLock::new();
    PARSED.get_or_init(|| {
        Formulas::parse(FORMULAS_TOML).unwrap_or_else(|e| panic!("data/formulas.toml: {e}"))
    })
}

/// The formula cited as `figure`.
///
/// # Panics
/// When the data file has no such formula (a test checks every one derive.rs uses).
pub fn formula(figure: &str) -> &'static FormulaDef {
    formulas()
        .formulas
        .iter()
        .find(|f| f.figure == figure)
        .unwrap_or_else(|| panic!("data/formulas.toml has no formula {figure:?}"))
}

/// The value of a named constant.
///
/// # Panics
/// When the data file has no such constant.
pub fn constant(name: &str) -> f64 {
    formulas()
        .constants
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.value)
        .unwrap_or_else(|| panic!("data/formulas.toml has no constant {name:?}"))
}

/// `expr` for channel or link `n`: each role named `<role>_N` becomes `<role>_<n>`.
pub fn numbered(expr: &Expr, n: u8) -> Expr {
    expr.substitute(&|v| {
        v.strip_suffix("_N")
            .map(|role| Expr::Var(format!("{role}_{n}")))
    })
}

/// Evaluates `expr` with each role's value from `role`: the figure, or absent with the
/// reason of the first role (in formula order) that has no value.
pub fn evaluate(expr: &Expr, role: &dyn Fn(&str) -> Result<f64, String>) -> Derived {
    match expr.eval(&|name| match role(name) {
        Ok(v) => Input::Value(v),
        Err(why) => Input::Missing(why),
    }) {
        Ok(v) => Derived::of(v),
        Err(NotAvailable::MissingInputs { inputs }) => Derived::absent(
            inputs
                .into_iter()
                .next()
                .map(|(_, why)| why)
                .unwrap_or_default(),
        ),
        Err(other) => Derived::absent(other.to_string()),
    }
}

#[cfg(test)]
mod tests;
