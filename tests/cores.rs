//! Core dumps through the binary, checked against what gdb and cuda-gdb
//! said about the same files (their output is kept next to the cores).

use crate::util::{analyze_json, fixture, run};
use regex::Regex;
use serde_json::Value;

/// `(function, file name, line, pc)` of every `#N 0xPC in F (...) at FILE:LINE`
/// line of gdb's backtrace, first occurrence of each frame number only.
fn gdb_frames(text: &str) -> Vec<(String, String, u64, u64)> {
    let frame = Regex::new(r"^#(\d+)\s+0x([0-9a-f]+) in (\S+) \(.*\) at (\S+):(\d+)").unwrap();
    let mut seen = std::collections::BTreeSet::new();
    text.lines()
        .filter_map(|l| frame.captures(l))
        .filter(|c| seen.insert(c[1].to_owned()))
        .map(|c| {
            (
                c[3].to_owned(),
                c[4].rsplit('/').next().unwrap_or("").to_owned(),
                c[5].parse().unwrap(),
                u64::from_str_radix(&c[2], 16).unwrap(),
            )
        })
        .collect()
}

fn our_frames(thread: &Value) -> Vec<(String, String, u64, u64)> {
    thread["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["function"].as_str().unwrap_or("").to_owned(),
                f["file"]
                    .as_str()
                    .unwrap_or("")
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_owned(),
                f["line"].as_u64().unwrap_or(0),
                f["pc"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn host_core_backtrace_equals_gdbs() {
    let (report, code) = analyze_json(&[
        "--exe",
        &fixture("bin/segv"),
        &fixture("cores/core.segv.875.zst"),
    ]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "segfault");
    assert_eq!(report["root_cause"]["rule"], "core-segfault");
    let core = &report["inputs"][0]["core"];
    assert_eq!(core["signal"]["name"], "SIGSEGV");
    assert_eq!(core["signal"]["fault_address"], 0);
    assert_eq!(core["fault_library"], "user");
    let crashed = &core["threads"][0];
    assert_eq!(crashed["crashed"], true);
    let gdb = std::fs::read_to_string(fixture("cores/gdb_bt_core.segv.875.txt")).unwrap();
    let expected = gdb_frames(&gdb);
    assert_eq!(expected.len(), 3, "gdb's frames: {expected:?}");
    assert_eq!(our_frames(crashed), expected);
    let summary = report["root_cause"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("NULL pointer dereference") && summary.contains("sum_values (segv.c:5)"),
        "{summary}"
    );
}

#[test]
fn a_library_of_another_build_is_never_used_for_symbols() {
    // The core comes from another machine: this machine's libc has another
    // build id, so frames there would be garbage.
    let (report, _) = analyze_json(&[
        "--exe",
        &fixture("bin/segv"),
        &fixture("cores/core.segv.875.zst"),
    ]);
    for module in report["inputs"][0]["core"]["modules"].as_array().unwrap() {
        if module["path"].as_str().unwrap().contains("libc.so") {
            assert_ne!(module["status"], "found", "{module}");
            assert!(module["resolved"].is_null(), "{module}");
        }
    }
}

#[test]
fn gpu_core_dump_agrees_with_cuda_gdb() {
    let (report, code) = analyze_json(&[&fixture("cores/gpu_light_679.nvcudmp.zst")]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "illegal-memory-access");
    let cudagdb = std::fs::read_to_string(fixture("cores/cudagdb_gpu_light_679.log")).unwrap();
    let exception = Regex::new(r"CUDA Exception: (.+)")
        .unwrap()
        .captures(&cudagdb)
        .unwrap()[1]
        .to_owned();
    let focus = Regex::new(r"block \((\d+),(\d+),(\d+)\), thread \((\d+),(\d+),(\d+)\)")
        .unwrap()
        .captures(&cudagdb)
        .unwrap();
    let at = Regex::new(
        r"at PC (0x[0-9a-f]+)\s+(\S+)\(.*\)\s+\((\S+):(\d+) in (\w+) inlined from (\S+):(\d+)\)",
    )
    .unwrap()
    .captures(&cudagdb)
    .unwrap();
    let e = &report["inputs"][0]["gpu_core"]["exceptions"][0];
    assert_eq!(e["name"], exception.trim());
    assert_eq!(format!("{:#x}", e["pc"].as_u64().unwrap()), &at[1]);
    assert!(e["kernel"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}(", &at[2])));
    let block: Vec<u64> = (1..=3).map(|i| focus[i].parse().unwrap()).collect();
    assert_eq!(e["block"], serde_json::json!(block));
    let first_thread: Vec<u64> = (4..=6).map(|i| focus[i].parse().unwrap()).collect();
    assert_eq!(e["threads"][0], serde_json::json!(first_thread));
    let source = &e["source"];
    assert!(source[0]["file"].as_str().unwrap().ends_with(&at[3]));
    assert_eq!(source[0]["line"].as_u64().unwrap().to_string(), &at[4]);
    assert!(source[0]["function"].as_str().unwrap().starts_with(&at[5]));
    assert!(source[1]["file"].as_str().unwrap().ends_with(&at[6]));
    assert_eq!(source[1]["line"].as_u64().unwrap().to_string(), &at[7]);
}

/// The log, the host core and the GPU core of one crash: the GPU exception
/// is the root cause, the driver's abort and the log's line its cascade.
#[test]
fn gpu_exception_explains_the_abort_and_the_log() {
    let (report, code) = analyze_json(&[
        "--exe",
        &fixture("bin/illegal"),
        &fixture("logs/gpucore_light.log"),
        &fixture("cores/core.illegal.679.zst"),
        &fixture("cores/gpu_light_679.nvcudmp.zst"),
    ]);
    assert_eq!(code, 1);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "illegal-memory-access");
    assert_eq!(root["rule"], "gpu-core-illegal-address");
    let explains: Vec<&str> = root["explains"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        explains.contains(&"core-abort-by-cuda-driver"),
        "{explains:?}"
    );
    assert!(
        explains.contains(&"gpu-exception-core-dump"),
        "{explains:?}"
    );
    for f in report["findings"].as_array().unwrap().iter().skip(1) {
        if f["severity"] == "error" || f["severity"] == "critical" {
            assert_eq!(f["role"], "symptom", "{f}");
            assert_eq!(f["explained_by"], "gpu-core-illegal-address", "{f}");
        }
    }
    let host = &report["inputs"][1]["core"];
    assert_eq!(host["signal"]["name"], "SIGABRT");
    assert!(host["cuda_loaded"].as_bool().unwrap());
    assert!(host["threads"].as_array().unwrap().len() > 1);
}

#[test]
fn host_core_of_a_cuda_program_names_the_abort_and_missing_libraries() {
    let out = run(
        &[
            "analyze",
            "--format",
            "human",
            "--exe",
            &fixture("bin/illegal"),
            &fixture("cores/core.illegal.679.zst"),
        ],
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Root cause: abort"), "{text}");
    assert!(text.contains("CUDA driver aborted the process"), "{text}");
    assert!(text.contains("libcuda.so"), "{text}");
    assert!(text.contains("No symbols for"), "{text}");
}

#[test]
fn core_report_snapshots() {
    let cases: &[(&str, &[&str])] = &[
        (
            "segv",
            &[
                "--exe",
                "fixtures/real-gpu/bin/segv",
                "fixtures/real-gpu/cores/core.segv.875.zst",
            ],
        ),
        (
            "gpu_light",
            &["fixtures/real-gpu/cores/gpu_light_679.nvcudmp.zst"],
        ),
        (
            "incident",
            &[
                "--exe",
                "fixtures/real-gpu/bin/illegal",
                "fixtures/real-gpu/logs/gpucore_light.log",
                "fixtures/real-gpu/cores/core.illegal.679.zst",
                "fixtures/real-gpu/cores/gpu_light_679.nvcudmp.zst",
            ],
        ),
    ];
    for (name, args) in cases {
        let mut all = vec!["analyze", "--format", "human"];
        all.extend_from_slice(args);
        let out = run(&all, None);
        insta::assert_snapshot!(
            format!("core_human_{name}"),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
