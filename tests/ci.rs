//! The CI formats (sarif, github, markdown, junit), --quiet, baselines,
//! --ignore and coroner.toml, through the built binary on real fixtures.

use crate::util::{analyze_json, coroner, fixture, root, run, Scratch};
use serde_json::Value;
use std::path::Path;
use std::process::{Output, Stdio};

const KILL: &str = "logs/torchrun_kill.log";

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the binary in `dir` (not the repository root).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    coroner()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run coroner")
}

/// Every log fixture, relative to the repository root.
fn log_fixtures() -> Vec<String> {
    let dir = root().join("fixtures/real-gpu/logs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| fixture(&format!("logs/{n}")))
        .collect()
}

fn sarif_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("tests/data/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn schema_errors(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn sarif_is_schema_valid_for_every_fixture() {
    let validator = sarif_validator();
    let mut failing = 0;
    for path in log_fixtures() {
        let out = run(&["analyze", "--format", "sarif", &path], None);
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{path}: not JSON: {e}\n{}", stderr(&out)));
        let errors = schema_errors(&validator, &doc);
        assert!(errors.is_empty(), "{path}:\n{}", errors.join("\n"));
        let code = out.status.code().unwrap_or(-1);
        let run0 = &doc["runs"][0];
        let results = run0["results"].as_array().unwrap();
        let root_rule = &run0["properties"]["rootCause"]["rule"];
        let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
        for r in results {
            let index = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], r["ruleId"], "{path}");
            for loc in r["locations"].as_array().unwrap() {
                let uri = loc["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap();
                assert_eq!(uri, path, "{path}: uri relative to the cwd");
            }
        }
        if code == 1 {
            failing += 1;
            assert_eq!(&results[0]["ruleId"], root_rule, "{path}");
            assert_eq!(results[0]["properties"]["rootCause"], true, "{path}");
            assert_eq!(results[0]["level"], "error", "{path}");
            assert!(results[1..]
                .iter()
                .all(|r| r["properties"].get("rootCause").is_none()));
        }
    }
    assert!(failing >= 15, "only {failing} failing fixtures");
}

#[test]
fn sarif_describes_the_rules_that_fired() {
    let out = run(&["analyze", "--format", "sarif", &fixture(KILL)], None);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    let driver = &doc["runs"][0]["tool"]["driver"];
    assert_eq!(driver["name"], "coroner");
    let rule = &driver["rules"][0];
    assert_eq!(rule["id"], "torchrun-root-cause-sigkill");
    assert_eq!(rule["properties"]["category"], "host-oom");
    assert_eq!(rule["properties"]["severity"], "critical");
    assert_eq!(rule["properties"]["role"], "cause");
    assert!(rule["help"]["text"]
        .as_str()
        .unwrap()
        .starts_with("1. SIGKILL"));
    let result = &doc["runs"][0]["results"][0];
    assert_eq!(result["properties"]["count"], 1);
    assert_eq!(result["properties"]["category"], "host-oom");
    let region = &result["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 17);
    let levels: Vec<&str> = doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["level"].as_str().unwrap())
        .collect();
    // The peer connection closed by the kill is its consequence: a note.
    assert_eq!(levels, ["error", "note", "warning", "note"]);
}

#[test]
fn sarif_uris_follow_path_prefix_and_are_percent_encoded() {
    let out = run(
        &[
            "analyze",
            "--format",
            "sarif",
            "--path-prefix",
            "fixtures/real-gpu",
            &fixture(KILL),
        ],
        None,
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let loc = &doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "logs/torchrun_kill.log");

    let dir = Scratch::new("sarif-uri");
    std::fs::create_dir_all(dir.path("job 7")).unwrap();
    std::fs::copy(root().join(fixture(KILL)), dir.path("job 7/rank%1.log")).unwrap();
    let out = run_in(&dir.0, &["analyze", "--format", "sarif", "job 7"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = schema_errors(&sarif_validator(), &doc);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let loc = &doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "job%207/rank%251.log");
}

/// A user rule whose title and message hold every character that GitHub
/// commands and XML escape.
const NASTY_RULE: &str = r#"id = "nasty-checkpoint"
title = "Checkpoint: write failed, 100% <full> & 'stuck'"
category = "disk-full"
severity = "error"
message = "disk 100% full: {path}, retry\nthen \"clean\" <up> & go"
remediation = ["Free space: 50%, or more."]

[match]
literals = ["nasty checkpoint"]
any = ['''nasty checkpoint (?P<path>\S+) failed''']

[[examples]]
fires = true
input = "nasty checkpoint /ckpt/a,b:c%.pt failed\n"

[[examples]]
fires = false
input = "nasty checkpoint /ckpt/a.pt done\n"
"#;

fn nasty_rules(dir: &Scratch) -> String {
    std::fs::create_dir_all(dir.path("rules")).unwrap();
    std::fs::write(dir.path("rules/nasty-checkpoint.toml"), NASTY_RULE).unwrap();
    dir.display("rules")
}

#[test]
fn github_commands_are_escaped() {
    let dir = Scratch::new("gh-escape");
    let rules = nasty_rules(&dir);
    let log = b"step 1\nnasty checkpoint /ckpt/a,b:c%.pt failed\n";
    let out = run(
        &["analyze", "--format", "github", "--rules", &rules, "-"],
        Some(log),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let (head, message) = lines[0]
        .split_once("::")
        .unwrap()
        .1
        .split_once("::")
        .unwrap();
    assert_eq!(
        head, "error title=Root cause%3A disk-full (nasty-checkpoint)",
        "stdin has no file property"
    );
    assert!(
        message.starts_with(
            "disk 100%25 full: /ckpt/a,b:c%25.pt, retry%0Athen \"clean\" <up> & go.%0A%0Anasty checkpoint"
        ),
        "{message}"
    );
    assert!(
        message.contains("%0A1. Free space: 50%25, or more."),
        "{message}"
    );
    assert!(!message.contains('\n'));
    assert!(lines[1].starts_with("coroner: root cause disk-full \u{2014} disk 100% full"));

    // As a file: the property values escape `:` and `,` too.
    std::fs::write(dir.path("a,b:c%.log"), log).unwrap();
    let out = run_in(
        &dir.0,
        &[
            "analyze",
            "--format",
            "github",
            "--rules",
            "rules",
            "a,b:c%.log",
        ],
    );
    let text = stdout(&out);
    assert!(
        text.starts_with("::error file=a%2Cb%3Ac%25.log,line=2,title=Root cause%3A disk-full (nasty-checkpoint)::"),
        "{text}"
    );
}

#[test]
fn github_annotations_are_capped_per_level() {
    let dir = Scratch::new("gh-cap");
    let rules = nasty_rules(&dir);
    let mut log = String::new();
    for rank in 0..14 {
        log.push_str(&format!(
            "[rank{rank}]: nasty checkpoint /ckpt/{rank}.pt failed\n"
        ));
    }
    let out = run(
        &["analyze", "--format", "github", "--rules", &rules, "-"],
        Some(log.as_bytes()),
    );
    let text = stdout(&out);
    let errors = text.lines().filter(|l| l.starts_with("::error ")).count();
    assert_eq!(errors, 10, "{text}");
    assert!(
        text.contains("coroner: 4 more finding(s) not annotated"),
        "{text}"
    );
    assert!(text
        .lines()
        .last()
        .unwrap()
        .starts_with("coroner: root cause disk-full (rank 0)"));
}

#[test]
fn github_orders_root_cause_first_then_by_severity() {
    let out = run(&["analyze", "--format", "github", &fixture(KILL)], None);
    let text = stdout(&out);
    let kinds: Vec<&str> = text
        .lines()
        .map(|l| l.split([' ', ':']).find(|s| !s.is_empty()).unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        ["error", "error", "warning", "notice", "coroner"],
        "{text}"
    );
    assert!(text.starts_with(
        "::error file=fixtures/real-gpu/logs/torchrun_kill.log,line=17,title=Root cause%3A host-oom on rank 1 (torchrun-root-cause-sigkill)::"
    ));
}

fn parse_junit(text: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("not XML ({e}):\n{text}"))
}

#[test]
fn junit_is_well_formed_for_every_fixture() {
    for path in log_fixtures() {
        let out = run(&["analyze", "--format", "junit", &path], None);
        let text = stdout(&out);
        let doc = parse_junit(&text);
        let suites = doc.root_element();
        assert_eq!(suites.tag_name().name(), "testsuites");
        let suite = suites
            .children()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        assert_eq!(suite.attribute("name"), Some("coroner"));
        let cases: Vec<&str> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|n| n.attribute("name").unwrap())
            .collect();
        assert_eq!(
            Some(cases.len()),
            suite
                .attribute("tests")
                .and_then(|t| t.parse::<usize>().ok())
        );
        let mut sorted = cases.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), cases.len(), "{path}: one testcase per rule");
    }
}

fn junit_failures(args: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut all = vec!["analyze", "--format", "junit"];
    all.extend_from_slice(args);
    let out = run(&all, None);
    let text = stdout(&out);
    let doc = parse_junit(&text);
    let mut failed = Vec::new();
    let mut passed = Vec::new();
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let name = case.attribute("name").unwrap().to_owned();
        if case.children().any(|n| n.has_tag_name("failure")) {
            failed.push(name);
        } else {
            assert!(case.children().any(|n| n.has_tag_name("system-out")));
            passed.push(name);
        }
    }
    (failed, passed)
}

#[test]
fn junit_failures_follow_the_threshold() {
    let kill = fixture(KILL);
    let (failed, passed) = junit_failures(&[&kill]);
    assert_eq!(
        failed,
        ["torchrun-root-cause-sigkill", "peer-connection-closed"]
    );
    assert_eq!(
        passed,
        ["torchrun-child-failed", "torchrun-sigterm-teardown"]
    );
    let (failed, passed) = junit_failures(&["--fail-on", "info", &kill]);
    assert_eq!((failed.len(), passed.len()), (4, 0));
    let (failed, passed) = junit_failures(&["--fail-on", "critical", &kill]);
    assert_eq!((failed.len(), passed.len()), (1, 3));

    let out = run(&["analyze", "--format", "junit", &kill], None);
    let text = stdout(&out);
    let doc = parse_junit(&text);
    let case = doc
        .descendants()
        .find(|n| n.attribute("name") == Some("torchrun-root-cause-sigkill"))
        .unwrap();
    assert_eq!(case.attribute("classname"), Some("host-oom"));
    let failure = case.children().find(|n| n.has_tag_name("failure")).unwrap();
    assert!(failure.attribute("message").unwrap().starts_with(
        "torchrun: rank 1 (local_rank 1, pid 2038, host localhost) failed first, killed by SIGKILL"
    ));
    // Both of torchrun's accounts of the death are its evidence.
    let body = failure.text().unwrap();
    assert!(
        body.contains("fixtures/real-gpu/logs/torchrun_kill.log:17: E1129"),
        "{body}"
    );
    assert!(
        body.contains("fixtures/real-gpu/logs/torchrun_kill.log:47: Root Cause"),
        "{body}"
    );
}

#[test]
fn junit_escapes_xml_characters() {
    let dir = Scratch::new("junit-escape");
    let rules = nasty_rules(&dir);
    let out = run(
        &["analyze", "--format", "junit", "--rules", &rules, "-"],
        Some(b"nasty checkpoint /a&<b>'\".pt failed\n"),
    );
    let text = stdout(&out);
    let doc = parse_junit(&text);
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(
        failure.attribute("message"),
        Some("disk 100% full: /a&<b>'\".pt, retry\nthen \"clean\" <up> & go")
    );
    assert!(failure
        .text()
        .unwrap()
        .contains("nasty checkpoint /a&<b>'\".pt failed"));
}

#[test]
fn markdown_summaries() {
    for rel in [KILL, "logs/oom_simple.log"] {
        let out = run(&["analyze", "--format", "markdown", &fixture(rel)], None);
        assert_eq!(out.status.code(), Some(1));
        let name = rel.rsplit('/').next().unwrap().replace('.', "_");
        insta::assert_snapshot!(format!("markdown_{name}"), stdout(&out));
    }
    let out = run(
        &[
            "analyze",
            "--format",
            "markdown",
            &fixture("logs/nccl_info.log"),
        ],
        None,
    );
    assert!(stdout(&out).starts_with("## coroner: no root cause found (`unknown`)"));
}

#[test]
fn quiet_prints_only_the_verdict() {
    for format in ["human", "json", "sarif", "github", "markdown", "junit"] {
        let out = run(
            &["analyze", "--quiet", "--format", format, &fixture(KILL)],
            None,
        );
        assert_eq!(out.status.code(), Some(1));
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{format}: {text}");
        assert!(
            text.starts_with("coroner: root cause host-oom (rank 1) \u{2014} torchrun: rank 1 (local_rank 1, pid 2038, host localhost) failed first, killed by SIGKILL"),
            "{text}"
        );
    }
    let out = run(&["analyze", "-q", &fixture("logs/nccl_info.log")], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "coroner: no root cause found (unknown)\n");
}

fn rules_of(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn ignore_drops_rules_and_the_root_cause_is_chosen_again() {
    let kill = fixture(KILL);
    let (report, code) = analyze_json(&[
        "--ignore",
        "torchrun-worker-sigkill",
        "--ignore",
        "torchrun-root-cause-sigkill",
        &kill,
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        rules_of(&report),
        [
            "peer-connection-closed",
            "torchrun-child-failed",
            "torchrun-sigterm-teardown"
        ]
    );
    let root = &report["root_cause"];
    assert_eq!(root["category"], "nccl-network");
    assert_eq!(root["rank"], 0);
    assert!(root["summary"]
        .as_str()
        .unwrap()
        .contains("consequence of a failure elsewhere"));

    let (report, code) = analyze_json(&[
        "--ignore",
        "torchrun-worker-sigkill",
        "--ignore",
        "torchrun-root-cause-sigkill",
        "--ignore",
        "peer-connection-closed",
        &kill,
    ]);
    assert_eq!(code, 0, "--fail-on applies after filtering");
    assert_eq!(report["root_cause"]["category"], "unknown");
    assert_eq!(report["findings"].as_array().unwrap().len(), 2);
}

/// torchrun_kill.log as another run of the same failure would print it:
/// other pids, ports, times and ranks, and the lines moved down.
fn shifted_copy(original: &str) -> String {
    let mut text = String::new();
    for step in 0..7 {
        text.push_str(&format!("step {step} loss 2.{step}\n"));
    }
    text.push_str(
        &original
            .replace("2038", "51873")
            .replace("2037", "51872")
            .replace("2012", "51860")
            .replace("15:17:2", "03:41:5")
            .replace("W1129", "W0302")
            .replace("E1129", "E0302")
            .replace(":6311", ":29500")
            .replace("[rank0]", "[rank2]"),
    );
    text
}

#[test]
fn a_baseline_suppresses_the_same_failure_but_not_a_new_one() {
    let dir = Scratch::new("baseline");
    let kill = fixture(KILL);
    let base = dir.display("baseline.json");
    let out = run(&["baseline", "create", &kill, "-o", &base], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(doc["version"], 1);
    let entries = doc["fingerprints"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    for e in entries {
        assert_eq!(e["fingerprint"].as_str().unwrap().len(), 16);
        assert!(e["example"].as_str().is_some());
    }

    // The same log: everything is left out, nothing fails.
    let (report, code) = analyze_json(&["--baseline", &base, &kill]);
    assert_eq!(code, 0);
    assert_eq!(report["root_cause"]["category"], "unknown");
    assert!(rules_of(&report).is_empty());

    // The same failure in another run: still left out.
    let original = std::fs::read_to_string(root().join(&kill)).unwrap();
    let copy = shifted_copy(&original);
    std::fs::write(dir.path("run2.log"), &copy).unwrap();
    let (unfiltered, _) = analyze_json(&[&dir.display("run2.log")]);
    assert_eq!(unfiltered["findings"].as_array().unwrap().len(), 4);
    assert_eq!(unfiltered["findings"][0]["first_seen"]["line"], 24);
    let (report, code) = analyze_json(&["--baseline", &base, &dir.display("run2.log")]);
    assert_eq!(code, 0);
    assert!(rules_of(&report).is_empty(), "{report}");

    // A new failure in it is reported, and becomes the root cause.
    let oom = std::fs::read_to_string(root().join(fixture("logs/oom_simple.log"))).unwrap();
    let oom_line = oom
        .lines()
        .find(|l| l.contains("CUDA out of memory"))
        .unwrap();
    std::fs::write(dir.path("run3.log"), format!("{copy}{oom_line}\n")).unwrap();
    let (report, code) = analyze_json(&["--baseline", &base, &dir.display("run3.log")]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let rules = rules_of(&report);
    assert!(!rules.is_empty());
    assert!(rules
        .iter()
        .all(|r| !r.starts_with("torchrun") && r != "peer-connection-closed"));

    // Without the baseline everything is back.
    let (report, _) = analyze_json(&[&dir.display("run3.log")]);
    assert_eq!(report["root_cause"]["category"], "host-oom");
}

#[test]
fn a_bad_baseline_is_a_tool_error() {
    let dir = Scratch::new("bad-baseline");
    std::fs::write(dir.path("b.json"), "{\"version\": 9, \"fingerprints\": []}").unwrap();
    let out = run(
        &[
            "analyze",
            "--baseline",
            &dir.display("b.json"),
            &fixture(KILL),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("b.json"), "{}", stderr(&out));
    assert!(stderr(&out).contains("version 9"), "{}", stderr(&out));
}

#[test]
fn baseline_create_writes_to_stdout_by_default() {
    let out = run(&["baseline", "create", "-"], Some(b"nothing to see\n"));
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc, serde_json::json!({"version": 1, "fingerprints": []}));
}

/// A repository in a scratch directory: `.git`, a coroner.toml, a rule
/// directory and a subdirectory to run from.
fn scratch_repo(name: &str, config: &str) -> Scratch {
    let dir = Scratch::new(name);
    std::fs::create_dir_all(dir.path(".git")).unwrap();
    std::fs::create_dir_all(dir.path("jobs/run1")).unwrap();
    std::fs::write(dir.path("coroner.toml"), config).unwrap();
    dir
}

#[test]
fn coroner_toml_is_discovered_and_overridden() {
    let dir = scratch_repo(
        "config",
        "ignore = [\"torchrun-worker-sigkill\", \"torchrun-root-cause-sigkill\", \"peer-connection-closed\"]\nfail_on = \"warning\"\nrules = [\"ci/rules\"]\n",
    );
    std::fs::create_dir_all(dir.path("ci/rules")).unwrap();
    std::fs::write(dir.path("ci/rules/nasty-checkpoint.toml"), NASTY_RULE).unwrap();
    let kill = root().join(fixture(KILL)).to_string_lossy().into_owned();
    let cwd = dir.path("jobs/run1");
    let json = |args: &[&str]| {
        let mut all = vec!["analyze", "--format", "json"];
        all.extend_from_slice(args);
        let out = run_in(&cwd, &all);
        let report: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        (report, out.status.code().unwrap_or(-1))
    };

    // From a subdirectory: the file two levels up applies.
    let (report, code) = json(&[&kill]);
    assert_eq!(
        rules_of(&report),
        ["torchrun-child-failed", "torchrun-sigterm-teardown"]
    );
    assert_eq!(code, 1, "fail_on = warning");

    // Flags win: --fail-on, --ignore replaces the file's list.
    let (_, code) = json(&["--fail-on", "error", &kill]);
    assert_eq!(code, 0);
    let (report, _) = json(&["--ignore", "torchrun-child-failed", &kill]);
    assert_eq!(rules_of(&report).len(), 3);
    assert_eq!(report["root_cause"]["category"], "host-oom");

    // --no-config: nothing from the file.
    let (report, code) = json(&["--no-config", &kill]);
    assert_eq!(rules_of(&report).len(), 4);
    assert_eq!(code, 1);

    // `rules` are relative to the file.
    std::fs::write(cwd.join("ck.log"), "nasty checkpoint /x.pt failed\n").unwrap();
    let (report, _) = json(&["ck.log"]);
    assert_eq!(report["root_cause"]["rule"], "nasty-checkpoint");

    // A baseline named in the file, relative to it.
    let out = run_in(
        &dir.0,
        &[
            "baseline",
            "create",
            "jobs/run1/ck.log",
            "-o",
            "ci/base.json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(
        dir.path("coroner.toml"),
        "rules = [\"ci/rules\"]\nbaseline = \"ci/base.json\"\n",
    )
    .unwrap();
    let (report, code) = json(&["ck.log"]);
    assert!(rules_of(&report).is_empty(), "{report}");
    assert_eq!(code, 0);
    let (report, code) = json(&["--no-baseline", "ck.log"]);
    assert_eq!(rules_of(&report), ["nasty-checkpoint"]);
    assert_eq!(code, 1);
}

#[test]
fn pyproject_tool_coroner_is_read_when_there_is_no_coroner_toml() {
    let dir = Scratch::new("pyproject");
    std::fs::create_dir_all(dir.path(".git")).unwrap();
    std::fs::create_dir_all(dir.path("jobs")).unwrap();
    // Another tool's pyproject.toml on the way up is passed over.
    std::fs::write(
        dir.path("jobs/pyproject.toml"),
        "[tool.ruff]\nline-length = 100\n",
    )
    .unwrap();
    std::fs::write(
        dir.path("pyproject.toml"),
        "[project]\nname = \"trainer\"\n\n[tool.coroner]\nignore = [\"peer-connection-closed\"]\nfail_on = \"critical\"\n",
    )
    .unwrap();
    let kill = root().join(fixture(KILL)).to_string_lossy().into_owned();
    let out = run_in(&dir.path("jobs"), &["analyze", "--format", "json", &kill]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!rules_of(&report).contains(&"peer-connection-closed".to_owned()));
    assert_eq!(out.status.code(), Some(1), "the SIGKILL is critical");
    let oom = root()
        .join(fixture("logs/oom_simple.log"))
        .to_string_lossy()
        .into_owned();
    let out = run_in(&dir.path("jobs"), &["analyze", "--format", "json", &oom]);
    assert_eq!(out.status.code(), Some(0), "an error is below fail_on");
    let out = run_in(
        &dir.path("jobs"),
        &["analyze", "--format", "json", "--fail-on", "error", &oom],
    );
    assert_eq!(out.status.code(), Some(1));
    // A coroner.toml beside it wins.
    std::fs::write(dir.path("coroner.toml"), "ignore = []\n").unwrap();
    let out = run_in(&dir.path("jobs"), &["analyze", "--format", "json", &kill]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rules_of(&report).contains(&"peer-connection-closed".to_owned()));
    // Named with --config, a pyproject.toml without the table is an error.
    let out = run_in(
        &dir.0,
        &[
            "analyze",
            "--config",
            "jobs/pyproject.toml",
            "--format",
            "json",
            &kill,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("[tool.coroner]"), "{}", stderr(&out));
}

#[test]
fn discovery_stops_at_the_repository_root() {
    let outer = scratch_repo("config-outer", "fail_on = \"info\"\n");
    let inner = outer.path("inner");
    std::fs::create_dir_all(inner.join(".git")).unwrap();
    let healthy = root()
        .join(fixture("logs/nccl_info.log"))
        .to_string_lossy()
        .into_owned();
    let out = run_in(&inner, &["analyze", "--format", "json", &healthy]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the outer coroner.toml is not used"
    );
    let out = run_in(&outer.0, &["analyze", "--format", "json", &healthy]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = if report["findings"].as_array().unwrap().is_empty() {
        0
    } else {
        1
    };
    assert_eq!(out.status.code(), Some(expected));
}

#[test]
fn a_malformed_coroner_toml_is_a_tool_error_naming_the_file() {
    for (config, says) in [
        ("fail_on = \"fatal\"\n", "fatal"),
        ("ignore = \"x\"\n", "array"),
        ("colour = true\n", "colour"),
        ("rules = [\n", "coroner.toml"),
    ] {
        let dir = scratch_repo("bad-config", config);
        let out = run_in(&dir.0, &["analyze", "--format", "json", "-"]);
        assert_eq!(out.status.code(), Some(2), "{config}");
        let err = stderr(&out);
        assert!(err.contains("coroner.toml"), "{err}");
        assert!(err.contains(says), "{err}");
        let out = run_in(&dir.0, &["analyze", "--no-config", "-q", "-"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
}
