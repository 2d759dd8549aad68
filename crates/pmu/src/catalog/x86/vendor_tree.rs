//! The end of loading a vendor catalog: the top-down hierarchy's groups and tree
//! ([`VendorTree`]), the vendor's metric groups, then the catalog's checks.

use super::*;

/// Groups, the vendor tree, then the catalog's checks.
pub(super) fn finish(
    mut r: Raw,
    mut nodes: Vec<VendorNode>,
    vendor_groups: BTreeMap<String, Vec<String>>,
    file: &str,
) -> Result<Catalog, CatalogError> {
    // Parents before children; every parent exists.
    nodes.sort_by_key(|n| n.level.unwrap_or(0));
    for n in &nodes {
        if let Some(p) = &n.parent {
            if !nodes.iter().any(|x| &x.name == p) {
                return Err(data_err(
                    file,
                    format!("top-down node {} has unknown parent {p}", n.name),
                ));
            }
        }
    }
    let names: Vec<(String, Option<String>)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.parent.clone()))
        .collect();
    for n in nodes.iter_mut() {
        n.next_items = names
            .iter()
            .filter(|(_, p)| p.as_deref() == Some(n.name.as_str()))
            .map(|(c, _)| c.clone())
            .collect();
    }
    let (roots, rest): (Vec<VendorNode>, Vec<VendorNode>) =
        nodes.into_iter().partition(|n| n.parent.is_none());
    let max_level = rest.iter().filter_map(|n| n.level).max().unwrap_or(1);
    for level in 1..=max_level {
        let g = format!("Topdown_L{level}");
        let members: Vec<String> = r
            .vendor
            .iter()
            .filter(|m| m.group == g)
            .map(|m| m.name.clone())
            .collect();
        if !members.is_empty() && !r.groups.iter().any(|x| x.name.eq_ignore_ascii_case(&g)) {
            r.groups.push(GroupDef {
                name: g,
                title: format!("top-down level {level}"),
                label: None,
                vendor: Vec::new(),
                metrics: members,
                origin: MetricOrigin::Vendor,
            });
        }
    }
    for (g, metrics) in vendor_groups {
        if r.groups.iter().any(|x| x.name.eq_ignore_ascii_case(&g)) {
            continue;
        }
        r.groups.push(GroupDef {
            title: g.clone(),
            name: g,
            label: None,
            vendor: Vec::new(),
            metrics,
            origin: MetricOrigin::Vendor,
        });
    }
    if !roots.is_empty() {
        r.vendor_tree = Some(VendorTree {
            stage_1: vec!["Topdown_L1".into()],
            stage_2: if max_level >= 2 {
                vec!["Topdown_L2".into()]
            } else {
                Vec::new()
            },
            roots,
            nodes: rest,
        });
    }
    let c = build(r)?;
    // Every branch of the tree starts at a root of the hierarchy.
    if let Some(vt) = &c.vendor_tree {
        for b in &c.tree.branches {
            if let Some(root) = &b.vendor_root {
                if !vt.roots.iter().any(|n| &n.name == root) {
                    return Err(data_err(file, format!("tree: unknown vendor root {root}")));
                }
            }
        }
        for n in vt.roots.iter().chain(&vt.nodes) {
            if let Some(t) = &n.threshold {
                expr::parse_extended(t)
                    .map_err(|e| data_err(file, format!("{}: threshold {e}", n.name)))?;
            }
        }
    }
    Ok(c)
}
