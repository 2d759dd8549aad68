//! Presets described for people: the shipped presets with their variants, and one
//! resolved preset with every value's source, as JSON and as text.

use crate::error::ModelError;
use crate::spec::{self, Loaded};
use crate::Model;
use numalab_schema::units;
use std::fmt::Write as _;

/// Every shipped preset as `{"name", "description", "variants"}`, in the order of
/// [`spec::PRESETS`].
pub fn presets() -> Result<Vec<serde_json::Value>, ModelError> {
    let mut rows = Vec::new();
    for (name, _) in spec::PRESETS {
        let l = spec::load(name, &[])?;
        rows.push(serde_json::json!({
            "name": name,
            "description": l.spec.description,
            "variants": l.variants,
        }));
    }
    Ok(rows)
}

/// The text of `model list`: each preset of [`presets`] (its name through `emphasize`)
/// with its variants indented below it, then how to name a variant.
pub fn render_presets(rows: &[serde_json::Value], emphasize: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    for r in rows {
        let _ = writeln!(
            out,
            "{}  {}",
            emphasize(r["name"].as_str().unwrap_or("")),
            r["description"].as_str().unwrap_or("")
        );
        if let Some(vs) = r["variants"].as_array() {
            for v in vs {
                let _ = writeln!(
                    out,
                    "    :{:<18} {}",
                    v["name"].as_str().unwrap_or(""),
                    v["description"].as_str().unwrap_or("")
                );
            }
        }
    }
    out.push_str("\nUse NAME:VARIANT[,VARIANT] (e.g. knl-7210:snc4,cache) and --set KEY=VALUE; `numalab model show NAME` lists every value with its source.\n");
    out
}

/// The counts a resolved preset comes to: cores, slices, memory controllers and, per
/// NUMA node, its cores, memory, memory kind and peak bandwidth.
fn resolved(model: &Model) -> serde_json::Value {
    serde_json::json!({
        "cores": model.cores.len(),
        "slices": model.slices.len(),
        "memory_controllers": model.mcs.len(),
        "numa_nodes": model.nodes.iter().map(|n| serde_json::json!({
            "id": n.id, "cores": n.cores.len(), "memory_bytes": n.memory_bytes,
            "kind": model.pools[n.pool].kind, "peak_gbps": model.node_peak_gbps(n.id),
        })).collect::<Vec<_>>(),
    })
}

/// `model show --json`: the preset's label, name, description, variants (applied and
/// offered), every value with its source, and the counts it resolves to (`model` is
/// `loaded` resolved).
pub fn preset_json(loaded: &Loaded, model: &Model) -> serde_json::Value {
    let values: Vec<serde_json::Value> = loaded
        .entries()
        .iter()
        .map(|(k, v, s)| serde_json::json!({"key": k, "value": v, "source": s}))
        .collect();
    serde_json::json!({
        "preset": loaded.label,
        "name": loaded.spec.name,
        "description": loaded.spec.description,
        "variants_applied": loaded.applied,
        "variants": loaded.variants,
        "values": values,
        "resolved": resolved(model),
    })
}

/// The text of `model show`: the label (through `emphasize`) and description, the
/// variants applied, every value as `key = value  # source` (aligned, at most 70
/// columns before the comment), the resolved counts per node and the variants offered.
pub fn render_preset(loaded: &Loaded, model: &Model, emphasize: &dyn Fn(&str) -> String) -> String {
    let entries = loaded.entries();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}",
        emphasize(&loaded.label),
        loaded.spec.description
    );
    if !loaded.applied.is_empty() {
        let _ = writeln!(out, "variants applied: {}", loaded.applied.join(", "));
    }
    let width = entries
        .iter()
        .map(|(k, v, _)| k.len() + v.len() + 3)
        .max()
        .unwrap_or(0)
        .min(70);
    for (k, v, s) in &entries {
        let kv = format!("{k} = {v}");
        let _ = writeln!(out, "{kv:<width$}  # {s}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "resolved: {} cores, {} slices, {} memory controllers",
        model.cores.len(),
        model.slices.len(),
        model.mcs.len()
    );
    for n in &model.nodes {
        let _ = writeln!(
            out,
            "  node {}: {} cores, {} {}, peak {:.1} GB/s",
            n.id,
            n.cores.len(),
            units::bytes(n.memory_bytes),
            model.pools[n.pool].kind,
            model.node_peak_gbps(n.id)
        );
    }
    if !loaded.variants.is_empty() {
        let names: Vec<&str> = loaded.variants.iter().map(|v| v.name.as_str()).collect();
        let _ = writeln!(out, "variants: {}", names.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bold(t: &str) -> String {
        format!("*{t}*")
    }

    #[test]
    fn lists_every_shipped_preset_with_its_variants() {
        let rows = presets().unwrap();
        assert_eq!(rows.len(), spec::PRESETS.len());
        let knl = rows.iter().find(|r| r["name"] == "knl-7210").unwrap();
        assert!(knl["variants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "snc4"));
        let text = render_presets(&rows, &bold);
        assert!(text.starts_with(&format!("*{}*  ", spec::PRESETS[0].0)));
        assert!(text.contains("    :snc4"));
        assert!(text.ends_with("with its source.\n"));
    }

    #[test]
    fn shows_values_sources_and_resolved_counts() {
        let loaded = spec::load("knl-7210:snc4", &["cores.max_outstanding=24".into()]).unwrap();
        let model = Model::from_loaded(loaded.clone()).unwrap();
        let json = preset_json(&loaded, &model);
        assert_eq!(json["preset"], "knl-7210:snc4");
        assert_eq!(json["variants_applied"][0], "snc4");
        assert_eq!(json["resolved"]["cores"], model.cores.len());
        assert_eq!(
            json["resolved"]["numa_nodes"].as_array().unwrap().len(),
            model.nodes.len()
        );
        let outstanding = json["values"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["key"] == "cores.max_outstanding")
            .unwrap();
        assert_eq!(outstanding["value"], "24");
        let text = render_preset(&loaded, &model, &bold);
        assert!(text.starts_with("*knl-7210:snc4*  "));
        assert!(text.contains("variants applied: snc4\n"));
        assert!(text.contains(&format!(
            "resolved: {} cores, {} slices, {} memory controllers\n",
            model.cores.len(),
            model.slices.len(),
            model.mcs.len()
        )));
        assert!(text.contains("  node 0: "));
    }
}
