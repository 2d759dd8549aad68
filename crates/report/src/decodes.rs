//! Whether a record decodes as the type of its kind, from its payload held in memory
//! or straight from its line in a journal ([`crate::load`]).

use numalab_schema::journal::{Span, SpanReader};
use numalab_schema::{Record, RecordKind};

/// The records of one kind that cannot be shown ([`crate::load::Loaded::unreadable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The kind.
    pub kind: String,
    /// How many of its records cannot be shown.
    pub count: usize,
    /// A kind this numalab knows whose records do not decode (newer or damaged);
    /// `false`: a kind it does not know.
    pub damaged: bool,
    /// The first of them that does not decode: its key and serde's reason (a known kind).
    pub first: Option<(String, String)>,
}

/// Whether a record decodes: `Some(Ok(()))` yes, `Some(Err(why))` a known kind that does
/// not (serde's reason; empty when only the fact is known), `None` a kind this numalab
/// does not know.
type Decoded = Option<Result<(), String>>;

/// Whether a record decodes: `Some(true)` yes, `Some(false)` a known kind that does not
/// decode (newer or damaged), `None` a kind this numalab does not know.
pub fn decodes(r: &Record) -> Option<bool> {
    decode_error(r).map(|v| v.is_ok())
}

/// Why a record of a known kind does not decode, in serde's words ("missing field
/// `threads`", a matrix's short row): `Some(Err(why))`; `Some(Ok(()))` when it decodes,
/// `None` for a kind this numalab does not know.
pub fn decode_error(r: &Record) -> Decoded {
    struct Held<'a>(&'a Record);
    impl Probe for Held<'_> {
        fn ok<T: RecordKind>(&mut self) -> Decoded {
            self.0
                .decode::<T>()
                .map(|x| x.map(drop).map_err(|e| e.to_string()))
        }
    }
    known(&mut Held(r))
}

/// [`decodes`] of the record of `kind` whose line is at `span`, decoded straight from
/// the file ([`SpanReader::decode`]): a line that cannot be read back does not decode.
pub(crate) fn decodes_line(lines: &mut SpanReader, kind: &str, span: Span) -> Option<bool> {
    struct Line<'a> {
        lines: &'a mut SpanReader,
        kind: &'a str,
        span: Span,
    }
    impl Probe for Line<'_> {
        fn ok<T: RecordKind>(&mut self) -> Decoded {
            (self.kind == T::KIND).then(|| {
                if matches!(self.lines.decode::<T>(self.span), Ok(Some(_))) {
                    Ok(())
                } else {
                    Err(String::new())
                }
            })
        }
    }
    known(&mut Line { lines, kind, span }).map(|v| v.is_ok())
}

/// Whether a record decodes as one kind `T` (`None`: it is not of `T`'s kind).
trait Probe {
    fn ok<T: RecordKind>(&mut self) -> Decoded;
}

/// [`Probe::ok`] of the kind of the record `p` probes, `None` if no kind this numalab
/// knows is its kind.
fn known<P: Probe>(p: &mut P) -> Decoded {
    use crate::records::*;
    use numalab_records::model as m;
    let kinds: &[fn(&mut P) -> Decoded] = &[
        P::ok::<TopologyRecord>,
        P::ok::<DoctorReport>,
        P::ok::<StepRecord>,
        P::ok::<RunRecord>,
        P::ok::<PowerCheck>,
        P::ok::<numalab_records::c2c::PairRecord>,
        P::ok::<numalab_records::c2c::MatrixRecord>,
        P::ok::<numalab_records::workload::WorkloadRun>,
        P::ok::<numalab_records::harness::RunRecord>,
        P::ok::<numalab_records::harness::ScaleSummary>,
        P::ok::<numalab_records::harness::PolicySummary>,
        P::ok::<numalab_records::harness::SweepSummary>,
        P::ok::<numalab_records::pmu::PmuCheck>,
        P::ok::<numalab_records::pmu::Profile>,
        P::ok::<numalab_records::pmu::SampleReport>,
        P::ok::<numalab_records::pmu::Comparison>,
        P::ok::<numalab_records::memaccess::MemAccessRecord>,
        P::ok::<m::StreamTriad>,
        P::ok::<m::LatencyHeatmap>,
        P::ok::<m::Traffic>,
        P::ok::<m::Policy>,
        P::ok::<m::Check>,
        P::ok::<numalab_records::mem::BandwidthRecord>,
        P::ok::<numalab_records::mem::latency::LatencyRecord>,
        P::ok::<numalab_records::mem::LoadedRecord>,
        P::ok::<numalab_records::mem::MigrateRecord>,
        P::ok::<numalab_records::layout::InferenceRecord>,
        P::ok::<numalab_records::layout::GroundTruthRecord>,
        P::ok::<numalab_records::layout::AffinityRecord>,
        P::ok::<numalab_records::schedule::PlanRecord>,
        P::ok::<numalab_records::schedule::RunRecord>,
        P::ok::<numalab_records::schedule::SummaryRecord>,
        P::ok::<numalab_records::home::HomeMapRecord>,
        P::ok::<numalab_records::home::AccuracyRecord>,
        P::ok::<numalab_records::home::BenchRecord>,
        P::ok::<numalab_records::home::slices::HomeHashRecord>,
        P::ok::<numalab_records::home::slices::HomeCompareRecord>,
        P::ok::<numalab_records::home::slices::HomeConflictsRecord>,
        P::ok::<numalab_records::uncore::UncoreCounts>,
        P::ok::<numalab_records::memconfig::MemConfig>,
        P::ok::<numalab_records::bmc::BmcPowerRecord>,
        P::ok::<m::Calibration>,
        P::ok::<numalab_records::warnings::FoldedWarnings>,
    ];
    kinds.iter().find_map(|f| f(p))
}
