//! `numalab mem latency`'s options, read and planned.

use super::{list, opt_size, pages, size, usage};
use crate::budget::Budgets;
use crate::chase::Order;
use crate::latency::{self, Options, Plan};
use crate::{MemError, PageRequest};
use numalab_schema::Machine;

/// The options of a latency run as given: `None` is "not given" (the default).
#[derive(Debug, Clone, Default)]
pub struct Latency {
    /// CPUs that chase [default: the first CPU].
    pub cpus: Option<String>,
    /// Page kinds, comma separated (replaced by `pages` when given).
    pub page_kinds: String,
    /// Smallest working set of the sweep.
    pub min: String,
    /// Largest working set of the sweep.
    pub max: Option<String>,
    /// Points per doubling.
    pub per_octave: Option<u32>,
    /// Every node pair at one working set.
    pub matrix: bool,
    /// Working set of the matrix.
    pub size: Option<String>,
    /// Line order.
    pub order: String,
    /// Timed batches per point.
    pub batches: Option<usize>,
    /// Distance between the chain's slots.
    pub stride: Option<String>,
    /// Seed of the random order.
    pub seed: Option<u64>,
    /// One page kind.
    pub pages: Option<String>,
    /// Memory policy (not read for the matrix).
    pub policy: String,
    /// The short run.
    pub quick: bool,
}

/// A latency request whose machine-free options are read.
#[derive(Debug, Clone)]
pub struct Parsed {
    page_kinds: Vec<PageRequest>,
    order: Order,
    min: u64,
    max: Option<u64>,
    size: Option<u64>,
    request: Latency,
}

impl Latency {
    /// Reads the page kinds, order and sizes (in that order).
    pub fn parse(self) -> Result<Parsed, MemError> {
        let page_kinds = match &self.pages {
            Some(p) => vec![pages(p)?],
            None => list("--page-kinds", &self.page_kinds, PageRequest::parse)?,
        };
        Ok(Parsed {
            page_kinds,
            order: Order::parse(&self.order).map_err(MemError::Usage)?,
            min: size("--min", &self.min)?,
            max: opt_size("--max", self.max.as_deref())?,
            size: opt_size("--size", self.size.as_deref())?,
            request: self,
        })
    }
}

impl Parsed {
    /// The checked plan on `machine`: the quick, idle (matrix) or default options with
    /// what was given, then the node matrix at the given or fitted working set
    /// ([`latency::fitted_plan_matrix`]), or a curve per CPU and page kind over the
    /// sweep from `--min` to `--max` ([`latency::sweep`]).
    pub fn plan(self, machine: &Machine, budgets: &Budgets) -> Result<Plan, MemError> {
        let r = &self.request;
        let mut opts = match (r.quick, r.matrix) {
            (true, _) => Options::quick(machine),
            (false, true) => Options::idle(machine),
            (false, false) => Options::defaults(machine),
        };
        opts.order = self.order;
        if let Some(b) = r.batches {
            latency::check_batches(b)?;
            opts.batches = b;
        }
        if let Some(st) = &r.stride {
            opts.set_stride(size("--stride", st)?)
                .map_err(|e| usage(format!("--stride {st}: {e}")))?;
        }
        if let Some(s) = r.seed {
            opts.seed = s;
        }
        if r.matrix {
            // A default that does not fit small nodes is reduced (and says so); an
            // explicit --size is checked as given.
            return latency::fitted_plan_matrix(
                machine,
                budgets,
                &self.page_kinds,
                self.size,
                opts,
            );
        }
        let cpus = match &r.cpus {
            Some(c) => super::cpus(c, machine)?,
            None => super::first_cpu(machine),
        };
        let policy = super::policy(&r.policy, machine)?;
        let first = *cpus.first().ok_or_else(|| usage("--cpus selects no CPU"))?;
        let line = opts.stride_bytes;
        // A default sweep's end is fitted to the nodes' memory (with a note); an
        // explicit --max is checked as given.
        let mut note = None;
        let max = match self.max {
            Some(m) => Some(m),
            None => {
                let wanted =
                    *latency::sweep(machine, first, self.min, None, Some(1), r.quick, line)?
                        .last()
                        .unwrap_or(&self.min);
                let (fitted, n) =
                    latency::fitted_sweep_max(machine, budgets, &cpus, &policy, wanted);
                note = n;
                Some(fitted.max(self.min))
            }
        };
        let sizes = latency::sweep(machine, first, self.min, max, r.per_octave, r.quick, line)?;
        let mut p = latency::plan(
            machine,
            budgets,
            &cpus,
            &policy,
            &self.page_kinds,
            sizes,
            opts,
        )?;
        p.notes.extend(note);
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::tests::two_nodes;

    /// The command line's defaults (`--page-kinds base,thp --min 4KiB --order global
    /// --policy first-touch`).
    fn given() -> Latency {
        Latency {
            page_kinds: crate::request::defaults::PAGE_KINDS.into(),
            min: crate::request::defaults::MIN.into(),
            order: crate::request::defaults::ORDER.into(),
            policy: crate::request::defaults::POLICY.into(),
            ..Latency::default()
        }
    }

    fn planned(r: Latency) -> Result<Plan, MemError> {
        let m = two_nodes();
        r.parse()?.plan(&m, &Budgets::uniform(&m, 64 << 30))
    }

    /// `numalab mem latency` and `numalab evaluate` plan the same curves (first CPU,
    /// base and THP pages, the default sweep), quick or not, under the same keys.
    #[test]
    fn the_default_requests_are_evaluates_plans() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let quick = planned(Latency {
            quick: true,
            ..given()
        })
        .unwrap();
        assert_eq!(quick, latency::quick_plan(&m, &b).unwrap());
        let full = planned(given()).unwrap();
        assert_eq!(full, latency::default_plan(&m, &b).unwrap());
        let cpu = m.pu_ids()[0];
        assert_eq!(
            full.keys(),
            [
                format!("mem/latency/cpu{cpu}/first-touch/base"),
                format!("mem/latency/cpu{cpu}/first-touch/thp")
            ]
        );
        // The full sweep has two points per octave, the quick one one.
        assert!(full.cells[0].sizes.len() > quick.cells[0].sizes.len());
    }

    /// The matrix at the default working set is the fitted idle matrix (what evaluate
    /// measures on huge pages); given options replace the defaults.
    #[test]
    fn the_matrix_and_given_options() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let matrix = planned(Latency {
            matrix: true,
            pages: Some("thp".into()),
            ..given()
        })
        .unwrap();
        let fitted =
            latency::fitted_plan_matrix(&m, &b, &[PageRequest::Thp], None, Options::idle(&m));
        assert_eq!(matrix, fitted.unwrap());
        assert!(matrix
            .keys()
            .iter()
            .all(|k| k.starts_with("mem/latency/matrix/")));
        let p = planned(Latency {
            batches: Some(7),
            stride: Some("128".into()),
            seed: Some(9),
            order: "page".into(),
            ..given()
        })
        .unwrap();
        assert_eq!(
            (p.options.batches, p.options.stride_bytes, p.options.seed),
            (7, 128, 9)
        );
        assert_eq!(p.options.order, Order::PageLocal);
        let e = planned(Latency {
            stride: Some("96".into()),
            ..given()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--stride 96: a power of two from 8 to 4096 bytes"
        );
        let e = planned(Latency {
            min: "1MiB".into(),
            max: Some("4KiB".into()),
            ..given()
        })
        .unwrap_err();
        assert!(e.to_string().contains("larger than --max"), "{e}");
        // --batches is checked for the matrix too (u64::MAX was a capacity overflow in
        // its worker thread, 4 a failed summary).
        for matrix in [false, true] {
            for (b, text) in [
                (
                    usize::MAX,
                    format!("--batches {}: at most 1000000", usize::MAX),
                ),
                (4, "--batches must be at least 5".to_string()),
            ] {
                let e = planned(Latency {
                    batches: Some(b),
                    matrix,
                    ..given()
                })
                .unwrap_err();
                assert_eq!(e.to_string(), text);
            }
        }
    }
}
