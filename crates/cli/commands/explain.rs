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
    let answer = knowledge.explain(&query, &rule_entries);
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
        message: Some(rule.message.clone()),
        category: rule.category,
        severity: rule.severity,
        sticky: None,
        summary: rule.title.clone(),
        causes: Vec::new(),
        fixes: rule.remediation.clone(),
        source: Some(rule.source.clone()),
        immediate: Vec::new(),
        investigatory: Vec::new(),
        unused: false,
        action: rule.action,
    }
}
