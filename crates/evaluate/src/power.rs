//! Node power from the BMC during every step that runs (`numalab evaluate --bmc`): a
//! [`StepMonitor`] over `numalab_bmc`'s watcher, each step's `power.bmc` record under
//! `power/bmc/step/<id>` pushed before the step's closing record.

use crate::{EvalError, Observer, Options, Outcome, Resume, Step, StepMonitor};
use numalab_bmc::watch::{BmcPower, Watch};
use numalab_schema::sink::Sink;
use numalab_schema::{Machine, Warning};
use numalab_topo::bind::Placer;

/// The code of the warnings of [`BmcSteps`]: one a step whose power could not be sampled
/// or recorded (a BMC that stops answering gives one per step: they fold into one line).
pub const BMC_POWER: &str = "bmc_power";

/// Samples the BMC while each step runs. What could not be sampled or recorded is kept
/// in [`BmcSteps::warnings`] (a step is never failed by its power figure).
pub struct BmcSteps {
    power: BmcPower,
    watch: Option<Watch>,
    /// Warnings ([`BMC_POWER`]), each with the key of the step's power record
    /// (`power/bmc/step/<id>`), in the order they happened.
    pub warnings: Vec<(String, Warning)>,
}

impl BmcSteps {
    /// Watches the steps with `power` (opened and checked by [`BmcPower::open`]).
    pub fn new(power: BmcPower) -> BmcSteps {
        BmcSteps {
            power,
            watch: None,
            warnings: Vec::new(),
        }
    }
}

impl BmcSteps {
    fn warn(&mut self, step: &Step, message: String) {
        let w = Warning::new(BMC_POWER, message)
            .with_remedy("check that the BMC answers, or leave out --bmc");
        let key = format!("{}/step/{}", numalab_bmc::watch::KEY_PREFIX, step.id);
        self.warnings.push((key, w));
    }
}

impl StepMonitor for BmcSteps {
    fn step_started(&mut self, step: &Step) {
        let during = format!("evaluate step {}", step.id);
        match self.power.start(&during) {
            Ok(w) => self.watch = Some(w),
            Err(e) => self.warn(step, format!("BMC power not sampled during {during}: {e}")),
        }
    }

    fn step_ended(&mut self, step: &Step, sink: &mut dyn Sink) {
        if let Some(w) = self.watch.take() {
            if let Err(e) = w.finish(&format!("step/{}", step.id), sink) {
                self.warn(step, format!("BMC power of step {}: {e}", step.id));
            }
        }
    }
}

/// The evaluation with BMC power per step when `power` is given ([`BmcSteps`] around
/// [`crate::run_monitored`]), else [`crate::run`]; the BMC's warnings come back beside
/// the outcome (with the keys of the steps' power records), to be shown, folded by code
/// like the records' warnings, whether or not the run succeeded.
#[allow(clippy::too_many_arguments)]
pub fn run_with_power(
    power: Option<BmcPower>,
    opts: &Options,
    resume: &Resume,
    machine: &Machine,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
    observer: &mut dyn Observer,
) -> (Result<Outcome, EvalError>, Vec<(String, Warning)>) {
    match power {
        Some(power) => {
            let mut steps = BmcSteps::new(power);
            let out =
                crate::run_monitored(opts, resume, machine, placer, sink, observer, &mut steps);
            (out, steps.warnings)
        }
        None => (
            crate::run(opts, resume, machine, placer, sink, observer),
            Vec::new(),
        ),
    }
}
