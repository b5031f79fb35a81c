//! The knowledge tables: generated rules are current, every code is
//! explained and recognised, every category has rules.

use crate::util::run;
use coroner_analyze::examples::findings_in_text;
use coroner_knowledge::{generated_rules, Answer, EntryKind, Knowledge};
use coroner_model::{Category, Severity};
use coroner_rules::{RuleSet, RuleSources};
use std::path::Path;

const GENERATED_DIRS: [&str; 2] = ["rules/cuda-codes/", "rules/xid/"];

fn knowledge() -> Knowledge {
    Knowledge::builtin().unwrap_or_else(|e| panic!("tables invalid: {e}"))
}

fn builtin_rules() -> RuleSet {
    RuleSet::load(&RuleSources {
        builtin: true,
        dirs: Vec::new(),
        builtin_names: false,
    })
    .unwrap_or_else(|e| panic!("{e:?}"))
}

fn hand_written_rules() -> RuleSet {
    let all = builtin_rules();
    let hand = all
        .rules()
        .iter()
        .filter(|r| !GENERATED_DIRS.iter().any(|d| r.source.starts_with(d)))
        .cloned()
        .collect();
    RuleSet::new(hand).unwrap_or_else(|e| panic!("{e:?}"))
}

/// Rewrites the generated rule files with UPDATE_GENERATED=1; otherwise
/// fails when they differ from what the tables produce.
#[test]
fn generated_rules_are_current() {
    let hand = hand_written_rules();
    let recognised = |line: &str| {
        findings_in_text(&hand, line)
            .iter()
            .any(|f| hand.get(&f.rule).is_some_and(|r| !r.fallback))
    };
    let generated = generated_rules(&knowledge(), &recognised);
    let root = crate::util::root();
    let update = std::env::var_os("UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for dir in GENERATED_DIRS {
        for entry in std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let rel = format!("{dir}{}", entry.file_name().to_string_lossy());
            if !generated.iter().any(|g| g.path == rel) {
                if update {
                    std::fs::remove_file(entry.path()).unwrap();
                } else {
                    stale.push(format!("{rel} is no longer generated"));
                }
            }
        }
    }
    for rule in &generated {
        let path = root.join(&rule.path);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != rule.text {
            if update {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &rule.text).unwrap();
            } else {
                stale.push(format!("{} differs from the tables", rule.path));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nregenerate with: UPDATE_GENERATED=1 cargo test --test tests generated",
        stale.join("\n")
    );
}

#[test]
fn every_cuda_code_is_explained_by_number_and_name() {
    let k = knowledge();
    let table = std::fs::read_to_string(crate::util::root().join("knowledge/cuda_error_table.tsv"))
        .unwrap();
    let mut rows = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let (code, name, message) = (fields[1], fields[2], fields[3]);
        rows += 1;
        for query in [code, name, message] {
            match k.explain(query, &[]) {
                Answer::Found(entries) => assert!(
                    entries.iter().any(
                        |e| e.kind == EntryKind::CudaError && e.names.iter().any(|n| n == name)
                    ),
                    "{query}: {entries:?}"
                ),
                Answer::NotFound { .. } => panic!("`coroner explain {query}` finds nothing"),
            }
        }
    }
    assert!(rows > 200, "{rows} rows");
}

#[test]
fn every_cuda_error_code_is_recognised_in_a_log_with_its_category() {
    let k = knowledge();
    let rules = builtin_rules();
    let mut wrong = Vec::new();
    for e in k
        .of_kind(EntryKind::CudaError)
        .filter(|e| e.severity > Severity::Info)
    {
        let message = e.message.clone().unwrap_or_default();
        let mut lines: Vec<String> = e
            .names
            .iter()
            .map(|n| format!("kernel: {n}: {message}"))
            .collect();
        // A message a lower code of another category shares is read as
        // that code (CUDA's `device kernel image is invalid` is 200 and 300).
        let shared = k.of_kind(EntryKind::CudaError).any(|other| {
            other.message == e.message && other.code < e.code && other.category != e.category
        });
        if !shared {
            lines.push(format!("RuntimeError: CUDA error: {message}"));
        }
        lines.push(format!(
            "CUDA error {} at train.cu:42",
            e.code.unwrap_or_default()
        ));
        // TensorRT names the code of a failed CUDA initialisation.
        lines.push(format!(
            "[11/05/2023-16:18:50] [W] [TRT] CUDA initialization failure with error: {}. Please check your CUDA installation",
            e.code.unwrap_or_default()
        ));
        // A message marked distinctive is read in a program's own words.
        if e.distinctive && !shared {
            lines.push(format!("GPUassert: {message} main.cu 41"));
        }
        for line in lines {
            let findings = findings_in_text(&rules, &line);
            let causes: Vec<Category> = findings
                .iter()
                .filter(|f| f.severity >= Severity::Warning)
                .map(|f| f.category)
                .collect();
            if !causes.contains(&e.category) {
                wrong.push(format!(
                    "{line:?}: table says {}, rules say {causes:?}",
                    e.category
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} lines:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_category_has_rules() {
    let rules = builtin_rules();
    let missing: Vec<&str> = Category::ALL
        .iter()
        .filter(|c| **c != Category::Unknown)
        .filter(|c| !rules.rules().iter().any(|r| r.category == **c))
        .map(|c| c.as_str())
        .collect();
    assert!(missing.is_empty(), "no rule for {missing:?}");
    assert!(rules.rules().len() >= 100, "{} rules", rules.rules().len());
}

#[test]
fn explain_answers_every_kind_of_question() {
    let cases: [(&[&str], &str); 9] = [
        (&["700"], "cudaErrorIllegalAddress"),
        (&["CUDA_ERROR_ILLEGAL_ADDRESS"], "cudaErrorIllegalAddress"),
        (&["cudaErrorIllegalAddress"], "CUDA_ERROR_ILLEGAL_ADDRESS"),
        (
            &["an illegal memory access was encountered"],
            "cudaErrorIllegalAddress",
        ),
        (
            &["RuntimeError: CUDA error: an illegal memory access was encountered"],
            "cudaErrorIllegalAddress",
        ),
        (&["xid", "79"], "Xid 79"),
        (&["ncclSystemError"], "ncclSystemError"),
        (
            &["CUBLAS_STATUS_NOT_INITIALIZED"],
            "CUBLAS_STATUS_NOT_INITIALIZED",
        ),
        (&["torch-cuda-out-of-memory"], "torch-cuda-out-of-memory"),
    ];
    for (args, name) in cases {
        let mut all = vec!["explain", "--format", "json"];
        all.extend_from_slice(args);
        let out = run(&all, None);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["found"], true);
        let entries = answer["entries"].as_array().unwrap();
        assert!(
            entries
                .iter()
                .any(|e| e["names"].as_array().unwrap().iter().any(|n| n == name)),
            "{args:?}: {answer}"
        );
    }
    let out = run(&["explain", "--format", "json", "700"], None);
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &answer["entries"][0];
    assert_eq!(e["code"], 700);
    assert_eq!(e["runtime_name"], "cudaErrorIllegalAddress");
    assert_eq!(e["driver_name"], "CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_eq!(e["message"], "an illegal memory access was encountered");
    assert_eq!(e["category"], "illegal-memory-access");
    assert_eq!(e["sticky"], true);
    assert!(!e["fixes"].as_array().unwrap().is_empty());
}

#[test]
fn explain_an_unknown_thing_suggests_and_fails() {
    let out = run(&["explain", "cudaErrorIllegalAdress"], None);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Closest: cudaErrorIllegalAddress"), "{text}");
    let out = run(&["explain", "--format", "json", "nonsense-thing"], None);
    assert_eq!(out.status.code(), Some(2));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["found"], false);
}

#[test]
fn the_xid_table_has_the_codes_seen_in_practice_with_sources() {
    let k = knowledge();
    let wanted = [
        8, 13, 31, 32, 38, 43, 45, 48, 56, 57, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109,
        119, 120, 121, 123, 136, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154,
    ];
    for code in wanted {
        let e = k
            .of_kind(EntryKind::Xid)
            .find(|e| e.code == Some(code))
            .unwrap_or_else(|| panic!("no Xid {code}"));
        assert!(
            e.source.as_deref().is_some_and(|s| s.starts_with("http")),
            "Xid {code}"
        );
        assert!(!e.fixes.is_empty() && !e.summary.is_empty(), "Xid {code}");
    }
    assert!(Path::new(&crate::util::root().join("knowledge/xid.toml")).exists());
}
