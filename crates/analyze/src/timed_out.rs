//! The collective each rank's watchdog timed out, compared across ranks.
//!
//! A rank's first timeout names the collective it was stuck in: its
//! sequence number in the process group, its operation and its element
//! count (`WorkNCCL(SeqNum=7219, OpType=BROADCAST, NumelIn=64, ...)`).
//! Ranks stuck at one sequence number in different operations, or in one
//! operation that every rank issues with the same count (an all-reduce, a
//! broadcast) with different counts, issued different collectives: the
//! timeout is the consequence. Such ranks get one sentence for the rules
//! (kind `stack-dumps`):
//!
//! `timed-out collectives: rank 3 is in BROADCAST #7219 with 64 elements
//! while rank 2 is in BROADCAST #7219 with 24084544 elements`
//!
//! Point-to-point operations and all-to-all are left out: their counts
//! differ between ranks by design, and newer releases number them apart
//! from the collectives.

use crate::findings::FindingTable;
use crate::stacks::scan_written;
use coroner_model::Evidence;
use coroner_rules::RuleSet;
use std::collections::BTreeMap;

/// The captures a finding needs to take part: the sequence number, the
/// operation and the element count of the collective.
const CAPTURES: [&str; 3] = ["seq", "op", "numel_in"];

/// Operations every rank of a process group issues with the same element
/// count.
const SAME_COUNT: [&str; 7] = [
    "ALLREDUCE",
    "BROADCAST",
    "REDUCE",
    "ALLGATHER",
    "_ALLGATHER_BASE",
    "REDUCE_SCATTER",
    "_REDUCE_SCATTER_BASE",
];

/// One rank's first timed-out collective.
struct Stuck<'a> {
    rank: u32,
    op: &'a str,
    count: &'a str,
    input: usize,
    at: coroner_model::Location,
    evidence: Evidence,
}

/// Compares the collectives the ranks' watchdogs timed out and adds what
/// the rules find in the sentence about ranks in different ones to `table`.
pub(crate) fn scan_timed_out(table: &mut FindingTable, rules: &RuleSet) {
    let mut by_seq: BTreeMap<u64, BTreeMap<u32, Stuck<'_>>> = BTreeMap::new();
    // Several rules may capture one rank's timeout: its first line counts.
    for found in table.ranked_captures(&CAPTURES) {
        let (Ok(seq), op, count) = (
            found.values[0].parse::<u64>(),
            found.values[1],
            found.values[2],
        ) else {
            continue;
        };
        if !SAME_COUNT.contains(&op) || count.parse::<u64>().is_err() {
            continue;
        }
        let Some(evidence) = found.evidence.cloned() else {
            continue;
        };
        let stuck = Stuck {
            rank: found.rank,
            op,
            count,
            input: found.input,
            at: found.first.clone(),
            evidence,
        };
        let ranks = by_seq.entry(seq).or_default();
        let earlier = ranks
            .get(&found.rank)
            .is_some_and(|s| (s.input, s.at.line) <= (stuck.input, stuck.at.line));
        if !earlier {
            ranks.insert(found.rank, stuck);
        }
    }
    let Some((seq, groups)) = by_seq
        .iter()
        .map(|(seq, ranks)| (*seq, groups(ranks)))
        .find(|(_, groups)| groups.len() >= 2)
    else {
        return;
    };
    let (first, second) = (&groups[0], &groups[1]);
    let sentence = format!(
        "timed-out collectives: {} while {}",
        describe(first, seq),
        describe(second, seq)
    );
    // The finding rests on the first line of a rank of the second group:
    // which side went wrong, the timeouts do not say.
    let shown = &second[0];
    let (evidence, at, input) = (shown.evidence.clone(), shown.at.clone(), shown.input);
    scan_written(table, rules, (input, at, None), &evidence, &sentence);
}

/// The ranks stuck at one sequence number, grouped by operation and count:
/// the largest group first (of equal ones, the one with the lowest rank).
fn groups<'m, 'a>(ranks: &'m BTreeMap<u32, Stuck<'a>>) -> Vec<Vec<&'m Stuck<'a>>> {
    let mut groups: Vec<Vec<&Stuck>> = Vec::new();
    for stuck in ranks.values() {
        match groups
            .iter_mut()
            .find(|g| g[0].op == stuck.op && g[0].count == stuck.count)
        {
            Some(group) => group.push(stuck),
            None => groups.push(vec![stuck]),
        }
    }
    groups.sort_by_key(|g| (std::cmp::Reverse(g.len()), g[0].rank));
    groups
}

/// `ranks 0, 1 are in ALLREDUCE #12 with 1024 elements`.
fn describe(group: &[&Stuck], seq: u64) -> String {
    let ranks: Vec<String> = group.iter().map(|s| s.rank.to_string()).collect();
    let (word, verb) = if ranks.len() == 1 {
        ("rank", "is")
    } else {
        ("ranks", "are")
    };
    format!(
        "{word} {} {verb} in {} #{seq} with {} elements",
        ranks.join(", "),
        group[0].op,
        group[0].count
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::scan::scan_text;
    use coroner_ingest::{Input, InputSource};
    use coroner_model::{InputKind, InputSummary};
    use coroner_rules::RuleSources;

    const RULE: &str = "nccl-timeouts-different-collectives";

    /// The findings of `log` once the timeouts are compared.
    fn findings(log: &str) -> Vec<coroner_model::Finding> {
        let rules = RuleSet::load(&RuleSources {
            builtin: true,
            ..RuleSources::default()
        })
        .unwrap();
        let input = Input {
            display: "x.log".to_owned(),
            source: InputSource::Stdin,
            rank: None,
            explicit: true,
        };
        let mut table = FindingTable::for_input(0);
        let mut summary = InputSummary::new("x.log".to_owned(), InputKind::Log);
        scan_text(
            &input,
            InputKind::Log,
            log.as_bytes(),
            &rules,
            &mut table,
            &mut summary,
        );
        scan_timed_out(&mut table, &rules);
        table.into_findings(&rules)
    }

    fn timeout(rank: u32, seq: u64, op: &str, numel: u64) -> String {
        format!(
            "[rank{rank}]:[E918 19:29:24.436955737 ProcessGroupNCCL.cpp:689] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=3000000) ran for 3000097 milliseconds before timing out.\n"
        )
    }

    #[test]
    fn one_collective_with_other_counts_is_a_mismatch() {
        let log = timeout(3, 7219, "BROADCAST", 64) + &timeout(2, 7219, "BROADCAST", 24_084_544);
        let found = findings(&log);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        assert!(mismatch.message.contains(
            "rank 2 is in BROADCAST #7219 with 24084544 elements while rank 3 is in BROADCAST #7219 with 64 elements"
        ), "{}", mismatch.message);
        assert_eq!(mismatch.rank, None);
        assert_eq!(mismatch.first_seen.line, 1);
    }

    #[test]
    fn other_operations_at_one_number_are_a_mismatch_and_the_largest_group_comes_first() {
        let log = timeout(0, 12, "ALLREDUCE", 1024)
            + &timeout(1, 12, "ALLREDUCE", 1024)
            + &timeout(2, 12, "_ALLGATHER_BASE", 4096);
        let found = findings(&log);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        assert!(mismatch.message.contains(
            "ranks 0, 1 are in ALLREDUCE #12 with 1024 elements while rank 2 is in _ALLGATHER_BASE #12 with 4096 elements"
        ), "{}", mismatch.message);
        assert_eq!(mismatch.first_seen.line, 3);
    }

    #[test]
    fn agreeing_ranks_other_numbers_and_uneven_operations_are_not() {
        for log in [
            timeout(0, 12, "ALLREDUCE", 1024) + &timeout(1, 12, "ALLREDUCE", 1024),
            timeout(0, 12, "ALLREDUCE", 1024) + &timeout(1, 13, "BROADCAST", 64),
            timeout(0, 12, "ALLTOALL_BASE", 1024) + &timeout(1, 12, "ALLTOALL_BASE", 64),
            timeout(0, 12, "SEND", 1024) + &timeout(1, 12, "ALLREDUCE", 64),
            timeout(0, 12, "ALLREDUCE", 1024) + &timeout(0, 12, "ALLREDUCE", 64),
        ] {
            assert!(findings(&log).iter().all(|f| f.rule != RULE), "{log}");
        }
    }
}
