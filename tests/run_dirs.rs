//! A run directory holds the job's code, configs and notes next to its
//! logs: only the logs are evidence. `--include`, `--exclude` and
//! `.coronerignore` decide the rest; a file named explicitly is always read.

use crate::util::{analyze_json, fixture, root, run, Scratch};
use serde_json::Value;

const TRAIN_PY: &str = r#""""Train the model.

If this fails with "CUDA out of memory", lower --batch-size.
"""
import argparse

import torch


def step(model, batch):
    try:
        return model(batch.cuda())
    except torch.OutOfMemoryError:
        # torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
        raise
    except RuntimeError as e:
        if "an illegal memory access was encountered" in str(e):
            print("RuntimeError: CUDA error: an illegal memory access was encountered")
        raise


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
"#;

const README_MD: &str = "# Run 42\n\nThe last attempt died with:\n\n```\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.06 GiB is free.\nRuntimeError: CUDA error: an illegal memory access was encountered\n```\n";

const CONFIG_YAML: &str = "model:\n  layers: 48\n# torch.OutOfMemoryError: CUDA out of memory above batch 64\n# RuntimeError: CUDA error: an illegal memory access was encountered with fp8\nbatch_size: 64\n";

const NOTEBOOK: &str = r#"{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 3,
   "outputs": [
    {
     "name": "stderr",
     "output_type": "stream",
     "text": [
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
     ]
    }
   ],
   "source": ["model(x)"]
  }
 ],
 "metadata": {"kernelspec": {"name": "python3"}},
 "nbformat": 4
}
"#;

/// `run-42/` in a scratch directory: a healthy NCCL log and the job's
/// script, readme, config and notebook, all of which quote failures.
fn run_dir(name: &str) -> Scratch {
    let dir = Scratch::new(name);
    std::fs::create_dir_all(dir.path("run-42")).unwrap();
    copy_fixture(&dir, "logs/nccl_info.log", "run-42/nccl_info.log");
    for (file, text) in [
        ("train.py", TRAIN_PY),
        ("README.md", README_MD),
        ("config.yaml", CONFIG_YAML),
        ("eval.ipynb", NOTEBOOK),
    ] {
        std::fs::write(dir.path(&format!("run-42/{file}")), text).unwrap();
    }
    dir
}

fn copy_fixture(dir: &Scratch, from: &str, to: &str) {
    std::fs::copy(root().join(fixture(from)), dir.path(to)).unwrap();
}

/// The entry of the walked directory, which notes what was passed over.
fn directory_entry(report: &Value) -> Value {
    report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "directory")
        .cloned()
        .unwrap_or_else(|| panic!("no directory entry in {}", report["inputs"]))
}

fn notes(report: &Value) -> String {
    let entry = directory_entry(report);
    let notes = entry["notes"].as_array().cloned().unwrap_or_default();
    let texts: Vec<&str> = notes.iter().filter_map(Value::as_str).collect();
    texts.join("\n")
}

fn read_paths(report: &Value) -> Vec<String> {
    report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["lines"].as_u64().is_some_and(|n| n > 0))
        .filter_map(|i| i["path"].as_str())
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
        .collect()
}

#[test]
fn sources_configs_docs_and_notebooks_in_a_run_directory_are_no_evidence() {
    let dir = run_dir("rundir-healthy");
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 0);
    assert!(report["findings"].as_array().unwrap().is_empty());
    assert_eq!(read_paths(&report), ["nccl_info.log"]);
    let entry = directory_entry(&report);
    assert_eq!(entry["path"], dir.display("run-42"));
    assert_eq!(entry["lines"], 0);
    assert!(entry["errors"].as_array().unwrap().is_empty());
    assert_eq!(
        notes(&report),
        "skipped 4 source/config/doc file(s): README.md, config.yaml, eval.ipynb, train.py \
         (name a file, or --include GLOB, to read it)"
    );
    let human = run(
        &["analyze", "--format", "human", &dir.display("run-42")],
        None,
    );
    let text = String::from_utf8_lossy(&human.stdout);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("Read 1 of 1 input(s)"), "{text}");
    assert!(
        words.contains(
            "run-42: skipped 4 source/config/doc file(s): README.md, config.yaml, eval.ipynb, train.py"
        ),
        "{text}"
    );
    assert_eq!(human.status.code(), Some(0));
}

#[test]
fn a_failing_log_beside_the_sources_is_the_root_cause() {
    let dir = run_dir("rundir-failing");
    copy_fixture(&dir, "logs/oom_simple.log", "run-42/oom_simple.log");
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    assert_eq!(code, 1);
    assert_eq!(read_paths(&report), ["nccl_info.log", "oom_simple.log"]);
    let evidence = &report["root_cause"]["evidence"][0]["input"];
    assert!(
        evidence.as_str().unwrap().ends_with("oom_simple.log"),
        "{evidence}"
    );
    assert!(notes(&report).starts_with("skipped 4 source/config/doc file(s)"));
}

#[test]
fn a_source_file_named_explicitly_is_read() {
    let dir = run_dir("rundir-explicit");
    let (report, code) = analyze_json(&[&dir.display("run-42/train.py")]);
    assert_ne!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 1);
    assert_eq!(report["inputs"][0]["path"], dir.display("run-42/train.py"));
    assert!(report["inputs"][0]["lines"].as_u64().unwrap() > 10);
    // Named beside its directory, it is read too.
    let (report, code) = analyze_json(&[&dir.display("run-42"), &dir.display("run-42/README.md")]);
    assert_eq!(code, 1);
    assert_eq!(read_paths(&report), ["nccl_info.log", "README.md"]);
}

#[test]
fn include_reads_what_the_name_and_content_check_would_skip() {
    let dir = run_dir("rundir-include");
    let (report, code) = analyze_json(&["--include", "train.py", &dir.display("run-42")]);
    assert_ne!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 1);
    assert_eq!(read_paths(&report), ["nccl_info.log", "train.py"]);
    assert!(
        notes(&report)
            .starts_with("skipped 3 source/config/doc file(s): README.md, config.yaml, eval.ipynb"),
        "{}",
        notes(&report)
    );
    // --exclude wins over --include.
    let (report, code) = analyze_json(&[
        "--include",
        "*.py",
        "--exclude",
        "train.py",
        &dir.display("run-42"),
    ]);
    assert_eq!(report["root_cause"]["category"], "unknown");
    assert_eq!(code, 0);
    assert!(notes(&report).contains("left out 1 path(s) matching --exclude: train.py"));
}

#[test]
fn exclude_leaves_out_files_and_directories() {
    let dir = run_dir("rundir-exclude");
    std::fs::create_dir_all(dir.path("run-42/old")).unwrap();
    copy_fixture(&dir, "logs/oom_simple.log", "run-42/old/oom_simple.log");
    copy_fixture(&dir, "logs/illegal_address.log", "run-42/illegal.log");
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(code, 1);
    assert_eq!(
        read_paths(&report),
        ["illegal.log", "nccl_info.log", "oom_simple.log"]
    );
    let (report, code) = analyze_json(&[
        "--exclude",
        "old/",
        "--exclude",
        "illegal*",
        &dir.display("run-42"),
    ]);
    assert_eq!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 0);
    assert_eq!(read_paths(&report), ["nccl_info.log"]);
    assert!(
        notes(&report).contains("left out 2 path(s) matching --exclude: illegal.log, old/"),
        "{}",
        notes(&report)
    );
}

#[test]
fn coronerignore_leaves_out_what_it_names_and_reads_what_it_negates() {
    let dir = run_dir("rundir-ignore");
    std::fs::create_dir_all(dir.path("run-42/ckpt")).unwrap();
    copy_fixture(&dir, "logs/oom_simple.log", "run-42/ckpt/oom_simple.log");
    copy_fixture(&dir, "logs/illegal_address.log", "run-42/illegal.log");
    std::fs::write(
        dir.path("run-42/.coronerignore"),
        "# checkpoints and old attempts\nckpt/\nillegal.log\n",
    )
    .unwrap();
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 0);
    assert!(
        notes(&report).contains("left out 2 path(s) matching .coronerignore: ckpt/, illegal.log"),
        "{}",
        notes(&report)
    );
    // The command line beats the file.
    let (report, code) = analyze_json(&["--include", "illegal.log", &dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "illegal-memory-access");
    assert_eq!(code, 1);
    // `!pattern` reads a file the name check would skip; a nested file
    // overrides the outer one for its directory.
    std::fs::write(
        dir.path("run-42/.coronerignore"),
        "illegal.log\n!train.py\n",
    )
    .unwrap();
    std::fs::write(dir.path("run-42/ckpt/.coronerignore"), "*.log\n").unwrap();
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(read_paths(&report), ["nccl_info.log", "train.py"]);
    assert!(
        notes(&report).contains("matching .coronerignore: ckpt/oom_simple.log, illegal.log"),
        "{}",
        notes(&report)
    );
}

#[test]
fn a_txt_log_is_read_and_a_log_holding_python_is_skipped() {
    let dir = run_dir("rundir-content");
    copy_fixture(&dir, "logs/oom_simple.log", "run-42/stdout.txt");
    std::fs::write(dir.path("run-42/helper.log"), TRAIN_PY).unwrap();
    std::fs::write(
        dir.path("run-42/launch"),
        "#!/bin/bash\n# CUDA out of memory? lower the batch\ntorchrun train.py\n",
    )
    .unwrap();
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    assert_eq!(code, 1);
    assert_eq!(read_paths(&report), ["nccl_info.log", "stdout.txt"]);
    assert!(
        notes(&report).starts_with(
            "skipped 6 source/config/doc file(s): README.md, config.yaml, eval.ipynb, helper.log, launch and 1 more"
        ),
        "{}",
        notes(&report)
    );
}

#[test]
fn a_large_directory_is_classified_by_content_in_walk_order() {
    // Past a few dozen files the content checks run on every core; what
    // is read and what is skipped, and in which order, stays the walk's.
    let dir = run_dir("rundir-many");
    for i in 0..150 {
        let text = if i % 50 == 7 {
            TRAIN_PY.to_owned()
        } else {
            format!("step {i} | loss 1.{i:03}\n")
        };
        std::fs::write(dir.path(&format!("run-42/rank{i:03}.log")), text).unwrap();
    }
    let (report, _) = analyze_json(&[&dir.display("run-42")]);
    let read = read_paths(&report);
    assert_eq!(read.len(), 150 - 3 + 1, "{read:?}");
    assert_eq!(read.first().map(String::as_str), Some("nccl_info.log"));
    assert!(read.windows(2).all(|w| w[0] < w[1]), "{read:?}");
    assert!(!read
        .iter()
        .any(|p| p == "rank007.log" || p == "rank057.log" || p == "rank107.log"));
    // The run directory's own README, config and notebook come first by
    // name, then the logs holding Python, in walk order.
    assert!(
        notes(&report).starts_with(
            "skipped 7 source/config/doc file(s): README.md, config.yaml, eval.ipynb, rank007.log, rank057.log and 2 more"
        ),
        "{}",
        notes(&report)
    );
}

#[test]
fn json_evidence_is_read_and_json_configs_are_skipped() {
    let dir = run_dir("rundir-json");
    std::fs::write(
        dir.path("run-42/ds_config.json"),
        "{\n  \"train_batch_size\": 64,\n  \"comment\": \"torch.OutOfMemoryError: CUDA out of memory above 64\"\n}\n",
    )
    .unwrap();
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 0);
    assert!(notes(&report).starts_with("skipped 5 source/config/doc file(s)"));
    // torchelastic's error file (`@record`) is what the rank died of.
    std::fs::write(
        dir.path("run-42/error.json"),
        r#"{"message": {"message": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.06 GiB is free.", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 9, in step\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.06 GiB is free.\n", "timestamp": "1764433010"}}}
"#,
    )
    .unwrap();
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(report["root_cause"]["category"], "gpu-oom", "{report}");
    assert_eq!(code, 1);
    assert_eq!(read_paths(&report), ["error.json", "nccl_info.log"]);
}

#[test]
fn a_bad_glob_is_a_tool_error_and_a_bad_coronerignore_a_warning() {
    let dir = run_dir("rundir-bad-glob");
    let out = run(
        &[
            "analyze",
            "--format",
            "json",
            "--exclude",
            "log{a,b",
            &dir.display("run-42"),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid glob `log{a,b`"), "{stderr}");
    copy_fixture(&dir, "logs/oom_simple.log", "run-42/oom_simple.log");
    std::fs::write(
        dir.path("run-42/.coronerignore"),
        "log{a,b\nnccl_info.log\n",
    )
    .unwrap();
    let out = run(
        &["analyze", "--format", "json", &dir.display("run-42")],
        None,
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The lines that could be read still apply.
    assert_eq!(read_paths(&report), ["oom_simple.log"]);
    assert_eq!(out.status.code(), Some(1));
    let error = directory_entry(&report)["errors"][0]["message"].clone();
    assert!(
        error.as_str().unwrap().contains(".coronerignore"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("coroner: warning:"), "{stderr}");
}
