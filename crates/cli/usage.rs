//! Parsing the command line. clap's own messages (a usage error, the
//! help, the version) are rendered here and written through the output
//! guard like every other message: an argument that holds escape
//! sequences, C1 controls, bidi overrides, or a line feed followed by a
//! workflow command is shown, not obeyed. The exit status stays clap's
//! (2 for a usage error, 0 for the help and the version).

use crate::args::Cli;
use crate::output;
use clap::builder::Styles;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;

/// The command line `args`, or the exit status once clap's message has
/// been written.
pub fn parse(args: &[OsString]) -> Result<Cli, u8> {
    // Parsed without styles, so that a message holds no escape sequence
    // but those of the arguments, which the guard then shows.
    let mut plain = Cli::command().styles(Styles::plain());
    let mut error = match plain
        .try_get_matches_from_mut(args)
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches))
    {
        Ok(cli) => return Ok(cli),
        Err(e) => e.format(&mut plain),
    };
    let to_stdout = !error.use_stderr();
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // coroner's own text only: coloured where the stream is.
            let colour = if to_stdout {
                output::stdout_style().color
            } else {
                output::stderr_style().color
            };
            let text = colour
                .then(|| styled(args, error.kind()))
                .flatten()
                .unwrap_or_else(|| error.render().ansi().to_string());
            if to_stdout {
                output::print(&text);
            } else {
                output::eprint(&text);
            }
        }
        _ => {
            show_arguments(&mut error);
            output::eprint_plain(&error.render().ansi().to_string());
        }
    }
    Err(u8::try_from(error.exit_code()).unwrap_or(2))
}

/// The message of `kind` that the styled command gives for `args`.
fn styled(args: &[OsString], kind: ErrorKind) -> Option<String> {
    let error = Cli::command().try_get_matches_from(args).err()?;
    (error.kind() == kind).then(|| error.render().ansi().to_string())
}

/// The pieces of `error` that came from the arguments made inert (a line
/// feed in caret notation too, so that what follows it cannot start a
/// line); the usage is clap's own and keeps its lines.
fn show_arguments(error: &mut clap::Error) {
    let inert = |s: &str| coroner_model::inert(s).into_owned();
    let shown: Vec<(ContextKind, ContextValue)> = error
        .context()
        .filter(|(kind, _)| *kind != ContextKind::Usage)
        .filter_map(|(kind, value)| {
            let value = match value {
                ContextValue::String(s) => ContextValue::String(inert(s)),
                ContextValue::Strings(all) => {
                    ContextValue::Strings(all.iter().map(|s| inert(s)).collect())
                }
                ContextValue::StyledStr(s) => {
                    ContextValue::StyledStr(inert(&s.ansi().to_string()).into())
                }
                ContextValue::StyledStrs(all) => ContextValue::StyledStrs(
                    all.iter()
                        .map(|s| inert(&s.ansi().to_string()).into())
                        .collect(),
                ),
                _ => return None,
            };
            Some((kind, value))
        })
        .collect();
    for (kind, value) in shown {
        error.insert(kind, value);
    }
}
