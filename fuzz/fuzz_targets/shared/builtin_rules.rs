//! The built-in rule set, loaded once per fuzzing process.

use coroner_rules::{RuleSet, RuleSources};
use std::sync::OnceLock;

pub fn rules() -> &'static RuleSet {
    static RULES: OnceLock<RuleSet> = OnceLock::new();
    RULES.get_or_init(|| {
        let sources = RuleSources {
            builtin: true,
            ..RuleSources::default()
        };
        match RuleSet::load(&sources) {
            Ok(set) => set,
            Err(errors) => panic!("built-in rules do not load: {errors:?}"),
        }
    })
}
