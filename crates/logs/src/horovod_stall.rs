//! Horovod's stall reports: which ranks have not submitted which tensors.
//!
//! Horovod's coordinator warns when tensors wait for some ranks longer
//! than its stall check time (`One or more tensors were submitted to be
//! reduced, gathered or broadcasted by subset of ranks and are waiting for
//! remainder of ranks …`). From 0.16.2 the warning lists each rank that
//! has not submitted some tensor, with the names of those tensors in name
//! order: six of them at most, ` ...` after the sixth (whether or not more
//! follow), a `!` after a rank past the shutdown time. `Stalled ranks:`
//! heads the list until 0.20.0, `Missing ranks:` from 0.20.1:
//!
//! ```text
//! Missing ranks:
//! 0: [broadcast.noname.3765, broadcast.noname.3873]
//! 1!: [broadcast.noname.3873]
//! ```
//!
//! Earlier releases list each stalled tensor with the ranks that have
//! submitted it (`[ready ranks: …]`, to 0.13.5) or those it waits for
//! (`[missing ranks: …]`, 0.13.6 to 0.16.1), after `Stalled ops:` and on
//! log lines of their own:
//!
//! ```text
//! ... Stalled ops: HorovodAllreduce_loss_0 [ready ranks: 3], HorovodAllreduce_grad_0 [ready ranks: 2, 0, 1]
//! [... W horovod/common/operations.cc:588] HorovodBroadcast_bias_0 [missing ranks: 1]
//! ```
//!
//! A report is the run of consecutive lines of one form after its header,
//! or a run of tensor lines without one (`headed` false: such a run may
//! join checks made at different times). A rank's list is read only where
//! its line carries the header's launcher prefix, with rank numbers and
//! names in the order Horovod prints them (ascending): another process's
//! output printed between is not a list. A list past the bounds is
//! dropped whole, never cut, and the report marked incomplete.

use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, space0};
use nom::combinator::{eof, map_res, opt};
use nom::multi::{many_m_n, separated_list1};
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

/// Reports kept per input, entries kept per report, ranks kept per report
/// (all its lists together) and per list.
const MAX_REPORTS: usize = 16;
const MAX_ENTRIES: usize = 256;
const MAX_RANKS: usize = 16_384;
const MAX_LIST: usize = 8_192;
/// Characters kept of a tensor's name, and names kept per rank (Horovod
/// prints six).
const MAX_NAME: usize = 160;
const MAX_NAMES: usize = 8;
/// Characters kept of a line shown as evidence.
const MAX_LINE: usize = 400;

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
    /// `truncated` where names may have been left out after the last.
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

/// A fact and the number of the line it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallEntry {
    pub fact: StallFact,
    pub line: u64,
    /// The entry's own part of a line too long to keep whole (a release
    /// that lists every tensor on the warning's line).
    pub excerpt: Option<String>,
}

/// One stall report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReport {
    pub line: u64,
    /// The time of the warning that opened the report, when its line
    /// shows one (`2021-02-10T17:39:53.403710`).
    pub time: Option<String>,
    /// Whether the report starts at Horovod's header.
    pub headed: bool,
    /// Whether no list of the report was dropped for the bounds.
    pub complete: bool,
    pub entries: Vec<StallEntry>,
    /// The lines the entries were read from, each once, as printed.
    pub lines: Vec<(u64, String)>,
}

impl StallReport {
    /// The text of line `number`, as printed.
    pub fn text_of(&self, number: u64) -> Option<&str> {
        self.lines
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, text)| text.as_str())
    }

    /// What shows `entry`: its part of a long line, else its line.
    pub fn text_of_entry<'a>(&'a self, entry: &'a StallEntry) -> Option<&'a str> {
        entry
            .excerpt
            .as_deref()
            .or_else(|| self.text_of(entry.line))
    }
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
    /// What the header's line has before `Missing ranks:`, without its
    /// times: every rank's line carries the same.
    prefix: String,
    /// The last rank whose list was read.
    last_rank: Option<u32>,
}

/// Reads the stall reports of one input.
#[derive(Debug, Default)]
pub struct StallReader {
    open: Option<Open>,
    read: usize,
    /// The line and time of the last warning seen: the list of ranks
    /// follows it on the next line.
    warned: Option<(u64, Option<String>)>,
}

/// A tensor's list as a line gives it.
struct TensorList<'a> {
    name: &'a str,
    side: StallSide,
    /// `None` for a list longer than the bound.
    ranks: Option<Vec<u32>>,
    /// Where the name and its list are in the line.
    span: std::ops::Range<usize>,
}

/// The tensors' lists of a line, and whether more followed than were
/// read.
struct TensorLists<'a> {
    lists: Vec<TensorList<'a>>,
    more: bool,
}

/// What a line is to the reader.
enum Line<'a> {
    /// `Missing ranks:` / `Stalled ranks:`.
    RankHeader,
    /// The warning or `Stalled ops:`, with the tensors on its line.
    TensorHeader(TensorLists<'a>),
    Tensors(TensorLists<'a>),
    /// A rank and its names, and whether the list was cut.
    Rank(u32, Vec<&'a str>, bool),
    Other,
}

fn decimal<T: std::str::FromStr>(input: &str) -> IResult<&str, T> {
    map_res(digit1, str::parse).parse(input)
}

/// A tensor's name in a list: no separator, bracket or space in it.
fn name(input: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c != ',' && c != ']' && !c.is_whitespace()).parse(input)
}

/// `[a, b, c ...]`: the names and whether ` ...` ends them.
fn tensor_list(input: &str) -> IResult<&str, (Vec<&str>, bool)> {
    let (rest, list) = delimited(
        char('['),
        (
            separated_list1(tag(", "), name),
            opt(tag(" ...")).map(|c| c.is_some()),
        ),
        char(']'),
    )
    .parse(input)?;
    let (rest, _) = (space0, eof).parse(rest)?;
    Ok((rest, list))
}

/// `3: ` or `3!: ` before a rank's list.
fn rank_label(input: &str) -> IResult<&str, u32> {
    terminated(decimal::<u32>, (opt(char('!')), tag(": "))).parse(input)
}

/// The rank numbers after `[missing ranks: ` up to `]`; `None` when there
/// are more than the bound.
fn rank_numbers(input: &str) -> IResult<&str, Option<Vec<u32>>> {
    let (rest, (first, more)) = (
        decimal::<u32>,
        many_m_n(
            0,
            MAX_LIST - 1,
            preceded((char(','), space0), decimal::<u32>),
        ),
    )
        .parse(input)?;
    if rest.starts_with(',') {
        return Ok((rest, None));
    }
    let (rest, _) = char(']').parse(rest)?;
    let mut ranks = Vec::with_capacity(more.len() + 1);
    ranks.push(first);
    ranks.extend(more);
    Ok((rest, Some(ranks)))
}

/// The tensors a line lists with their ranks, in the earlier form, at most
/// `room` of them: each ` ranks: ` found once, the word before it saying
/// which side the list names.
fn tensor_lists(text: &str, room: usize) -> TensorLists<'_> {
    let mut lists = Vec::new();
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|t| t.find(" ranks: ")) {
        let at = from + at;
        let after = at + " ranks: ".len();
        from = after;
        let Some(before) = text.get(..at) else {
            break;
        };
        let (owner, side) = if let Some(owner) = before.strip_suffix(" [missing") {
            (owner, StallSide::Missing)
        } else if let Some(owner) = before.strip_suffix(" [ready") {
            (owner, StallSide::Ready)
        } else {
            continue;
        };
        let Ok((rest, ranks)) = rank_numbers(text.get(after..).unwrap_or("")) else {
            continue;
        };
        from = text.len() - rest.len();
        // The name runs back to a space, a comma or the colon of
        // `Stalled ops:`.
        let name = owner
            .rsplit(|c: char| c.is_whitespace() || c == ',' || c == ':')
            .next()
            .unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        if lists.len() == room {
            return TensorLists { lists, more: true };
        }
        lists.push(TensorList {
            name,
            side,
            ranks,
            span: owner.len() - name.len()..from,
        });
    }
    TensorLists { lists, more: false }
}

/// The time a line shows, as printed or after a launcher's prefix.
fn line_time(shown: &str, text: &str) -> Option<String> {
    crate::line_time(shown)
        .or_else(|| crate::line_time(text))
        .map(|t| t.display())
}

fn opens_rank_lists(text: &str) -> bool {
    let text = text.trim_end();
    text.ends_with("Missing ranks:") || text.ends_with("Stalled ranks:")
}

fn opens_tensor_lists(text: &str) -> bool {
    text.contains("waiting for remainder of ranks") || text.contains("Stalled ops:")
}

/// Where the header of rank lists starts in `shown`, the line as
/// printed.
fn rank_header_at(shown: &str) -> Option<usize> {
    shown
        .rfind("Missing ranks:")
        .or_else(|| shown.rfind("Stalled ranks:"))
}

/// A rank's list on `shown`, whose text after the launcher's prefix is
/// `text`: the rank's own label (`3: [a]`) after the header's `prefix`, or,
/// where a launcher's label took the number (`srun --label`, a bare `[a]`
/// left), that label after the header's prefix. Names come in ascending
/// order and are never quoted.
fn rank_line<'a>(text: &'a str, shown: &str, prefix: &str) -> Option<(u32, Vec<&'a str>, bool)> {
    let line_prefix = shown.strip_suffix(text)?;
    let trimmed = text.trim_end();
    let (rank, list, before) = match rank_label(trimmed) {
        Ok((list, rank)) => (rank, list, line_prefix),
        Err(_) => {
            let label = line_prefix.strip_suffix(": ")?;
            let digits_at = label
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |i| i + 1);
            let before = label.get(..digits_at)?;
            if !(before.is_empty() || before.ends_with(' ')) {
                return None;
            }
            (label.get(digits_at..)?.parse().ok()?, trimmed, before)
        }
    };
    if crate::prefix::without_times(before) != prefix {
        return None;
    }
    let (_, (names, cut)) = tensor_list(list).ok()?;
    let in_order = names.windows(2).all(|w| matches!(w, [a, b] if a < b));
    let quoted = names.iter().any(|n| n.contains(['\'', '"']));
    (in_order && !quoted).then_some((rank, names, cut))
}

impl StallReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a report is in progress: its next lines must be fed.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    fn form(&self) -> Option<Form> {
        self.open.as_ref().map(|o| o.form)
    }

    /// How many more tensors' lists a line may add: to the open report of
    /// that form, else to a new one.
    fn room(&self) -> usize {
        match &self.open {
            Some(open) if open.form == Form::Tensors => MAX_ENTRIES - open.report.entries.len(),
            _ => MAX_ENTRIES,
        }
    }

    fn classify<'a>(&self, text: &'a str, shown: &str) -> Line<'a> {
        let ranks_open = self.form() == Some(Form::Ranks);
        if !text.contains("ranks") && !text.contains("Stalled ops:") && !ranks_open {
            return Line::Other;
        }
        if opens_rank_lists(text) {
            return Line::RankHeader;
        }
        let room = self.room();
        if opens_tensor_lists(text) {
            return Line::TensorHeader(tensor_lists(text, room));
        }
        let lists = tensor_lists(text, room);
        if !lists.lists.is_empty() || lists.more {
            return Line::Tensors(lists);
        }
        let Some(open) = self.open.as_ref().filter(|o| o.form == Form::Ranks) else {
            return Line::Other;
        };
        match rank_line(text, shown, &open.prefix) {
            Some((rank, names, cut)) if open.last_rank.is_none_or(|last| rank > last) => {
                Line::Rank(rank, names, cut)
            }
            _ => Line::Other,
        }
    }

    /// Feeds line `number` (`text` with its launcher prefix removed,
    /// `shown` as printed); a report it completes goes to `out`. A report
    /// starts only where `may_start`.
    pub fn feed(
        &mut self,
        text: &str,
        shown: &str,
        number: u64,
        may_start: bool,
        out: &mut Vec<StallReport>,
    ) {
        match self.classify(text, shown) {
            Line::Other => self.close(out),
            Line::RankHeader => {
                self.close(out);
                self.start(Form::Ranks, true, number, may_start);
                let time = match &self.warned {
                    Some((line, time)) if *line + 1 == number => time.clone(),
                    _ => line_time(shown, text),
                };
                if let Some(open) = self.open.as_mut() {
                    open.report.time = time;
                }
                let at = rank_header_at(shown).unwrap_or(0);
                let prefix = crate::prefix::without_times(shown.get(..at).unwrap_or(""));
                if let Some(open) = self.open.as_mut() {
                    open.prefix = prefix.to_owned();
                }
            }
            Line::TensorHeader(lists) => {
                self.close(out);
                self.start(Form::Tensors, true, number, may_start);
                let time = line_time(shown, text);
                self.warned = Some((number, time.clone()));
                if let Some(open) = self.open.as_mut() {
                    open.report.time = time;
                }
                self.add_tensors(lists, text, number, shown);
            }
            Line::Tensors(lists) => {
                if self.form() != Some(Form::Tensors) {
                    self.close(out);
                    self.start(Form::Tensors, false, number, may_start);
                }
                self.add_tensors(lists, text, number, shown);
            }
            Line::Rank(rank, names, cut) => {
                if let Some(open) = self.open.as_mut() {
                    open.last_rank = Some(rank);
                }
                let truncated = cut || names.len() > MAX_NAMES;
                let tensors = names
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
                    None,
                );
            }
        }
    }

    fn start(&mut self, form: Form, headed: bool, number: u64, may_start: bool) {
        if may_start && self.read < MAX_REPORTS {
            self.open = Some(Open {
                form,
                report: StallReport {
                    line: number,
                    time: None,
                    headed,
                    complete: true,
                    entries: Vec::new(),
                    lines: Vec::new(),
                },
                ranks: 0,
                prefix: String::new(),
                last_rank: None,
            });
        }
    }

    /// Adds the lists of line `number`, whose text after its launcher's
    /// prefix ends `shown`.
    fn add_tensors(&mut self, lists: TensorLists<'_>, text: &str, number: u64, shown: &str) {
        if lists.more {
            self.mark_incomplete();
        }
        let offset = shown.len().saturating_sub(text.len());
        for list in lists.lists {
            let Some(ranks) = list.ranks else {
                self.mark_incomplete();
                continue;
            };
            let excerpt = (shown.chars().count() > MAX_LINE)
                .then(|| shown.get(offset + list.span.start..offset + list.span.end))
                .flatten()
                .map(|part| coroner_model::inert_capped(&format!("… {part}"), MAX_LINE));
            self.add(
                StallFact::Tensor {
                    name: coroner_model::inert_capped(list.name, MAX_NAME),
                    side: list.side,
                    ranks,
                },
                number,
                shown,
                excerpt,
            );
        }
    }

    fn mark_incomplete(&mut self) {
        if let Some(open) = self.open.as_mut() {
            open.report.complete = false;
        }
    }

    fn add(&mut self, fact: StallFact, number: u64, shown: &str, excerpt: Option<String>) {
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let listed = match &fact {
            StallFact::Tensor { ranks, .. } => ranks.len(),
            StallFact::Rank { .. } => 0,
        };
        if open.report.entries.len() >= MAX_ENTRIES || open.ranks + listed > MAX_RANKS {
            open.report.complete = false;
            return;
        }
        open.ranks += listed;
        open.report.entries.push(StallEntry {
            fact,
            line: number,
            excerpt,
        });
        if open.report.lines.last().is_none_or(|(n, _)| *n != number) {
            open.report.lines.push((
                number,
                coroner_model::inert_capped(shown.trim_end(), MAX_LINE),
            ));
        }
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
            reader.feed(p.rest, line, i as u64 + 1, true, &mut out);
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

    fn tensor(name: &str, side: StallSide, ranks: &[u32]) -> StallFact {
        StallFact::Tensor {
            name: name.to_owned(),
            side,
            ranks: ranks.to_vec(),
        }
    }

    fn facts(report: &StallReport) -> Vec<&StallFact> {
        report.entries.iter().map(|e| &e.fact).collect()
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
        assert_eq!(
            facts(&reports[0]),
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
        assert!(reports[0].headed && reports[0].complete);
        assert_eq!(
            reports[0].time.as_deref(),
            Some("2021-02-10T17:39:53.403710")
        );
        assert_eq!(reports[0].entries[1].line, 4);
        assert_eq!(
            reports[0].text_of(4),
            Some("[1,0]<stderr>:1: [broadcast.noname.3873]")
        );
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
            facts(&reports[0]),
            [&rank(
                6,
                &[
                    "horovod_allreduce.0",
                    "horovod_allreduce.1",
                    "horovod_allreduce.10"
                ],
                true
            )]
        );
    }

    #[test]
    fn a_list_with_no_rank_of_its_own_takes_none_from_other_prefixes() {
        // Open MPI's tag names the printing rank, not the list's.
        let text = "Missing ranks:\n[1,0]<stderr>:[broadcast.noname.1]\n";
        assert!(read(text).is_empty());
        // Slurm's label took the list's number.
        let text = "Missing ranks:\n3: [broadcast.noname.1]\n";
        assert_eq!(
            facts(&read(text)[0]),
            [&rank(3, &["broadcast.noname.1"], false)]
        );
    }

    #[test]
    fn other_processes_lines_between_are_not_lists() {
        // Slurm's task 1 prints a list of its own after task 0's report.
        let text = concat!(
            "0: Missing ranks:\n",
            "0: 2: [allreduce.fc.bias, allreduce.fc.weight]\n",
            "1: [0.5, 0.25]\n",
        );
        let reports = read(text);
        assert_eq!(
            facts(&reports[0]),
            [&rank(
                2,
                &["allreduce.fc.bias", "allreduce.fc.weight"],
                false
            )]
        );
        // A host name's digits are no rank; another process's tag is not
        // the header's.
        for text in [
            "Missing ranks:\nworker-3: [allreduce.0, allreduce.1]\n",
            "[1,0]<stderr>:Missing ranks:\n[1,3]<stdout>:1: [x]\n",
            // Names out of Horovod's order, quoted names, ranks going back.
            "Missing ranks:\n1: [b.0, a.0]\n",
            "Missing ranks:\n1: ['a', 'b']\n",
        ] {
            assert!(read(text).is_empty(), "{text}");
        }
        let back = read("Missing ranks:\n2: [a.0]\n1: [b.0]\n");
        assert_eq!(facts(&back[0]), [&rank(2, &["a.0"], false)]);
        // Spaces after a list change nothing.
        let spaced = read("Missing ranks:\n1: [a.0]  \n2: [b.0]  \n");
        assert_eq!(spaced[0].entries.len(), 2);
        // A collector's times differ from line to line.
        let timed = read(concat!(
            "2026-11-29T21:00:10.123456789Z Missing ranks:\n",
            "2026-11-29T21:00:10.123461234Z 0: [a.0]\n",
        ));
        assert_eq!(facts(&timed[0]), [&rank(0, &["a.0"], false)]);
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
        assert_eq!(
            facts(&reports[0]),
            [
                &tensor("HorovodAllreduce_loss_Mean_0", StallSide::Ready, &[3]),
                &tensor(
                    "DistributedMomentumOptimizer_Allreduce/HorovodAllreduce_grad_0",
                    StallSide::Ready,
                    &[2, 0, 1]
                ),
            ]
        );
        assert_eq!(
            facts(&reports[1]),
            [
                &tensor("HorovodBroadcast_dense_1_bias_0", StallSide::Missing, &[1]),
                &tensor(
                    "HorovodBroadcast_dense_1_kernel_0",
                    StallSide::Missing,
                    &[1, 4]
                ),
            ]
        );
        assert!(reports.iter().all(|r| r.headed));
        // One line holding both lists is kept once.
        assert_eq!(reports[0].lines.len(), 1);
    }

    #[test]
    fn an_entry_of_a_long_line_keeps_its_own_part() {
        let header = "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. Stalled ops: ";
        let text = format!("{header}HorovodAllreduce_loss_Mean_0 [ready ranks: 3], HorovodAllreduce_grad_0 [ready ranks: 2, 0, 1]\n");
        let report = &read(&text)[0];
        let shown: Vec<&str> = report
            .entries
            .iter()
            .map(|e| report.text_of_entry(e).unwrap())
            .collect();
        assert_eq!(
            shown,
            [
                "… HorovodAllreduce_loss_Mean_0 [ready ranks: 3]",
                "… HorovodAllreduce_grad_0 [ready ranks: 2, 0, 1]"
            ]
        );
    }

    #[test]
    fn tensor_lines_without_a_header_are_an_unheaded_report() {
        let text = "[2019-04-13 13:55:31.858119: W horovod/common/operations.cc:588] HorovodBroadcast_dense_kernel_Momentum_0 [missing ranks: 1]\n";
        let reports = read(text);
        assert!(!reports[0].headed);
    }

    #[test]
    fn lists_past_the_bounds_are_dropped_and_the_report_marked() {
        let long: Vec<String> = (0..=MAX_LIST as u32).map(|r| r.to_string()).collect();
        let text = format!(
            "Stalled ops: a_0 [missing ranks: {}], b_0 [missing ranks: 1]\n",
            long.join(", ")
        );
        let reports = read(&text);
        assert_eq!(
            facts(&reports[0]),
            [&tensor("b_0", StallSide::Missing, &[1])]
        );
        assert!(!reports[0].complete);
    }

    #[test]
    fn many_lists_on_one_line_are_read_in_linear_time() {
        let line = "x [missing ranks: 1], ".repeat(200_000);
        let started = std::time::Instant::now();
        let reports = read(&format!("Stalled ops: {line}\n"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(reports[0].entries.len(), MAX_ENTRIES);
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
