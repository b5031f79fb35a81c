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
