use super::baseline::{self, Baseline};
use crate::args::{AnalyzeArgs, ReportFormat, Target};
use crate::config;
use crate::exit::ExitCode;
use crate::output;
use coroner_model::shown_path;
use coroner_model::Finding;
use coroner_model::Severity;
use coroner_report::PathBase;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set on Ctrl-C while following: the input then counts as ended.
static STOP: AtomicBool = AtomicBool::new(false);

/// Whether `paths` can be followed: one file, or standard input. A file
/// that does not exist yet is waited for (as `tail -F` does), until it
/// appears or Ctrl-C.
fn followable(paths: &[String]) -> Result<(), String> {
    let one = match paths {
        [one] => one,
        _ => return Err("follows one input at a time".to_owned()),
    };
    let path = std::path::Path::new(one);
    if one == "-" || path.is_file() {
        return Ok(());
    }
    if path.exists() {
        return Err(format!(
            "needs a file or `-`, and `{}` is not a file",
            shown_path(path)
        ));
    }
    output::eprint(&format!(
        "coroner: waiting for {} to appear\n",
        shown_path(path)
    ));
    while !path.exists() {
        if STOP.load(Ordering::Relaxed) {
            return Err(format!("stopped before {} appeared", shown_path(path)));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ok(())
}

pub fn run(args: &AnalyzeArgs) -> ExitCode {
    let settings = match config::settings(&args.config, &args.rule_args, &args.ignore) {
        Ok(s) => s,
        Err(msg) => {
            output::eprint(&format!("coroner: {msg}\n"));
            return ExitCode::ToolError;
        }
    };
    let (config, rule_args, ignore) = (settings.file, settings.rule_args, settings.ignore);
    let config_name = config.as_ref().map(|c| shown_path(&c.path));
    let mut notes: Vec<String> = settings.refused.into_iter().collect();
    let refused = notes.len();
    if !args.quiet {
        for note in &notes {
            output::eprint(&format!("coroner: warning: {note}\n"));
        }
    }
    let fail_on = args
        .fail_on
        .or(config.as_ref().and_then(|c| c.fail_on))
        .unwrap_or(Severity::Error);
    let baseline_from_file = !args.no_baseline && args.baseline.is_none();
    let baseline_path = if args.no_baseline {
        None
    } else {
        args.baseline
            .clone()
            .or_else(|| config.as_ref().and_then(|c| c.baseline.clone()))
    };
    let baseline = match baseline_path.as_deref().map(Baseline::load).transpose() {
        Ok(b) => b,
        Err(msg) => {
            output::eprint(&format!("coroner: {msg}\n"));
            return ExitCode::ToolError;
        }
    };
    let selection = match args.walk.selection() {
        Ok(s) => s,
        Err(msg) => {
            output::eprint(&format!("coroner: {msg}\n"));
            return ExitCode::ToolError;
        }
    };
    let Some(rules) = super::load_rules(&rule_args) else {
        return ExitCode::ToolError;
    };
    let Some(paths) = super::input_paths(&args.paths, "analyse", "analyze") else {
        return ExitCode::ToolError;
    };
    let targets = match targets(args) {
        Ok(t) => t,
        Err(msg) => {
            output::eprint(&format!("coroner: {msg}\n"));
            return ExitCode::ToolError;
        }
    };
    // The report shown as findings arrive: the one on standard output.
    let format = targets
        .iter()
        .find(|t| t.to_stdout)
        .map_or(ReportFormat::Human, |t| t.format);
    if args.follow {
        // Ctrl-C ends following; the verdict is still printed.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
        if let Err(msg) = followable(&paths) {
            output::eprint(&format!("coroner: --follow {msg}\n"));
            return ExitCode::ToolError;
        }
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) && !args.quiet {
            let what = paths
                .first()
                .map_or("-".to_owned(), |p| coroner_model::inert(p).into_owned());
            output::eprint(&format!(
                "coroner: watching {what} (Ctrl-C for the verdict)\n"
            ));
        }
    }
    let notice = |msg: &str| output::eprint(&format!("coroner: {msg}\n"));
    // Findings are announced as soon as they are seen in JSON Lines, and
    // as one line each in the human format while following.
    let announce = |f: &Finding| {
        let internal = rules.get(&f.rule).is_some_and(|r| r.internal);
        if internal || ignore.contains(&f.rule) || baseline.as_ref().is_some_and(|b| b.contains(f))
        {
            return;
        }
        let line = match format {
            ReportFormat::Jsonl => coroner_report::jsonl::finding(f),
            _ => coroner_report::human::announcement(f),
        };
        output::print(&line);
    };
    let streaming = !args.quiet
        && args.output.is_none()
        && (format == ReportFormat::Jsonl || (args.follow && format == ReportFormat::Human));
    let host_core = args.core_args.options();
    let options = coroner_analyze::Options {
        follow: args.follow.then_some(&STOP),
        on_finding: streaming.then_some(&announce as &(dyn Fn(&Finding) + Sync)),
        host_core: Some(&host_core),
        selection: Some(&selection),
        stdin_name: args.stdin_filename.as_deref(),
        file_names: &[],
        on_notice: Some(&notice),
    };
    let mut report = coroner_analyze::analyze_with(&paths, &rules, options);
    if !args.quiet {
        super::warn_unknown_rules(&ignore, &rules);
    }
    let suppressed = baseline::apply(&mut report, &rules, &ignore, baseline.as_ref());
    // The report names the files that left findings out.
    let named_in = |from_file: bool| match (&config_name, from_file) {
        (Some(c), true) => format!(" (named in {c})"),
        _ => String::new(),
    };
    if suppressed.baselined > 0 {
        let file = baseline_path.as_deref().map(shown_path).unwrap_or_default();
        notes.push(format!(
            "{} finding(s) left out by baseline {file}{}",
            suppressed.baselined,
            named_in(baseline_from_file)
        ));
    }
    if suppressed.ignored > 0 {
        let by = match (&config_name, settings.ignore_from_file) {
            (Some(c), true) => format!("`ignore` in {c}"),
            _ => "--ignore".to_owned(),
        };
        notes.push(format!(
            "{} finding(s) left out by {by}",
            suppressed.ignored
        ));
    }
    if !args.quiet {
        for note in &notes[refused..] {
            output::eprint(&format!("coroner: {note}\n"));
        }
    }
    report.notes = notes;
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let base = PathBase {
        cwd,
        prefix: args.path_prefix.clone(),
    };
    // The human report lists input errors itself; with any other output
    // they are also said on standard error, where a person sees them.
    if args.quiet || format != ReportFormat::Human {
        print_input_errors(&report, "warning");
    }
    // Nothing could be read: the errors say why, and there is no report
    // to print (a verdict of `unknown` would read as a healthy log).
    if report.nothing_analysed() && !args.quiet && format == ReportFormat::Human {
        print_input_errors(&report, "error");
        return ExitCode::ToolError;
    }
    // Nothing was read at all: say why (what was skipped), whatever the
    // format, and fail once the report is written.
    let nothing_read = report.nothing_read() && !report.nothing_analysed();
    if nothing_read {
        print_nothing_read(&report);
        if !args.quiet && format == ReportFormat::Human {
            return ExitCode::ToolError;
        }
    }
    let mut write_failed = false;
    for target in &targets {
        let verdict_only = args.quiet && target.to_stdout;
        let commands = target.format == ReportFormat::Github && !verdict_only;
        let text = if verdict_only {
            let mut line = coroner_report::verdict(&report);
            line.push('\n');
            line
        } else {
            let style = coroner_report::Style {
                verbose: args.verbose,
                ..match &target.file {
                    None => output::stdout_style(),
                    Some(_) => output::file_style(),
                }
            };
            render(target.format, &report, &base, fail_on, style)
        };
        match &target.file {
            None if commands => write_failed |= !output::print_commands(&text),
            None => write_failed |= !output::print(&text),
            Some(file) => {
                let written = if commands {
                    output::write_commands_file(file, &text)
                } else {
                    output::write_file(file, &text)
                };
                if let Err(e) = written {
                    output::eprint(&format!(
                        "coroner: cannot write {}: {e}\n",
                        shown_path(file)
                    ));
                    write_failed = true;
                }
            }
        }
    }
    if write_failed {
        return ExitCode::ToolError;
    }
    // An input that could not be read is reported with the rest; the run
    // fails as a whole only when nothing at all could be analysed.
    if report.nothing_analysed() || nothing_read {
        ExitCode::ToolError
    } else if !args.exit_zero && report.max_severity().is_some_and(|s| s >= fail_on) {
        ExitCode::Findings
    } else {
        ExitCode::Clean
    }
}

/// One report to write: its format, and its file or standard output.
struct Output {
    format: ReportFormat,
    file: Option<std::path::PathBuf>,
    /// Standard output's report (written to `--output` when given).
    to_stdout: bool,
}

/// The reports to write: every `--format FORMAT=FILE`, and one for
/// standard output (or `--output`): the `--format` without a file, or the
/// human report.
fn targets(args: &AnalyzeArgs) -> Result<Vec<Output>, String> {
    let to_stdout: Vec<&Target> = args.format.iter().filter(|t| t.file.is_none()).collect();
    if to_stdout.len() > 1 {
        return Err(
            "--format: only one report can go to standard output; name a file for the others (`--format sarif=coroner.sarif`)"
                .to_owned(),
        );
    }
    let stdout_format = to_stdout.first().map_or(ReportFormat::Human, |t| t.format);
    let mut all = vec![Output {
        format: stdout_format,
        file: args.output.clone(),
        to_stdout: true,
    }];
    for target in args.format.iter().filter(|t| t.file.is_some()) {
        all.push(Output {
            format: target.format,
            file: target.file.clone(),
            to_stdout: false,
        });
    }
    Ok(all)
}

fn render(
    format: ReportFormat,
    report: &coroner_model::Report,
    base: &PathBase,
    fail_on: Severity,
    style: coroner_report::Style,
) -> String {
    match format {
        ReportFormat::Human => coroner_report::human::render(report, style),
        ReportFormat::Json => coroner_report::json::render(report),
        ReportFormat::Sarif => coroner_report::sarif::render_with_fingerprints(report, base, |f| {
            Some(super::baseline::fingerprint(f))
        }),
        ReportFormat::Github => coroner_report::github::render(report, base),
        ReportFormat::Markdown => coroner_report::markdown::render(report),
        ReportFormat::Junit => coroner_report::junit::render(report, fail_on),
        ReportFormat::Jsonl => coroner_report::jsonl::verdict(report),
        ReportFormat::Html => coroner_report::html::render(report),
    }
}

/// Says on standard error which inputs could not be read, and why.
/// Why no input was read: what each input's notes say, or that there was
/// none.
fn print_nothing_read(report: &coroner_model::Report) {
    let mut said = false;
    for input in &report.inputs {
        for note in &input.notes {
            output::eprint(&format!(
                "coroner: error: nothing to analyse: {}: {note}\n",
                input.path
            ));
            said = true;
        }
    }
    if !said {
        output::eprint("coroner: error: nothing to analyse: no file found in the paths given\n");
    }
}

fn print_input_errors(report: &coroner_model::Report, level: &str) {
    for input in &report.inputs {
        for e in &input.errors {
            output::eprint(&format!(
                "coroner: {level}: {}: {}\n",
                input.path,
                e.located()
            ));
        }
    }
}
