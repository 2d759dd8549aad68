//! The studies of the user's program: scale, policy, sweep.

#[allow(unused_imports)]
use super::*;

pub(super) fn harness(l: &Loaded, out: &mut Out<'_>) {
    for (_, s) in l.records_of::<ScaleSummary>() {
        let anchor = Some(anchors::scale_chart(out.b, &s.study_id));
        for f in &s.findings {
            out.push(
                "scale",
                Severity::Notice,
                format!("scaling of `{}` ({}): {f}", cmd(&s.command), s.placement),
                anchor.clone(),
            );
        }
    }
    for (_, s) in l.records_of::<PolicySummary>() {
        let anchor = Some(anchors::policy_chart(out.b, &s.study_id));
        // The study's findings already hold its class and recommendation.
        let lines = if s.findings.is_empty() {
            vec![format!("{} {}", s.classification, s.recommendation)]
        } else {
            s.findings.clone()
        };
        for f in lines {
            out.push(
                "policy",
                if s.single_node {
                    Severity::Info
                } else {
                    Severity::Notice
                },
                format!("memory policy of `{}`: {f}", cmd(&s.command)),
                anchor.clone(),
            );
        }
    }
    for (_, s) in l.records_of::<SweepSummary>() {
        let anchor = Some(anchors::sweep_chart(out.b, &s.study_id));
        for f in &s.findings {
            out.push(
                "sweep",
                Severity::Notice,
                format!("sweep of `{}`: {f}", cmd(&s.command)),
                anchor.clone(),
            );
        }
    }
}
