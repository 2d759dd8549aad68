//! A process-wide stop request.
//!
//! The binary installs a SIGINT/SIGTERM handler that calls [`request`]; long loops in
//! every crate poll [`requested`] between units of work, finish the unit they are in,
//! write what they have, and return. Nothing already measured is lost on Ctrl-C.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Asks every long-running loop to stop at its next check.
pub fn request() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The flag itself, for signal handlers that need an `Arc<AtomicBool>`-like static.
pub fn flag() -> &'static AtomicBool {
    &STOP
}
