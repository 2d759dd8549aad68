//! The records `numalab schedule` writes: `schedule.plan` (the runtime models and the three
//! schedules with their predictions), `schedule.run` (one real run of one schedule) and
//! `schedule.summary` (a campaign's makespans per schedule: outliers discarded, medians
//! with intervals, gains over fair).

pub use numalab_records::schedule::{
    summarize, PlanRecord, RunRecord, ScheduleFigures, SummaryRecord, TaskHistory,
};
