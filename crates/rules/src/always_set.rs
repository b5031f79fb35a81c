//! Which named captures of a pattern take part in every match of it.
//!
//! A message may only name, outside `[[ ... ]]`, a capture that every
//! match sets: otherwise some match would print the message with a hole.
//! A group inside an alternative, an optional `(...)?` or a `*`
//! repetition may be left out; one reached only through concatenations,
//! repetitions of at least one and groups is always set.

use regex_syntax::hir::{Hir, HirKind};
use std::collections::BTreeSet;

/// The names of the groups of `pattern` that every match sets; empty
/// when the pattern does not parse.
pub(crate) fn always_set(pattern: &str) -> BTreeSet<String> {
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map(|hir| of(&hir))
        .unwrap_or_default()
}

fn of(hir: &Hir) -> BTreeSet<String> {
    match hir.kind() {
        HirKind::Capture(group) => {
            let mut names = of(&group.sub);
            if let Some(name) = &group.name {
                names.insert(name.to_string());
            }
            names
        }
        HirKind::Concat(parts) => parts.iter().flat_map(of).collect(),
        HirKind::Alternation(branches) => {
            let mut sets = branches.iter().map(of);
            let first = sets.next().unwrap_or_default();
            sets.fold(first, |acc, s| acc.intersection(&s).cloned().collect())
        }
        HirKind::Repetition(rep) if rep.min >= 1 => of(&rep.sub),
        _ => BTreeSet::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pattern: &str) -> Vec<String> {
        always_set(pattern).into_iter().collect()
    }

    #[test]
    fn optional_alternative_and_starred_groups_may_be_unset() {
        assert_eq!(names(r"(?P<a>\w+)(?::\s*(?P<b>.*))?"), ["a"]);
        assert_eq!(names(r"(?:x(?P<a>\d)|y(?P<a2>\d))"), Vec::<String>::new());
        assert_eq!(
            names(r"(?:x(?P<a>\d)(?P<c>.)|y(?P<c2>.))"),
            Vec::<String>::new()
        );
        assert_eq!(names(r"(?:(?P<a>\d),)*(?P<b>\d)+"), ["b"]);
        assert_eq!(names(r"((?P<a>\d)(?P<b>\d)?)"), ["a"]);
        assert!(always_set("(unclosed").is_empty());
    }
}
