//! Figures from counts: memory traffic per controller and socket, LLC/SLC hit ratio,
//! directory and snoop traffic, socket-link bytes. Each formula and its source is in
//! [`crate::table::FORMULAS`] and the constants next to it; a figure whose inputs were
//! not counted is absent with the reason.

use crate::table::{
    Class, Topic, BYTES_PER_CAS, BYTES_PER_CMN_MC_REQUEST, BYTES_PER_DF_DRAM_REQUEST,
    BYTES_PER_DF_LINK_PACKET, BYTES_PER_UPI_DATA_FLIT, FORMULAS,
};
use crate::what::What;
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

fn scaled(r: &Result<Counted, String>, k: f64) -> Derived {
    match r {
        Ok(c) => Derived::of(c.value * k),
        Err(e) => Derived::absent(e.clone()),
    }
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

    /// A link's figures on this box from the count `r` of `bytes_per` bytes each.
    fn link(&self, label: String, r: &Result<Counted, String>, bytes_per: f64) -> LinkFigures {
        let tx = scaled(r, bytes_per);
        let seconds = r.as_ref().ok().and_then(|c| c.seconds);
        LinkFigures {
            link: label,
            device: self.device.to_string(),
            class: self.class.into(),
            cpu: self.cpu,
            socket: self.socket,
            seconds,
            running_fraction: r.as_ref().ok().and_then(|c| c.fraction),
            tx_gbps: rate(&tx, seconds),
            tx_bytes: tx,
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
                let r = b.rv("link_tx_data");
                g.used.insert("tx_bytes (intel_upi)");
                let link = b.link(b.device.to_string(), &r, BYTES_PER_UPI_DATA_FLIT);
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
    report.formulas = FORMULAS
        .iter()
        .filter(|f| used.contains(f.figure))
        .map(|f| Formula {
            figure: f.figure.into(),
            formula: f.formula.into(),
            source: f.source.into(),
        })
        .collect();
    report.controllers = controllers;
    report.sockets = sockets;
    report.links = links;
}

/// An Intel IMC or AMD UMC box: read and write bytes from its CAS counts.
fn memory_controller(b: &OneBox<'_>, g: &mut Gathered) {
    let r = b.rv("cas_read");
    let w = b.rv("cas_write");
    let read = scaled(&r, BYTES_PER_CAS);
    let write = scaled(&w, BYTES_PER_CAS);
    let total = sum2(&read, &write);
    let seconds = r
        .as_ref()
        .ok()
        .and_then(|c| c.seconds)
        .or(w.as_ref().ok().and_then(|c| c.seconds));
    let fraction = min_fraction(
        r.as_ref().ok().and_then(|c| c.fraction),
        w.as_ref().ok().and_then(|c| c.fraction),
    );
    g.used.insert(if b.class == "intel_imc" {
        "read_bytes / write_bytes (intel_imc)"
    } else {
        "read_bytes / write_bytes (amd_umc)"
    });
    g.controllers
        .push(b.controller(b.device.to_string(), read, write, total, seconds, fraction));
}

/// An AMD data fabric box's DRAM channels (Zen 2/3): total bytes per channel.
fn df_dram(b: &OneBox<'_>, g: &mut Gathered) {
    let device = b.device;
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
        let total = scaled(&r, BYTES_PER_DF_DRAM_REQUEST);
        let why = "the data fabric's DRAM channel events count requests with data, reads and writes together";
        let seconds = r.as_ref().ok().and_then(|c| c.seconds);
        let fraction = r.as_ref().ok().and_then(|c| c.fraction);
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
        g.used.insert("total_bytes (amd_df, Zen 2/3)");
    }
}

/// An AMD data fabric box's remote links (Zen 3): bytes sent per link.
fn df_links(b: &OneBox<'_>, g: &mut Gathered) {
    for k in 0..4u8 {
        let role = format!("link_out_data_{k}");
        if !b.has_role(&role) {
            continue;
        }
        let r = b.rv(&role);
        g.used.insert("tx_bytes (amd_df, Zen 3)");
        let link = b.link(
            format!("{} remote link {k}", b.device),
            &r,
            BYTES_PER_DF_LINK_PACKET,
        );
        g.links.push(link);
    }
}

/// An Arm CMN box: memory-controller requests, SLC accesses and misses, snoops sent.
fn arm_cmn(b: &OneBox<'_>, what: &What, g: &mut Gathered) {
    let device = b.device;
    if what.wants(Topic::Memory) {
        let r = b.rv("mc_reqs");
        let total = scaled(&r, BYTES_PER_CMN_MC_REQUEST);
        let why = "hnf_mc_reqs counts the home nodes' requests to the memory controllers, reads and writes together";
        let seconds = r.as_ref().ok().and_then(|c| c.seconds);
        g.used.insert("total_bytes (arm_cmn)");
        if let (Ok(req), Ok(retry)) = (&r, &b.rv("mc_retries")) {
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
            r.as_ref().ok().and_then(|c| c.fraction),
        ));
    }
    let p = g.parts.entry(b.socket).or_default();
    if what.wants(Topic::Llc) {
        p.slc_access.push(scaled(&b.rv("slc_access"), 1.0));
        p.slc_miss.push(scaled(&b.rv("llc_miss"), 1.0));
        g.used.insert("llc_hit_ratio (arm_cmn)");
    }
    if what.wants(Topic::Directory) {
        p.snoops.push(sum2(
            &scaled(&b.rv("dir_snoops_sent"), 1.0),
            &scaled(&b.rv("brd_snoops_sent"), 1.0),
        ));
        g.used.insert("snoops_sent (arm_cmn)");
    }
}

/// An Intel CHA box: LLC hits and misses, directory lookups with and without snoops.
fn intel_cha(b: &OneBox<'_>, what: &What, g: &mut Gathered) {
    let p = g.parts.entry(b.socket).or_default();
    if what.wants(Topic::Llc) {
        p.llc_hit.push(scaled(&b.rv("llc_hit"), 1.0));
        p.llc_miss.push(scaled(&b.rv("llc_miss"), 1.0));
        g.used.insert("llc_hit_ratio (intel_cha)");
    }
    if what.wants(Topic::Directory) {
        p.dir_snp.push(scaled(&b.rv("dir_snoop"), 1.0));
        p.dir_nosnp.push(scaled(&b.rv("dir_no_snoop"), 1.0));
        g.used.insert("directory_snoop_share (intel_cha)");
    }
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
