//! `numalab mem loaded`'s options, read and planned.

use super::{list, opt_size, pages};
use crate::budget::Budgets;
use crate::loaded::{self, Fit, Options, Plan, Traffic};
use crate::{MemError, PageRequest};
use numalab_schema::Machine;

/// The options of a loaded-latency run as given: `None` is "not given" (the default).
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// CPUs: the first chases, the others generate traffic.
    pub cpus: String,
    /// How many of the other CPUs generate traffic.
    pub generators: Option<usize>,
    /// Traffic kind (`read`, `rw`).
    pub traffic: String,
    /// Delays between chunks, ns, comma separated, `idle` for none.
    pub delays: Option<String>,
    /// Duration of each point, ms.
    pub point_ms: Option<u64>,
    /// Chaser working set.
    pub size: Option<String>,
    /// Working set of all generators together.
    pub traffic_size: Option<String>,
    /// Page kind.
    pub pages: Option<String>,
    /// Memory policy.
    pub policy: String,
    /// The short run.
    pub quick: bool,
}

/// A loaded-latency request whose machine-free options are read.
#[derive(Debug, Clone)]
pub struct Parsed {
    traffic: Traffic,
    delays: Option<Vec<Option<u64>>>,
    size: Option<u64>,
    traffic_size: Option<u64>,
    pages: Option<PageRequest>,
    request: Loaded,
}

/// One delay of `--delays`: ns, or `idle` (no traffic).
fn delay(text: &str) -> Result<Option<u64>, String> {
    if text.eq_ignore_ascii_case("idle") {
        Ok(None)
    } else {
        text.parse::<u64>()
            .map(Some)
            .map_err(|_| format!("{text:?} is not a delay in ns (or idle)"))
    }
}

impl Loaded {
    /// Reads the traffic kind, delays, sizes and page kind (in that order).
    pub fn parse(self) -> Result<Parsed, MemError> {
        Ok(Parsed {
            traffic: Traffic::parse(&self.traffic).map_err(MemError::Usage)?,
            delays: self
                .delays
                .as_deref()
                .map(|t| list("--delays", t, delay))
                .transpose()?,
            size: opt_size("--size", self.size.as_deref())?,
            traffic_size: opt_size("--traffic-size", self.traffic_size.as_deref())?,
            pages: self.pages.as_deref().map(pages).transpose()?,
            request: self,
        })
    }
}

impl Parsed {
    /// The checked plan on `machine`: the CPUs and policy, the default or quick options
    /// with what was given (a point lasts at least 1 ms), the defaults not given
    /// fitted to small nodes ([`loaded::fitted_plan`]).
    pub fn plan(self, machine: &Machine, budgets: &Budgets) -> Result<Plan, MemError> {
        let r = &self.request;
        let cpus = super::cpus(&r.cpus, machine)?;
        let policy = super::policy(&r.policy, machine)?;
        let mut opts = if r.quick {
            Options::quick(machine)
        } else {
            Options::defaults(machine)
        };
        opts.traffic = self.traffic;
        if let Some(p) = self.pages {
            opts.pages = p;
        }
        if let Some(d) = self.delays {
            opts.delays_ns = d;
        }
        if let Some(ms) = r.point_ms {
            // Past the longest duration an option takes, a point's end (in ns) overflowed.
            let max = numalab_schema::units::MAX_DURATION.as_millis() as u64;
            if ms > max {
                return Err(MemError::Usage(format!(
                    "--point-ms {ms}: at most {max} ms (365 days) per point"
                )));
            }
            opts.point_ms = ms.max(1);
        }
        if let Some(s) = self.size {
            opts.chase_bytes = s;
        }
        if let Some(s) = self.traffic_size {
            opts.generators_bytes = s;
        }
        let fit = Fit {
            chase: self.size.is_none(),
            generators: self.traffic_size.is_none(),
            generator_count: r.generators.is_none(),
        };
        loaded::fitted_plan(machine, budgets, &cpus, r.generators, &policy, opts, fit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::tests::two_nodes;

    /// The command line's defaults (`--cpus all --traffic read --policy first-touch`).
    fn given() -> Loaded {
        Loaded {
            cpus: crate::request::defaults::CPUS.into(),
            traffic: crate::request::defaults::TRAFFIC.into(),
            policy: crate::request::defaults::POLICY.into(),
            ..Loaded::default()
        }
    }

    fn planned(r: Loaded) -> Result<Plan, MemError> {
        let m = two_nodes();
        r.parse()?.plan(&m, &Budgets::uniform(&m, 64 << 30))
    }

    /// `numalab mem loaded --quick` and `numalab evaluate --quick` plan the same curve
    /// under the same key.
    #[test]
    fn the_quick_request_is_the_quick_plan() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let p = planned(Loaded {
            quick: true,
            ..given()
        })
        .unwrap();
        let quick = loaded::quick_plan(&m, &b).unwrap();
        assert_eq!(p, quick);
        assert_eq!(p.key, quick.key);
        assert_eq!(p.chaser, m.pu_ids()[0]);
    }

    #[test]
    fn given_options_replace_the_defaults_and_bad_ones_name_their_option() {
        let p = planned(Loaded {
            delays: Some("idle, 500,0".into()),
            point_ms: Some(0),
            traffic: "rw".into(),
            size: Some("512MiB".into()),
            generators: Some(2),
            ..given()
        })
        .unwrap();
        assert_eq!(p.options.delays_ns, vec![None, Some(500), Some(0)]);
        assert_eq!(p.options.point_ms, 1);
        assert_eq!(p.options.traffic, Traffic::ReadWrite);
        assert_eq!(p.options.chase_bytes, 512 << 20);
        assert_eq!(p.generators.len(), 2);
        let e = planned(Loaded {
            delays: Some("idle,soon".into()),
            ..given()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--delays: \"soon\" is not a delay in ns (or idle)"
        );
        let e = planned(Loaded {
            traffic: "write".into(),
            ..given()
        })
        .unwrap_err();
        assert!(e.to_string().contains("use read or rw"), "{e}");
    }
}
