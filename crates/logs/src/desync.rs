//! The snapshot in ProcessGroupNCCL's desync report: where each rank was
//! when a collective timed out.
//!
//! ```text
//!  - Snapshot of ranks' latest states:          opens it
//!    #182 finished ranks:                       a sequence number and a state
//!      [7] finished ALLREDUCE                   the ranks there and their operation
//!    #315 started ranks:
//!      [0, 1, 2] started ALLREDUCE
//! ```
//!
//! The report's lines carry no rank prefix of their own after the first;
//! a [`DesyncReader`] keeps one snapshot in progress per rank, and a
//! snapshot ends at the first line that is none of these.

use nom::bytes::complete::{tag, take_until, take_while1};
use nom::character::complete::{char, digit1, space0};
use nom::combinator::{map_res, rest};
use nom::multi::separated_list1;
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

/// Groups kept per snapshot, and ranks per group.
const MAX_GROUPS: usize = 64;
const MAX_RANKS: usize = 1 << 16;

/// The ranks at one sequence number and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesyncGroup {
    pub seq: u64,
    /// `started`, `finished`, `scheduled`.
    pub state: String,
    pub ranks: Vec<u32>,
    /// `ALLREDUCE`, `_ALLGATHER_BASE`.
    pub op: String,
    /// The line of the ranks, and its text.
    pub line: u64,
    pub text: String,
}

/// One report's snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesyncSnapshot {
    pub rank: Option<u32>,
    pub line: u64,
    pub groups: Vec<DesyncGroup>,
}

#[derive(Debug)]
struct Open {
    snapshot: DesyncSnapshot,
    at: Option<(u64, String)>,
}

/// Reads the desync snapshots of one input.
#[derive(Debug, Default)]
pub struct DesyncReader {
    open: Vec<Open>,
}

enum Line<'a> {
    Header,
    Seq(u64, &'a str),
    Ranks(Vec<u32>, &'a str),
}

fn number<T: std::str::FromStr>(input: &str) -> IResult<&str, T> {
    map_res(digit1, str::parse).parse(input)
}

fn header(input: &str) -> IResult<&str, Line<'_>> {
    let (rest, _) = (
        take_until("Snapshot of ranks' latest states:"),
        tag("Snapshot of ranks' latest states:"),
        space0,
    )
        .parse(input)?;
    if rest.is_empty() {
        Ok((rest, Line::Header))
    } else {
        Err(nom::Err::Error(nom::error::Error::new(
            input,
            nom::error::ErrorKind::Eof,
        )))
    }
}

/// `#315 started ranks:`
fn seq(input: &str) -> IResult<&str, Line<'_>> {
    let (rest, (n, state)) = (
        preceded((space0, char('#')), number::<u64>),
        delimited(
            char(' '),
            take_while1(|c: char| c.is_ascii_lowercase()),
            tag(" ranks:"),
        ),
    )
        .parse(input)?;
    Ok((rest, Line::Seq(n, state)))
}

/// `[0, 1, 2] started ALLREDUCE`
fn ranks(input: &str) -> IResult<&str, Line<'_>> {
    let (_, (list, _, op)) = (
        preceded(
            (space0, char('[')),
            terminated(
                separated_list1((char(','), space0), number::<u32>),
                char(']'),
            ),
        ),
        delimited(
            char(' '),
            take_while1(|c: char| c.is_ascii_lowercase()),
            char(' '),
        ),
        rest,
    )
        .parse(input)?;
    let op = op.trim();
    if op.is_empty() || op.contains(' ') {
        return Err(nom::Err::Error(nom::error::Error::new(
            input,
            nom::error::ErrorKind::Verify,
        )));
    }
    Ok((
        "",
        Line::Ranks(list.into_iter().take(MAX_RANKS).collect(), op),
    ))
}

impl DesyncReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a snapshot is in progress: its next lines must be fed.
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// Feeds line `number` of `rank` (`text` with its launcher prefix
    /// removed, `shown` as printed); a snapshot it completes goes to `out`.
    pub fn feed(
        &mut self,
        text: &str,
        shown: &str,
        rank: Option<u32>,
        number: u64,
        may_start: bool,
        out: &mut Vec<DesyncSnapshot>,
    ) {
        let text = text.trim_end();
        let at = self.open.iter().position(|o| o.snapshot.rank == rank);
        // The report's own lines after its first carry no prefix: they go
        // to the snapshot last opened.
        let at = at.or_else(|| {
            (rank.is_none())
                .then(|| self.open.len().checked_sub(1))
                .flatten()
        });
        let parsed = header(text)
            .or_else(|_| seq(text))
            .or_else(|_| ranks(text))
            .ok()
            .map(|(_, l)| l);
        match parsed {
            Some(Line::Header) => {
                if let Some(i) = at {
                    self.close(i, out);
                }
                if may_start {
                    self.open.push(Open {
                        snapshot: DesyncSnapshot {
                            rank,
                            line: number,
                            groups: Vec::new(),
                        },
                        at: None,
                    });
                }
            }
            Some(Line::Seq(n, state)) => {
                if let Some(open) = at.and_then(|i| self.open.get_mut(i)) {
                    open.at = Some((n, state.to_owned()));
                }
            }
            Some(Line::Ranks(list, op)) => {
                if let Some(open) = at.and_then(|i| self.open.get_mut(i)) {
                    if let Some((seq, state)) = open.at.clone() {
                        if open.snapshot.groups.len() < MAX_GROUPS {
                            open.snapshot.groups.push(DesyncGroup {
                                seq,
                                state,
                                ranks: list,
                                op: coroner_model::inert_capped(op, 64),
                                line: number,
                                text: coroner_model::inert_capped(shown.trim_end(), 400),
                            });
                        }
                    }
                }
            }
            None => {
                if let Some(i) = at {
                    self.close(i, out);
                }
            }
        }
    }

    fn close(&mut self, i: usize, out: &mut Vec<DesyncSnapshot>) {
        if i < self.open.len() {
            let open = self.open.swap_remove(i);
            if !open.snapshot.groups.is_empty() {
                out.push(open.snapshot);
            }
        }
    }

    /// Completes every snapshot still open (the end of the input).
    pub fn finish(&mut self, out: &mut Vec<DesyncSnapshot>) {
        while !self.open.is_empty() {
            self.close(0, out);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_lists_each_groups_ranks_and_operation() {
        let text = concat!(
            "[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0\n",
            "         - [0] Timeout at collective: ALLREDUCE, #315\n",
            "         - Snapshot of ranks' latest states:\n",
            "           #182 finished ranks:\n",
            "             [7] finished ALLREDUCE\n",
            "           #315 started ranks:\n",
            "             [0, 1, 2] started ALLREDUCE\n",
            "           #317 started ranks:\n",
            "             [3, 4, 5, 6] started _ALLGATHER_BASE\n",
            "[rank0]:[E515 18:36:47.343391940 ProcessGroupNCCL.cpp:2268] failure detected by watchdog\n",
        );
        let mut reader = DesyncReader::new();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = crate::strip_rank_prefix(line);
            reader.feed(p.rest, line, p.rank, i as u64 + 1, true, &mut out);
        }
        reader.finish(&mut out);
        assert_eq!(out.len(), 1);
        let g = &out[0].groups;
        assert_eq!(g.len(), 3);
        assert_eq!(
            (g[1].seq, g[1].state.as_str(), g[1].op.as_str()),
            (315, "started", "ALLREDUCE")
        );
        assert_eq!(g[2].ranks, vec![3, 4, 5, 6]);
        assert_eq!(g[2].op, "_ALLGATHER_BASE");
    }
}
