//! From raw parts to a [`Catalog`]: the indexes, and every check the data files
//! promise (formulas parse and name events that exist, names are unique).

use super::*;

pub(super) struct Raw {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arch: Arch,
    pub(super) counters: usize,
    pub(super) fixed: Vec<String>,
    pub(super) midr: Option<(u32, u32)>,
    pub(super) slots: Option<u32>,
    pub(super) events: Vec<EventDef>,
    pub(super) methodology: Vec<MetricDef>,
    pub(super) software: Vec<MetricDef>,
    pub(super) vendor: Vec<MetricDef>,
    pub(super) groups: Vec<GroupDef>,
    pub(super) tree: TreeDef,
    pub(super) vendor_tree: Option<VendorTree>,
    pub(super) sources: Vec<String>,
}

/// Builds the indexes and checks everything the data files promise.
pub(super) fn build(r: Raw) -> Result<Catalog, CatalogError> {
    let file = format!("catalog {}", r.id);
    let mut event_index = HashMap::new();
    let mut code_index = HashMap::new();
    for (i, e) in r.events.iter().enumerate() {
        for key in std::iter::once(&e.name).chain(e.aliases.iter()) {
            if let Some(j) = event_index.insert(key.to_ascii_lowercase(), i) {
                if j != i {
                    return Err(data_err(
                        &file,
                        format!(
                            "event name {key:?} is used by both {} and {}",
                            r.events[j].name, e.name
                        ),
                    ));
                }
            }
        }
        if let Encoding::Raw(c) = e.encoding {
            if let Some(j) = code_index.insert(c, i) {
                return Err(data_err(
                    &file,
                    format!(
                        "code 0x{c:x} is used by both {} and {}",
                        r.events[j].name, e.name
                    ),
                ));
            }
        }
    }
    let mut metrics: Vec<MetricDef> = Vec::new();
    let mut shadowed = Vec::new();
    let mut metric_index = HashMap::new();
    for m in r.methodology.into_iter().chain(r.software).chain(r.vendor) {
        if metric_index.contains_key(&m.name) {
            if m.origin == MetricOrigin::Vendor {
                // A methodology metric of the same name wins; a test checks they agree.
                shadowed.push(m);
                continue;
            }
            return Err(data_err(
                &file,
                format!("metric {} is defined twice", m.name),
            ));
        }
        // Formulas name events by their canonical names only.
        for v in m.expr.variables() {
            if !r.events.iter().any(|e| e.name == v) {
                return Err(data_err(
                    &file,
                    format!("metric {} uses unknown event {v}", m.name),
                ));
            }
        }
        for s in &m.sample {
            if !r.events.iter().any(|e| &e.name == s) {
                return Err(data_err(
                    &file,
                    format!("metric {} samples unknown event {s}", m.name),
                ));
            }
        }
        if m.notable.is_some() != m.finding.is_some() {
            return Err(data_err(
                &file,
                format!("metric {}: `notable` and `finding` go together", m.name),
            ));
        }
        metric_index.insert(m.name.clone(), metrics.len());
        metrics.push(m);
    }
    let mut seen_groups = HashMap::new();
    for g in &r.groups {
        if seen_groups
            .insert(g.name.to_ascii_lowercase(), ())
            .is_some()
        {
            return Err(data_err(
                &file,
                format!("group {} is defined twice", g.name),
            ));
        }
        for m in &g.metrics {
            if !metric_index.contains_key(m) && !shadowed.iter().any(|s: &MetricDef| &s.name == m) {
                return Err(data_err(
                    &file,
                    format!("group {} lists unknown metric {m}", g.name),
                ));
            }
        }
    }
    for m in &metrics {
        if m.origin != MetricOrigin::Vendor && !r.groups.iter().any(|g| g.name == m.group) {
            return Err(data_err(
                &file,
                format!("metric {} is in unknown group {}", m.name, m.group),
            ));
        }
    }
    if !metric_index.contains_key(&r.tree.ipc) {
        return Err(data_err(
            &file,
            format!("tree: unknown metric {}", r.tree.ipc),
        ));
    }
    for b in &r.tree.branches {
        if !metric_index.contains_key(&b.stall) {
            return Err(data_err(&file, format!("tree: unknown metric {}", b.stall)));
        }
        for g in b.groups.iter().chain(b.info_group.iter()) {
            if !r.groups.iter().any(|x| &x.name == g) {
                return Err(data_err(&file, format!("tree: unknown group {g}")));
            }
        }
        for s in &b.sample {
            if !r.events.iter().any(|e| &e.name == s) {
                return Err(data_err(&file, format!("tree: unknown event {s}")));
            }
        }
    }
    for f in &r.fixed {
        if !r.events.iter().any(|e| &e.name == f) {
            return Err(data_err(&file, format!("fixed: unknown event {f}")));
        }
    }
    if r.counters == 0 {
        return Err(data_err(&file, "zero programmable counters"));
    }
    Ok(Catalog {
        id: r.id,
        name: r.name,
        arch: r.arch,
        counters: r.counters,
        fixed: r.fixed,
        midr: r.midr,
        slots: r.slots,
        events: r.events,
        metrics,
        groups: r.groups,
        tree: r.tree,
        vendor_tree: r.vendor_tree,
        sources: r.sources,
        shadowed,
        event_index,
        code_index,
        metric_index,
    })
}
