//! Giving a finding without a rank the rank that other findings tie to the
//! same thing (a GPU's PCI address, a process id).

use coroner_model::Finding;

/// For every finding without a rank whose `key` names something, the rank
/// that the findings with a rank and that same key (through `known`) agree
/// on, when they name exactly one.
pub(crate) fn attribute_ranks_by<K: Ord>(
    findings: &mut [Finding],
    known: impl Fn(&Finding) -> Option<K>,
    key: impl Fn(&Finding) -> Option<K>,
) {
    let mut pairs: Vec<(K, u32)> = findings
        .iter()
        .filter_map(|f| Some((known(f)?, f.rank?)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    for f in findings.iter_mut().filter(|f| f.rank.is_none()) {
        let Some(k) = key(f) else { continue };
        let mut ranks = pairs.iter().filter(|(q, _)| *q == k).map(|(_, r)| *r);
        if let (Some(rank), None) = (ranks.next(), ranks.next()) {
            f.rank = Some(rank);
        }
    }
}
