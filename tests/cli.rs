//! The command-line contract: inputs, formats, exit codes, rule options.

use crate::util::{analyze_json, fixture, root, run, Scratch};
use std::io::Write;

fn fixture_bytes(rel: &str) -> Vec<u8> {
    std::fs::read(root().join(fixture(rel))).unwrap()
}

#[test]
fn stdin_is_read_with_dash_and_without_paths() {
    let log = fixture_bytes("logs/oom_simple.log");
    for args in [
        &["analyze", "--format", "json", "-"][..],
        &["analyze", "--format", "json"][..],
    ] {
        let out = run(args, Some(&log));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["root_cause"]["category"], "gpu-oom", "{args:?}");
        assert_eq!(report["inputs"][0]["path"], "-");
        assert_eq!(out.status.code(), Some(1));
    }
}

#[test]
fn compressed_inputs_are_detected_by_magic_bytes() {
    let log = fixture_bytes("logs/torchrun_segv.log");
    let dir = Scratch::new("compressed");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&log).unwrap();
    std::fs::write(dir.path("a.log.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(dir.path("b.data"), zstd::encode_all(&log[..], 3).unwrap()).unwrap();
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(&log).unwrap();
    std::fs::write(dir.path("c"), xz.finish().unwrap()).unwrap();
    for (name, compression) in [("a.log.gz", "gzip"), ("b.data", "zstd"), ("c", "xz")] {
        let (report, code) = analyze_json(&[&dir.display(name)]);
        assert_eq!(report["inputs"][0]["compression"], compression);
        assert_eq!(report["inputs"][0]["bytes"], log.len() as u64, "{name}");
        assert_eq!(report["root_cause"]["category"], "segfault", "{name}");
        assert_eq!(code, 1);
    }
    let zst = zstd::encode_all(&log[..], 3).unwrap();
    let out = run(&["analyze", "--format", "json", "-"], Some(&zst));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["root_cause"]["category"], "segfault");
}

#[test]
fn a_truncated_compressed_input_reports_where_it_broke_and_keeps_its_findings() {
    let mut log = fixture_bytes("logs/oom_simple.log");
    for step in 0..40_000u64 {
        let noise = step.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
        log.extend_from_slice(format!("step {step} loss {noise} lr 3e-4\n").as_bytes());
    }
    let zst = zstd::encode_all(&log[..], 3).unwrap();
    let dir = Scratch::new("truncated");
    std::fs::write(dir.path("cut.zst"), &zst[..zst.len() - 20]).unwrap();
    let (report, code) = analyze_json(&[&dir.display("cut.zst")]);
    // Analysed up to the break: the findings decide the exit status.
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let err = &report["inputs"][0]["errors"][0];
    assert!(err["offset"].as_u64().is_some(), "{err}");
}

#[test]
fn exit_codes_follow_fail_on() {
    let oom = fixture("logs/oom_simple.log");
    let healthy = fixture("logs/nccl_info.log");
    let code = |args: &[&str]| run(args, None).status.code();
    assert_eq!(code(&["analyze", "--format", "json", &oom]), Some(1));
    assert_eq!(code(&["analyze", "--format", "json", &healthy]), Some(0));
    assert_eq!(
        code(&["analyze", "--format", "json", "--fail-on", "critical", &oom]),
        Some(0)
    );
    assert_eq!(
        code(&["analyze", "--format", "json", "--fail-on", "error", &oom]),
        Some(1)
    );
    assert_eq!(code(&["analyze", "--fail-on", "fatal", &oom]), Some(2));
}

#[test]
fn an_unreadable_input_is_an_error_but_the_others_are_analysed() {
    let (report, code) = analyze_json(&["does/not/exist.log", &fixture("logs/oom_simple.log")]);
    // The other input was analysed: its finding decides the exit status.
    assert_eq!(code, 1);
    let (_, code) = analyze_json(&["does/not/exist.log", &fixture("logs/nccl_info.log")]);
    assert_eq!(code, 0);
    let (_, code) = analyze_json(&["does/not/exist.log", "nor/this.log"]);
    assert_eq!(code, 2, "nothing could be analysed");
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let missing = &report["inputs"][0];
    assert_eq!(missing["path"], "does/not/exist.log");
    assert_eq!(missing["kind"], "unreadable");
    assert!(missing["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("cannot read"));
}

#[test]
fn terminal_noise_and_invalid_utf8_do_not_hide_a_failure() {
    let mut log = Vec::new();
    log.extend_from_slice(b"\xff\xfe garbage \xc3\x28\r\n");
    log.extend_from_slice(b"[rank3]: \x1b[1;31mtorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\x1b[0m\r\n");
    let out = run(&["analyze", "--format", "json", "-"], Some(&log));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    assert_eq!(report["root_cause"]["rank"], 3);
    let evidence = report["root_cause"]["evidence"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        evidence.starts_with("[rank3]: torch.OutOfMemoryError"),
        "{evidence}"
    );
    assert!(!evidence.contains('\u{1b}') && !evidence.ends_with('\r'));
}

#[test]
fn a_huge_line_is_truncated_not_fatal() {
    let mut log = vec![b'a'; 3 << 20];
    log.extend_from_slice(
        b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n",
    );
    let out = run(&["analyze", "--format", "json", "-"], Some(&log));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["inputs"][0]["lines"], 2);
    assert!(report["inputs"][0]["notes"][0]
        .as_str()
        .unwrap()
        .contains("truncated"));
    assert_eq!(report["root_cause"]["category"], "illegal-memory-access");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut cmd = crate::util::coroner();
    let mut child = cmd
        .args([
            "analyze",
            "--format",
            "json",
            &fixture("logs/assert_index.log"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn nothing_to_read_from_a_terminal_or_a_missing_argument_is_a_usage_error() {
    let out = run(&["analyze", "--format", "unknown-format"], None);
    assert_eq!(out.status.code(), Some(2));
}

const BAD_CATEGORY: &str = r#"id = "bad-one"
title = "x"
category = "not-a-category"
severity = "error"
message = "x"
[match]
literals = ["x"]
any = ['x']
[[examples]]
fires = true
input = "x"
[[examples]]
fires = false
input = "y"
"#;

#[test]
fn a_bad_rule_file_is_a_tool_error_pointing_at_the_key() {
    let dir = Scratch::new("badrule");
    std::fs::write(dir.path("bad-one.toml"), BAD_CATEGORY).unwrap();
    for args in [
        vec![
            "analyze",
            "--rules",
            &dir.0.to_str().unwrap(),
            &fixture("logs/oom_simple.log"),
        ],
        vec!["rules", "validate", dir.0.to_str().unwrap()],
    ] {
        let out = run(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bad-one.toml"), "{err}");
        assert!(err.contains("unknown category `not-a-"), "{err}");
        assert!(err.contains("3 │ category = \"not-a-category\""), "{err}");
    }
}

#[test]
fn a_user_directory_s_named_patterns_are_read_and_checked() {
    let dir = Scratch::new("userpatterns");
    std::fs::write(
        dir.path("patterns.toml"),
        "[patterns]\nsaving = '''saving checkpoint'''\n",
    )
    .unwrap();
    std::fs::write(
        dir.path("checkpoint-write-failed.toml"),
        USER_RULE.replace("'''saving checkpoint (?P<path>", "'''(?&saving) (?P<path>"),
    )
    .unwrap();
    let d = dir.0.to_str().unwrap();
    let log = b"saving checkpoint /ckpt/step_100.pt failed\n";
    let out = run(
        &["analyze", "--format", "json", "--rules", d, "-"],
        Some(log),
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["root_cause"]["rule"], "checkpoint-write-failed");
    // A name no table defines is an error at the pattern's key.
    std::fs::write(dir.path("patterns.toml"), "[patterns]\nsaved = 'x'\n").unwrap();
    let out = run(&["rules", "validate", d], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such named pattern"), "{err}");
    assert!(err.contains("checkpoint-write-failed.toml"), "{err}");
}

const USER_RULE: &str = r#"id = "checkpoint-write-failed"
title = "The trainer could not write a checkpoint"
category = "disk-full"
severity = "error"
message = "checkpoint {path} could not be written"
remediation = ["Free space on the checkpoint volume."]

[match]
literals = ["checkpoint"]
any = ['''saving checkpoint (?P<path>\S+) failed''']

[[examples]]
fires = true
input = "saving checkpoint /ckpt/step_100.pt failed\n"
captures = { path = "/ckpt/step_100.pt" }

[[examples]]
fires = false
input = "saving checkpoint /ckpt/step_100.pt done\n"
"#;

#[test]
fn user_rules_are_loaded_tested_and_listed() {
    let dir = Scratch::new("userrule");
    std::fs::write(dir.path("checkpoint-write-failed.toml"), USER_RULE).unwrap();
    let d = dir.0.to_str().unwrap();
    let log = b"step 100 loss 1.2\nsaving checkpoint /ckpt/step_100.pt failed\n";
    let out = run(
        &["analyze", "--format", "json", "--rules", d, "-"],
        Some(log),
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["root_cause"]["rule"], "checkpoint-write-failed");
    assert_eq!(
        report["root_cause"]["summary"],
        "checkpoint /ckpt/step_100.pt could not be written."
    );

    let out = run(&["rules", "test", d], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 passed, 0 failed"));

    let out = run(
        &[
            "rules",
            "list",
            "--format",
            "json",
            "--no-builtin-rules",
            "--rules",
            d,
        ],
        None,
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["id"], "checkpoint-write-failed");
    assert_eq!(list[0]["category"], "disk-full");

    std::fs::write(
        dir.path("checkpoint-write-failed.toml"),
        USER_RULE.replace("step_100.pt done", "step_100.pt failed"),
    )
    .unwrap();
    let out = run(&["rules", "test", d], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("should stay quiet but fired"));
}

#[test]
fn rules_list_and_show() {
    let out = run(&["rules", "list", "--format", "json"], None);
    assert_eq!(out.status.code(), Some(0));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for rule in list.as_array().unwrap() {
        for key in ["id", "title", "category", "severity", "source"] {
            assert!(rule[key].is_string(), "{rule}");
        }
        assert!(rule["source"].as_str().unwrap().starts_with("rules/"));
    }
    let out = run(&["rules", "show", "torch-cuda-out-of-memory"], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("id = \"torch-cuda-out-of-memory\""));
    let out = run(&["rules", "show", "cuda-out-of"], None);
    assert_eq!(out.status.code(), Some(2));
    // A typo gets the rule it meant.
    let out = run(&["rules", "show", "torch-cuda-out-of-memroy"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did you mean: torch-cuda-out-of-memory"),
        "{err}"
    );
}

/// A large log crosses many read blocks: the lines between hits are only
/// counted, so line numbers, counts and the failure at the very end are
/// what this checks.
#[test]
fn a_large_log_keeps_line_numbers_counts_and_the_final_failure() {
    let nccl = fixture_bytes("logs/nccl_info.log");
    let nccl: Vec<&[u8]> = nccl
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let assertion = b"/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.";
    let mut log = Vec::new();
    let mut assertion_lines = Vec::new();
    let total = 300_000;
    for n in 1..total {
        if n % 7_919 == 0 {
            log.extend_from_slice(assertion);
            assertion_lines.push(n);
        } else if n % 3 == 0 {
            log.extend_from_slice(nccl[n % nccl.len()]);
        } else {
            log.extend_from_slice(
                format!(
                    "[rank{}]: step {n} | loss 2.{n:04} | lr 3.0e-04 | grad_norm 0.9",
                    n % 8
                )
                .as_bytes(),
            );
        }
        log.push(b'\n');
    }
    log.extend_from_slice(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 4.98 GiB is free.\n");
    assert!(
        log.len() > 10 << 20,
        "{} bytes: not enough to cross several blocks",
        log.len()
    );
    let dir = Scratch::new("large");
    std::fs::write(dir.path("big.log"), &log).unwrap();
    let (report, _) = analyze_json(&[&dir.display("big.log")]);
    assert_eq!(report["inputs"][0]["lines"], total as u64);
    assert_eq!(report["inputs"][0]["bytes"], log.len() as u64);
    let findings = report["findings"].as_array().unwrap();
    let find = |rule: &str| {
        findings
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule}"))
    };
    let asserts = find("cuda-kernel-assertion-failed");
    assert_eq!(asserts["count"], assertion_lines.len() as u64);
    assert_eq!(asserts["first_seen"]["line"], assertion_lines[0] as u64);
    assert_eq!(asserts["evidence"][1]["line"], assertion_lines[1] as u64);
    let oom = find("torch-cuda-out-of-memory");
    assert_eq!(oom["first_seen"]["line"], total as u64);
    assert_eq!(report["root_cause"]["category"], "device-side-assert");
}

#[test]
fn a_rule_limited_to_nvidia_smi_output_ignores_other_logs() {
    let row = "|    0   N/A  N/A           86711      C   VLLM::EngineCore                      44568MiB |\n";
    let mut smi = fixture_bytes("system/nvidia-smi.txt");
    smi.extend_from_slice(row.as_bytes());
    let dir = Scratch::new("kinds");
    std::fs::write(dir.path("smi.txt"), &smi).unwrap();
    std::fs::write(dir.path("train.log"), format!("step 1 loss 2.3\n{row}")).unwrap();
    let rule = "nvidia-smi-process-holding-memory";
    for (file, kind, fires) in [("smi.txt", "nvidia-smi", true), ("train.log", "log", false)] {
        let (report, _) = analyze_json(&[&dir.display(file)]);
        assert_eq!(report["inputs"][0]["kind"], kind);
        let fired = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == rule);
        assert_eq!(fired, fires, "{file}");
    }
}

/// Reads stdout lines of a running child on a thread, so that a test can
/// wait for one with a timeout.
fn line_reader(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

const OOM_LINE: &str = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 2 has a total capacity of 139.80 GiB of which 4.98 GiB is free.\n";

#[test]
fn following_a_pipe_reports_a_finding_before_the_input_ends() {
    use std::process::Stdio;
    let mut child = crate::util::coroner()
        .args(["analyze", "--follow", "--format", "jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = line_reader(child.stdout.take().unwrap());
    stdin
        .write_all(b"step 1 loss 2.30\nstep 2 loss 2.29\n")
        .unwrap();
    stdin.write_all(OOM_LINE.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let first = lines
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a finding while the pipe is still open");
    let finding: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(finding["type"], "finding");
    assert_eq!(finding["rule"], "torch-cuda-out-of-memory");
    assert_eq!(finding["first_seen"]["line"], 3);
    assert_eq!(finding["rank"], 2);
    stdin.write_all(OOM_LINE.as_bytes()).unwrap();
    drop(stdin);
    let verdict: serde_json::Value = serde_json::from_str(
        &lines
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(verdict["type"], "verdict");
    assert_eq!(verdict["root_cause"]["category"], "gpu-oom");
    assert_eq!(verdict["findings"][0]["count"], 2);
    assert_eq!(child.wait().unwrap().code(), Some(1));
}

#[test]
fn following_a_file_waits_for_more_lines_until_interrupted() {
    let dir = Scratch::new("follow");
    let path = dir.path("train.log");
    std::fs::write(&path, "step 1 loss 2.30\n").unwrap();
    let mut child = crate::util::follow_jsonl(&dir.display("train.log"))
        .spawn()
        .unwrap();
    let lines = line_reader(child.stdout.take().unwrap());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(OOM_LINE.as_bytes()).unwrap();
    drop(file);
    let first = lines
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a finding from a line appended to the file");
    assert!(first.contains("\"torch-cuda-out-of-memory\""), "{first}");
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let verdict = lines
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a verdict after Ctrl-C");
    assert!(verdict.contains("\"type\":\"verdict\""), "{verdict}");
    assert_eq!(child.wait().unwrap().code(), Some(1));
}

#[test]
fn follow_takes_one_file_or_stdin() {
    let out = run(&["analyze", "--follow", "fixtures/real-gpu/logs"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--follow"));
}

#[test]
fn special_files_and_link_loops_in_a_directory_are_skipped_not_waited_on() {
    let dir = Scratch::new("special");
    std::fs::create_dir_all(dir.path("run/sub")).unwrap();
    std::fs::write(dir.path("run/train.log"), OOM_LINE).unwrap();
    let fifo = dir.path("run/pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    std::os::unix::fs::symlink(dir.path("run"), dir.path("run/sub/loop")).unwrap();
    let started = std::time::Instant::now();
    let (report, code) = analyze_json(&[&dir.display("run"), &fifo.to_string_lossy()]);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let notes: Vec<String> = report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["notes"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("symbolic link")),
        "{notes:?}"
    );
    if made.is_ok_and(|s| s.success()) {
        assert!(
            notes
                .iter()
                .filter(|n| n.contains("not a regular file"))
                .count()
                >= 1,
            "{notes:?}"
        );
    }
}

/// The report the README shows for its quick-start command is the one the
/// binary prints.
#[test]
fn the_readme_quick_start_report_is_current() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let command = "$ coroner analyze fixtures/real-gpu/logs/torchrun_kill.log\n";
    let start = readme.find(command).expect("the quick-start sample") + command.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let out = run(
        &[
            "analyze",
            "--format",
            "human",
            "fixtures/real-gpu/logs/torchrun_kill.log",
        ],
        None,
    );
    assert_eq!(shown, String::from_utf8_lossy(&out.stdout));
}

/// Real logs of failing programs as a log view lists them, newest line
/// first, given on standard input and as a file: read in the order they
/// were written, with the root cause of the log as written.
#[test]
fn a_log_pasted_as_a_string_one_line_or_a_notebook_gets_the_answer_of_the_log() {
    let scratch = Scratch::new("pasted-forms");
    for rel in [
        "logs/oom_simple.log",
        "logs/assert_index.log",
        "logs/torchrun_kill.log",
    ] {
        let (as_written, _) = analyze_json(&[&fixture(rel)]);
        let log = String::from_utf8(fixture_bytes(rel)).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        let notebook = serde_json::json!({
            "cells": [{"cell_type": "code", "metadata": {}, "source": ["!python train.py\n"],
                "outputs": [{"name": "stderr", "output_type": "stream", "text": log}]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
        });
        for (name, copy, note) in [
            (
                "repr.log",
                format!("{}\n", serde_json::Value::String(log.clone())),
                "written as",
            ),
            (
                "flat.log",
                format!("{}\n", lines.join(" ")),
                "lost their line ends",
            ),
            ("run.ipynb", format!("{notebook:#}"), "Jupyter notebook"),
        ] {
            let path = scratch.path(name);
            std::fs::write(&path, &copy).unwrap();
            let (report, _) = analyze_json(&[path.to_str().unwrap()]);
            assert_eq!(
                report["root_cause"]["category"], as_written["root_cause"]["category"],
                "{rel} as {name}"
            );
            let notes = report["inputs"][0]["notes"].to_string();
            assert!(notes.contains(note), "{rel} as {name}: {notes}");
        }
    }
}

#[test]
fn a_log_listed_newest_first_gets_the_answer_of_the_log() {
    let scratch = Scratch::new("newest-first");
    for rel in [
        "logs/oom_simple.log",
        "logs/assert_index.log",
        "logs/cupy_illegal.log",
        "logs/store_timeout.log",
    ] {
        let (as_written, _) = analyze_json(&[&fixture(rel)]);
        let log = String::from_utf8(fixture_bytes(rel)).unwrap();
        let newest_first: String = log.lines().rev().map(|l| format!("{l}\n")).collect();
        let path = scratch.path("view.log");
        std::fs::write(&path, &newest_first).unwrap();
        let (from_file, _) = analyze_json(&[path.to_str().unwrap()]);
        let out = run(
            &["analyze", "--format", "json", "-"],
            Some(newest_first.as_bytes()),
        );
        let from_stdin: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for report in [&from_file, &from_stdin] {
            assert_eq!(
                report["root_cause"]["category"], as_written["root_cause"]["category"],
                "{rel}"
            );
            let notes = report["inputs"][0]["notes"].to_string();
            assert!(notes.contains("newest first"), "{rel}: {notes}");
        }
    }
}

/// A zip archive (a CI system's log download, an issue's attachment) is
/// read as the folder it holds: the same root cause, rank and evidence,
/// each member named inside the archive.
#[test]
fn a_zip_archive_is_read_as_the_folder_it_holds() {
    let (folder, code) = analyze_json(&["fixtures/multi-gpu/oom"]);
    assert_eq!(code, 1);
    let (zipped, code) = analyze_json(&["fixtures/archives/multi-gpu-oom.zip"]);
    assert_eq!(code, 1);
    let root_cause = |r: &serde_json::Value| {
        (
            r["root_cause"]["category"].clone(),
            r["root_cause"]["rank"].clone(),
            r["root_cause"]["rule"].clone(),
        )
    };
    assert_eq!(root_cause(&zipped), root_cause(&folder));
    let evidence: Vec<&str> = zipped["root_cause"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["input"].as_str())
        .collect();
    assert!(
        evidence.contains(
            &"fixtures/archives/multi-gpu-oom.zip:oom/logs/none_nm2blbhw/attempt_0/1/stderr.log"
        ),
        "{evidence:?}"
    );
    // The same bytes in a file that is no archive are read as text.
    let scratch = Scratch::new("not-a-zip");
    let fake = scratch.path("log.zip");
    std::fs::write(&fake, fixture_bytes("logs/oom_simple.log")).unwrap();
    let (report, code) = analyze_json(&[&scratch.display("log.zip")]);
    assert_eq!(
        (report["root_cause"]["category"].as_str(), code),
        (Some("gpu-oom"), 1)
    );
}
