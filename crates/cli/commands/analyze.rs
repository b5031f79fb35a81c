use crate::args::{AnalyzeArgs, Format};
use crate::exit::ExitCode;
use crate::output;
use std::io::IsTerminal;

pub fn run(args: &AnalyzeArgs) -> ExitCode {
    let Some(rules) = super::load_rules(&args.rule_args) else {
        return ExitCode::ToolError;
    };
    let mut paths = args.paths.clone();
    if paths.is_empty() {
        if std::io::stdin().is_terminal() {
            output::eprint("coroner: nothing to analyse: give files or directories, or pipe a log into standard input (see `coroner analyze --help`)\n");
            return ExitCode::ToolError;
        }
        paths.push("-".to_owned());
    }
    let report = coroner_analyze::analyze(&paths, &rules);
    let format = args.format.unwrap_or(if output::stdout_is_terminal() {
        Format::Human
    } else {
        Format::Json
    });
    let text = match format {
        Format::Human => coroner_report::human::render(&report, output::stdout_style()),
        Format::Json => coroner_report::json::render(&report),
    };
    if !output::print(&text) {
        return ExitCode::ToolError;
    }
    if report.has_input_errors() {
        ExitCode::ToolError
    } else if report.max_severity().is_some_and(|s| s >= args.fail_on) {
        ExitCode::Findings
    } else {
        ExitCode::Clean
    }
}
