//! The remarks gathered per kind while reading the devices, one sentence per kind.

use super::Issues;
use numalab_records::memconfig::MemConfig;

/// Pushes one assumption or note per kind of remark, in a fixed order.
pub(super) fn push(cfg: &mut MemConfig, issues: &Issues) {
    if let Some((l, _, _)) = issues.get("assumed_channel") {
        cfg.assumptions.push(format!(
            "the locators of {l} do not name a memory channel: one DIMM per channel assumed (if two of them share a channel, the peak is overstated)"
        ));
    }
    if let Some((l, v, _)) = issues.get("rated_speed") {
        cfg.assumptions.push(format!(
            "{l} {v} no configured speed: the rated speed is used (the memory controller may run slower)"
        ));
    }
    if let Some((l, v, _)) = issues.get("clock_mhz") {
        cfg.assumptions.push(format!(
            "{l} {v} a configured speed of half the rated one, below the generation's slowest data rate: taken as a clock in MHz (SMBIOS before 3.1 named the field a clock speed), so the rated MT/s is used"
        ));
    }
    if let Some((l, v, _)) = issues.get("width_assumed") {
        cfg.assumptions.push(format!(
            "{l} {v} no data width: 64 bits assumed (a JEDEC DDR module)"
        ));
    }
    if let Some((l, v, _)) = issues.get("width_ecc") {
        cfg.notes.push(format!(
            "{l} {v} a data width equal to the total width: the ECC bits were counted; 64 data bits used"
        ));
    }
    if let Some((l, v, _)) = issues.get("ddr5_32") {
        cfg.notes.push(format!(
            "{l} (DDR5) {v} 32 data bits, one subchannel rather than the module's two: the peak is as reported and may be half the module's"
        ));
    }
    if let Some((l, _, be)) = issues.get("hbm") {
        cfg.notes.push(format!(
            "{l} {be} HBM: the peak is speed x the data width SMBIOS reports, which may not describe the stack's interface (1024 bits per stack)"
        ));
    }
    if let Some((l, _, be)) = issues.get("nonvolatile") {
        cfg.notes.push(format!(
            "{l} {be} persistent memory: counted on their channel like DRAM"
        ));
    }
    if let Some((l, v, _)) = issues.get("ecc_only") {
        cfg.notes.push(format!(
            "{l} {v} data width 0 (error-correction bits only): not counted"
        ));
    }
    if let Some((l, v, _)) = issues.get("size_unknown") {
        cfg.notes
            .push(format!("{l} {v} an unknown size: taken as installed"));
    }
}
