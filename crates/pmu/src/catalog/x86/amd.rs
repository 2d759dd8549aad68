//! AMD Zen catalogs from numalab's own files, written from AMD's Processor Programming
//! References: events, metrics and the top-down tree.

use super::vendor_tree::finish;
use super::*;

#[derive(Deserialize)]
struct AmdFile {
    catalog: AmdHead,
    #[serde(default)]
    event: Vec<AmdEvent>,
    #[serde(default)]
    metric: Vec<AmdMetric>,
    #[serde(default)]
    group: Vec<TomlGroup>,
    #[serde(default)]
    tree: Option<TreeDef>,
}

#[derive(Deserialize)]
struct AmdHead {
    id: String,
    name: String,
    counters: usize,
    family: u32,
    models: Vec<[u32; 2]>,
    #[serde(default)]
    slots: Option<u32>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
struct AmdEvent {
    name: String,
    title: String,
    event: String,
    #[serde(default)]
    umask: Option<String>,
    #[serde(default)]
    cmask: Option<u64>,
    #[serde(default)]
    inv: bool,
    #[serde(default)]
    aliases: Vec<String>,
}

#[derive(Deserialize)]
struct AmdMetric {
    #[serde(flatten)]
    base: TomlMetric,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    level: Option<u32>,
    #[serde(default)]
    threshold: Option<String>,
}

fn amd_file(a: &AmdFiles) -> Result<AmdFile, CatalogError> {
    let file = format!("data/x86/amd/{}.toml", a.id.trim_start_matches("amd-"));
    let f: AmdFile = toml::from_str(a.text).map_err(|e| data_err(&file, e.to_string()))?;
    if f.catalog.id != a.id {
        return Err(data_err(
            &file,
            format!("id {} is not {}", f.catalog.id, a.id),
        ));
    }
    Ok(f)
}

/// The note of an AMD catalog (Zen 2 and Zen 3: why there is no top-down verdict).
/// The AMD catalog whose file claims this CPUID family and model.
pub(super) fn detect_amd(family: u32, model: u32) -> Option<&'static str> {
    AMD.iter().find_map(|a| {
        let file = amd_file(a).ok()?;
        let head = &file.catalog;
        (head.family == family && head.models.iter().any(|r| (r[0]..=r[1]).contains(&model)))
            .then_some(a.id)
    })
}

pub(in crate::catalog) fn amd_note(id: &str) -> Option<String> {
    let a = AMD.iter().find(|a| a.id == id)?;
    amd_file(a).ok()?.catalog.note
}

pub(super) fn load_amd(a: &AmdFiles) -> Result<Catalog, CatalogError> {
    let file = format!("data/x86/amd/{}.toml", a.id.trim_start_matches("amd-"));
    let f = amd_file(a)?;
    let b = base()?;
    let mut events = b.events;
    for e in f.event {
        let code = parse_hex(&e.event)
            .ok_or_else(|| data_err(&file, format!("event {}: bad code {:?}", e.name, e.event)))?;
        let umask = match &e.umask {
            Some(u) => parse_hex(u)
                .ok_or_else(|| data_err(&file, format!("event {}: bad umask {u:?}", e.name)))?,
            None => 0,
        };
        let encoding = Encoding::Raw(x86_config(
            code,
            umask,
            false,
            false,
            e.inv,
            e.cmask.unwrap_or(0),
        ));
        if events.iter().any(|o| o.encoding == encoding) {
            return Err(data_err(
                &file,
                format!("event {}: code used twice", e.name),
            ));
        }
        events.push(EventDef {
            name: e.name,
            title: e.title,
            encoding,
            aliases: e.aliases,
            unit: None,
        });
    }
    let mut nodes = Vec::new();
    let mut vendor = Vec::new();
    for m in f.metric {
        let expr = expr::parse_extended(&m.base.formula)
            .map_err(|e| data_err(&file, format!("metric {}: {e}", m.base.name)))?;
        if let Some(level) = m.level {
            if let Some(t) = &m.threshold {
                expr::parse_extended(t).map_err(|e| {
                    data_err(&file, format!("metric {}: threshold {e}", m.base.name))
                })?;
            }
            nodes.push(VendorNode {
                name: m.base.name.clone(),
                group: m.base.group.clone(),
                next_items: Vec::new(),
                sample_events: m.base.sample.clone(),
                parent: m.parent.clone(),
                level: Some(level),
                threshold: m.threshold.clone(),
                description: Some(m.base.title.clone()),
            });
        }
        vendor.push(MetricDef {
            name: m.base.name,
            title: m.base.title,
            formula: m.base.formula,
            expr,
            unit: m.base.unit,
            group: m.base.group,
            origin: MetricOrigin::Vendor,
            notable: m.base.notable,
            finding: m.base.finding,
            sample: m.base.sample,
            rank: m.base.rank.unwrap_or(9),
            same_as: None,
            scale: 1.0,
        });
    }
    let mut groups = b.groups;
    groups.extend(groups_from(f.group, &vendor, MetricOrigin::Vendor));
    let has_tree = f.tree.is_some();
    let tree = f.tree.unwrap_or(b.tree);
    let c = finish(
        Raw {
            id: f.catalog.id,
            name: f.catalog.name,
            arch: Arch::X86,
            counters: f.catalog.counters,
            fixed: Vec::new(),
            midr: None,
            slots: f.catalog.slots,
            events,
            methodology: b.methodology,
            software: b.software,
            vendor,
            groups,
            tree,
            vendor_tree: None,
            sources: vec![
                format!("{file} (numalab, from AMD's Processor Programming Reference)"),
                "data/metrics/x86.toml (numalab methodology)".into(),
                "data/linux/software.toml".into(),
            ],
        },
        nodes,
        BTreeMap::new(),
        &file,
    )?;
    if has_tree != c.vendor_tree.is_some() {
        return Err(data_err(
            &file,
            "a [tree] needs top-down metrics (level, parent) and they need a [tree]",
        ));
    }
    Ok(c)
}
