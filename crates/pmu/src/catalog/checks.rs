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

/// Events by lower-case name or alias, and by raw code.
type EventIndexes = (HashMap<String, usize>, HashMap<u64, usize>);

/// The events by lower-case name and alias, and by raw code; names and codes must be
/// unique.
fn index_events(events: &[EventDef], file: &str) -> Result<EventIndexes, CatalogError> {
    let mut event_index = HashMap::new();
    let mut code_index = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        for key in std::iter::once(&e.name).chain(e.aliases.iter()) {
            if let Some(j) = event_index.insert(key.to_ascii_lowercase(), i) {
                if j != i {
                    return Err(data_err(
                        file,
                        format!(
                            "event name {key:?} is used by both {} and {}",
                            events[j].name, e.name
                        ),
                    ));
                }
            }
        }
        if let Encoding::Raw(c) = e.encoding {
            if let Some(j) = code_index.insert(c, i) {
                return Err(data_err(
                    file,
                    format!(
                        "code 0x{c:x} is used by both {} and {}",
                        events[j].name, e.name
                    ),
                ));
            }
        }
    }
    Ok((event_index, code_index))
}

/// The catalog's metrics and their index, and the vendor metrics a methodology
/// metric of the same name shadows.
struct Metrics {
    metrics: Vec<MetricDef>,
    shadowed: Vec<MetricDef>,
    metric_index: HashMap<String, usize>,
}

/// Methodology, software then vendor metrics, each name once (a vendor metric of a
/// methodology metric's name is shadowed; a test checks they agree), each checked
/// with [`check_metric`].
fn collect_metrics(
    all: impl Iterator<Item = MetricDef>,
    events: &[EventDef],
    file: &str,
) -> Result<Metrics, CatalogError> {
    let mut out = Metrics {
        metrics: Vec::new(),
        shadowed: Vec::new(),
        metric_index: HashMap::new(),
    };
    for m in all {
        if out.metric_index.contains_key(&m.name) {
            if m.origin == MetricOrigin::Vendor {
                out.shadowed.push(m);
                continue;
            }
            return Err(data_err(
                file,
                format!("metric {} is defined twice", m.name),
            ));
        }
        check_metric(&m, events, file)?;
        out.metric_index.insert(m.name.clone(), out.metrics.len());
        out.metrics.push(m);
    }
    Ok(out)
}

/// A metric's formula and samples name events by their canonical names; `notable`
/// and `finding` go together.
fn check_metric(m: &MetricDef, events: &[EventDef], file: &str) -> Result<(), CatalogError> {
    for v in m.expr.variables() {
        if !events.iter().any(|e| e.name == v) {
            return Err(data_err(
                file,
                format!("metric {} uses unknown event {v}", m.name),
            ));
        }
    }
    for s in &m.sample {
        if !events.iter().any(|e| &e.name == s) {
            return Err(data_err(
                file,
                format!("metric {} samples unknown event {s}", m.name),
            ));
        }
    }
    if m.notable.is_some() != m.finding.is_some() {
        return Err(data_err(
            file,
            format!("metric {}: `notable` and `finding` go together", m.name),
        ));
    }
    Ok(())
}

/// Groups are defined once and list metrics that exist (shadowed ones too); every
/// non-vendor metric is in a group that exists.
fn check_groups(groups: &[GroupDef], m: &Metrics, file: &str) -> Result<(), CatalogError> {
    let mut seen_groups = HashMap::new();
    for g in groups {
        if seen_groups
            .insert(g.name.to_ascii_lowercase(), ())
            .is_some()
        {
            return Err(data_err(file, format!("group {} is defined twice", g.name)));
        }
        for name in &g.metrics {
            if !m.metric_index.contains_key(name)
                && !m.shadowed.iter().any(|s: &MetricDef| &s.name == name)
            {
                return Err(data_err(
                    file,
                    format!("group {} lists unknown metric {name}", g.name),
                ));
            }
        }
    }
    for x in &m.metrics {
        if x.origin != MetricOrigin::Vendor && !groups.iter().any(|g| g.name == x.group) {
            return Err(data_err(
                file,
                format!("metric {} is in unknown group {}", x.name, x.group),
            ));
        }
    }
    Ok(())
}

/// The decision tree names metrics, groups and events that exist.
fn check_tree(r: &Raw, m: &Metrics, file: &str) -> Result<(), CatalogError> {
    if !m.metric_index.contains_key(&r.tree.ipc) {
        return Err(data_err(
            file,
            format!("tree: unknown metric {}", r.tree.ipc),
        ));
    }
    for b in &r.tree.branches {
        if !m.metric_index.contains_key(&b.stall) {
            return Err(data_err(file, format!("tree: unknown metric {}", b.stall)));
        }
        for g in b.groups.iter().chain(b.info_group.iter()) {
            if !r.groups.iter().any(|x| &x.name == g) {
                return Err(data_err(file, format!("tree: unknown group {g}")));
            }
        }
        for s in &b.sample {
            if !r.events.iter().any(|e| &e.name == s) {
                return Err(data_err(file, format!("tree: unknown event {s}")));
            }
        }
    }
    Ok(())
}

/// Builds the indexes and checks everything the data files promise.
pub(super) fn build(mut r: Raw) -> Result<Catalog, CatalogError> {
    let file = format!("catalog {}", r.id);
    let (event_index, code_index) = index_events(&r.events, &file)?;
    let all = std::mem::take(&mut r.methodology)
        .into_iter()
        .chain(std::mem::take(&mut r.software))
        .chain(std::mem::take(&mut r.vendor));
    let m = collect_metrics(all, &r.events, &file)?;
    check_groups(&r.groups, &m, &file)?;
    check_tree(&r, &m, &file)?;
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
        metrics: m.metrics,
        groups: r.groups,
        tree: r.tree,
        vendor_tree: r.vendor_tree,
        sources: r.sources,
        shadowed: m.shadowed,
        event_index,
        code_index,
        metric_index: m.metric_index,
    })
}
