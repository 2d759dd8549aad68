//! Modeled machines: engines, latency spread, saturation, policies.

#[allow(unused_imports)]
use super::*;

pub(super) fn models(l: &Loaded, out: &mut Out<'_>) {
    let triads: Vec<(String, model::StreamTriad)> = l
        .records_of::<model::StreamTriad>()
        .into_iter()
        .map(|(r, t)| (r.key.clone(), t))
        .collect();
    let mut done = Vec::new();
    for (_, t) in &triads {
        let group = (t.preset.clone(), t.engine.clone(), t.cores.clone());
        if done.contains(&group) {
            continue;
        }
        done.push(group.clone());
        let same: Vec<&model::StreamTriad> = triads
            .iter()
            .map(|(_, x)| x)
            .filter(|x| (x.preset.clone(), x.engine.clone(), x.cores.clone()) == group)
            .collect();
        let (Some(best), Some(worst)) = (
            same.iter()
                .max_by(|a, b| a.bandwidth_gbps.total_cmp(&b.bandwidth_gbps)),
            same.iter()
                .min_by(|a, b| a.bandwidth_gbps.total_cmp(&b.bandwidth_gbps)),
        ) else {
            continue;
        };
        let text = if same.len() > 1 && best.bandwidth_gbps > 0.0 {
            format!(
                "{} ({}): triad with the data on node {} reaches {} the bandwidth of node {} ({:.0} vs {:.0} GB/s, {:.0}% of that memory's peak)",
                t.preset,
                t.engine,
                worst.data_node,
                x(worst.bandwidth_gbps / best.bandwidth_gbps),
                best.data_node,
                worst.bandwidth_gbps,
                best.bandwidth_gbps,
                worst.percent_of_peak
            )
        } else {
            format!(
                "{} ({}): triad reaches {:.0} GB/s, {:.0}% of the peak of node {}'s memory",
                t.preset, t.engine, t.bandwidth_gbps, t.percent_of_peak, t.data_node
            )
        };
        out.modeled("model_triad", text, Some(anchors::model_triad(out.b)));
    }
    for (r, h) in l.records_of::<model::LatencyHeatmap>() {
        out.modeled(
            "model_latency_spread",
            format!(
                "{}: latency to {} spreads over {:.0} cycles ({:.0}-{:.0}, {} across cores): the average of {} hides it",
                h.preset,
                h.target,
                h.spread_cycles,
                h.min_cycles,
                h.max_cycles,
                ns(h.spread_ns),
                ns(h.mean_ns)
            ),
            Some(anchors::model(out.b, &r.key)),
        );
    }
    for (r, t) in l.records_of::<model::Traffic>() {
        out.modeled(
            "model_traffic",
            format!(
                "{}: {} traffic saturates at {:.3} packets per stop per cycle (zero-load latency {:.1} cycles)",
                t.preset, t.pattern, t.saturation_rate, t.zero_load_latency_cycles
            ),
            Some(anchors::model(out.b, &r.key)),
        );
    }
    let policies: Vec<(String, model::Policy)> = l
        .records_of::<model::Policy>()
        .into_iter()
        .map(|(r, p)| (r.key.clone(), p))
        .collect();
    let apps: std::collections::BTreeSet<String> = policies
        .iter()
        .map(|(_, p)| p.application.clone())
        .collect();
    for app in apps {
        let of: Vec<&(String, model::Policy)> = policies
            .iter()
            .filter(|(_, p)| p.application == app)
            .collect();
        if of.len() < 2 {
            continue;
        }
        let best = of
            .iter()
            .max_by(|a, b| a.1.bandwidth_gbps.total_cmp(&b.1.bandwidth_gbps))
            .expect("two or more");
        let worst = of
            .iter()
            .min_by(|a, b| a.1.bandwidth_gbps.total_cmp(&b.1.bandwidth_gbps))
            .expect("two or more");
        out.modeled(
            "model_policy",
            format!(
                "{} application: {} gives the most bandwidth ({:.0} GB/s), {} the least ({:.0} GB/s, controller imbalance {:.2})",
                app,
                best.1.configuration,
                best.1.bandwidth_gbps,
                worst.1.configuration,
                worst.1.bandwidth_gbps,
                worst.1.mc_imbalance
            ),
            Some(anchors::model_policy(out.b)),
        );
    }
    for (r, c) in l.records_of::<model::Check>() {
        if let Some(worst) = c.metrics.iter().max_by(|a, b| {
            a.relative_difference
                .abs()
                .total_cmp(&b.relative_difference.abs())
        }) {
            out.modeled(
                "model_check",
                format!(
                    "{} {} ({}): the analytic and discrete-event engines agree within {:.1}% (largest difference: {})",
                    c.preset,
                    c.experiment,
                    c.point,
                    worst.relative_difference.abs() * 100.0,
                    worst.name
                ),
                Some(anchors::model(out.b, &r.key)),
            );
        }
    }
}
