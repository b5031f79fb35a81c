//! Thread stack dumps, read into one sentence each for the rules: where
//! the thread that holds the program waits.
//!
//! A dump taken while a process hangs (faulthandler's timeout, a signal,
//! `py-spy dump`) says what it waits for. Its main thread's innermost frame
//! in the program's own code is where it waits, and the library call below
//! that frame what it waits in. A frame in `torch.distributed` means the
//! wait is a collective. Sentences (stable forms, kind `stack-dumps`):
//!
//! - `stack dump: the main thread[ of rank R] waits in CALL, called from FRAME`
//! - `stack dump: the main thread[ of rank R] is busy in CALL, called from FRAME`
//!   (py-spy saw it running)
//! - `stack dump: the main thread[ of rank R] is in FRAME` (no library call below)
//! - `stack dump: the main thread[ of rank R] waits in the collective OP, called from FRAME`
//!
//! `CALL` and `FRAME` read `function (file:line)` with the file's base
//! name. A dump printed on a fatal signal is a crash, not a wait: it gets
//! no sentence (the fatal error's own line says what happened).

use crate::findings::FindingTable;
use crate::written::{ranks_are, scan_written, Grounding};
use coroner_logs::{DumpTool, StackDump, StackThread, Trigger};
use coroner_model::{Context, Evidence, InputKind, Location, PyFrame};
use coroner_rules::RuleSet;

/// Files of the standard library and of frameworks that py-spy names by
/// their base name only: a frame in one of them is not the program's own.
const LIBRARY_FILES: &[&str] = &[
    "threading.py",
    "queue.py",
    "queues.py",
    "selectors.py",
    "socket.py",
    "ssl.py",
    "subprocess.py",
    "connection.py",
    "synchronize.py",
    "popen_fork.py",
    "pool.py",
    "reduction.py",
    "base_events.py",
    "events.py",
    "runners.py",
    "_base.py",
    "thread.py",
    "distributed_c10d.py",
    "c10d_logger.py",
    "dataloader.py",
    "module.py",
    "_tensor.py",
    "graph.py",
    "fetch.py",
    "file_baton.py",
    "cpp_extension.py",
];

/// Reads the incident's stack dumps and adds what the rules find in their
/// sentences to `table`, each placed at the dump's frame it names.
///
/// With the dumps of several ranks, a rank's wait is news only where it
/// differs from the others': when some ranks wait in a collective, each
/// rank that is elsewhere is described (it is what they wait for), and
/// when none does, the ranks that share the place most of them are at are
/// described once, together, as a fact: nothing tells them apart.
pub(crate) fn scan_stacks(table: &mut FindingTable, rules: &RuleSet) {
    let dumps = std::mem::take(&mut table.stack_dumps);
    let waits: Vec<Wait> = dumps
        .iter()
        .filter_map(|(input, display, dump)| Wait::of(*input, display, dump))
        .collect();
    for (wait, sentence) in sentences(&waits) {
        scan_sentence(table, rules, wait, &sentence);
    }
    let desyncs = std::mem::take(&mut table.desyncs);
    for (input, display, snapshot) in &desyncs {
        if let Some(wait) = apart(*input, display, snapshot) {
            let sentence = format!("desync report: {}", wait.place);
            scan_sentence(table, rules, &wait, &sentence);
        }
    }
}

/// A desync snapshot whose ranks have started different collectives:
/// `ranks 0, 1, 2 are in ALLREDUCE #315 while ranks 3, 4, 5, 6 are in
/// _ALLGATHER_BASE #317`, resting on the line of the second.
fn apart(input: usize, display: &str, snapshot: &coroner_logs::DesyncSnapshot) -> Option<Wait> {
    let started: Vec<&coroner_logs::DesyncGroup> = snapshot
        .groups
        .iter()
        .filter(|g| g.state == "started")
        .collect();
    let first = started.first()?;
    let other = started.iter().find(|g| g.op != first.op)?;
    Some(Wait {
        input,
        display: display.to_owned(),
        rank: snapshot.rank,
        collective: None,
        place: format!(
            "{} in {} #{} while {} in {} #{}",
            ranks_are(&first.ranks),
            first.op,
            first.seq,
            ranks_are(&other.ranks),
            other.op,
            other.seq
        ),
        interrupted: false,
        evidence: Evidence {
            input: display.to_owned(),
            line: other.line,
            text: other.text.clone(),
            context: None,
        },
    })
}

/// Where one dump's main thread waits.
#[derive(Debug, Clone)]
struct Wait {
    input: usize,
    display: String,
    rank: Option<u32>,
    /// The collective it waits in, if any.
    collective: Option<String>,
    /// What the sentence says after `the main thread[ of rank R] `.
    place: String,
    /// Read from a `KeyboardInterrupt`'s traceback rather than a dump.
    interrupted: bool,
    evidence: Evidence,
}

impl Wait {
    fn of(input: usize, display: &str, dump: &StackDump) -> Option<Wait> {
        if dump.trigger == Trigger::Fatal {
            return None;
        }
        let thread = dump.main_thread()?;
        let interrupted = dump.tool == DumpTool::Interrupt;
        // Ctrl-C stops a busy program as well as a stuck one: only an
        // interrupt inside a wait is one.
        if interrupted && !thread.frames.first().is_some_and(is_wait) {
            return None;
        }
        let own = thread.frames.iter().position(|f| !is_library(f));
        let op = collective(&thread.frames).map(str::to_owned);
        let (place, at) = match (&op, own) {
            (Some(op), _) => {
                let caller = own.map_or_else(String::new, |i| {
                    format!(", called from {}", thread.frames[i].label())
                });
                (
                    format!("waits in the collective {op}{caller}"),
                    own.unwrap_or(0),
                )
            }
            (None, Some(0)) | (None, None) => {
                (format!("is in {}", thread.frames.first()?.label()), 0)
            }
            (None, Some(i)) => {
                let doing = if busy(thread) { "is busy" } else { "waits" };
                // An interrupt names the wait itself, the innermost frame.
                let call = if interrupted {
                    thread.frames[0].label()
                } else {
                    thread.frames[i - 1].label()
                };
                (
                    format!(
                        "{doing} in {call}, called from {}",
                        thread.frames[i].label()
                    ),
                    i,
                )
            }
        };
        let (line, text) = thread
            .frame_lines
            .get(at)
            .cloned()
            .unwrap_or((thread.line, String::new()));
        Some(Wait {
            input,
            display: display.to_owned(),
            rank: dump.rank,
            collective: op,
            place,
            interrupted,
            evidence: Evidence {
                input: display.to_owned(),
                line,
                // The frame's function and line are what the line is shown
                // for: the window moves to them.
                context: frame_span(&text).map(|span| Context {
                    span: Some(span),
                    ..Context::default()
                }),
                text,
            },
        })
    }
}

/// The sentences to scan, each with the wait it rests on.
fn sentences(waits: &[Wait]) -> Vec<(&Wait, String)> {
    let one = |w: &Wait| {
        let what = if w.interrupted {
            "interrupted while waiting:"
        } else {
            "stack dump:"
        };
        match w.rank {
            Some(rank) => format!("{what} the main thread of rank {rank} {}", w.place),
            None => format!("{what} the main thread {}", w.place),
        }
    };
    // A process without a rank stands alone; of a rank, its last dump.
    let mut out: Vec<(&Wait, String)> = waits
        .iter()
        .filter(|w| w.rank.is_none())
        .map(|w| (w, one(w)))
        .collect();
    let mut ranked: Vec<&Wait> = Vec::new();
    for w in waits.iter().filter(|w| w.rank.is_some()) {
        ranked.retain(|r| r.rank != w.rank);
        ranked.push(w);
    }
    ranked.sort_by_key(|w| w.rank);
    let in_collective = ranked.iter().any(|w| w.collective.is_some());
    // The place most ranks are at, when a strict majority of two or more
    // shares it and none waits in a collective.
    let common = (!in_collective)
        .then(|| {
            ranked
                .iter()
                .map(|w| &w.place)
                .max_by_key(|p| ranked.iter().filter(|w| &w.place == *p).count())
        })
        .flatten()
        .filter(|p| {
            let n = ranked.iter().filter(|w| &w.place == *p).count();
            n >= 2 && n * 2 > ranked.len()
        });
    for w in &ranked {
        if common == Some(&w.place) {
            continue;
        }
        out.push((w, one(w)));
    }
    if let Some(place) = common {
        let alike: Vec<&&Wait> = ranked.iter().filter(|w| &w.place == place).collect();
        if let Some(first) = alike.first() {
            let names: Vec<String> = alike
                .iter()
                .filter_map(|w| w.rank.map(|r| r.to_string()))
                .collect();
            out.push((
                first,
                format!(
                    "stack dump: the main threads of ranks {} {}",
                    names.join(", "),
                    plural(place)
                ),
            ));
        }
    }
    out
}

/// `waits in X` → `all wait in X`, `is in X` → `are all in X`.
fn plural(place: &str) -> String {
    for (one, many) in [
        ("waits ", "all wait "),
        ("is busy ", "are all busy "),
        ("is ", "are all "),
    ] {
        if let Some(rest) = place.strip_prefix(one) {
            return format!("{many}{rest}");
        }
    }
    place.to_owned()
}

fn scan_sentence(table: &mut FindingTable, rules: &RuleSet, wait: &Wait, sentence: &str) {
    let at = Location {
        input: wait.display.clone(),
        line: wait.evidence.line,
        byte_offset: 0,
        time: None,
        own_time: None,
    };
    let grounding = Grounding {
        input: wait.input,
        display: wait.display.clone(),
        rank: wait.rank,
        place: Some((at, vec![wait.evidence.clone()])),
    };
    scan_written(table, rules, InputKind::StackDumps, &grounding, sentence);
}

/// Where a frame line names its line and function: from `line 23 in
/// load_shard` of faulthandler's, the whole (unindented) line of py-spy's.
fn frame_span(text: &str) -> Option<(usize, usize)> {
    let start = match text.rfind("\", line ") {
        Some(i) => i + 3,
        None => text.len() - text.trim_start().len(),
    };
    (start < text.len()).then_some((start, text.len()))
}

/// Whether py-spy saw the thread running rather than waiting.
fn busy(thread: &StackThread) -> bool {
    thread
        .state
        .as_deref()
        .is_some_and(|s| s.starts_with("active"))
}

/// The collective a thread waits in: the innermost frame of
/// `torch.distributed`'s collectives module.
fn collective(frames: &[PyFrame]) -> Option<&str> {
    frames
        .iter()
        .find(|f| base_name(&f.file) == "distributed_c10d.py")
        .map(|f| f.function.rsplit('.').next().unwrap_or(&f.function))
}

/// Calls that block until something else happens: a queue, a lock, a
/// socket, a child, a sleep in a polling loop.
const WAITS: &[&str] = &[
    "wait",
    "get",
    "recv",
    "recv_bytes",
    "_recv_bytes",
    "_recv",
    "recv_into",
    "acquire",
    "sleep",
    "select",
    "poll",
    "_poll",
    "join",
    "_wait_for_tstate_lock",
    "accept",
    "readinto",
    "barrier",
    "monitored_barrier",
    "communicate",
    "result",
    "wait_for",
];

fn is_wait(frame: &PyFrame) -> bool {
    let name = frame.function.rsplit('.').next().unwrap_or(&frame.function);
    WAITS.contains(&name)
}

fn is_library(frame: &PyFrame) -> bool {
    let f = &frame.file;
    frame.is_library()
        || f.contains("\\site-packages\\")
        || f.contains("\\dist-packages\\")
        || LIBRARY_FILES.contains(&base_name(f))
}

fn base_name(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use coroner_logs::{strip_rank_prefix, StackDumpReader};

    fn read(text: &str) -> Vec<String> {
        let mut reader = StackDumpReader::new();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = strip_rank_prefix(line);
            reader.feed(p.rest, line, p.rank, i as u64 + 1, true, &mut out);
        }
        reader.finish(&mut out);
        let waits: Vec<Wait> = out.iter().filter_map(|d| Wait::of(0, "x.log", d)).collect();
        sentences(&waits).into_iter().map(|(_, s)| s).collect()
    }

    #[test]
    fn the_wait_is_the_library_call_below_the_programs_own_frame() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/dumps/fh/pyspy.txt"
        ))
        .unwrap_or_default();
        assert_eq!(
            read(&text),
            vec!["stack dump: the main thread waits in Queue.get (queue.py:171), called from load_shard (fh_hang.py:10)"]
        );
    }

    #[test]
    fn a_frame_of_torch_distributed_is_a_collective() {
        let s = read(concat!(
            "[default0]:Current thread 0x00007efe50c91140 (most recent call first):\n",
            "[default0]:  File \"/v/site-packages/torch/distributed/distributed_c10d.py\", line 3075 in all_reduce\n",
            "[default0]:  File \"/v/site-packages/torch/distributed/c10d_logger.py\", line 83 in wrapper\n",
            "[default0]:  File \"/srv/gloo_hang.py\", line 78 in main\n",
            "[default0]:  File \"/srv/gloo_hang.py\", line 89 in <module>\n",
        ));
        assert_eq!(
            s,
            vec!["stack dump: the main thread of rank 0 waits in the collective all_reduce, called from main (gloo_hang.py:78)"]
        );
    }

    #[test]
    fn the_rank_outside_the_collective_is_told_apart() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/dumps/gloo4/console.log"
        ))
        .unwrap_or_default();
        let s = read(&text);
        assert!(s.contains(&"stack dump: the main thread of rank 3 waits in get (queue.py:171), called from load_shard (gloo_hang.py:23)".to_owned()), "{s:?}");
        assert_eq!(
            s.iter()
                .filter(|s| s.contains("waits in the collective all_reduce"))
                .count(),
            3,
            "{s:?}"
        );
    }

    #[test]
    fn ranks_all_at_one_place_are_one_fact() {
        let s = read(concat!(
            "[default0]:Current thread 0x1 (most recent call first):\n",
            "[default0]:  File \"/srv/t.py\", line 82 in main\n",
            "[default1]:Current thread 0x2 (most recent call first):\n",
            "[default1]:  File \"/srv/t.py\", line 82 in main\n",
            "[default2]:Current thread 0x3 (most recent call first):\n",
            "[default2]:  File \"/srv/t.py\", line 82 in main\n",
        ));
        assert_eq!(
            s,
            vec!["stack dump: the main threads of ranks 0, 1, 2 are all in main (t.py:82)"]
        );
    }

    #[test]
    fn a_crash_dump_says_nothing_here() {
        let s = read(concat!(
            "Fatal Python error: Segmentation fault\n",
            "\n",
            "Current thread 0x00007f0c (most recent call first):\n",
            "  File \"/srv/app/x.py\", line 5 in crash\n",
        ));
        assert!(s.is_empty());
    }
}
