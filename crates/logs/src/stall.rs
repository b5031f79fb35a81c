//! Horovod's stall reports: which ranks have not submitted which tensors.
//!
//! Horovod's coordinator warns when tensors wait for some ranks longer
//! than its stall check time. From 0.19 the warning lists, for each rank
//! that is missing any, the names of the tensors it has not submitted
//! (the first six in name order, then ` ...`; a `!` marks a rank past
//! the shutdown time):
//!
//! ```text
//! Missing ranks:                                 (`Stalled ranks:` in 0.19)
//! 0: [broadcast.noname.3765, broadcast.noname.3873]
//! 1!: [broadcast.noname.3873]
//! ```
//!
//! Earlier releases list each stalled tensor with the ranks it waits for,
//! or with those that submitted it, after `Stalled ops:` and on lines of
//! their own:
//!
//! ```text
//! ... Stalled ops: HorovodAllreduce_loss_0 [ready ranks: 3], HorovodAllreduce_grad_0 [ready ranks: 2, 0, 1]
//! [... W horovod/common/operations.cc:588] HorovodBroadcast_bias_0 [missing ranks: 1]
//! ```
//!
//! A report is the run of consecutive lines of one form after its
//! header (or, for the earlier form, a run of tensor lines without one).

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, space0};
use nom::combinator::{eof, map_res, opt, value};
use nom::multi::separated_list1;
use nom::sequence::{delimited, terminated};
use nom::{IResult, Parser};

/// Reports kept per input, lines kept per report, and ranks kept per
/// report (all lists together).
const MAX_REPORTS: usize = 16;
const MAX_ENTRIES: usize = 256;
const MAX_RANKS: usize = 16_384;
/// Characters kept of a tensor's name, and names kept per rank (Horovod
/// prints six).
const MAX_NAME: usize = 160;
const MAX_NAMES: usize = 8;

/// What a tensor's list of ranks names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallSide {
    /// The ranks that have not submitted it.
    Missing,
    /// The ranks that have.
    Ready,
}

/// One fact of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StallFact {
    /// A rank and the tensors it has not submitted, in name order;
    /// `truncated` where Horovod left the rest out.
    Rank {
        rank: u32,
        tensors: Vec<String>,
        truncated: bool,
    },
    /// A tensor and the ranks its list names.
    Tensor {
        name: String,
        side: StallSide,
        ranks: Vec<u32>,
    },
}

/// A fact and the line it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallEntry {
    pub fact: StallFact,
    pub line: u64,
    pub text: String,
}

/// One stall report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReport {
    pub line: u64,
    pub entries: Vec<StallEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Ranks,
    Tensors,
}

#[derive(Debug)]
struct Open {
    form: Form,
    report: StallReport,
    ranks: usize,
}

/// Reads the stall reports of one input.
#[derive(Debug, Default)]
pub struct StallReader {
    open: Option<Open>,
    read: usize,
}

fn number<T: std::str::FromStr>(input: &str) -> IResult<&str, T> {
    map_res(digit1, str::parse).parse(input)
}

/// A tensor's name in a list: no separator, bracket or space in it.
fn name(input: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c != ',' && c != ']' && !c.is_whitespace()).parse(input)
}

/// A list of tensors' names as printed, and whether it was cut.
struct Names<'a> {
    names: Vec<&'a str>,
    cut: bool,
}

/// `[a, b, c ...]`.
fn tensor_list(input: &str) -> IResult<&str, Names<'_>> {
    let (rest, (names, cut)) = delimited(
        char('['),
        (
            separated_list1(tag(", "), name),
            opt(tag(" ...")).map(|c| c.is_some()),
        ),
        char(']'),
    )
    .parse(input)?;
    let (rest, _) = (space0, eof).parse(rest)?;
    Ok((rest, Names { names, cut }))
}

/// `3: [a, b]` or `3!: [a, b]`; the number may already have been taken
/// as a launcher's label, which leaves the list alone.
fn rank_line(input: &str) -> IResult<&str, (Option<u32>, Names<'_>)> {
    (
        opt(terminated(number::<u32>, (opt(char('!')), tag(": ")))),
        tensor_list,
    )
        .parse(input)
}

/// ` [missing ranks: 1, 3]` after a tensor's name.
fn ranks_of(input: &str) -> IResult<&str, (StallSide, Vec<u32>)> {
    (
        alt((
            value(StallSide::Missing, tag(" [missing ranks: ")),
            value(StallSide::Ready, tag(" [ready ranks: ")),
        )),
        terminated(
            separated_list1((char(','), space0), number::<u32>),
            char(']'),
        ),
    )
        .parse(input)
}

/// The tensors a line lists with their ranks, in the earlier form.
fn tensor_entries(text: &str) -> Vec<(&str, StallSide, Vec<u32>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((before, at)) = next_list(text, from) {
        let Ok((rest, (side, ranks))) = ranks_of(at) else {
            from = text.len() - at.len() + 1;
            continue;
        };
        // The name runs back to a space, a comma or the colon of
        // `Stalled ops:`.
        let name = before
            .rsplit(|c: char| c.is_whitespace() || c == ',' || c == ':')
            .next()
            .unwrap_or_default();
        if !name.is_empty() {
            out.push((name, side, ranks));
        }
        from = text.len() - rest.len();
    }
    out
}

/// The next list of ranks at or after byte `from`: the text before it and
/// the text from it.
fn next_list(text: &str, from: usize) -> Option<(&str, &str)> {
    let tail = text.get(from..)?;
    let at = [" [missing ranks: ", " [ready ranks: "]
        .iter()
        .filter_map(|tag| tail.find(tag))
        .min()?;
    Some((text.get(..from + at)?, tail.get(at..)?))
}

fn opens_rank_lists(text: &str) -> bool {
    let text = text.trim_end();
    text.ends_with("Missing ranks:") || text.ends_with("Stalled ranks:")
}

fn opens_tensor_lists(text: &str) -> bool {
    text.contains("waiting for remainder of ranks") || text.contains("Stalled ops:")
}

impl StallReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a report is in progress: its next lines must be fed.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Feeds line `number` (`text` with its launcher prefix removed, the
    /// prefix's rank `rank`, `shown` as printed); a report it completes
    /// goes to `out`. A report starts only where `may_start`.
    pub fn feed(
        &mut self,
        text: &str,
        shown: &str,
        rank: Option<u32>,
        number: u64,
        may_start: bool,
        out: &mut Vec<StallReport>,
    ) {
        if !text.contains("ranks")
            && !text.contains("Stalled ops:")
            && self.open.as_ref().is_none_or(|o| o.form != Form::Ranks)
        {
            self.close(out);
            return;
        }
        if opens_rank_lists(text) {
            self.close(out);
            self.start(Form::Ranks, number, may_start);
            return;
        }
        let entries = tensor_entries(text);
        let header = opens_tensor_lists(text);
        if header
            || (!entries.is_empty() && self.open.as_ref().is_none_or(|o| o.form != Form::Tensors))
        {
            self.close(out);
            self.start(Form::Tensors, number, may_start);
        }
        if !entries.is_empty() {
            for (name, side, ranks) in entries {
                self.add(
                    StallFact::Tensor {
                        name: coroner_model::inert_capped(name, MAX_NAME),
                        side,
                        ranks,
                    },
                    number,
                    shown,
                );
            }
            return;
        }
        if header {
            return;
        }
        if self.open.as_ref().is_some_and(|o| o.form == Form::Ranks) {
            if let Ok((_, (named, list))) = rank_line(text.trim_end()) {
                if let Some(rank) = named.or(rank) {
                    let truncated = list.cut;
                    let tensors = list
                        .names
                        .into_iter()
                        .take(MAX_NAMES)
                        .map(|n| coroner_model::inert_capped(n, MAX_NAME))
                        .collect();
                    self.add(
                        StallFact::Rank {
                            rank,
                            tensors,
                            truncated,
                        },
                        number,
                        shown,
                    );
                    return;
                }
            }
        }
        self.close(out);
    }

    fn start(&mut self, form: Form, number: u64, may_start: bool) {
        if may_start && self.read < MAX_REPORTS {
            self.open = Some(Open {
                form,
                report: StallReport {
                    line: number,
                    entries: Vec::new(),
                },
                ranks: 0,
            });
        }
    }

    fn add(&mut self, mut fact: StallFact, number: u64, shown: &str) {
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if open.report.entries.len() >= MAX_ENTRIES {
            return;
        }
        if let StallFact::Tensor { ranks, .. } = &mut fact {
            ranks.truncate(MAX_RANKS.saturating_sub(open.ranks));
            if ranks.is_empty() {
                return;
            }
            open.ranks += ranks.len();
        }
        open.report.entries.push(StallEntry {
            fact,
            line: number,
            text: coroner_model::inert_capped(shown.trim_end(), 400),
        });
    }

    fn close(&mut self, out: &mut Vec<StallReport>) {
        if let Some(open) = self.open.take() {
            if !open.report.entries.is_empty() {
                self.read += 1;
                out.push(open.report);
            }
        }
    }

    /// Completes the report still open (the end of the input).
    pub fn finish(&mut self, out: &mut Vec<StallReport>) {
        self.close(out);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<StallReport> {
        let mut reader = StallReader::new();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = crate::strip_rank_prefix(line);
            reader.feed(p.rest, line, p.rank, i as u64 + 1, true, &mut out);
        }
        reader.finish(&mut out);
        out
    }

    fn rank(rank: u32, tensors: &[&str], truncated: bool) -> StallFact {
        StallFact::Rank {
            rank,
            tensors: tensors.iter().map(|t| (*t).to_owned()).collect(),
            truncated,
        }
    }

    // The report of https://github.com/horovod/horovod/issues/2662, under
    // Open MPI's `--tag-output`.
    #[test]
    fn each_rank_lists_the_tensors_it_has_not_submitted() {
        let text = concat!(
            "[1,0]<stderr>:[2021-02-10 17:39:53.403710: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. \n",
            "[1,0]<stderr>:Missing ranks:\n",
            "[1,0]<stderr>:0: [broadcast.noname.3765, broadcast.noname.3873]\n",
            "[1,0]<stderr>:1: [broadcast.noname.3873]\n",
            "[1,0]<stderr>:2!: [broadcast.noname.3765]\n",
            "[1,3]<stdout>:test/parallel/test_torch.py::TorchTests::test_horovod_join_broadcast\n",
        );
        let reports = read(text);
        assert_eq!(reports.len(), 1);
        let facts: Vec<&StallFact> = reports[0].entries.iter().map(|e| &e.fact).collect();
        assert_eq!(
            facts,
            [
                &rank(
                    0,
                    &["broadcast.noname.3765", "broadcast.noname.3873"],
                    false
                ),
                &rank(1, &["broadcast.noname.3873"], false),
                &rank(2, &["broadcast.noname.3765"], false),
            ]
        );
        assert_eq!(reports[0].entries[1].line, 4);
    }

    #[test]
    fn a_rank_taken_as_a_label_and_a_cut_list_are_read() {
        let text = concat!(
            "Stalled ranks:\n",
            "6: [horovod_allreduce.0, horovod_allreduce.1, horovod_allreduce.10 ...]\n",
            "Epoch 3\n",
            "0: [horovod_allreduce.7]\n",
        );
        let reports = read(text);
        assert_eq!(reports.len(), 1);
        assert_eq!(
            reports[0].entries[0].fact,
            rank(
                6,
                &[
                    "horovod_allreduce.0",
                    "horovod_allreduce.1",
                    "horovod_allreduce.10"
                ],
                true
            )
        );
        assert_eq!(reports[0].entries.len(), 1);
    }

    // https://github.com/horovod/horovod/issues/336 and #1012.
    #[test]
    fn earlier_releases_list_tensors_with_their_ranks() {
        let text = concat!(
            "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. Stalled ops: HorovodAllreduce_loss_Mean_0 [ready ranks: 3], DistributedMomentumOptimizer_Allreduce/HorovodAllreduce_grad_0 [ready ranks: 2, 0, 1]\n",
            "[1,0]<stderr>:Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]\n",
            "[1,0]<stderr>:[2019-04-13 13:56:31.861765: W horovod/common/operations.cc:588] HorovodBroadcast_dense_1_kernel_0 [missing ranks: 1, 4]\n",
        );
        let reports = read(text);
        assert_eq!(reports.len(), 2);
        let names: Vec<(&str, StallSide, Vec<u32>)> = reports
            .iter()
            .flat_map(|r| &r.entries)
            .map(|e| match &e.fact {
                StallFact::Tensor { name, side, ranks } => (name.as_str(), *side, ranks.clone()),
                StallFact::Rank { .. } => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                ("HorovodAllreduce_loss_Mean_0", StallSide::Ready, vec![3]),
                (
                    "DistributedMomentumOptimizer_Allreduce/HorovodAllreduce_grad_0",
                    StallSide::Ready,
                    vec![2, 0, 1]
                ),
                (
                    "HorovodBroadcast_dense_1_bias_0",
                    StallSide::Missing,
                    vec![1]
                ),
                (
                    "HorovodBroadcast_dense_1_kernel_0",
                    StallSide::Missing,
                    vec![1, 4]
                ),
            ]
        );
    }

    #[test]
    fn other_lines_are_no_report() {
        let text = concat!(
            "Missing ranks:\n",
            "[2021-02-10 17:39:53.403710: W horovod/common/stall_inspector.cc:105] One more\n",
            "ranks: [0, 1]\n",
            "epoch 1 [missing ranks: ]\n",
        );
        assert!(read(text).is_empty());
    }
}
