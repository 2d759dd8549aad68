//! `numalab mem bandwidth`'s options, read and planned.

use super::{isa, list, opt_size, pages, usage};
use crate::bandwidth::{self, Options, Plan};
use crate::budget::Budgets;
use crate::kernels::{Isa, Kernel};
use crate::{MemError, PageRequest};
use numalab_schema::{cpulist, Machine};

/// The options of a bandwidth run as given: `None` is "not given" (the default).
#[derive(Debug, Clone, Default)]
pub struct Bandwidth {
    /// Kernels, comma separated, or `all`.
    pub kernel: Option<String>,
    /// Instruction set.
    pub isa: Option<String>,
    /// Thread counts (`4`, `1,2,4,8`).
    pub threads: Option<String>,
    /// CPU selection (not read for the matrix).
    pub cpus: String,
    /// Working set of each kernel.
    pub size: Option<String>,
    /// Every node pair.
    pub matrix: bool,
    /// Timed rounds.
    pub reps: Option<usize>,
    /// Page kind [default: base].
    pub pages: Option<String>,
    /// Memory policy (not read for the matrix).
    pub policy: String,
    /// The short run.
    pub quick: bool,
}

/// A bandwidth request whose machine-free options are read.
#[derive(Debug, Clone)]
pub struct Parsed {
    kernels: Option<Vec<Kernel>>,
    threads: Vec<usize>,
    size: Option<u64>,
    pages: PageRequest,
    isa: (Isa, bool),
    request: Bandwidth,
}

impl Bandwidth {
    /// Reads the kernels, thread counts, size, page kind and ISA (in that order).
    pub fn parse(self) -> Result<Parsed, MemError> {
        let kernels = match self.kernel.as_deref() {
            None => None,
            Some("all") => Some(Kernel::all()),
            Some(t) => Some(list("--kernel", t, Kernel::parse)?),
        };
        let threads = match &self.threads {
            None => Vec::new(),
            Some(t) => cpulist::parse(t)
                .map_err(|e| usage(format!("--threads {t:?}: {}", e.reason)))?
                .into_iter()
                .map(|n| n as usize)
                .collect(),
        };
        Ok(Parsed {
            kernels,
            threads,
            size: opt_size("--size", self.size.as_deref())?,
            pages: pages(self.pages.as_deref().unwrap_or("base"))?,
            isa: isa(self.isa.as_deref())?,
            request: self,
        })
    }
}

impl Parsed {
    /// The checked plan on `machine`: the default or quick options with what was given,
    /// then the node matrix, or the thread counts on the selected CPUs
    /// ([`bandwidth::default_threads`] when none were given) with the policy.
    pub fn plan(self, machine: &Machine, budgets: &Budgets) -> Result<Plan, MemError> {
        let r = &self.request;
        let mut opts = if r.quick {
            Options::quick(machine)
        } else {
            Options::defaults(machine)
        };
        if let Some(k) = self.kernels {
            opts.kernels = k;
        }
        (opts.isa, opts.isa_forced) = self.isa;
        if let Some(s) = self.size {
            opts.working_set_bytes = s;
            opts.size_given = true;
        }
        if let Some(n) = r.reps {
            opts.reps = n;
        }
        opts.pages = self.pages;
        if r.matrix {
            return bandwidth::plan_matrix(machine, budgets, &self.threads, opts);
        }
        let cpus = super::cpus(&r.cpus, machine)?;
        let policy = super::policy(&r.policy, machine)?;
        let threads = if self.threads.is_empty() {
            bandwidth::default_threads(cpus.len(), r.quick)
        } else {
            self.threads
        };
        bandwidth::plan(machine, budgets, &cpus, &threads, &policy, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::tests::two_nodes;
    use numalab_topo::bind::MemPolicy;

    fn given(quick: bool) -> Bandwidth {
        Bandwidth {
            cpus: crate::request::defaults::CPUS.into(),
            policy: crate::request::defaults::POLICY.into(),
            quick,
            ..Bandwidth::default()
        }
    }

    /// `numalab mem bandwidth --quick` and `numalab evaluate --quick` plan the same
    /// measurement, under the same record keys.
    #[test]
    fn the_quick_request_is_the_quick_plan() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let from_flags = given(true).parse().unwrap().plan(&m, &b).unwrap();
        let quick = bandwidth::quick_plan(&m, &b).unwrap();
        assert_eq!(from_flags, quick);
        assert_eq!(from_flags.keys(), quick.keys());
        let n = m.pu_ids().len();
        let counts: Vec<usize> = quick.groups.iter().map(|g| g.pus.len()).collect();
        assert_eq!(counts, vec![1, n]);
    }

    /// The defaults: every CPU in one group, first touch, base pages, the default
    /// kernels; what is given replaces them.
    #[test]
    fn defaults_and_given_options() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let p = given(false).parse().unwrap().plan(&m, &b).unwrap();
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0].pus, m.pu_ids());
        assert_eq!(p.groups[0].policy, MemPolicy::FirstTouch);
        assert_eq!(p.options, {
            let mut o = Options::defaults(&m);
            o.working_set_bytes = p.options.working_set_bytes;
            o
        });
        let p = Bandwidth {
            kernel: Some("triad,copy".into()),
            threads: Some("1,2".into()),
            size: Some("64MiB".into()),
            reps: Some(3),
            ..given(false)
        }
        .parse()
        .unwrap()
        .plan(&m, &b)
        .unwrap();
        let names: Vec<String> = p.options.kernels.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["triad", "copy"]);
        assert_eq!(
            (p.options.working_set_bytes, p.options.size_given),
            (64 << 20, true)
        );
        assert_eq!(p.options.reps, 3);
        assert_eq!(p.groups.len(), 2);
        assert!(p
            .keys()
            .iter()
            .all(|k| k.starts_with("mem/bandwidth/cpus-")));
    }

    #[test]
    fn bad_options_are_refused_before_the_machine_is_read() {
        let e = |r: Bandwidth| r.parse().unwrap_err().to_string();
        let k = e(Bandwidth {
            kernel: Some("stream".into()),
            ..given(false)
        });
        assert!(k.contains("unknown kernel \"stream\""), "{k}");
        let t = e(Bandwidth {
            threads: Some("x".into()),
            ..given(false)
        });
        assert!(t.starts_with("--threads \"x\": "), "{t}");
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let matrix = Bandwidth {
            matrix: true,
            ..given(false)
        };
        let p = matrix.parse().unwrap().plan(&m, &b).unwrap();
        assert!(p.keys()[0].starts_with("mem/bandwidth/matrix/"));
    }
}
