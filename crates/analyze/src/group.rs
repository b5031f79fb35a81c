//! Reporting a finding seen on many ranks once.
//!
//! A job of 100 000 ranks that all run out of memory prints the same line
//! 100 000 times: one finding per rank would be 100 000 copies of one
//! message. Findings of one rule with the same message, GPU, role and
//! explaining rule on different ranks become one, with every rank listed
//! (`Finding::ranks`) and their counts added; the first in the list's
//! order stands for them (its evidence, location and traceback). The
//! report then lists at most [`MAX_FINDINGS`], with a count of the rest.

use coroner_model::{Finding, Role};
use std::collections::HashMap;

/// Findings a report lists at most, after grouping; the rest (the least
/// severe, the last seen) are counted.
pub(crate) const MAX_FINDINGS: usize = 1000;

/// What findings of several ranks must share to be reported as one.
#[derive(PartialEq, Eq, Hash)]
struct Same<'a> {
    rule: &'a str,
    role: Role,
    message: &'a str,
    gpu: Option<&'a str>,
    explained_by: Option<&'a str>,
}

impl<'a> Same<'a> {
    /// What a rank-less finding of an NCCL process shares with the same
    /// finding of the node's other processes: all but the GPU, which is
    /// each process's own device.
    fn unplaced(f: &'a Finding) -> Self {
        Same {
            gpu: None,
            ..Same::of(f)
        }
    }

    fn of(f: &'a Finding) -> Self {
        Same {
            rule: &f.rule,
            role: f.role,
            message: &f.message,
            gpu: f.gpu.as_deref(),
            explained_by: f.explained_by.as_deref(),
        }
    }
}

/// `findings` with those the same on several ranks made one, in the order
/// of the first of each. The findings are joined where they lie: a job of
/// many ranks holds one finding per rank here, and a second list of them
/// would double the memory they take.
pub(crate) fn across_ranks(mut findings: Vec<Finding>) -> Vec<Finding> {
    // Which finding each one joins: its own position or an earlier one's.
    let mut joins = Vec::with_capacity(findings.len());
    {
        let mut first: HashMap<Same<'_>, usize> = HashMap::new();
        // Findings of no rank stay apart, but for those that only the
        // process printing them (NCCL's `host:pid:tid` header) set apart
        // and that no rank was found for: one per node.
        let mut first_unranked: HashMap<(Same<'_>, Option<&str>), usize> = HashMap::new();
        for (i, f) in findings.iter().enumerate() {
            let to = match (f.rank, f.printed_by) {
                (Some(_), _) => *first.entry(Same::of(f)).or_insert(i),
                (None, Some(_)) => *first_unranked
                    .entry((Same::unplaced(f), f.host.as_deref()))
                    .or_insert(i),
                (None, None) => i,
            };
            joins.push(to);
        }
    }
    for (i, &to) in joins.iter().enumerate() {
        if to == i {
            continue;
        }
        let (rank, count) = (findings[i].rank, findings[i].count);
        let other_gpu = findings[i].gpu != findings[to].gpu;
        let lead = &mut findings[to];
        if other_gpu {
            // Processes on several devices: the lead's device is not theirs.
            lead.gpu = None;
        }
        if lead.ranks.is_empty() {
            lead.ranks.extend(lead.rank);
        }
        lead.ranks.extend(rank);
        lead.count = lead.count.saturating_add(count);
    }
    let mut position = 0;
    findings.retain(|_| {
        let lead = joins[position] == position;
        position += 1;
        lead
    });
    for f in &mut findings {
        f.ranks.sort_unstable();
        f.ranks.dedup();
        if f.ranks.len() < 2 {
            f.ranks.clear();
        }
    }
    findings
}

/// Keeps the first [`MAX_FINDINGS`] findings; returns how many were left
/// out.
pub(crate) fn cap(findings: &mut Vec<Finding>) -> u64 {
    let left_out = findings.len().saturating_sub(MAX_FINDINGS);
    findings.truncate(MAX_FINDINGS);
    u64::try_from(left_out).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::finding;
    use coroner_model::{Category, Severity};

    fn on(rank: Option<u32>, message: &str) -> Finding {
        Finding {
            rank,
            message: message.to_owned(),
            ..finding("oom", Category::GpuOom, Severity::Error, Role::Cause, 1)
        }
    }

    #[test]
    fn the_same_finding_on_many_ranks_is_one_with_its_ranks() {
        let findings = vec![
            on(Some(3), "out of memory"),
            on(Some(1), "out of memory"),
            on(None, "out of memory"),
            on(Some(2), "out of memory on GPU 1"),
            on(Some(0), "out of memory"),
            on(None, "out of memory"),
        ];
        let grouped = across_ranks(findings);
        // The same message on ranks 3, 1 and 0; the findings of no rank
        // and the one with another message stay apart.
        assert_eq!(grouped.len(), 4);
        assert_eq!(grouped[0].rank, Some(3));
        assert_eq!(grouped[0].ranks, vec![0, 1, 3]);
        assert_eq!(grouped[0].count, 3);
        assert_eq!(grouped[1].rank, None);
        assert_eq!(grouped[2].ranks, Vec::<u32>::new());
        assert_eq!(grouped[2].rank, Some(2));
        assert_eq!(grouped[3].rank, None);
    }

    #[test]
    fn processes_of_no_known_rank_are_one_finding_per_node() {
        let printed = |pid: u32, device: u32, host: &str| Finding {
            printed_by: Some(coroner_model::Printer { pid, device }),
            host: Some(host.to_owned()),
            gpu: Some(format!("GPU {device}")),
            ..on(None, "port error")
        };
        let grouped = across_ranks(vec![
            printed(10, 0, "n1"),
            printed(11, 1, "n1"),
            printed(12, 0, "n2"),
            printed(13, 0, "n2"),
        ]);
        assert_eq!(grouped.len(), 2);
        assert_eq!(grouped[0].count, 2);
        assert_eq!(grouped[0].rank, None);
        assert!(grouped[0].ranks.is_empty());
        // Two devices: no one device is named; one device: it is.
        assert_eq!(grouped[0].gpu, None);
        assert_eq!(grouped[1].gpu.as_deref(), Some("GPU 0"));
    }
}
