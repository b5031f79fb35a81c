//! Cascades: a finding that explains others.
//!
//! A rule may list the categories of failures that are typically its
//! consequences (`explains`): a GPU exception recorded in a GPU core dump
//! explains the host process's abort and the log's `illegal memory access`
//! lines. When such a finding is in the incident, the findings it explains
//! become its symptoms, so the root cause is the first failure rather than
//! the loudest echo. The knowledge is data in the rule files; this module
//! only applies it.

use coroner_model::{Finding, Role, Severity};
use coroner_rules::RuleSet;

/// Marks every finding that a more fundamental finding explains: its role
/// becomes [`Role::Symptom`] and `explained_by` names the explaining rule.
/// Explaining findings are taken most severe first, then in order of
/// appearance; one that is itself explained explains nothing.
pub(crate) fn apply(findings: &mut [Finding], rules: &RuleSet) {
    let mut order: Vec<usize> = (0..findings.len())
        .filter(|&i| findings[i].role == Role::Cause && findings[i].severity >= Severity::Error)
        .collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(findings[i].severity), i));
    for at in order {
        if findings[at].explained_by.is_some() {
            continue;
        }
        let Some(rule) = rules.get(&findings[at].rule) else {
            continue;
        };
        if rule.explains.is_empty() {
            continue;
        }
        let explainer = findings[at].rule.clone();
        for (i, other) in findings.iter_mut().enumerate() {
            if i != at
                && other.rule != explainer
                && other.explained_by.is_none()
                && other.role != Role::Context
                && rule.explains.contains(&other.category)
            {
                other.role = Role::Symptom;
                other.explained_by = Some(explainer.clone());
            }
        }
    }
}

/// Drops the findings that a finding of a superseding rule replaces when
/// both were first seen on the same line. The scanner applies `supersedes`
/// line by line; a rule whose window completes on a later line cannot
/// suppress a match that was already recorded, so this finishes the job.
/// A superseded finding with more matches than the superseding one keeps
/// the matches of other lines and stays.
pub(crate) fn drop_superseded(findings: &mut Vec<Finding>, rules: &RuleSet) {
    let superseded: Vec<usize> = findings
        .iter()
        .enumerate()
        .filter(|(_, victim)| {
            findings.iter().any(|winner| {
                winner.first_seen == victim.first_seen
                    && winner.count >= victim.count
                    && rules
                        .get(&winner.rule)
                        .is_some_and(|r| r.supersedes.contains(&victim.rule))
            })
        })
        .map(|(i, _)| i)
        .collect();
    for i in superseded.into_iter().rev() {
        findings.remove(i);
    }
}
