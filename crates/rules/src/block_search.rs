//! The block-wide search for rule literals.
//!
//! A multi-substring search runs over a whole block of lines looking for
//! *fingerprints*, short pieces of the literals: SIMD Teddy
//! (aho-corasick's packed searcher) for up to 64 of them, the hashed
//! search of [`crate::hashed`] for more. Where one occurs, the literals holding it are
//! compared with the text around it, byte for byte; only a confirmed
//! literal stops the search. So a fingerprint that is common in some log
//! (`s no`, from every "is not" and "was not") costs a few byte
//! comparisons per occurrence, not a look at the whole line.

use crate::buckets::{order_for_buckets, NibbleShares};
use crate::hashed::Hashed;
use aho_corasick::packed;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Input, MatchKind};
use std::collections::HashMap;

/// Most fingerprints one Teddy searcher takes.
pub(crate) const TEDDY_MAX: usize = 64;

/// A literal to confirm.
#[derive(Debug, Clone)]
pub(crate) struct Literal {
    /// Its bytes: ASCII-lowercased when `exact` is false.
    pub bytes: Vec<u8>,
    /// Compared with the text's case, not ignoring it.
    pub exact: bool,
    /// The index of the rule that listed it.
    pub rule: usize,
}

impl Literal {
    /// Whether the literal occurs at `start` (`text` as is, `lowered` the
    /// same text ASCII-lowercased).
    fn occurs_at(&self, start: usize, text: &[u8], lowered: &[u8]) -> bool {
        let haystack = if self.exact { text } else { lowered };
        // Most fingerprint hits are not a literal: the last byte rules
        // them out before a full comparison.
        haystack
            .get(start..start + self.bytes.len())
            .is_some_and(|t| t.last() == self.bytes.last() && t == self.bytes.as_slice())
    }
}

/// One block-wide search.
#[derive(Debug)]
pub(crate) struct BlockSearch {
    engine: Engine,
    /// Searches the lowercased text rather than the text as is.
    folded: bool,
    /// The fingerprints, by pattern id.
    prints: Vec<Vec<u8>>,
    /// For each fingerprint, the literals holding it, with the offset of
    /// every occurrence of the fingerprint in each.
    holders: Vec<Holders>,
    /// The fingerprints shorter than the longest: Teddy reports one
    /// fingerprint per position, so at a hit these may start there too.
    short: Vec<usize>,
    literals: Vec<Literal>,
}

/// The literals holding one fingerprint, each with the offset of the
/// fingerprint in it. A fingerprint common in some log (` in `, `proc`)
/// may be held by a hundred literals: those are kept sorted by the four
/// bytes that follow the fingerprint in them (or, when it ends within four
/// bytes of the literal's end, the four before it), so that a hit compares
/// only the literals whose neighbouring bytes are the text's.
#[derive(Debug, Default, Clone)]
struct Holders {
    /// (the four bytes after the fingerprint, literal, offset), sorted.
    after: Vec<(u32, usize, usize)>,
    /// (the four bytes before the fingerprint, literal, offset), sorted.
    before: Vec<(u32, usize, usize)>,
    /// The literals with fewer than four bytes on either side.
    rest: Vec<(usize, usize)>,
}

/// Bytes of the neighbour a holder is keyed by.
const KEY_LEN: usize = 4;

/// The four bytes of `bytes` at `at`, as one number.
fn key_at(bytes: &[u8], at: usize) -> Option<u32> {
    let word: [u8; KEY_LEN] = bytes.get(at..at.checked_add(KEY_LEN)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(word))
}

/// The entries of `list` (sorted by key) whose key is `key`.
fn keyed(list: &[(u32, usize, usize)], key: Option<u32>) -> &[(u32, usize, usize)] {
    let Some(key) = key else { return &[] };
    let low = list.partition_point(|e| e.0 < key);
    let high = list.partition_point(|e| e.0 <= key);
    list.get(low..high).unwrap_or_default()
}

impl Holders {
    /// Files literal `literal` (`bytes`: as searched), which holds
    /// fingerprint of `len` bytes at `offset`.
    fn add(&mut self, literal: usize, offset: usize, len: usize, bytes: &[u8]) {
        if let Some(key) = key_at(bytes, offset + len) {
            self.after.push((key, literal, offset));
        } else if let Some(key) = offset.checked_sub(KEY_LEN).and_then(|b| key_at(bytes, b)) {
            self.before.push((key, literal, offset));
        } else {
            self.rest.push((literal, offset));
        }
    }

    fn sort(&mut self) {
        self.after.sort_unstable();
        self.before.sort_unstable();
    }

    /// The holders that can occur with a fingerprint of `len` bytes found at
    /// `at` in `haystack`: (literal, offset).
    fn around(
        &self,
        haystack: &[u8],
        at: usize,
        len: usize,
    ) -> impl Iterator<Item = (usize, usize)> + '_ {
        let after = keyed(&self.after, key_at(haystack, at + len));
        let before = keyed(
            &self.before,
            at.checked_sub(KEY_LEN).and_then(|b| key_at(haystack, b)),
        );
        after
            .iter()
            .chain(before)
            .map(|&(_, l, offset)| (l, offset))
            .chain(self.rest.iter().copied())
    }
}

#[derive(Debug)]
enum Engine {
    Teddy(packed::Searcher),
    Dfa(AhoCorasick),
    Hashed(Hashed),
}

impl BlockSearch {
    /// Searches for `prints`, each confirmed against the `literals` holding
    /// it (`folded`: in the lowercased text), in one pass: Teddy for up to
    /// 64 fingerprints, the hashed search for more (a DFA should neither
    /// build).
    pub(crate) fn build(
        prints: &[Vec<u8>],
        literals: &[Literal],
        folded: bool,
        shares: &NibbleShares,
    ) -> Vec<BlockSearch> {
        if prints.is_empty() {
            return Vec::new();
        }
        let search = |engine: Engine, prints: Vec<Vec<u8>>| {
            BlockSearch::new(engine, prints, literals.to_vec(), folded)
        };
        if prints.len() <= TEDDY_MAX {
            let ordered = order_for_buckets(prints, shares);
            let mut builder = packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostFirst)
                .builder();
            builder.extend(&ordered);
            if let Some(teddy) = builder.build() {
                return vec![search(Engine::Teddy(teddy), ordered)];
            }
        }
        if let Some(hashed) = Hashed::new(prints) {
            return vec![search(Engine::Hashed(hashed), prints.to_vec())];
        }
        AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::DFA))
            .match_kind(MatchKind::Standard)
            .build(prints)
            .ok()
            .map(|ac| search(Engine::Dfa(ac), prints.to_vec()))
            .into_iter()
            .collect()
    }

    fn new(
        engine: Engine,
        prints: Vec<Vec<u8>>,
        literals: Vec<Literal>,
        folded: bool,
    ) -> BlockSearch {
        // Each literal's windows of every fingerprint length, looked up in
        // an index of the fingerprints: one pass over the literals, not one
        // per fingerprint.
        let index: HashMap<&[u8], usize> = prints
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_slice(), i))
            .collect();
        let mut lengths: Vec<usize> = prints.iter().map(Vec::len).collect();
        lengths.sort_unstable();
        lengths.dedup();
        let mut holders: Vec<Holders> = vec![Holders::default(); prints.len()];
        for (l, lit) in literals.iter().enumerate() {
            let bytes = if folded && lit.exact {
                lit.bytes.to_ascii_lowercase()
            } else {
                lit.bytes.clone()
            };
            for (offset, _) in bytes.iter().enumerate() {
                for &len in &lengths {
                    let Some(window) = bytes.get(offset..offset + len) else {
                        break;
                    };
                    if let Some(at) = index.get(window).and_then(|&p| holders.get_mut(p)) {
                        at.add(l, offset, len, &bytes);
                    }
                }
            }
        }
        holders.iter_mut().for_each(Holders::sort);
        let longest = prints.iter().map(Vec::len).max().unwrap_or(0);
        let short = prints
            .iter()
            .enumerate()
            .filter(|(_, p)| p.len() < longest)
            .map(|(i, _)| i)
            .collect();
        BlockSearch {
            engine,
            folded,
            prints,
            holders,
            short,
            literals,
        }
    }

    /// Start of the first literal at or after `from` in `text`
    /// (`lowered`: the same text ASCII-lowercased); `None` when there is
    /// none. A literal starting before `from` is not reported.
    pub(crate) fn find(&self, text: &[u8], lowered: &[u8], from: usize) -> Option<usize> {
        self.each_hit(text, lowered, from, |print, at| {
            self.occurring(print, at, text, lowered)
                .map(|(start, _)| start)
                .find(|&start| start >= from)
        })
    }

    /// Calls `found` with the rule of each literal occurring in `text`
    /// (`lowered`: the same text ASCII-lowercased), once per occurrence:
    /// every occurrence of every fingerprint is confirmed against every
    /// literal that can hold it there.
    pub(crate) fn each_rule(&self, text: &[u8], lowered: &[u8], mut found: impl FnMut(usize)) {
        self.each_hit(text, lowered, 0, |print, at| {
            for (_, lit) in self.occurring(print, at, text, lowered) {
                found(lit.rule);
            }
            None::<()>
        });
    }

    /// Offers `visit` every place at or after `from` where a fingerprint
    /// starts (fingerprint, place), in order, until it returns something.
    fn each_hit<T>(
        &self,
        text: &[u8],
        lowered: &[u8],
        from: usize,
        mut visit: impl FnMut(usize, usize) -> Option<T>,
    ) -> Option<T> {
        let haystack = if self.folded { lowered } else { text };
        match &self.engine {
            Engine::Teddy(s) => {
                let mut pos = from;
                while pos < haystack.len() {
                    let m = s.find_in(haystack, aho_corasick::Span::from(pos..haystack.len()))?;
                    let (at, reported) = (m.start(), m.pattern().as_usize());
                    // Teddy names one fingerprint per place. A shorter one
                    // may start there too; a longer one has the one named
                    // as its prefix, so its literals hold that one there.
                    let also = self.short.iter().copied().filter(|&p| {
                        let print = self.prints.get(p).map_or(&[][..], Vec::as_slice);
                        p != reported && haystack.get(at..).is_some_and(|h| h.starts_with(print))
                    });
                    if let Some(seen) = std::iter::once(reported)
                        .chain(also)
                        .find_map(|p| visit(p, at))
                    {
                        return Some(seen);
                    }
                    pos = at + 1;
                }
                None
            }
            Engine::Hashed(h) => h.each_hit(haystack, from, visit),
            Engine::Dfa(ac) => {
                // Overlapping matches, in order of their ends: every
                // occurrence of every fingerprint is seen.
                let input = Input::new(haystack).range(from..);
                ac.find_overlapping_iter(input)
                    .find_map(|m| visit(m.pattern().as_usize(), m.start()))
            }
        }
    }

    /// The literals holding fingerprint `print` found at `at` that occur
    /// there, with their starts.
    fn occurring<'s>(
        &'s self,
        print: usize,
        at: usize,
        text: &'s [u8],
        lowered: &'s [u8],
    ) -> impl Iterator<Item = (usize, &'s Literal)> + 's {
        let haystack = if self.folded { lowered } else { text };
        let len = self.prints.get(print).map_or(0, Vec::len);
        self.holders
            .get(print)
            .into_iter()
            .flat_map(move |holders| holders.around(haystack, at, len))
            .filter_map(move |(l, offset)| {
                let start = at.checked_sub(offset)?;
                let lit = self.literals.get(l)?;
                lit.occurs_at(start, text, lowered).then_some((start, lit))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(literals: &[(&str, bool)], prints: &[&str]) -> Vec<BlockSearch> {
        let literals: Vec<Literal> = literals
            .iter()
            .enumerate()
            .map(|(rule, &(s, exact))| Literal {
                bytes: if exact {
                    s.as_bytes().to_vec()
                } else {
                    s.to_ascii_lowercase().into_bytes()
                },
                exact,
                rule,
            })
            .collect();
        let prints: Vec<Vec<u8>> = prints.iter().map(|p| p.as_bytes().to_vec()).collect();
        BlockSearch::build(
            &prints,
            &literals,
            true,
            &NibbleShares::new(b"step 1 loss 0.5"),
        )
    }

    fn first(searches: &[BlockSearch], text: &str, from: usize) -> Option<usize> {
        let lowered = text.to_ascii_lowercase();
        searches
            .iter()
            .filter_map(|s| s.find(text.as_bytes(), lowered.as_bytes(), from))
            .min()
    }

    #[test]
    fn a_fingerprint_outside_its_literals_is_passed_over() {
        let s = search(&[("is not supported", false)], &["s no"]);
        let text = "this is noise\nfeature Is Not Supported here\n";
        assert_eq!(first(&s, text, 0), text.find("Is Not"));
        assert_eq!(first(&s, "this is noise, twice: is no\n", 0), None);
    }

    #[test]
    fn exact_literals_keep_their_case() {
        let s = search(&[("Init COMPLETE", true)], &["it c"]);
        assert_eq!(first(&s, "init complete\n", 0), None);
        assert_eq!(first(&s, "x Init COMPLETE\n", 0), Some(2));
    }

    #[test]
    fn a_literal_before_the_start_is_not_reported() {
        let s = search(&[("out of memory", false)], &["of m"]);
        let text = "out of memory\nok\nout of memory\n";
        assert_eq!(first(&s, text, 1), Some(17));
    }

    #[test]
    fn a_short_fingerprint_at_the_same_place_as_a_long_one_is_checked() {
        let s = search(&[("xid", false), ("xidle", false)], &["xidl", "xid"]);
        assert_eq!(first(&s, "NVRM: Xid 79\n", 0), Some(6));
        assert_eq!(first(&s, "Xidle\n", 0), Some(0));
    }

    #[test]
    fn a_fingerprint_held_by_many_literals_finds_each_of_them() {
        // Keyed by the bytes after the fingerprint, before it, or neither.
        let literals = [
            ("Killed process", false),
            ("was killed by", false),
            ("oom-kill", false),
        ];
        let s = search(&literals, &["kill"]);
        let text = "Out of memory: Killed process 7\n";
        assert_eq!(first(&s, text, 0), text.find("Killed"));
        assert_eq!(first(&s, "it was KILLED BY signal 9\n", 0), Some(3));
        assert_eq!(first(&s, "cgroup oom-kill:constraint\n", 0), Some(7));
        assert_eq!(first(&s, "kill -9 1; was killed; killed proc\n", 0), None);
        assert_eq!(first(&s, "kill", 0), None);
        let with_short = [("kill", false), ("killed process", false)];
        let s = search(&with_short, &["kill"]);
        assert_eq!(first(&s, "skill", 0), Some(1));
    }

    #[test]
    fn every_literal_of_a_line_names_its_rule() {
        // A short fingerprint and a long one start at the same place.
        let s = search(
            &[("xid", false), ("xidle", false), ("nvrm", false)],
            &["xidl", "xid", "nvrm"],
        );
        let named = |text: &str| {
            let mut rules = Vec::new();
            let lowered = text.to_ascii_lowercase();
            for search in &s {
                search.each_rule(text.as_bytes(), lowered.as_bytes(), |r| rules.push(r));
            }
            rules.sort_unstable();
            rules.dedup();
            rules
        };
        assert_eq!(named("NVRM: Xidle 79\n"), vec![0, 1, 2]);
        assert_eq!(named("NVRM: Xid 79\n"), vec![0, 2]);
        assert_eq!(named("nothing here\n"), Vec::<usize>::new());
    }

    #[test]
    fn many_fingerprints_use_one_automaton() {
        let words: Vec<String> = (0..300).map(|i| format!("w{i:03}x")).collect();
        let literals: Vec<(&str, bool)> = words.iter().map(|w| (w.as_str(), false)).collect();
        let prints: Vec<&str> = words.iter().map(String::as_str).collect();
        let s = search(&literals, &prints);
        assert_eq!(s.len(), 1);
        assert_eq!(first(&s, "a w1x w299x\n", 0), Some(6));
        let text = "a w001x W299X w29 w299x\n";
        let mut rules = Vec::new();
        s[0].each_rule(text.as_bytes(), text.to_ascii_lowercase().as_bytes(), |r| {
            rules.push(r);
        });
        assert_eq!(rules, vec![1, 299, 299]);
    }
}
