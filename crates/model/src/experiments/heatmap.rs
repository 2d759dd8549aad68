//! Latency from every core to one target (a slice, a controller): the heatmap cells.

use super::*;

/// The heatmap target's home slice, controller and stop.
pub(super) fn resolve_target(
    model: &Model,
    t: Target,
) -> Result<(usize, Option<usize>, StopId), ModelError> {
    match t {
        Target::Slice(s) => {
            if s >= model.slices.len() {
                return Err(usage(format!(
                    "slice {s} does not exist: {} has slices 0-{}",
                    model.label,
                    model.slices.len() - 1
                )));
            }
            Ok((s, None, model.slices[s].stop))
        }
        Target::Mc(m) => {
            if m >= model.mcs.len() {
                return Err(usage(format!(
                    "memory controller {m} does not exist: {} has controllers 0-{}",
                    model.label,
                    model.mcs.len() - 1
                )));
            }
            let stop = model.mcs[m].stop;
            let home = (0..model.slices.len())
                .min_by_key(|&s| model.geo.path_cycles(model.slices[s].stop, stop))
                .expect("a model has slices");
            Ok((home, Some(m), stop))
        }
    }
}

/// The latency heatmap: zero-load latency from every core to one target.
pub fn heatmap_cells(
    model: &Model,
    target: Target,
    engine: &str,
    cfg: &DesConfig,
) -> Result<Vec<HeatCell>, ModelError> {
    let (home, mc, _) = resolve_target(model, target)?;
    let hstop = model.slices[home].stop;
    let mut cells = Vec::new();
    for (c, core) in model.cores.iter().enumerate() {
        let cycles = if engine == "analytic" {
            match mc {
                None => latency::home_read_cycles(model, core.stop, hstop),
                Some(m) => latency::memory_read_cycles(model, core.stop, hstop, m),
            }
        } else {
            check_interrupt()?;
            // One core, one request at a time: the simulated zero-load latency.
            let app = App {
                cores: vec![c],
                data: Data::Fixed {
                    home,
                    mc: mc.unwrap_or(0),
                    hit: mc.is_none(),
                },
                mix: vec![Op::Read],
                slc_hit: 0.0,
                msc_hit: 0.0,
                snoop: 0.0,
                outstanding: 1,
                think_cycles: 0,
            };
            let short = DesConfig {
                warmup_cycles: 0,
                measure_cycles: cfg.measure_cycles.min(5_000),
                ..*cfg
            };
            des::app(model, &app, &short)?.0.request_latency_cycles
        };
        let (socket, x, y) = model.geo.coords(core.stop);
        cells.push(HeatCell {
            core: c,
            socket,
            x,
            y,
            latency_cycles: cycles,
            latency_ns: model.ns(cycles),
        });
    }
    Ok(cells)
}

pub(super) fn heatmap(
    model: &Model,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<(), ModelError> {
    let target = opts.target.unwrap_or(Target::Slice(0));
    let (home, _, tstop) = resolve_target(model, target)?;
    let tname = match target {
        Target::Slice(s) => format!("slice:{s}"),
        Target::Mc(m) => format!("mc:{m}"),
    };
    let engines = opts.engine.names();
    let mut both: Vec<LatencyHeatmap> = Vec::new();
    for (i, &engine) in engines.iter().enumerate() {
        sink.progress(
            &format!("latency heatmap ({engine})"),
            i as u64,
            engines.len() as u64,
        );
        let key = format!("model/latency-heatmap/{}/{engine}/{tname}", model.label);
        if sink.done(&key) {
            continue;
        }
        let cells = heatmap_cells(model, target, engine, &opts.des)?;
        let min = cells
            .iter()
            .map(|c| c.latency_cycles)
            .fold(f64::INFINITY, f64::min);
        let max = cells.iter().map(|c| c.latency_cycles).fold(0.0, f64::max);
        let mean = cells.iter().map(|c| c.latency_cycles).sum::<f64>() / cells.len() as f64;
        let (k, x, y) = model.geo.coords(tstop);
        let rec = LatencyHeatmap {
            preset: model.label.clone(),
            engine: engine.into(),
            target: tname.clone(),
            target_stop: [k, x, y],
            home_slice: home,
            cells,
            min_cycles: min,
            max_cycles: max,
            spread_cycles: max - min,
            mean_ns: model.ns(mean),
            spread_ns: model.ns(max - min),
        };
        sink.push(Record::new(key, Origin::Modeled, &rec))?;
        both.push(rec);
    }
    if both.len() == 2 {
        let (a, d) = (&both[0], &both[1]);
        let c = Check {
            preset: model.label.clone(),
            experiment: "latency-heatmap".into(),
            point: tname.clone(),
            metrics: vec![
                CheckMetric::new("mean_ns", a.mean_ns, d.mean_ns),
                CheckMetric::new("spread_cycles", a.spread_cycles, d.spread_cycles),
                CheckMetric::new("max_cycles", a.max_cycles, d.max_cycles),
            ],
            ..Default::default()
        };
        let key = format!("model/check/latency-heatmap/{}/{tname}", model.label);
        if !sink.done(&key) {
            sink.push(Record::new(key, Origin::Modeled, &c))?;
        }
    }
    sink.progress(
        "latency heatmap",
        engines.len() as u64,
        engines.len() as u64,
    );
    Ok(())
}

/// The heatmap to draw over the floorplan: the first [`LatencyHeatmap`] among `records`
/// that decodes (callers give this run's records before an earlier run's).
pub fn first_heatmap<'a>(records: impl IntoIterator<Item = &'a Record>) -> Option<LatencyHeatmap> {
    records
        .into_iter()
        .find_map(|r| r.decode::<LatencyHeatmap>().and_then(|x| x.ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_heatmap_among_other_records() {
        let model = Model::load("mesh", &[]).unwrap();
        let check = Check {
            preset: model.label.clone(),
            experiment: "latency-heatmap".into(),
            point: "slice:0".into(),
            metrics: vec![CheckMetric::new("mean_ns", 1.0, 1.0)],
            ..Default::default()
        };
        let mut records = vec![Record::new("check", Origin::Modeled, &check)];
        for slice in [1, 2] {
            let opts = Options {
                target: Some(Target::Slice(slice)),
                ..Options::default()
            };
            run(&model, Experiment::LatencyHeatmap, &opts, &mut records).unwrap();
        }
        assert_eq!(records.len(), 3);
        let h = first_heatmap(&records).unwrap();
        assert_eq!(
            (h.engine.as_str(), h.target.as_str()),
            ("analytic", "slice:1")
        );
        assert!(first_heatmap(&records[..1]).is_none());
        assert!(first_heatmap(&[]).is_none());
    }
}
