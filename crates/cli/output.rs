//! Writing to stdout and stderr; a closed pipe ends output quietly.

use coroner_report::Style;
use std::io::{self, IsTerminal, Write};

/// Writes `text` to stdout. Returns false only for errors other than a
/// broken pipe (a reader that went away, as `| head` does, is fine).
pub fn print(text: &str) -> bool {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(e) => e.kind() == io::ErrorKind::BrokenPipe,
    }
}

/// Writes `text` to stderr, ignoring failures.
pub fn eprint(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// Style for stdout: colour only on a terminal and without `NO_COLOR`.
pub fn stdout_style() -> Style {
    style_for(io::stdout().is_terminal())
}

/// Style for stderr.
pub fn stderr_style() -> Style {
    style_for(io::stderr().is_terminal())
}

fn style_for(terminal: bool) -> Style {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    Style {
        color: terminal && !no_color,
        width: 80,
    }
}

/// Whether stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}
