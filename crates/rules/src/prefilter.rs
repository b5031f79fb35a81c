//! The literal prefilter: which lines can match which rules.
//!
//! Two stages. Over a whole block of lines, a SIMD multi-substring search
//! (Teddy, aho-corasick's packed searcher) looks for short *fingerprints*:
//! four-byte pieces chosen so that every literal contains one and that
//! ordinary log text rarely does. The literals matched ignoring case are
//! fingerprinted and searched in the ASCII-lowercased block, the others in
//! the block as is. Where a fingerprint occurs, the line is checked with
//! the literals themselves (one Aho-Corasick automaton for each kind), and
//! only the rules whose literals occur run their regexes.
//!
//! Fingerprints are picked by a weighted set cover: a piece shared by many
//! literals is cheap, a piece that is common in a sample of healthy logs
//! (`background.txt`: NCCL INFO lines, dmesg, nvidia-smi, metric lines) is
//! dear. Teddy takes 64 fingerprints a pass; past three passes the block
//! search is one Aho-Corasick DFA over the fingerprints, whose speed
//! barely depends on how many there are.

use crate::rule::Rule;
use aho_corasick::packed;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use coroner_model::InputKind;
use std::collections::{HashMap, HashSet};

/// A sample of ordinary log text, to tell common byte sequences from rare
/// ones.
const BACKGROUND: &str = include_str!("background.txt");
/// Bytes of a fingerprint.
const FINGERPRINT_LEN: usize = 4;
/// Exact-case literals at most this long are searched with their case.
const SHORT_EXACT: usize = 4;
/// Most fingerprints one Teddy searcher takes.
const TEDDY_MAX: usize = 64;

/// The literal prefilter of a rule set: one Aho-Corasick automaton for
/// the literals matched ignoring ASCII case, one for those matched exactly.
#[derive(Debug)]
pub(crate) struct Prefilter {
    groups: Vec<LiteralGroup>,
    /// The block-wide fingerprint searches.
    searches: Vec<BlockSearch>,
}

/// One block-wide fingerprint search.
#[derive(Debug)]
pub(crate) struct BlockSearch {
    engine: Engine,
    /// Searches the lowercased text (fingerprints of case-insensitive
    /// literals) rather than the text as is.
    pub(crate) folded: bool,
}

#[derive(Debug)]
enum Engine {
    Teddy(packed::Searcher),
    Dfa(AhoCorasick),
}

/// Teddy searchers used at most for one kind of literal; past that many
/// fingerprints, one DFA is faster than so many passes.
const TEDDY_PASSES: usize = 3;

impl BlockSearch {
    /// Searches for `prints`: Teddy, in passes of up to 64 fingerprints,
    /// or one DFA when there are too many.
    fn build(prints: &[Vec<u8>], folded: bool) -> Vec<BlockSearch> {
        if prints.is_empty() {
            return Vec::new();
        }
        if prints.len() <= TEDDY_MAX * TEDDY_PASSES {
            let teddies: Option<Vec<BlockSearch>> = prints
                .chunks(TEDDY_MAX)
                .map(|chunk| {
                    let mut builder = packed::Config::new()
                        .match_kind(packed::MatchKind::LeftmostFirst)
                        .builder();
                    builder.extend(chunk);
                    builder.build().map(|s| BlockSearch {
                        engine: Engine::Teddy(s),
                        folded,
                    })
                })
                .collect();
            if let Some(teddies) = teddies {
                return teddies;
            }
        }
        AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::DFA))
            .match_kind(MatchKind::Standard)
            .build(prints)
            .ok()
            .map(|ac| BlockSearch {
                engine: Engine::Dfa(ac),
                folded,
            })
            .into_iter()
            .collect()
    }

    /// Offset of the first fingerprint in `haystack`.
    pub(crate) fn find(&self, haystack: &[u8]) -> Option<usize> {
        match &self.engine {
            Engine::Teddy(s) => s.find(haystack).map(|m| m.start()),
            Engine::Dfa(ac) => ac.find(haystack).map(|m| m.start()),
        }
    }
}

/// Literals searched with one automaton.
#[derive(Debug)]
struct LiteralGroup {
    automaton: AhoCorasick,
    /// For each literal pattern id, the rules that listed it.
    owners: Vec<Vec<usize>>,
}

impl LiteralGroup {
    fn new(rules: &[Rule], kind: InputKind, exact: bool) -> Option<LiteralGroup> {
        let mut literals: Vec<String> = Vec::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if rule.pattern.literals_match_case != exact || !rule.applies_to(kind) {
                continue;
            }
            for lit in rule.literals() {
                let lit = if exact {
                    lit.clone()
                } else {
                    lit.to_ascii_lowercase()
                };
                match literals.iter().position(|l| *l == lit) {
                    Some(p) => owners
                        .get_mut(p)
                        .into_iter()
                        .for_each(|o: &mut Vec<usize>| o.push(i)),
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
    /// The prefilter of the rules that apply to inputs of `kind`.
    pub(crate) fn new(rules: &[Rule], kind: InputKind) -> Prefilter {
        let groups = [false, true]
            .into_iter()
            .filter_map(|exact| LiteralGroup::new(rules, kind, exact))
            .collect();
        // Fingerprints of case-insensitive literals are searched in the
        // lowercased block. So are those of exact-case literals long enough
        // for a case-folded fingerprint to stay rare (the line is then
        // checked exactly); only short exact ones (`inf` must not match
        // `INFO`) get a search of their own over the text as is.
        let literals = |folded: bool| -> Vec<Vec<u8>> {
            rules
                .iter()
                .filter(|r| r.applies_to(kind))
                .flat_map(|r| {
                    r.literals()
                        .iter()
                        .map(move |l| (r.pattern.literals_match_case, l))
                })
                .filter(|(exact, l)| folded == (!exact || l.len() > SHORT_EXACT))
                .map(|(_, l)| {
                    if folded {
                        l.to_ascii_lowercase().into_bytes()
                    } else {
                        l.as_bytes().to_vec()
                    }
                })
                .collect()
        };
        let background = BACKGROUND.as_bytes();
        let folded_background = BACKGROUND.to_ascii_lowercase();
        let mut searches = BlockSearch::build(
            &fingerprints(&literals(true), folded_background.as_bytes()),
            true,
        );
        searches.extend(BlockSearch::build(
            &fingerprints(&literals(false), background),
            false,
        ));
        Prefilter { groups, searches }
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
        for group in &self.groups {
            for m in group.automaton.find_overlapping_iter(text) {
                let owners = group.owners.get(m.pattern().as_usize());
                for &r in owners.into_iter().flatten() {
                    if let Some(seen @ false) = hit.get_mut(r) {
                        *seen = true;
                        list.push(r);
                    }
                }
            }
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
        self.groups.iter().any(|g| g.automaton.is_match(text))
    }
}

/// Fingerprints covering every literal: a greedy weighted set cover over
/// the literals' four-byte pieces (a literal shorter than that is its own
/// piece), preferring pieces shared by many literals and rare in
/// `background`.
fn fingerprints(literals: &[Vec<u8>], background: &[u8]) -> Vec<Vec<u8>> {
    let mut counts: HashMap<&[u8], u32> = HashMap::new();
    for w in background.windows(FINGERPRINT_LEN) {
        *counts.entry(w).or_insert(0) += 1;
    }
    let count = |piece: &[u8]| -> u32 {
        if piece.len() == FINGERPRINT_LEN {
            counts.get(piece).copied().unwrap_or(0)
        } else {
            let n = background
                .windows(piece.len())
                .filter(|w| *w == piece)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        }
    };
    // For every candidate piece, the literals that contain it.
    let mut covers: HashMap<&[u8], Vec<usize>> = HashMap::new();
    for (i, lit) in literals.iter().enumerate() {
        let pieces: HashSet<&[u8]> = if lit.len() <= FINGERPRINT_LEN {
            std::iter::once(lit.as_slice()).collect()
        } else {
            lit.windows(FINGERPRINT_LEN).collect()
        };
        for p in pieces {
            covers.entry(p).or_default().push(i);
        }
    }
    let mut candidates: Vec<(&[u8], u64, Vec<usize>)> = covers
        .into_iter()
        .map(|(p, lits)| (p, u64::from(count(p)) * 100 + commonness(p), lits))
        .collect();
    candidates.sort_by(|a, b| a.0.cmp(b.0));
    let mut covered = vec![false; literals.len()];
    let mut left = literals.len();
    let mut chosen = Vec::new();
    while left > 0 {
        let best = candidates
            .iter()
            .filter_map(|(p, cost, lits)| {
                let new = lits
                    .iter()
                    .filter(|&&l| covered.get(l) == Some(&false))
                    .count() as u64;
                (new > 0).then(|| (*p, cost * 1000 / new, lits))
            })
            .min_by_key(|(_, score, _)| *score);
        let Some((piece, _, lits)) = best else { break };
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
