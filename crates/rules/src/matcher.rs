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
use coroner_model::{InputKind, Role};

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

/// Characters a line has at least when a terminal or a paste wrapped it
/// at a fixed width (80 columns or more); a shorter line ended where its
/// program ended it.
pub const WRAP_WIDTH: usize = 80;

/// Whether `shown` (a whole line) is as wide as a hard wrap leaves a line.
pub fn is_hard_wrapped(shown: &str) -> bool {
    // Bytes are at least as many as characters: most lines are ruled out
    // without counting.
    shown.len() >= WRAP_WIDTH && shown.chars().count() >= WRAP_WIDTH
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
    /// The head line of the run of lines last matched joined, and the
    /// rules that matched it: a longer run must not repeat them.
    joined: (u64, Vec<usize>),
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
            joined: (0, Vec::new()),
        }
    }

    /// Whether any literal of any rule occurs in `text`. Lines for which
    /// this is false and no window is open can skip [`Scanner::feed`].
    pub fn is_quiet(&self, text: &str) -> bool {
        self.pending.is_empty() && !self.holds_literal(text)
    }

    /// Whether `text` holds a rule's literal.
    pub fn holds_literal(&self, text: &str) -> bool {
        self.prefilter.any(text.as_bytes())
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

    /// Matches a run of consecutive lines as one message: a message that a
    /// terminal, a copy-paste or the program itself broke across lines
    /// (`Resource exhausted: Out` / `of memory while trying to allocate
    /// ...`, `AssertionError:` / `The NVIDIA driver ...`, a `RuntimeError:`
    /// whose text goes on for several lines). `run` is the head line and
    /// the lines that continue it so far, the last one new; each line of it
    /// was fed alone before. Only a match that reaches the new line and
    /// starts before it counts, of a rule without a window that is not a
    /// fallback, that matches no line of the run alone and that a shorter
    /// part of the run did not already give; it is anchored on the head,
    /// with the lines as evidence.
    pub fn feed_joined(&mut self, run: &[Line<'_>], out: &mut Vec<Match>) {
        let Some(head) = run.first().filter(|_| run.len() >= 2) else {
            return;
        };
        if self.joined.0 != head.number {
            self.joined = (head.number, Vec::new());
        }
        let mut joined = String::new();
        let mut last_start = 0;
        for (i, line) in run.iter().enumerate() {
            let part = if i == 0 {
                line.text.trim_end()
            } else {
                line.text.trim()
            };
            if part.is_empty() {
                return;
            }
            if i > 0 {
                joined.push(' ');
            }
            last_start = joined.len();
            joined.push_str(part);
        }
        // A break inside a word (`cudaMalloc fail` / `ed: out of memory`,
        // a hard wrap at a fixed width) is also read without the space.
        let tail_starts_word = joined
            .get(last_start..)
            .and_then(|t| t.chars().next())
            .is_some_and(|c| c.is_ascii_lowercase());
        let head_ends_word = joined
            .get(..last_start.saturating_sub(1))
            .and_then(|h| h.chars().next_back())
            .is_some_and(|c| c.is_ascii_alphabetic());
        // So is any break after a line cut at a wrap width mid-word
        // (`both on CU` / `DA device`, `block: [420,` / `0,0]`).
        let cut_mid_word = run.len() >= 2
            && run.get(run.len() - 2).is_some_and(|l| {
                is_hard_wrapped(l.shown) && !l.shown.ends_with(char::is_whitespace)
            })
            && run
                .last()
                .is_some_and(|l| !l.text.starts_with(char::is_whitespace));
        let mut variants = Vec::with_capacity(2);
        if (tail_starts_word && head_ends_word) || cut_mid_word {
            let mut unspaced = joined.clone();
            unspaced.remove(last_start - 1);
            variants.push((joined, last_start, 1));
            variants.push((unspaced, last_start - 1, 0));
        } else {
            variants.push((joined, last_start, 1));
        }
        let mut anchored: Vec<(usize, Match, Vec<usize>)> = Vec::new();
        for (joined, last_start, gap) in &variants {
            self.match_joined(run, joined, *last_start, *gap, &mut anchored);
        }
        self.drop_superseded(&mut anchored);
        self.joined.1.extend(anchored.iter().map(|a| a.0));
        out.extend(anchored.into_iter().map(|(_, found, _)| found));
    }

    /// The matches of `joined`, the lines of `run` joined with `gap` bytes
    /// between them, that reach its last line (at `last_start`) and need
    /// the lines together.
    fn match_joined(
        &mut self,
        run: &[Line<'_>],
        joined: &str,
        last_start: usize,
        gap: usize,
        anchored: &mut Vec<(usize, Match, Vec<usize>)>,
    ) {
        let Some(head) = run.first() else { return };
        let mut candidates = std::mem::take(&mut self.candidates);
        self.prefilter
            .candidates(joined, &mut self.hit, &mut candidates);
        let line = Line {
            number: head.number,
            offset: head.offset,
            text: joined,
            shown: joined,
            rank: head.rank,
        };
        let rules = self.set.rules();
        for &r in &candidates {
            let Some(rule) = rules.get(r) else { continue };
            if rule.fallback
                || rule.window() > 0
                || self.joined.1.contains(&r)
                || anchored.iter().any(|a| a.0 == r)
            {
                continue;
            }
            let Some((index, mut found, remaining)) = anchor(rule, r, &line) else {
                continue;
            };
            let reaches_last = found
                .lines
                .first()
                .and_then(|l| l.span)
                .is_some_and(|(start, end)| start + gap < last_start && end > last_start);
            // The rule must need the lines together: a match of one line
            // alone is that line's own.
            if !remaining.is_empty()
                || !reaches_last
                || run.iter().any(|l| anchor(rule, r, l).is_some())
            {
                continue;
            }
            found.lines = run.iter().map(whole_line).collect();
            anchored.push((index, found, remaining));
        }
        self.candidates = candidates;
    }

    /// Matches `embedded`, a message found inside `line` (the exception
    /// line of a traceback flattened onto one line, a JSON `"message"`
    /// field), with the rules without a window that did not match `line`
    /// itself; `line` is the evidence. `line` must be the last line fed.
    pub fn feed_embedded(&mut self, line: &Line<'_>, embedded: &str, out: &mut Vec<Match>) {
        let mut candidates = std::mem::take(&mut self.candidates);
        self.prefilter
            .candidates(embedded, &mut self.hit, &mut candidates);
        let inner = Line {
            text: embedded,
            shown: embedded,
            ..*line
        };
        let rules = self.set.rules();
        let mut anchored: Vec<(usize, Match, Vec<usize>)> = Vec::new();
        for &r in &candidates {
            let Some(rule) = rules.get(r).filter(|rule| rule.window() == 0) else {
                continue;
            };
            let Some((index, mut found, remaining)) = anchor(rule, r, &inner) else {
                continue;
            };
            if !remaining.is_empty() || anchor(rule, r, line).is_some() {
                continue;
            }
            found.lines = vec![whole_line(line)];
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
        // that may never complete must not hide another rule's match, nor
        // a rule whose required line before the anchor is looked for only
        // later (and may be missing).
        let rules = self.set.rules();
        let complete: Vec<usize> = anchored
            .iter()
            .filter(|a| a.2.is_empty())
            .map(|a| a.0)
            .filter(|&r| {
                rules
                    .get(r)
                    .is_some_and(|rule| !rule.pattern.before_required)
            })
            .collect();
        let fallback = |r: usize| rules.get(r).is_some_and(|rule| rule.fallback);
        // A specific rule replaces a fallback on its line only when it
        // names a failure: a hint that only adds context does not.
        let names_failure = |r: usize| rules.get(r).is_some_and(|rule| rule.role != Role::Context);
        let any_specific = complete.iter().any(|&r| !fallback(r) && names_failure(r));
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

    /// Line `i` (0-based) of `lines`, as the matcher takes it.
    fn nth_line<'a>(lines: &[&'a str], i: usize) -> Line<'a> {
        Line {
            number: i as u64 + 1,
            offset: 0,
            text: lines[i],
            shown: lines[i],
            rank: None,
        }
    }

    /// Each match as its rule's id, its first line's number and how many
    /// lines it holds.
    fn found_lines<'s>(set: &'s RuleSet, out: &[Match]) -> Vec<(&'s str, u64, usize)> {
        out.iter()
            .map(|m| {
                (
                    set.rules()[m.rule].id.as_str(),
                    m.lines[0].number,
                    m.lines.len(),
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
        let line = |i: usize| nth_line(&lines, i);
        let mut scanner = Scanner::new(&set, InputKind::Log);
        let mut out = Vec::new();
        scanner.feed(&line(0), &mut out);
        scanner.feed(&line(1), &mut out);
        scanner.feed_joined(&[line(0), line(1)], &mut out);
        let found = found_lines(&set, &out);
        // The joined text repeats neither the fallback nor the rule that
        // matched the first line alone.
        assert_eq!(found, [("head", 1, 1), ("oom", 1, 2)]);
        assert_eq!(
            out[1].captures,
            vec![("bytes".to_owned(), "5520758552".to_owned())]
        );
    }

    #[test]
    fn a_message_broken_across_several_lines_matches_once_whole() {
        let driver = rule(
            "driver",
            "message = \"m\"\n[match]\nliterals = [\"insufficient\"]\nany = ['driver version is insufficient for CUDA runtime version']",
        );
        let cuda = rule(
            "cuda",
            "message = \"m\"\n[match]\nliterals = [\"CUDA driver\"]\nany = ['CUDA driver']",
        );
        let set = RuleSet::new(vec![driver, cuda]).unwrap_or_else(|e| panic!("{e:?}"));
        let lines = [
            "RuntimeError: CUDA driver version is",
            "insufficient for CUDA",
            "runtime version",
            "at the end",
        ];
        let line = |i: usize| nth_line(&lines, i);
        let mut scanner = Scanner::new(&set, InputKind::Log);
        let mut out = Vec::new();
        let mut run = Vec::new();
        for i in 0..lines.len() {
            run.push(line(i));
            scanner.feed(&line(i), &mut out);
            scanner.feed_joined(&run, &mut out);
        }
        let found = found_lines(&set, &out);
        // Found once, when the third line completes it, and not again
        // with the fourth; the first line's own match is not repeated.
        assert_eq!(found, [("cuda", 1, 1), ("driver", 1, 3)]);
    }

    #[test]
    fn a_word_broken_by_a_hard_wrap_is_read_whole() {
        let oom = rule(
            "oom",
            "message = \"m\"\n[match]\nliterals = [\"storage_manager\"]\nany = ['storage_manager\\S*:\\d+: cudaMalloc failed: out of memory']",
        );
        let set = RuleSet::new(vec![oom]).unwrap_or_else(|e| panic!("{e:?}"));
        let got = |text: &str| {
            let lines: Vec<&str> = text.lines().collect();
            let line = |i: usize| nth_line(&lines, i);
            let mut scanner = Scanner::new(&set, InputKind::Log);
            let mut out = Vec::new();
            scanner.feed(&line(0), &mut out);
            scanner.feed_joined(&[line(0), line(1)], &mut out);
            out.len()
        };
        assert_eq!(
            got("src/storage/./pooled_storage_manager.h:107: cudaMalloc fail\ned: out of memory"),
            1
        );
        // Two words, broken between them.
        assert_eq!(
            got("src/storage/./pooled_storage_manager.h:107: cudaMalloc\nfailed: out of memory"),
            1
        );
        assert_eq!(
            got(
                "src/storage/./pooled_storage_manager.h:107: cudaMalloc fail\nlater: out of memory"
            ),
            0
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
