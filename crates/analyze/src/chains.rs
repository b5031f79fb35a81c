//! Exceptions chained in one Python traceback.
//!
//! Python prints a chain when an exception is raised from another (`raise
//! ... from e`: "the direct cause of the following exception") or while
//! another is being handled ("during handling of the above exception").
//! The first exception of the chain is the original failure; the later
//! ones wrap it or are failures of its handler. So when the finding of a
//! later exception and the finding of an earlier one of the same chain are
//! both in the report, the later is a consequence of the earlier.
//!
//! Except where the later restates the earlier: a bare exception that only
//! a generic rule read (`RuntimeError: basic_ios::clear: iostream error`
//! from `torch.save`) does not explain a later one that a specific rule
//! read and that was raised in the same file (`unexpected pos 832 vs 726`,
//! the same failed write as the writer's own check words it); the later
//! says what the earlier was. A later exception raised elsewhere, by a
//! handler's own work (a barrier, a checkpoint written on the way out),
//! stays the consequence of the first.

use coroner_model::{Category, Finding, PyException, Role, Severity};

/// Marks each finding whose traceback chain holds an earlier exception
/// that another finding (of error severity, a cause, from the same input)
/// was first seen at: the later becomes a symptom explained by the earliest
/// such finding.
pub(crate) fn apply(findings: &mut [Finding]) {
    for at in 0..findings.len() {
        let explainer = {
            let later = &findings[at];
            let Some(traceback) = &later.traceback else {
                continue;
            };
            if later.explained_by.is_some() {
                continue;
            }
            let own_line = later.first_seen.line;
            let own = traceback.exceptions.iter().find(|e| e.line == own_line);
            traceback
                .exceptions
                .iter()
                .take_while(|e| e.line != own_line)
                .find_map(|earlier| {
                    findings.iter().find(|f| {
                        f.first_seen.input == later.first_seen.input
                            && f.first_seen.line == earlier.line
                            && f.role == Role::Cause
                            && f.severity >= Severity::Error
                            && (f.category != Category::PythonError
                                || later.category == Category::PythonError
                                || !own.is_some_and(|own| raised_in_one_file(earlier, own)))
                    })
                })
                .map(|f| f.rule.clone())
        };
        if let (Some(rule), Some(later)) = (explainer, findings.get_mut(at)) {
            later.role = Role::Symptom;
            later.explained_by = Some(rule);
        }
    }
}

/// Whether two exceptions were raised in the same file (their innermost
/// frames'), which a traceback names.
fn raised_in_one_file(a: &PyException, b: &PyException) -> bool {
    match (a.frames.last(), b.frames.last()) {
        (Some(a), Some(b)) => !a.file.is_empty() && a.file == b.file,
        _ => false,
    }
}
