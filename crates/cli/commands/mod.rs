pub mod analyze;
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
