//! Which method wins a cell, and why, from its figures alone.

use super::*;

/// Which method won a cell and why, from its figures alone.
pub fn verdict(
    results: &[MethodResult],
    same_node: bool,
    reference: &Reference,
    unit_bytes: u64,
    base_page: u64,
) -> (Option<Method>, String) {
    let med = |m: Method| -> Option<f64> {
        results
            .iter()
            .find(|r| r.method == m)
            .and_then(|r| r.throughput_gbps.as_ref())
            .map(|t| t.median)
    };
    let winner = results
        .iter()
        .filter_map(|r| Some((r.method, r.throughput_gbps.as_ref()?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((w, w_gbps)) = winner else {
        return (None, "no method moved any data".into());
    };
    let summary = |m: Method| -> Option<&Summary> {
        results
            .iter()
            .find(|r| r.method == m)
            .and_then(|r| r.throughput_gbps.as_ref())
    };
    // Two methods are told apart only when their samples do not overlap.
    let apart = |a: Method, b: Method| -> bool {
        match (summary(a), summary(b)) {
            (Some(x), Some(y)) => x.min > y.max || y.min > x.max,
            _ => true,
        }
    };
    let runner_up = results
        .iter()
        .filter(|r| r.method != w)
        .filter_map(|r| Some((r.method, r.throughput_gbps.as_ref()?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let mut why = vec![format!(
        "{} wins at {:.2} GB/s ({:.0}% of the {}){}",
        w.name(),
        w_gbps,
        100.0 * w_gbps / reference.gbps,
        if reference.kind == "link_peak" {
            "link peak"
        } else {
            "local one-thread copy"
        },
        match runner_up {
            Some((r, _)) if !apart(w, r) => format!(
                ", but its samples overlap those of {}: not a clear win on this run",
                r.name()
            ),
            _ => String::new(),
        }
    )];
    let ratio = |a: f64, b: f64| a / b;
    // The first sentence already says when the two copies are the winner and the
    // runner-up and cannot be told apart.
    let copies = [Method::StreamCopy, Method::Memcpy];
    let overlap_said = matches!(runner_up, Some((r, _)) if copies.contains(&w) && copies.contains(&r) && !apart(w, r));
    if let (Some(s), Some(m), false) = (med(Method::StreamCopy), med(Method::Memcpy), overlap_said)
    {
        let r = ratio(s, m);
        if !apart(Method::StreamCopy, Method::Memcpy) {
            why.push(format!(
                "the streaming copy and memcpy are not clearly different on this run (streaming copy / memcpy = {r:.2}x in medians, but their samples overlap)"
            ));
        } else if r > 1.05 {
            why.push(format!(
                "the streaming copy is {r:.2}x memcpy: its non-temporal stores skip reading the destination lines before writing them (write-allocate), a third less memory traffic"
            ));
        } else if r < 0.95 {
            why.push(format!(
                "memcpy is {:.2}x the streaming copy: the C library's memcpy is tuned for this CPU (e.g. `rep movsb` or its own non-temporal path), or the copy stays in cache at this size",
                1.0 / r
            ));
        } else {
            why.push("memcpy and the streaming copy are within 5%: the C library's memcpy also uses non-temporal stores for large copies, or both are limited by the same core".into());
        }
    }
    if let Some(mp) = results.iter().find(|r| r.method == Method::MovePages) {
        let per_base = mp.ns_per_page / (unit_bytes / base_page).max(1) as f64;
        match (med(Method::MovePages), same_node) {
            (_, true) => why.push(format!(
                "move_pages had nothing to move (same node) and spent {:.0} ns per base page checking",
                per_base
            )),
            (Some(g), false) => {
                let best_copy = [med(Method::Memcpy), med(Method::StreamCopy)]
                    .into_iter()
                    .flatten()
                    .fold(0.0, f64::max);
                if best_copy > 0.0 && g < best_copy {
                    why.push(format!(
                        "move_pages reaches {:.2}x the best copy: it pays per-page kernel work ({:.0} ns per {} page: isolate, unmap, TLB shootdown, copy, remap) on top of the copy, but keeps the virtual addresses",
                        g / best_copy,
                        per_base,
                        fmt_bytes(base_page)
                    ));
                } else if best_copy > 0.0 {
                    why.push(format!(
                        "move_pages is {:.2}x the best copy: the copies pay a page fault per destination page ({} faults here), the kernel allocates target pages in bulk",
                        g / best_copy,
                        if unit_bytes >= base_page { "many" } else { "some" }
                    ));
                }
            }
            _ => {}
        }
    }
    if reference.kind == "local_copy" && !same_node {
        let pct = 100.0 * w_gbps / reference.gbps;
        if pct >= 80.0 {
            why.push(format!(
                "at {pct:.0}% of what one thread copies locally, a single core is the limit, not the link"
            ));
        } else {
            why.push(format!(
                "at {pct:.0}% of one thread's local copy, the remote path (latency and link) limits the core below its local rate"
            ));
        }
    }
    (Some(w), why.join("; "))
}
