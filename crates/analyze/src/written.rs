//! Sentences coroner writes of what it read (where ranks wait, which
//! collectives they timed out in), scanned with the rules of kind
//! `stack-dumps` and placed on the line they rest on.

use crate::findings::FindingTable;
use crate::scan::scan_text;
use coroner_ingest::{Input, InputSource};
use coroner_model::{Evidence, InputKind, InputSummary, Location};
use coroner_rules::RuleSet;

/// What a written sentence rests on: the input it was read from (its
/// position among the incident's), the place in it, the rank it is
/// about, and the line shown as evidence.
pub(crate) struct Grounding {
    pub(crate) input: usize,
    pub(crate) at: Location,
    pub(crate) rank: Option<u32>,
    pub(crate) evidence: Evidence,
}

/// Scans `sentence` and adds what the rules find in it to `table`, placed
/// where `grounding` says.
pub(crate) fn scan_written(
    table: &mut FindingTable,
    rules: &RuleSet,
    grounding: &Grounding,
    sentence: &str,
) {
    let source = Input {
        display: grounding.at.input.clone(),
        source: InputSource::Stdin,
        rank: grounding.rank,
        explicit: true,
    };
    let mut own = FindingTable::for_input(grounding.input);
    let mut summary = InputSummary::new(grounding.at.input.clone(), InputKind::StackDumps);
    scan_text(
        &source,
        InputKind::StackDumps,
        format!("{sentence}\n").as_bytes(),
        rules,
        &mut own,
        &mut summary,
    );
    own.place_at(&grounding.at, std::slice::from_ref(&grounding.evidence));
    table.merge(own);
}

/// `rank 3`, `ranks 0, 1, 2`.
pub(crate) fn rank_list(ranks: &[u32]) -> String {
    let names: Vec<String> = ranks.iter().map(u32::to_string).collect();
    let word = if ranks.len() == 1 { "rank" } else { "ranks" };
    format!("{word} {}", names.join(", "))
}
