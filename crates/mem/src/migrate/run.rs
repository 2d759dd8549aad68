//! Running a migration plan: the reference copy, then each cell's rounds of every method
//! (memcpy, move_pages, a non-temporal stream copy) with their placement and result checks.

use super::*;

pub(super) fn errno_name(e: i32) -> String {
    match e {
        libc::ENOMEM => "ENOMEM (target node full)".into(),
        libc::EBUSY => "EBUSY (page busy)".into(),
        libc::EACCES => "EACCES (page shared with other processes)".into(),
        libc::EFAULT => "EFAULT (not a mapped page)".into(),
        libc::ENOENT => "ENOENT (page not present)".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::EIO => "EIO".into(),
        other => format!("errno {other}"),
    }
}

/// The warning of a method that left some of the `base_pages` off node `dst_node`
/// (`pages_not_moved`): the share moved, how many were not and why. A sweep of many
/// sizes and node pairs gives it once per cell, each with its share: the terminal folds
/// them ([`numalab_schema::fold`]), the lowest shares first.
pub fn pages_not_moved(m: &MethodResult, base_pages: u64, dst_node: u32) -> Option<Warning> {
    let not: u64 = m.pages_not_moved.values().sum();
    if not == 0 {
        return None;
    }
    let moved = 100.0 * base_pages.saturating_sub(not) as f64 / base_pages.max(1) as f64;
    Some(
        Warning::new(
            "pages_not_moved",
            format!(
                "{}: only {moved:.1}% of the pages were moved to node {dst_node}: {not} of {base_pages} were not ({}); they stayed where they were and were freed at the end of the round",
                m.method.name(),
                m.pages_not_moved
                    .iter()
                    .map(|(k, v)| format!("{v} {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_remedy("free memory on the target node, or check that no other process shares the pages"),
    )
}

/// Measures the local one-thread copy bandwidth on `cpu` (payload GB/s, best of the
/// plain and streaming copy kernels).
pub fn measure_reference(
    machine: &Machine,
    budgets: &budget::Budgets,
    placer: &dyn Placer,
    cpu: u32,
    isa: Isa,
) -> Result<Reference, MemError> {
    let node = machine.pu(cpu).and_then(|p| p.numa_node);
    let policy = node.map_or(MemPolicy::FirstTouch, |n| MemPolicy::Bind(vec![n]));
    let mut opts = bandwidth::Options::defaults(machine);
    opts.kernels = vec![Kernel::plain(Op::Copy)];
    if isa.has_nt() {
        opts.kernels.push(Kernel {
            op: Op::Copy,
            nt: true,
        });
    }
    opts.isa = isa;
    opts.reps = 5;
    // Copy: two arrays of 4x the LLC each.
    opts.working_set_bytes = (2 * 4 * crate::llc_bytes(machine).0).max(128 << 20);
    if let Some(n) = node {
        let safe = budgets.safe_bytes(n);
        if opts.working_set_bytes > safe {
            opts.working_set_bytes = (safe / 2).max(16 << 20);
        }
    }
    let p = bandwidth::Plan {
        groups: vec![Group {
            key_prefix: "reference".into(),
            pus: vec![cpu],
            policy,
            matrix: None,
        }],
        options: opts.clone(),
        notes: Vec::new(),
    };
    let mut recs: Vec<Record> = Vec::new();
    let out = bandwidth::run(&p, machine, placer, &mut recs);
    if out.interrupted {
        return Err(MemError::Interrupted);
    }
    if let Some((_, e)) = out.failed.into_iter().next() {
        return Err(e);
    }
    let best = recs
        .iter()
        .filter_map(|r| r.decode::<bandwidth::BandwidthRecord>()?.ok())
        .max_by(|a, b| a.bandwidth_gbps.median.total_cmp(&b.bandwidth_gbps.median))
        .ok_or_else(|| MemError::Runtime("the reference copy produced no result".into()))?;
    Ok(Reference {
        kind: "local_copy".into(),
        gbps: best.bandwidth_gbps.median / 2.0,
        detail: format!(
            "one thread on CPU {cpu}, {} kernel ({}), {} per array on node {}: {:.2} GB/s STREAM-counted = {:.2} GB/s of payload",
            best.kernel,
            best.isa,
            fmt_bytes(best.array_bytes),
            node.map_or("?".into(), |n| n.to_string()),
            best.bandwidth_gbps.median,
            best.bandwidth_gbps.median / 2.0
        ),
    })
}

/// Runs a plan: the reference first (once per mover CPU, unless a link peak is given),
/// then every cell.
pub fn run(
    plan: &Plan,
    machine: &Machine,
    budgets: &budget::Budgets,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
) -> Outcome {
    let (clock, clock_warnings) = check_clock();
    let skipped = plan.cells.iter().filter(|c| sink.done(&c.key)).count();
    let mut cells = crate::Cells::new(sink, "migrate", (plan.cells.len() - skipped) as u64);
    let todo: Vec<&Cell> = plan.cells.iter().filter(|c| !cells.skip(&c.key)).collect();
    let mut refs: BTreeMap<u32, Reference> = BTreeMap::new();
    for (i, cell) in todo.iter().enumerate() {
        if cells.stop() {
            break;
        }
        cells.progress(i as u64);
        let pair = &plan.pairs[cell.pair];
        let reference = match plan.options.link_peak_gbps {
            Some(g) => Reference {
                kind: "link_peak".into(),
                gbps: g,
                detail: format!("--link-peak {g} GB/s, given by the user"),
            },
            None => match refs.get(&pair.cpu) {
                Some(r) => r.clone(),
                None => {
                    match measure_reference(machine, budgets, placer, pair.cpu, plan.options.isa) {
                        Ok(r) => {
                            refs.insert(pair.cpu, r.clone());
                            r
                        }
                        Err(MemError::Interrupted) => {
                            cells.interrupted();
                            break;
                        }
                        Err(e) => {
                            cells.fail(cell.key.clone(), e);
                            continue;
                        }
                    }
                }
            },
        };
        match run_cell(plan, cell, machine, placer, &clock, reference) {
            Ok(rec) => {
                let mut w = clock_warnings.clone();
                for m in &rec.methods {
                    w.extend(pages_not_moved(m, rec.base_pages, rec.dst_node));
                    if !m.data_verified {
                        w.push(Warning::new(
                            "data_mismatch",
                            format!(
                                "{}: the destination does not hold the source data",
                                m.method.name()
                            ),
                        ));
                    }
                }
                if rec.source.fraction_on(&[rec.src_node]) < 0.99 {
                    w.push(Warning::new(
                        "placement_mismatch",
                        format!(
                            "only {:.1}% of the source pages were on node {} before moving",
                            rec.source.fraction_on(&[rec.src_node]) * 100.0,
                            rec.src_node
                        ),
                    ));
                }
                let record = Record::new(cell.key.clone(), Origin::Measured, &rec).with_warnings(w);
                cells.deliver(record)
            }
            Err(MemError::Interrupted) => {
                cells.interrupted();
                break;
            }
            Err(e) => cells.fail(cell.key.clone(), e),
        }
    }
    cells.finish()
}

/// What one round of one method found.
pub(super) struct Round {
    ns: u64,
    on_target: u64,
    not_moved: BTreeMap<String, u64>,
    destination: PagePlacement,
    verified: bool,
    source: PagePlacement,
}

pub(super) fn sample_check(src: &[u64], dst: &[u64], stride: usize) -> bool {
    src.len() == dst.len()
        && (0..src.len())
            .step_by(stride.max(1))
            .all(|i| src[i] == dst[i])
        && src.last() == dst.last()
}

pub(super) fn one_round(
    method: Method,
    pair: &Pair,
    bytes: u64,
    prefault: bool,
    isa: Isa,
    placer: &dyn Placer,
    stamp: u64,
) -> Result<Round, MemError> {
    let base = base_page_size();
    // Source on the source node, first touched here, with a pattern unique to the round.
    let mut src = Region::new(bytes as usize, PageKind::Base)?;
    placer.bind_region(&src, &MemPolicy::Bind(vec![pair.src]))?;
    for (i, w) in src.as_mut_typed::<u64>().iter_mut().enumerate() {
        *w = stamp ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    let source = PagePlacement::from_page_nodes(&placer.page_nodes(&src)?);
    let stride = base / 8;
    match method {
        Method::MovePages => {
            let expect: Vec<u64> = src
                .as_typed::<u64>()
                .iter()
                .step_by(stride)
                .copied()
                .collect();
            let t0 = numalab_clock::now_ns();
            let status = match placer.move_region(&src, pair.dst) {
                Ok(s) => s,
                Err(e) => {
                    // Say where the pages ended up before the memory is freed.
                    let now = placer
                        .page_nodes(&src)
                        .map(|n| PagePlacement::from_page_nodes(&n))
                        .unwrap_or_default();
                    let on = now
                        .pages_per_node
                        .iter()
                        .filter(|(n, _)| *n == pair.dst)
                        .map(|(_, c)| c)
                        .sum::<u64>();
                    return Err(MemError::Runtime(format!(
                        "{e}; when it failed {on} of {} pages were on node {} (pages per node: {:?}); the test memory was then freed, nothing stays half-moved",
                        src.pages(),
                        pair.dst,
                        now.pages_per_node
                    )));
                }
            };
            let t1 = numalab_clock::now_ns();
            let mut on_target = 0;
            let mut not_moved = BTreeMap::new();
            for s in &status {
                match s {
                    Ok(n) if *n == pair.dst => on_target += 1,
                    Ok(n) => *not_moved.entry(format!("left on node {n}")).or_insert(0) += 1,
                    Err(e) => *not_moved.entry(errno_name(*e)).or_insert(0) += 1,
                }
            }
            let destination = PagePlacement::from_page_nodes(&placer.page_nodes(&src)?);
            let got: Vec<u64> = src
                .as_typed::<u64>()
                .iter()
                .step_by(stride)
                .copied()
                .collect();
            Ok(Round {
                ns: t1 - t0,
                on_target,
                not_moved,
                destination,
                verified: got == expect,
                source,
            })
        }
        Method::Memcpy | Method::StreamCopy => {
            let mut dst = Region::new(bytes as usize, PageKind::Base)?;
            placer.bind_region(&dst, &MemPolicy::Bind(vec![pair.dst]))?;
            if prefault {
                dst.touch();
            }
            let t0 = numalab_clock::now_ns();
            if method == Method::Memcpy {
                dst.as_mut_slice().copy_from_slice(src.as_slice());
            } else {
                kernels::copy(isa, src.as_typed::<f64>(), dst.as_mut_typed::<f64>(), true)?;
            }
            let t1 = numalab_clock::now_ns();
            std::hint::black_box(dst.as_slice().as_ptr());
            let nodes = placer.page_nodes(&dst)?;
            let destination = PagePlacement::from_page_nodes(&nodes);
            let on_target = nodes.iter().filter(|n| **n == Some(pair.dst)).count() as u64;
            let mut not_moved = BTreeMap::new();
            for n in nodes.iter().filter(|n| **n != Some(pair.dst)) {
                let k = match n {
                    Some(n) => format!("landed on node {n}"),
                    None => "not present".into(),
                };
                *not_moved.entry(k).or_insert(0) += 1;
            }
            Ok(Round {
                ns: t1 - t0,
                on_target,
                not_moved,
                destination,
                verified: sample_check(src.as_typed::<u64>(), dst.as_typed::<u64>(), stride),
                source,
            })
        }
    }
}

/// Time to fault in a fresh destination region (one write per base page), ns.
pub(super) fn fault_round(pair: &Pair, bytes: u64, placer: &dyn Placer) -> Result<u64, MemError> {
    let mut dst = Region::new(bytes as usize, PageKind::Base)?;
    placer.bind_region(&dst, &MemPolicy::Bind(vec![pair.dst]))?;
    let t0 = numalab_clock::now_ns();
    dst.touch();
    Ok(numalab_clock::now_ns() - t0)
}

pub(super) fn run_cell(
    plan: &Plan,
    cell: &Cell,
    machine: &Machine,
    placer: &dyn Placer,
    clock: &numalab_clock::ClockCheck,
    reference: Reference,
) -> Result<MigrateRecord, MemError> {
    let pair = &plan.pairs[cell.pair];
    let opts = &plan.options;
    let bytes = cell.unit_bytes * cell.pages;
    let base = base_page_size() as u64;
    let methods = opts.methods.clone();
    let rounds = pool::run_pinned(
        placer,
        &[pair.cpu],
        |_| Ok(()),
        |_, _, _| -> Result<(Vec<Vec<Round>>, Vec<f64>), MemError> {
            let mut per: Vec<Vec<Round>> = methods.iter().map(|_| Vec::new()).collect();
            let mut faults = Vec::new();
            let copies = methods.iter().any(|m| *m != Method::MovePages);
            for r in 0..opts.reps {
                for k in 0..methods.len() {
                    if numalab_schema::interrupt::requested() {
                        return Err(MemError::Interrupted);
                    }
                    // Rotate the order so no method always runs first.
                    let mi = (k + r) % methods.len();
                    let stamp = (r as u64) << 32 | mi as u64 | 0x5a5a_0000;
                    per[mi].push(one_round(
                        methods[mi],
                        pair,
                        bytes,
                        opts.prefault,
                        opts.isa,
                        placer,
                        stamp,
                    )?);
                }
                if copies {
                    faults.push(fault_round(pair, bytes, placer)? as f64);
                }
            }
            Ok((per, faults))
        },
    )?
    .into_iter()
    .next()
    .expect("one worker")?;
    let (rounds, faults) = rounds;
    let fault_ns_per_base_page = numalab_stats::median(&faults).map(|f| f / (bytes / base) as f64);
    let same = pair.src == pair.dst;
    let source = rounds
        .first()
        .and_then(|r| r.first())
        .map(|r| r.source.clone())
        .unwrap_or_default();
    let mut results = Vec::new();
    for (mi, method) in methods.iter().enumerate() {
        let rs = &rounds[mi];
        let sample_ns: Vec<f64> = rs.iter().map(|r| r.ns as f64).collect();
        let last = rs.last().expect("at least one round");
        let moved_nothing = same && *method == Method::MovePages;
        let throughput = if moved_nothing {
            None
        } else {
            Summary::of(
                &sample_ns
                    .iter()
                    .map(|ns| bytes as f64 / ns.max(1.0))
                    .collect::<Vec<_>>(),
            )
        };
        let median_ns = numalab_stats::median(&sample_ns).unwrap_or(0.0);
        results.push(MethodResult {
            method: *method,
            percent_of_reference: throughput.as_ref().map(|t| 100.0 * t.median / reference.gbps),
            throughput_gbps: throughput,
            ns_per_page: median_ns / cell.pages as f64,
            pages_on_target: last.on_target,
            pages_not_moved: last.not_moved.clone(),
            destination: last.destination.clone(),
            data_verified: rs.iter().all(|r| r.verified),
            note: moved_nothing.then(|| {
                "source and target are the same node: the kernel left every page where it was, so no bytes moved; the time is the system call's cost of checking the pages".to_string()
            }),
            sample_ns,
        });
    }
    let (winner, mut why) = verdict(&results, same, &reference, cell.unit_bytes, base);
    if let Some(f) = fault_ns_per_base_page.filter(|_| !opts.prefault) {
        let fault_total = f * (bytes / base) as f64;
        let copy_ns = results
            .iter()
            .filter(|r| r.method != Method::MovePages)
            .filter_map(|r| numalab_stats::median(&r.sample_ns))
            .fold(f64::INFINITY, f64::min);
        if copy_ns.is_finite() && copy_ns > 0.0 {
            why.push_str(&format!(
                "; faulting in the fresh destination alone takes {:.0} ns per base page, {:.0}% of the fastest copy's time (--prefault measures the copy without it)",
                f,
                100.0 * fault_total / copy_ns
            ));
        }
    }
    Ok(MigrateRecord {
        src_node: pair.src,
        dst_node: pair.dst,
        pair_role: pair.role.clone(),
        distance: pair.distance,
        cpu: pair.cpu,
        cpu_node: machine.pu(pair.cpu).and_then(|p| p.numa_node),
        unit_bytes: cell.unit_bytes,
        pages: cell.pages,
        base_pages: bytes / base,
        bytes,
        unit_note: (cell.unit_bytes != base
            && cell.unit_bytes.is_multiple_of(base)
            && cell.unit_bytes > base)
            .then(|| {
                format!(
                    "a {} unit is {} base pages of {} (this system has no {} pages)",
                    fmt_bytes(cell.unit_bytes),
                    cell.unit_bytes / base,
                    fmt_bytes(base),
                    fmt_bytes(cell.unit_bytes)
                )
            }),
        same_node: same,
        prefault: opts.prefault,
        destination_fault_ns_per_base_page: fault_ns_per_base_page,
        source,
        methods: results,
        winner,
        why,
        reference,
        clamp_note: plan.clamp_note.clone(),
        isa: opts.isa,
        timer: Timer {
            check: clock.clone(),
            subtracted_ns: 0.0,
        },
    })
}
