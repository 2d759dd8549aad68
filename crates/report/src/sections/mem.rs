//! Memory: bandwidth against threads and the node-pair matrix, the latency curve over
//! working sets on a log axis with the CPU's cache sizes marked and the plateaus found,
//! the idle-latency matrix beside the firmware's SLIT, latency under load, and page
//! migration by method.

mod bandwidth;
mod latency;
mod loaded;
mod migrate;

use super::table;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::{Cell, Table};
use numalab_chart::Heatmap;
use numalab_records::mem::latency::LatencyRecord;
use numalab_records::mem::LoadedRecord;
use numalab_records::mem::MigrateRecord;
use numalab_records::mem::{BandwidthRecord, MatrixCell};

/// A node-pair matrix as a heatmap: rows = the threads' node, columns = the data's node.
pub(crate) fn node_heatmap(
    title: &str,
    cells: &[(MatrixCell, f64)],
    unit: &str,
) -> Option<Heatmap> {
    let mut rows: Vec<u32> = cells.iter().map(|(m, _)| m.cpu_node).collect();
    let mut cols: Vec<u32> = cells.iter().map(|(m, _)| m.mem_node).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    if rows.is_empty() {
        return None;
    }
    let values = rows
        .iter()
        .map(|r| {
            cols.iter()
                .map(|c| {
                    cells
                        .iter()
                        .find(|(m, _)| m.cpu_node == *r && m.mem_node == *c)
                        .map(|(_, v)| *v)
                })
                .collect()
        })
        .collect();
    let mut h = Heatmap::new(
        title,
        rows.iter().map(|r| r.to_string()).collect(),
        cols.iter().map(|c| c.to_string()).collect(),
        values,
        unit,
    );
    h.row_label = "threads on node".into();
    h.col_label = "data on node".into();
    Some(h)
}

/// A node-pair matrix as a table (rows = the threads' node, columns = the data's
/// node), so that the figures of a heatmap can be read and copied.
fn node_matrix_table(id: &str, title: &str, cells: &[(MatrixCell, f64)], digits: usize) -> Table {
    let mut rows: Vec<u32> = cells.iter().map(|(m, _)| m.cpu_node).collect();
    let mut cols: Vec<u32> = cells.iter().map(|(m, _)| m.mem_node).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    let names: Vec<String> = std::iter::once("threads on node".to_string())
        .chain(cols.iter().map(|c| format!("data on {c}")))
        .collect();
    let spec: Vec<(&str, Option<&str>)> = names.iter().map(|n| (n.as_str(), None)).collect();
    let mut t = table(id, title, &spec);
    for r in &rows {
        let mut row = vec![Cell::num(f64::from(*r), 0)];
        for c in &cols {
            row.push(
                cells
                    .iter()
                    .find(|(m, _)| m.cpu_node == *r && m.mem_node == *c)
                    .map_or(Cell::missing("not measured"), |(_, v)| {
                        Cell::num(*v, digits)
                    }),
            );
        }
        t.push(row);
    }
    t
}

/// Where the kernel says the pages are: "node 0 50%, node 1 50%".
fn placement_text(p: &numalab_records::mem::Placement) -> String {
    let total: u64 = p.pages_per_node.iter().map(|x| x.1).sum();
    p.pages_per_node
        .iter()
        .map(|(n, c)| format!("node {n} {:.0}%", 100.0 * *c as f64 / total.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct items in the order they first appear.
fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The memory sections of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let machine = crate::facts::machine_of(l);
    let mut out = Vec::new();
    let bw: Vec<BandwidthRecord> = l
        .records_of::<BandwidthRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let peak = crate::peak::of(l);
    if !bw.is_empty() {
        out.push(bandwidth::section(b, &bw, peak.as_ref(), of));
    }
    let lat: Vec<LatencyRecord> = l
        .records_of::<LatencyRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    if !lat.is_empty() {
        out.push(latency::section(b, &lat, machine.as_ref(), of));
    }
    let loaded: Vec<(String, LoadedRecord)> = l
        .records_of::<LoadedRecord>()
        .into_iter()
        .map(|(r, x)| (r.key.clone(), x))
        .collect();
    if !loaded.is_empty() {
        out.push(loaded::section(b, &loaded, peak.as_ref(), of));
    }
    let mig: Vec<MigrateRecord> = l
        .records_of::<MigrateRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    if !mig.is_empty() {
        out.push(migrate::section(b, &mig, of));
    }
    out
}
