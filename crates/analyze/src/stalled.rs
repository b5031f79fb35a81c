//! Horovod's stall reports, read for ranks that submitted different
//! tensors.
//!
//! A rank that stopped (crashed, hung, or busy elsewhere) is missing every
//! tensor the others wait on, and ranks that fell behind at different
//! points miss nested sets of them. Two ranks that each submitted a tensor
//! the other has not took different paths through the program: they
//! issued different collectives, and the stall is the consequence. Such a
//! report gets one sentence for the rules (kind `stack-dumps`):
//!
//! `horovod stall report: rank 1 submitted T1 but not T2, while rank 2
//! submitted T2 but not T1`
//!
//! A name left out of a cut list (Horovod prints a rank's first six, in
//! name order) is known to be submitted only where it sorts before the
//! last name printed.

use crate::findings::FindingTable;
use crate::written::{scan_written, Grounding};
use coroner_logs::{StallEntry, StallFact, StallReport, StallSide};
use coroner_model::{Evidence, InputKind, Location};
use coroner_rules::RuleSet;
use std::collections::{BTreeMap, BTreeSet};

/// Distinct sets of missing ranks compared per report.
const MAX_SETS: usize = 32;

/// Two ranks that each submitted a tensor the other has not, and the line
/// the sentence rests on.
struct Crossing<'a> {
    first: (u32, &'a str, &'a str),
    second: (u32, &'a str, &'a str),
    entry: &'a StallEntry,
}

/// Reads the incident's stall reports and adds what the rules find in
/// the sentences about ranks that submitted different tensors to `table`.
pub(crate) fn scan_stall_reports(table: &mut FindingTable, rules: &RuleSet) {
    let reports = std::mem::take(&mut table.stall_reports);
    for (input, display, report) in &reports {
        let Some(crossing) = crossing(report) else {
            continue;
        };
        let (a, a_sent, a_missing) = crossing.first;
        let (b, b_sent, b_missing) = crossing.second;
        let sentence = format!(
            "horovod stall report: rank {a} submitted {a_sent} but not {a_missing}, while rank {b} submitted {b_sent} but not {b_missing}"
        );
        let at = Location {
            input: display.clone(),
            line: crossing.entry.line,
            byte_offset: 0,
            time: None,
            own_time: None,
        };
        let evidence = Evidence {
            input: display.clone(),
            line: crossing.entry.line,
            text: crossing.entry.text.clone(),
            context: None,
        };
        let grounding = Grounding {
            input: *input,
            display: display.clone(),
            rank: None,
            place: Some((at, vec![evidence])),
        };
        scan_written(table, rules, InputKind::StackDumps, &grounding, &sentence);
    }
}

fn crossing(report: &StallReport) -> Option<Crossing<'_>> {
    by_rank(report).or_else(|| by_tensor(report))
}

/// The report's ranks with the tensors each has not submitted: ranks
/// `a < b` and names `t`, `u` with `a` missing `t` but not `u` and `b`
/// missing `u` but not `t`.
fn by_rank(report: &StallReport) -> Option<Crossing<'_>> {
    let mut ranks: BTreeMap<u32, (&[String], bool, &StallEntry)> = BTreeMap::new();
    for entry in &report.entries {
        if let StallFact::Rank {
            rank,
            tensors,
            truncated,
        } = &entry.fact
        {
            ranks.insert(*rank, (tensors, *truncated, entry));
        }
    }
    // Whether the rank's list shows that it submitted `name`.
    let submitted = |(tensors, truncated, _): &(&[String], bool, &StallEntry), name: &str| {
        !tensors.iter().any(|t| t == name)
            && (!truncated || tensors.last().is_some_and(|last| name < last.as_str()))
    };
    for (&a, listed_a) in &ranks {
        for (&b, listed_b) in ranks.range(a + 1..) {
            let t = listed_a.0.iter().find(|t| submitted(listed_b, t));
            let u = listed_b.0.iter().find(|u| submitted(listed_a, u));
            if let (Some(t), Some(u)) = (t, u) {
                return Some(Crossing {
                    first: (a, u, t),
                    second: (b, t, u),
                    entry: listed_b.2,
                });
            }
        }
    }
    None
}

/// The report's tensors with the ranks each waits for (those missing
/// from a list of ready ranks being the other ranks the report names):
/// tensors `t`, `u` and ranks `a` missing `t` but not `u`, `b` missing
/// `u` but not `t`.
fn by_tensor(report: &StallReport) -> Option<Crossing<'_>> {
    let named: BTreeSet<u32> = report
        .entries
        .iter()
        .filter_map(|e| match &e.fact {
            StallFact::Tensor { ranks, .. } => Some(ranks.iter().copied()),
            StallFact::Rank { .. } => None,
        })
        .flatten()
        .collect();
    // Each distinct set of missing ranks, with the first tensor and line
    // that has it.
    let mut sets: Vec<(BTreeSet<u32>, &str, &StallEntry)> = Vec::new();
    for entry in &report.entries {
        let StallFact::Tensor { name, side, ranks } = &entry.fact else {
            continue;
        };
        let listed: BTreeSet<u32> = ranks.iter().copied().collect();
        let missing = match side {
            StallSide::Missing => listed,
            StallSide::Ready => named.difference(&listed).copied().collect(),
        };
        if !sets.iter().any(|(s, _, _)| *s == missing) {
            if sets.len() == MAX_SETS {
                break;
            }
            sets.push((missing, name, entry));
        }
    }
    for (i, (missing_t, t, _)) in sets.iter().enumerate() {
        for (missing_u, u, entry) in sets.iter().skip(i + 1) {
            let a = missing_t.difference(missing_u).next();
            let b = missing_u.difference(missing_t).next();
            if let (Some(&a), Some(&b)) = (a, b) {
                // Ranks in their order, each with what it submitted.
                let (first, second) = if a < b {
                    ((a, *u, *t), (b, *t, *u))
                } else {
                    ((b, *t, *u), (a, *u, *t))
                };
                return Some(Crossing {
                    first,
                    second,
                    entry,
                });
            }
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::test_support::{builtin_rules, scanned};

    const RULE: &str = "horovod-ranks-submitted-different-tensors";

    fn findings(log: &str) -> Vec<coroner_model::Finding> {
        let rules = builtin_rules();
        let (mut table, _) = scanned(log.as_bytes(), &rules);
        scan_stall_reports(&mut table, &rules);
        table.into_findings(&rules)
    }

    const HEADER: &str = "[2021-02-10 17:39:53.403710: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\nMissing ranks:\n";

    #[test]
    fn ranks_missing_each_others_tensors_submitted_different_ones() {
        let log = HEADER.to_owned()
            + "0: [broadcast.noname.3765, broadcast.noname.3873]\n"
            + "1: [broadcast.noname.3873]\n"
            + "2: [broadcast.noname.3765]\n";
        let found = findings(&log);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        assert!(
            mismatch.message.contains(
                "rank 1 submitted broadcast.noname.3765 but not broadcast.noname.3873, while rank 2 submitted broadcast.noname.3873 but not broadcast.noname.3765"
            ),
            "{}",
            mismatch.message
        );
        assert_eq!(mismatch.first_seen.line, 5);
        assert_eq!(mismatch.rank, None);
    }

    #[test]
    fn ranks_that_stopped_or_fell_behind_did_not() {
        for ranks in [
            "6: [allreduce.0, allreduce.1]\n",
            "1: [allreduce.0, allreduce.1]\n3: [allreduce.1]\n",
            // A name past a cut list's last may be among those left out.
            "1: [allreduce.0, allreduce.1, allreduce.2, allreduce.3, allreduce.4, allreduce.5 ...]\n2: [allreduce.0, allreduce.7]\n",
        ] {
            let log = HEADER.to_owned() + ranks;
            assert!(findings(&log).iter().all(|f| f.rule != RULE), "{log}");
        }
        // Rank 1 misses every tensor rank 2 does: it fell further behind.
        let nested = HEADER.to_owned()
            + "1: [allreduce.0, allreduce.1, allreduce.2, allreduce.3, allreduce.4, allreduce.5 ...]\n2: [allreduce.0, allreduce.3]\n";
        assert!(findings(&nested).iter().all(|f| f.rule != RULE));
    }

    #[test]
    fn tensors_with_crossing_ready_ranks_were_submitted_by_different_ranks() {
        let log = "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. Stalled ops: HorovodAllreduce_loss_Mean_0 [ready ranks: 3], HorovodAllreduce_grad_0 [ready ranks: 2, 0, 1]\n";
        let found = findings(log);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        assert!(
            mismatch.message.contains(
                "rank 0 submitted HorovodAllreduce_grad_0 but not HorovodAllreduce_loss_Mean_0, while rank 3 submitted HorovodAllreduce_loss_Mean_0 but not HorovodAllreduce_grad_0"
            ),
            "{}",
            mismatch.message
        );
        // One rank missing from every tensor stopped.
        let stopped = "HorovodBroadcast_a_0 [missing ranks: 1]\nHorovodBroadcast_b_0 [missing ranks: 1]\nHorovodAllreduce_c_0 [ready ranks: 2, 6, 7, 3, 4, 1, 5]\n";
        assert!(findings(stopped).iter().all(|f| f.rule != RULE));
    }
}
