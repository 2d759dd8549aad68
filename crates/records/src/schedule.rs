//! Task-mix schedules: the plans compared and the runs: the record types.
