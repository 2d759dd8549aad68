//! Why a counter did not open: one classification of perf_event_open's (and a
//! counter's later enable, disable and read's) errno, for every crate that opens
//! counters to map onto its own records.
//!
//! The classes follow perf_event_open(2)'s ERRORS section.

/// The class of a failed perf_event_open (or of a later operation on the counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// EACCES / EPERM: not allowed (perf_event_paranoid, capabilities, exclusion bits
    /// the caller may not clear, seccomp).
    Denied,
    /// ENOENT / ENODEV / EOPNOTSUPP: the kernel or the PMU does not have the event, or
    /// not the feature (sampling, a filter) it was asked for.
    NotSupported,
    /// EINVAL: a field out of range, an unknown config, or a group larger than the
    /// PMU's counters.
    Invalid,
    /// EBUSY: the counters are taken (another tool with exclusive access, the NMI
    /// watchdog).
    Busy,
    /// EMFILE / ENFILE / ENOSPC: too many open files, or too many events of a kind
    /// (breakpoints).
    TooMany,
    /// ESRCH: the task to count does not exist (any more).
    NoSuchTask,
    /// Any other errno, or an error without one.
    Other,
}

impl Failure {
    /// Classifies an errno.
    pub fn of_errno(errno: i32) -> Self {
        match errno {
            libc::EACCES | libc::EPERM => Failure::Denied,
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => Failure::NotSupported,
            libc::EINVAL => Failure::Invalid,
            libc::EBUSY => Failure::Busy,
            libc::EMFILE | libc::ENFILE | libc::ENOSPC => Failure::TooMany,
            libc::ESRCH => Failure::NoSuchTask,
            _ => Failure::Other,
        }
    }

    /// Classifies an I/O error by its errno ([`Failure::Other`] when it has none).
    pub fn of_io(e: &std::io::Error) -> Self {
        e.raw_os_error().map_or(Failure::Other, Failure::of_errno)
    }
}
