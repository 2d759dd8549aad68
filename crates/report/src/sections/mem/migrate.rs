//! The page migration section: throughput of each migration method by page count.

use crate::anchors;
use crate::doc::Section;
use crate::sections::{opt, table};
use crate::table::Cell;
use numalab_chart::{LineChart, Series};
use numalab_records::mem::MigrateRecord;
use numalab_schema::units;

/// The page migration section: throughput by method, unit and page count.
pub(super) fn section(b: usize, recs: &[MigrateRecord], of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-migrate"),
        &format!("Page migration{of}"),
    );
    let mut pairs: Vec<(u32, u32, String)> = Vec::new();
    for r in recs {
        let p = (r.src_node, r.dst_node, r.pair_role.clone());
        if !pairs.contains(&p) {
            pairs.push(p);
        }
    }
    for (i, (src, dst, role)) in pairs.iter().enumerate() {
        let of_pair: Vec<&MigrateRecord> = recs
            .iter()
            .filter(|r| r.src_node == *src && r.dst_node == *dst)
            .collect();
        let mut c = LineChart::new(
            &format!("Node {src} -> node {dst} ({role})"),
            "pages moved (log scale)",
            "GB/s (payload)",
        );
        c.x_log = true;
        let mut names: Vec<(String, u64)> = Vec::new();
        for r in &of_pair {
            for m in &r.methods {
                let n = (m.method.name().to_string(), r.unit_bytes);
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        for (method, unit) in &names {
            let pts: Vec<(f64, f64)> = of_pair
                .iter()
                .filter(|r| r.unit_bytes == *unit)
                .filter_map(|r| {
                    let m = r.methods.iter().find(|m| m.method.name() == method)?;
                    Some((r.pages as f64, m.throughput_gbps.as_ref()?.median))
                })
                .collect();
            if !pts.is_empty() {
                c.series.push(Series::new(
                    &format!("{method}, {} pages", units::bytes(*unit)),
                    pts,
                ));
            }
        }
        let id = if i == 0 {
            anchors::mem_migrate(b)
        } else {
            anchors::id(b, &format!("mem-migrate-{src}-{dst}"))
        };
        s.chart(
            &id,
            c.to_svg(),
            "Payload throughput of each method as the number of pages grows (move_pages has none when source and target are the same node)",
        );
    }
    let mut t = table(
        &anchors::id(b, "mem-migrate-table"),
        "Cells",
        &[
            ("from", None),
            ("to", None),
            ("pair", None),
            ("page unit", None),
            ("pages", None),
            ("memcpy", Some("GB/s")),
            ("move_pages", Some("GB/s")),
            ("stream_copy", Some("GB/s")),
            ("winner", None),
            ("of local copy", Some("%")),
        ],
    );
    let mut whys = Vec::new();
    for r in recs {
        let gbps = |name: &str| -> Cell {
            match r.methods.iter().find(|m| m.method.name() == name) {
                Some(m) => match &m.throughput_gbps {
                    Some(t) => Cell::num(t.median, 2),
                    None => Cell::missing(m.note.clone().unwrap_or_else(|| "nothing moved".into())),
                },
                None => Cell::missing("not measured"),
            }
        };
        let winner = r.winner.map(|w| w.name().to_string());
        let pct = r
            .methods
            .iter()
            .find(|m| Some(m.method) == r.winner)
            .and_then(|m| m.percent_of_reference);
        t.push(vec![
            Cell::num(f64::from(r.src_node), 0),
            Cell::num(f64::from(r.dst_node), 0),
            Cell::text(&r.pair_role),
            Cell::text(units::bytes(r.unit_bytes)),
            Cell::num(r.pages as f64, 0),
            gbps("memcpy"),
            gbps("move_pages"),
            gbps("stream_copy"),
            Cell::text(winner.unwrap_or_else(|| "-".into())),
            opt(pct, 0, "no winner"),
        ]);
    }
    // One sentence per pair role: the conclusion at its largest cell (most pages of the
    // largest unit), as the findings state it; the table holds every cell.
    let mut roles: Vec<&str> = Vec::new();
    for r in recs {
        if !roles.contains(&r.pair_role.as_str()) {
            roles.push(&r.pair_role);
        }
    }
    for role in roles {
        if let Some(big) = recs
            .iter()
            .filter(|r| r.pair_role == role)
            .max_by_key(|r| (r.pages * r.unit_bytes, std::cmp::Reverse(r.unit_bytes)))
        {
            whys.push(format!(
                "{role}, {} x {} pages: {}",
                big.pages,
                units::bytes(big.unit_bytes),
                big.why
            ));
        }
    }
    if let Some(r) = recs.first() {
        t.notes.push(format!(
            "reference: {} ({:.2} GB/s): {}",
            r.reference.kind, r.reference.gbps, r.reference.detail
        ));
        if let Some(n) = &r.unit_note {
            t.notes.push(n.clone());
        }
        if let Some(n) = &r.clamp_note {
            t.notes.push(n.clone());
        }
    }
    if recs.iter().any(|r| r.same_node) {
        t.notes.push("same node: move_pages moves nothing, so it has no throughput there; its per-page checking cost is in the bundle".into());
    }
    s.table(t);
    whys.extend(numalab_records::mem::migrate::conclude(recs));
    s.list(whys);
    s
}
