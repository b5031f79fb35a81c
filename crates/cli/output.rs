//! Writing to stdout, stderr and report files; a closed pipe ends output
//! quietly. Colour and width follow the terminal, `--color` and the usual
//! environment variables. Everything written goes through
//! [`coroner_model::inert_output`]: whatever a renderer or a message let
//! through, no byte leaves coroner that acts on a terminal or that a CI
//! runner reads as a command, the only escape sequences are coroner's own
//! colours and the only workflow commands the `github` format's own.

use crate::args::ColorChoice;
use coroner_report::Style;
use std::io::{self, IsTerminal, Write};
use std::sync::OnceLock;

static COLOR: OnceLock<ColorChoice> = OnceLock::new();

/// Sets `--color` for the whole run (first call wins).
pub fn set_color(choice: ColorChoice) {
    let _ = COLOR.set(choice);
}

/// Writes `text` to stdout. Returns false only for errors other than a
/// broken pipe (a reader that went away, as `| head` does, is fine).
pub fn print(text: &str) -> bool {
    write_stdout(&coroner_model::inert_output(text, stdout_style().color))
}

/// [`print`] for the `github` format, whose lines are workflow commands.
pub fn print_commands(text: &str) -> bool {
    write_stdout(&coroner_model::inert_commands_output(text))
}

fn write_stdout(text: &str) -> bool {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(e) => e.kind() == io::ErrorKind::BrokenPipe,
    }
}

/// Writes `text` to stderr, ignoring failures.
pub fn eprint(text: &str) {
    let text = coroner_model::inert_output(text, stderr_style().color);
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// Writes `text`, which holds no colours of coroner's, to stderr, with
/// every escape sequence in it shown: ignores failures.
pub fn eprint_plain(text: &str) {
    let text = coroner_model::inert_output(text, false);
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// Writes `text` to the file `path` (a report: never coloured).
pub fn write_file(path: &std::path::Path, text: &str) -> io::Result<()> {
    std::fs::write(path, coroner_model::inert_output(text, false).as_bytes())
}

/// [`write_file`] for the `github` format, whose lines are workflow
/// commands.
pub fn write_commands_file(path: &std::path::Path, text: &str) -> io::Result<()> {
    std::fs::write(path, coroner_model::inert_commands_output(text).as_bytes())
}

/// Style for stdout.
pub fn stdout_style() -> Style {
    let terminal = io::stdout().is_terminal();
    terminal_style(terminal, || terminal_size::terminal_size_of(io::stdout()))
}

/// Style for stderr.
pub fn stderr_style() -> Style {
    let terminal = io::stderr().is_terminal();
    terminal_style(terminal, || terminal_size::terminal_size_of(io::stderr()))
}

/// The style of a stream that is a terminal (`terminal`) or not, whose
/// size `size` reads.
fn terminal_style(
    terminal: bool,
    size: impl FnOnce() -> Option<(terminal_size::Width, terminal_size::Height)>,
) -> Style {
    Style {
        color: use_color(terminal),
        width: width(terminal.then(size).flatten()),
        verbose: false,
    }
}

/// Style for a file: no colour, the terminal's width when there is one.
pub fn file_style() -> Style {
    Style {
        color: false,
        width: width(terminal_size::terminal_size_of(io::stdout())),
        verbose: false,
    }
}

/// Whether to colour output going to a terminal (`terminal`) or not:
/// `--color always|never` decides; otherwise `NO_COLOR` turns colour off,
/// `CLICOLOR_FORCE` or `FORCE_COLOR` turn it on even in a pipe, and a
/// terminal gets colour unless `TERM=dumb`.
fn use_color(terminal: bool) -> bool {
    match COLOR.get().copied().unwrap_or(ColorChoice::Auto) {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if anstyle_query::no_color() {
                false
            } else if anstyle_query::clicolor_force() || force_color() {
                true
            } else {
                terminal && anstyle_query::term_supports_color()
            }
        }
    }
}

/// `FORCE_COLOR` set to anything but empty, `0` or `false`.
fn force_color() -> bool {
    std::env::var("FORCE_COLOR").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The width to wrap at: the terminal's, else `COLUMNS`, else 80, kept
/// between 40 and 200 columns.
fn width(terminal: Option<(terminal_size::Width, terminal_size::Height)>) -> usize {
    let columns = terminal.map(|(w, _)| usize::from(w.0)).or_else(|| {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
    });
    columns.unwrap_or(80).clamp(40, 200)
}
