//! Figures from counts: memory traffic per controller and socket, LLC/SLC hit ratio,
//! directory and snoop traffic, socket-link bytes. Each per-box figure is an expression
//! of the data file (`data/formulas.toml`, [`crate::formulas`]) evaluated by the
//! expression engine; a figure whose inputs were not counted is absent with the reason.
//! Sums over a socket's boxes, the ratios of those sums, rates and running fractions
//! are computed here.

use crate::formulas::{evaluate, formula, formulas, numbered};
use crate::table::{Class, Topic};
use crate::what::What;
use numalab_expr::Expr;
use numalab_records::uncore::{
    BoxCounts, ControllerFigures, Derived, Formula, LinkFigures, SocketFigures, UncoreReport,
};
use std::collections::{BTreeMap, BTreeSet};

/// A counted value with the interval and the running fraction of its group.
#[derive(Debug, Clone, Copy)]
struct Counted {
    value: f64,
    seconds: Option<f64>,
    fraction: Option<f64>,
}

type Missing = BTreeMap<(String, String), String>;

/// The value of `role` on one box (device, cpu), or why there is none.
fn role_value(
    boxes: &[&BoxCounts],
    role: &str,
    device: &str,
    missing: &Missing,
) -> Result<Counted, String> {
    for b in boxes {
        if let Some(e) = b.events.iter().find(|e| e.role == role) {
            return match (e.state.as_str(), e.value) {
                ("counted", Some(v)) => Ok(Counted {
                    value: v,
                    seconds: b.time_enabled_ns.map(|ns| ns as f64 / 1e9),
                    fraction: b.running_fraction,
                }),
                (state, _) => Err(format!(
                    "{} on {device} (CPU {}) {}: {}",
                    e.name,
                    b.cpu,
                    state.replace('_', " "),
                    e.reason.clone().unwrap_or_default()
                )),
            };
        }
    }
    Err(missing
        .get(&(device.to_string(), role.to_string()))
        .cloned()
        .unwrap_or_else(|| format!("{device} has no {role} event in numalab's table")))
}

/// A per-box figure from the data file's expression: its value (or why there is none),
/// the interval of the first of its roles counted and the smallest running fraction of
/// them.
struct BoxFigure {
    value: Derived,
    seconds: Option<f64>,
    fraction: Option<f64>,
}

fn rate(bytes: &Derived, seconds: Option<f64>) -> Derived {
    match (bytes.value, seconds) {
        (Some(b), Some(s)) if s > 0.0 => Derived::of(b / s / 1e9),
        (Some(_), _) => Derived::absent("the interval is unknown or 0"),
        (None, _) => Derived::absent(bytes.reason.clone().unwrap_or_default()),
    }
}

fn sum2(a: &Derived, b: &Derived) -> Derived {
    match (a.value, b.value) {
        (Some(x), Some(y)) => Derived::of(x + y),
        _ => Derived::absent(
            a.reason
                .clone()
                .or_else(|| b.reason.clone())
                .unwrap_or_default(),
        ),
    }
}

/// Sums figures; absent if any part is absent (naming it), or if there are none.
fn sum_all<'a>(parts: impl IntoIterator<Item = &'a Derived>, none: &str) -> Derived {
    let mut total = 0.0;
    let mut n = 0;
    for p in parts {
        match p.value {
            Some(v) => total += v,
            None => return Derived::absent(p.reason.clone().unwrap_or_default()),
        }
        n += 1;
    }
    if n == 0 {
        Derived::absent(none)
    } else {
        Derived::of(total)
    }
}

fn min_fraction(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn not_asked(what: &str) -> Derived {
    Derived::absent(format!("{what} not asked for"))
}

/// Boxes: (device, cpu) -> (class, socket, groups); boxes that got no event have no
/// groups, and their figures are absent with the reasons in `missing`.
type Boxes<'a> = BTreeMap<(String, u32), (String, Option<u32>, Vec<&'a BoxCounts>)>;

/// Per socket: the LLC and directory parts gathered from its boxes, and notes.
#[derive(Default)]
struct Parts {
    llc_hit: Vec<Derived>,
    llc_miss: Vec<Derived>,
    slc_access: Vec<Derived>,
    slc_miss: Vec<Derived>,
    dir_snp: Vec<Derived>,
    dir_nosnp: Vec<Derived>,
    snoops: Vec<Derived>,
    numa_local: Vec<Derived>,
    numa_remote: Vec<Derived>,
    numa_all: Vec<Derived>,
    cas_read: Vec<Derived>,
    cas_write: Vec<Derived>,
    cas_all: Vec<Derived>,
    notes: Vec<String>,
}

/// What the boxes yield: controllers, links, per-socket parts, the formulas used.
#[derive(Default)]
struct Gathered {
    controllers: Vec<ControllerFigures>,
    links: Vec<LinkFigures>,
    parts: BTreeMap<Option<u32>, Parts>,
    used: BTreeSet<&'static str>,
}

/// One box (device, cpu) being read: where it is and its counted groups.
struct OneBox<'a> {
    device: &'a str,
    cpu: u32,
    class: &'a str,
    socket: Option<u32>,
    groups: &'a [&'a BoxCounts],
    missing: &'a Missing,
}

impl OneBox<'_> {
    /// The value of `role` on this box, or why there is none.
    fn rv(&self, role: &str) -> Result<Counted, String> {
        role_value(self.groups, role, self.device, self.missing)
    }

    /// Evaluates `expr` over this box's roles through the expression engine.
    fn eval(&self, expr: &Expr) -> BoxFigure {
        let value = evaluate(expr, &|role| self.rv(role).map(|c| c.value));
        let (mut seconds, mut fraction) = (None, None);
        for role in expr.ordered_variables() {
            if let Ok(c) = self.rv(&role) {
                seconds = seconds.or(c.seconds);
                fraction = min_fraction(fraction, c.fraction);
            }
        }
        BoxFigure {
            value,
            seconds,
            fraction,
        }
    }

    /// The per-box figure `name` of the formula cited as `figure`.
    fn figure(&self, figure: &str, name: &str) -> BoxFigure {
        self.eval(formula(figure).per_box(name))
    }

    /// Whether one of the box's groups carries an event for `role`.
    fn has_role(&self, role: &str) -> bool {
        self.groups
            .iter()
            .any(|g| g.events.iter().any(|e| e.role == role))
    }

    /// A controller's figures on this box.
    fn controller(
        &self,
        label: String,
        read: Derived,
        write: Derived,
        total: Derived,
        seconds: Option<f64>,
        fraction: Option<f64>,
    ) -> ControllerFigures {
        ControllerFigures {
            controller: label,
            device: self.device.to_string(),
            class: self.class.to_string(),
            cpu: self.cpu,
            socket: self.socket,
            seconds,
            running_fraction: fraction,
            read_gbps: rate(&read, seconds),
            write_gbps: rate(&write, seconds),
            total_gbps: rate(&total, seconds),
            read_bytes: read,
            write_bytes: write,
            total_bytes: total,
        }
    }

    /// A link's figures on this box from its bytes sent.
    fn link(&self, label: String, tx: BoxFigure) -> LinkFigures {
        LinkFigures {
            link: label,
            device: self.device.to_string(),
            class: self.class.into(),
            cpu: self.cpu,
            socket: self.socket,
            seconds: tx.seconds,
            running_fraction: tx.fraction,
            tx_gbps: rate(&tx.value, tx.seconds),
            tx_bytes: tx.value,
        }
    }
}

/// Fills controllers, sockets, links and formulas of `report` from its boxes.
pub fn figures(
    report: &mut UncoreReport,
    what: &What,
    missing: &Missing,
    skipped: &[(String, Class, u32, Option<u32>)],
) {
    let mut boxes: Boxes = BTreeMap::new();
    for b in &report.boxes {
        boxes
            .entry((b.device.clone(), b.cpu))
            .or_insert_with(|| (b.class.clone(), b.socket, Vec::new()))
            .2
            .push(b);
    }
    for (device, class, cpu, socket) in skipped {
        boxes
            .entry((device.clone(), *cpu))
            .or_insert_with(|| (class.key().to_string(), *socket, Vec::new()));
    }
    let mut g = Gathered::default();
    for ((device, cpu), (class, socket, groups)) in &boxes {
        let b = OneBox {
            device,
            cpu: *cpu,
            class: class.as_str(),
            socket: *socket,
            groups,
            missing,
        };
        g.parts.entry(b.socket).or_default();
        match b.class {
            "intel_imc" | "amd_umc" if what.wants(Topic::Memory) => memory_controller(&b, &mut g),
            "amd_df" => {
                if what.wants(Topic::Memory) {
                    df_dram(&b, &mut g);
                }
                if what.wants(Topic::Links) {
                    df_links(&b, &mut g);
                }
            }
            "arm_cmn" => arm_cmn(&b, what, &mut g),
            "intel_cha" => intel_cha(&b, what, &mut g),
            "intel_upi" if what.wants(Topic::Links) => {
                let figure = "tx_bytes (intel_upi)";
                g.used.insert(figure);
                let link = b.link(b.device.to_string(), b.figure(figure, "tx_bytes"));
                g.links.push(link);
            }
            _ => {}
        }
    }
    let Gathered {
        controllers,
        links,
        parts,
        mut used,
    } = g;
    if !controllers.is_empty() || !links.is_empty() {
        used.insert("read_gbps / write_gbps / total_gbps");
    }
    let mut sockets = Vec::new();
    for (socket, p) in parts {
        let s = socket_figures(socket, &p, what, &controllers, &links);
        report.notes.extend(p.notes);
        sockets.push(s);
    }
    report.formulas = formulas()
        .formulas
        .iter()
        .filter(|f| used.contains(f.figure.as_str()))
        .map(|f| Formula {
            figure: f.figure.clone(),
            formula: f.formula.clone(),
            source: f.source.clone(),
        })
        .collect();
    report.controllers = controllers;
    report.sockets = sockets;
    report.links = links;
}

/// An Intel IMC or AMD UMC box: read and write bytes from its CAS counts.
fn memory_controller(b: &OneBox<'_>, g: &mut Gathered) {
    let figure = if b.class == "intel_imc" {
        "read_bytes / write_bytes (intel_imc)"
    } else {
        "read_bytes / write_bytes (amd_umc)"
    };
    let read = b.figure(figure, "read_bytes").value;
    let write = b.figure(figure, "write_bytes").value;
    // The interval and running fraction of both CAS counts.
    let BoxFigure {
        value: total,
        seconds,
        fraction,
    } = b.figure(figure, "total_bytes");
    g.used.insert(figure);
    if b.class == "intel_imc" {
        let p = g.parts.entry(b.socket).or_default();
        p.cas_read.push(read.clone());
        p.cas_write.push(write.clone());
        p.cas_all.push(b.figure(CAS_ALL_FIGURE, "all_bytes").value);
        g.used.insert(CAS_ALL_FIGURE);
    }
    g.controllers
        .push(b.controller(b.device.to_string(), read, write, total, seconds, fraction));
}

/// The formula of the read and write shares of all CAS commands (data/formulas.toml).
const CAS_ALL_FIGURE: &str = "read_percent_of_all_cas / write_percent_of_all_cas (intel_imc)";

/// A socket's CAS commands counted by their own event (bytes), and its CAS reads and
/// writes as shares of them, in percent: each share computed on its own over the
/// independently counted total, never derived from the other, so the consistency rule
/// over the two sees a read + write that is not the total.
fn cas_shares(p: &Parts, what: &What) -> (Derived, Derived, Derived) {
    if !what.wants(Topic::Memory) {
        let why = "memory bandwidth";
        return (not_asked(why), not_asked(why), not_asked(why));
    }
    let none = "this socket's memory controllers count no CAS total of their own (Intel iMC only)";
    let all = sum_all(&p.cas_all, none);
    let share = |part: &[Derived]| -> Derived {
        let part = sum_all(part, none);
        match (part.value, all.value) {
            (Some(x), Some(t)) if t > 0.0 => Derived::of(100.0 * x / t),
            (Some(_), Some(_)) => {
                Derived::absent("no CAS commands were counted (ALL is 0): not counted here")
            }
            _ => Derived::absent(
                all.reason
                    .clone()
                    .or(part.reason.clone())
                    .unwrap_or_default(),
            ),
        }
    };
    let (read, write) = (share(&p.cas_read), share(&p.cas_write));
    (all, read, write)
}

/// An AMD data fabric box's DRAM channels (Zen 2/3): total bytes per channel.
fn df_dram(b: &OneBox<'_>, g: &mut Gathered) {
    let device = b.device;
    let figure = "total_bytes (amd_df, Zen 2/3)";
    let per_channel = formula(figure).per_box("total_bytes");
    let mut any = false;
    for k in 0..8u8 {
        let role = format!("dram_data_{k}");
        let r = b.rv(&role);
        if r.is_err() && !b.has_role(&role) {
            if k == 0 && !b.groups.is_empty() {
                if let Err(why) = &r {
                    g.parts.entry(b.socket).or_default().notes.push(format!(
                        "{device}: no DRAM channel counts from the data fabric: {why}"
                    ));
                }
            }
            continue;
        }
        any = true;
        let BoxFigure {
            value: total,
            seconds,
            fraction,
        } = b.eval(&numbered(per_channel, k));
        let why = "the data fabric's DRAM channel events count requests with data, reads and writes together";
        g.controllers.push(b.controller(
            format!("{device} dram channel {k}"),
            Derived::absent(why),
            Derived::absent(why),
            total,
            seconds,
            fraction,
        ));
    }
    if any {
        g.used.insert(figure);
    }
}

/// An AMD data fabric box's remote links (Zen 3): bytes sent per link.
fn df_links(b: &OneBox<'_>, g: &mut Gathered) {
    let figure = "tx_bytes (amd_df, Zen 3)";
    let per_link = formula(figure).per_box("tx_bytes");
    for k in 0..4u8 {
        let role = format!("link_out_data_{k}");
        if !b.has_role(&role) {
            continue;
        }
        g.used.insert(figure);
        let tx = b.eval(&numbered(per_link, k));
        let link = b.link(format!("{} remote link {k}", b.device), tx);
        g.links.push(link);
    }
}

/// An Arm CMN box: memory-controller requests, SLC accesses and misses, snoops sent.
fn arm_cmn(b: &OneBox<'_>, what: &What, g: &mut Gathered) {
    let device = b.device;
    if what.wants(Topic::Memory) {
        let figure = "total_bytes (arm_cmn)";
        let BoxFigure {
            value: total,
            seconds,
            fraction,
        } = b.figure(figure, "total_bytes");
        let why = "hnf_mc_reqs counts the home nodes' requests to the memory controllers, reads and writes together";
        g.used.insert(figure);
        // How many requests were retried: a note, not a figure.
        if let (Ok(req), Ok(retry)) = (&b.rv("mc_reqs"), &b.rv("mc_retries")) {
            if req.value > 0.0 {
                g.parts.entry(b.socket).or_default().notes.push(format!(
                    "{device}: the memory controllers retried {:.0} of {:.0} requests ({:.1}%)",
                    retry.value,
                    req.value,
                    100.0 * retry.value / req.value
                ));
            }
        }
        g.controllers.push(b.controller(
            format!("{device} (all HN-F)"),
            Derived::absent(why),
            Derived::absent(why),
            total,
            seconds,
            fraction,
        ));
    }
    let p = g.parts.entry(b.socket).or_default();
    if what.wants(Topic::Llc) {
        let figure = "llc_hit_ratio (arm_cmn)";
        p.slc_access.push(b.figure(figure, "slc_access").value);
        p.slc_miss.push(b.figure(figure, "slc_miss").value);
        g.used.insert(figure);
    }
    if what.wants(Topic::Directory) {
        let figure = "snoops_sent (arm_cmn)";
        p.snoops.push(b.figure(figure, "snoops_sent").value);
        g.used.insert(figure);
    }
}

/// An Intel CHA box: LLC hits and misses, directory lookups with and without snoops.
fn intel_cha(b: &OneBox<'_>, what: &What, g: &mut Gathered) {
    let p = g.parts.entry(b.socket).or_default();
    if what.wants(Topic::Llc) {
        let figure = "llc_hit_ratio (intel_cha)";
        p.llc_hit.push(b.figure(figure, "llc_hit").value);
        p.llc_miss.push(b.figure(figure, "llc_miss").value);
        g.used.insert(figure);
        let figure = NUMA_FIGURE;
        p.numa_local.push(b.figure(figure, "local_reads").value);
        p.numa_remote.push(b.figure(figure, "remote_reads").value);
        p.numa_all.push(b.figure(figure, "all_reads").value);
        g.used.insert(figure);
    }
    if what.wants(Topic::Directory) {
        let figure = "directory_snoop_share (intel_cha)";
        p.dir_snp.push(b.figure(figure, "dir_snoop").value);
        p.dir_nosnp.push(b.figure(figure, "dir_no_snoop").value);
        g.used.insert(figure);
    }
}

/// The formula of Intel's NUMA read shares (data/formulas.toml).
const NUMA_FIGURE: &str =
    "numa_reads_addressed_to_local_dram / numa_reads_addressed_to_remote_dram (intel_cha)";

/// A socket's shares of LLC read misses addressed to local and to remote DRAM, in
/// percent: each Intel's formula, its part over all four counts (`all_reads`), summed
/// over the socket's CHAs. Each share is computed on its own, never one as 100 minus
/// the other, so the consistency rule over the two can see a formula that does not
/// split the same reads.
fn numa_shares(p: &Parts, what: &What) -> (Derived, Derived) {
    if !what.wants(Topic::Llc) {
        let why = "LLC hit ratio";
        return (not_asked(why), not_asked(why));
    }
    let none = "this socket's PMUs have no LLC read-miss events by home (Intel CHA, Ice Lake-SP and later)";
    let all = sum_all(&p.numa_all, none);
    let share = |part: &[Derived]| -> Derived {
        let part = sum_all(part, none);
        match (part.value, all.value) {
            (Some(x), Some(t)) if t > 0.0 => Derived::of(100.0 * x / t),
            (Some(_), Some(_)) => {
                Derived::absent("no LLC read misses to DRAM were counted: not counted here")
            }
            _ => Derived::absent(
                part.reason
                    .clone()
                    .or(all.reason.clone())
                    .unwrap_or_default(),
            ),
        }
    };
    (share(&p.numa_local), share(&p.numa_remote))
}

/// One socket's figures: memory traffic summed over its controllers, LLC hit ratio,
/// directory and snoop traffic, socket-link bytes.
fn socket_figures(
    socket: Option<u32>,
    p: &Parts,
    what: &What,
    controllers: &[ControllerFigures],
    links: &[LinkFigures],
) -> SocketFigures {
    let mine: Vec<&ControllerFigures> = controllers.iter().filter(|c| c.socket == socket).collect();
    let none = "no memory-controller counters on this socket";
    let mem = |f: fn(&ControllerFigures) -> &Derived| -> Derived {
        if !what.wants(Topic::Memory) {
            return not_asked("memory bandwidth");
        }
        sum_all(mine.iter().map(|c| f(c)), none)
    };
    let read_bytes = mem(|c| &c.read_bytes);
    let write_bytes = mem(|c| &c.write_bytes);
    let total_bytes = mem(|c| &c.total_bytes);
    let seconds = mine
        .iter()
        .filter_map(|c| c.seconds)
        .fold(None, |a: Option<f64>, s| Some(a.map_or(s, |a| a.max(s))));
    let (llc_lookups, llc_misses, llc_hit_ratio) = llc(p, what);
    let (directory_lookups, directory_snoop_share) = directory(p, what);
    let (numa_reads_addressed_to_local_dram, numa_reads_addressed_to_remote_dram) =
        numa_shares(p, what);
    let (all_cas_bytes, read_percent_of_all_cas, write_percent_of_all_cas) = cas_shares(p, what);
    let snoops_sent = if !what.wants(Topic::Directory) {
        not_asked("directory traffic")
    } else {
        sum_all(
            &p.snoops,
            "this socket's PMUs count no snoops sent by home nodes (Arm CMN only)",
        )
    };
    let link_tx_bytes = if !what.wants(Topic::Links) {
        not_asked("socket links")
    } else {
        sum_all(
            links
                .iter()
                .filter(|l| l.socket == socket)
                .map(|l| &l.tx_bytes),
            "no socket-link counters on this socket",
        )
    };
    SocketFigures {
        socket,
        controllers: mine.len(),
        read_gbps: rate(&read_bytes, seconds),
        write_gbps: rate(&write_bytes, seconds),
        total_gbps: rate(&total_bytes, seconds),
        read_bytes,
        write_bytes,
        total_bytes,
        llc_lookups,
        llc_misses,
        llc_hit_ratio,
        directory_lookups,
        directory_snoop_share,
        snoops_sent,
        link_tx_bytes,
        numa_reads_addressed_to_local_dram,
        numa_reads_addressed_to_remote_dram,
        all_cas_bytes,
        read_percent_of_all_cas,
        write_percent_of_all_cas,
    }
}

/// A socket's LLC lookups, misses and hit ratio (Intel CHA, else Arm CMN SLC).
fn llc(p: &Parts, what: &What) -> (Derived, Derived, Derived) {
    let (llc_lookups, llc_misses) = if !what.wants(Topic::Llc) {
        (not_asked("LLC hit ratio"), not_asked("LLC hit ratio"))
    } else if !p.llc_hit.is_empty() {
        let hit = sum_all(&p.llc_hit, "");
        let miss = sum_all(&p.llc_miss, "");
        (sum2(&hit, &miss), miss)
    } else if !p.slc_access.is_empty() {
        (sum_all(&p.slc_access, ""), sum_all(&p.slc_miss, ""))
    } else {
        let none = "no LLC counters (uncore_cha, arm_cmn) on this socket";
        (Derived::absent(none), Derived::absent(none))
    };
    let llc_hit_ratio = match (llc_lookups.value, llc_misses.value) {
        (Some(l), Some(m)) if l > 0.0 => Derived::of((l - m) / l),
        (Some(_), Some(_)) => Derived::absent("no LLC lookups were counted: not counted here"),
        _ => Derived::absent(
            llc_lookups
                .reason
                .clone()
                .or(llc_misses.reason.clone())
                .unwrap_or_default(),
        ),
    };
    (llc_lookups, llc_misses, llc_hit_ratio)
}

/// A socket's directory lookups and the share of them that snooped (Intel CHA only).
fn directory(p: &Parts, what: &What) -> (Derived, Derived) {
    if !what.wants(Topic::Directory) {
        (
            not_asked("directory traffic"),
            not_asked("directory traffic"),
        )
    } else if !p.dir_snp.is_empty() {
        let snp = sum_all(&p.dir_snp, "");
        let lookups = sum2(&snp, &sum_all(&p.dir_nosnp, ""));
        let share = match (snp.value, lookups.value) {
            (Some(s), Some(l)) if l > 0.0 => Derived::of(s / l),
            (Some(_), Some(_)) => Derived::absent(
                "no directory lookups were counted (one socket, or the directory is disabled)",
            ),
            _ => Derived::absent(lookups.reason.clone().unwrap_or_default()),
        };
        (lookups, share)
    } else {
        let none = "this socket's PMUs have no directory-lookup events (Intel CHA only)";
        (Derived::absent(none), Derived::absent(none))
    }
}

/// Bytes one count of a sysfs event is worth by its `.scale` and `.unit`, when the
/// unit is a byte unit (B, KiB, MiB, GiB, KB, MB, GB).
pub fn bytes_per_count(scale: Option<f64>, unit: Option<&str>) -> Option<f64> {
    let k = match unit? {
        "B" | "Bytes" | "bytes" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => return None,
    };
    Some(scale.unwrap_or(1.0) * k)
}
