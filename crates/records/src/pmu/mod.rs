//! Records of the performance counters (`pmu.check`, `pmu.comparison`) and what the
//! profiles (`pmu.profile`) and sampling runs (`pmu.samples`) are made of: event values
//! and metrics, the decision tree's walk, coverage, perf groups, hot functions and
//! lines, the capability of the machine, the catalog a CPU was matched to, the core
//! PMU's advertised events. `numalab-pmu` measures and re-exports them under its own
//! module paths (`numalab_pmu::check::PmuCheck` is [`PmuCheck`]); the pure formatting
//! the report shares with the CLI (`fmt_metric` ...) lives here too.

mod advertised;
mod capability;
mod catalog;
mod check;
mod compare;
mod consistency;
mod metrics;
mod profile;
mod sample;
mod tree;

pub use advertised::{is_common, Advertised, CorePmu, REQUIRED_COMMON};
pub use capability::{Capability, EventStatus};
pub use catalog::{CpuMatch, MetricOrigin};
pub use check::PmuCheck;
pub use compare::{Comparison, CountChange, MetricChange};
pub use consistency::{consistency_lines, RuleCheck, RuleFigure, RuleStatus};
pub use metrics::{
    fmt_count, fmt_metric, fmt_pct, fmt_sig, EventState, EventValue, MetricInterval, MetricValue,
    Uncertainty,
};
pub use profile::{
    Attachment, Coverage, GroupRecord, IntervalPoint, Multiplexing, NotComputable, Profile,
    RunRecord, Source, Spread,
};
pub use sample::{FunctionHits, LineHits, SampleReport};
pub use tree::{Finding, SideStall, StepMetric, TreeReport, TreeStep, Unevaluated};
