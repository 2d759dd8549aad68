//! The warnings a run folded (`warnings.folded`): a run of many cells gives the same
//! kind of warning once per cell; the terminal shows each code's first at once and, at
//! the end, one line per code ([`numalab_schema::fold`]). The records keep every
//! warning; this record keeps those lines, so that a reader of the journal alone (jq,
//! `db`, the report of a copied journal) sees what the user saw.

use numalab_schema::fold::{Fold, Folded};
use numalab_schema::{Origin, Record, RecordKind};
use serde::{Deserialize, Serialize};

/// The folded lines of one run (`warnings.folded`, key `warnings/folded/N`, N = 1 for
/// the first run of the journal that folded any).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldedWarnings {
    /// One per code that had more than one different message, by code.
    pub codes: Vec<Folded>,
}

impl RecordKind for FoldedWarnings {
    const KIND: &'static str = "warnings.folded";
}

impl FoldedWarnings {
    /// The run's record of `fold`, None when nothing was folded; its key is the first
    /// `warnings/folded/N` not `taken` (in the journal already).
    pub fn record(fold: &Fold, origin: Origin, taken: impl Fn(&str) -> bool) -> Option<Record> {
        let codes = fold.summary();
        if codes.is_empty() {
            return None;
        }
        let key = (1..)
            .map(|n| format!("warnings/folded/{n}"))
            .find(|k| !taken(k))?;
        Some(Record::new(key, origin, &FoldedWarnings { codes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::Warning;

    /// A run that folded two codes is one record naming both, the terminal's lines
    /// read back from it; a run that folded nothing has none; the key skips those taken.
    #[test]
    fn a_run_that_folded_is_one_record_with_the_lines_the_terminal_said() {
        let mut fold = Fold::default();
        assert!(FoldedWarnings::record(&fold, Origin::Measured, |_| false).is_none());
        for i in 0..10 {
            let w = Warning::new("imbalance", format!("thread {i} took 1.{i}x as long"))
                .with_remedy("pin the threads");
            fold.note(&format!("run/{i}"), &w);
            fold.note(
                &format!("run/{i}"),
                &Warning::new("late", format!("late by {i}")),
            );
        }
        let r =
            FoldedWarnings::record(&fold, Origin::Measured, |k| k == "warnings/folded/1").unwrap();
        assert_eq!(r.key, "warnings/folded/2");
        assert_eq!(r.kind, "warnings.folded");
        assert!(r.warnings.is_empty());
        let back = r.decode::<FoldedWarnings>().unwrap().unwrap();
        assert_eq!(back.codes.len(), 2);
        let imb = &back.codes[0];
        assert_eq!((imb.code.as_str(), imb.messages), ("imbalance", 10));
        assert_eq!(imb.first.key, "run/0");
        let keys: Vec<&str> = imb.named.iter().map(|n| n.key.as_str()).collect();
        assert_eq!(keys, ["run/9", "run/8", "run/7"]);
        assert_eq!(imb.remedy.as_deref(), Some("pin the threads"));
        let said: Vec<Warning> = back.codes.iter().map(Folded::warning).collect();
        assert_eq!(said, fold.folded());
        assert!(!back.codes[1].ranked);
    }
}
