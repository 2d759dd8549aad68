//! `numalab mem migrate`'s options, read and planned.

use super::{isa, list, usage};
use crate::budget::Budgets;
use crate::migrate::{self, Method, Options, PairChoice, Plan};
use crate::MemError;
use numalab_schema::{units, Machine};

/// The options of a migration run as given: `None` is "not given" (the default).
#[derive(Debug, Clone, Default)]
pub struct Migrate {
    /// Source node (with `to`).
    pub from: Option<u32>,
    /// Target node (with `from`).
    pub to: Option<u32>,
    /// Every ordered pair of distinct nodes with memory.
    pub all: bool,
    /// Page units, comma separated: sizes or `base`.
    pub unit: Option<String>,
    /// Fewest pages.
    pub min_pages: Option<u64>,
    /// Most pages.
    pub max_pages: Option<u64>,
    /// Methods, comma separated.
    pub methods: Option<String>,
    /// Rounds per cell.
    pub reps: Option<usize>,
    /// Fault the destination in before timing.
    pub prefault: bool,
    /// The link's peak, GB/s.
    pub link_peak: Option<f64>,
    /// The CPU that moves the pages.
    pub cpu: Option<u32>,
    /// ISA of the streaming copy.
    pub isa: Option<String>,
    /// The short run.
    pub quick: bool,
}

/// A migration request whose options are read and checked; only the pairs remain to
/// be found on the machine.
#[derive(Debug, Clone)]
pub struct Parsed {
    options: Options,
    counts_given: bool,
    choice: PairChoice,
    cpu: Option<u32>,
}

impl Migrate {
    /// Reads the units (`base` is this system's base page), methods, ISA, link peak
    /// (positive) and page-count bounds (in that order) into the default or quick
    /// options.
    pub fn parse(self) -> Result<Parsed, MemError> {
        let base = numalab_topo::bind::base_page_size() as u64;
        let unit = |s: &str| {
            if s.eq_ignore_ascii_case("base") {
                Ok(base)
            } else {
                units::parse_bytes(s)
            }
        };
        let units_list = self.unit.as_deref().map(|t| list("--unit", t, unit));
        let units_list = units_list.transpose()?;
        let methods = self.methods.as_deref();
        let methods = methods
            .map(|t| list("--methods", t, Method::parse))
            .transpose()?;
        let (isa, _) = isa(self.isa.as_deref())?;
        if let Some(p) = self.link_peak {
            if !(p.is_finite() && p > 0.0) {
                return Err(usage(format!(
                    "--link-peak {p}: give a positive GB/s figure"
                )));
            }
        }
        let mut opts = if self.quick {
            Options::quick()
        } else {
            Options::defaults()
        };
        opts.count_range(self.min_pages, self.max_pages)
            .map_err(MemError::Usage)?;
        if let Some(u) = units_list {
            opts.unit_bytes = u;
        }
        if let Some(m) = methods {
            opts.methods = m;
        }
        if let Some(r) = self.reps {
            opts.reps = r;
        }
        opts.prefault = self.prefault;
        opts.link_peak_gbps = self.link_peak;
        opts.isa = isa;
        let choice = match (self.from, self.to, self.all) {
            (Some(f), Some(t), _) => PairChoice::Explicit(f, t),
            (_, _, true) => PairChoice::All,
            _ => PairChoice::NearestFarthest,
        };
        Ok(Parsed {
            options: opts,
            counts_given: self.min_pages.is_some() || self.max_pages.is_some(),
            choice,
            cpu: self.cpu,
        })
    }
}

impl Parsed {
    /// The checked plan on `machine` ([`migrate::plan`]): page counts given are checked
    /// against free memory as given, default ones clamped to it.
    pub fn plan(self, machine: &Machine, budgets: &Budgets) -> Result<Plan, MemError> {
        migrate::plan(
            machine,
            budgets,
            &self.choice,
            self.cpu,
            self.options,
            self.counts_given,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::tests::two_nodes;

    fn planned(r: Migrate) -> Result<Plan, MemError> {
        let m = two_nodes();
        r.parse()?.plan(&m, &Budgets::uniform(&m, 64 << 30))
    }

    /// `numalab mem migrate` and `numalab evaluate`, quick or not, plan the same
    /// pairs and cells under the same keys.
    #[test]
    fn the_default_requests_are_evaluates_plans() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let quick = planned(Migrate {
            quick: true,
            ..Migrate::default()
        })
        .unwrap();
        assert_eq!(quick, migrate::quick_plan(&m, &b).unwrap());
        let full = planned(Migrate::default()).unwrap();
        assert_eq!(full, migrate::default_plan(&m, &b).unwrap());
        assert_eq!(full.keys(), migrate::default_plan(&m, &b).unwrap().keys());
        assert!(full.cells.len() > quick.cells.len());
    }

    #[test]
    fn given_options_replace_the_defaults_and_bad_ones_are_refused() {
        let base = numalab_topo::bind::base_page_size() as u64;
        let p = planned(Migrate {
            from: Some(0),
            to: Some(1),
            unit: Some("base".into()),
            min_pages: Some(300),
            max_pages: Some(1024),
            methods: Some("memcpy".into()),
            reps: Some(4),
            link_peak: Some(25.0),
            ..Migrate::default()
        })
        .unwrap();
        assert_eq!(p.options.unit_bytes, vec![base]);
        assert_eq!(p.options.counts, vec![256, 512, 1024]);
        assert_eq!(p.options.methods, vec![Method::parse("memcpy").unwrap()]);
        assert_eq!((p.options.reps, p.options.link_peak_gbps), (4, Some(25.0)));
        assert_eq!(p.pairs.len(), 1);
        let e = |r: Migrate| r.parse().unwrap_err().to_string();
        assert_eq!(
            e(Migrate {
                link_peak: Some(-3.0),
                ..Migrate::default()
            }),
            "--link-peak -3: give a positive GB/s figure"
        );
        assert!(e(Migrate {
            methods: Some("dma".into()),
            ..Migrate::default()
        })
        .starts_with("--methods: "));
        assert!(e(Migrate {
            max_pages: Some(0),
            ..Migrate::default()
        })
        .contains("1 page or more"));
        // Issue 50's campaign: --reps 18446744073709551615 was accepted.
        let many = planned(Migrate {
            reps: Some(usize::MAX),
            ..Migrate::default()
        })
        .unwrap_err();
        assert_eq!(
            many.to_string(),
            format!("--reps {}: at most 1000000 rounds per cell", usize::MAX)
        );
        assert!(matches!(many, MemError::Usage(_)), "{many}");
    }
}
