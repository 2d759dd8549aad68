//! The probes' options as a person gives them (text, as on `numalab mem`'s command
//! line), read and checked into plans, with errors that name the option.
//!
//! Each probe's request is read in two steps, in the order the checks have always run:
//! `parse` reads what needs no machine (lists, sizes, page kinds, the ISA), so a typo is
//! refused before the topology is read; `plan` then resolves CPUs and policies against
//! the machine, applies the defaults and builds the checked plan.

pub mod bandwidth;
pub mod latency;
pub mod loaded;
pub mod migrate;

pub use bandwidth::Bandwidth;
pub use latency::Latency;
pub use loaded::Loaded;
pub use migrate::Migrate;

/// The options' defaults as text, the one source of `numalab mem`'s flags' defaults and
/// of the requests' tests that plan them as `numalab evaluate` does.
pub mod defaults {
    /// `--policy`: each thread's pages on its own node.
    pub const POLICY: &str = "first-touch";
    /// `--cpus` of bandwidth and loaded latency: every CPU.
    pub const CPUS: &str = "all";
    /// `--page-kinds` of latency: a curve on base pages and one on THP.
    pub const PAGE_KINDS: &str = "base,thp";
    /// `--min` of latency: the smallest working set of the sweep.
    pub const MIN: &str = "4KiB";
    /// `--order` of latency: lines uniformly random over the working set.
    pub const ORDER: &str = "global";
    /// `--traffic` of loaded latency: reads.
    pub const TRAFFIC: &str = "read";
}

use crate::kernels::{self, Isa, IsaExt};
use crate::{MemError, PageRequest};
use numalab_schema::{units, Machine};
use numalab_topo::bind::MemPolicy;
use numalab_topo::select::CpuSelection;

fn usage(msg: impl Into<String>) -> MemError {
    MemError::Usage(msg.into())
}

/// A size in bytes (`64KiB`, `1GiB`, `4096`), refused when unreadable or 0; the error
/// names `flag`.
pub fn size(flag: &str, text: &str) -> Result<u64, MemError> {
    let b = units::parse_bytes(text).map_err(|e| usage(format!("{flag}: {e}")))?;
    if b == 0 {
        return Err(usage(format!("{flag} {text:?}: must be larger than 0")));
    }
    Ok(b)
}

/// An optional size ([`size`]).
fn opt_size(flag: &str, text: Option<&str>) -> Result<Option<u64>, MemError> {
    text.map(|t| size(flag, t)).transpose()
}

/// A comma-separated list read item by item with `item`: empty items are left out, an
/// empty list is refused, and an item's error is prefixed with `flag` unless it already
/// names an option.
pub fn list<T>(
    flag: &str,
    text: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, MemError> {
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(usage(format!("{flag}: the list is empty")));
    }
    items
        .into_iter()
        .map(|s| {
            item(s).map_err(|e| {
                usage(if e.starts_with("--") {
                    e
                } else {
                    format!("{flag}: {e}")
                })
            })
        })
        .collect()
}

/// A page kind (`base`, `thp`, `hugetlb[:SIZE]`).
pub fn pages(text: &str) -> Result<PageRequest, MemError> {
    PageRequest::parse(text).map_err(MemError::Usage)
}

/// The ISA of `--isa` and whether it was given: none given is the widest this CPU has;
/// one it cannot run is unsupported, with the ones it can.
pub fn isa(text: Option<&str>) -> Result<(Isa, bool), MemError> {
    let Some(t) = text else {
        return Ok((kernels::best(), false));
    };
    let isa = kernels::parse_isa(t).map_err(|e| usage(format!("--isa: {e}")))?;
    if !isa.available() {
        let have: Vec<&str> = kernels::available().iter().map(|i| i.name()).collect();
        return Err(MemError::Unsupported(format!(
            "--isa {t}: this CPU cannot run {isa} code (it has {})",
            have.join(", ")
        )));
    }
    Ok((isa, true))
}

/// The CPUs of a selection (`0-3,8`, `node:N`, `package:N`, `core:N`, `all`) on
/// `machine` ([`CpuSelection`]).
pub fn cpus(text: &str, machine: &Machine) -> Result<Vec<u32>, MemError> {
    let sel = CpuSelection::parse(text).map_err(|e| usage(e.to_string()))?;
    sel.resolve(machine).map_err(|e| usage(e.to_string()))
}

/// A memory policy on `machine` ([`numalab_topo::select::parse_policy`]).
pub fn policy(text: &str, machine: &Machine) -> Result<MemPolicy, MemError> {
    numalab_topo::select::parse_policy(text, machine).map_err(|e| usage(e.to_string()))
}

/// The chasing CPU when none is chosen: the machine's first.
pub fn first_cpu(machine: &Machine) -> Vec<u32> {
    machine.pu_ids().into_iter().take(1).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use numalab_schema::ErrorClass;

    pub(crate) fn fixture(name: &str) -> Machine {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology")
            .join(name);
        numalab_topo::machine(&numalab_topo::Input::detect(&p).unwrap()).unwrap()
    }

    /// The two-node fixture the requests' tests plan on.
    pub(crate) fn two_nodes() -> Machine {
        fixture("32em64t-2n8c+dax+nvme+mic+dimms.xml")
    }

    fn class(e: MemError) -> (ErrorClass, String) {
        use numalab_schema::Classify;
        (e.class(), e.to_string())
    }

    #[test]
    fn sizes_and_lists_name_their_option() {
        assert_eq!(size("--size", "64KiB").unwrap(), 64 << 10);
        let (c, m) = class(size("--size", "0").unwrap_err());
        assert_eq!(c, ErrorClass::Usage);
        assert_eq!(m, "--size \"0\": must be larger than 0");
        assert!(class(size("--max", "12Q").unwrap_err())
            .1
            .starts_with("--max: "));
        let parse = |s: &str| s.parse::<u32>().map_err(|_| format!("{s:?} is no number"));
        assert_eq!(list("--n", " 1, ,2 ", parse).unwrap(), vec![1, 2]);
        assert_eq!(
            class(list("--n", " , ", parse).unwrap_err()).1,
            "--n: the list is empty"
        );
        assert_eq!(
            class(list("--n", "1,x", parse).unwrap_err()).1,
            "--n: \"x\" is no number"
        );
        // An item error that names its own option keeps it.
        let own = |_: &str| -> Result<u32, String> { Err("--other: wrong".into()) };
        assert_eq!(
            class(list("--n", "1", own).unwrap_err()).1,
            "--other: wrong"
        );
    }

    #[test]
    fn isa_defaults_to_the_best_and_refuses_what_this_cpu_cannot_run() {
        assert_eq!(isa(None).unwrap(), (kernels::best(), false));
        let best = kernels::best();
        assert_eq!(isa(Some(best.name())).unwrap(), (best, true));
        assert_eq!(class(isa(Some("sve2")).unwrap_err()).0, ErrorClass::Usage);
        let foreign = if cfg!(target_arch = "x86_64") {
            "neon"
        } else {
            "avx2"
        };
        let (c, m) = class(isa(Some(foreign)).unwrap_err());
        assert_eq!(c, ErrorClass::Unsupported);
        assert!(m.contains("this CPU cannot run"), "{m}");
    }

    #[test]
    fn cpus_and_policies_resolve_on_the_machine() {
        let m = two_nodes();
        assert_eq!(cpus("all", &m).unwrap(), m.pu_ids());
        assert_eq!(first_cpu(&m), vec![m.pu_ids()[0]]);
        let (c, msg) = class(cpus("999", &m).unwrap_err());
        assert_eq!(c, ErrorClass::Usage);
        assert!(msg.contains("CPU 999 does not exist"), "{msg}");
        assert_eq!(policy("bind:1", &m).unwrap(), MemPolicy::Bind(vec![1]));
        assert!(class(policy("bind:77", &m).unwrap_err())
            .1
            .contains("NUMA node 77 does not exist"));
        assert_eq!(class(pages("giant").unwrap_err()).0, ErrorClass::Usage);
    }
}
