//! PyTorch's dumps: flight recorders and CUDA memory snapshots, read by
//! [`coroner_dumps`] and summarised as sentences for the rules.
//!
//! A memory snapshot stands alone: its sentences are scanned as soon as it
//! is read. Flight-recorder dumps are one per rank; they are kept until
//! every input is read, then matched across ranks ([`scan_flight_records`]).
//!
//! Sentences (stable forms):
//!
//! - `flight recorder: rank R read: N entries, last collective S (OP) of process group G, STATE`
//! - `flight recorder: rank(s) R never issued collective S (OP) of process group G that rank(s) W wait in; last collective L`[`, called from FRAME`]
//! - `flight recorder: ranks disagree on the OPERATION|SIZES|DTYPES of collective S of process group G: rank A issued X, rank B issued Y`
//! - `flight recorder: every rank with a dump issued collective S (OP) of process group G and none completed it (STATE)`[`; no dumps from ranks R`]
//! - `memory snapshot: out of memory asking for X with F free inside the reserved segments, the largest free block L (N free blocks, K split segments): fragmentation`
//! - `memory snapshot: out of memory asking for X with F free inside the reserved segments; A live, most from FRAME (B in N blocks)`
//! - `memory snapshot: N live blocks of X allocated at FRAME one after another and never freed[, about one every T ms]: B held`
//! - `memory snapshot: R reserved in K segments, A live, F free inside them (largest free block L)`

use crate::findings::FindingTable;
use crate::scan::scan_text;
use crate::written::{rank_list, scan_written, Grounding};
use coroner_dumps::flight::{self, FlightRecord, Verdict};
use coroner_dumps::snapshot::{self, human_size};
use coroner_ingest::{Input, InputSource, Opened};
use coroner_model::{InputError, InputKind, InputSummary};
use coroner_rules::RuleSet;
use std::io::Read;

/// Largest dump read, in bytes (decompressed).
pub(crate) const MAX_DUMP_BYTES: u64 = 1 << 30;

/// Reads the flight-recorder dump or memory snapshot `opened`.
pub(crate) fn read_dump(
    input: &Input,
    mut opened: Opened,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) {
    let mut bytes = Vec::new();
    let read = (&mut opened.reader)
        .take(MAX_DUMP_BYTES + 1)
        .read_to_end(&mut bytes);
    summary.bytes = bytes.len() as u64;
    if let Err(e) = read {
        summary.errors.push(InputError {
            message: format!("read failed: {e}"),
            offset: Some(bytes.len() as u64),
        });
        return;
    }
    if bytes.len() as u64 > MAX_DUMP_BYTES {
        summary.errors.push(InputError {
            message: format!(
                "larger than {} MiB: not read as a dump",
                MAX_DUMP_BYTES >> 20
            ),
            offset: None,
        });
        return;
    }
    match opened.kind {
        InputKind::FlightRecorder => match flight::read(&bytes) {
            Ok(record) => {
                let rank = input.rank.or_else(|| trailing_number(&input.display));
                match rank {
                    Some(rank) => {
                        scan_sentences(input, Some(rank), InputKind::FlightRecorder, &describe_record(rank, &record), rules, table, summary);
                        table.add_flight_record(&input.display, rank, record);
                    }
                    None => summary.notes.push(
                        "a flight-recorder dump whose rank its name does not say (`..._rank_N`): read alone"
                            .to_owned(),
                    ),
                }
            }
            Err(e) => summary.errors.push(InputError {
                message: format!("not a readable flight-recorder dump: {}", e.message),
                offset: Some(e.offset),
            }),
        },
        _ => match snapshot::read(&bytes) {
            Ok(snap) => {
                let text = describe_snapshot(&snapshot::examine(&snap), snap.segments.len());
                summary.memory = Some(Box::new(snapshot::map(&snap)));
                scan_sentences(
                    input,
                    input.rank,
                    InputKind::MemorySnapshot,
                    &text,
                    rules,
                    table,
                    summary,
                );
            }
            Err(e) => summary.errors.push(InputError {
                message: format!("not a readable memory snapshot: {}", e.message),
                offset: Some(e.offset),
            }),
        },
    }
    summary.lines = 0;
    summary.last_text_line = 0;
}

/// The number a file name ends with (`nccl_trace_rank_3`, `host-a-3.json`).
fn trailing_number(display: &str) -> Option<u32> {
    let name = display.rsplit(['/', '\\']).next()?;
    let stem = name.split('.').next()?;
    let digits: String = stem
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

fn scan_sentences(
    input: &Input,
    rank: Option<u32>,
    kind: InputKind,
    text: &str,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) {
    let source = Input {
        display: input.display.clone(),
        source: InputSource::Stdin,
        rank,
        explicit: true,
        loadable_elf: None,
    };
    let mut scratch = InputSummary::new(input.display.clone(), kind);
    scan_text(&source, kind, text.as_bytes(), rules, table, &mut scratch);
    summary.notes.extend(scratch.notes);
}

fn describe_record(rank: u32, record: &FlightRecord) -> String {
    let Some(last) = record.entries.iter().rev().find(|e| !e.is_p2p) else {
        return format!("flight recorder: rank {rank} read: no collectives recorded\n");
    };
    let group = if last.group_desc.is_empty() {
        last.group.clone()
    } else {
        format!("{} ({})", last.group, last.group_desc)
    };
    format!(
        "flight recorder: rank {rank} read: {} entries, last collective {} ({}) of process group {group}, {}\n",
        record.entries.len(),
        last.collective_seq,
        last.name,
        last.state
    )
}

/// Matches the incident's flight-recorder dumps across ranks and scans
/// what they say together, each verdict placed in the dump it rests on.
pub(crate) fn scan_flight_records(table: &mut FindingTable, rules: &RuleSet) {
    let records = std::mem::take(&mut table.flight_records);
    // Of a rank, its last dump.
    let mut by_rank: Vec<&(usize, String, u32, FlightRecord)> = Vec::new();
    for r in &records {
        by_rank.retain(|o| o.2 != r.2);
        by_rank.push(r);
    }
    let dumps: Vec<(u32, &FlightRecord)> =
        by_rank.iter().map(|(_, _, rank, d)| (*rank, d)).collect();
    for verdict in flight::compare(&dumps) {
        let (sentence, at_rank) = sentence(&verdict);
        let Some((input, display, rank, _)) = by_rank.iter().find(|r| r.2 == at_rank) else {
            continue;
        };
        let grounding = Grounding {
            input: *input,
            display: display.clone(),
            rank: culprit(&verdict).or(Some(*rank)),
            place: None,
        };
        scan_written(
            table,
            rules,
            InputKind::FlightRecorder,
            &grounding,
            &sentence,
        );
    }
}

/// The rank a verdict blames, when it blames one.
fn culprit(verdict: &Verdict) -> Option<u32> {
    match verdict {
        Verdict::Missing { missing, .. } => missing.first().map(|(r, _)| *r),
        Verdict::Stuck { no_dump, .. } if no_dump.len() == 1 => no_dump.first().copied(),
        _ => None,
    }
}

/// A verdict's sentence and the rank whose dump it rests on.
fn sentence(verdict: &Verdict) -> (String, u32) {
    match verdict {
        Verdict::Missing {
            group,
            seq,
            op,
            waiting,
            missing,
            frame,
            at,
        } => {
            let who: Vec<u32> = missing.iter().map(|(r, _)| *r).collect();
            let last = missing.iter().map(|(_, l)| *l).max().unwrap_or(-1);
            let called = frame
                .as_ref()
                .map(|f| format!(", called from {f}"))
                .unwrap_or_default();
            (
                format!(
                    "flight recorder: {} never issued collective {seq} ({op}) of process group {group} that {} {} in; last collective {last}{called}",
                    rank_list(&who),
                    rank_list(waiting),
                    if waiting.len() == 1 { "waits" } else { "wait" }
                ),
                at.0,
            )
        }
        Verdict::Mismatch {
            group,
            seq,
            what,
            sides,
            at,
        } => {
            let sides: Vec<String> = sides
                .iter()
                .map(|(r, s)| format!("rank {r} issued {s}"))
                .collect();
            (
                format!(
                    "flight recorder: ranks disagree on the {what} of collective {seq} of process group {group}: {}",
                    sides.join(", ")
                ),
                at.0,
            )
        }
        Verdict::Stuck {
            group,
            seq,
            op,
            state,
            no_dump,
            at,
            ..
        } => {
            let missing = if no_dump.is_empty() {
                String::new()
            } else {
                format!("; no dumps from {}", rank_list(no_dump))
            };
            (
                format!(
                    "flight recorder: every rank with a dump issued collective {seq} ({op}) of process group {group} and none completed it ({state}){missing}"
                ),
                at.0,
            )
        }
    }
}

fn describe_snapshot(x: &snapshot::Examination, segments: usize) -> String {
    let mut out = String::new();
    if let Some(oom) = &x.oom {
        let request = human_size(oom.requested);
        if x.fragmented() {
            out.push_str(&format!(
                "memory snapshot: out of memory asking for {request} with {} free inside the reserved segments, the largest free block {} ({} free blocks, {} split segments): fragmentation\n",
                human_size(x.free),
                human_size(x.largest_free),
                x.free_blocks,
                x.split_segments
            ));
        } else if let Some(top) = x.holders.first() {
            out.push_str(&format!(
                "memory snapshot: out of memory asking for {request} with {} free inside the reserved segments; {} live, most from {} ({} in {} blocks)\n",
                human_size(x.free),
                human_size(x.allocated),
                top.frame,
                human_size(top.bytes),
                top.blocks
            ));
        }
    }
    if let Some(leak) = &x.leak {
        let every = leak
            .interval_ms
            .map(|ms| format!(", about one every {ms} ms"))
            .unwrap_or_default();
        out.push_str(&format!(
            "memory snapshot: {} live blocks of {} allocated at {} one after another and never freed{every}: {} held\n",
            leak.blocks,
            human_size(leak.block_size),
            leak.frame,
            human_size(leak.bytes)
        ));
    }
    out.push_str(&format!(
        "memory snapshot: {} reserved in {segments} segments, {} live, {} free inside them (largest free block {})\n",
        human_size(x.reserved),
        human_size(x.allocated),
        human_size(x.free),
        human_size(x.largest_free)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_names_its_rank_at_the_end() {
        assert_eq!(trailing_number("x/nccl_trace_rank_3"), Some(3));
        assert_eq!(trailing_number("host-a-12.json"), Some(12));
        assert_eq!(trailing_number("snapshot.pickle"), None);
    }
}
