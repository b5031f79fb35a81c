//! Cascades: a finding that explains others.
//!
//! A rule may list the categories of failures that are typically its
//! consequences (`explains`): a GPU exception recorded in a GPU core dump
//! explains the host process's abort and the log's `illegal memory access`
//! lines. When such a finding is in the incident, the findings it explains
//! become its symptoms, so the root cause is the first failure rather than
//! the loudest echo. The knowledge is data, in the rule files (`explains`)
//! and in `knowledge/cascades.toml` (which failures on one rank take the
//! other ranks down); this module only applies it.

use coroner_model::{Category, Finding, Role, Severity};
use coroner_rules::RuleSet;
use serde::Deserialize;
use std::sync::OnceLock;

/// `knowledge/cascades.toml`.
const CASCADES: &str = include_str!("../../../knowledge/cascades.toml");

/// One `[[cascade]]`: a finding of one of `causes` on one rank explains
/// findings of `explains` on other ranks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cascade {
    /// Why the cascade happens; documentation in the file.
    #[serde(rename = "why")]
    _why: String,
    causes: Vec<Category>,
    explains: Vec<Category>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CascadeFile {
    cascade: Vec<Cascade>,
}

/// The cascades across ranks; a broken file (caught by the tests) means
/// none.
fn cascades() -> &'static [Cascade] {
    static PARSED: OnceLock<Vec<Cascade>> = OnceLock::new();
    PARSED.get_or_init(|| {
        toml::from_str::<CascadeFile>(CASCADES)
            .map(|f| f.cascade)
            .unwrap_or_default()
    })
}

/// Whether a finding of `category` on `rank` explains `effect` by the
/// cascades across ranks: both ranks known and different.
fn across_ranks(category: Category, rank: Option<u32>, effect: &Finding) -> bool {
    match (rank, effect.rank) {
        (Some(a), Some(b)) if a != b => cascades()
            .iter()
            .any(|c| c.causes.contains(&category) && c.explains.contains(&effect.category)),
        _ => false,
    }
}

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
        let (rule, category, rank) = {
            let f = &findings[at];
            (f.rule.clone(), f.category, f.rank)
        };
        let own: &[Category] = rules.get(&rule).map_or(&[], |r| &r.explains);
        for (i, other) in findings.iter_mut().enumerate() {
            if i != at
                && other.rule != rule
                && other.explained_by.is_none()
                && other.role != Role::Context
                && (own.contains(&other.category) || across_ranks(category, rank, other))
            {
                other.role = Role::Symptom;
                other.explained_by = Some(rule.clone());
            }
        }
    }
}

/// Drops the findings that a finding of a superseding rule replaces when
/// both were first seen on the same line (or the victim within the
/// winner's window: a block that a windowed rule reads whole replaces the
/// readings of its single lines), and the findings of a `fallback`
/// rule first seen on the same line as another rule's that names a
/// failure (not a hint that only adds context). The scanner applies
/// `supersedes` and `fallback` line by line; a rule whose window completes
/// on a later line cannot suppress a match that was already recorded, so
/// this finishes the job. A dropped finding with more matches than the one
/// that replaces it keeps the matches of other lines and stays.
pub(crate) fn drop_superseded(findings: &mut Vec<Finding>, rules: &RuleSet) {
    let fallback = |rule: &str| rules.get(rule).is_some_and(|r| r.fallback);
    let superseded: Vec<usize> = findings
        .iter()
        .enumerate()
        .filter(|(_, victim)| {
            findings.iter().any(|winner| {
                let winner_rule = rules.get(&winner.rule);
                let same_line = winner.first_seen == victim.first_seen;
                // A windowed rule's match covers the lines of its window.
                let in_window = winner.first_seen.input == victim.first_seen.input
                    && (winner.first_seen.line
                        ..=winner.first_seen.line
                            + u64::from(winner_rule.map_or(0, |r| r.window())))
                        .contains(&victim.first_seen.line);
                winner.count >= victim.count
                    && winner.rule != victim.rule
                    && ((in_window
                        && winner_rule.is_some_and(|r| r.supersedes.contains(&victim.rule)))
                        || (same_line
                            && fallback(&victim.rule)
                            && !fallback(&winner.rule)
                            && winner.role != Role::Context))
            })
        })
        .map(|(i, _)| i)
        .collect();
    for i in superseded.into_iter().rev() {
        findings.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cascade_file_parses_and_names_categories() {
        let parsed: CascadeFile = toml::from_str(CASCADES).unwrap_or_else(|e| panic!("{e}"));
        assert!(!parsed.cascade.is_empty());
        assert!(parsed
            .cascade
            .iter()
            .all(|c| !c.causes.is_empty() && !c.explains.is_empty()));
    }
}
