//! Python tracebacks, read line by line into their exceptions and frames.
//!
//! A [`TracebackReader`] is fed the lines of one input with their launcher
//! prefixes removed (so `[rank1]:   File ...` arrives as `File ...`, its
//! indentation gone) and the rank they named. It keeps one traceback in
//! progress per rank, so the tracebacks of interleaved ranks do not mix,
//! and returns each when it is complete:
//!
//! ```text
//! Traceback (most recent call last):            opens it
//!   File "train.py", line 65, in load_batch     a frame
//!     return torch.empty(...)                   the frame's source line
//!            ^^^^^^^^^^^^                       position markers, skipped
//! torch.OutOfMemoryError: CUDA out of memory.   the exception: Frames end
//!                                               blank lines and message
//! The above exception was the direct cause ...  continuation: Between
//!                                               a chain link, then the
//! Traceback (most recent call last):            next exception of the chain
//! ```
//!
//! A traceback ends at the first line after an exception that neither
//! continues it nor links to a next exception, after [`BETWEEN_LINES`]
//! lines, or at the end of the input ([`TracebackReader::finish`]).
//!
//! Each line costs the same however many tracebacks are open: they are
//! found by rank. At most [`MAX_OPEN`] are open at once; opening one more
//! closes the oldest, and [`TracebackReader::closed_early`] counts them.

use coroner_model::{inert_capped, ChainLink, PyException, PyFrame, Traceback};
use std::collections::{BTreeMap, HashMap};

/// Lines after an exception line in which a chain link may still come
/// (the rest of a multi-line message and blank lines).
pub const BETWEEN_LINES: u32 = 16;
/// Frames kept per exception: the outermost few and the innermost many.
const OUTER_FRAMES: usize = 8;
const INNER_FRAMES: usize = 56;
/// Exceptions kept per chain (the last ones).
const MAX_CHAIN: usize = 8;
/// Lines after `Traceback (...)` without a frame before the reader gives
/// up on it.
const MAX_STRAY: u32 = 4;
/// Longest message or source line kept, in characters.
const MAX_TEXT: usize = 300;
/// Tracebacks open at once (one per rank): a job of this many ranks
/// printing their tracebacks at the same time is read whole.
pub const MAX_OPEN: usize = 16_384;

const HEADER: &str = "Traceback (most recent call last):";
const CAUSE: &str = "The above exception was the direct cause of the following exception:";
const CONTEXT: &str = "During handling of the above exception, another exception occurred:";
/// How the interpreter announces an exception it reports and then goes
/// on from (`Exception ignored in: <function X.__del__ ...>`, and since
/// 3.13 `Exception ignored while ...`): one raised in a finalizer, a
/// callback or at shutdown, which did not end the program.
pub const IGNORED: &str = "Exception ignored ";
/// Lines from that announcement to the traceback's header at most, when
/// the lines name their rank; without one (every process's output mixed)
/// the header must follow the announcement at once.
const IGNORED_HEADER_WITHIN: u64 = 2;

/// Reads the tracebacks of one input.
#[derive(Debug, Default)]
pub struct TracebackReader {
    /// The tracebacks in progress by rank, each with its place in `order`.
    open: HashMap<Option<u32>, (u64, Open)>,
    /// The ranks of the open tracebacks, oldest first.
    order: BTreeMap<u64, Option<u32>>,
    /// The place in `order` of the next traceback opened.
    next: u64,
    /// Tracebacks closed because [`MAX_OPEN`] others were open.
    closed_early: u64,
    /// Whether the line fed last was an indented frame's source line.
    source_line: bool,
    /// Whether the line fed last was an exception of a traceback the
    /// interpreter ignored.
    ignored_exception: bool,
    /// The line of each rank's last `Exception ignored` announcement.
    announced_ignored: HashMap<Option<u32>, u64>,
}

/// A complete traceback and the rank whose output it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedTraceback {
    pub rank: Option<u32>,
    pub traceback: Traceback,
}

#[derive(Debug)]
struct Open {
    /// The header's line, when `^C` came before it.
    interrupted: Option<u64>,
    /// Announced by `Exception ignored ...`: it did not end the program.
    ignored: bool,
    done: Vec<PyException>,
    frames: Vec<PyFrame>,
    omitted: u64,
    follows: Option<ChainLink>,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading frames; `code` when the next line may be a frame's source.
    Frames { code: bool, stray: u32 },
    /// After an exception line: waiting for a chain link.
    Between { lines: u32, link: Option<ChainLink> },
}

impl TracebackReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a traceback is in progress: its next lines must be fed.
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// Feeds line `number` (prefix removed) of `rank`; a traceback that
    /// this line completes is appended to `out`. With `may_start` false,
    /// only tracebacks already open go on (lines read past the end of a
    /// part of an input).
    pub fn feed(
        &mut self,
        text: &str,
        rank: Option<u32>,
        number: u64,
        may_start: bool,
        out: &mut Vec<RankedTraceback>,
    ) {
        self.source_line = false;
        self.ignored_exception = false;
        let line = text.trim_end();
        let bare = line.trim_start();
        if bare.starts_with(IGNORED) {
            if self.announced_ignored.len() >= MAX_OPEN {
                self.announced_ignored.clear();
            }
            self.announced_ignored.insert(rank, number);
        }
        // `^C` before the header: the terminal's echo of the Ctrl-C that
        // raised the KeyboardInterrupt this traceback ends with.
        let interrupted = bare.strip_prefix("^C") == Some(HEADER);
        if bare == HEADER || interrupted {
            let open = self.open.get_mut(&rank).map(|(_, o)| o);
            let follows = match open.as_ref().map(|o| o.state) {
                Some(State::Between {
                    link: Some(link), ..
                }) => Some(link),
                _ => None,
            };
            match (open, follows) {
                (Some(open), Some(link)) => {
                    open.follows = Some(link);
                    open.state = State::Frames {
                        code: false,
                        stray: 0,
                    };
                }
                (open, _) => {
                    if open.is_some() {
                        self.close(rank, out);
                    }
                    if may_start {
                        let within = if rank.is_some() {
                            IGNORED_HEADER_WITHIN
                        } else {
                            1
                        };
                        let ignored = self
                            .announced_ignored
                            .remove(&rank)
                            .is_some_and(|at| number > at && number - at <= within);
                        let mut open = Open::new(interrupted, number);
                        open.ignored = ignored;
                        self.start(rank, open, out);
                    }
                }
            }
            return;
        }
        let Some((_, open)) = self.open.get_mut(&rank) else {
            return;
        };
        let step = open.read(line, bare, number);
        self.source_line = step == Step::Source && line != bare;
        self.ignored_exception = step == Step::Exception && open.ignored;
        if step == Step::Close {
            self.close(rank, out);
        }
    }

    /// Whether the line fed last was a frame's source line, indented under
    /// its `File ...` line: the program's code, not a message it printed.
    pub fn fed_source_line(&self) -> bool {
        self.source_line
    }

    /// Whether the line fed last was an exception of a traceback announced
    /// by `Exception ignored ...`: the interpreter reported it and went
    /// on, so it is not what ended the program.
    pub fn fed_ignored_exception(&self) -> bool {
        self.ignored_exception
    }

    /// How many tracebacks were closed before their end because
    /// [`MAX_OPEN`] others were open.
    pub fn closed_early(&self) -> u64 {
        self.closed_early
    }

    /// Opens `open` for `rank`, closing the oldest open traceback first
    /// when [`MAX_OPEN`] are.
    fn start(&mut self, rank: Option<u32>, open: Open, out: &mut Vec<RankedTraceback>) {
        if self.open.len() >= MAX_OPEN {
            if let Some((_, oldest)) = self.order.first_key_value() {
                let oldest = *oldest;
                self.close(oldest, out);
                self.closed_early += 1;
            }
        }
        self.order.insert(self.next, rank);
        self.open.insert(rank, (self.next, open));
        self.next += 1;
    }

    /// Completes every traceback still open (the end of the input).
    pub fn finish(&mut self, out: &mut Vec<RankedTraceback>) {
        while let Some((_, rank)) = self.order.first_key_value() {
            let rank = *rank;
            self.close(rank, out);
        }
    }

    /// Completes the traceback of `rank`, if one is open.
    fn close(&mut self, rank: Option<u32>, out: &mut Vec<RankedTraceback>) {
        let Some((place, mut open)) = self.open.remove(&rank) else {
            return;
        };
        self.order.remove(&place);
        // An interrupt's traceback cut before its exception line (a paste
        // that stops at the last frame) is still the interrupt.
        if open.done.is_empty() && !open.frames.is_empty() {
            if let Some(line) = open.interrupted {
                open.push_exception("KeyboardInterrupt", line);
            }
        }
        if !open.done.is_empty() {
            out.push(RankedTraceback {
                rank,
                traceback: Traceback {
                    exceptions: open.done,
                },
            });
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Step {
    Go,
    /// The line was the exception a traceback ends with.
    Exception,
    /// The line was a frame's source line.
    Source,
    Close,
}

impl Open {
    fn new(interrupted: bool, header: u64) -> Self {
        Open {
            interrupted: interrupted.then_some(header),
            ignored: false,
            done: Vec::new(),
            frames: Vec::new(),
            omitted: 0,
            follows: None,
            state: State::Frames {
                code: false,
                stray: 0,
            },
        }
    }

    fn read(&mut self, line: &str, bare: &str, number: u64) -> Step {
        match self.state {
            State::Frames { code, stray } => {
                if let Some(frame) = parse_frame(bare) {
                    self.push_frame(frame);
                    self.state = State::Frames {
                        code: true,
                        stray: 0,
                    };
                } else if bare.is_empty()
                    || bare.chars().all(|c| matches!(c, '^' | '~' | ' '))
                    || bare.starts_with("[Previous line repeated")
                {
                } else if code && !(line == bare && looks_like_exception(bare)) {
                    if let Some(frame) = self.frames.last_mut() {
                        frame.code = Some(inert_capped(bare, MAX_TEXT));
                    }
                    self.state = State::Frames { code: false, stray };
                    return Step::Source;
                } else if !self.frames.is_empty() && line == bare {
                    self.push_exception(bare, number);
                    self.state = State::Between {
                        lines: 0,
                        link: None,
                    };
                    return Step::Exception;
                } else if stray >= MAX_STRAY {
                    return Step::Close;
                } else {
                    self.state = State::Frames {
                        code: false,
                        stray: stray + 1,
                    };
                }
                Step::Go
            }
            State::Between { lines, link } => {
                if lines >= BETWEEN_LINES {
                    return Step::Close;
                }
                let link = match bare {
                    CAUSE => Some(ChainLink::Cause),
                    CONTEXT => Some(ChainLink::Context),
                    _ => link,
                };
                self.state = State::Between {
                    lines: lines + 1,
                    link,
                };
                Step::Go
            }
        }
    }

    fn push_frame(&mut self, frame: PyFrame) {
        if self.frames.len() >= OUTER_FRAMES + INNER_FRAMES {
            // Keep the outermost frames and a window of the innermost.
            self.frames.remove(OUTER_FRAMES);
            self.omitted += 1;
        }
        self.frames.push(frame);
    }

    fn push_exception(&mut self, line: &str, number: u64) {
        let (exception, message) = match line.split_once(':') {
            Some((name, rest)) if is_dotted_name(name) => (name, rest.trim()),
            _ => (line, ""),
        };
        if self.done.len() >= MAX_CHAIN {
            self.done.remove(0);
        }
        self.done.push(PyException {
            exception: inert_capped(exception, MAX_TEXT),
            message: inert_capped(message, MAX_TEXT),
            line: number,
            frames: std::mem::take(&mut self.frames),
            frames_omitted: std::mem::take(&mut self.omitted),
            follows: self.follows.take(),
        });
    }
}

/// `File "train.py", line 65, in load_batch`.
fn parse_frame(bare: &str) -> Option<PyFrame> {
    let rest = bare.strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (line, function) = match rest.split_once(", in ") {
        Some((line, function)) => (line, function.trim()),
        None => (rest, ""),
    };
    Some(PyFrame {
        file: inert_capped(file, MAX_TEXT),
        line: line.trim().parse().ok()?,
        function: inert_capped(function, MAX_TEXT),
        code: None,
    })
}

/// An exception line: a dotted name whose last part starts with a capital
/// (`ValueError`, `torch.OutOfMemoryError`, `KeyboardInterrupt`), alone or
/// followed by `:` and the message.
fn looks_like_exception(bare: &str) -> bool {
    let name = bare.split_once(':').map_or(bare, |(name, _)| name);
    is_dotted_name(name)
        && name
            .rsplit('.')
            .next()
            .and_then(|last| last.chars().next())
            .is_some_and(|c| c.is_ascii_uppercase())
}

fn is_dotted_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strip_rank_prefix;

    fn read(text: &str) -> Vec<RankedTraceback> {
        let mut reader = TracebackReader::new();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = strip_rank_prefix(line);
            reader.feed(p.rest, p.rank, i as u64 + 1, true, &mut out);
        }
        reader.finish(&mut out);
        out
    }

    #[test]
    fn only_an_indented_frames_source_line_is_source() {
        let text = "Traceback (most recent call last):\n\
                    \x20 File \"train.py\", line 9, in step\n\
                    \x20   print(\"CUDA out of memory, skipping batch\")\n\
                    \x20 File \"model.py\", line 3, in forward\n\
                    CUDA error: an illegal memory access was encountered\n\
                    ValueError: bad batch\n";
        let mut reader = TracebackReader::new();
        let mut out = Vec::new();
        let mut source = Vec::new();
        for (i, line) in text.lines().enumerate() {
            reader.feed(line, None, i as u64 + 1, true, &mut out);
            if reader.fed_source_line() {
                source.push(i + 1);
            }
        }
        // The unindented line after a frame is not taken for its source.
        assert_eq!(source, vec![3]);
    }

    /// The numbers of the lines that were exceptions of an ignored
    /// traceback.
    fn ignored_lines(text: &str) -> Vec<usize> {
        let mut reader = TracebackReader::new();
        let mut out = Vec::new();
        let mut ignored = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = strip_rank_prefix(line);
            reader.feed(p.rest, p.rank, i as u64 + 1, true, &mut out);
            if reader.fed_ignored_exception() {
                ignored.push(i + 1);
            }
        }
        ignored
    }

    #[test]
    fn only_the_exceptions_of_an_ignored_traceback_are_ignored() {
        // Python 3.5's wording from a pasted log, then a rank's own
        // failure; the announcement on another rank marks nothing.
        let text = "Exception ignored in: <bound method DataLoaderIter.__del__ of <x>>\n\
                    Traceback (most recent call last):\n\
                    \x20 File \"dataloader.py\", line 333, in __del__\n\
                    TypeError: 'NoneType' object is not iterable\n\
                    [rank0]: Exception ignored in: <function Holder.__del__ at 0x7f3d>\n\
                    [rank1]: Traceback (most recent call last):\n\
                    [rank1]:   File \"train.py\", line 9, in <module>\n\
                    [rank1]: ValueError: bad batch\n";
        assert_eq!(ignored_lines(text), vec![4]);
        assert_eq!(read(text).len(), 2);
    }

    #[test]
    fn each_rank_keeps_its_own_announcement() {
        let text = "[rank0]: Exception ignored in: <function Holder.__del__ at 0x7f3d>\n\
                    [rank1]: Exception ignored in: <function Holder.__del__ at 0x7f3e>\n\
                    [rank0]: Traceback (most recent call last):\n\
                    [rank0]:   File \"train.py\", line 9, in __del__\n\
                    [rank0]: TypeError: 'NoneType' object is not iterable\n\
                    Exception ignored in: <function Holder.__del__ at 0x7f3f>\n\
                    step 120\n\
                    Traceback (most recent call last):\n\
                    \x20 File \"train.py\", line 30, in <module>\n\
                    ValueError: bad batch\n";
        // Rank 0's traceback is marked though rank 1 announced after it;
        // without ranks, a header two lines on is another process's.
        assert_eq!(ignored_lines(text), vec![5]);
    }

    #[test]
    fn a_prefixed_traceback_without_indentation() {
        let got = read(
            "[rank1]: Traceback (most recent call last):\n\
             [rank1]:   File \"/srv/job/train.py\", line 9, in <module>\n\
             [rank1]:     raise ValueError(\"shape mismatch in batch 17\")\n\
             [rank1]: ValueError: shape mismatch in batch 17\n\
             [rank0]: step 3 loss 0.5\n",
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].rank, Some(1));
        let e = &got[0].traceback.exceptions[0];
        assert_eq!(e.exception, "ValueError");
        assert_eq!(e.message, "shape mismatch in batch 17");
        assert_eq!(e.line, 4);
        assert_eq!(e.frames.len(), 1);
        assert_eq!(e.frames[0].function, "<module>");
        assert_eq!(
            e.frames[0].code.as_deref(),
            Some("raise ValueError(\"shape mismatch in batch 17\")")
        );
    }

    #[test]
    fn a_frame_without_source_is_followed_by_the_exception() {
        let got = read(
            "Traceback (most recent call last):\n  File \"<string>\", line 2, in <module>\nTypeError: 'NoneType' object is not subscriptable\n",
        );
        let e = &got[0].traceback.exceptions[0];
        assert_eq!(e.exception, "TypeError");
        assert_eq!(e.frames[0].code, None);
    }

    #[test]
    fn interleaved_ranks_keep_their_own_frames() {
        let got = read(
            "[rank0]: Traceback (most recent call last):\n\
             [rank1]: Traceback (most recent call last):\n\
             [rank0]:   File \"a.py\", line 1, in f\n\
             [rank1]:   File \"b.py\", line 2, in g\n\
             [rank0]:     f()\n\
             [rank1]:     g()\n\
             [rank1]: KeyError: 'x'\n\
             [rank0]: IndexError: list index out of range\n",
        );
        let files: Vec<(Option<u32>, &str, &str)> = got
            .iter()
            .map(|t| {
                let e = &t.traceback.exceptions[0];
                (t.rank, e.frames[0].file.as_str(), e.exception.as_str())
            })
            .collect();
        assert!(
            files.contains(&(Some(0), "a.py", "IndexError")),
            "{files:?}"
        );
        assert!(files.contains(&(Some(1), "b.py", "KeyError")), "{files:?}");
    }

    #[test]
    fn deep_recursion_keeps_both_ends() {
        let mut text = String::from("Traceback (most recent call last):\n");
        for i in 0..1000 {
            text.push_str(&format!("  File \"r.py\", line {i}, in f\n    f()\n"));
        }
        text.push_str("RecursionError: maximum recursion depth exceeded\n");
        let got = read(&text);
        let e = &got[0].traceback.exceptions[0];
        assert_eq!(e.frames.len(), OUTER_FRAMES + INNER_FRAMES);
        assert_eq!(
            e.frames_omitted,
            1000 - (OUTER_FRAMES + INNER_FRAMES) as u64
        );
        assert_eq!(e.frames[0].line, 0);
        assert_eq!(e.frames.last().map(|f| f.line), Some(999));
    }

    fn fixture(name: &str) -> String {
        let path = format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn a_chain_raised_from_an_out_of_memory_error() {
        let got = read(&fixture("tracebacks/chained_cause.log"));
        assert_eq!(got.len(), 1);
        let chain = &got[0].traceback.exceptions;
        assert_eq!(chain.len(), 2);
        assert_eq!(chain[0].exception, "torch.OutOfMemoryError");
        assert!(chain[0]
            .message
            .starts_with("CUDA out of memory. Tried to allocate 200.00 GiB."));
        assert_eq!((chain[0].line, chain[0].follows), (5, None));
        assert_eq!(chain[0].frames.len(), 1);
        assert_eq!(
            (
                chain[0].frames[0].line,
                chain[0].frames[0].function.as_str()
            ),
            (65, "load_batch")
        );
        assert_eq!(chain[1].exception, "RuntimeError");
        assert_eq!(chain[1].message, "could not stage batch 17 on the GPU");
        assert_eq!(
            (chain[1].line, chain[1].follows),
            (14, Some(ChainLink::Cause))
        );
        let frames: Vec<(u64, &str)> = chain[1]
            .frames
            .iter()
            .map(|f| (f.line, f.function.as_str()))
            .collect();
        assert_eq!(frames, [(68, "<module>"), (67, "load_batch")]);
    }

    #[test]
    fn a_chain_raised_while_handling_an_out_of_memory_error() {
        let got = read(&fixture("tracebacks/chained_context.log"));
        let chain = &got[0].traceback.exceptions;
        assert_eq!(chain.len(), 2);
        assert_eq!(chain[1].exception, "FileNotFoundError");
        assert_eq!(chain[1].follows, Some(ChainLink::Context));
        assert_eq!(
            chain[1].frames[1].code.as_deref(),
            Some("with open(f\"/nonexistent/ckpt-{step}.pt\", \"wb\") as f:")
        );
    }

    #[test]
    fn torchrun_ranks_with_library_frames() {
        // Rank 1 raises; torchrun's own traceback (no rank prefix) follows.
        let got = read(&fixture("real-gpu/logs/torchrun_raise.log"));
        let rank1: Vec<&RankedTraceback> = got.iter().filter(|t| t.rank == Some(1)).collect();
        assert_eq!(rank1.len(), 1, "{got:#?}");
        let e = &rank1[0].traceback.exceptions[0];
        assert_eq!(e.exception, "ValueError");
        assert!(e
            .own_frame()
            .is_some_and(|f| f.file.ends_with("torchrun_fail.py")));
    }

    #[test]
    fn a_header_with_no_frames_is_dropped() {
        assert!(
            read("Traceback (most recent call last):\nsomething else\nand more\nx\ny\nz\n")
                .is_empty()
        );
    }
}
