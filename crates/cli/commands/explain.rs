use crate::args::{ExplainArgs, Format};
use crate::exit::ExitCode;
use crate::output;
use coroner_knowledge::{Answer, Entry, EntryKind, Knowledge};
use coroner_rules::Rule;

pub fn run(args: &ExplainArgs) -> ExitCode {
    let knowledge = match Knowledge::builtin() {
        Ok(k) => k,
        Err(e) => {
            output::eprint(&format!("coroner: built-in tables are invalid: {e}\n"));
            return ExitCode::ToolError;
        }
    };
    let Some(rules) = super::load_rules(&args.rule_args) else {
        return ExitCode::ToolError;
    };
    let rule_entries: Vec<Entry> = rules.rules().iter().map(rule_entry).collect();
    let query = args.thing.join(" ");
    let mut answer = knowledge.explain(&query, &rule_entries);
    // A pasted log line is also read by the rules, as a log would be: the
    // rules that fire on it come first.
    if query.split_whitespace().count() >= 2 {
        let fired: Vec<Entry> = rules_firing(&query, &rules)
            .into_iter()
            .filter_map(|(id, message)| {
                let mut entry = rule_entry(rules.get(&id)?);
                entry.message = Some(message);
                Some(entry)
            })
            .collect();
        if !fired.is_empty() {
            answer = match answer {
                Answer::Found(known) => {
                    let mut all = fired;
                    all.extend(known);
                    dedup(&mut all);
                    Answer::Found(all)
                }
                Answer::NotFound { .. } => Answer::Found(fired),
            };
        }
    }
    let text = match args.format {
        Format::Human => coroner_report::explain::human(&query, &answer, output::stdout_style()),
        Format::Json => coroner_report::explain::json(&query, &answer),
    };
    let printed = output::print(&text);
    match (&answer, printed) {
        (_, false) | (Answer::NotFound { .. }, _) => ExitCode::ToolError,
        (Answer::Found(_), true) => ExitCode::Clean,
    }
}

fn rule_entry(rule: &Rule) -> Entry {
    Entry {
        kind: EntryKind::Rule,
        code: None,
        names: vec![rule.id.clone()],
        runtime_name: None,
        driver_name: None,
        legacy_code: None,
        message: Some(template_shown(&rule.message)),
        category: rule.category,
        severity: rule.severity,
        sticky: None,
        summary: rule.title.clone(),
        causes: Vec::new(),
        fixes: rule.remediation.to_vec(),
        source: Some(rule.source.clone()),
        immediate: Vec::new(),
        investigatory: Vec::new(),
        unused: false,
        distinctive: false,
        action: rule.action,
    }
}

/// The rules that fire on `text` read as a log, the root cause's first,
/// with their messages as filled in.
fn rules_firing(text: &str, rules: &coroner_rules::RuleSet) -> Vec<(String, String)> {
    let scratch = std::env::temp_dir().join(format!("coroner-explain-{}.log", std::process::id()));
    if std::fs::write(&scratch, format!("{text}\n")).is_err() {
        return Vec::new();
    }
    let names = [(scratch.clone(), "pasted text".to_owned())];
    let options = coroner_analyze::Options {
        file_names: &names,
        ..coroner_analyze::Options::default()
    };
    let report =
        coroner_analyze::analyze_with(&[scratch.to_string_lossy().into_owned()], rules, options);
    let _ = std::fs::remove_file(&scratch);
    let mut findings: Vec<&coroner_model::Finding> = report
        .findings
        .iter()
        .filter(|f| !rules.get(&f.rule).is_some_and(|r| r.internal))
        .collect();
    // The root cause's finding first, then the others in their order.
    findings.sort_by_key(|f| report.root_cause.rule.as_deref() != Some(f.rule.as_str()));
    let mut fired: Vec<(String, String)> = Vec::new();
    for f in findings {
        if !fired.iter().any(|(id, _)| *id == f.rule) {
            fired.push((f.rule.clone(), f.message.clone()));
        }
    }
    fired.truncate(3);
    fired
}

fn dedup(entries: &mut Vec<Entry>) {
    let mut seen = std::collections::BTreeSet::new();
    entries.retain(|e| seen.insert((e.kind.label(), e.code, e.names.clone())));
}

/// A rule's message template as shown on its own: optional parts
/// (`[[ ... ]]`) left out, placeholders as `<name>`.
fn template_shown(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("[[") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("]]")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out.replace('{', "<").replace('}', ">")
}
