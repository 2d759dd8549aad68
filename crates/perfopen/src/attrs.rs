//! An event's encoding on a target into a `perf_event::Builder`: the PMU type and
//! config words, whose tasks and CPUs it watches, the privilege levels it excludes, and
//! when it starts.

use perf_event::events::Software;
use perf_event::Builder;

/// perf_event_attr.type PERF_TYPE_HARDWARE (include/uapi/linux/perf_event.h).
pub const TYPE_HARDWARE: u32 = 0;
/// perf_event_attr.type PERF_TYPE_SOFTWARE.
pub const TYPE_SOFTWARE: u32 = 1;
/// perf_event_attr.type PERF_TYPE_HW_CACHE.
pub const TYPE_HW_CACHE: u32 = 3;
/// perf_event_attr.type PERF_TYPE_RAW: the kernel hands the event to the first CPU PMU
/// that accepts it.
pub const TYPE_RAW: u32 = 4;

/// What an event is to the kernel: its PMU's type (a fixed PERF_TYPE_* or a dynamic
/// PMU's `type` from sysfs) and its config words (`config`, `config1`, `config2`,
/// `config3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoding {
    /// perf_event_attr.type.
    pub pmu_type: u32,
    /// perf_event_attr.config, config1, config2, config3.
    pub config: [u64; 4],
}

impl Encoding {
    /// An event of `pmu_type` with `config` and the other config words 0.
    pub const fn new(pmu_type: u32, config: u64) -> Self {
        Encoding {
            pmu_type,
            config: [config, 0, 0, 0],
        }
    }

    /// The same event with `config1` set.
    pub const fn with_config1(mut self, config1: u64) -> Self {
        self.config[1] = config1;
        self
    }

    /// The encoding of one of `perf-event2`'s named events (`Hardware::CPU_CYCLES`, a
    /// `Cache` triple, `Software::TASK_CLOCK`...), as that crate would set it.
    pub fn of(event: impl perf_event::events::Event) -> Self {
        let b = Builder::new(event);
        let a = b.attrs();
        Encoding {
            pmu_type: a.type_,
            config: [a.config, a.config1, a.config2, a.config3],
        }
    }
}

/// Whose work is counted, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A task on any CPU, with the threads and children it creates from then on
    /// (`inherit`).
    Task(i32),
    /// A task on one CPU, with the threads and children it creates from then on (the
    /// kernel refuses inherited per-task ring buffers on any CPU: samplers are per CPU).
    TaskOnCpu {
        /// The task.
        pid: i32,
        /// The CPU.
        cpu: usize,
    },
    /// One thread on any CPU, not the threads it creates.
    Thread(i32),
    /// Every process on one CPU (pid = -1: system-wide counting, uncore PMUs).
    Cpu(usize),
    /// The calling thread on any CPU (pid = 0).
    CallingThread,
}

/// The privilege levels an event leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exclude {
    /// exclude_kernel.
    pub kernel: bool,
    /// exclude_hv.
    pub hv: bool,
}

impl Exclude {
    /// Nothing excluded (uncore PMUs refuse exclusion bits; AMD IBS too).
    pub const NOTHING: Exclude = Exclude {
        kernel: false,
        hv: false,
    };
    /// User space only: the kernel and the hypervisor excluded (`perf-event2`'s default).
    pub const KERNEL_AND_HV: Exclude = Exclude {
        kernel: true,
        hv: true,
    };

    /// The hypervisor excluded, the kernel too unless `include_kernel`.
    pub const fn kernel_unless(include_kernel: bool) -> Exclude {
        Exclude {
            kernel: !include_kernel,
            hv: true,
        }
    }
}

/// When an opened event (or group) starts counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Disabled, leader and members alike, until enabled (`Group::enable`, or a
    /// counter's `enable`).
    Disabled,
    /// The leader disabled until the target task's exec (`enable_on_exec`: a gated
    /// child), the members enabled so that they count whenever the leader does.
    AtExec,
    /// At once, leader and members.
    Now,
}

/// A builder for `encoding` on `target` excluding `exclude`: the type and the four
/// config words, the pid and CPU, `inherit` for the task targets, exclude_kernel and
/// exclude_hv; everything else as `perf-event2` defaults it (disabled, the read format
/// TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING). Group members get the group's read format
/// from [`crate::group::prepare_member`]; samplers add their own options.
pub fn builder(encoding: &Encoding, target: Target, exclude: Exclude) -> Builder<'static> {
    let mut b = Builder::new(Software::DUMMY);
    {
        let a = b.attrs_mut();
        a.type_ = encoding.pmu_type;
        a.config = encoding.config[0];
        a.config1 = encoding.config[1];
        a.config2 = encoding.config[2];
        a.config3 = encoding.config[3];
    }
    match target {
        Target::Task(pid) => b.observe_pid(pid).any_cpu().inherit(true),
        Target::TaskOnCpu { pid, cpu } => b.observe_pid(pid).one_cpu(cpu).inherit(true),
        Target::Thread(tid) => b.observe_pid(tid).any_cpu().inherit(false),
        Target::Cpu(cpu) => b.any_pid().one_cpu(cpu),
        Target::CallingThread => b.observe_self().any_cpu(),
    };
    b.exclude_kernel(exclude.kernel).exclude_hv(exclude.hv);
    b
}

/// Sets when the event starts: `leader` is whether it leads its group (a lone event,
/// a sampler, leads itself).
pub fn set_start(b: &mut Builder<'_>, start: Start, leader: bool) {
    match (start, leader) {
        (Start::Disabled, _) => b.enabled(false),
        (Start::AtExec, true) => b.enabled(false).enable_on_exec(true),
        (Start::AtExec, false) | (Start::Now, _) => b.enabled(true),
    };
}
