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
//! from the collectives. Releases before 2.0 print no count: their ranks
//! are compared by operation alone (`rank 0 is in REDUCE #3742816 while
//! ranks 1, 5 are in _ALLGATHER_BASE #3742816`). Releases before 2.4
//! number point-to-point operations with the collectives, so in a
//! pipeline-parallel job one number can name different collectives on
//! different ranks, one more reason the mismatch is presumed. The line does not name the process group, whose
//! collectives the number counts: ranks are compared only when their
//! timeouts have the same length, and only ranks whose line names the
//! same rank as its launcher's prefix (`[rank3]:... [Rank 3]`; a
//! subgroup's line names the rank within the group). Where a companion
//! line names a rank's group in a form the same on every rank (the
//! internal rule `nccl-watchdog-process-group`), ranks known to be in
//! other groups are not compared. Where none does, the group stays
//! unknown, so the rule that reads the sentence presumes the mismatch
//! rather than recording it.
//!
//! Comparable ranks stuck at sequence numbers two or more apart, with
//! two or more ranks at least two ahead and another operation or count
//! on each side, issued different collectives too: the ranks ahead
//! finished a collective that the rank behind cannot have issued yet, so
//! what they finished was matched by its stuck one. Releases before 2.4
//! number point-to-point operations with the collectives, so pipeline
//! stages reach one collective at different numbers: the same operation
//! and count on both sides is not read. Their sentence is worded apart
//! (`timed-out collectives at different sequence numbers: rank 0 is in
//! ALLREDUCE #959 with 544997376 elements while ranks 1, 2 are in
//! ALLREDUCE #963 with 2560 elements`).

use crate::findings::FindingTable;
use crate::written::{ranks_are, scan_written, Grounding};
use coroner_logs::strip_rank_prefix;
use coroner_model::InputKind;
use coroner_rules::RuleSet;
use std::collections::{BTreeMap, BTreeSet};

/// The rule whose findings take part: the watchdog's own timeout line.
const TIMEOUT_RULE: &str = "nccl-watchdog-timeout";

/// The captures a finding takes part with: the sequence number, the
/// operation, the element count (printed from 2.0) and the timeout of the
/// collective; all but the count are needed.
const CAPTURES: [&str; 4] = ["seq", "op", "numel_in", "timeout_ms"];

/// The captures of a line naming the process group of a rank's timed-out
/// collective: its sequence number and the group.
const GROUP: [&str; 2] = ["seq", "pg"];

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

/// The farthest apart two ranks' stuck sequence numbers are compared: a
/// stuck collective is matched by a few calls on the other ranks (the
/// buckets of one step), while numbers further apart are likelier the
/// counters of different process groups, which the line does not name.
const MOST_APART: u64 = 256;

/// One rank's first timed-out collective, and where its line is.
struct Stuck<'a> {
    rank: u32,
    seq: u64,
    op: &'a str,
    /// `None` where the line prints no element count.
    count: Option<u64>,
    timeout: &'a str,
    found: crate::findings::RankedCaptures<'a>,
}

/// Compares the collectives the ranks' watchdogs timed out and adds what
/// the rules find in the sentence about ranks in different ones to `table`.
pub(crate) fn scan_timed_out(table: &mut FindingTable, rules: &RuleSet) {
    let Some((sentence, grounding)) = mismatch(table, rules) else {
        return;
    };
    scan_written(table, rules, InputKind::StackDumps, &grounding, &sentence);
}

/// The sentence about ranks stuck in different collectives (at one
/// sequence number, else at numbers at least two apart), and what it rests
/// on: the first line of a rank of the second group at one number, of the
/// rank behind at numbers apart.
fn mismatch(table: &FindingTable, rules: &RuleSet) -> Option<(String, Grounding)> {
    // Of a rank, the first line it timed out on.
    let mut first: BTreeMap<u32, Stuck<'_>> = BTreeMap::new();
    let timeout_rule = |found: &crate::findings::RankedCaptures| {
        rules
            .rules()
            .get(found.rule)
            .is_some_and(|r| r.id == TIMEOUT_RULE)
    };
    for found in table.ranked_captures(&CAPTURES).filter(timeout_rule) {
        let Some(stuck) = Stuck::of(found) else {
            continue;
        };
        let place = |s: &Stuck| (s.found.input, s.found.first.line);
        if first
            .get(&stuck.rank)
            .is_none_or(|s| place(&stuck) < place(s))
        {
            first.insert(stuck.rank, stuck);
        }
    }
    let process_groups = process_groups(table);
    at_one_number(&first, &process_groups).or_else(|| numbers_apart(&first, &process_groups))
}

/// The sentence about the first sequence number at which comparable ranks
/// are stuck in different collectives.
fn at_one_number(
    first: &BTreeMap<u32, Stuck<'_>>,
    process_groups: &BTreeMap<(u32, u64), &str>,
) -> Option<(String, Grounding)> {
    let mut by_seq: BTreeMap<(u64, &str), Vec<&Stuck>> = BTreeMap::new();
    for stuck in first.values() {
        by_seq
            .entry((stuck.seq, stuck.timeout))
            .or_default()
            .push(stuck);
    }
    let (groups, counted) = by_seq.values().find_map(|ranks| {
        comparable(ranks, process_groups)
            .into_iter()
            .map(|ranks| {
                let counted = counted(&ranks);
                (groups(&ranks, counted), counted)
            })
            .find(|(groups, _)| groups.len() >= 2)
    })?;
    let sentence = format!(
        "timed-out collectives: {} while {}",
        describe(&groups[0], counted),
        describe(&groups[1], counted)
    );
    Some((sentence, grounding(&groups[1][0].found)?))
}

/// The sentence about comparable ranks stuck at sequence numbers at least
/// two apart: the ranks ahead completed a collective numbered after the
/// one the rank behind is stuck in, which that rank cannot have issued
/// (its stream runs them in order). So the stuck collective of the rank
/// behind was matched by other calls on the others: the ranks issued
/// different collectives. What is left out is in [`apart`].
fn numbers_apart(
    first: &BTreeMap<u32, Stuck<'_>>,
    process_groups: &BTreeMap<(u32, u64), &str>,
) -> Option<(String, Grounding)> {
    let mut by_timeout: BTreeMap<&str, Vec<&Stuck>> = BTreeMap::new();
    for stuck in first.values() {
        by_timeout.entry(stuck.timeout).or_default().push(stuck);
    }
    let (behind, ahead, counted) = by_timeout.values().find_map(|ranks| {
        comparable(ranks, process_groups)
            .into_iter()
            .find_map(|ranks| apart(&ranks))
    })?;
    let sentence = format!(
        "timed-out collectives at different sequence numbers: {} while {}",
        describe(&behind, counted),
        describe(&ahead, counted)
    );
    Some((sentence, grounding(&behind[0].found)?))
}

/// Of ranks that may be in one process group, those stuck at the lowest
/// number and those at the highest, when the two sides can only be
/// explained by different collectives: at most [`MOST_APART`] apart, two
/// or more ranks at least two ahead, and another operation or element
/// count on each side (releases before 2.4 number point-to-point
/// operations with the collectives, so a pipeline's stages reach one
/// collective at different numbers; the same call on both sides is read
/// that way). With `counted`, whether every rank's line prints its count.
fn apart<'m, 'a>(
    ranks: &[&'m Stuck<'a>],
) -> Option<(Vec<&'m Stuck<'a>>, Vec<&'m Stuck<'a>>, bool)> {
    let low = ranks.iter().map(|s| s.seq).min()?;
    let high = ranks.iter().map(|s| s.seq).max()?;
    if high - low > MOST_APART {
        return None;
    }
    // A rank one ahead may have finished the collective a faulty peer is
    // stuck in, and one rank alone ahead may be the root of what it
    // finished, its data sent into its peers' buffers while they stalled.
    if ranks.iter().filter(|s| s.seq >= low + 2).count() < 2 {
        return None;
    }
    let counted = counted(ranks);
    let at = |seq: u64| -> Option<Vec<&'m Stuck<'a>>> {
        let here: Vec<&Stuck> = ranks.iter().copied().filter(|s| s.seq == seq).collect();
        // Ranks at one number in different collectives are described by
        // the largest group's.
        groups(&here, counted).into_iter().next()
    };
    let (behind, ahead) = (at(low)?, at(high)?);
    let (b, a) = (behind.first()?, ahead.first()?);
    let count = |s: &Stuck| if counted { s.count } else { None };
    if b.op == a.op && count(b) == count(a) {
        return None;
    }
    Some((behind, ahead, counted))
}

/// Where a sentence about the timeouts rests: a rank's timeout line (which
/// rank went wrong, the timeouts do not say).
fn grounding(shown: &crate::findings::RankedCaptures<'_>) -> Option<Grounding> {
    let evidence = shown.evidence?.clone();
    Some(Grounding {
        input: shown.input,
        display: shown.first.input.clone(),
        rank: None,
        place: Some((shown.first.clone(), vec![evidence])),
    })
}

impl<'a> Stuck<'a> {
    fn of(found: crate::findings::RankedCaptures<'a>) -> Option<Stuck<'a>> {
        let [Some(seq), Some(op), count, Some(timeout)] = found.values[..] else {
            return None;
        };
        let seq = seq.parse().ok()?;
        // `u64::MAX` is what a coalesced operation prints: no count, and no
        // operation of its own to compare.
        let count = match count {
            Some(count) => Some(count.parse().ok().filter(|&n| n != u64::MAX)?),
            None => None,
        };
        if !SAME_COUNT.contains(&op) {
            return None;
        }
        if launched_as_another_rank(&found) {
            return None;
        }
        Some(Stuck {
            rank: found.rank,
            seq,
            op,
            count,
            timeout,
            found,
        })
    }
}

/// Of a rank and the sequence number of a collective it timed out, the
/// process group that a line names.
fn process_groups(table: &FindingTable) -> BTreeMap<(u32, u64), &str> {
    let mut out = BTreeMap::new();
    for found in table.ranked_captures(&GROUP) {
        let [Some(seq), Some(pg)] = found.values[..] else {
            continue;
        };
        let Ok(seq) = seq.parse() else {
            continue;
        };
        if launched_as_another_rank(&found) {
            continue;
        }
        out.entry((found.rank, seq)).or_insert(pg);
    }
    out
}

/// The sets of ranks stuck at one sequence number that may be in one
/// process group: all of them where no group is known, else, for each
/// group named, its ranks and those whose group is not known.
fn comparable<'m, 'a>(
    ranks: &[&'m Stuck<'a>],
    process_groups: &BTreeMap<(u32, u64), &str>,
) -> Vec<Vec<&'m Stuck<'a>>> {
    let group_of = |s: &Stuck| process_groups.get(&(s.rank, s.seq)).copied();
    let named: BTreeSet<&str> = ranks.iter().filter_map(|s| group_of(s)).collect();
    if named.is_empty() {
        return vec![ranks.to_vec()];
    }
    named
        .into_iter()
        .map(|pg| {
            ranks
                .iter()
                .copied()
                .filter(|s| group_of(s).is_none_or(|g| g == pg))
                .collect()
        })
        .collect()
}

/// Whether a line names another rank than its launcher's prefix: a
/// subgroup's line names the rank within the group.
fn launched_as_another_rank(found: &crate::findings::RankedCaptures) -> bool {
    let launcher = found.evidence.and_then(|e| strip_rank_prefix(&e.text).rank);
    launcher.is_some_and(|r| r != found.rank)
}

/// The ranks stuck at one sequence number, grouped by operation and count
/// (by operation alone unless every rank's line prints a count, `counted`):
/// the largest group first (of equal ones, the one with the lowest rank).
fn groups<'m, 'a>(ranks: &[&'m Stuck<'a>], counted: bool) -> Vec<Vec<&'m Stuck<'a>>> {
    let count = |s: &Stuck| if counted { s.count } else { None };
    let mut groups: Vec<Vec<&Stuck>> = Vec::new();
    for &stuck in ranks {
        match groups
            .iter_mut()
            .find(|g| g[0].op == stuck.op && count(g[0]) == count(stuck))
        {
            Some(group) => group.push(stuck),
            None => groups.push(vec![stuck]),
        }
    }
    groups.sort_by_key(|g| (std::cmp::Reverse(g.len()), g[0].rank));
    groups
}

/// Whether every rank's line prints the collective's element count.
fn counted(ranks: &[&Stuck]) -> bool {
    ranks.iter().all(|s| s.count.is_some())
}

/// `ranks 0, 1 are in ALLREDUCE #12 with 1024 elements`; without the count
/// where the ranks were grouped by operation alone (`counted` false).
fn describe(group: &[&Stuck], counted: bool) -> String {
    let ranks: Vec<u32> = group.iter().map(|s| s.rank).collect();
    let head = format!("{} in {} #{}", ranks_are(&ranks), group[0].op, group[0].seq);
    match group[0].count.filter(|_| counted) {
        Some(1) => format!("{head} with 1 element"),
        Some(count) => format!("{head} with {count} elements"),
        None => head,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::test_support::{builtin_rules, scanned};

    const RULE: &str = "nccl-timeouts-different-collectives";

    /// The findings of `log` once the timeouts are compared.
    fn findings(log: &str) -> Vec<coroner_model::Finding> {
        let rules = builtin_rules();
        let (mut table, _) = scanned(log.as_bytes(), &rules);
        scan_timed_out(&mut table, &rules);
        table.into_findings(&rules)
    }

    fn timeout(rank: u32, seq: u64, op: &str, numel: u64) -> String {
        line(rank, rank, seq, op, numel, 3_000_000)
    }

    /// A watchdog's line of global rank `rank`, rank `in_group` of its
    /// process group.
    fn line(rank: u32, in_group: u32, seq: u64, op: &str, numel: u64, ms: u64) -> String {
        format!(
            "[rank{rank}]:[E918 19:29:24.436955737 ProcessGroupNCCL.cpp:689] [Rank {in_group}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={ms}) ran for {ms} milliseconds before timing out.\n"
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

    /// A companion line naming rank `rank`'s process group by its GUID.
    fn group(rank: u32, seq: u64, guid: u32) -> String {
        format!(
            "[rank{rank}]:[E918 19:29:24.437013108 ProcessGroupNCCL.cpp:2168] [PG ID 2 PG GUID {guid} Rank {rank}]  failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last completed work: {}\n",
            seq - 1
        )
    }

    #[test]
    fn ranks_named_in_other_process_groups_are_not_compared() {
        let stuck = |guid_of_1: u32| {
            timeout(0, 7219, "BROADCAST", 64)
                + &group(0, 7219, 3)
                + &timeout(1, 7219, "BROADCAST", 24_084_544)
                + &group(1, 7219, guid_of_1)
        };
        assert!(findings(&stuck(5)).iter().all(|f| f.rule != RULE));
        assert!(findings(&stuck(3)).iter().any(|f| f.rule == RULE));
        // A rank whose group is not named may be in either.
        let log = timeout(0, 7219, "BROADCAST", 64)
            + &group(0, 7219, 3)
            + &timeout(1, 7219, "BROADCAST", 24_084_544)
            + &group(1, 7219, 5)
            + &timeout(2, 7219, "BROADCAST", 24_084_544);
        let found = findings(&log);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        assert!(
            mismatch
                .message
                .contains("rank 0 is in BROADCAST #7219 with 64 elements while rank 2"),
            "{}",
            mismatch.message
        );
    }

    /// A line of a release before 2.0, which prints no element count.
    fn uncounted(rank: u32, seq: u64, op: &str) -> String {
        format!(
            "[E ProcessGroupNCCL.cpp:737] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)=1800000) ran for 1801750 milliseconds before timing out.\n"
        )
    }

    #[test]
    fn without_counts_only_other_operations_are_a_mismatch() {
        let log = uncounted(1, 3_742_816, "_ALLGATHER_BASE")
            + &uncounted(0, 3_742_816, "REDUCE")
            + &uncounted(5, 3_742_816, "_ALLGATHER_BASE");
        let found = findings(&log);
        let mismatch = found.iter().find(|f| f.rule == RULE).unwrap();
        assert!(
            mismatch.message.contains(
                "ranks 1, 5 are in _ALLGATHER_BASE #3742816 while rank 0 is in REDUCE #3742816:"
            ),
            "{}",
            mismatch.message
        );
        let agreeing = uncounted(0, 12, "ALLREDUCE") + &uncounted(1, 12, "ALLREDUCE");
        assert!(findings(&agreeing).iter().all(|f| f.rule != RULE));
        // One rank's count does not part it from a rank whose line has none.
        let mixed = uncounted(0, 12, "ALLREDUCE") + &timeout(1, 12, "ALLREDUCE", 64);
        let mixed = mixed.replace(
            "Timeout(ms)=3000000) ran for 3000000",
            "Timeout(ms)=1800000) ran for 1801750",
        );
        assert!(findings(&mixed).iter().all(|f| f.rule != RULE), "{mixed}");
    }

    const APART: &str = "nccl-timeouts-different-sequence-numbers";

    #[test]
    fn ranks_two_or_more_numbers_apart_issued_different_collectives() {
        let log = timeout(0, 959, "ALLREDUCE", 544_997_376)
            + &timeout(1, 963, "ALLREDUCE", 2560)
            + &timeout(2, 963, "ALLREDUCE", 2560);
        let found = findings(&log);
        assert!(found.iter().all(|f| f.rule != RULE));
        let mismatch = found.iter().find(|f| f.rule == APART).unwrap();
        assert!(mismatch.message.contains(
            "rank 0 is in ALLREDUCE #959 with 544997376 elements while ranks 1, 2 are in ALLREDUCE #963 with 2560 elements"
        ), "{}", mismatch.message);
        assert_eq!(
            mismatch.category,
            coroner_model::Category::CollectiveMismatch
        );
        assert_eq!(mismatch.rank, None);
        assert_eq!(mismatch.first_seen.line, 1);
    }

    /// Whether the timeouts of `log` are read as ranks numbers apart.
    fn read_apart(log: &str) -> bool {
        findings(log).iter().any(|f| f.rule == APART)
    }

    // Each log below has three ranks, two of them ahead with another
    // element count, and is left out for one reason only.

    #[test]
    fn numbers_one_apart_are_not_apart() {
        // A rank can finish the collective its peer is stuck in.
        let log = timeout(0, 12, "ALLREDUCE", 1024)
            + &timeout(1, 13, "ALLREDUCE", 64)
            + &timeout(2, 13, "ALLREDUCE", 64);
        assert!(!read_apart(&log), "{log}");
        assert!(read_apart(&log.replace("SeqNum=13", "SeqNum=14")));
    }

    #[test]
    fn numbers_too_far_apart_are_likelier_two_groups() {
        let far = 12 + MOST_APART + 1;
        let log = timeout(0, 12, "ALLREDUCE", 1024)
            + &timeout(1, far, "ALLREDUCE", 64)
            + &timeout(2, far, "ALLREDUCE", 64);
        assert!(!read_apart(&log), "{log}");
        let near = format!("SeqNum={}", 12 + MOST_APART);
        assert!(read_apart(&log.replace(&format!("SeqNum={far}"), &near)));
    }

    #[test]
    fn timeouts_of_other_lengths_are_not_compared() {
        let log = line(0, 0, 12, "ALLREDUCE", 1024, 600_000)
            + &line(1, 1, 20, "ALLREDUCE", 64, 1_800_000)
            + &line(2, 2, 20, "ALLREDUCE", 64, 1_800_000);
        assert!(!read_apart(&log), "{log}");
        assert!(read_apart(&log.replace("=1800000", "=600000")));
    }

    #[test]
    fn ranks_named_in_other_groups_are_not_apart() {
        let log = timeout(0, 12, "ALLREDUCE", 1024)
            + &group(0, 12, 3)
            + &timeout(1, 20, "ALLREDUCE", 64)
            + &group(1, 20, 5)
            + &timeout(2, 20, "ALLREDUCE", 64)
            + &group(2, 20, 5);
        assert!(!read_apart(&log), "{log}");
        assert!(read_apart(&log.replace("PG GUID 3 ", "PG GUID 5 ")));
    }

    #[test]
    fn the_same_call_on_both_sides_is_a_pipeline_not_a_mismatch() {
        // Releases before 2.4 count a pipeline's sends and receives with the
        // collectives: its stages reach the loss's all-reduce at other numbers.
        let log = timeout(0, 90, "ALLREDUCE", 1)
            + &timeout(1, 170, "ALLREDUCE", 1)
            + &timeout(2, 170, "ALLREDUCE", 1);
        assert!(!read_apart(&log), "{log}");
        assert!(read_apart(&log.replace(
            "SeqNum=90, OpType=ALLREDUCE",
            "SeqNum=90, OpType=BROADCAST"
        )));
    }

    #[test]
    fn one_rank_alone_two_ahead_is_not_apart() {
        // The rank one ahead may have finished a faulty peer's collective,
        // and the one two ahead alone may be a broadcast's root.
        let log = timeout(0, 500, "ALLREDUCE", 1024)
            + &timeout(1, 501, "BROADCAST", 64)
            + &timeout(2, 502, "BROADCAST", 64);
        assert!(!read_apart(&log), "{log}");
        assert!(read_apart(&log.replace("SeqNum=501", "SeqNum=502")));
        let root_ahead = timeout(0, 14, "_ALLGATHER_BASE", 513)
            + &timeout(1, 12, "BROADCAST", 5_164_000)
            + &timeout(2, 12, "BROADCAST", 5_164_000);
        assert!(!read_apart(&root_ahead), "{root_ahead}");
    }

    #[test]
    fn agreeing_ranks_other_numbers_and_uneven_operations_are_not() {
        for log in [
            timeout(0, 12, "ALLREDUCE", 1024) + &timeout(1, 12, "ALLREDUCE", 1024),
            timeout(0, 12, "ALLREDUCE", 1024) + &timeout(1, 13, "BROADCAST", 64),
            timeout(0, 12, "ALLTOALL_BASE", 1024) + &timeout(1, 12, "ALLTOALL_BASE", 64),
            timeout(0, 12, "SEND", 1024) + &timeout(1, 12, "ALLREDUCE", 64),
            timeout(0, 12, "ALLREDUCE", 1024) + &timeout(0, 12, "ALLREDUCE", 64),
            // Another process group's ranks, numbered within it.
            line(0, 0, 840, "_REDUCE_SCATTER_BASE", 80_000_000, 600_000)
                + &line(3, 1, 840, "_REDUCE_SCATTER_BASE", 76_000_000, 600_000),
            // Timeouts of other lengths: other groups, or other runs.
            line(0, 0, 12, "BROADCAST", 64, 600_000) + &line(1, 1, 12, "BROADCAST", 80, 1_800_000),
            // A coalesced operation's count is no count.
            timeout(0, 12, "ALLREDUCE", u64::MAX) + &timeout(1, 12, "ALLREDUCE", 64),
            // Blocking waits' lines are not the watchdog's.
            "[rank0]:[E ProcessGroupNCCL.cpp:1033] [PG 0 Rank 0] Work WorkNCCL(SeqNum=12, OpType=BROADCAST, NumelIn=262144, NumelOut=262144, Timeout(ms)=60000) timed out in blocking wait.\n".to_owned()
                + "[rank1]:[E ProcessGroupNCCL.cpp:1033] [PG 0 Rank 1] Work WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=64, NumelOut=64, Timeout(ms)=60000) timed out in blocking wait.\n",
        ] {
            assert!(findings(&log).iter().all(|f| f.rule != RULE), "{log}");
        }
    }
}
