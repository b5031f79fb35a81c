//! Lines that look like failures but that no rule read.
//!
//! A line the scan looked at (it held a rule's literal) that matched no
//! rule, and holds a word such as `error` or `failed`, is counted under
//! its template ([`coroner_logs::suspicious_template`]). When the incident
//! has no root cause, the report shows the most frequent templates: where
//! to look when coroner cannot say.

use coroner_model::{inert, inert_capped, Evidence, UnreadLines};
use std::collections::HashMap;

/// Templates kept per table; lines of further templates are not counted.
const MAX_TEMPLATES: usize = 512;
/// Templates shown in a report.
pub(crate) const SHOWN: usize = 8;
/// Longest line kept as the example, in characters.
const MAX_TEXT: usize = 300;

#[derive(Debug, Default)]
pub(crate) struct Unread {
    groups: Vec<Group>,
    index: HashMap<String, usize>,
}

#[derive(Debug)]
struct Group {
    template: String,
    count: u64,
    first: Evidence,
    /// (input position, line): where it was first seen.
    order: (usize, u64),
}

impl Unread {
    /// Counts line `line` of input `input` (at position `position`) under
    /// its template, when it looks like a failure.
    pub(crate) fn note(
        &mut self,
        text: &str,
        shown: &str,
        input: &str,
        position: usize,
        line: u64,
    ) {
        let Some(template) = coroner_logs::suspicious_template(text) else {
            return;
        };
        if let Some(&at) = self.index.get(&template) {
            if let Some(group) = self.groups.get_mut(at) {
                group.count += 1;
            }
            return;
        }
        if self.groups.len() >= MAX_TEMPLATES {
            return;
        }
        self.index.insert(template.clone(), self.groups.len());
        self.groups.push(Group {
            template: inert(&template).into_owned(),
            count: 1,
            first: Evidence {
                input: input.to_owned(),
                line,
                text: inert_capped(shown, MAX_TEXT),
                context: None,
            },
            order: (position, line),
        });
    }

    /// Replaces every line number `n` with `to(n)`.
    pub(crate) fn remap_lines(&mut self, to: impl Fn(u64) -> u64) {
        for g in &mut self.groups {
            g.first.line = to(g.first.line);
            g.order.1 = to(g.order.1);
        }
    }

    /// Adds the counts of `other`, keeping the earlier first line.
    pub(crate) fn merge(&mut self, other: Unread) {
        for g in other.groups {
            match self.index.get(&g.template) {
                Some(&at) => {
                    if let Some(mine) = self.groups.get_mut(at) {
                        mine.count += g.count;
                        if g.order < mine.order {
                            mine.order = g.order;
                            mine.first = g.first;
                        }
                    }
                }
                None if self.groups.len() < MAX_TEMPLATES => {
                    self.index.insert(g.template.clone(), self.groups.len());
                    self.groups.push(g);
                }
                None => {}
            }
        }
    }

    /// The most frequent templates, the earliest first among equals.
    pub(crate) fn top(mut self, n: usize) -> Vec<UnreadLines> {
        self.groups
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.order.cmp(&b.order)));
        self.groups
            .into_iter()
            .take(n)
            .map(|g| UnreadLines {
                template: g.template,
                count: g.count,
                first: g.first,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_group_by_template_most_frequent_first() {
        let mut a = Unread::default();
        a.note(
            "rank 3 failed to connect",
            "rank 3 failed to connect",
            "a.log",
            0,
            5,
        );
        a.note("step 1 loss 2.0", "step 1 loss 2.0", "a.log", 0, 6);
        let mut b = Unread::default();
        b.note(
            "rank 7 failed to connect",
            "rank 7 failed to connect",
            "b.log",
            1,
            2,
        );
        b.note("fatal: bad thing", "fatal: bad thing", "b.log", 1, 3);
        a.merge(b);
        let top = a.top(SHOWN);
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].template, "rank <*> failed to connect");
        assert_eq!(top[0].count, 2);
        assert_eq!(
            (top[0].first.input.as_str(), top[0].first.line),
            ("a.log", 5)
        );
        assert_eq!(top[1].template, "fatal: bad thing");
    }
}
