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
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// `knowledge/cascades.toml`.
const CASCADES: &str = include_str!("../knowledge/cascades.toml");

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

/// The categories that a finding of `category` explains on other ranks by
/// the cascades across ranks.
fn across_ranks(category: Category) -> impl Iterator<Item = Category> {
    cascades()
        .iter()
        .filter(move |c| c.causes.contains(&category))
        .flat_map(|c| c.explains.iter().copied())
}

/// The findings that may still be explained, by category and rule: those
/// of a known rank apart from the others, which no cascade across ranks
/// explains. A finding leaves when it is explained, so each is marked
/// once and every pass looks only at what it may explain.
#[derive(Default)]
struct Unexplained {
    by_category: HashMap<Category, HashMap<String, Waiting>>,
}

#[derive(Default)]
struct Waiting {
    ranked: Vec<(usize, u32)>,
    unranked: Vec<usize>,
}

impl Unexplained {
    fn new(findings: &[Finding]) -> Self {
        let mut all = Unexplained::default();
        for (i, f) in findings.iter().enumerate() {
            if f.explained_by.is_some() || f.role == Role::Context {
                continue;
            }
            let waiting = all
                .by_category
                .entry(f.category)
                .or_default()
                .entry(f.rule.clone())
                .or_default();
            match f.rank {
                Some(rank) => waiting.ranked.push((i, rank)),
                None => waiting.unranked.push(i),
            }
        }
        all
    }

    /// Takes every finding of `category` but those of `rule`.
    fn take_all(&mut self, category: Category, rule: &str, into: &mut Vec<usize>) {
        let Some(rules) = self.by_category.get_mut(&category) else {
            return;
        };
        for (_, waiting) in rules.iter_mut().filter(|(r, _)| r.as_str() != rule) {
            into.extend(waiting.ranked.drain(..).map(|(i, _)| i));
            into.append(&mut waiting.unranked);
        }
    }

    /// Takes the findings of `category` on a known rank other than `rank`,
    /// but those of `rule`.
    fn take_other_ranks(
        &mut self,
        category: Category,
        rule: &str,
        rank: u32,
        into: &mut Vec<usize>,
    ) {
        let Some(rules) = self.by_category.get_mut(&category) else {
            return;
        };
        for (_, waiting) in rules.iter_mut().filter(|(r, _)| r.as_str() != rule) {
            waiting.ranked.retain(|&(i, r)| {
                let other = r != rank;
                if other {
                    into.push(i);
                }
                !other
            });
        }
    }
}

/// Marks every finding that a more fundamental finding explains: its role
/// becomes [`Role::Symptom`] and `explained_by` names the explaining rule.
/// Explaining findings are taken most severe first, then in order of
/// appearance; one that is itself explained explains nothing. A finding
/// explains those of the categories its rule `explains` and, by the
/// cascades across ranks, those of other categories on other known ranks.
pub(crate) fn apply(findings: &mut [Finding], rules: &RuleSet) {
    let mut order: Vec<usize> = (0..findings.len())
        .filter(|&i| findings[i].role == Role::Cause && findings[i].severity >= Severity::Error)
        .collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(findings[i].severity), i));
    let mut waiting = Unexplained::new(findings);
    let mut explained = Vec::new();
    for at in order {
        if findings[at].explained_by.is_some() {
            continue;
        }
        let (rule, category, rank) = {
            let f = &findings[at];
            (f.rule.clone(), f.category, f.rank)
        };
        let own: &[Category] = rules.get(&rule).map_or(&[], |r| &r.explains);
        for &c in own {
            waiting.take_all(c, &rule, &mut explained);
        }
        if let Some(rank) = rank {
            for c in across_ranks(category).filter(|c| !own.contains(c)) {
                waiting.take_other_ranks(c, &rule, rank, &mut explained);
            }
        }
        for i in explained.drain(..) {
            let other = &mut findings[i];
            other.role = Role::Symptom;
            other.explained_by = Some(rule.clone());
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
/// that replaces it keeps the matches of other lines and stays. The
/// findings are looked up by rule and line, so the work grows with the
/// findings, not with their pairs.
pub(crate) fn drop_superseded(findings: &mut Vec<Finding>, rules: &RuleSet) {
    let fallback = |rule: &str| rules.get(rule).is_some_and(|r| r.fallback);
    let mut by_rule_line: BTreeMap<(&str, &str, u64), Vec<usize>> = BTreeMap::new();
    let mut by_place: HashMap<(&str, u64, u64), Vec<usize>> = HashMap::new();
    for (i, f) in findings.iter().enumerate() {
        let at = &f.first_seen;
        by_rule_line
            .entry((f.rule.as_str(), at.input.as_str(), at.line))
            .or_default()
            .push(i);
        by_place
            .entry((at.input.as_str(), at.line, at.byte_offset))
            .or_default()
            .push(i);
    }
    let mut dropped = vec![false; findings.len()];
    for winner in findings.iter() {
        let Some(rule) = rules.get(&winner.rule) else {
            continue;
        };
        let at = &winner.first_seen;
        let last = at.line + u64::from(rule.window());
        for victim_rule in rule.supersedes.iter().filter(|r| **r != winner.rule) {
            let window = (victim_rule.as_str(), at.input.as_str(), at.line)
                ..=(victim_rule.as_str(), at.input.as_str(), last);
            for &v in by_rule_line.range(window).flat_map(|(_, v)| v) {
                if winner.count >= findings[v].count {
                    dropped[v] = true;
                }
            }
        }
    }
    for same_place in by_place.values().filter(|v| v.len() > 1) {
        for &v in same_place {
            let victim = &findings[v];
            if dropped[v] || !fallback(&victim.rule) {
                continue;
            }
            dropped[v] = same_place.iter().map(|&w| &findings[w]).any(|winner| {
                winner.count >= victim.count
                    && winner.rule != victim.rule
                    && winner.first_seen == victim.first_seen
                    && !fallback(&winner.rule)
                    && winner.role != Role::Context
            });
        }
    }
    let mut dropped = dropped.into_iter();
    findings.retain(|_| !dropped.next().unwrap_or(false));
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
