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

/// The rules of the findings a root cause explains.
fn explained(root: &Value) -> Vec<&str> {
    root["explains"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
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
    let explains = explained(root);
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

/// gdb's `thread apply all bt`: for each thread (by LWP), its frames as
/// `(pc, function)`, function `None` for `??`.
fn gdb_threads(text: &str) -> std::collections::BTreeMap<u64, Vec<(u64, Option<String>)>> {
    let thread = Regex::new(r"^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)").unwrap();
    let frame = Regex::new(r"^#\d+\s+(?:0x([0-9a-f]+) in )?(\S+)").unwrap();
    let mut threads = std::collections::BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(c) = thread.captures(line) {
            current = Some(c[1].parse::<u64>().unwrap());
            threads.insert(current.unwrap(), Vec::new());
        } else if let (Some(tid), Some(c)) = (current, frame.captures(line)) {
            // Frame #0 of the current thread is printed without its pc.
            let pc = c
                .get(1)
                .map_or(0, |m| u64::from_str_radix(m.as_str(), 16).unwrap());
            let function = (&c[2] != "??").then(|| c[2].to_owned());
            threads.get_mut(&tid).unwrap().push((pc, function));
        } else if line.is_empty() {
            current = None;
        }
    }
    threads
}

fn function_base(name: &str) -> &str {
    name.split(['(', '<', ' ']).next().unwrap_or(name)
}

/// Cores made on the GPU machine from static programs: every thread and
/// every frame equals gdb's.
#[test]
fn probe_cores_list_every_thread_and_frame_as_gdb_does() {
    for (case, rule) in [
        ("cxx_throw", "core-abort-uncaught-cxx-exception"),
        ("threads_segv", "core-segfault"),
    ] {
        let dir = "fixtures/host-cores/probe";
        let (report, _) = analyze_json(&[
            "--debug-dir",
            &format!("{dir}/bin"),
            &format!("{dir}/{case}.core.zst"),
        ]);
        assert_eq!(report["root_cause"]["rule"], rule, "{case}");
        let gdb = gdb_threads(&std::fs::read_to_string(format!("{dir}/{case}.gdb.txt")).unwrap());
        let ours = report["inputs"][0]["core"]["threads"].as_array().unwrap();
        let tids: std::collections::BTreeSet<u64> =
            ours.iter().map(|t| t["tid"].as_u64().unwrap()).collect();
        assert_eq!(tids, gdb.keys().copied().collect(), "{case}: threads");
        for thread in ours {
            let tid = thread["tid"].as_u64().unwrap();
            let expected = &gdb[&tid];
            let frames = thread["frames"].as_array().unwrap();
            assert_eq!(
                frames.len(),
                expected.len(),
                "{case} thread {tid}: {frames:?}"
            );
            for (ours, (pc, function)) in frames.iter().zip(expected) {
                if *pc != 0 {
                    assert_eq!(ours["pc"].as_u64().unwrap(), *pc, "{case} thread {tid}");
                }
                if let Some(function) = function {
                    let got = ours["function"].as_str().unwrap_or("");
                    assert_eq!(
                        function_base(got),
                        function_base(function),
                        "{case} thread {tid}"
                    );
                }
            }
        }
    }
}

/// What the GPU machine left behind: the training log, the host core (named
/// after the CUDA driver thread that called abort), the GPU core under the
/// driver's default name, and the program. One incident, one root cause.
#[test]
fn an_incident_directory_is_one_incident() {
    let (report, code) = analyze_json(&["fixtures/incidents/gpu-exception"]);
    assert_eq!(code, 1);
    let root = &report["root_cause"];
    assert_eq!(root["rule"], "gpu-core-illegal-address");
    let summary = root["summary"].as_str().unwrap();
    assert!(
        summary.contains("embed_forward_kernel") && summary.contains("trainer.cu:14"),
        "{summary}"
    );
    let explains = explained(root);
    assert!(
        explains.contains(&"core-abort-by-cuda-driver"),
        "{explains:?}"
    );
    let inputs = report["inputs"].as_array().unwrap();
    let host = inputs.iter().find_map(|i| i.get("core")).unwrap();
    // The program lies in the directory: its frames are symbolized, and the
    // main thread is where gdb saw it, in cudaMemcpy called from main.
    let gdb = std::fs::read_to_string("fixtures/host-cores/probe/gpu_exception_incident.gdb.txt")
        .unwrap();
    assert!(gdb.contains("in main () at /srv/train/jobs/gpuprobe/src/trainer.cu:53"));
    let main_thread = host["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"] == host["process"]["pid"])
        .unwrap();
    let frames = main_thread["frames"].as_array().unwrap();
    let main = frames.iter().find(|f| f["function"] == "main").unwrap();
    assert_eq!(main["line"], 53);
    let tids: std::collections::BTreeSet<u64> = host["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(tids, gdb_threads(&gdb).keys().copied().collect());
}

/// Each real GPU core dump: the category its exception maps to.
#[test]
fn each_gpu_core_dump_gets_its_category() {
    let expected = [
        ("assert", "device-side-assert", "gpu-core-device-assert"),
        (
            "assert_default_flags",
            "device-side-assert",
            "gpu-core-device-assert",
        ),
        (
            "misaligned",
            "illegal-memory-access",
            "gpu-core-illegal-address",
        ),
        // CUDA 13 reports the runaway recursion as an out-of-range address.
        (
            "stack_overflow",
            "illegal-memory-access",
            "gpu-core-illegal-address",
        ),
        (
            "multi_kernel",
            "illegal-memory-access",
            "gpu-core-illegal-address",
        ),
        (
            "multi_context",
            "illegal-memory-access",
            "gpu-core-illegal-address",
        ),
        (
            "torch_index",
            "device-side-assert",
            "gpu-core-device-assert",
        ),
        (
            "gpu_full_696",
            "illegal-memory-access",
            "gpu-core-illegal-address",
        ),
        ("assert_truncated", "launch-failure", "gpu-core-truncated"),
        (
            "torch_index_truncated",
            "launch-failure",
            "gpu-core-truncated",
        ),
    ];
    for (case, category, rule) in expected {
        let (report, code) = analyze_json(&[&format!("fixtures/gpu-cores/{case}.nvcudmp.zst")]);
        assert_eq!(code, 1, "{case}");
        assert_eq!(report["root_cause"]["category"], category, "{case}");
        assert_eq!(report["root_cause"]["rule"], rule, "{case}");
    }
}

/// The log PyTorch printed and the truncated dump of the same crash: the
/// log's assertion lines name the failure.
#[test]
fn a_truncated_dump_defers_to_the_log() {
    let (report, _) = analyze_json(&[
        "fixtures/gpu-cores/torch_index_truncated.log",
        "fixtures/gpu-cores/torch_index_truncated.nvcudmp.zst",
    ]);
    assert_eq!(report["root_cause"]["category"], "device-side-assert");
}

/// A read through a /dev/shm mapping whose backing is gone: SIGBUS inside
/// the mapping, the shared-memory category, the frame gdb shows.
#[test]
fn a_bus_error_in_shared_memory_is_shm_exhausted() {
    let dir = "fixtures/host-cores/shm_bus";
    let (report, _) = analyze_json(&[
        "--exe",
        &format!("{dir}/shm_bus"),
        &format!("{dir}/core.shm_bus.zst"),
    ]);
    assert_eq!(report["root_cause"]["category"], "shm-exhausted");
    let summary = report["root_cause"]["summary"].as_str().unwrap();
    assert!(summary.contains("/dev/shm/coroner_batch_0"), "{summary}");
    let gdb = std::fs::read_to_string(format!("{dir}/shm_bus.gdb.txt")).unwrap();
    let frames = our_frames(&report["inputs"][0]["core"]["threads"][0]);
    assert_eq!(frames, gdb_frames(&gdb));
}

/// The driver can gzip its GPU dumps itself: the same facts come out.
#[test]
fn a_gzipped_gpu_dump_reads_as_the_raw_one() {
    use std::io::{Read, Write};
    let packed = std::fs::read("fixtures/real-gpu/cores/gpu_light_679.nvcudmp.zst").unwrap();
    let mut raw = Vec::new();
    zstd::stream::read::Decoder::new(&packed[..])
        .unwrap()
        .read_to_end(&mut raw)
        .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    let scratch = crate::util::Scratch::new("gzip-gpu-core");
    let path = scratch.path("core_1_host_679.nvcudmp.gz");
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let (from_gzip, _) = analyze_json(&[path.to_str().unwrap()]);
    let (from_zstd, _) = analyze_json(&["fixtures/real-gpu/cores/gpu_light_679.nvcudmp.zst"]);
    assert_eq!(from_gzip["inputs"][0]["compression"], "gzip");
    assert_eq!(
        from_gzip["inputs"][0]["gpu_core"],
        from_zstd["inputs"][0]["gpu_core"]
    );
    assert_eq!(
        from_gzip["root_cause"]["summary"],
        from_zstd["root_cause"]["summary"]
    );
}

/// A core copied off its machine: the program is found under `--sysroot`
/// at the path the core records, or by name under `--debug-dir`.
#[test]
fn binaries_are_found_under_a_sysroot_or_a_debug_dir() {
    let scratch = crate::util::Scratch::new("sysroot");
    let recorded = scratch.path("root/tmp/art_a/bin");
    std::fs::create_dir_all(&recorded).unwrap();
    std::fs::copy(fixture("bin/segv"), recorded.join("segv")).unwrap();
    let debug = scratch.path("debug");
    std::fs::create_dir_all(&debug).unwrap();
    std::fs::copy(fixture("bin/segv"), debug.join("segv")).unwrap();
    let core = fixture("cores/core.segv.875.zst");
    for (flag, dir) in [
        ("--sysroot", scratch.display("root")),
        ("--debug-dir", scratch.display("debug")),
    ] {
        let (report, _) = analyze_json(&[flag, &dir, &core]);
        let frames = our_frames(&report["inputs"][0]["core"]["threads"][0]);
        assert_eq!(
            frames.first().map(|f| f.0.as_str()),
            Some("sum_values"),
            "{flag}"
        );
        let main = report["inputs"][0]["core"]["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["path"] == "/tmp/art_a/bin/segv")
            .unwrap();
        assert_eq!(main["status"], "found", "{flag}");
    }
    // Without either, the program is not found and frames are bare.
    let (report, _) = analyze_json(&[&core]);
    let frames = our_frames(&report["inputs"][0]["core"]["threads"][0]);
    assert_eq!(frames.first().map(|f| f.0.as_str()), Some(""));
}
