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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_schema::{Origin, Record};

    fn modeled<T: numalab_schema::RecordKind>(key: &str, t: &T) -> Record {
        Record::new(key, Origin::Modeled, t)
    }

    fn triad(preset: &str, cores: &[usize], node: u32, gbps: f64, pct: f64) -> model::StreamTriad {
        model::StreamTriad {
            preset: preset.into(),
            engine: "analytic".into(),
            cores: cores.to_vec(),
            data_node: node,
            memory_kind: "DDR5".into(),
            bandwidth_gbps: gbps,
            peak_gbps: 100.0,
            percent_of_peak: pct,
            request_latency_ns: 100.0,
            packet_latency_cycles: 20.0,
            mean_hops: 3.0,
            hop_histogram: vec![],
            vns: vec![],
            slc_hit_ratio: 0.0,
            mc_accesses_per_cycle: vec![],
            saturated: false,
            simulation: None,
        }
    }

    fn policy(app: &str, config: &str, gbps: f64, imbalance: f64) -> model::Policy {
        model::Policy {
            preset: "v1".into(),
            engine: "analytic".into(),
            configuration: config.into(),
            application: app.into(),
            numa_nodes: 2,
            working_set_bytes: 1 << 30,
            slc_hit_ratio: 0.0,
            mean_hops: 3.0,
            mc_share: vec![],
            mc_imbalance: imbalance,
            bandwidth_gbps: gbps,
            request_latency_ns: 100.0,
            vns: vec![],
            saturated: false,
            node_packets_per_cycle: vec![],
            mc_node: vec![],
            mc_local_accesses_per_cycle: vec![],
            mc_remote_accesses_per_cycle: vec![],
            local_share: 0.0,
        }
    }

    fn check(metrics: Vec<model::CheckMetric>) -> model::Check {
        model::Check {
            preset: "v1".into(),
            experiment: "triad".into(),
            point: "16 cores".into(),
            metrics,
            ..Default::default()
        }
    }

    fn models_of(records: Vec<Record>) -> Vec<Finding> {
        run(&loaded(records), models)
    }

    // ------------------------------------------------------------ model_triad

    #[test]
    fn triads_of_one_group_compare_the_worst_node_with_the_best() {
        // Node 1 at 50 GB/s against node 0 at 200 GB/s: 0.25x.
        let f = models_of(vec![
            modeled("t0", &triad("v1", &[0, 1], 0, 200.0, 90.0)),
            modeled("t1", &triad("v1", &[0, 1], 1, 50.0, 40.0)),
        ]);
        let x = one(&f, "model_triad");
        assert!(x.modeled && x.severity == Severity::Info);
        assert_eq!(
            x.text,
            "v1 (analytic): triad with the data on node 1 reaches 0.25x the bandwidth of node 0 (50 vs 200 GB/s, 40% of that memory's peak)"
        );
    }

    #[test]
    fn a_lone_triad_gives_its_bandwidth_and_groups_stay_apart() {
        // Other cores: another group, one sentence each.
        let f = models_of(vec![
            modeled("t0", &triad("v1", &[0, 1], 0, 200.0, 90.0)),
            modeled("t1", &triad("v1", &[2, 3], 1, 50.0, 40.0)),
        ]);
        let v = of(&f, "model_triad");
        assert_eq!(v.len(), 2, "{f:#?}");
        assert_eq!(
            v[0].text,
            "v1 (analytic): triad reaches 200 GB/s, 90% of the peak of node 0's memory"
        );
        assert!(v[1]
            .text
            .contains("50 GB/s, 40% of the peak of node 1's memory"));
        assert!(!v.iter().any(|x| x.text.contains("the bandwidth of node")));
    }

    #[test]
    fn no_modeled_records_no_model_findings() {
        assert!(models_of(vec![]).is_empty());
    }

    // ------------------------------------------------------------ model_latency_spread

    #[test]
    fn the_latency_spread_is_given_in_cycles_and_time() {
        let h = model::LatencyHeatmap {
            preset: "v1".into(),
            engine: "analytic".into(),
            target: "SLC slice 0".into(),
            target_stop: [0, 0, 0],
            home_slice: 0,
            cells: vec![],
            min_cycles: 20.0,
            max_cycles: 68.0,
            spread_cycles: 48.0,
            mean_ns: 21.5,
            spread_ns: 16.0,
        };
        let f = models_of(vec![modeled("h", &h)]);
        let x = one(&f, "model_latency_spread");
        assert!(x.modeled);
        assert!(
            x.text.starts_with(
                "v1: latency to SLC slice 0 spreads over 48 cycles (20-68, 16.0 ns across cores): the average of 21.5 ns hides it"
            ),
            "{}",
            x.text
        );
    }

    // ------------------------------------------------------------ model_traffic

    #[test]
    fn traffic_saturation_is_given_per_pattern() {
        let t = model::Traffic {
            preset: "v1".into(),
            engine: "des".into(),
            pattern: "uniform".into(),
            flits: 1,
            points: vec![],
            zero_load_latency_cycles: 12.25,
            mean_hops: 3.0,
            saturation_rate: 0.1234,
            router_saturation_rate: None,
            saturation_observed: None,
            bisection_bound: None,
            simulation: None,
        };
        let f = models_of(vec![modeled("t", &t)]);
        let x = one(&f, "model_traffic");
        assert!(x.modeled);
        assert_eq!(
            x.text,
            "v1: uniform traffic saturates at 0.123 packets per stop per cycle (zero-load latency 12.2 cycles)"
        );
    }

    // ------------------------------------------------------------ model_policy

    #[test]
    fn policies_of_one_application_name_the_best_and_the_worst() {
        let f = models_of(vec![
            modeled("p0", &policy("main-thread", "numa0", 80.0, 0.9)),
            modeled("p1", &policy("main-thread", "interleave", 150.0, 0.1)),
            modeled("p2", &policy("main-thread", "numa1", 60.0, 0.95)),
            // Another application with one configuration: nothing to compare.
            modeled("p3", &policy("parallel", "numa0", 100.0, 0.0)),
        ]);
        let x = one(&f, "model_policy");
        assert!(x.modeled);
        assert_eq!(
            x.text,
            "main-thread application: interleave gives the most bandwidth (150 GB/s), numa1 the least (60 GB/s, controller imbalance 0.95)"
        );
    }

    // ------------------------------------------------------------ model_check

    #[test]
    fn the_engines_agreement_is_the_largest_difference_either_way() {
        // -12% (DES below analytic) is larger than +5%.
        let c = check(vec![
            model::CheckMetric::new("bandwidth", 100.0, 105.0),
            model::CheckMetric::new("latency", 100.0, 88.0),
        ]);
        let f = models_of(vec![modeled("c", &c)]);
        let x = one(&f, "model_check");
        assert!(x.modeled);
        assert_eq!(
            x.text,
            "v1 triad (16 cores): the analytic and discrete-event engines agree within 12.0% (largest difference: latency)"
        );
        // A check without metrics says nothing.
        absent(
            &models_of(vec![modeled("c", &check(vec![]))]),
            "model_check",
        );
    }
}
