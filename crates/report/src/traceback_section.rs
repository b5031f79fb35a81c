//! The Python traceback of the root cause in the terminal report: each
//! exception of the chain with its innermost frames, oldest first, joined
//! by how one led to the next.

use coroner_model::{cap_chars, ChainLink, PyException, Traceback};
use std::fmt::Write as _;

/// Innermost frames shown per exception.
const FRAMES: usize = 6;
/// The section, headed by `heading`, its lines cut to `width` characters.
pub(crate) fn render(traceback: &Traceback, heading: &str, width: usize) -> String {
    format!("\n{heading}\n{}", body(traceback, width))
}

/// The chain without a heading: each exception, indented, with its frames.
pub(crate) fn body(traceback: &Traceback, width: usize) -> String {
    let mut out = String::new();
    for exception in &traceback.exceptions {
        match exception.follows {
            Some(ChainLink::Cause) => out.push_str("  which was the direct cause of\n"),
            Some(ChainLink::Context) => {
                out.push_str("  while it was handled, another exception:\n")
            }
            None => {}
        }
        write_exception(&mut out, exception, width);
    }
    out
}

fn write_exception(out: &mut String, e: &PyException, width: usize) {
    let mut head = e.exception.clone();
    if !e.message.is_empty() {
        let _ = write!(head, ": {}", e.message);
    }
    let place = format!("  (line {})", e.line);
    let room = width.saturating_sub(2 + place.chars().count()).max(20);
    let _ = writeln!(out, "  {}{place}", cut(&head, room));
    // The program's own frames (the innermost few) and the innermost frame;
    // runs of library frames between them are counted, not listed.
    let own: Vec<usize> = (0..e.frames.len())
        .filter(|&i| !e.frames[i].is_library())
        .collect();
    let shown_own = &own[own.len().saturating_sub(FRAMES)..];
    let last = e.frames.len().checked_sub(1);
    let shown = |i: usize| shown_own.contains(&i) || Some(i) == last;
    let mut skipped = e.frames_omitted;
    let mut library = 0u64;
    for (i, frame) in e.frames.iter().enumerate() {
        if !shown(i) {
            if frame.is_library() && shown_own.first().is_some_and(|&f| i > f) {
                library += 1;
            } else {
                skipped += 1;
            }
            continue;
        }
        if skipped > 0 {
            let _ = writeln!(out, "    … {skipped} outer frame(s)");
            skipped = 0;
        }
        if library > 0 {
            let _ = writeln!(out, "    … {library} library frame(s)");
            library = 0;
        }
        let place = format!(":{} in {}", frame.line, frame.function);
        let room = width.saturating_sub(4 + place.chars().count()).max(20);
        let _ = writeln!(out, "    {}{place}", cut_left(&frame.file, room));
        if let Some(code) = &frame.code {
            let _ = writeln!(
                out,
                "        {}",
                cut(code, width.saturating_sub(8).max(20))
            );
        }
    }
}

/// `s` in at most `max` characters, `…` included.
fn cut(s: &str, max: usize) -> String {
    cap_chars(s, max.saturating_sub(1))
}

/// The last `max` characters of `s`, with `…` in front when cut (a path
/// keeps its file name).
fn cut_left(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        return s.to_owned();
    }
    let skip = count - max.saturating_sub(1);
    format!("…{}", s.chars().skip(skip).collect::<String>())
}
