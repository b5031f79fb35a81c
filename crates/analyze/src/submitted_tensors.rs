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
//! last name printed. Lists of tensors are compared only in a report that
//! starts at Horovod's header (a run of such lines without one may join
//! checks made minutes apart) and from which no list was dropped for the
//! bounds.

use crate::findings::FindingTable;
use crate::written::{scan_written, Grounding};
use coroner_logs::{StallEntry, StallFact, StallReport, StallSide};
use coroner_model::{Evidence, InputKind, Location};
use coroner_rules::RuleSet;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};

/// Distinct sets of missing ranks compared per report.
const MAX_SETS: usize = 32;

/// A rank with a tensor it submitted and one it has not, and the entry
/// that shows it.
struct Side<'a> {
    rank: u32,
    submitted: &'a str,
    missing: &'a str,
    entry: &'a StallEntry,
}

/// Reads the incident's stall reports and adds what the rules find in
/// the sentences about ranks that submitted different tensors to `table`.
pub(crate) fn scan_submitted_tensors(table: &mut FindingTable, rules: &RuleSet) {
    let reports = std::mem::take(&mut table.stall_reports);
    for (input, display, report) in &reports {
        let Some([first, second]) = crossing(report) else {
            continue;
        };
        let sentence = format!(
            "horovod stall report: rank {} submitted {} but not {}, while rank {} submitted {} but not {}",
            first.rank, first.submitted, first.missing, second.rank, second.submitted, second.missing
        );
        let mut evidence: Vec<Evidence> = Vec::new();
        for entry in [first.entry, second.entry] {
            let Some(text) = report.text_of_entry(entry) else {
                continue;
            };
            if !evidence
                .iter()
                .any(|e| e.line == entry.line && e.text == text)
            {
                evidence.push(Evidence {
                    input: display.clone(),
                    line: entry.line,
                    text: text.to_owned(),
                    context: None,
                });
            }
        }
        evidence.sort_by_key(|e| e.line);
        let at = Location {
            input: display.clone(),
            line: second.entry.line,
            byte_offset: 0,
            time: report.time.clone(),
            own_time: None,
        };
        let grounding = Grounding {
            input: *input,
            display: display.clone(),
            rank: None,
            place: Some((at, evidence)),
        };
        scan_written(table, rules, InputKind::StackDumps, &grounding, &sentence);
    }
}

/// Two ranks, in their order, that each submitted a tensor the other has
/// not.
fn crossing(report: &StallReport) -> Option<[Side<'_>; 2]> {
    by_rank(report).or_else(|| by_tensor(report))
}

/// One rank's list of the tensors it has not submitted.
struct Listed<'a> {
    tensors: &'a [String],
    truncated: bool,
    entry: &'a StallEntry,
}

impl Listed<'_> {
    /// Whether the list shows that the rank submitted `name`.
    fn submitted(&self, name: &str) -> bool {
        !self.tensors.iter().any(|t| t == name)
            && (!self.truncated || self.tensors.last().is_some_and(|last| name < last.as_str()))
    }
}

/// The report's ranks with the tensors each has not submitted: ranks
/// `a < b` and names `t`, `u` with `a` missing `t` but not `u` and `b`
/// missing `u` but not `t`.
fn by_rank(report: &StallReport) -> Option<[Side<'_>; 2]> {
    let mut ranks: BTreeMap<u32, Listed<'_>> = BTreeMap::new();
    for entry in &report.entries {
        if let StallFact::Rank {
            rank,
            tensors,
            truncated,
        } = &entry.fact
        {
            ranks.insert(
                *rank,
                Listed {
                    tensors,
                    truncated: *truncated,
                    entry,
                },
            );
        }
    }
    for (&a, listed_a) in &ranks {
        for (&b, listed_b) in ranks.range((Excluded(a), Unbounded)) {
            let t = listed_a.tensors.iter().find(|t| listed_b.submitted(t));
            let u = listed_b.tensors.iter().find(|u| listed_a.submitted(u));
            if let (Some(t), Some(u)) = (t, u) {
                return Some([
                    Side {
                        rank: a,
                        submitted: u,
                        missing: t,
                        entry: listed_a.entry,
                    },
                    Side {
                        rank: b,
                        submitted: t,
                        missing: u,
                        entry: listed_b.entry,
                    },
                ]);
            }
        }
    }
    None
}

/// One distinct set of ranks missing a tensor, with the first tensor and
/// entry that has it.
struct MissingSet<'a> {
    ranks: BTreeSet<u32>,
    tensor: &'a str,
    entry: &'a StallEntry,
}

/// The report's tensors with the ranks each waits for (those missing
/// from a list of ready ranks being the other ranks the report names):
/// tensors `t`, `u` and ranks `a` missing `t` but not `u`, `b` missing
/// `u` but not `t`.
fn by_tensor(report: &StallReport) -> Option<[Side<'_>; 2]> {
    if !report.headed || !report.complete {
        return None;
    }
    let named: BTreeSet<u32> = report
        .entries
        .iter()
        .filter_map(|e| match &e.fact {
            StallFact::Tensor { ranks, .. } => Some(ranks.iter().copied()),
            StallFact::Rank { .. } => None,
        })
        .flatten()
        .collect();
    let mut sets: Vec<MissingSet> = Vec::new();
    for entry in &report.entries {
        let StallFact::Tensor { name, side, ranks } = &entry.fact else {
            continue;
        };
        let listed: BTreeSet<u32> = ranks.iter().copied().collect();
        let missing = match side {
            StallSide::Missing => listed,
            StallSide::Ready => named.difference(&listed).copied().collect(),
        };
        if !sets.iter().any(|s| s.ranks == missing) {
            if sets.len() == MAX_SETS {
                break;
            }
            sets.push(MissingSet {
                ranks: missing,
                tensor: name,
                entry,
            });
        }
    }
    for (i, t) in sets.iter().enumerate() {
        for u in sets.iter().skip(i + 1) {
            let a = t.ranks.difference(&u.ranks).next();
            let b = u.ranks.difference(&t.ranks).next();
            if let (Some(&a), Some(&b)) = (a, b) {
                // `a` is missing `t` and submitted `u`; `b` the reverse.
                let side_a = Side {
                    rank: a,
                    submitted: u.tensor,
                    missing: t.tensor,
                    entry: t.entry,
                };
                let side_b = Side {
                    rank: b,
                    submitted: t.tensor,
                    missing: u.tensor,
                    entry: u.entry,
                };
                return Some(if a < b {
                    [side_a, side_b]
                } else {
                    [side_b, side_a]
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
        scan_submitted_tensors(&mut table, &rules);
        table.into_findings(&rules)
    }

    fn no_mismatch(log: &str) {
        assert!(findings(log).iter().all(|f| f.rule != RULE), "{log}");
    }

    const HEADER: &str = "[2021-02-10 17:39:53.403710: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\nMissing ranks:\n";

    /// Ranks 1 and 2 each miss the tensor the other submitted.
    fn crossing_report() -> String {
        HEADER.to_owned()
            + "0: [broadcast.noname.3765, broadcast.noname.3873]\n"
            + "1: [broadcast.noname.3873]\n"
            + "2: [broadcast.noname.3765]\n"
    }

    #[test]
    fn ranks_missing_each_others_tensors_submitted_different_ones() {
        let log = crossing_report();
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
        // Both ranks' lines are the evidence.
        let lines: Vec<u64> = mismatch.evidence.iter().map(|e| e.line).collect();
        assert_eq!(lines, [4, 5]);
    }

    #[test]
    fn a_later_part_of_a_large_file_keeps_its_evidence() {
        let log = crossing_report();
        let rules = builtin_rules();
        let (mut table, _) = scanned(log.as_bytes(), &rules);
        // The part's lines counted from its start, moved to the file's.
        table.shift_lines(1_000);
        scan_submitted_tensors(&mut table, &rules);
        let found = table.into_findings(&rules);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        let lines: Vec<u64> = mismatch.evidence.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1_004, 1_005]);
    }

    #[test]
    fn ranks_that_stopped_or_fell_behind_did_not() {
        for ranks in [
            "6: [allreduce.0, allreduce.1]\n",
            "1: [allreduce.0, allreduce.1]\n3: [allreduce.1]\n",
            // A name past a cut list's last may be among those left out.
            "1: [allreduce.0, allreduce.1, allreduce.2, allreduce.3, allreduce.4, allreduce.5 ...]\n2: [allreduce.0, allreduce.7]\n",
            // Rank 1 misses every tensor rank 2 does: it fell further behind.
            "1: [allreduce.0, allreduce.1, allreduce.2, allreduce.3, allreduce.4, allreduce.5 ...]\n2: [allreduce.0, allreduce.3]\n",
            // The largest rank number the input can hold.
            "4294967295: [allreduce.0]\n",
        ] {
            no_mismatch(&(HEADER.to_owned() + ranks));
        }
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
        no_mismatch("Stalled ops: HorovodBroadcast_a_0 [missing ranks: 1]\nHorovodBroadcast_b_0 [missing ranks: 1]\nHorovodAllreduce_c_0 [ready ranks: 2, 6, 7, 3, 4, 1, 5]\n");
    }

    #[test]
    fn checks_without_a_header_or_with_lists_dropped_are_not_compared() {
        // Rank 1 caught up a minute later and rank 2 fell behind.
        no_mismatch("[2019-04-13 13:56:31.861697: W horovod/common/operations.cc:588] x_0 [missing ranks: 1]\n[2019-04-13 13:57:31.861697: W horovod/common/operations.cc:588] y_0 [missing ranks: 2]\n");
        // Nested lists, the first too long to keep: read whole, rank 0
        // fell further behind than ranks 1 to 9000.
        let ranks = |from: u32| {
            (from..9_000)
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        no_mismatch(&format!(
            "Stalled ops: T1_0 [missing ranks: {}]\nT2_0 [missing ranks: {}]\n",
            ranks(1),
            ranks(0)
        ));
    }
}
