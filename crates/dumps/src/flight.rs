//! PyTorch's flight recorder: the last collectives each rank issued, per
//! process group, dumped when a watchdog fires (`TORCH_NCCL_DUMP_ON_TIMEOUT`)
//! or on demand, as a pickle or as JSON (`_dump_nccl_trace_json`).
//!
//! [`read`] takes one dump. [`compare`] matches the dumps of a job's ranks
//! collective by collective, per process group and sequence number, the way
//! PyTorch's `fr_trace` analyzer does, and says where they part: the first
//! collective some rank has not completed, the ranks that never issued it
//! (the ones the others wait for), ranks that issued it with another
//! operation, size or type, and the ranks whose dumps are missing and what
//! that leaves open.

use crate::pickle::{self, Limits, PickleError};
use crate::tree::Tree;
use coroner_model::{inert_capped, PyFrame};
use std::collections::{BTreeMap, BTreeSet};

/// Entries kept per dump (PyTorch's ring buffer holds 2000 by default).
const MAX_ENTRIES: usize = 20_000;
/// Frames kept per entry, and the longest text kept.
const MAX_FRAMES: usize = 16;
const MAX_TEXT: usize = 200;

/// One rank's dump.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlightRecord {
    /// The dump format's version (`2.10`).
    pub version: String,
    /// The NCCL version, when recorded.
    pub comm_version: Option<String>,
    /// Process groups by name: their description and ranks.
    pub groups: BTreeMap<String, Group>,
    pub entries: Vec<Entry>,
    /// Entries the dump held beyond [`MAX_ENTRIES`].
    pub dropped: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    pub desc: String,
    /// Global ranks of the group (empty when not recorded).
    pub ranks: Vec<u32>,
    /// `pg_status`: the last collective enqueued, started and completed.
    pub last_enqueued: Option<i64>,
    pub last_completed: Option<i64>,
}

/// One recorded collective or point-to-point operation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    pub record_id: i64,
    /// The process group's name (`0`) and description (`default_pg`).
    pub group: String,
    pub group_desc: String,
    pub collective_seq: i64,
    pub p2p_seq: i64,
    pub is_p2p: bool,
    /// `nccl:all_reduce`, `nccl:send 0->1`.
    pub name: String,
    pub input_sizes: Vec<Vec<i64>>,
    pub input_dtypes: Vec<String>,
    pub output_sizes: Vec<Vec<i64>>,
    pub output_dtypes: Vec<String>,
    /// `scheduled`, `started` or `completed`.
    pub state: String,
    pub timeout_ms: Option<i64>,
    /// Python frames of the call, innermost first.
    pub frames: Vec<PyFrame>,
}

/// Whether the first bytes are a flight-recorder dump: a pickle (or JSON)
/// whose keys include the recorder's own.
pub fn looks_like(head: &[u8]) -> bool {
    // Keys are looked for only in a pickle or a JSON object: every text
    // input's head passes through here.
    let has = |k: &[u8]| head.windows(k.len()).any(|w| w == k);
    if head.first() == Some(&0x80) {
        return has(b"pg_config") && (has(b"version") || has(b"pg_status"));
    }
    let json = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    // The JSON form sorts its keys: `entries` (long) comes before
    // `pg_config`, so its first entry's keys also tell it.
    json && (has(b"\"pg_config\"")
        || (has(b"\"entries\"") && has(b"\"collective_seq_id\"") && has(b"\"profiling_name\"")))
}

/// Reads one dump, pickle or JSON.
pub fn read(bytes: &[u8]) -> Result<FlightRecord, PickleError> {
    if bytes.first() == Some(&0x80) {
        let value = pickle::decode(bytes, Limits::default())?;
        from_tree(&value)
    } else {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| PickleError {
            offset: 0,
            message: format!("not readable JSON: {e}"),
        })?;
        from_tree(&value)
    }
}

fn from_tree<T: Tree>(root: &T) -> Result<FlightRecord, PickleError> {
    let not = |what: &str| PickleError {
        offset: 0,
        message: format!("not a flight-recorder dump: {what}"),
    };
    let config = root.field("pg_config").ok_or_else(|| not("no pg_config"))?;
    let mut record = FlightRecord {
        version: text(root.field("version")),
        comm_version: root
            .field("comm_lib_version")
            .and_then(Tree::text)
            .filter(|s| !s.is_empty())
            .map(|s| inert_capped(s, MAX_TEXT)),
        ..FlightRecord::default()
    };
    for (name, group) in config.entries().unwrap_or_default() {
        let ranks = group.field("ranks");
        let ranks = match ranks.and_then(Tree::text) {
            Some(list) => parse_ranks(list),
            None => ranks
                .and_then(Tree::items)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|r| u32::try_from(r.int()?).ok())
                .collect(),
        };
        record.groups.insert(
            inert_capped(name, MAX_TEXT),
            Group {
                desc: text(group.field("desc")),
                ranks,
                ..Group::default()
            },
        );
    }
    for (name, status) in root
        .field("pg_status")
        .and_then(Tree::entries)
        .unwrap_or_default()
    {
        let group = record
            .groups
            .entry(inert_capped(name, MAX_TEXT))
            .or_default();
        group.last_enqueued = status.field("last_enqueued_collective").and_then(Tree::int);
        group.last_completed = status
            .field("last_completed_collective")
            .and_then(Tree::int);
    }
    let entries = root
        .field("entries")
        .and_then(Tree::items)
        .unwrap_or_default();
    record.dropped = entries.len().saturating_sub(MAX_ENTRIES);
    record.entries = entries.into_iter().take(MAX_ENTRIES).map(entry).collect();
    Ok(record)
}

fn entry<T: Tree>(e: &T) -> Entry {
    let int = |k: &str| e.field(k).and_then(Tree::int);
    let group = e.field("process_group").and_then(Tree::items);
    let part = |i: usize| {
        group
            .as_ref()
            .and_then(|g| g.get(i).copied())
            .and_then(Tree::text)
            .map(|s| inert_capped(s, MAX_TEXT))
    };
    Entry {
        record_id: int("record_id").unwrap_or(-1),
        group: part(0)
            .or_else(|| int("pg_id").map(|n| n.to_string()))
            .unwrap_or_default(),
        group_desc: part(1).unwrap_or_default(),
        collective_seq: int("collective_seq_id").unwrap_or(-1),
        p2p_seq: int("p2p_seq_id").unwrap_or(-1),
        is_p2p: e.field("is_p2p").and_then(Tree::flag).unwrap_or(false),
        name: text(e.field("profiling_name")),
        input_sizes: sizes(e.field("input_sizes")),
        input_dtypes: texts(e.field("input_dtypes")),
        output_sizes: sizes(e.field("output_sizes")),
        output_dtypes: texts(e.field("output_dtypes")),
        state: text(e.field("state")),
        timeout_ms: int("timeout_ms"),
        frames: e
            .field("frames")
            .and_then(Tree::items)
            .unwrap_or_default()
            .into_iter()
            .take(MAX_FRAMES)
            .map(|f| PyFrame {
                file: text(f.field("filename")),
                line: f
                    .field("line")
                    .and_then(Tree::int)
                    .and_then(|n| u64::try_from(n).ok())
                    .unwrap_or(0),
                function: text(f.field("name")),
                code: None,
            })
            .collect(),
    }
}

fn text<T: Tree>(v: Option<&T>) -> String {
    v.and_then(Tree::text)
        .map(|s| inert_capped(s, MAX_TEXT))
        .unwrap_or_default()
}

fn texts<T: Tree>(v: Option<&T>) -> Vec<String> {
    v.and_then(Tree::items)
        .unwrap_or_default()
        .into_iter()
        .take(MAX_FRAMES)
        .map(|t| text(Some(t)))
        .collect()
}

fn sizes<T: Tree>(v: Option<&T>) -> Vec<Vec<i64>> {
    v.and_then(Tree::items)
        .unwrap_or_default()
        .into_iter()
        .take(MAX_FRAMES)
        .map(|dims| {
            dims.items()
                .unwrap_or_default()
                .into_iter()
                .take(MAX_FRAMES)
                .filter_map(Tree::int)
                .collect()
        })
        .collect()
}

/// `"[0, 1, 2]"` → `[0, 1, 2]`.
fn parse_ranks(list: &str) -> Vec<u32> {
    list.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter_map(|r| r.trim().parse().ok())
        .take(1 << 16)
        .collect()
}

/// What the dumps of a job's ranks say together, one verdict per process
/// group that has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Ranks that never issued the collective the others wait in.
    Missing {
        group: String,
        seq: i64,
        op: String,
        /// Ranks that issued it and wait (not completed).
        waiting: Vec<u32>,
        /// Ranks whose dumps end before it, each with its last collective.
        missing: Vec<(u32, i64)>,
        /// The waiting call's own frame, when recorded.
        frame: Option<String>,
        /// The rank and entry the verdict rests on.
        at: (u32, usize),
    },
    /// Ranks that issued the same collective differently.
    Mismatch {
        group: String,
        seq: i64,
        /// What differs: `operation`, `sizes` or `dtypes`.
        what: &'static str,
        /// Each rank with what it issued.
        sides: Vec<(u32, String)>,
        at: (u32, usize),
    },
    /// Every rank with a dump issued the collective and none completed it:
    /// the stall is in the collective itself, or on a rank without a dump.
    Stuck {
        group: String,
        seq: i64,
        op: String,
        state: String,
        ranks: Vec<u32>,
        /// Ranks of the group without a dump.
        no_dump: Vec<u32>,
        frame: Option<String>,
        at: (u32, usize),
    },
}

/// Matches the dumps (each with its rank) collective by collective.
pub fn compare(dumps: &[(u32, &FlightRecord)]) -> Vec<Verdict> {
    let mut groups: BTreeSet<&str> = BTreeSet::new();
    for (_, d) in dumps {
        groups.extend(
            d.entries
                .iter()
                .filter(|e| !e.is_p2p)
                .map(|e| e.group.as_str()),
        );
    }
    groups
        .into_iter()
        .filter_map(|g| compare_group(dumps, g))
        .collect()
}

/// One rank's collectives of a group by sequence number, each with its
/// position in the dump.
type BySeq<'a> = BTreeMap<i64, (usize, &'a Entry)>;

fn compare_group(dumps: &[(u32, &FlightRecord)], group: &str) -> Option<Verdict> {
    // Each rank's collectives of this group by sequence number.
    let per_rank: Vec<(u32, BySeq)> = dumps
        .iter()
        .map(|(rank, d)| {
            let by_seq = d
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.is_p2p && e.group == group && e.collective_seq >= 0)
                .map(|(i, e)| (e.collective_seq, (i, e)))
                .collect();
            (*rank, by_seq)
        })
        .collect();
    let present: Vec<&(u32, BySeq)> = per_rank.iter().filter(|(_, m)| !m.is_empty()).collect();
    if present.is_empty() {
        return None;
    }
    // The ring buffer keeps the last entries: compare from the latest
    // first sequence number of any rank.
    let from = present
        .iter()
        .filter_map(|(_, m)| m.keys().next())
        .max()
        .copied()?;
    let last = |m: &BySeq| m.keys().next_back().copied().unwrap_or(-1);
    let upto = present.iter().map(|(_, m)| last(m)).max()?;
    let expected: Vec<u32> = dumps
        .iter()
        .flat_map(|(_, d)| {
            d.groups
                .get(group)
                .map(|g| g.ranks.clone())
                .unwrap_or_default()
        })
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .collect();
    let dumped: BTreeSet<u32> = per_rank.iter().map(|(r, _)| *r).collect();
    for seq in from..=upto {
        let have: Vec<(u32, usize, &Entry)> = present
            .iter()
            .filter_map(|(r, m)| m.get(&seq).map(|(i, e)| (*r, *i, *e)))
            .collect();
        let Some(&(first_rank, first_index, first)) = have.first() else {
            continue;
        };
        let done = have.iter().all(|(_, _, e)| e.state == "completed");
        if let Some(mismatch) = mismatch(group, seq, &have) {
            return Some(mismatch);
        }
        if done && have.len() == present.len() {
            continue;
        }
        let missing: Vec<(u32, i64)> = present
            .iter()
            .filter(|(_, m)| !m.contains_key(&seq))
            .map(|(r, m)| (*r, last(m)))
            .filter(|(_, l)| *l < seq)
            .collect();
        let waiting: Vec<u32> = have
            .iter()
            .filter(|(_, _, e)| e.state != "completed")
            .map(|(r, _, _)| *r)
            .collect();
        let frame = own_frame(&first.frames);
        if !missing.is_empty() {
            let (at_rank, at_index) = have
                .iter()
                .find(|(_, _, e)| e.state != "completed")
                .map_or((first_rank, first_index), |(r, i, _)| (*r, *i));
            return Some(Verdict::Missing {
                group: label(group, first),
                seq,
                op: first.name.clone(),
                waiting,
                missing,
                frame,
                at: (at_rank, at_index),
            });
        }
        if !done {
            let no_dump: Vec<u32> = expected
                .iter()
                .filter(|r| !dumped.contains(r))
                .copied()
                .collect();
            return Some(Verdict::Stuck {
                group: label(group, first),
                seq,
                op: first.name.clone(),
                state: first.state.clone(),
                ranks: have.iter().map(|(r, _, _)| *r).collect(),
                no_dump,
                frame,
                at: (first_rank, first_index),
            });
        }
    }
    None
}

/// `0 (default_pg)`.
fn label(group: &str, entry: &Entry) -> String {
    if entry.group_desc.is_empty() {
        group.to_owned()
    } else {
        format!("{group} ({})", entry.group_desc)
    }
}

fn mismatch(group: &str, seq: i64, have: &[(u32, usize, &Entry)]) -> Option<Verdict> {
    let (_, index, first) = have.first()?;
    let describe = |e: &Entry| {
        format!(
            "{} {} {}",
            e.name,
            shape(&e.input_sizes),
            e.input_dtypes.join(",")
        )
    };
    let what = if have.iter().any(|(_, _, e)| e.name != first.name) {
        "operation"
    } else if have
        .iter()
        .any(|(_, _, e)| e.input_sizes != first.input_sizes)
    {
        "sizes"
    } else if have
        .iter()
        .any(|(_, _, e)| e.input_dtypes != first.input_dtypes)
    {
        "dtypes"
    } else {
        return None;
    };
    // One side per distinct call, each with the first rank that made it.
    let mut sides: Vec<(u32, String)> = Vec::new();
    for (rank, _, e) in have {
        let d = describe(e);
        if !sides.iter().any(|(_, s)| *s == d) {
            sides.push((*rank, d));
        }
    }
    Some(Verdict::Mismatch {
        group: label(group, first),
        seq,
        what,
        sides,
        at: (have.first()?.0, *index),
    })
}

fn shape(sizes: &[Vec<i64>]) -> String {
    let parts: Vec<String> = sizes
        .iter()
        .map(|d| {
            let dims: Vec<String> = d.iter().map(i64::to_string).collect();
            format!("[{}]", dims.join(", "))
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// The innermost frame in the program's own code, as `function (file:line)`.
fn own_frame(frames: &[PyFrame]) -> Option<String> {
    frames
        .iter()
        .find(|f| !f.is_library() && !f.file.is_empty())
        .map(PyFrame::label)
}

/// A one-line description of an entry, for evidence.
pub fn describe_entry(e: &Entry) -> String {
    format!(
        "record {}: {} #{} of process group {} input {} {}, state {}",
        e.record_id,
        e.name,
        e.collective_seq,
        if e.group_desc.is_empty() {
            e.group.clone()
        } else {
            format!("{} ({})", e.group, e.group_desc)
        },
        shape(&e.input_sizes),
        e.input_dtypes.join(","),
        e.state
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> FlightRecord {
        let bytes = std::fs::read(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        assert!(looks_like(&bytes[..bytes.len().min(8192)]));
        read(&bytes).unwrap()
    }

    #[test]
    fn a_real_dump_is_read() {
        let d = fixture("fixtures/multi-gpu/stall/fr_trace_rank_0");
        assert_eq!(d.version, "2.10");
        assert_eq!(d.groups["0"].ranks, vec![0, 1]);
        assert_eq!(d.groups["0"].last_enqueued, Some(20));
        let last = d.entries.last().unwrap();
        assert_eq!(
            (last.collective_seq, last.state.as_str()),
            (20, "scheduled")
        );
        assert_eq!(last.name, "nccl:all_reduce");
        assert_eq!(last.input_sizes, vec![vec![1_048_576]]);
        assert_eq!(last.frames[0].function, "all_reduce");
    }

    #[test]
    fn the_rank_that_never_issued_the_collective_is_missing() {
        let r0 = fixture("fixtures/multi-gpu/stall/fr_trace_rank_0");
        let r1 = fixture("fixtures/multi-gpu/stall/fr_trace_rank_1");
        let v = compare(&[(0, &r0), (1, &r1)]);
        assert_eq!(v.len(), 1);
        match &v[0] {
            Verdict::Missing {
                seq,
                op,
                waiting,
                missing,
                frame,
                ..
            } => {
                assert_eq!((*seq, op.as_str()), (20, "nccl:all_reduce"));
                assert_eq!(waiting, &vec![0]);
                assert_eq!(missing, &vec![(1, 19)]);
                assert_eq!(frame.as_deref(), Some("<module> (incident.py:50)"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_dump_leaves_the_pending_collective_stuck() {
        let r0 = fixture("fixtures/multi-gpu/stall/fr_trace_rank_0");
        let v = compare(&[(0, &r0)]);
        match &v[0] {
            Verdict::Stuck { seq, no_dump, .. } => {
                assert_eq!(*seq, 20);
                assert_eq!(no_dump, &vec![1]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_collective_issued_differently_is_a_mismatch_with_both_sides() {
        // The real rank 1 dump, with its 19th collective made an
        // all_gather of another size, as a desynchronised rank issues.
        let r0 = fixture("fixtures/multi-gpu/stall/fr_trace_rank_0");
        let mut r1 = fixture("fixtures/multi-gpu/stall/fr_trace_rank_1");
        let e = r1
            .entries
            .iter_mut()
            .find(|e| e.collective_seq == 19)
            .unwrap();
        e.name = "nccl:all_gather".to_owned();
        e.input_sizes = vec![vec![2_097_152]];
        let v = compare(&[(0, &r0), (1, &r1)]);
        match &v[0] {
            Verdict::Mismatch {
                seq, what, sides, ..
            } => {
                assert_eq!((*seq, *what), (19, "operation"));
                assert_eq!(
                    sides[0],
                    (0, "nccl:all_reduce [[1048576]] Float".to_owned())
                );
                assert_eq!(
                    sides[1],
                    (1, "nccl:all_gather [[2097152]] Float".to_owned())
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_json_dump_is_known_by_its_first_entry_when_its_config_comes_late() {
        let bytes = std::fs::read(format!(
            "{}/../../fixtures/dumps/nccl/fr_trace_json_rank_0",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let at = bytes
            .windows(11)
            .position(|w| w == b"\"pg_config\"")
            .unwrap();
        assert!(looks_like(&bytes[..at]));
        assert!(!looks_like(b"{\"entries\": [], \"name\": \"x\"}"));
    }

    #[test]
    fn an_empty_dump_and_a_json_one_are_read() {
        let d = fixture("fixtures/dumps/gloo-empty-fr/fr_trace_json_rank_0");
        assert!(d.entries.is_empty());
        let d = fixture("fixtures/dumps/gloo-empty-fr/fr_trace_rank_0");
        assert!(d.entries.is_empty());
        assert!(compare(&[(0, &d)]).is_empty());
    }
}
