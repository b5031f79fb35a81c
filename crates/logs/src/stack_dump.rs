//! Thread stack dumps of a live Python process, read line by line: what
//! `faulthandler` prints (on a timeout of `dump_traceback_later`, on a
//! registered signal such as `SIGUSR1`, or on a fatal signal) and what
//! `py-spy dump` prints.
//!
//! ```text
//! Timeout (0:00:12)!                                 the trigger, when one
//! Thread 0x00007f85c787c6c0 (most recent call first): a thread
//!   File "/srv/app/fh_hang.py", line 20 in heartbeat  its frames, innermost first
//!   <no Python frame>                                 (a thread in C code)
//! Current thread 0x00007f85c8b85140 (most recent call first):
//!
//! Process 775: python3 train.py                      py-spy's process header
//! Python v3.12.3 (/usr/bin/python3.12)
//! Thread 775 (idle): "MainThread"                    a thread, its state and name
//!     Queue.get (queue.py:171)                       a frame, innermost first
//! ```
//!
//! A [`StackDumpReader`] keeps one dump in progress per rank, like the
//! traceback reader, so the dumps of interleaved ranks do not mix. A dump
//! ends at the first line that is none of these (blank lines between
//! threads are part of it), or at the end of the input.

use coroner_model::{inert_capped, PyFrame};
use nom::branch::alt;
use nom::bytes::complete::{tag, take_till1, take_until, take_while1};
use nom::character::complete::{char, digit1, hex_digit1, space0};
use nom::combinator::{map, opt, recognize, rest, value};
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

/// Threads kept per dump, and frames per thread (faulthandler itself
/// prints at most 100 of each).
const MAX_THREADS: usize = 128;
const MAX_FRAMES: usize = 64;
/// Dumps in progress at most (one per rank).
const MAX_OPEN: usize = 1024;
/// Lines after a trigger line (`Timeout (0:05:00)!`) in which its dump
/// must start.
const TRIGGER_LINES: u64 = 3;
/// Longest name or path kept, in characters.
const MAX_TEXT: usize = 200;

/// What made the process print its stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `faulthandler.dump_traceback_later` ran out: no progress for that long.
    Timeout,
    /// A fatal signal (`Fatal Python error: Segmentation fault`, on Windows
    /// `Windows fatal exception: access violation`): a crash, not a hang.
    Fatal,
    /// Asked for from outside: a registered signal, `py-spy dump`.
    OnDemand,
}

/// The tool that printed the dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpTool {
    Faulthandler,
    PySpy,
    /// The traceback of a `KeyboardInterrupt`: where the main thread was
    /// when someone pressed Ctrl-C.
    Interrupt,
    /// ProcessGroupNCCL's watchdog: `Stack trace of the failed collective:`
    /// and the Python frames that issued it (`#0 all_reduce from …:3068`).
    Watchdog,
}

/// One thread of a dump.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackThread {
    /// The thread id as printed (`0x00007f85c787c6c0`, `775`).
    pub id: String,
    /// The thread's name, when the tool prints it (py-spy).
    pub name: Option<String>,
    /// Whether faulthandler marked it `Current thread`.
    pub current: bool,
    /// py-spy's state word (`idle`, `active`, `active+gil`, `gil`).
    pub state: Option<String>,
    /// Frames, innermost first.
    pub frames: Vec<PyFrame>,
    /// Line of the thread's header.
    pub line: u64,
    /// For each frame, its line and its text as printed.
    pub frame_lines: Vec<(u64, String)>,
}

/// A complete dump and the rank whose output it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackDump {
    pub rank: Option<u32>,
    /// Line of its first thread header.
    pub line: u64,
    pub trigger: Trigger,
    pub tool: DumpTool,
    pub threads: Vec<StackThread>,
}

impl StackDump {
    /// The main thread's stack where a `KeyboardInterrupt` stopped it, from
    /// the traceback that ends with one.
    pub fn from_interrupt(read: &crate::RankedTraceback) -> Option<StackDump> {
        let last = read.traceback.exceptions.last()?;
        if last.exception.rsplit('.').next() != Some("KeyboardInterrupt") || last.frames.is_empty()
        {
            return None;
        }
        let frames: Vec<PyFrame> = last.frames.iter().rev().take(MAX_FRAMES).cloned().collect();
        let shown = format!(
            "{}{}",
            last.exception,
            if last.message.is_empty() {
                String::new()
            } else {
                format!(": {}", last.message)
            }
        );
        Some(StackDump {
            rank: read.rank,
            line: last.line,
            trigger: Trigger::OnDemand,
            tool: DumpTool::Interrupt,
            threads: vec![StackThread {
                id: String::new(),
                name: Some("MainThread".to_owned()),
                current: true,
                state: None,
                frame_lines: frames.iter().map(|_| (last.line, shown.clone())).collect(),
                frames,
                line: last.line,
            }],
        })
    }

    /// The thread that holds the program: py-spy's `MainThread`, else the
    /// thread whose outermost frame is a module's top level, else the
    /// current thread, else the first with frames.
    pub fn main_thread(&self) -> Option<&StackThread> {
        let with_frames = || self.threads.iter().filter(|t| !t.frames.is_empty());
        with_frames()
            .find(|t| t.name.as_deref() == Some("MainThread"))
            .or_else(|| with_frames().find(|t| t.frames.last().is_some_and(is_top_level)))
            .or_else(|| with_frames().find(|t| t.current))
            .or_else(|| with_frames().next())
    }
}

fn is_top_level(frame: &PyFrame) -> bool {
    frame.function == "<module>"
}

/// One line of a dump, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DumpLine<'a> {
    /// `Timeout (0:00:12)!`
    Timeout,
    /// `Fatal Python error: Segmentation fault`
    Fatal,
    /// `Thread 0x… (most recent call first):`, `Current thread 0x… (…):`,
    /// `Stack (most recent call first):`
    FaultThread {
        id: &'a str,
        current: bool,
    },
    /// `  File "x.py", line 8 in load_shard`
    FaultFrame(Frame<'a>),
    /// `  <no Python frame>`
    NoFrame,
    /// `Process 775: python3 train.py`
    SpyProcess,
    /// `Python v3.12.3 (/usr/bin/python3.12)`
    SpyPython,
    /// `Thread 775 (idle): "MainThread"`
    SpyThread {
        id: &'a str,
        state: &'a str,
        name: Option<&'a str>,
    },
    /// `    Queue.get (queue.py:171)`
    SpyFrame(Frame<'a>),
    /// `… Stack trace of the failed collective: ` (after a log prefix)
    WatchdogHeader,
    /// `#2 _all_reduce from /srv/tp.py:10212`
    WatchdogFrame(Frame<'a>),
    Blank,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frame<'a> {
    function: &'a str,
    file: &'a str,
    line: u64,
}

fn number(input: &str) -> IResult<&str, u64> {
    nom::combinator::map_res(digit1, str::parse).parse(input)
}

fn thread_id(input: &str) -> IResult<&str, &str> {
    alt((recognize(preceded(tag("0x"), hex_digit1)), digit1)).parse(input)
}

fn timeout(input: &str) -> IResult<&str, DumpLine<'_>> {
    value(
        DumpLine::Timeout,
        (tag("Timeout ("), take_until(")!"), tag(")!")),
    )
    .parse(input)
}

/// The line before a crash's dump: CPython's fatal error, or on Windows
/// its report of an exception in native code.
fn fatal(input: &str) -> IResult<&str, DumpLine<'_>> {
    let header = alt((
        tag("Fatal Python error: "),
        tag("Windows fatal exception: "),
    ));
    value(DumpLine::Fatal, (header, rest)).parse(input)
}

fn fault_thread(input: &str) -> IResult<&str, DumpLine<'_>> {
    const HEADER: &str = " (most recent call first):";
    alt((
        map(
            terminated(preceded(tag("Current thread "), thread_id), tag(HEADER)),
            |id| DumpLine::FaultThread { id, current: true },
        ),
        map(
            terminated(preceded(tag("Thread "), thread_id), tag(HEADER)),
            |id| DumpLine::FaultThread { id, current: false },
        ),
        value(
            DumpLine::FaultThread {
                id: "",
                current: true,
            },
            tag("Stack (most recent call first):"),
        ),
    ))
    .parse(input)
}

/// `File "path", line N in function` (faulthandler writes no comma before
/// `in`, unlike a traceback).
fn fault_frame(input: &str) -> IResult<&str, DumpLine<'_>> {
    map(
        (
            space0,
            delimited(tag("File \""), take_until("\""), char('"')),
            preceded(tag(", line "), number),
            preceded(tag(" in "), rest),
        ),
        |(_, file, line, function)| {
            DumpLine::FaultFrame(Frame {
                function,
                file,
                line,
            })
        },
    )
    .parse(input)
}

fn no_frame(input: &str) -> IResult<&str, DumpLine<'_>> {
    value(DumpLine::NoFrame, (space0, tag("<no Python frame>"))).parse(input)
}

fn spy_process(input: &str) -> IResult<&str, DumpLine<'_>> {
    value(DumpLine::SpyProcess, (tag("Process "), digit1, tag(": "))).parse(input)
}

fn spy_python(input: &str) -> IResult<&str, DumpLine<'_>> {
    value(
        DumpLine::SpyPython,
        (
            tag("Python v"),
            digit1,
            char('.'),
            take_till1(|c| c == ' '),
            tag(" ("),
        ),
    )
    .parse(input)
}

fn spy_thread(input: &str) -> IResult<&str, DumpLine<'_>> {
    map(
        (
            tag("Thread "),
            // Some py-spy versions print no id: `Thread (idle): "MainThread"`.
            map(
                opt(terminated(thread_id, char(' '))),
                Option::unwrap_or_default,
            ),
            delimited(
                tag("("),
                take_while1(|c: char| c.is_ascii_lowercase() || c == '+'),
                tag(")"),
            ),
            opt(preceded(
                tag(": \""),
                terminated(take_until("\""), char('"')),
            )),
        ),
        |(_, id, state, name)| DumpLine::SpyThread { id, state, name },
    )
    .parse(input)
}

/// `function (file:line)`, as py-spy prints a frame (indented; a prefix
/// removal may have taken the indentation).
fn spy_frame(input: &str) -> IResult<&str, DumpLine<'_>> {
    let (inner, function) =
        delimited(space0, take_till1(|c| c == ' ' || c == '('), tag(" (")).parse(input)?;
    let inner = inner.strip_suffix(')').ok_or_else(|| fail(input))?;
    let (file, line) = inner.rsplit_once(':').ok_or_else(|| fail(input))?;
    let line = line.parse().map_err(|_| fail(input))?;
    if file.is_empty() {
        return Err(fail(input));
    }
    Ok((
        "",
        DumpLine::SpyFrame(Frame {
            function,
            file,
            line,
        }),
    ))
}

fn watchdog_header(input: &str) -> IResult<&str, DumpLine<'_>> {
    value(
        DumpLine::WatchdogHeader,
        (
            take_until("Stack trace of the failed collective:"),
            tag("Stack trace of the failed collective:"),
            space0,
            nom::combinator::eof,
        ),
    )
    .parse(input)
}

/// `#N function from file:line`.
fn watchdog_frame(input: &str) -> IResult<&str, DumpLine<'_>> {
    let (rest, (_, _, _, function, _)) = (
        char('#'),
        digit1,
        char(' '),
        take_till1(|c| c == ' '),
        tag(" from "),
    )
        .parse(input)?;
    let (file, line) = rest.rsplit_once(':').ok_or_else(|| fail(input))?;
    let line = line.trim_end().parse().map_err(|_| fail(input))?;
    if file.is_empty() {
        return Err(fail(input));
    }
    Ok((
        "",
        DumpLine::WatchdogFrame(Frame {
            function,
            file,
            line,
        }),
    ))
}

fn fail(input: &str) -> nom::Err<nom::error::Error<&str>> {
    nom::Err::Error(nom::error::Error::new(input, nom::error::ErrorKind::Verify))
}

/// What `text` (a line with its launcher prefix removed) is in a dump.
fn dump_line(text: &str) -> Option<DumpLine<'_>> {
    let text = text.trim_end();
    if text.trim().is_empty() {
        return Some(DumpLine::Blank);
    }
    alt((
        fault_thread,
        fault_frame,
        no_frame,
        timeout,
        fatal,
        spy_process,
        spy_python,
        spy_thread,
        spy_frame,
        watchdog_frame,
        watchdog_header,
    ))
    .parse(text)
    .ok()
    .map(|(_, line)| line)
}

/// Reads the stack dumps of one input.
#[derive(Debug, Default)]
pub struct StackDumpReader {
    open: Vec<Open>,
    /// The last trigger line of each rank: its rank, line and kind.
    triggers: Vec<(Option<u32>, u64, Trigger)>,
}

#[derive(Debug)]
struct Open {
    dump: StackDump,
    blanks: u32,
}

impl StackDumpReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a dump is in progress (or about to start): its next lines
    /// must be fed.
    pub fn is_open(&self) -> bool {
        !self.open.is_empty() || !self.triggers.is_empty()
    }

    /// Feeds line `number` of `rank`: `text` with its launcher prefix
    /// removed, `shown` as printed. A dump this line completes is appended
    /// to `out`. With `may_start` false only dumps already open go on.
    pub fn feed(
        &mut self,
        text: &str,
        shown: &str,
        rank: Option<u32>,
        number: u64,
        may_start: bool,
        out: &mut Vec<StackDump>,
    ) {
        self.triggers
            .retain(|(_, at, _)| number.saturating_sub(*at) <= TRIGGER_LINES);
        let at = self.open.iter().position(|o| o.dump.rank == rank);
        let spy_open = at
            .and_then(|i| self.open.get(i))
            .is_some_and(|o| o.dump.tool == DumpTool::PySpy);
        // `name (file:line)` is a py-spy frame only inside a py-spy dump.
        let parsed = match dump_line(text) {
            Some(DumpLine::SpyFrame(_)) if !spy_open => None,
            other => other,
        };
        // The watchdog writes its frames as lines of one message: they
        // carry no rank prefix of their own and go to the watchdog dump
        // last opened.
        let at = match parsed {
            Some(DumpLine::WatchdogFrame(_)) => self
                .open
                .iter()
                .rposition(|o| o.dump.tool == DumpTool::Watchdog)
                .filter(|&i| at.is_none() || at == Some(i)),
            _ => at,
        };
        match parsed {
            Some(DumpLine::Timeout) | Some(DumpLine::Fatal) if may_start => {
                if let Some(i) = at {
                    self.close(i, out);
                }
                let trigger = if parsed == Some(DumpLine::Timeout) {
                    Trigger::Timeout
                } else {
                    Trigger::Fatal
                };
                self.triggers.retain(|(r, _, _)| *r != rank);
                self.triggers.push((rank, number, trigger));
            }
            Some(DumpLine::FaultThread { id, current }) => {
                let i = match at {
                    Some(i) if !spy_open => Some(i),
                    Some(i) => {
                        self.close(i, out);
                        self.start(rank, number, DumpTool::Faulthandler, may_start)
                    }
                    None => self.start(rank, number, DumpTool::Faulthandler, may_start),
                };
                self.add_thread(
                    i,
                    StackThread {
                        id: inert_capped(id, MAX_TEXT),
                        current,
                        line: number,
                        ..StackThread::default()
                    },
                );
            }
            Some(DumpLine::SpyProcess) => {
                if let Some(i) = at {
                    self.close(i, out);
                }
                self.start(rank, number, DumpTool::PySpy, may_start);
            }
            Some(DumpLine::SpyPython) => {
                if at.is_none() {
                    self.start(rank, number, DumpTool::PySpy, may_start);
                }
            }
            Some(DumpLine::SpyThread { id, state, name }) => {
                let i = match at {
                    Some(i) if spy_open => Some(i),
                    Some(i) => {
                        self.close(i, out);
                        self.start(rank, number, DumpTool::PySpy, may_start)
                    }
                    None => self.start(rank, number, DumpTool::PySpy, may_start),
                };
                self.add_thread(
                    i,
                    StackThread {
                        id: inert_capped(id, MAX_TEXT),
                        name: name.map(|n| inert_capped(n, MAX_TEXT)),
                        state: Some(state.to_owned()),
                        line: number,
                        ..StackThread::default()
                    },
                );
            }
            Some(DumpLine::WatchdogHeader) => {
                if let Some(i) = at {
                    self.close(i, out);
                }
                let i = self.start(rank, number, DumpTool::Watchdog, may_start);
                self.add_thread(
                    i,
                    StackThread {
                        name: Some("MainThread".to_owned()),
                        line: number,
                        ..StackThread::default()
                    },
                );
            }
            Some(DumpLine::FaultFrame(frame))
            | Some(DumpLine::SpyFrame(frame))
            | Some(DumpLine::WatchdogFrame(frame)) => {
                if let Some(open) = at.and_then(|i| self.open.get_mut(i)) {
                    open.blanks = 0;
                    if let Some(thread) = open.dump.threads.last_mut() {
                        if thread.frames.len() < MAX_FRAMES {
                            thread.frames.push(PyFrame {
                                file: inert_capped(frame.file, MAX_TEXT),
                                line: frame.line,
                                function: inert_capped(frame.function, MAX_TEXT),
                                code: None,
                            });
                            thread
                                .frame_lines
                                .push((number, inert_capped(shown.trim_end(), MAX_TEXT * 2)));
                        }
                    }
                }
            }
            Some(DumpLine::NoFrame) => {}
            Some(DumpLine::Blank) => {
                if let Some(open) = at.and_then(|i| self.open.get_mut(i)) {
                    open.blanks += 1;
                    if open.blanks > 2 {
                        self.close(at.unwrap_or_default(), out);
                    }
                }
            }
            _ => {
                if let Some(i) = at {
                    self.close(i, out);
                }
            }
        }
    }

    /// Opens a dump for `rank`; its index, unless starting is not allowed.
    fn start(
        &mut self,
        rank: Option<u32>,
        number: u64,
        tool: DumpTool,
        may_start: bool,
    ) -> Option<usize> {
        if !may_start || self.open.len() >= MAX_OPEN {
            return None;
        }
        let trigger = self
            .triggers
            .iter()
            .position(|(r, _, _)| *r == rank)
            .map(|i| self.triggers.swap_remove(i).2)
            .unwrap_or(Trigger::OnDemand);
        self.open.push(Open {
            dump: StackDump {
                rank,
                line: number,
                trigger,
                tool,
                threads: Vec::new(),
            },
            blanks: 0,
        });
        Some(self.open.len() - 1)
    }

    fn add_thread(&mut self, at: Option<usize>, thread: StackThread) {
        if let Some(open) = at.and_then(|i| self.open.get_mut(i)) {
            open.blanks = 0;
            if open.dump.threads.len() < MAX_THREADS {
                open.dump.threads.push(thread);
            }
        }
    }

    fn close(&mut self, at: usize, out: &mut Vec<StackDump>) {
        if at < self.open.len() {
            let open = self.open.swap_remove(at);
            if open.dump.threads.iter().any(|t| !t.frames.is_empty()) {
                out.push(open.dump);
            }
        }
    }

    /// Completes every dump still open (the end of the input).
    pub fn finish(&mut self, out: &mut Vec<StackDump>) {
        while !self.open.is_empty() {
            self.close(0, out);
        }
        self.triggers.clear();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<StackDump> {
        let mut reader = StackDumpReader::new();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let prefixed = crate::strip_rank_prefix(line);
            reader.feed(
                prefixed.rest,
                line,
                prefixed.rank,
                i as u64 + 1,
                true,
                &mut out,
            );
        }
        reader.finish(&mut out);
        out
    }

    #[test]
    fn a_faulthandler_timeout_dump_names_the_main_threads_frames() {
        let dumps = read(concat!(
            "step 3 read shard-00002\n",
            "Timeout (0:00:12)!\n",
            "Thread 0x00007f85c787c6c0 (most recent call first):\n",
            "  File \"/srv/app/fh_hang.py\", line 20 in heartbeat\n",
            "  File \"/usr/lib/python3.12/threading.py\", line 1010 in run\n",
            "\n",
            "Thread 0x00007f85c8b85140 (most recent call first):\n",
            "  File \"/usr/lib/python3.12/threading.py\", line 355 in wait\n",
            "  File \"/usr/lib/python3.12/queue.py\", line 171 in get\n",
            "  File \"/srv/app/fh_hang.py\", line 10 in load_shard\n",
            "  File \"/srv/app/fh_hang.py\", line 33 in <module>\n",
            "### exit=1\n",
        ));
        assert_eq!(dumps.len(), 1);
        let dump = &dumps[0];
        assert_eq!(
            (dump.trigger, dump.tool, dump.line),
            (Trigger::Timeout, DumpTool::Faulthandler, 3)
        );
        let main = dump.main_thread().unwrap();
        assert_eq!(main.id, "0x00007f85c8b85140");
        assert_eq!(main.frames[2].function, "load_shard");
        assert_eq!(main.frames[2].line, 10);
    }

    #[test]
    fn interleaved_ranks_keep_their_own_dumps() {
        let dumps = read(concat!(
            "[default1]:Thread 0x00007f867954a6c0 (most recent call first):\n",
            "[default3]:Current thread 0x00007ff1a9ed5140 (most recent call first):\n",
            "[default1]:  <no Python frame>\n",
            "[default3]:  File \"/usr/lib/python3.12/queue.py\", line 171 in get\n",
            "[default1]:\n",
            "[default1]:Current thread 0x00007f874a7de140 (most recent call first):\n",
            "[default3]:  File \"/srv/gloo_hang.py\", line 23 in load_shard\n",
            "[default1]:  File \"/x/torch/distributed/distributed_c10d.py\", line 3075 in all_reduce\n",
            "[default1]:  File \"/srv/gloo_hang.py\", line 89 in <module>\n",
            "[default3]:  File \"/srv/gloo_hang.py\", line 89 in <module>\n",
            "[default0]:[rank0]:[W1201 14:53:50.232189771 Utils.hpp:137] Warning\n",
        ));
        let mut ranks: Vec<_> = dumps.iter().map(|d| d.rank).collect();
        ranks.sort();
        assert_eq!(ranks, vec![Some(1), Some(3)]);
        let one = dumps.iter().find(|d| d.rank == Some(1)).unwrap();
        assert_eq!(one.trigger, Trigger::OnDemand);
        assert_eq!(one.main_thread().unwrap().frames[0].function, "all_reduce");
        let three = dumps.iter().find(|d| d.rank == Some(3)).unwrap();
        assert_eq!(
            three.main_thread().unwrap().frames[1].function,
            "load_shard"
        );
    }

    #[test]
    fn a_py_spy_dump_reads_thread_names_states_and_frames() {
        let dumps = read(concat!(
            "Process 775: python3 /srv/app/fh_hang.py\n",
            "Python v3.12.3 (/usr/bin/python3.12)\n",
            "\n",
            "Thread 778 (idle): \"heartbeat\"\n",
            "    heartbeat (fh_hang.py:20)\n",
            "    Thread.run (threading.py:1010)\n",
            "Thread 775 (idle): \"MainThread\"\n",
            "    Condition.wait (threading.py:355)\n",
            "    Queue.get (queue.py:171)\n",
            "    load_shard (fh_hang.py:10)\n",
            "Thread 779 (idle)\n",
            "Thread (idle): \"Thread-3 (_pin_memory_loop)\"\n",
            "    select (selectors.py:415)\n",
        ));
        assert_eq!(dumps.len(), 1);
        let main = dumps[0].main_thread().unwrap();
        assert_eq!(main.name.as_deref(), Some("MainThread"));
        assert_eq!(main.state.as_deref(), Some("idle"));
        assert_eq!(main.frames[1].function, "Queue.get");
        assert_eq!(main.frames[2].file, "fh_hang.py");
        assert_eq!(dumps[0].tool, DumpTool::PySpy);
    }

    #[test]
    fn the_watchdogs_stack_of_the_failed_collective_is_a_dump_of_its_rank() {
        let dumps = read(concat!(
            "[rank3]:[E710 18:00:32.426302794 ProcessGroupNCCL.cpp:2395] [PG ID 0 PG GUID 0(default_pg) Rank 3]  failure detected by watchdog at work sequence id: 59958\n",
            "[rank3]:[E710 18:00:32.427312432 ProcessGroupNCCL.cpp:801] Stack trace of the failed collective: \n",
            "#0 all_reduce from /usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py:3174\n",
            "#1 wrapper from /usr/local/lib/python3.12/dist-packages/torch/distributed/c10d_logger.py:83\n",
            "#2 _all_reduce from /workspace/src/models/tensor_parallel.py:8472\n",
            "\n",
            "[rank2]:[E710 18:00:32.422479216 ProcessGroupNCCL.cpp:2732] First PG on this rank to signal dumping.\n",
        ));
        assert_eq!(dumps.len(), 1);
        let d = &dumps[0];
        assert_eq!((d.rank, d.tool), (Some(3), DumpTool::Watchdog));
        let main = d.main_thread().unwrap();
        assert_eq!(main.frames.len(), 3);
        assert_eq!(main.frames[2].function, "_all_reduce");
        assert_eq!(main.frames[2].line, 8472);
    }

    #[test]
    fn a_crash_dump_is_marked_fatal_and_prose_is_no_dump() {
        // CPython's fatal error, and its report of a Windows exception.
        for header in [
            "Fatal Python error: Segmentation fault",
            "Windows fatal exception: access violation",
        ] {
            let dumps = read(&format!(
                "{header}\n\nCurrent thread 0x00007f0c (most recent call first):\n  File \"/srv/app/x.py\", line 5 in crash\n"
            ));
            assert_eq!(dumps[0].trigger, Trigger::Fatal, "{header}");
        }
        assert!(read(
            "use faulthandler.dump_traceback (most recent call first) here\nmain (x.py:3)\n"
        )
        .is_empty());
    }
}
