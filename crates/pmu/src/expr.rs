//! The one expression engine every metric formula goes through: [`numalab_expr`],
//! re-exported here so `numalab_pmu::expr::...` paths keep working.

pub use numalab_expr::*;
