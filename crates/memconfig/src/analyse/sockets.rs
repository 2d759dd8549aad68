//! Which socket each counted device sits on: from the locators' labels, else one
//! physical memory array per socket, else the single processor.

use super::Table;
use numalab_records::memconfig::MemConfig;
use std::collections::{BTreeMap, BTreeSet};

/// The devices' sockets and how they were found.
pub(super) struct Sockets {
    /// Per device: its socket, numbered from 0.
    pub(super) of: Vec<Option<u32>>,
    /// How the sockets were found (`locators`, `memory_arrays`, `single_processor`).
    pub(super) method: Option<&'static str>,
    /// Why the locators did not give the sockets (empty when they did, or when no
    /// attempt said why).
    pub(super) why: String,
}

/// Attributes the counted devices to sockets, with the notes and assumptions that say how.
pub(super) fn attribute(cfg: &mut MemConfig, t: &Table<'_>) -> Sockets {
    let mut sk = Sockets {
        of: vec![None; t.d.devices.len()],
        method: None,
        why: String::new(),
    };
    from_locators(cfg, t, &mut sk);
    if sk.method.is_none() {
        from_arrays(cfg, t, &mut sk);
    }
    sk
}

/// Sockets from the locators, when every counted device names one in the same form
/// and they name no more sockets than there are processors; else why not.
fn from_locators(cfg: &mut MemConfig, t: &Table<'_>, sk: &mut Sockets) {
    let populated_cpus = t.populated_cpus;
    let placements = &t.placements;
    let labeled: Vec<usize> = t
        .counted
        .iter()
        .copied()
        .filter(|&i| placements[i].socket.is_some())
        .collect();
    let families: BTreeSet<&str> = labeled
        .iter()
        .filter_map(|&i| placements[i].socket.as_ref().map(|s| s.family.as_str()))
        .collect();
    if !labeled.is_empty() && labeled.len() == t.counted.len() && families.len() == 1 {
        let numbers: BTreeSet<u32> = labeled
            .iter()
            .filter_map(|&i| placements[i].socket.as_ref().map(|s| s.number))
            .collect();
        let k = numbers.len() as u32;
        if populated_cpus > 0 && k > populated_cpus {
            sk.why = format!(
                "the locators name {k} sockets but SMBIOS lists {populated_cpus} populated processor(s)"
            );
            cfg.notes.push(format!(
                "{}: the locator numbers are not taken as sockets",
                sk.why
            ));
        } else {
            let rank: BTreeMap<u32, u32> = numbers
                .iter()
                .enumerate()
                .map(|(r, &num)| (num, r as u32))
                .collect();
            for &i in &labeled {
                sk.of[i] = placements[i]
                    .socket
                    .as_ref()
                    .and_then(|s| rank.get(&s.number).copied());
            }
            if rank.iter().any(|(num, r)| num != r) {
                let texts: BTreeMap<u32, String> = labeled
                    .iter()
                    .filter_map(|&i| placements[i].socket.as_ref())
                    .map(|s| (s.number, s.text.clone()))
                    .collect();
                let map: Vec<String> = rank
                    .iter()
                    .map(|(num, r)| {
                        format!(
                            "{} = socket {r}",
                            texts.get(num).cloned().unwrap_or_default()
                        )
                    })
                    .collect();
                cfg.notes.push(format!(
                    "sockets numbered in the order of the locators' labels: {}",
                    map.join(", ")
                ));
            }
            sk.method = Some("locators");
        }
    } else if families.len() > 1 {
        sk.why = format!(
            "the locators name sockets in several forms ({})",
            families.iter().copied().collect::<Vec<_>>().join(", ")
        );
    } else if !labeled.is_empty() {
        sk.why = format!(
            "only {} of {} locators name a socket",
            labeled.len(),
            t.counted.len()
        );
    } else {
        sk.why = "the locators name no socket".into();
    }
}

/// One physical memory array per socket, in table order (assumed), or socket 0 when
/// there is a single processor.
fn from_arrays(cfg: &mut MemConfig, t: &Table<'_>, sk: &mut Sockets) {
    let d = t.d;
    let populated_cpus = t.populated_cpus;
    let counted = &t.counted;
    let sys_arrays: Vec<u16> = d
        .arrays
        .iter()
        .filter(|a| !t.non_system.contains(&a.handle))
        .filter(|a| {
            counted
                .iter()
                .any(|&i| d.devices[i].array_handle == Some(a.handle))
        })
        .map(|a| a.handle)
        .collect();
    let all_in = counted.iter().all(|&i| {
        d.devices[i]
            .array_handle
            .is_some_and(|h| sys_arrays.contains(&h))
    });
    if sys_arrays.len() >= 2
        && all_in
        && (populated_cpus == 0 || populated_cpus as usize == sys_arrays.len())
    {
        for &i in counted {
            sk.of[i] = d.devices[i]
                .array_handle
                .and_then(|h| sys_arrays.iter().position(|&x| x == h))
                .map(|p| p as u32);
        }
        sk.method = Some("memory_arrays");
        cfg.assumptions.push(format!(
            "{}: sockets taken from the {} physical memory arrays, one per socket in table order (assumed)",
            sk.why,
            sys_arrays.len()
        ));
    } else if populated_cpus == 1 {
        for &i in counted {
            sk.of[i] = Some(0);
        }
        sk.method = Some("single_processor");
    }
}
