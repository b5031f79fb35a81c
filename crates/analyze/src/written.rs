//! Sentences coroner writes of what it read (where ranks wait, which
//! collectives they timed out in, how the builds stand to the driver,
//! what the flight recorders show together), scanned with the rules of
//! the sentence's kind and placed on the lines they rest on.

use crate::findings::FindingTable;
use crate::scan::scan_text;
use coroner_ingest::{Input, InputSource};
use coroner_model::{Evidence, InputKind, InputSummary, Location};
use coroner_rules::RuleSet;

/// What a written sentence rests on: the input it was read from (its
/// position among the incident's and its name), the rank it is about,
/// and where its findings go with the lines shown as evidence (`None`:
/// on the sentence itself).
pub(crate) struct Grounding {
    pub(crate) input: usize,
    pub(crate) display: String,
    pub(crate) rank: Option<u32>,
    pub(crate) place: Option<(Location, Vec<Evidence>)>,
}

/// Scans `sentence` with the rules of `kind` and adds what they find to
/// `table`, placed where `grounding` says.
pub(crate) fn scan_written(
    table: &mut FindingTable,
    rules: &RuleSet,
    kind: InputKind,
    grounding: &Grounding,
    sentence: &str,
) {
    let source = Input {
        display: grounding.display.clone(),
        source: InputSource::Stdin,
        rank: grounding.rank,
        explicit: true,
        loadable_elf: None,
    };
    let mut own = FindingTable::for_input(grounding.input);
    let mut summary = InputSummary::new(grounding.display.clone(), kind);
    scan_text(
        &source,
        kind,
        format!("{sentence}\n").as_bytes(),
        rules,
        &mut own,
        &mut summary,
    );
    if let Some((at, evidence)) = &grounding.place {
        own.place_at(at, evidence);
    }
    table.merge(own);
}

/// `rank 3`, `ranks 0, 1, 2`.
pub(crate) fn rank_list(ranks: &[u32]) -> String {
    let names: Vec<String> = ranks.iter().map(u32::to_string).collect();
    let word = if ranks.len() == 1 { "rank" } else { "ranks" };
    format!("{word} {}", names.join(", "))
}

/// `rank 3 is`, `ranks 0, 1, 2 are`: the ranks as a sentence's subject.
pub(crate) fn ranks_are(ranks: &[u32]) -> String {
    let verb = if ranks.len() == 1 { "is" } else { "are" };
    format!("{} {verb}", rank_list(ranks))
}
