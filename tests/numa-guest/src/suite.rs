//! Which checks a boot runs, in order: the generic suite (the guest itself, numalab's
//! view of it, placement through the library, the command line), plus the Arm checks
//! on the Arm boots.

use crate::checks::*;
use crate::cli_checks;
use crate::layout::Layout;
use crate::platform::{Boot, Suite};
use numalab_schema::cpulist;

/// Every check of a boot, in the order they run. The generic suite: the guest itself,
/// numalab's view of it, placement through the library, then the CLI table; the Arm
/// main boot adds the Arm checks ([`crate::arm_checks`]); the counting and SVE boots run
/// the kernel's own view of the layout and their own checks only.
pub fn plan(boot: &Boot) -> Vec<Check> {
    let layout = &boot.layout;
    match boot.suite {
        Suite::Generic => generic(layout),
        Suite::ArmMain => {
            let mut v = generic(layout);
            v.extend(crate::arm_checks::main(layout));
            v
        }
        Suite::ArmCounting => {
            let mut v = vec![Check::new("guest.sysfs", check_sysfs)];
            v.extend(crate::arm_checks::counting(layout));
            v
        }
        Suite::ArmSve => {
            let mut v = vec![Check::new("guest.sysfs", check_sysfs)];
            v.extend(crate::arm_checks::sve(layout));
            v
        }
        Suite::Wide { long } => crate::wide::plan(layout, long),
    }
}

/// The names of the checks that will run.
pub fn planned_names(boot: &Boot, only: Option<&str>) -> Vec<String> {
    select(plan(boot), only)
        .into_iter()
        .map(|c| c.name)
        .collect()
}

pub(crate) fn generic(layout: &Layout) -> Vec<Check> {
    let mut v = vec![
        Check::new("guest.sysfs", check_sysfs),
        Check::new("topo.machine", |ctx: &Ctx| {
            compare_machine(&ctx.layout, ctx.machine()?)
        }),
        Check::new("topo.select", check_select),
        Check::new("topo.node-free-memory", check_node_free),
    ];
    for n in &layout.nodes {
        let id = n.id;
        v.push(Check::new(format!("bind.node{id}"), move |ctx: &Ctx| {
            check_bind(ctx, id)
        }));
    }
    for n in layout.memory_only_nodes() {
        let id = n.id;
        v.push(Check::new(
            format!("preferred.node{id}"),
            move |ctx: &Ctx| check_preferred(ctx, id),
        ));
    }
    let all = layout.node_ids();
    v.push(Check::new(
        format!("interleave.{}", cpulist::format(&all)),
        move |ctx: &Ctx| check_interleave(ctx, &all),
    ));
    // Every other node, plus the last one (a memory-only node in the standard layout).
    let mut subset: Vec<u32> = layout.node_ids().into_iter().skip(1).step_by(2).collect();
    let last = layout.nodes.last().map(|n| n.id).unwrap_or(0);
    if !subset.contains(&last) {
        subset.push(last);
    }
    v.push(Check::new(
        format!("interleave.{}", cpulist::format(&subset)),
        move |ctx: &Ctx| check_interleave(ctx, &subset),
    ));
    for n in layout.cpu_nodes() {
        let id = n.id;
        v.push(Check::new(
            format!("first-touch.node{id}"),
            move |ctx: &Ctx| check_first_touch(ctx, id),
        ));
    }
    v.push(Check::new("move-pages.every-node", check_move_cycle));
    v.push(Check::new("bad-node.errors", check_bad_node));
    v.extend(
        cli_checks::table(layout)
            .into_iter()
            .map(cli_checks::CliCheck::into_check),
    );
    v
}
