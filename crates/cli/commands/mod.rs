pub mod analyze;
pub mod baseline;
pub mod explain;
pub mod rules;
pub mod run;

use crate::args::RuleArgs;
use crate::output;
use coroner_rules::{RuleSet, RuleSources};

/// Loads rules as the arguments ask, printing every rule-file error.
pub fn load_rules(args: &RuleArgs) -> Option<RuleSet> {
    let sources = RuleSources {
        builtin: !args.no_builtin_rules,
        dirs: args.rules.clone(),
        builtin_names: true,
    };
    match RuleSet::load(&sources) {
        Ok(set) => Some(set),
        Err(errors) => {
            report_rule_errors(&errors);
            None
        }
    }
}

/// Prints rule-file errors as diagnostics on stderr.
pub fn report_rule_errors(errors: &[coroner_rules::RuleError]) {
    let style = output::stderr_style();
    for e in errors {
        output::eprint(&coroner_report::diagnostic::render(e, style));
    }
    output::eprint(&format!("coroner: {} rule error(s)\n", errors.len()));
}

/// Warns on stderr about `--ignore` / `ignore` ids that name no loaded rule
/// (a typo would otherwise silently ignore nothing).
pub fn warn_unknown_rules(ignore: &[String], rules: &RuleSet) {
    for id in ignore {
        if rules.get(id).is_none() {
            output::eprint(&format!(
                "coroner: warning: ignored rule `{id}` is not among the loaded rules\n"
            ));
        }
    }
}

/// The inputs to read: the paths given, or standard input when none are
/// and it is not a terminal. `None` (after saying so) when there is
/// nothing to read; `what` and `command` word the message.
pub fn input_paths(paths: &[String], what: &str, command: &str) -> Option<Vec<String>> {
    if !paths.is_empty() {
        return Some(paths.to_vec());
    }
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        output::eprint(&format!(
            "coroner: nothing to {what}: give files or directories, or pipe a log into standard input (see `coroner {command} --help`)\n"
        ));
        return None;
    }
    Some(vec!["-".to_owned()])
}

/// `coroner completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> crate::exit::ExitCode {
    let mut cmd = <crate::args::Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "coroner", &mut out);
    print_bytes(&out)
}

/// `coroner man`: the manual page (roff) on stdout.
pub fn man() -> crate::exit::ExitCode {
    let cmd = <crate::args::Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    if clap_mangen::Man::new(cmd).render(&mut out).is_err() {
        return crate::exit::ExitCode::ToolError;
    }
    print_bytes(&out)
}

fn print_bytes(bytes: &[u8]) -> crate::exit::ExitCode {
    if output::print(&String::from_utf8_lossy(bytes)) {
        crate::exit::ExitCode::Clean
    } else {
        crate::exit::ExitCode::ToolError
    }
}
