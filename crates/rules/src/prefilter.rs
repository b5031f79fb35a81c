//! The literal prefilter: which lines can match which rules.
//!
//! Two stages. Over a whole block of lines, a multi-substring search
//! ([`BlockSearch`]) looks for short *fingerprints*: four-byte pieces
//! chosen so that every literal contains one and that ordinary log text
//! rarely does, each hit confirmed by comparing the literals that hold the
//! fingerprint with the text around it. The literals matched ignoring case
//! are fingerprinted and searched in the ASCII-lowercased block, the others
//! in the block as is. On a line holding a literal, the same searches run
//! over the line alone and confirm every fingerprint they find, naming the
//! rules whose literals occur; only those run their regexes. (One
//! automaton over all the literals named them before: building it was
//! half the time a run took to start, and it read a line more slowly.)
//!
//! Fingerprints are picked by a weighted set cover: a piece shared by many
//! literals is cheap, a piece that is common in a sample of healthy logs
//! (`background.txt`: NCCL INFO lines, dmesg, nvidia-smi, metric lines) is
//! dear. A few rules' literals fit one Teddy pass of 64 fingerprints:
//! every piece then costs a little more until the cover fits (one pass with
//! a few more hits to confirm is far cheaper than two). A larger set's
//! rarest cover (a few hundred pieces) is searched in one hashed pass,
//! whose speed barely depends on how many there are; a piece whose
//! three-byte halves are common costs more there, as the hashed search
//! looks those up first.

use crate::block_search::{BlockSearch, Literal, TEDDY_MAX};
use crate::buckets::NibbleShares;
use crate::rule::Rule;
use coroner_model::InputKind;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// A sample of ordinary log text, to tell common byte sequences from rare
/// ones.
const BACKGROUND: &str = include_str!("background.txt");
/// Bytes of a fingerprint.
const FINGERPRINT_LEN: usize = 4;
/// Exact-case literals at most this long are searched with their case.
const SHORT_EXACT: usize = 4;

/// The literal prefilter of a rule set: the block-wide fingerprint
/// searches, which also name the rules whose literals occur in a line.
#[derive(Debug)]
pub(crate) struct Prefilter {
    /// The block-wide fingerprint searches.
    searches: Vec<BlockSearch>,
}

impl Prefilter {
    /// The prefilter of the rules that apply to inputs of `kind`.
    pub(crate) fn new(rules: &[Rule], kind: InputKind) -> Prefilter {
        Prefilter {
            searches: Self::searches_of(rules, kind),
        }
    }

    /// The block-wide fingerprint searches of the rules that apply to
    /// inputs of `kind`.
    fn searches_of(rules: &[Rule], kind: InputKind) -> Vec<BlockSearch> {
        // Fingerprints of case-insensitive literals are searched in the
        // lowercased block. So are those of exact-case literals long enough
        // for a case-folded fingerprint to stay rare (the line is then
        // checked exactly); only short exact ones (`inf` must not match
        // `INFO`) get a search of their own over the text as is.
        let literals = |folded: bool| -> Vec<Literal> {
            rules
                .iter()
                .enumerate()
                .filter(|(_, r)| r.applies_to(kind))
                .flat_map(|(rule, r)| {
                    r.literals()
                        .iter()
                        .map(move |l| (rule, r.pattern.literals_match_case, l))
                })
                .filter(|(_, exact, l)| folded == (!exact || l.len() > SHORT_EXACT))
                .map(|(rule, exact, l)| Literal {
                    bytes: if exact {
                        l.as_bytes().to_vec()
                    } else {
                        l.to_ascii_lowercase().into_bytes()
                    },
                    exact,
                    rule,
                })
                .collect()
        };
        let mut searches = Vec::new();
        for folded in [true, false] {
            let literals = literals(folded);
            let background = if folded {
                BACKGROUND.to_ascii_lowercase().into_bytes()
            } else {
                BACKGROUND.as_bytes().to_vec()
            };
            // What each search looks for: the lowercased literals, or the
            // short exact ones as they are.
            let searched: Vec<Vec<u8>> = literals
                .iter()
                .map(|l| {
                    if folded {
                        l.bytes.to_ascii_lowercase()
                    } else {
                        l.bytes.clone()
                    }
                })
                .collect();
            searches.extend(BlockSearch::build(
                &fingerprints(&searched, &background),
                &literals,
                folded,
                &NibbleShares::new(&background),
            ));
        }
        searches
    }

    /// The block-wide fingerprint searches: where none finds anything, no
    /// literal occurs.
    pub(crate) fn searches(&self) -> &[BlockSearch] {
        &self.searches
    }

    /// Lists in `list` (sorted) every rule one of whose literals occurs in
    /// `text`; `hit` is scratch space, all false on entry and exit.
    pub(crate) fn candidates(&self, text: &str, hit: &mut [bool], list: &mut Vec<usize>) {
        list.clear();
        let lowered = text.to_ascii_lowercase();
        for search in &self.searches {
            search.each_rule(text.as_bytes(), lowered.as_bytes(), |r| {
                if let Some(seen @ false) = hit.get_mut(r) {
                    *seen = true;
                    list.push(r);
                }
            });
        }
        for &r in list.iter() {
            if let Some(seen) = hit.get_mut(r) {
                *seen = false;
            }
        }
        list.sort_unstable();
    }

    /// Whether any literal occurs in `text`.
    pub(crate) fn any(&self, text: &[u8]) -> bool {
        let lowered = text.to_ascii_lowercase();
        self.searches
            .iter()
            .any(|s| s.find(text, &lowered, 0).is_some())
    }
}

/// Cost of one occurrence of a piece in the background sample: each costs
/// a stop of the search and a look at the literals holding the piece.
const COUNT_COST: u64 = 1000;
/// Cost of one occurrence of either three-byte half of a piece in the
/// background sample: in the hashed search, each costs two table lookups.
const HALF_COST: u64 = 50;

/// Extra cost of each fingerprint, tried in turn until the cover fits one
/// Teddy searcher: the higher, the more a piece shared by many literals is
/// preferred to rarer ones. One pass over a block with a few more hits to
/// check costs far less than a second pass (measured on a 1 GB training
/// log: 58 fingerprints in one pass search it twice as fast as the 115
/// rarest in two).
const PRINT_COSTS: [u64; 6] = [0, 2_500, 5_000, 10_000, 20_000, 40_000];

/// Fingerprints covering every literal: the cheapest of the covers made
/// with each of [`PRINT_COSTS`] that fits one Teddy pass, else the rarest
/// cover, for the hashed search. (With 1 127 rules: 368 pieces in one
/// hashed pass search a 300 MB training log in about three quarters of the
/// CPU time that four Teddy passes of the 249 commonest-but-fewest took.)
fn fingerprints(literals: &[Vec<u8>], background: &[u8]) -> Vec<Vec<u8>> {
    let pieces = Pieces::new(literals, background);
    let mut rarest = None;
    for &extra in &PRINT_COSTS {
        let cover = pieces.cover(extra);
        if cover.len() <= TEDDY_MAX {
            return cover;
        }
        rarest.get_or_insert(cover);
    }
    rarest.unwrap_or_default()
}

/// The literals' four-byte pieces (a literal shorter than that is its own
/// piece), each with its cost and the literals holding it.
struct Pieces<'l> {
    /// Sorted by piece, for a deterministic choice between equals.
    pieces: Vec<(&'l [u8], u64, Vec<usize>)>,
    literals: usize,
}

impl<'l> Pieces<'l> {
    fn new(literals: &'l [Vec<u8>], background: &[u8]) -> Pieces<'l> {
        // The background's four-byte windows, sorted: a piece's count is
        // the length of its run.
        let mut windows: Vec<[u8; FINGERPRINT_LEN]> = background
            .windows(FINGERPRINT_LEN)
            .filter_map(|w| w.try_into().ok())
            .collect();
        windows.sort_unstable();
        let count = |piece: &[u8]| -> u32 {
            if let Ok(key) = <[u8; FINGERPRINT_LEN]>::try_from(piece) {
                let from = windows.partition_point(|w| *w < key);
                let to = windows.partition_point(|w| *w <= key);
                u32::try_from(to - from).unwrap_or(u32::MAX)
            } else {
                let n = background
                    .windows(piece.len())
                    .filter(|w| *w == piece)
                    .count();
                u32::try_from(n).unwrap_or(u32::MAX)
            }
        };
        let mut triples: Vec<[u8; 3]> = background
            .windows(3)
            .filter_map(|w| w.try_into().ok())
            .collect();
        triples.sort_unstable();
        let halves = |piece: &[u8]| -> u64 {
            let count = |half: &[u8]| -> u64 {
                let Ok(key) = <[u8; 3]>::try_from(half) else {
                    return 0;
                };
                let from = triples.partition_point(|w| *w < key);
                let to = triples.partition_point(|w| *w <= key);
                (to - from) as u64
            };
            match (piece.get(..3), piece.get(1..)) {
                (Some(first), Some(last)) if piece.len() == FINGERPRINT_LEN => {
                    count(first) + count(last)
                }
                _ => 0,
            }
        };
        let mut holders: HashMap<&[u8], Vec<usize>> = HashMap::new();
        for (i, lit) in literals.iter().enumerate() {
            let pieces: HashSet<&[u8]> = if lit.len() <= FINGERPRINT_LEN {
                std::iter::once(lit.as_slice()).collect()
            } else {
                lit.windows(FINGERPRINT_LEN).collect()
            };
            for p in pieces {
                holders.entry(p).or_default().push(i);
            }
        }
        let mut pieces: Vec<(&[u8], u64, Vec<usize>)> = holders
            .into_iter()
            .map(|(p, lits)| {
                let cost = u64::from(count(p)) * COUNT_COST + halves(p) * HALF_COST;
                (p, cost + commonness(p), lits)
            })
            .collect();
        pieces.sort_by(|a, b| a.0.cmp(b.0));
        Pieces {
            pieces,
            literals: literals.len(),
        }
    }

    /// A greedy weighted set cover of the literals, preferring pieces
    /// shared by many literals and rare in the background; every piece
    /// chosen costs `extra` more.
    fn cover(&self, extra: u64) -> Vec<Vec<u8>> {
        let mut covered = vec![false; self.literals];
        let mut left = self.literals;
        let mut chosen = Vec::new();
        let score = |(cost, lits): (u64, &Vec<usize>), covered: &[bool]| -> Option<u64> {
            let new = lits
                .iter()
                .filter(|&&l| covered.get(l) == Some(&false))
                .count() as u64;
            (new > 0).then(|| (cost + extra) * 1000 / new)
        };
        // Lazy greedy: a piece's score only grows as literals get covered,
        // so a score from an earlier round is a lower bound; the best piece
        // is the first whose fresh score is still the least. Ties go to the
        // first piece in sorted order.
        let mut queue: BinaryHeap<Reverse<(u64, usize)>> = self
            .pieces
            .iter()
            .enumerate()
            .filter_map(|(i, (_, cost, lits))| {
                score((*cost, lits), &covered).map(|s| Reverse((s, i)))
            })
            .collect();
        while left > 0 {
            let Some(Reverse((old, i))) = queue.pop() else {
                break;
            };
            let Some((piece, cost, lits)) = self.pieces.get(i) else {
                break;
            };
            let Some(fresh) = score((*cost, lits), &covered) else {
                continue;
            };
            if fresh > old {
                queue.push(Reverse((fresh, i)));
                continue;
            }
            for &l in lits {
                if let Some(done @ false) = covered.get_mut(l) {
                    *done = true;
                    left -= 1;
                }
            }
            chosen.push(piece.to_vec());
        }
        chosen
    }
}

/// How common the bytes of a piece are in log text, roughly: a tie-break
/// between pieces the background sample does not contain.
fn commonness(piece: &[u8]) -> u64 {
    piece
        .iter()
        .map(|&b| match b.to_ascii_lowercase() {
            b' ' => 12,
            b'e' => 10,
            b't' | b'a' | b'o' | b'i' | b'n' => 8,
            b's' | b'r' | b'0'..=b'9' => 7,
            b'h' | b'l' | b'd' | b'c' => 5,
            b'u' | b'm' | b'p' | b'f' | b'g' | b'.' | b'/' => 4,
            b'w' | b'y' | b'b' | b':' | b'-' | b',' | b'=' => 3,
            b'x' | b'j' | b'q' | b'z' => 1,
            _ => 2,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules one of whose literals occurs in `text`, found by
    /// comparing every literal with every place of the line.
    fn naive(rules: &[Rule], kind: InputKind, text: &str) -> Vec<usize> {
        let lowered = text.to_ascii_lowercase();
        (0..rules.len())
            .filter(|&i| {
                let rule = &rules[i];
                rule.applies_to(kind)
                    && rule.literals().iter().any(|l| {
                        if rule.pattern.literals_match_case {
                            text.contains(l.as_str())
                        } else {
                            lowered.contains(&l.to_ascii_lowercase())
                        }
                    })
            })
            .collect()
    }

    #[test]
    fn the_searches_name_exactly_the_rules_whose_literals_occur() {
        let set = crate::RuleSet::load(&crate::RuleSources {
            builtin: true,
            ..crate::RuleSources::default()
        })
        .unwrap_or_else(|e| panic!("{e:?}"));
        let rules = set.rules();
        let kind = InputKind::Log;
        let prefilter = Prefilter::new(rules, kind);
        let mut hit = vec![false; rules.len()];
        let mut list = Vec::new();
        let mut lines = 0;
        for rule in rules {
            for example in &rule.examples {
                for line in example.input.lines() {
                    // As written, and with its case changed: the
                    // case-insensitive literals must still be found, the
                    // exact ones not.
                    for text in [
                        line.to_owned(),
                        line.to_ascii_uppercase(),
                        line.to_ascii_lowercase(),
                    ] {
                        prefilter.candidates(&text, &mut hit, &mut list);
                        assert_eq!(list, naive(rules, kind, &text), "{text}");
                        assert_eq!(prefilter.any(text.as_bytes()), !list.is_empty(), "{text}");
                        lines += 1;
                    }
                }
            }
        }
        assert!(lines > 10_000, "{lines}");
    }

    #[test]
    fn every_literal_contains_a_fingerprint() {
        let literals: Vec<Vec<u8>> = [
            "cuda_error_out_of_memory",
            "cuda_error_illegal_address",
            "nan",
            "ncclsystemerror",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let prints = fingerprints(&literals, b"ncclsystem ncclsystem info cuda cuda_ error");
        for lit in &literals {
            assert!(
                prints
                    .iter()
                    .any(|p| lit.windows(p.len()).any(|w| w == p.as_slice())),
                "{:?} not covered by {prints:?}",
                String::from_utf8_lossy(lit)
            );
        }
        // One piece covers both CUDA_ERROR_ literals; none is common.
        assert!(prints.len() <= 3, "{prints:?}");
        assert!(!prints.iter().any(|p| p.as_slice() == b"cuda"));
    }
}
