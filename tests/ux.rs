//! How the binary fits a shell and a CI job: the default report, colour,
//! output files, exit codes, `run`, completions, `explain` of exit codes.

use crate::util::{coroner, fixture, run, Scratch};

const OOM_LINE: &[u8] =
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_pipe_gets_the_human_report() {
    let out = run(&["analyze", &fixture("logs/oom_simple.log")], None);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("Root cause: gpu-oom"), "{stdout}");
    assert!(!stdout.contains("\u{1b}["), "no colour in a pipe: {stdout}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn colour_follows_the_flag_and_the_environment() {
    let log = fixture("logs/oom_simple.log");
    let always = run(&["--color", "always", "analyze", &log], None);
    assert!(text(&always.stdout).contains("\u{1b}["));
    let forced = coroner()
        .env_remove("NO_COLOR")
        .env("FORCE_COLOR", "1")
        .args(["analyze", &log])
        .output()
        .unwrap();
    assert!(text(&forced.stdout).contains("\u{1b}["));
    let never = coroner()
        .env_remove("NO_COLOR")
        .env("FORCE_COLOR", "1")
        .args(["analyze", "--color", "never", &log])
        .output()
        .unwrap();
    assert!(!text(&never.stdout).contains("\u{1b}["));
}

#[test]
fn the_width_follows_columns_when_there_is_no_terminal() {
    let log = fixture("logs/oom_simple.log");
    let wide = coroner()
        .env("COLUMNS", "160")
        .args(["analyze", "-v", &log])
        .output()
        .unwrap();
    let narrow = coroner()
        .env("COLUMNS", "60")
        .args(["analyze", "-v", &log])
        .output()
        .unwrap();
    let longest = |o: &std::process::Output| {
        text(&o.stdout)
            .lines()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0)
    };
    assert!(longest(&wide) > 100, "{}", text(&wide.stdout));
    assert!(longest(&narrow) <= 62, "{}", text(&narrow.stdout));
}

#[test]
fn reports_go_to_files_and_one_to_standard_output() {
    let dir = Scratch::new("ux-outputs");
    let sarif = dir.display("out.sarif");
    let md = dir.display("summary.md");
    let out = run(
        &[
            "analyze",
            "--format",
            "json",
            "--format",
            &format!("sarif={sarif}"),
            "--format",
            &format!("markdown={md}"),
            &fixture("logs/oom_simple.log"),
        ],
        None,
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(std::fs::read_to_string(&md).unwrap().contains("gpu-oom"));

    let file = dir.display("report.txt");
    let out = run(
        &["analyze", "-o", &file, &fixture("logs/oom_simple.log")],
        None,
    );
    assert!(out.stdout.is_empty());
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .starts_with("Root cause: gpu-oom"));

    let two = run(
        &[
            "analyze",
            "--format",
            "json",
            "--format",
            "sarif",
            &fixture("logs/oom_simple.log"),
        ],
        None,
    );
    assert_eq!(two.status.code(), Some(2));
    assert!(text(&two.stderr).contains("only one report can go to standard output"));
}

#[test]
fn exit_zero_keeps_the_report_and_drops_the_failure() {
    let out = run(
        &["analyze", "--exit-zero", &fixture("logs/oom_simple.log")],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("gpu-oom"));
}

#[test]
fn a_missing_input_is_an_error_not_an_unknown_verdict() {
    let out = run(&["analyze", "no/such/run.log"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !text(&out.stdout).contains("Root cause"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("no/such/run.log"));
}

#[test]
fn stdin_has_a_name_and_sarif_results_always_have_a_location() {
    let out = run(
        &[
            "analyze",
            "--format",
            "json",
            "--stdin-filename",
            "logs/rank3.log",
            "-",
        ],
        Some(OOM_LINE),
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["inputs"][0]["path"], "logs/rank3.log");
    assert_eq!(report["root_cause"]["rank"], 3);

    // GitHub code scanning's rules: every result has a physical location
    // with a relative URI and a start line, and a message.
    for args in [
        vec!["analyze", "--format", "sarif", "-"],
        vec![
            "analyze",
            "--format",
            "sarif",
            "--stdin-filename",
            "train.log",
            "-",
        ],
    ] {
        let mut log = b"[rank0]:[E1129 18:39:29.849021966 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=25, OpType=ALLREDUCE, NumelIn=67117056, NumelOut=67117056, Timeout(ms)=20000) ran for 20088 milliseconds before timing out.\n".to_vec();
        log.extend_from_slice(b"[rank1]:");
        log.extend_from_slice(OOM_LINE);
        let out = run(&args, Some(&log));
        let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert!(!results.is_empty());
        for r in results {
            let loc = &r["locations"][0]["physicalLocation"];
            let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
            assert!(
                !uri.is_empty() && !uri.contains("://") && !uri.starts_with('/'),
                "{uri}"
            );
            assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
            assert!(!r["message"]["text"].as_str().unwrap().is_empty());
            assert!(r["partialFingerprints"]["coronerFinding/v1"].is_string());
        }
        if args.contains(&"train.log") {
            assert_eq!(
                results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                "train.log"
            );
        }
    }
}

#[test]
fn a_consequence_is_labelled_one_everywhere() {
    let log = fixture("logs/torchrun_kill.log");
    let human = text(&run(&["analyze", &log], None).stdout);
    let line = human
        .lines()
        .find(|l| l.trim_start().starts_with("error peer-connection-closed"))
        .unwrap();
    assert!(line.contains("consequence"), "{line}");
    let sarif: serde_json::Value =
        serde_json::from_slice(&run(&["analyze", "--format", "sarif", &log], None).stdout).unwrap();
    let peer = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "peer-connection-closed")
        .unwrap();
    assert_eq!(peer["level"], "note");
    assert!(peer["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"].is_string());
}

#[test]
fn a_healthy_run_is_one_passing_junit_test_case() {
    let out = run(
        &[
            "analyze",
            "--format",
            "junit",
            &fixture("logs/nccl_info.log"),
        ],
        None,
    );
    let xml = text(&out.stdout);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1, "{xml}");
    assert!(!cases[0].children().any(|c| c.has_tag_name("failure")));
}

#[test]
fn a_short_log_gets_a_report_no_longer_than_itself_unless_asked() {
    let out = run(&["analyze", "-"], Some(OOM_LINE));
    let short = text(&out.stdout);
    assert!(short.lines().count() <= 20, "{short}");
    assert!(short.starts_with("Root cause: gpu-oom"));
    assert!(short.contains("Next:"));
    let out = run(&["analyze", "-v", "-"], Some(OOM_LINE));
    assert!(text(&out.stdout).lines().count() > 20);
}

#[test]
fn run_passes_output_through_and_explains_a_failure() {
    let out = run(
        &[
            "run",
            "--",
            "sh",
            "-c",
            "echo step 1; echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2; exit 3",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stdout), "step 1\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("RuntimeError: CUDA error: an illegal memory access"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Root cause: illegal-memory-access"),
        "{stderr}"
    );

    let ok = run(&["run", "--", "sh", "-c", "echo fine"], None);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(text(&ok.stdout), "fine\n");
    assert!(ok.stderr.is_empty());

    let killed = run(&["run", "--", "sh", "-c", "kill -9 $$"], None);
    assert_eq!(killed.status.code(), Some(137));
    assert!(text(&killed.stderr).contains("killed by signal 9"));
}

#[test]
fn completions_man_page_and_version() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = run(&["completions", shell], None);
        assert_eq!(out.status.code(), Some(0));
        assert!(text(&out.stdout).contains("analyze"), "{shell}");
    }
    let man = text(&run(&["man"], None).stdout);
    assert!(man.starts_with(".ie") || man.contains(".TH"), "{man}");
    let version = text(&run(&["--version"], None).stdout);
    assert!(version.contains("rule pack"), "{version}");
    let help = text(&run(&["--help"], None).stdout);
    assert!(help.contains("Examples:"));
}

#[test]
fn explain_reads_exit_codes_signals_and_pasted_lines() {
    for (query, expected) in [
        ("137", "SIGKILL"),
        ("-9", "SIGKILL"),
        ("139", "SIGSEGV"),
        ("SIGBUS", "shm-exhausted"),
        ("0:125", "SIG_OOM"),
        ("0:9", "SIGKILL"),
        ("700", "cudaErrorIllegalAddress"),
        (
            "NCCL WARN Cuda failure 'out of memory'",
            "nccl-cuda-out-of-memory",
        ),
    ] {
        let out = run(&["explain", query], None);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{query}: {}", text(&out.stderr));
        assert!(stdout.contains(expected), "{query}: {stdout}");
        assert!(
            !stdout.contains("[["),
            "{query}: a template leaked: {stdout}"
        );
    }
}

#[test]
fn follow_waits_for_the_file_and_reads_it_again_after_truncation_and_replacement() {
    use std::io::{BufRead, Write};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let dir = Scratch::new("ux-follow");
    let log = dir.path("train.log");
    let mut child = crate::util::follow_jsonl(&dir.display("train.log"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both streams are read as they come, so that each step waits for the
    // follower to have seen the one before (on a loaded machine a fixed
    // pause is not enough).
    let (lines, seen) = mpsc::channel::<String>();
    let readers: Vec<_> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|stream| {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        })
    })
    .collect();
    drop(lines);
    let mut output = String::new();
    let mut wait_for = |needle: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !output.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match seen.recv_timeout(left) {
                Ok(line) => {
                    output.push_str(&line);
                    output.push('\n');
                }
                Err(_) => panic!("no {needle:?} in the follower's output:\n{output}"),
            }
        }
    };
    wait_for("waiting for");
    std::fs::write(
        &log,
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    .unwrap();
    wait_for("cuda-illegal-memory-access");
    std::fs::write(&log, "").unwrap();
    wait_for("was truncated; reading it again from the start");
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(OOM_LINE).unwrap();
    drop(f);
    wait_for("torch-cuda-out-of-memory");
    // Rotated by rename and create, as logrotate does without copytruncate:
    // the new file is read from its first byte.
    std::fs::rename(&log, dir.path("train.log.1")).unwrap();
    std::fs::write(
        &log,
        "[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n",
    )
    .unwrap();
    wait_for("was replaced; reading it again from the start");
    wait_for("nccl-watchdog-timeout");
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    for reader in readers {
        let _ = reader.join();
    }
}

/// The SARIF Multitool's own GitHub rules (`--rule-kind Gh`) and SARIF
/// rules pass the reports of stdin, a file, a directory, a healthy log and
/// a trend. `.ci/run` installs the Multitool (npm's
/// `@microsoft/sarif-multitool`) and names it in
/// `CORONER_SARIF_MULTITOOL`; without it the test says it was skipped.
#[test]
fn sarif_passes_the_sarif_multitools_github_rules() {
    let Some(multitool) = std::env::var_os("CORONER_SARIF_MULTITOOL") else {
        eprintln!("SKIPPED: CORONER_SARIF_MULTITOOL does not name the SARIF Multitool");
        return;
    };
    let dir = Scratch::new("multitool");
    let kill = fixture("logs/torchrun_kill.log");
    let healthy = fixture("logs/nccl_info.log");
    let reports: [(&str, &str, Option<&[u8]>); 5] = [
        ("stdin", "-", Some(OOM_LINE)),
        ("file", &kill, None),
        ("directory", "fixtures/multi-gpu/host_oom_rank", None),
        ("healthy", &healthy, None),
        ("trend", "fixtures/metrics/leak_visible", None),
    ];
    for (name, input, stdin) in reports {
        let out = run(&["analyze", "--format", "sarif", input], stdin);
        let sarif = dir.path(&format!("{name}.sarif"));
        std::fs::write(&sarif, &out.stdout).unwrap();
        let checked = dir.path(&format!("{name}.checked.sarif"));
        let status = std::process::Command::new(&multitool)
            .args(["validate", "--rule-kind", "Gh;Sarif", "--output"])
            .arg(&checked)
            .arg(&sarif)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run the SARIF Multitool");
        assert!(status.success(), "{name}: the Multitool failed");
        let found: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&checked).unwrap()).unwrap();
        let problems: Vec<String> = found["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["ruleId"].as_str().unwrap_or("?").to_owned())
            // SARIF2005 asks for the tool's `informationUri`, a web page
            // about it; coroner has none to name.
            .filter(|rule| rule != "SARIF2005")
            .collect();
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
}
