//! The literal prefilter: which lines can match which rules.
//!
//! One Aho-Corasick automaton holds the literals matched ignoring ASCII
//! case, another those matched exactly. Over a whole block of lines the
//! automata find the next line holding any literal; on that line they list
//! the rules whose literals occur, and only those run their regexes.

use crate::rule::Rule;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

/// The literal prefilter of a rule set: one Aho-Corasick automaton for
/// the literals matched ignoring ASCII case, one for those matched exactly.
#[derive(Debug)]
pub(crate) struct Prefilter {
    groups: Vec<LiteralGroup>,
}

/// Literals searched with one automaton.
#[derive(Debug)]
struct LiteralGroup {
    automaton: AhoCorasick,
    /// For each literal pattern id, the rules that listed it.
    owners: Vec<Vec<usize>>,
}

impl LiteralGroup {
    fn new(rules: &[Rule], exact: bool) -> Option<LiteralGroup> {
        let mut literals: Vec<String> = Vec::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if rule.pattern.literals_match_case != exact {
                continue;
            }
            for lit in rule.literals() {
                let lit = if exact {
                    lit.clone()
                } else {
                    lit.to_ascii_lowercase()
                };
                match literals.iter().position(|l| *l == lit) {
                    Some(p) => owners[p].push(i),
                    None => {
                        literals.push(lit);
                        owners.push(vec![i]);
                    }
                }
            }
        }
        if literals.is_empty() {
            return None;
        }
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(!exact)
            .kind(Some(AhoCorasickKind::DFA))
            .match_kind(MatchKind::Standard)
            .build(&literals)
            .ok()?;
        Some(LiteralGroup { automaton, owners })
    }
}

impl Prefilter {
    pub(crate) fn new(rules: &[Rule]) -> Prefilter {
        let groups = [false, true]
            .into_iter()
            .filter_map(|exact| LiteralGroup::new(rules, exact))
            .collect();
        Prefilter { groups }
    }

    /// Offset of the first literal in `haystack` (any number of lines).
    pub(crate) fn first(&self, haystack: &[u8]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for g in &self.groups {
            let end = best.unwrap_or(haystack.len());
            let input = aho_corasick::Input::new(haystack).range(..end);
            if let Some(m) = g.automaton.find(input) {
                best = Some(m.start());
            }
        }
        best
    }

    /// Lists in `list` (sorted) every rule one of whose literals occurs in
    /// `text`; `hit` is scratch space, all false on entry and exit.
    pub(crate) fn candidates(&self, text: &str, hit: &mut [bool], list: &mut Vec<usize>) {
        list.clear();
        for group in &self.groups {
            for m in group.automaton.find_overlapping_iter(text) {
                for &r in &group.owners[m.pattern().as_usize()] {
                    if !hit[r] {
                        hit[r] = true;
                        list.push(r);
                    }
                }
            }
        }
        for &r in list.iter() {
            hit[r] = false;
        }
        list.sort_unstable();
    }

    /// Whether any literal occurs in `text`.
    pub(crate) fn any(&self, text: &[u8]) -> bool {
        self.groups.iter().any(|g| g.automaton.is_match(text))
    }
}
