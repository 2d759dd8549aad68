//! A counter profile of one point of a sweep (`numalab sweep --profile`): the default
//! metric set counted in one extra run of the point's command, as a `pmu.profile` record.

use crate::Problem;
use numalab_pmu::profile::{profile, ProfileConfig};
use numalab_schema::machine::CpuIdentity;
use numalab_schema::{ErrorClass, Record};

/// Profiles points with the default configuration of one CPU's catalog.
#[derive(Debug, Clone)]
pub struct PointProfiler {
    config: ProfileConfig,
}

impl PointProfiler {
    /// The profiler of a machine's CPU; refused (unsupported, "--profile: ...") when
    /// numalab has no catalog for it.
    pub fn for_cpu(cpu: &CpuIdentity) -> Result<PointProfiler, Problem> {
        let config = ProfileConfig::for_cpu(cpu)
            .map_err(|e| Problem::new(ErrorClass::Unsupported, format!("--profile: {e}")))?;
        Ok(PointProfiler { config })
    }

    /// Runs the point's command once under counters: its `pmu.profile` record keyed
    /// `key`, or why not in words (kept with the point).
    pub fn profile(&self, key: &str, spec: &numalab_proc::Spec) -> Result<Record, String> {
        profile(spec, &self.config)
            .map(|p| p.into_record(key))
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_without_a_catalog_cannot_be_profiled() {
        let cpu = CpuIdentity {
            architecture: Some("riscv64".into()),
            ..Default::default()
        };
        let e = PointProfiler::for_cpu(&cpu).unwrap_err();
        assert_eq!(e.class, ErrorClass::Unsupported);
        assert!(e.message.starts_with("--profile: "), "{e}");
    }
}
