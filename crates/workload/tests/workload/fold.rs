//! A thread sweep on a big machine warns once per run about its CPUs, each run with its
//! figure (issue 45 item 3): folded on the terminal into one line a code, the worst
//! three first, with the remedy.

use numalab_schema::fold::Fold;
use numalab_workload::run::cpu_warnings;

fn position(m: &str, part: &str) -> usize {
    m.find(part).unwrap_or_else(|| panic!("{part} in {m}"))
}

/// 40 runs of a sweep (1 to 160 threads): the clients' share of their CPUs falls, other
/// processes take more, the hypervisor steals more; each code is one line at the end
/// naming its worst three runs: the lowest shares, the most contention, the most steal.
#[test]
fn cpu_warnings_of_a_sweep_fold_into_one_line_a_code_worst_first() {
    let mut fold = Fold::default();
    let mut shown = Vec::new();
    for run in 0..40u32 {
        let threads = 4 * (run as usize + 1);
        // Utilization 0.89 down to 0.50; run 17 the worst at 0.21.
        let used = if run == 17 {
            0.21
        } else {
            0.89 - 0.01 * run as f64
        };
        // Steal beyond 5% from run 10 on, 6% .. 35%; run 5 the worst at 70%.
        let steal = match run {
            5 => 0.70,
            r if r >= 10 => 0.06 + 0.01 * (r - 10) as f64,
            _ => 0.01,
        };
        // Others' share: busy less the clients', 11% on every run but run 30 (80%).
        let busy = used + if run == 30 { 0.80 } else { 0.11 };
        for w in cpu_warnings(threads, used, Some(busy), Some(steal)) {
            if fold.note(&format!("workload/run/t{threads}"), &w) {
                shown.push(w.code);
            }
        }
    }
    assert_eq!(shown, ["cpu_underused", "cpu_contention", "cpu_steal"]);
    let folded = fold.folded();
    let line = |code: &str| {
        folded
            .iter()
            .find(|w| w.code == code)
            .unwrap_or_else(|| panic!("{code} in {folded:?}"))
    };
    let under = line("cpu_underused");
    assert!(
        under.message.starts_with(
            "cpu_underused: 39 more records had this warning, each its own message (40 in all"
        ),
        "{}",
        under.message
    );
    let m = &under.message;
    assert!(
        position(m, "workload/run/t72: the clients used only 21%")
            < position(m, "workload/run/t160: the clients used only 50%")
    );
    assert!(
        position(m, "t160: the clients used only 50%")
            < position(m, "t156: the clients used only 51%")
    );
    assert_eq!(
        under.remedy.as_deref(),
        Some("stop other work on these CPUs (see the busy and steal fractions), or check `numalab doctor`")
    );
    let steal = line("cpu_steal");
    // 30 runs at 6% .. 35% and run 5 at 70%: the first (run 5) was shown at once.
    assert!(
        steal.message.starts_with("cpu_steal: 30 more records"),
        "{}",
        steal.message
    );
    let m = &steal.message;
    assert!(
        position(m, "t160: the hypervisor took 35%") < position(m, "t156: the hypervisor took 34%")
    );
    assert!(
        position(m, "t156: the hypervisor took 34%") < position(m, "t152: the hypervisor took 33%")
    );
    assert!(!m.contains("took 70%"), "the first is said at once: {m}");
    let contention = line("cpu_contention");
    // 11% on every run is one message (said at once), 80% on run 30 the only other.
    assert!(
        contention
            .message
            .starts_with("cpu_contention: 1 more record had this warning"),
        "{}",
        contention.message
    );
    assert!(contention.message.ends_with("the worst: workload/run/t124: other processes used about 80% of the clients' CPUs during the window"), "{}", contention.message);
    assert_eq!(
        contention.remedy.as_deref(),
        Some("rerun on an idle machine, or compare only runs made side by side")
    );
}
