//! The small parsers of command-line values and files: CPU lists, byte sizes, CPU
//! selections, SMT control words, numa_maps lines, metric expressions (all three grammars),
//! perf's ScaleUnit, perf event terms,
//! a layout's stop list.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cpus) = numalab_schema::cpulist::parse(text) {
        // A list that parses prints and parses back to itself.
        let again = numalab_schema::cpulist::parse(&numalab_schema::cpulist::format(&cpus));
        assert_eq!(again.ok().as_ref(), Some(&cpus));
    }
    let _ = numalab_schema::units::parse_bytes(text);
    let _ = numalab_topo::select::CpuSelection::parse(text);
    let _ = numalab_pmu::expr::parse(text);
    let _ = numalab_pmu::expr::parse_extended(text);
    if let Ok(e) = numalab_pmu::expr::parse_perf(text) {
        let _ = e.eval(&|_| numalab_pmu::expr::Input::Value(1.0));
    }
    let _ = numalab_pmu::catalog::perf::scale_unit(text);
    let _ = numalab_pmu::advertised::parse_event_term(text);
    let _ = numalab_layout::grid::parse_stops(text, 8, 8);
    let _ = numalab_schema::text::os_bytes(text);
    let _ = numalab_schema::text::excerpt(text, 40);
});
