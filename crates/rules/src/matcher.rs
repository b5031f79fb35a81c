//! Matching rules against a stream of lines.
//!
//! Most lines of a training log match nothing, so a line reaches a rule's
//! regexes only if one Aho-Corasick pass over it found one of the rule's
//! literals (ASCII case ignored). A rule with a `window` leaves a pending
//! match open at its anchor line and completes it when its remaining `all`
//! patterns have matched within the window.

use crate::prefilter::Prefilter;
use crate::rule::{merge_captures as merge, Captures, LazyRegex, Rule};
use crate::set::RuleSet;
use coroner_model::InputKind;

/// One line as the matcher sees it.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// 1-based line number in its input.
    pub number: u64,
    /// Byte offset of the line's start in its input.
    pub offset: u64,
    /// The text rules match against (prefixes such as `[rank3]:` removed).
    pub text: &'a str,
    /// The text shown as evidence; `text` is a suffix of it.
    pub shown: &'a str,
    /// Rank the line belongs to, when known.
    pub rank: Option<u32>,
}

/// A line that took part in a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedLine {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// The shown text of the line.
    pub text: String,
    /// Byte range of the matched part within `text`.
    pub span: Option<(usize, usize)>,
}

/// A complete match of one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Index of the rule in its [`RuleSet`].
    pub rule: usize,
    /// Named captures, in pattern order, first value of each name.
    pub captures: Vec<(String, String)>,
    /// The anchor line first, then the lines that completed a window.
    pub lines: Vec<MatchedLine>,
    /// Rank of the anchor line, when known.
    pub line_rank: Option<u32>,
}

/// Pending windowed match.
#[derive(Debug)]
struct Pending {
    rule: usize,
    last_line: u64,
    remaining: Vec<usize>,
    found: Match,
}

/// Feeds lines of one input through a [`RuleSet`].
#[derive(Debug)]
pub struct Scanner<'s> {
    set: &'s RuleSet,
    prefilter: &'s Prefilter,
    pending: Vec<Pending>,
    hit: Vec<bool>,
    candidates: Vec<usize>,
    /// The last line fed and the rules anchored on it, which a match of
    /// that line joined with the next must not repeat.
    anchored_on: (u64, Vec<usize>),
}

/// A rule may hold at most this many open windows at once; an anchor seen
/// while that many are open is ignored.
const MAX_PENDING_PER_RULE: usize = 4;

impl<'s> Scanner<'s> {
    /// A scanner with no open windows, for an input of `kind`: only the
    /// rules that apply to that kind can match.
    pub fn new(set: &'s RuleSet, kind: InputKind) -> Scanner<'s> {
        Scanner {
            set,
            prefilter: set.prefilter(kind),
            pending: Vec::new(),
            hit: vec![false; set.rules().len()],
            candidates: Vec::new(),
            anchored_on: (0, Vec::new()),
        }
    }

    /// Whether any literal of any rule occurs in `text`. Lines for which
    /// this is false and no window is open can skip [`Scanner::feed`].
    pub fn is_quiet(&self, text: &str) -> bool {
        self.pending.is_empty() && !self.prefilter.any(text.as_bytes())
    }

    /// How many block-wide fingerprint searches there are.
    pub fn searches(&self) -> usize {
        self.prefilter.searches().len()
    }

    /// Start of the first rule literal that search `i` finds at or after
    /// `from` in a run of lines: `text` as is, `lowered` the same text
    /// ASCII-lowercased. Where no search finds one, no line from `from` on
    /// can match any rule, unless a window is open
    /// ([`Scanner::has_pending`]).
    pub fn next_literal(
        &self,
        i: usize,
        text: &[u8],
        lowered: &[u8],
        from: usize,
    ) -> Option<usize> {
        self.prefilter.searches().get(i)?.find(text, lowered, from)
    }

    /// Whether a windowed match is waiting for more lines: then every line
    /// must be fed.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Matches one line; complete matches are appended to `out`.
    pub fn feed(&mut self, line: &Line<'_>, out: &mut Vec<Match>) {
        self.advance_pending(line, out);
        let mut candidates = std::mem::take(&mut self.candidates);
        self.prefilter
            .candidates(line.text, &mut self.hit, &mut candidates);
        if candidates.is_empty() {
            self.candidates = candidates;
            return;
        }
        let rules = self.set.rules();
        let mut anchored: Vec<(usize, Match, Vec<usize>)> = Vec::new();
        for &r in &candidates {
            let Some(rule) = rules.get(r) else { continue };
            if let Some(found) = anchor(rule, r, line) {
                anchored.push(found);
            }
        }
        self.candidates = candidates;
        self.anchored_on.0 = line.number;
        self.anchored_on.1.clear();
        self.anchored_on.1.extend(anchored.iter().map(|a| a.0));
        self.drop_superseded(&mut anchored);
        for (r, found, remaining) in anchored {
            if remaining.is_empty() {
                out.push(found);
            } else if self.pending.iter().filter(|p| p.rule == r).count() < MAX_PENDING_PER_RULE {
                self.pending.push(Pending {
                    rule: r,
                    last_line: line.number + u64::from(rules.get(r).map_or(0, Rule::window)),
                    remaining,
                    found,
                });
            }
        }
    }

    /// Matches `first` and `next`, consecutive lines, as one: a message
    /// that a terminal, a copy-paste or the program itself broke across
    /// two lines (`Resource exhausted: Out` / `of memory while trying to
    /// allocate ...`, `AssertionError:` / `The NVIDIA driver ...`). Only a
    /// match that spans the break counts, of a rule without a window that
    /// is not a fallback and matches neither line alone (`first` must be
    /// the last line fed); it is anchored on `first`, with both lines as
    /// evidence.
    pub fn feed_joined(&mut self, first: &Line<'_>, next: &Line<'_>, out: &mut Vec<Match>) {
        let head = first.text.trim_end();
        let tail = next.text.trim_start();
        if head.is_empty() || tail.is_empty() {
            return;
        }
        let joined = format!("{head} {tail}");
        let mut candidates = std::mem::take(&mut self.candidates);
        self.prefilter
            .candidates(&joined, &mut self.hit, &mut candidates);
        let line = Line {
            number: first.number,
            offset: first.offset,
            text: &joined,
            shown: &joined,
            rank: first.rank,
        };
        let already = (self.anchored_on.0 == first.number).then_some(&self.anchored_on.1);
        let rules = self.set.rules();
        let mut anchored: Vec<(usize, Match, Vec<usize>)> = Vec::new();
        for &r in &candidates {
            let Some(rule) = rules.get(r) else { continue };
            if rule.fallback || rule.window() > 0 || already.is_some_and(|a| a.contains(&r)) {
                continue;
            }
            let Some((index, mut found, remaining)) = anchor(rule, r, &line) else {
                continue;
            };
            let spans_break = found
                .lines
                .first()
                .and_then(|l| l.span)
                .is_some_and(|(start, end)| start < head.len() && end > head.len() + 1);
            // The rule must need both parts: a match of the next line
            // alone is that line's own.
            if !remaining.is_empty() || !spans_break || anchor(rule, r, next).is_some() {
                continue;
            }
            found.lines = vec![whole_line(first), whole_line(next)];
            anchored.push((index, found, remaining));
        }
        self.candidates = candidates;
        self.drop_superseded(&mut anchored);
        out.extend(anchored.into_iter().map(|(_, found, _)| found));
    }

    /// Feeds a line only to open windows: no new match starts on it. For
    /// the lines past the end of a part of an input, whose own scan starts
    /// the matches anchored there.
    pub fn feed_open_windows(&mut self, line: &Line<'_>, out: &mut Vec<Match>) {
        self.advance_pending(line, out);
    }

    /// Drops open windows; incomplete matches are not reported.
    pub fn finish(&mut self) {
        self.pending.clear();
    }

    fn advance_pending(&mut self, line: &Line<'_>, out: &mut Vec<Match>) {
        if self.pending.is_empty() {
            return;
        }
        let rules = self.set.rules();
        let mut i = 0;
        while let Some(p) = self.pending.get_mut(i) {
            let Some(rule) = rules.get(p.rule).filter(|_| line.number <= p.last_line) else {
                self.pending.swap_remove(i);
                continue;
            };
            let all = &rule.pattern.all;
            let mut matched_here = None;
            p.remaining
                .retain(|&k| match all.get(k).and_then(|re| capture(re, line)) {
                    Some((caps, span)) => {
                        merge(&mut p.found.captures, caps);
                        matched_here.get_or_insert(span);
                        false
                    }
                    None => true,
                });
            if let Some(span) = matched_here {
                p.found.lines.push(matched_line(line, span));
            }
            if p.remaining.is_empty() {
                let found = self.pending.swap_remove(i).found;
                if rule.conditions_hold(&found.captures) {
                    out.push(found);
                }
            } else {
                i += 1;
            }
        }
    }

    fn drop_superseded(&self, anchored: &mut Vec<(usize, Match, Vec<usize>)>) {
        if anchored.len() < 2 {
            return;
        }
        // Only matches complete on this line suppress others: a window
        // that may never complete must not hide another rule's match.
        let rules = self.set.rules();
        let complete: Vec<usize> = anchored
            .iter()
            .filter(|a| a.2.is_empty())
            .map(|a| a.0)
            .collect();
        let fallback = |r: usize| rules.get(r).is_some_and(|rule| rule.fallback);
        let any_specific = complete.iter().any(|&r| !fallback(r));
        anchored.retain(|(r, _, _)| {
            let superseded = complete
                .iter()
                .any(|&o| o != *r && self.set.supersedes.get(o).is_some_and(|s| s.contains(r)));
            !(superseded || (fallback(*r) && any_specific))
        });
    }
}

/// Tries `rule` as an anchor on `line`: the match so far and the indices
/// of `all` patterns still to find.
fn anchor(rule: &Rule, index: usize, line: &Line<'_>) -> Option<(usize, Match, Vec<usize>)> {
    let p = &rule.pattern;
    if p.not
        .iter()
        .filter_map(LazyRegex::get)
        .any(|re| re.is_match(line.text))
    {
        return None;
    }
    let mut remaining = Vec::new();
    let (mut captures, span, all_start) = if p.any.is_empty() {
        let (caps, s) = capture(p.all.first()?, line)?;
        (caps, s, 1)
    } else {
        let (caps, s) = p.any.iter().find_map(|re| capture(re, line))?;
        (caps, s, 0)
    };
    for (k, re) in p.all.iter().enumerate().skip(all_start) {
        match capture(re, line) {
            Some((caps, _)) => merge(&mut captures, caps),
            None if p.window > 0 => remaining.push(k),
            None => return None,
        }
    }
    if remaining.is_empty() && !rule.conditions_hold(&captures) {
        return None;
    }
    let lines = vec![matched_line(line, span)];
    Some((
        index,
        Match {
            rule: index,
            captures,
            lines,
            line_rank: line.rank,
        },
        remaining,
    ))
}

fn capture(re: &LazyRegex, line: &Line<'_>) -> Option<(Captures, (usize, usize))> {
    re.captures(line.text)
}

/// `line` as evidence, without a span.
fn whole_line(line: &Line<'_>) -> MatchedLine {
    MatchedLine {
        number: line.number,
        offset: line.offset,
        text: line.shown.to_owned(),
        span: None,
    }
}

fn matched_line(line: &Line<'_>, span: (usize, usize)) -> MatchedLine {
    let shift = line.shown.len().saturating_sub(line.text.len());
    let suffix = line.shown.ends_with(line.text);
    MatchedLine {
        number: line.number,
        offset: line.offset,
        text: line.shown.to_owned(),
        span: suffix.then_some((span.0 + shift, span.1 + shift)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::parse_rule;

    fn rule(id: &str, body: &str) -> Rule {
        let text = format!(
            "id = \"{id}\"\ntitle = \"t\"\ncategory = \"python-error\"\nseverity = \"error\"\n{body}\n\
             [[examples]]\nfires = true\ninput = \"x\"\n[[examples]]\nfires = false\ninput = \"y\"\n"
        );
        parse_rule("t.toml", id, &text).unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// (rule id, anchor line, captures) of every match.
    type Found = (String, u64, Captures);

    fn scan(set: &RuleSet, text: &str) -> Vec<Found> {
        let mut scanner = Scanner::new(set, InputKind::Log);
        let mut out = Vec::new();
        for (i, t) in text.lines().enumerate() {
            let line = Line {
                number: i as u64 + 1,
                offset: 0,
                text: t,
                shown: t,
                rank: None,
            };
            scanner.feed(&line, &mut out);
        }
        out.into_iter()
            .map(|m| {
                (
                    set.rules()[m.rule].id.clone(),
                    m.lines[0].number,
                    m.captures,
                )
            })
            .collect()
    }

    #[test]
    fn literals_gate_regexes_case_insensitively() {
        let set = RuleSet::new(vec![rule(
            "boom",
            "message = \"m\"\n[match]\nliterals = [\"BOOM\"]\nany = ['(?i)boom (?P<x>\\d+)']",
        )])
        .unwrap_or_else(|e| panic!("{e:?}"));
        let got = scan(&set, "quiet\nboom 7\nBoom 8");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].2, vec![("x".to_owned(), "7".to_owned())]);
        assert!(set_is_quiet(&set, "nothing here"));
    }

    fn set_is_quiet(set: &RuleSet, text: &str) -> bool {
        Scanner::new(set, InputKind::Log).is_quiet(text)
    }

    #[test]
    fn windows_complete_on_later_lines_and_expire() {
        let set = RuleSet::new(vec![rule(
            "block",
            "message = \"m\"\n[match]\nliterals = [\"Root Cause\"]\nany = ['Root Cause']\n\
             all = ['rank\\s*:\\s*(?P<rank>\\d+)', 'exitcode\\s*:\\s*(?P<code>-?\\d+)']\nwindow = 3",
        )])
        .unwrap_or_else(|e| panic!("{e:?}"));
        let got = scan(&set, "Root Cause\n[0]:\n  rank : 1\n  exitcode : -9\n");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, 1);
        assert_eq!(
            got[0].2,
            vec![
                ("rank".to_owned(), "1".to_owned()),
                ("code".to_owned(), "-9".to_owned())
            ]
        );
        let expired = scan(&set, "Root Cause\na\nb\nc\n  rank : 1\n  exitcode : -9\n");
        assert!(expired.is_empty());
    }

    #[test]
    fn supersedes_and_fallback_drop_weaker_matches_on_the_same_line() {
        let generic = rule(
            "generic",
            "message = \"m\"\nfallback = true\n[match]\nliterals = [\"Error\"]\nany = ['\\w+Error']",
        );
        let wide = rule(
            "wide",
            "message = \"m\"\n[match]\nliterals = [\"CUDA\"]\nany = ['CUDA']",
        );
        let narrow = rule(
            "narrow",
            "message = \"m\"\nsupersedes = [\"wide\"]\n[match]\nliterals = [\"CUDA error\"]\nany = ['CUDA error']",
        );
        let set = RuleSet::new(vec![generic, wide, narrow]).unwrap_or_else(|e| panic!("{e:?}"));
        let ids: Vec<String> = scan(&set, "RuntimeError: CUDA error: x\nValueError: y\nCUDA z")
            .into_iter()
            .map(|m| format!("{}@{}", m.0, m.1))
            .collect();
        assert_eq!(ids, ["narrow@1", "generic@2", "wide@3"]);
    }

    #[test]
    fn a_message_broken_across_two_lines_matches_once_joined() {
        let generic = rule(
            "generic",
            "message = \"m\"\nfallback = true\n[match]\nliterals = [\"Error\"]\nany = ['^\\w+Error: .*']",
        );
        let oom = rule(
            "oom",
            "message = \"m\"\n[match]\nliterals = [\"Resource exhausted\"]\nany = ['Resource exhausted: Out of memory while trying to allocate (?P<bytes>\\d+)']",
        );
        let head = rule(
            "head",
            "message = \"m\"\n[match]\nliterals = [\"exhausted\"]\nany = ['exhausted']",
        );
        let set = RuleSet::new(vec![generic, oom, head]).unwrap_or_else(|e| panic!("{e:?}"));
        let lines = [
            "RuntimeError: Resource exhausted: Out ",
            "of memory while trying to allocate 5520758552 bytes.",
        ];
        let line = |i: usize| Line {
            number: i as u64 + 1,
            offset: 0,
            text: lines[i],
            shown: lines[i],
            rank: None,
        };
        let mut scanner = Scanner::new(&set, InputKind::Log);
        let mut out = Vec::new();
        scanner.feed(&line(0), &mut out);
        scanner.feed(&line(1), &mut out);
        scanner.feed_joined(&line(0), &line(1), &mut out);
        let found: Vec<(String, u64, usize)> = out
            .iter()
            .map(|m| {
                (
                    set.rules()[m.rule].id.clone(),
                    m.lines[0].number,
                    m.lines.len(),
                )
            })
            .collect();
        // The joined text repeats neither the fallback nor the rule that
        // matched the first line alone.
        assert_eq!(found, [("head".to_owned(), 1, 1), ("oom".to_owned(), 1, 2)]);
        assert_eq!(
            out[1].captures,
            vec![("bytes".to_owned(), "5520758552".to_owned())]
        );
    }

    #[test]
    fn an_unfinished_window_does_not_hide_another_rule() {
        let generic = rule(
            "generic",
            "message = \"m\"\nfallback = true\n[match]\nliterals = [\"Error\"]\nany = ['\\w+Error']",
        );
        let windowed = rule(
            "windowed",
            "message = \"m\"\n[match]\nliterals = [\"Error\"]\nany = ['KeyError']\nall = ['never']\nwindow = 2",
        );
        let set = RuleSet::new(vec![generic, windowed]).unwrap_or_else(|e| panic!("{e:?}"));
        let got = scan(&set, "KeyError: 'x'\n");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "generic");
    }
}
