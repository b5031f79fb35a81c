//! Logs listed newest line first, read in the order they were written.
//!
//! The log views of Grafana Loki, Kibana, Datadog, CloudWatch and Google
//! Cloud list a job's lines newest first, and a copy from them keeps that
//! order: the failure's last words come first and a traceback reads upside
//! down. Such an input is told by what is printed in a fixed order:
//!
//! - Python prints a traceback's header (`Traceback (most recent call
//!   last):`, faulthandler's `Thread 0x… (most recent call first):`) before
//!   its frames, so in a log read backwards a header follows its frames;
//! - glog prints `*** Check failure stack trace: ***` after the `F…` line
//!   of the failed check;
//! - the times a log view puts in front of every line go down.
//!
//! An input whose head shows these upside down, and never the right way
//! up, is read with its lines in reverse order.

use nom::bytes::complete::take_while_m_n;
use nom::character::complete::{char, digit1, one_of};
use nom::combinator::{opt, recognize};
use nom::{IResult, Parser};
use std::io::{self, Cursor, Read};

/// Python's traceback header.
const HEADER: &str = "Traceback (most recent call last):";
/// The end of faulthandler's (and py-spy's) header of a thread's frames.
const THREAD_HEADER: &str = "(most recent call first):";
/// The line glog prints after a failed check's.
const GLOG_TRACE: &str = "*** Check failure stack trace: ***";
/// Times looked at, at most.
const TIMES: usize = 200;
/// An input longer than this is read as it is: a copy from a log view is
/// far shorter, and reversing needs the whole input in memory.
pub const MAX_REVERSED: usize = 32 * 1024 * 1024;

/// Whether a line is a traceback's frame line (`  File "x.py", line 3, in
/// f`), whatever stands before it.
fn is_frame(line: &str) -> bool {
    line.find("File \"").is_some_and(|at| {
        line.get(at..)
            .is_some_and(|rest| rest.contains("\", line "))
    })
}

/// Whether `head` (an input's first bytes; `whole`: all of it) lists its
/// lines newest first: at least one traceback header comes after a frame
/// line and before a line that is not one (or ends the input: a paste of a
/// traceback alone), and none comes before a frame line.
pub fn is_newest_first(head: &[u8], whole: bool) -> bool {
    let Some(end) = memchr::memrchr(b'\n', head) else {
        return false;
    };
    let text = String::from_utf8_lossy(head.get(..end).unwrap_or_default());
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let (mut upside_down, mut upright) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|b| lines.get(b));
        let after = lines.get(i + 1);
        if line.ends_with(HEADER) || line.ends_with(THREAD_HEADER) {
            // A frame or a frame's source line after the header: upright
            // (another rank's, where ranks' lines interleave).
            if after.is_some_and(|l| is_frame(l) || is_source(l)) {
                upright += 1;
            } else if before.is_some_and(|l| is_frame(l)) && (after.is_some() || whole) {
                upside_down += 1;
            }
        } else if line.ends_with(GLOG_TRACE) {
            if before.is_some_and(|l| is_glog_fatal(l)) {
                upright += 1;
            } else if after.is_some_and(|l| is_glog_fatal(l)) {
                upside_down += 1;
            }
        }
    }
    match times_go_down(&lines) {
        Some(true) => upside_down += 1,
        Some(false) => upright += 1,
        None => {}
    }
    upside_down > 0 && upright == 0
}

/// Whether a line looks like a frame's source line: indented by four
/// spaces or a tab near its start, a prefix (`[rank1]: `) perhaps before.
fn is_source(line: &str) -> bool {
    let start = line.get(..line.len().min(48)).unwrap_or(line);
    start.contains("    ") || start.contains('\t')
}

/// Whether a line is glog's record of a fatal failure (`F1007
/// 19:40:40.235829 26752 syncedmem.cpp:66] Check failed: …`), spaces
/// perhaps before it.
fn is_glog_fatal(line: &str) -> bool {
    let parsed: IResult<&str, _> = (
        char('F'),
        take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
        char(' '),
        take_while_m_n(2, 2, |c: char| c.is_ascii_digit()),
        char(':'),
    )
        .parse(line.trim_start());
    parsed.is_ok()
}

/// Whether the times in front of the lines (an RFC 3339 time or a date and
/// a time, perhaps bracketed, as a log view or a logging setup writes them)
/// go down: `None` unless four in five of the lines have one; then
/// `Some(true)` when at least three steps between them do and nine in ten
/// of the steps that change do, `Some(false)` when they mostly go up.
fn times_go_down(lines: &[&str]) -> Option<bool> {
    let sample = lines.get(..lines.len().min(TIMES)).unwrap_or_default();
    let times: Vec<&str> = sample.iter().filter_map(|l| leading_time(l)).collect();
    // A log view stamps every line: a few stamped lines among others (ranks'
    // start-up lines flushed out of order) tell nothing.
    if times.len() * 5 < sample.len() * 4 {
        return None;
    }
    let (mut down, mut up) = (0usize, 0usize);
    for pair in times.windows(2) {
        if let [a, b] = pair {
            match b.cmp(a) {
                std::cmp::Ordering::Less => down += 1,
                std::cmp::Ordering::Greater => up += 1,
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    if down >= 3 && down >= 9 * up {
        Some(true)
    } else if up >= 3 && up > down {
        Some(false)
    } else {
        None
    }
}

/// The date and time at the start of `line` (after an opening bracket),
/// as text that sorts as the time does: `2024-03-01T10:11:12.123`.
fn leading_time(line: &str) -> Option<&str> {
    let s = line.strip_prefix('[').unwrap_or(line);
    let digits = |n: usize| take_while_m_n(n, n, |c: char| c.is_ascii_digit());
    let parsed: IResult<&str, &str> = recognize((
        (digits(4), char('-'), digits(2), char('-'), digits(2)),
        one_of("T "),
        (digits(2), char(':'), digits(2), char(':'), digits(2)),
        opt((one_of(".,"), digit1)),
    ))
    .parse(s);
    parsed.ok().map(|(_, time)| time)
}

/// The lines of `reader` in reverse order, each ending in a newline; an
/// input longer than [`MAX_REVERSED`] is given back as it is, and so is
/// the second value false then.
pub fn reversed(mut reader: Box<dyn Read + Send>) -> io::Result<(Box<dyn Read + Send>, bool)> {
    let mut all = Vec::new();
    (&mut reader)
        .take(MAX_REVERSED as u64 + 1)
        .read_to_end(&mut all)?;
    if all.len() > MAX_REVERSED {
        return Ok((Box::new(Cursor::new(all).chain(reader)), false));
    }
    let body = all.strip_suffix(b"\n").unwrap_or(&all);
    let mut out = Vec::with_capacity(all.len() + 1);
    for line in body.rsplit(|&b| b == b'\n') {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    Ok((Box::new(Cursor::new(out)), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORWARD: &str = "step 10 loss 2.3\n\
        Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    main()\n\
        RuntimeError: CUDA error: an illegal memory access was encountered\nAborted (core dumped)\n";

    fn backwards(text: &str) -> String {
        text.lines().rev().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn a_traceback_read_upside_down_tells_a_newest_first_log() {
        assert!(!is_newest_first(FORWARD.as_bytes(), true));
        assert!(is_newest_first(backwards(FORWARD).as_bytes(), false));
        // With a log view's time in front of every line.
        let stamped: String = backwards(FORWARD)
            .lines()
            .map(|l| format!("2024-03-01T10:11:12.123Z {l}\n"))
            .collect();
        assert!(is_newest_first(stamped.as_bytes(), false));
        // A traceback alone, its header last.
        let alone = backwards(FORWARD.get(17..).unwrap_or_default());
        assert!(
            alone.ends_with("Traceback (most recent call last):\n"),
            "{alone}"
        );
        assert!(is_newest_first(alone.as_bytes(), true));
        assert!(!is_newest_first(alone.as_bytes(), false));
    }

    #[test]
    fn faulthandlers_glogs_and_a_log_views_order_tell_it_too() {
        let dump = "Thread 0x00007f57caf71740 (most recent call first):\n  File \"streams.py\", line 95 in synchronize\n  File \"engine.py\", line 12 in step\n\nstep 4\n";
        assert!(!is_newest_first(dump.as_bytes(), true));
        assert!(is_newest_first(backwards(dump).as_bytes(), true));
        let glog = "I1007 19:40:39.1 26752 net.cpp:1] Network initialization done.\nF1007 19:40:40.235829 26752 syncedmem.cpp:66] Check failed: error == cudaSuccess (2 vs. 0)  out of memory\n*** Check failure stack trace: ***\nAborted (core dumped)\n";
        assert!(!is_newest_first(glog.as_bytes(), true));
        assert!(is_newest_first(backwards(glog).as_bytes(), true));
        let stamped: String = (0..10)
            .map(|i| format!("2024-03-01T10:11:{:02}.{i}Z step {i}\n", 10 + i))
            .collect();
        assert!(!is_newest_first(stamped.as_bytes(), true));
        assert!(is_newest_first(backwards(&stamped).as_bytes(), true));
        let bracketed: String = (0..10)
            .map(|i| format!("[2023-11-21 20:42:{:02},931] INFO step {i}\n", 10 + i))
            .collect();
        assert!(is_newest_first(backwards(&bracketed).as_bytes(), true));
        // Two ranks' times, each going up, interleaved: mostly up.
        let interleaved: String = (0..10)
            .map(|i| {
                format!(
                    "2024-03-01 10:11:{:02} rank {} step\n",
                    10 + i - 2 * (i % 2),
                    i % 2
                )
            })
            .collect();
        assert!(!is_newest_first(interleaved.as_bytes(), true));
    }

    #[test]
    fn a_few_stamped_lines_or_interleaved_ranks_keep_the_order() {
        // Ranks' start-up lines flushed out of order, then untimed lines.
        let mut log: String = (0..4)
            .map(|i| {
                format!(
                    "[2024-03-01 10:11:{:02},204] [INFO] [launch.py:1] rank {i}\n",
                    15 - i
                )
            })
            .collect();
        log.push_str(&"step 3 loss 2.1\n".repeat(8));
        assert!(!is_newest_first(log.as_bytes(), true));
        // Rank 0's header between rank 1's frame and rank 1's source line.
        let inter = "[rank1]: Traceback (most recent call last):\nstep 101\n[rank1]:   File \"t.py\", line 9, in <module>\n\
            [rank0]: Traceback (most recent call last):\n[rank1]:     main()\n[rank0]:   File \"t.py\", line 9, in <module>\n";
        assert!(!is_newest_first(inter.as_bytes(), true));
    }

    #[test]
    fn one_upright_traceback_keeps_the_order() {
        // Two ranks' lines interleaved: one header seems to follow a frame,
        // the other is followed by its frames.
        let log = "  File \"a.py\", line 1, in f\nTraceback (most recent call last):\nstep 3\n\
            Traceback (most recent call last):\n  File \"b.py\", line 2, in g\nValueError: x\n";
        assert!(!is_newest_first(log.as_bytes(), true));
        // A header at the end of a cut head says nothing.
        assert!(!is_newest_first(
            b"  File \"a.py\", line 1, in f\nTraceback (most recent call last):\n",
            false
        ));
        assert!(!is_newest_first(b"", true));
    }

    #[test]
    fn the_lines_come_back_in_the_order_they_were_written() {
        let back = backwards(FORWARD);
        let (mut reader, done) =
            reversed(Box::new(Cursor::new(back.into_bytes()))).unwrap_or_else(|e| panic!("{e}"));
        let mut out = String::new();
        reader
            .read_to_string(&mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(done);
        assert_eq!(out, FORWARD);
    }
}
