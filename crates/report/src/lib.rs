//! Turning records into things people read.
//!
//! Every result numalab keeps is a typed record; this crate renders them without
//! re-measuring anything and without parsing our own text output: [`load`] reads
//! bundles, [`sections`] turns each record kind into tables, charts and outlines of one
//! [`doc::Document`], which every exporter renders ([`table`]: JSON, CSV, Markdown,
//! terminal; [`html`]: a self-contained page, every string escaped). [`findings`]
//! writes what the records say in sentences; [`metrics`] extracts comparable figures
//! and [`compare`] puts bundles side by side with ratio intervals. [`records`] holds
//! the record types of `evaluate` and `doctor`; [`draw`] the charts of record families
//! that the command line also writes as files. [`fingerprint`] is a machine's hardware
//! identity; [`fleet`] finds the nodes of a fleet whose figures are off.
//!
//! The renderers (`doc`, `table`'s `render`, `html`, `sections`, `draw`, `topology`,
//! `peak`, and the comparison and fleet reports as documents) are the `render` feature,
//! on by default. Without it the crate is the analysis alone (`load`, `metrics`,
//! `compare`, `findings`, `fingerprint`, the fleet analysis, and the tables as data),
//! as `numalab-history` uses it.

pub mod anchors;
pub mod compare;
mod decodes;
#[cfg(feature = "render")]
pub mod doc;
#[cfg(feature = "render")]
pub mod draw;
pub mod facts;
pub mod findings;
pub mod fingerprint;
pub mod fleet;
#[cfg(feature = "render")]
pub mod html;
mod keyorder;
pub mod load;
pub mod memattrs;
pub mod metrics;
pub mod outcome;
#[cfg(feature = "render")]
pub mod peak;
pub mod power;
pub mod records;
#[cfg(feature = "render")]
pub mod sections;
pub mod table;
#[cfg(feature = "render")]
pub mod topology;

pub use load::{load, Loaded};
#[cfg(feature = "render")]
pub use numalab_chart::{escape, svg};

/// `text` cut to `max` characters with "..." (command lines in headings and sentences).
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        format!(
            "{}...",
            text.chars().take(max.saturating_sub(3)).collect::<String>()
        )
    } else {
        text.to_string()
    }
}
