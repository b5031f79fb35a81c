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
//! stays the consequence of the first. Generic is what the root-cause
//! chooser counts as generic: the Python-error fallback, or a rule marked
//! `generic`.

use coroner_model::{Finding, PyException, Role, Severity};

/// Marks each finding whose traceback chain holds an earlier exception
/// that another finding (of error severity, a cause, from the same input)
/// was first seen at: the later becomes a symptom explained by the earliest
/// such finding. `is_generic` tells which findings name their failure only
/// in general terms.
pub(crate) fn apply(findings: &mut [Finding], is_generic: &dyn Fn(&Finding) -> bool) {
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
                            && (!is_generic(f)
                                || is_generic(later)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::findings_in_text;
    use coroner_rules::{parse_rule, RuleSet};

    const CHAIN: &str = "\
Traceback (most recent call last):
  File \"/opt/app/store.py\", line 10, in write
    handle.flush()
RuntimeError: store write failed

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File \"/opt/app/train.py\", line 3, in <module>
    save()
  File \"/opt/app/store.py\", line 12, in write
    check()
RuntimeError: store has no space left
";

    fn rule(id: &str, category: &str, generic: bool, pattern: &str) -> coroner_rules::Rule {
        let text = format!(
            "id = \"{id}\"\ntitle = \"t\"\ncategory = \"{category}\"\nseverity = \"error\"\n\
             generic = {generic}\nsupersedes = [\"python-exception\"]\n\
             message = \"m\"\nremediation = [\"r\"]\n\
             [match]\nliterals = [\"{pattern}\"]\nany = ['''{pattern}''']\n\
             [[examples]]\nfires = true\ninput = '''\n{pattern}\n'''\n\
             [[examples]]\nfires = false\ninput = '''\nok\n'''\n"
        );
        parse_rule("x.toml", id, &text).unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// The later exception's finding, after chains are applied with the
    /// first exception's rule marked generic or not.
    fn later_after_chains(first_is_generic: bool) -> Finding {
        // With the built-in rules, as tracebacks are read on real logs.
        let mut rules = crate::test_support::builtin_rules().rules().to_vec();
        rules.push(rule(
            "store-failed",
            "abort",
            first_is_generic,
            "store write failed",
        ));
        rules.push(rule(
            "store-full",
            "disk-full",
            false,
            "store has no space left",
        ));
        let set = RuleSet::new(rules).unwrap_or_else(|e| panic!("{e:?}"));
        let mut findings = findings_in_text(&set, CHAIN);
        apply(&mut findings, &|f| crate::root_cause::is_generic(f, &set));
        findings
            .into_iter()
            .find(|f| f.rule == "store-full")
            .unwrap_or_else(|| panic!("the later exception was not read"))
    }

    #[test]
    fn a_specific_first_exception_explains_the_later_one() {
        let later = later_after_chains(false);
        assert_eq!(later.explained_by.as_deref(), Some("store-failed"));
        assert_eq!(later.role, Role::Symptom);
    }

    #[test]
    fn a_generic_rule_of_any_category_does_not_explain_a_specific_later_one_from_its_file() {
        let later = later_after_chains(true);
        assert_eq!(later.explained_by, None);
        assert_eq!(later.role, Role::Cause);
    }
}
