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

/// A step that stopped at Ctrl-C or SIGTERM before it finished (exit 130): what it was
/// doing and what became of its work, said as "interrupted (Ctrl-C, SIGTERM) while
/// {during}; {left}".
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted (Ctrl-C, SIGTERM) while {during}; {left}")]
pub struct Interrupted {
    /// The step, as "inferring the latency structure".
    pub during: &'static str,
    /// What became of its work, as "nothing was written".
    pub left: &'static str,
}

impl crate::Classify for Interrupted {
    fn class(&self) -> crate::ErrorClass {
        crate::ErrorClass::Interrupted
    }
}

impl Interrupted {
    /// `Err(self)` once a stop was requested ([`requested`]), else `Ok(())`: the check
    /// between two units of work.
    pub fn check(self) -> Result<(), Interrupted> {
        if requested() {
            Err(self)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Classify;

    #[test]
    fn an_interruption_says_the_step_and_exits_130() {
        let e = Interrupted {
            during: "rendering the report",
            left: "nothing was written",
        };
        assert_eq!(
            e.to_string(),
            "interrupted (Ctrl-C, SIGTERM) while rendering the report; nothing was written"
        );
        assert_eq!(e.class().exit_code(), 130);
    }
}
