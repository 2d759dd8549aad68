//! Repeated warnings said once: a run of many cells (a 64-cell node matrix, a thread
//! sweep of 160 CPUs, one run per repetition) can give the same kind of warning once per
//! cell, each with its own figure ("only 71.2% of the pages are on node 3 ..."). The
//! first of each code is shown as it comes; the other different messages of that code
//! are held and said at the end in one line: how many, the worst three, the remedy
//! ([`Fold`]). Records keep every warning: the evidence stays per cell.
//!
//! "Worst" is read from the message's figure ([`severity`]): a percentage after "only"
//! is worse the lower it is ("only 40% of the memory", "used only 70% of their CPUs'
//! time"), any other percentage worse the higher ("spread by 15%", "the hypervisor took
//! 12%"), a factor ("1.80x") worse the higher; messages without such a figure keep their
//! order (first ones first).
//!
//! A fleet's nodes fold the same way ([`Fold::per`]): there the same message from two
//! nodes counts twice, and the line says how many nodes.

use crate::Warning;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// How many of the held messages the folded line names.
pub const WORST: usize = 3;

/// How bad a message is, read from its figure (higher: worse): its first percentage
/// counts as 100 minus it after "only", as itself otherwise, else its first factor
/// (`1.8x`) as itself. Other numbers are too often names (CPU 12, node 3) to rank by:
/// None then, as for a message without a figure.
pub fn severity(message: &str) -> Option<f64> {
    let b = message.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut factor = None;
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_digit() && (i == 0 || !word(b[i - 1]))) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.' || b[j] == b',') {
            j += 1;
        }
        let text = message[i..j].trim_end_matches(['.', ',']).replace(',', "");
        if let Ok(v) = text.parse::<f64>() {
            match b.get(j) {
                Some(b'%') if message[..i].trim_end().ends_with("only") => return Some(100.0 - v),
                Some(b'%') => return Some(v),
                Some(b'x') if !b.get(j + 1).is_some_and(|&c| word(c)) => {
                    factor = factor.or(Some(v));
                }
                _ => {}
            }
        }
        i = j;
    }
    factor
}

/// One message of a folded code and the record that carried it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Named {
    /// The record's key.
    pub key: String,
    /// The warning's message.
    pub message: String,
}

/// One code's folded line, as data: what the terminal said at the end of the run and
/// the journal keeps (`warnings.folded`, see numalab-records).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folded {
    /// The warning code.
    pub code: String,
    /// How many different messages of this code the run gave, the first included.
    pub messages: usize,
    /// The first, shown as it came.
    pub first: Named,
    /// At most [`WORST`] of the others: the worst by their figure when `ranked`, else
    /// the next ones in order.
    pub named: Vec<Named>,
    /// Whether `named` are ranked by their figure ([`severity`]).
    pub ranked: bool,
    /// The remedy (the worst one's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

impl Folded {
    /// The line the terminal says: how many more, the worst three with their records,
    /// the remedy.
    pub fn warning(&self) -> Warning {
        self.line(None)
    }

    /// The line, of records (None) or of `what` ([`Fold::per`]: "node").
    fn line(&self, what: Option<&str>) -> Warning {
        let n = self.messages.saturating_sub(1);
        let named: Vec<String> = self
            .named
            .iter()
            .map(|x| format!("{}: {}", x.key, x.message))
            .collect();
        let plural = if n == 1 { "" } else { "s" };
        let counted = match what {
            None => format!(
                "{n} more record{plural} had this warning, each its own message ({} in all",
                self.messages
            ),
            Some(what) => format!("{n} more {what}{plural} had this ({} in all", self.messages),
        };
        let w = Warning::new(
            self.code.clone(),
            format!(
                "{}: {counted}; the first is above); the {}: {}",
                self.code,
                if self.ranked { "worst" } else { "next" },
                named.join("; ")
            ),
        );
        match &self.remedy {
            Some(r) => w.with_remedy(r.clone()),
            None => w,
        }
    }
}

/// The warnings of one run, folded by code (see the module's text).
#[derive(Debug, Default)]
pub struct Fold {
    /// Every distinct warning seen (code, message and remedy).
    seen: HashSet<String>,
    /// Per code: the first message (where, the warning), how many different messages
    /// came after it, and the worst of them, worst first, at most [`WORST`].
    held: BTreeMap<String, Held>,
    /// [`Fold::per`]'s `what`: each key counts once per message, and the line counts them.
    per: Option<&'static str>,
}

#[derive(Debug)]
struct Held {
    first: (String, Warning),
    more: usize,
    worst: Vec<(String, Warning)>,
}

impl Fold {
    /// A fold of one warning per `what` ("node": a fleet's nodes): the same message from
    /// two keys counts twice, and the folded line says how many more `what`s had it.
    pub fn per(what: &'static str) -> Fold {
        Fold {
            per: Some(what),
            ..Fold::default()
        }
    }

    /// Takes warning `w` of the record `key`: true when it is to be shown now (the first
    /// message of its code), false when it was seen already (the same text; of the same
    /// key for [`Fold::per`]) or is held for the folded line.
    pub fn note(&mut self, key: &str, w: &Warning) -> bool {
        let by = if self.per.is_some() { key } else { "" };
        if !self.seen.insert(format!("{}\u{0}{by}\u{0}{w}", w.code)) {
            return false;
        }
        let Some(held) = self.held.get_mut(&w.code) else {
            let first = (key.to_string(), w.clone());
            self.held.insert(
                w.code.clone(),
                Held {
                    first,
                    more: 0,
                    worst: Vec::new(),
                },
            );
            return true;
        };
        held.more += 1;
        held.worst.push((key.to_string(), w.clone()));
        // Stable: messages of equal (or no) figure keep their order.
        held.worst.sort_by(|a, b| {
            let s = |w: &Warning| severity(&w.message).unwrap_or(f64::NEG_INFINITY);
            s(&b.1).total_cmp(&s(&a.1))
        });
        held.worst.truncate(WORST);
        false
    }

    /// Per code that had more than one different message: how many, the first, the
    /// worst [`WORST`] of the others with their records, and the remedy.
    pub fn summary(&self) -> Vec<Folded> {
        let named = |(key, w): &(String, Warning)| Named {
            key: key.clone(),
            message: w.message.clone(),
        };
        self.held
            .iter()
            .filter(|(_, h)| h.more > 0)
            .map(|(code, h)| Folded {
                code: code.clone(),
                messages: h.more + 1,
                first: named(&h.first),
                named: h.worst.iter().map(named).collect(),
                // Without figures to rank by, the first ones are named, and said so.
                ranked: h.worst.iter().any(|(_, w)| severity(&w.message).is_some()),
                remedy: h.worst.first().and_then(|(_, w)| w.remedy.clone()),
            })
            .collect()
    }

    /// One warning per code that had more than one different message: the terminal's
    /// lines of [`Fold::summary`] ([`Folded::warning`]; of [`Fold::per`]'s `what`s).
    pub fn folded(&self) -> Vec<Warning> {
        self.summary().iter().map(|f| f.line(self.per)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_read_and_ranked_by_what_it_means() {
        assert_eq!(
            severity("only 71.5% of the pages are on node(s) 3 as asked"),
            Some(28.5)
        );
        assert_eq!(
            severity("the slowest thread took 1.80x as long as the fastest"),
            Some(1.8)
        );
        assert_eq!(severity("a 1,024.5x gap, then only 12.5% more"), Some(87.5));
        // A share that is not "only" one is worse the higher it is.
        assert_eq!(severity("the hypervisor took 12% (steal)"), Some(12.0));
        assert!(severity("spread by 30%") > severity("spread by 12%"));
        // Plain numbers are names as often as figures; digits inside a word (node3,
        // x86_64) are neither.
        assert_eq!(severity("copy: 1,024 of 4096 pages were not moved"), None);
        assert_eq!(
            severity("CPU 116-89 on x86_64 took 2x, node3 0xff"),
            Some(2.0)
        );
        assert_eq!(severity("the kernel multiplexed the counters"), None);
    }

    fn mismatch(fraction: f64) -> Warning {
        Warning::new(
            "placement_mismatch",
            format!("only {fraction:.1}% of the pages are on node(s) 1 as asked"),
        )
        .with_remedy("check free memory on that node")
    }

    /// A 64-cell matrix with a placement warning on 40 cells, each with its figure: the
    /// first is shown, the rest are one line with the count, the three lowest shares
    /// and the remedy; an identical warning again is neither shown nor counted.
    #[test]
    fn repeated_warnings_of_a_code_are_one_line_with_the_worst_three() {
        let mut f = Fold::default();
        let clock = Warning::new("clock", "the clock is coarse");
        assert!(f.note("cell0", &clock));
        assert!(f.note("cell0", &mismatch(90.0)));
        for cell in 1..40 {
            assert!(!f.note(&format!("cell{cell}"), &clock));
            let share = match cell {
                7 => 12.0,
                20 => 30.5,
                33 => 20.0,
                c => 80.0 + (c % 10) as f64,
            };
            assert!(!f.note(&format!("cell{cell}"), &mismatch(share)));
        }
        let folded = f.folded();
        assert_eq!(folded.len(), 1, "{folded:?}");
        let w = &folded[0];
        assert_eq!(w.code, "placement_mismatch");
        // Cells 1..39 give 13 shares other than the first's 90.0: 80.0 to 89.0 and
        // 12.0, 30.5, 20.0 (repeated shares are the same text, counted once).
        assert!(
            w.message.starts_with("placement_mismatch: 13 more records had this warning, each its own message (14 in all"),
            "{}",
            w.message
        );
        let (a, b, c) = (
            w.message.find("cell7: only 12.0%").unwrap(),
            w.message.find("cell33: only 20.0%").unwrap(),
            w.message.find("cell20: only 30.5%").unwrap(),
        );
        assert!(a < b && b < c, "{}", w.message);
        assert!(!w.message.contains("only 8"), "{}", w.message);
        assert_eq!(w.remedy.as_deref(), Some("check free memory on that node"));
        // Messages without a figure: the next three after the first, in order.
        let mut lines = Fold::default();
        for i in 1..=6 {
            let w = Warning::new("unreadable_line", format!("line {i}: not JSON"));
            assert_eq!(lines.note("run", &w), i == 1);
        }
        let m = &lines.folded()[0].message;
        assert!(
            m.ends_with(
                "the next: run: line 2: not JSON; run: line 3: not JSON; run: line 4: not JSON"
            ),
            "{m}"
        );
        // A code seen once, or always with the same text, folds into nothing.
        let mut once = Fold::default();
        assert!(once.note("a", &mismatch(50.0)));
        assert!(!once.note("b", &mismatch(50.0)));
        assert!(once.folded().is_empty());
    }

    /// Per node: the same message from 5 nodes is 5, the line counts nodes, and a node
    /// saying it twice counts once.
    #[test]
    fn a_fold_per_node_counts_nodes_with_the_same_message() {
        let mut f = Fold::per("node");
        let w = Warning::new("launch-failed", "numalab is not at /opt/numalab")
            .with_remedy("install it on every node");
        for n in 1..=5 {
            assert_eq!(f.note(&format!("n{n}"), &w), n == 1);
            assert!(!f.note(&format!("n{n}"), &w));
        }
        let folded = f.folded();
        assert_eq!(folded.len(), 1);
        assert_eq!(
            folded[0].to_string(),
            "launch-failed: 4 more nodes had this (5 in all; the first is above); the next: \
             n2: numalab is not at /opt/numalab; n3: numalab is not at /opt/numalab; \
             n4: numalab is not at /opt/numalab (install it on every node)"
        );
    }
}
