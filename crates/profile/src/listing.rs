//! What `numalab profile --list` shows of the catalogs: the models, a catalog's events,
//! or its metric sets, groups and metrics with their formulas.

use crate::Problem;
use numalab_pmu::catalog::{self, Catalog, CpuMatch};
use std::fmt::Write;

/// What `--list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// Metric sets, groups and metrics with their formulas ([`metrics`]).
    Metrics,
    /// Events with their codes ([`events`]).
    Events,
    /// The CPU models numalab has catalogs for ([`models`]).
    Models,
}

/// The listing `--list` prints for `cpu`, whose catalog is loaded first (a CPU without
/// one is refused, whatever is listed).
pub fn list(what: What, cpu: &CpuMatch) -> Result<String, Problem> {
    let cat = catalog::load_match(cpu).map_err(Problem::of)?;
    Ok(match what {
        What::Models => models(),
        What::Events => events(&cat, cpu),
        What::Metrics => metrics(&cat, cpu),
    })
}

/// The catalogs shipped and every name `--cpu-model` accepts.
pub fn models() -> String {
    let named = |pairs: &[(&str, &str)]| -> String {
        let names: Vec<String> = pairs.iter().map(|(p, id)| format!("{p} ({id})")).collect();
        names.join(", ")
    };
    let mut s = String::new();
    let _ = writeln!(s, "catalogs: {}", catalog::shipped().join(", "));
    let _ = writeln!(
        s,
        "x86 names accepted by --cpu-model: {}",
        named(catalog::x86_products())
    );
    let _ = writeln!(
        s,
        "also accepted by --cpu-model: {}, a MIDR value such as 0x413fd0c1",
        named(&catalog::products())
    );
    s
}

/// A catalog's events, one a line: name, raw code, title and aliases.
pub fn events(cat: &Catalog, cpu: &CpuMatch) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({}): {} events, {} programmable counters",
        cat.name,
        cpu.how,
        cat.events.len(),
        cat.counters
    );
    for e in &cat.events {
        let code = e.raw_code().unwrap_or_default();
        let aliases = if e.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also {})", e.aliases.join(", "))
        };
        let _ = writeln!(s, "  {:<28} {:<6} {}{}", e.name, code, e.title, aliases);
    }
    s
}

/// A catalog's metric sets and groups, then its metrics with unit and formula.
pub fn metrics(cat: &Catalog, cpu: &CpuMatch) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({}): {} programmable counters",
        cat.name, cpu.how, cat.counters
    );
    let _ = writeln!(
        s,
        "metric sets: first-pass (default), vendor, topdown, all, none, or a group below"
    );
    for g in &cat.groups {
        let _ = writeln!(s, "  {:<24} {} ({})", g.name, g.metrics.join(", "), g.title);
    }
    let _ = writeln!(s, "metrics:");
    for m in &cat.metrics {
        let _ = writeln!(s, "  {:<28} {:<22} {}", m.name, m.unit, m.formula);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n2() -> (Catalog, CpuMatch) {
        let cpu = catalog::resolve_model("neoverse-n2").unwrap();
        (catalog::load_match(&cpu).unwrap(), cpu)
    }

    #[test]
    fn list_shows_what_is_asked_of_the_cpus_catalog() {
        let (cat, cpu) = n2();
        assert_eq!(list(What::Models, &cpu).unwrap(), models());
        assert_eq!(list(What::Events, &cpu).unwrap(), events(&cat, &cpu));
        assert_eq!(list(What::Metrics, &cpu).unwrap(), metrics(&cat, &cpu));
    }

    #[test]
    fn the_models_name_every_catalog_and_product() {
        let text = models();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("catalogs: ") && lines[0].contains("neoverse-n1"));
        assert!(lines[1].starts_with("x86 names accepted by --cpu-model: "));
        assert!(lines[2].ends_with(", a MIDR value such as 0x413fd0c1"));
    }

    #[test]
    fn events_and_metrics_list_the_catalog_one_a_line() {
        let (cat, cpu) = n2();
        let ev = events(&cat, &cpu);
        assert_eq!(ev.lines().count(), cat.events.len() + 1);
        assert!(
            ev.starts_with(&format!("Neoverse N2 ({}): ", cpu.how)),
            "{ev}"
        );
        assert!(ev
            .lines()
            .any(|l| l.contains("CRYPTO_SPEC") && l.contains("r77")));
        let m = metrics(&cat, &cpu);
        assert_eq!(
            m.lines().count(),
            cat.groups.len() + cat.metrics.len() + 3,
            "{m}"
        );
        assert!(
            m.contains("100 * ((STALL_SLOT_FRONTEND - CPU_CYCLES)"),
            "{m}"
        );
    }
}
