//! Progress and interruption, for every long computation of the crate (maps, hash
//! recovery from imported maps, comparisons).

/// Progress and interruption.
pub trait Watch {
    /// `done` of `total` steps of phase `what`.
    fn step(&mut self, what: &str, done: u64, total: u64);
    /// True when the user asked to stop.
    fn stop(&self) -> bool;
}

/// A watch that says nothing and never stops.
pub struct Quiet;

impl Watch for Quiet {
    fn step(&mut self, _: &str, _: u64, _: u64) {}
    fn stop(&self) -> bool {
        false
    }
}
