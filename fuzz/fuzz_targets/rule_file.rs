//! Arbitrary text as a user rule file: parsed and validated; a rule that
//! loads is then run over its own examples and over the file's text. The
//! text is also read as a directory's pattern table.
#![no_main]

use coroner_rules::{parse_rule, Patterns, RuleSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(errors) = Patterns::parse("patterns.toml", text) {
        for e in errors.iter().filter_map(|e| e.span()) {
            assert!(e.end <= text.len(), "{e:?} past {}", text.len());
        }
    }
    let rule = match parse_rule("fuzz.toml", "fuzz", text) {
        Ok(rule) => rule,
        Err(errors) => {
            for e in &errors {
                // Every diagnostic's span lies within the file.
                if let Some(span) = e.span() {
                    assert!(span.end <= text.len(), "{span:?} past {}", text.len());
                }
            }
            return;
        }
    };
    let inputs: Vec<String> = rule.examples.iter().map(|e| e.input.clone()).collect();
    let Ok(set) = RuleSet::new(vec![rule]) else {
        return;
    };
    for input in inputs.iter().map(String::as_str).chain([text]) {
        let _ = coroner_analyze::examples::findings_in_text(&set, input);
    }
});
