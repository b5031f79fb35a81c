use crate::args::{Format, RuleArgs, RulesCommand};
use crate::exit::ExitCode;
use crate::output;
use coroner_model::shown_path;
use coroner_rules::{RuleSet, RuleSources};
use std::fmt::Write as _;
use std::path::Path;

pub fn run(cmd: &RulesCommand) -> ExitCode {
    match cmd {
        RulesCommand::List { format, rule_args } => list(*format, rule_args),
        RulesCommand::Show { id, rule_args } => show(id, rule_args),
        RulesCommand::Test {
            dir,
            no_builtin_rules,
        } => test(dir.as_deref(), *no_builtin_rules),
        RulesCommand::Validate { dir } => validate(dir),
    }
}

fn list(format: Format, args: &RuleArgs) -> ExitCode {
    let Some(set) = super::load_rules(args) else {
        return ExitCode::ToolError;
    };
    let text = match format {
        Format::Json => {
            let rows: Vec<_> = set
                .rules()
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "id": r.id,
                        "title": r.title,
                        "category": r.category,
                        "severity": r.severity,
                        "role": r.role,
                        "source": r.source,
                    })
                })
                .collect();
            let mut s = serde_json::to_string_pretty(&rows).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Human => {
            let width = set.rules().iter().map(|r| r.id.len()).max().unwrap_or(0);
            let mut s = String::new();
            for r in set.rules() {
                let _ = writeln!(
                    s,
                    "{:width$}  {:8}  {:24}  {}",
                    r.id,
                    r.severity.as_str(),
                    r.category.as_str(),
                    r.title
                );
            }
            let _ = writeln!(s, "{} rules", set.rules().len());
            s
        }
    };
    finish(output::print(&text), ExitCode::Clean)
}

fn show(id: &str, args: &RuleArgs) -> ExitCode {
    let Some(set) = super::load_rules(args) else {
        return ExitCode::ToolError;
    };
    match set.get(id) {
        Some(rule) => {
            let text = format!("# {}\n{}", rule.source, rule.text);
            finish(output::print(&text), ExitCode::Clean)
        }
        None => {
            let near = near_ids(&set, id);
            let hint = if near.is_empty() {
                String::new()
            } else {
                format!(" (did you mean: {})", near.join(", "))
            };
            output::eprint(&format!("coroner: no rule `{id}`{hint}\n"));
            ExitCode::ToolError
        }
    }
}

/// Up to five rule ids like `id`: those holding it or held by it, then the
/// closest by Jaro-Winkler similarity (a typo, another word order).
fn near_ids<'a>(set: &'a RuleSet, id: &str) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = set
        .rules()
        .iter()
        .map(|r| r.id.as_str())
        .filter_map(|r| {
            let score = if r.contains(id) || id.contains(r) {
                2.0
            } else {
                strsim::jaro_winkler(id, r)
            };
            (score >= 0.9).then_some((score, r))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(5).map(|(_, r)| r).collect()
}

fn test(dir: Option<&Path>, no_builtin: bool) -> ExitCode {
    let sources = RuleSources {
        builtin: dir.is_none() || !no_builtin,
        dirs: dir.map(|d| vec![d.to_path_buf()]).unwrap_or_default(),
        builtin_names: true,
    };
    let set = match RuleSet::load(&sources) {
        Ok(s) => s,
        Err(errors) => {
            super::report_rule_errors(&errors);
            return ExitCode::ToolError;
        }
    };
    let own = |r: &coroner_rules::Rule| match dir {
        None => true,
        Some(d) => Path::new(&r.source).starts_with(d),
    };
    let outcomes = coroner_analyze::examples::check_examples(&set, own);
    let mut text = String::new();
    let mut failed = 0;
    for o in &outcomes {
        if let Some(why) = &o.failure {
            failed += 1;
            let kind = if o.fires { "firing" } else { "quiet" };
            let _ = writeln!(
                text,
                "FAIL {} ({} example {}): {why}\n     in {}",
                o.rule, kind, o.number, o.source
            );
        }
    }
    let rules = set.rules().iter().filter(|r| own(r)).count();
    let _ = writeln!(
        text,
        "{} passed, {} failed ({} examples of {} rules)",
        outcomes.len() - failed,
        failed,
        outcomes.len(),
        rules
    );
    let code = if failed > 0 {
        ExitCode::Findings
    } else {
        ExitCode::Clean
    };
    finish(output::print(&text), code)
}

fn validate(dir: &Path) -> ExitCode {
    // `supersedes` may name built-in rules without loading them.
    let sources = RuleSources {
        builtin: false,
        dirs: vec![dir.to_path_buf()],
        builtin_names: true,
    };
    match RuleSet::load(&sources) {
        Ok(set) => {
            let own = set
                .rules()
                .iter()
                .filter(|r| Path::new(&r.source).starts_with(dir))
                .count();
            let text = format!("{own} rule(s) valid in {}\n", shown_path(dir));
            finish(output::print(&text), ExitCode::Clean)
        }
        Err(errors) => {
            super::report_rule_errors(&errors);
            ExitCode::ToolError
        }
    }
}

fn finish(printed: bool, code: ExitCode) -> ExitCode {
    if printed {
        code
    } else {
        ExitCode::ToolError
    }
}
