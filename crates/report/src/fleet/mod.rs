//! The fleet report: the few nodes of a fleet whose figures are off.
//!
//! `numalab fleet run` leaves one bundle per node in `FLEET/nodes/<node>/results.jsonl`
//! with `FLEET/nodes/<node>/status.json`. [`load_fleet`] reads them (a node that cannot
//! be read keeps its problem beside its name); [`analyse`] groups the nodes by hardware
//! identity ([`crate::fingerprint::Fingerprint`] and the SMBIOS memory configuration),
//! takes each node's value of each figure (the median of its repetitions), and flags
//! the nodes whose value is beyond the group's robust spread (median and MAD), a
//! relative floor and the node's own repetitions, for the worse or the better, each
//! with its evidence in a sentence and the kernel and firmware beside it. The
//! [`FleetReport`] renders as a self-contained HTML page ([`render_html`]), terminal
//! text ([`render_text`]) or JSON ([`render_json`]).

mod analyse;
mod input;
#[cfg(feature = "render")]
mod render;

pub use analyse::{
    analyse, fmt_value, Direction, FailedNode, FigureInfo, FigureKey, FigureStats, FleetReport,
    Group, NodeRow, NodeValue, Options, Outlier, FLEET_REPORT_VERSION, MAD_SCALE,
};
pub use input::{
    is_fleet, load_fleet, load_node, memory_key, node_folders, read_status, report_html_path,
    FleetError, FleetInput, FleetNode, NodeFacts, NodeStatus, MAX_MESSAGE_CHARS, MAX_NAME_CHARS,
    MAX_STATUS_BYTES, MAX_STDERR_CHARS,
};
#[cfg(feature = "render")]
pub use render::{
    document, figure_chart, render_html, render_json, render_text, TERMINAL_NODE_ROWS,
};

// The tests read the analysis through its renderings, so they need them.
#[cfg(all(test, feature = "render"))]
mod tests;
