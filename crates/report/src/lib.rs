//! Turning records into things people read.
//!
//! Every result numalab keeps is a typed record; this crate renders them without
//! re-measuring anything and without parsing our own text output: [`table`] is the one
//! interface every exporter shares (JSON, CSV, Markdown, terminal, HTML), [`svg`] draws
//! charts as inline SVG, [`html`] assembles a self-contained page (no network request,
//! every string escaped).

pub mod compare;
pub mod html;
pub mod table;
pub mod topology;

pub use numalab_chart::{escape, svg};
