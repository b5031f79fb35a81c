//! The built-in rules: every example passes, and the validator rejects what
//! it should.

use coroner_rules::{parse_rule, RuleErrorKind, RuleSet, RuleSources};

fn builtin() -> RuleSet {
    RuleSet::load(&RuleSources {
        builtin: true,
        dirs: Vec::new(),
        builtin_names: false,
    })
    .unwrap_or_else(|e| panic!("built-in rules invalid: {e:?}"))
}

#[test]
fn every_builtin_example_passes() {
    let set = builtin();
    let outcomes = coroner_analyze::examples::check_examples(&set, |_| true);
    assert!(outcomes.len() >= 2 * set.rules().len());
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            o.failure
                .as_ref()
                .map(|f| format!("{} #{}: {f}", o.rule, o.number))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn builtin_rules_live_in_family_folders_named_after_their_ids() {
    for rule in builtin().rules() {
        let expected_end = format!("/{}.toml", rule.id);
        assert!(
            rule.source.starts_with("rules/") && rule.source.ends_with(&expected_end),
            "{}",
            rule.source
        );
        assert!(
            !rule.remediation.is_empty(),
            "{} has no remediation",
            rule.id
        );
    }
}

/// The built-in rules load with their regexes compiled on first use, which
/// skips the checks that need them; each file must pass them all, as
/// `coroner rules validate` runs them (no message placeholder some match
/// leaves unset).
#[test]
fn every_builtin_rule_passes_the_full_validation() {
    if let Err(errors) = RuleSet::validate_builtin() {
        let lines: Vec<String> = errors.iter().map(|e| format!("{e:?}")).collect();
        panic!("{}", lines.join("\n"));
    }
}

const GOOD: &str = r#"id = "sample-rule"
title = "t"
category = "gpu-oom"
severity = "error"
message = "got {what}"
[match]
literals = ["boom"]
any = ['''boom (?P<what>\w+)''']
[[examples]]
fires = true
input = "boom x"
[[examples]]
fires = false
input = "quiet"
"#;

fn kinds(text: &str) -> Vec<RuleErrorKind> {
    match parse_rule("rules/x/sample-rule.toml", "sample-rule", text) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.kind).collect(),
    }
}

#[test]
fn the_validator_accepts_a_good_rule() {
    assert_eq!(kinds(GOOD), Vec::new());
}

#[test]
fn the_validator_rejects_each_mistake() {
    let cases = [
        (
            GOOD.replace("gpu-oom", "gpu-boom"),
            RuleErrorKind::UnknownCategory,
        ),
        (
            GOOD.replace("(?P<what>\\w+)", "(?P<what>\\w+"),
            RuleErrorKind::BadRegex,
        ),
        (
            GOOD.replace("got {what}", "got {where}"),
            RuleErrorKind::UndefinedPlaceholder,
        ),
        (
            GOOD.replace("fires = false", "fires = true"),
            RuleErrorKind::MissingExample,
        ),
        (
            GOOD.replace("id = \"sample-rule\"", "id = \"other-rule\""),
            RuleErrorKind::BadId,
        ),
        (
            GOOD.replace("literals = [\"boom\"]", "literals = []"),
            RuleErrorKind::EmptyMatch,
        ),
        (
            GOOD.replace("severity = \"error\"", "severity = \"fatal\""),
            RuleErrorKind::UnknownValue,
        ),
        (
            GOOD.replace("title = \"t\"", "title = 3"),
            RuleErrorKind::Syntax,
        ),
        (
            GOOD.replace(
                "message = \"got {what}\"",
                "message = \"got {what}\"\nremediation = [\"look {what} up\"]",
            ),
            RuleErrorKind::UndefinedPlaceholder,
        ),
        (
            GOOD.replace(
                "severity = \"error\"",
                "severity = \"error\"\naction = \"reboot\"",
            ),
            RuleErrorKind::UnknownValue,
        ),
    ];
    for (text, kind) in cases {
        assert_eq!(kinds(&text), vec![kind], "{text}");
    }
}

#[test]
fn a_rule_names_its_action_or_takes_its_category_s() {
    let named = GOOD.replace(
        "severity = \"error\"",
        "severity = \"error\"\naction = \"drain-node\"",
    );
    let rule = parse_rule("rules/x/sample-rule.toml", "sample-rule", &named).unwrap();
    assert_eq!(rule.action, coroner_model::ActionKind::DrainNode);
    let plain = parse_rule("rules/x/sample-rule.toml", "sample-rule", GOOD).unwrap();
    assert_eq!(plain.action, coroner_model::ActionKind::FixConfig);
}

#[test]
fn a_bad_regex_error_points_at_the_pattern() {
    let text = GOOD.replace("(?P<what>\\w+)", "(?P<what>\\w+");
    let err = parse_rule("r.toml", "sample-rule", &text)
        .err()
        .unwrap_or_default();
    let span = err.first().and_then(|e| e.span()).expect("a span");
    assert!(text[span].contains("boom (?P<what>"));
}

#[test]
fn duplicate_ids_are_rejected() {
    let a = parse_rule("a/sample-rule.toml", "sample-rule", GOOD).unwrap();
    let b = parse_rule("b/sample-rule.toml", "sample-rule", GOOD).unwrap();
    let errors = RuleSet::new(vec![a, b]).err().unwrap_or_default();
    assert_eq!(
        errors.iter().map(|e| e.kind).collect::<Vec<_>>(),
        vec![RuleErrorKind::DuplicateId]
    );
}

#[test]
fn an_oversized_regex_is_refused_by_the_size_limit_at_its_key() {
    // Compiles to far more than the 1 MiB program size allowed.
    let text = GOOD.replace("(?P<what>\\w+)", "(?P<what>\\w+)(?:\\w{200}){200}");
    let err = parse_rule("r.toml", "sample-rule", &text)
        .err()
        .unwrap_or_default();
    assert_eq!(
        err.iter().map(|e| e.kind).collect::<Vec<_>>(),
        vec![RuleErrorKind::BadRegex]
    );
    let message = err.first().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("size limit"), "{message}");
    let span = err.first().and_then(|e| e.span()).expect("a span");
    assert!(text[span].contains("(?:\\w{200}){200}"));
}

#[test]
fn a_catastrophic_pattern_scans_a_long_line_in_linear_time() {
    // Nested quantifiers that make a backtracking engine exponential; the
    // regex crate runs them in time linear in the line.
    let text = GOOD
        .replace("(?P<what>\\w+)", "(?P<what>(a|aa|a*)*(a+)+)c")
        .replace("input = \"boom x\"", "input = \"boom aac\"");
    let rule = parse_rule("r.toml", "sample-rule", &text).unwrap();
    let set = RuleSet::new(vec![rule]).unwrap();
    let started = std::time::Instant::now();
    let mut log = String::from("boom ");
    log.push_str(&"a".repeat(512 * 1024));
    log.push_str("\nboom aaaac\n");
    let findings = coroner_analyze::examples::findings_in_text(&set, &log);
    let elapsed = started.elapsed();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].first_seen.line, 2);
    assert!(
        elapsed < std::time::Duration::from_secs(20),
        "{elapsed:?} for a 512 KiB line"
    );
}

#[test]
fn a_condition_naming_no_capture_points_at_itself() {
    let text = GOOD.replace("[match]\n", "[match]\nwhen = [\"what > nothing\"]\n");
    assert!(
        text.contains("when ="),
        "the sample rule has a [match] table"
    );
    let err = parse_rule("r.toml", "sample-rule", &text)
        .err()
        .unwrap_or_default();
    assert_eq!(
        err.iter().map(|e| e.kind).collect::<Vec<_>>(),
        vec![RuleErrorKind::BadCondition]
    );
    let span = err.first().and_then(|e| e.span()).expect("a span");
    assert!(text[span].contains("what > nothing"));
}

#[test]
fn a_condition_decides_whether_a_match_counts() {
    // The sample rule captures `what`; a capture that is not a quantity
    // never satisfies a comparison.
    let text = GOOD.replace("[match]\n", "[match]\nwhen = [\"what > 1 GiB\"]\n");
    let rule = parse_rule("r.toml", "sample-rule", &text).unwrap();
    let set = RuleSet::new(vec![rule]).unwrap();
    for example in &set.rules()[0].examples {
        if example.fires {
            let found = coroner_analyze::examples::findings_in_text(&set, &example.input);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}

/// Every rule that `rules/COVERAGE.md` says reads a message exists, and
/// every built-in rule's file is where it says the rule lives.
#[test]
fn the_coverage_table_names_only_rules_that_exist() {
    let rules = builtin();
    let text = std::fs::read_to_string(crate::util::root().join("rules/COVERAGE.md")).unwrap();
    let categories: Vec<&str> = coroner_model::Category::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let mut named = 0;
    let mut missing = Vec::new();
    for row in text.lines().filter(|l| l.starts_with("| `")) {
        let Some(cell) = row.trim_end_matches('|').rsplit(" | ").next() else {
            continue;
        };
        let cell = cell.trim();
        if cell.starts_with("none") {
            continue;
        }
        // The rule the row names first, before any explanation.
        let first = cell
            .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .find(|w| w.contains('-') && !w.starts_with('-') && !categories.contains(w));
        if let Some(id) = first {
            named += 1;
            if rules.get(id).is_none() {
                missing.push(id.to_owned());
            }
        }
    }
    assert!(named > 150, "only {named} rule names read from the table");
    assert!(
        missing.is_empty(),
        "COVERAGE.md names rules that do not exist: {missing:?}"
    );
}
