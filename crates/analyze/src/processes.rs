//! Tying findings about one process together by its pid.
//!
//! Several inputs speak of the same process: NCCL's init lines (`vm:641:641
//! [1] NCCL INFO ... rank 1 nranks 2 ...`) say which pid each rank runs as,
//! torchrun's summary names the pid of a rank that failed, and the kernel
//! log names the pid it killed (`Memory cgroup out of memory: Killed process
//! 641 (python)`). A `pid` capture joins them:
//!
//! - a finding without a rank gets the rank its pid ran as, when the
//!   findings that know both agree on one;
//! - the kernel log's record of an out-of-memory kill is the first-hand
//!   evidence of that death, so the other out-of-memory findings about the
//!   same pid (the launcher's `exitcode: -9`, the kernel's second line
//!   about the kill) become its consequences.
//!
//! Pids repeat across hosts; a pid that maps to two ranks gives none.
//!
//! A launcher also reports one death twice in its own output: torchrun's
//! `failed (exitcode: -9) local_rank: 1 (pid: 2038)` and its `Root Cause
//! (first observed failure)` block naming the same pid. They are one
//! finding ([`join_launcher_accounts`]).

use crate::ranks::attribute_ranks_by;
use coroner_model::{Category, Finding, InputKind, InputSummary, Role};

fn pid(f: &Finding) -> Option<u32> {
    f.captures.get("pid")?.parse().ok()
}

/// Applies both steps to `findings` (in order of first appearance);
/// `inputs` tell which findings come from a kernel log.
pub(crate) fn apply(findings: &mut [Finding], inputs: &[InputSummary]) {
    attribute_ranks_by(findings, pid, pid);
    explain_kills(findings, inputs);
}

fn explain_kills(findings: &mut [Finding], inputs: &[InputSummary]) {
    let from_kernel = |f: &Finding| {
        inputs
            .iter()
            .any(|i| i.path == f.first_seen.input && i.kind == InputKind::KernelLog)
    };
    let is_kill = |f: &Finding| f.category == Category::HostOom && pid(f).is_some();
    // The first kernel record of each killed pid, in order of appearance.
    let mut primaries: Vec<(u32, usize)> = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let Some(p) = pid(f) else { continue };
        if is_kill(f)
            && f.role == Role::Cause
            && from_kernel(f)
            && !primaries.iter().any(|(q, _)| *q == p)
        {
            primaries.push((p, i));
        }
    }
    for (p, at) in primaries {
        let Some(rule) = findings.get(at).map(|f| f.rule.clone()) else {
            continue;
        };
        for (i, f) in findings.iter_mut().enumerate() {
            if i != at && f.explained_by.is_none() && is_kill(f) && pid(f) == Some(p) {
                f.role = Role::Symptom;
                f.explained_by = Some(rule.clone());
            }
        }
    }
}

/// Makes a launcher's two accounts of one death one finding: a finding of
/// a `first_failure` rule (torchrun's `Root Cause` block, which knows the
/// rank and host) takes in the findings of the same category, input and
/// pid, their evidence first, and stands where the earliest of them stood.
pub(crate) fn join_launcher_accounts(
    findings: &mut Vec<Finding>,
    is_first_failure: &dyn Fn(&str) -> bool,
) {
    let mut gone = vec![false; findings.len()];
    for at in 0..findings.len() {
        if gone[at] || !is_first_failure(&findings[at].rule) {
            continue;
        }
        let Some(p) = pid(&findings[at]) else {
            continue;
        };
        let same: Vec<usize> = (0..findings.len())
            .filter(|&i| {
                let (f, block) = (&findings[i], &findings[at]);
                i != at
                    && !gone[i]
                    && !is_first_failure(&f.rule)
                    && pid(f) == Some(p)
                    && f.category == block.category
                    && f.first_seen.input == block.first_seen.input
            })
            .collect();
        let Some(&first) = same.first() else {
            continue;
        };
        let mut evidence = Vec::new();
        for &i in &same {
            evidence.append(&mut findings[i].evidence);
            gone[i] = true;
        }
        let earlier = (first < at).then(|| findings[first].first_seen.clone());
        let block = &mut findings[at];
        evidence.append(&mut block.evidence);
        evidence.sort_by_key(|e| e.line);
        evidence.dedup_by_key(|e| e.line);
        block.evidence = evidence;
        if let Some(seen) = earlier {
            block.first_seen = seen;
            findings.swap(first, at);
            gone.swap(first, at);
        }
    }
    let mut position = 0;
    findings.retain(|_| {
        let keep = !gone[position];
        position += 1;
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::finding;
    use coroner_model::{Evidence, Severity};

    fn with_pid(rule: &str, category: Category, line: u64, pid: &str) -> Finding {
        let mut f = finding(rule, category, Severity::Critical, Role::Cause, line);
        f.captures.insert("pid".to_owned(), pid.to_owned());
        f.evidence.push(Evidence {
            input: "log".to_owned(),
            line,
            text: format!("line {line}"),
            context: None,
        });
        f
    }

    #[test]
    fn a_launchers_two_accounts_of_one_death_are_one_finding() {
        let mut findings = vec![
            with_pid("worker", Category::HostOom, 17, "2038"),
            with_pid("other-pid", Category::HostOom, 20, "2037"),
            with_pid("other-category", Category::Segfault, 21, "2038"),
            with_pid("block", Category::HostOom, 47, "2038"),
        ];
        findings[3].rank = Some(1);
        join_launcher_accounts(&mut findings, &|id| id == "block");
        let rules: Vec<&str> = findings.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(rules, ["block", "other-pid", "other-category"]);
        let block = &findings[0];
        assert_eq!(block.first_seen.line, 17);
        assert_eq!(block.rank, Some(1));
        let lines: Vec<u64> = block.evidence.iter().map(|e| e.line).collect();
        assert_eq!(lines, [17, 47]);
    }
}
