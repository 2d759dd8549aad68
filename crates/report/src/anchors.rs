//! Anchors of the report's sections and charts, in one place: findings link to the
//! chart that shows them, so both sides must name it the same way. Anchors are stable
//! (made from record keys), unique across the bundles of one report (bundles after the
//! first get a `bN-` prefix), and safe in HTML attributes and URLs.

/// A lowercase slug of letters, digits and single dashes.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// The anchor of `what` in bundle `bundle`.
pub fn id(bundle: usize, what: &str) -> String {
    if bundle == 0 {
        slug(what)
    } else {
        format!("b{bundle}-{}", slug(what))
    }
}

/// The topology section.
pub fn topology(b: usize) -> String {
    id(b, "topology")
}

/// The doctor checks.
pub fn doctor(b: usize) -> String {
    id(b, "doctor")
}

/// The evaluation steps.
pub fn steps(b: usize) -> String {
    id(b, "steps")
}

/// The core-to-core heatmap of a `c2c.matrix` record.
pub fn c2c_heatmap(b: usize, key: &str) -> String {
    id(b, &format!("c2c-heatmap-{key}"))
}

/// The core-to-core structure table of a `c2c.matrix` record.
pub fn c2c_structure(b: usize, key: &str) -> String {
    id(b, &format!("c2c-structure-{key}"))
}

/// The reference workload's per-thread chart.
pub fn workload_chart(b: usize) -> String {
    id(b, "workload-per-thread")
}

/// The reference workload's runs table.
pub fn workload_table(b: usize) -> String {
    id(b, "workload-runs")
}

/// A scaling study's chart.
pub fn scale_chart(b: usize, study: &str) -> String {
    id(b, &format!("scale-{study}"))
}

/// A policy study's chart.
pub fn policy_chart(b: usize, study: &str) -> String {
    id(b, &format!("policy-{study}"))
}

/// A sweep's chart.
pub fn sweep_chart(b: usize, study: &str) -> String {
    id(b, &format!("sweep-{study}"))
}

/// The PMU section.
pub fn pmu(b: usize) -> String {
    id(b, "pmu")
}

/// The decision tree of a `pmu.profile` record.
pub fn pmu_tree(b: usize, key: &str) -> String {
    id(b, &format!("pmu-tree-{key}"))
}

/// A model record's chart or table.
pub fn model(b: usize, key: &str) -> String {
    id(b, &format!("model-{key}"))
}

/// The modeled triad chart (all `model.stream_triad` records of a bundle).
pub fn model_triad(b: usize) -> String {
    id(b, "model-triad-chart")
}

/// The modeled configurations chart (all `model.policy` records of a bundle).
pub fn model_policy(b: usize) -> String {
    id(b, "model-policy-chart")
}

/// The bandwidth-against-threads chart.
pub fn mem_bandwidth(b: usize) -> String {
    id(b, "mem-bandwidth-chart")
}

/// The bandwidth node-pair heatmap.
pub fn mem_bandwidth_matrix(b: usize) -> String {
    id(b, "mem-bandwidth-matrix")
}

/// The latency curve.
pub fn mem_latency(b: usize) -> String {
    id(b, "mem-latency-chart")
}

/// The idle-latency node-pair heatmap.
pub fn mem_latency_matrix(b: usize) -> String {
    id(b, "mem-latency-matrix")
}

/// The loaded-latency chart.
pub fn mem_loaded(b: usize) -> String {
    id(b, "mem-loaded-chart")
}

/// The first page-migration chart.
pub fn mem_migrate(b: usize) -> String {
    id(b, "mem-migrate-chart")
}

/// The power section.
pub fn power(b: usize) -> String {
    id(b, "power")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_safe_and_stable() {
        assert_eq!(
            slug("c2c/matrix/cas/first-cpu-node"),
            "c2c-matrix-cas-first-cpu-node"
        );
        assert_eq!(slug("\"><script>x"), "script-x");
        assert_eq!(id(0, "Topology"), "topology");
        assert_eq!(id(2, "Topology"), "b2-topology");
    }
}
