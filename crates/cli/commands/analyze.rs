use super::baseline::{self, Baseline};
use crate::args::{AnalyzeArgs, ReportFormat};
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

/// Whether `paths` can be followed: one file, or standard input.
fn followable(paths: &[String]) -> Result<(), String> {
    match paths {
        [one] if one == "-" || std::path::Path::new(one).is_file() => Ok(()),
        [one] => Err(format!("needs a file or `-`, and `{one}` is not a file")),
        _ => Err("follows one input at a time".to_owned()),
    }
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
    let fail_on = args
        .fail_on
        .or(config.as_ref().and_then(|c| c.fail_on))
        .unwrap_or(Severity::Error);
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
    let format = args.format.unwrap_or(if output::stdout_is_terminal() {
        ReportFormat::Human
    } else {
        ReportFormat::Json
    });
    if args.follow {
        if let Err(msg) = followable(&paths) {
            output::eprint(&format!("coroner: --follow {msg}\n"));
            return ExitCode::ToolError;
        }
        // Ctrl-C ends following; the verdict is still printed.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
    }
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
        && (format == ReportFormat::Jsonl || (args.follow && format == ReportFormat::Human));
    let host_core = args.core_args.options();
    let options = coroner_analyze::Options {
        follow: args.follow.then_some(&STOP),
        on_finding: streaming.then_some(&announce as &(dyn Fn(&Finding) + Sync)),
        host_core: Some(&host_core),
        selection: Some(&selection),
    };
    let mut report = coroner_analyze::analyze_with(&paths, &rules, options);
    if !args.quiet {
        super::warn_unknown_rules(&ignore, &rules);
    }
    let suppressed = baseline::apply(&mut report, &ignore, baseline.as_ref());
    if !args.quiet && (suppressed.ignored > 0 || suppressed.baselined > 0) {
        let mut parts = Vec::new();
        if suppressed.baselined > 0 {
            let file = baseline_path.as_deref().map(shown_path).unwrap_or_default();
            parts.push(format!("{} by baseline {file}", suppressed.baselined));
        }
        if suppressed.ignored > 0 {
            parts.push(format!("{} by ignore", suppressed.ignored));
        }
        output::eprint(&format!(
            "coroner: {} finding(s) left out ({})\n",
            suppressed.ignored + suppressed.baselined,
            parts.join(", ")
        ));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let base = PathBase {
        cwd,
        prefix: args.path_prefix.clone(),
    };
    // The human report lists input errors itself; with any other output
    // they are also said on standard error, where a person sees them.
    if args.quiet || format != ReportFormat::Human {
        for input in &report.inputs {
            for e in &input.errors {
                let at = e
                    .offset
                    .map(|o| format!(" (at byte {o})"))
                    .unwrap_or_default();
                output::eprint(&format!(
                    "coroner: warning: {}: {}{at}\n",
                    input.path, e.message
                ));
            }
        }
    }
    let text = if args.quiet {
        let mut line = coroner_report::verdict(&report);
        line.push('\n');
        line
    } else {
        match format {
            ReportFormat::Human => coroner_report::human::render(&report, output::stdout_style()),
            ReportFormat::Json => coroner_report::json::render(&report),
            ReportFormat::Sarif => coroner_report::sarif::render(&report, &base),
            ReportFormat::Github => coroner_report::github::render(&report, &base),
            ReportFormat::Markdown => coroner_report::markdown::render(&report),
            ReportFormat::Junit => coroner_report::junit::render(&report, fail_on),
            ReportFormat::Jsonl => coroner_report::jsonl::verdict(&report),
        }
    };
    if !output::print(&text) {
        return ExitCode::ToolError;
    }
    // An input that could not be read is reported with the rest; the run
    // fails as a whole only when nothing at all could be analysed.
    if report.nothing_analysed() {
        ExitCode::ToolError
    } else if report.max_severity().is_some_and(|s| s >= fail_on) {
        ExitCode::Findings
    } else {
        ExitCode::Clean
    }
}
