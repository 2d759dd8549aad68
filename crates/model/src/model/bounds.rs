//! Upper (and lower) bounds of every preset value that sets the size of the work or
//! feeds a cycle count, checked before anything is placed or allocated: a value past
//! them (`cores.per_stop=1000000`, `memory.ddr.latency_ns=1e308`) would make a run
//! never end, exhaust the memory or turn a latency into infinity. The table is
//! documented in docs/model.md; a value set with `--set` is a usage error (exit 2), one
//! from a preset file an input error (exit 3), both naming the key and the range.

use super::bad;
use crate::error::ModelError;
use crate::spec::Loaded;

/// Most cores or slices at one stop (real meshes have 1-4).
pub const MAX_PER_STOP: u32 = 64;
/// Most hardware threads of a core.
pub const MAX_THREADS_PER_CORE: u32 = 8;
/// Most outstanding line requests of a core.
pub const MAX_OUTSTANDING: u32 = 4096;
/// Largest cache line and flit, bytes.
pub const MAX_LINE_BYTES: u32 = 4096;
/// Most cycles of one pipeline step (router, link, injection, lookup).
pub const MAX_STEP_CYCLES: u32 = 1000;
/// Largest latency in ns (memory access, socket link): 1 ms, far above any memory.
pub const MAX_LATENCY_NS: f64 = 1e6;
/// Highest clock, GHz.
pub const MAX_CLOCK_GHZ: f64 = 100.0;
/// Highest bandwidth of a channel or link, GB/s.
pub const MAX_GBPS: f64 = 1e5;
/// Most channels of a controller.
pub const MAX_CHANNELS: u32 = 64;
/// Most entries of a controller queue or home tracker.
pub const MAX_QUEUE: u32 = 1 << 16;
/// Largest capacity of a cache, a pool or an L2: 1 PiB.
pub const MAX_BYTES: u64 = numalab_schema::units::MAX_BYTES;

/// One checked value: its dotted key, the value, the inclusive range.
struct Check {
    key: String,
    value: f64,
    min: f64,
    max: f64,
}

fn int(key: impl Into<String>, v: impl Into<u64>, min: u64, max: u64) -> Check {
    Check {
        key: key.into(),
        value: v.into() as f64,
        min: min as f64,
        max: max as f64,
    }
}

fn real(key: impl Into<String>, value: f64, min: f64, max: f64) -> Check {
    Check {
        key: key.into(),
        value,
        min,
        max,
    }
}

/// Every bounded value of the spec, in the order they are reported.
fn checks(l: &Loaded) -> Vec<Check> {
    let s = &l.spec;
    let (n, c) = (&s.noc, &s.cores);
    let step = u64::from(MAX_STEP_CYCLES);
    let mut v = vec![
        int("cores.per_stop", c.per_stop, 1, MAX_PER_STOP.into()),
        int("slc.per_stop", s.slc.per_stop, 1, MAX_PER_STOP.into()),
        int(
            "cores.threads_per_core",
            c.threads_per_core,
            1,
            MAX_THREADS_PER_CORE.into(),
        ),
        int(
            "cores.max_outstanding",
            c.max_outstanding,
            1,
            MAX_OUTSTANDING.into(),
        ),
        int("cores.line_bytes", c.line_bytes, 1, MAX_LINE_BYTES.into()),
        int("cores.l2_bytes", c.l2_bytes, 0, MAX_BYTES),
        real(
            "cores.clock_ghz",
            c.clock_ghz,
            f64::MIN_POSITIVE,
            MAX_CLOCK_GHZ,
        ),
        real(
            "noc.clock_ghz",
            n.clock_ghz,
            f64::MIN_POSITIVE,
            MAX_CLOCK_GHZ,
        ),
        int("noc.link_bytes", n.link_bytes, 1, MAX_LINE_BYTES.into()),
        int("noc.router_cycles", n.router_cycles, 0, step),
        int("noc.link_cycles_x", n.link_cycles_x, 0, step),
        int("noc.link_cycles_y", n.link_cycles_y, 0, step),
        int("noc.inject_cycles", n.inject_cycles, 0, step),
        int("noc.eject_cycles", n.eject_cycles, 0, step),
        int("slc.bytes", s.slc.bytes, 0, MAX_BYTES),
        int("slc.lookup_cycles", s.slc.lookup_cycles, 0, step),
    ];
    if let Some(b) = &n.boundary {
        v.push(int("noc.boundary.link_cycles", b.link_cycles, 0, step));
    }
    if let Some(t) = s.slc.tracker_entries {
        v.push(int("slc.tracker_entries", t, 1, MAX_QUEUE.into()));
    }
    for (name, p) in &s.memory {
        let k = |f: &str| format!("memory.{name}.{f}");
        v.push(int(
            k("channels_per_controller"),
            p.channels_per_controller,
            1,
            MAX_CHANNELS.into(),
        ));
        v.push(real(
            k("channel_gbps"),
            p.channel_gbps,
            f64::MIN_POSITIVE,
            MAX_GBPS,
        ));
        v.push(real(k("latency_ns"), p.latency_ns, 0.0, MAX_LATENCY_NS));
        v.push(int(k("capacity_bytes"), p.capacity_bytes, 0, MAX_BYTES));
        if let Some(q) = p.queue_depth {
            v.push(int(k("queue_depth"), q, 1, MAX_QUEUE.into()));
        }
    }
    if let Some(k) = &s.socket {
        v.push(real(
            "socket.link_gbps",
            k.link_gbps,
            f64::MIN_POSITIVE,
            MAX_GBPS,
        ));
        v.push(real(
            "socket.link_latency_ns",
            k.link_latency_ns,
            0.0,
            MAX_LATENCY_NS,
        ));
    }
    v
}

/// A value as people write it: whole numbers in digits, very large or small ones in
/// exponent form (1e308, not 309 digits).
fn show(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{}", x as i64)
    } else if x.is_finite() && x != 0.0 && !(1e-4..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Checks every bounded value of `l` ([`checks`]); the first one outside its range is
/// refused naming the key, the value and the range: a usage error when `--set` gave it,
/// an input error when the preset did.
pub(super) fn check(l: &Loaded) -> Result<(), ModelError> {
    for c in checks(l) {
        if c.value.is_finite() && c.value >= c.min && c.value <= c.max {
            continue;
        }
        let range = if c.min == f64::MIN_POSITIVE {
            format!("above 0 and at most {}", show(c.max))
        } else {
            format!("{}-{}", show(c.min), show(c.max))
        };
        let msg = format!(
            "{} = {} is out of range: it must be {range} (bounds in docs/model.md)",
            c.key,
            show(c.value)
        );
        let from_set = l
            .sources
            .get(&c.key)
            .is_some_and(|s| s == "command line --set");
        return Err(if from_set {
            ModelError::Usage {
                msg: format!("--set {msg}"),
            }
        } else {
            bad(&l.label, msg)
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::Model;

    fn refused(sets: &[&str]) -> crate::error::ModelError {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Model::load("mesh", &sets).expect_err("out of bounds")
    }

    #[test]
    fn model_run_mesh_cores_per_stop_1000000_is_refused_with_the_bound() {
        let e = refused(&["cores.per_stop=1000000"]);
        assert!(matches!(e, crate::error::ModelError::Usage { .. }), "{e}");
        let t = e.to_string();
        assert!(
            t.contains("cores.per_stop = 1000000") && t.contains("1-64"),
            "{t}"
        );
    }

    #[test]
    fn model_run_mesh_ddr_latency_1e308_is_refused_with_the_bound() {
        let e = refused(&["memory.ddr.latency_ns=1e308"]);
        assert!(matches!(e, crate::error::ModelError::Usage { .. }), "{e}");
        let t = e.to_string();
        assert!(
            t.contains("memory.ddr.latency_ns") && t.contains("0-1000000"),
            "{t}"
        );
        for bad in ["nan", "inf", "-1.0"] {
            let e = refused(&[&format!("memory.ddr.latency_ns={bad}")]);
            assert!(
                e.to_string().contains("memory.ddr.latency_ns"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn every_shipped_preset_is_within_the_bounds() {
        for (name, _) in crate::spec::PRESETS {
            let l = crate::spec::load(name, &[]).unwrap();
            super::check(&l).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn bounds_themselves_are_accepted() {
        Model::load(
            "mesh",
            &[
                "memory.ddr.latency_ns=1000000.0".into(),
                "slc.lookup_cycles=1000".into(),
            ],
        )
        .unwrap();
    }
}
