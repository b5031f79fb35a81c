pub mod analyze;
pub mod baseline;
pub mod explain;
pub mod rules;

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
