//! Every real fixture through the binary: the expected root cause (from
//! fixtures/README.md), and snapshots of both report formats.

use crate::util::{analyze_json, fixture, run, Scratch};

/// (fixture, root-cause category, rank).
const EXPECTED: &[(&str, &str, Option<u64>)] = &[
    ("logs/oom_simple.log", "gpu-oom", Some(0)),
    ("logs/oom_train.log", "gpu-oom", Some(0)),
    ("logs/assert_index.log", "device-side-assert", None),
    ("logs/assert_ce.log", "device-side-assert", None),
    ("logs/device_assert_c.log", "device-side-assert", None),
    ("logs/nan_loss.log", "nan-inf-loss", None),
    ("logs/anomaly.log", "nan-inf-loss", None),
    ("logs/illegal_address.log", "illegal-memory-access", None),
    ("logs/cupy_illegal.log", "illegal-memory-access", None),
    ("logs/driver_api_errors.log", "file-not-found", None),
    ("logs/gpucore_light.log", "launch-failure", None),
    ("logs/nccl_bad_iface.log", "nccl-config", Some(0)),
    ("logs/nccl_duplicate_gpu.log", "nccl-config", Some(0)),
    (
        "logs/nccl_watchdog_timeout.log",
        "collective-timeout",
        Some(0),
    ),
    ("logs/store_timeout.log", "rendezvous-failure", None),
    ("logs/torchrun_raise.log", "python-error", Some(1)),
    ("logs/torchrun_kill.log", "host-oom", Some(1)),
    ("logs/torchrun_segv.log", "segfault", Some(1)),
    ("logs/dl_segv.log", "dataloader-worker-crash", None),
];

/// Inputs from healthy runs: no root cause, nothing of error severity.
const HEALTHY: &[&str] = &[
    "logs/nccl_info.log",
    "logs/leak.log",
    "system/nvidia-smi.txt",
    "system/nvidia-smi-q.txt",
    "system/nvidia-smi-misc.txt",
    "system/collect_env.txt",
    "system/dmesg.txt",
    "system/nvcc.txt",
];

fn name_of(rel: &str) -> String {
    rel.rsplit('/').next().unwrap_or(rel).replace('.', "_")
}

/// Each input of `expected` (its path made by `path`) that does not get
/// its root-cause category and rank, and exit code 1, as a line to show.
fn wrong_root_causes(
    expected: &[(&str, &str, Option<u64>)],
    path: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut wrong = Vec::new();
    for &(rel, category, rank) in expected {
        let (report, code) = analyze_json(&[&path(rel)]);
        let root = &report["root_cause"];
        let got = (root["category"].as_str(), root["rank"].as_u64());
        if got != (Some(category), rank) || code != 1 {
            wrong.push(format!(
                "{rel}: expected {category} rank {rank:?}, got {got:?} (exit {code})"
            ));
        }
    }
    wrong
}

#[test]
fn each_failing_fixture_gets_its_root_cause() {
    let wrong = wrong_root_causes(EXPECTED, fixture);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn healthy_inputs_have_no_root_cause_and_no_errors() {
    for &rel in HEALTHY {
        let (report, code) = analyze_json(&[&fixture(rel)]);
        assert_eq!(report["root_cause"]["category"], "unknown", "{rel}");
        assert!(report["root_cause"]["summary"]
            .as_str()
            .is_some_and(|s| !s.is_empty()));
        for f in report["findings"].as_array().into_iter().flatten() {
            let sev = f["severity"].as_str().unwrap_or("");
            assert!(sev == "info" || sev == "warning", "{rel}: {f}");
        }
        assert_eq!(code, 0, "{rel}");
    }
}

#[test]
fn driver_api_errors_yield_three_separate_findings() {
    let (report, _) = analyze_json(&[&fixture("logs/driver_api_errors.log")]);
    let mut categories: Vec<&str> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["category"].as_str())
        .collect();
    categories.sort_unstable();
    assert_eq!(
        categories,
        ["cuda-driver-oom", "file-not-found", "invalid-device"]
    );
}

#[test]
fn an_assertion_storm_is_one_finding_with_a_count() {
    let (report, _) = analyze_json(&[&fixture("logs/assert_index.log")]);
    let first = &report["findings"][0];
    assert_eq!(first["category"], "device-side-assert");
    assert_eq!(first["count"], 32);
    assert_eq!(first["first_seen"]["line"], 1);
}

#[test]
fn json_reports_match_snapshots() {
    for &(rel, _, _) in EXPECTED {
        let (report, _) = analyze_json(&[&fixture(rel)]);
        insta::assert_json_snapshot!(format!("json_{}", name_of(rel)), report, {
            ".stats.elapsed_ms" => "[elapsed]"
        });
    }
}

#[test]
fn human_reports_match_snapshots() {
    let failing = EXPECTED.iter().map(|&(rel, _, _)| rel);
    for rel in failing.chain(HEALTHY.iter().copied()) {
        let out = run(&["analyze", "--format", "human", &fixture(rel)], None);
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{rel}: line over 80 columns: {line}"
            );
        }
        insta::assert_snapshot!(format!("human_{}", name_of(rel)), text);
    }
}

#[test]
fn a_directory_is_one_incident() {
    let dir = Scratch::new("incident");
    std::fs::create_dir_all(dir.path("run-42/node0")).unwrap_or_default();
    for (from, to) in [
        ("logs/nccl_info.log", "run-42/node0/nccl.log"),
        ("logs/torchrun_kill.log", "run-42/node0/torchrun.log"),
    ] {
        std::fs::copy(crate::util::root().join(fixture(from)), dir.path(to)).unwrap_or_default();
    }
    std::fs::write(
        dir.path("run-42/.hidden.log"),
        "torch.OutOfMemoryError: CUDA out of memory.\n",
    )
    .unwrap_or_default();
    let (report, code) = analyze_json(&[&dir.display("run-42")]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "host-oom");
    assert_eq!(report["root_cause"]["rank"], 1);
    let inputs = report["inputs"].as_array().cloned().unwrap_or_default();
    let paths: Vec<&str> = inputs.iter().filter_map(|i| i["path"].as_str()).collect();
    assert!(paths[0].ends_with("node0/nccl.log"), "{paths:?}");
    assert!(paths[1].ends_with("node0/torchrun.log"), "{paths:?}");
    let hidden = inputs
        .iter()
        .find(|i| {
            i["path"]
                .as_str()
                .is_some_and(|p| p.ends_with(".hidden.log"))
        })
        .expect("hidden file listed as skipped");
    assert_eq!(hidden["lines"], 0);
    assert!(hidden["notes"][0]
        .as_str()
        .is_some_and(|n| n.contains("hidden")));
}

/// Real two-GPU NCCL incidents under torchrun: each directory (console
/// output and torchrun's per-rank log files) is one incident.
/// (directory, root-cause category, rank).
const MULTI_GPU: &[(&str, &str, Option<u64>)] = &[
    ("raise", "python-error", Some(1)),
    ("kill", "host-oom", Some(1)),
    ("oom", "gpu-oom", Some(1)),
    ("mismatch", "collective-mismatch", Some(0)),
    ("oom_backward", "gpu-oom", Some(1)),
    ("stall", "collective-timeout", Some(1)),
    ("oom_then_timeout", "gpu-oom", Some(1)),
    ("xid_rank", "illegal-memory-access", Some(1)),
];

fn multi_gpu(case: &str) -> String {
    let path = format!("fixtures/multi-gpu/{case}");
    assert!(crate::util::root().join(&path).is_dir(), "missing {path}");
    path
}

#[test]
fn two_gpu_incidents_get_their_root_cause_and_first_failing_rank() {
    for &(case, category, rank) in MULTI_GPU {
        let (report, code) = analyze_json(&[&multi_gpu(case)]);
        let root = &report["root_cause"];
        assert_eq!(root["category"], category, "{case}");
        assert_eq!(root["rank"].as_u64(), rank, "{case}");
        assert_eq!(code, 1, "{case}");
    }
}

#[test]
fn a_stalled_rank_shows_as_a_collective_timeout() {
    let (report, _) = analyze_json(&[&multi_gpu("stall")]);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "collective-timeout");
    // The flight-recorder dumps beside the logs name the collective.
    assert!(
        root["summary"].as_str().unwrap().contains("collective 20"),
        "{root}"
    );
    assert_eq!(root["rank"], 1, "{root}");
}

#[test]
fn a_healthy_two_gpu_run_has_no_root_cause() {
    let (report, code) = analyze_json(&[&multi_gpu("healthy")]);
    assert_eq!(report["root_cause"]["category"], "unknown");
    assert_eq!(code, 0);
    let ranks: Vec<u64> = report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["rank"].as_u64())
        .collect();
    assert!(
        ranks.contains(&0) && ranks.contains(&1),
        "per-rank files: {ranks:?}"
    );
}

/// A rank that dies takes the others down: rank 1 ran out of memory and
/// stopped joining collectives; rank 0's watchdog timeout 20 s later is its
/// consequence, not a second cause (torchrun's own summary blames rank 0).
#[test]
fn a_peer_timeout_is_explained_by_the_rank_that_failed() {
    let (report, _) = analyze_json(&[&multi_gpu("oom_then_timeout")]);
    let root = &report["root_cause"];
    assert_eq!(root["rule"], "torch-cuda-out-of-memory");
    let timeout = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["category"] == "collective-timeout")
        .expect("rank 0's watchdog timeout");
    assert_eq!(timeout["rank"], 0);
    assert_eq!(timeout["role"], "symptom");
    assert_eq!(timeout["explained_by"], "torch-cuda-out-of-memory");
    assert!(root["explains"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "nccl-watchdog-timeout"));
}

#[test]
fn a_peer_connection_error_is_a_consequence_of_the_rank_that_raised() {
    let (report, _) = analyze_json(&[&fixture("logs/torchrun_raise.log")]);
    assert_eq!(report["root_cause"]["rank"], 1);
    let peer = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rank"] == 0 && f["category"] == "nccl-network")
        .expect("rank 0's connection error");
    assert_eq!(peer["explained_by"], "python-exception");
}

/// Single-process runs whose metric lines tell what went wrong: (directory
/// under fixtures/metrics, root-cause category, rule).
const METRIC_TRENDS: &[(&str, &str, &str)] = &[
    ("leak_visible", "gpu-memory-leak", "trend-gpu-memory-leak"),
    ("loss_scale_collapse", "nan-inf-loss", "trend-non-finite"),
    ("loss_scale_collapse_hf", "nan-inf-loss", "trend-non-finite"),
];

#[test]
fn metric_trends_name_the_cause() {
    for &(case, category, rule) in METRIC_TRENDS {
        let (report, code) = analyze_json(&[&format!("fixtures/metrics/{case}/train.log")]);
        let root = &report["root_cause"];
        assert_eq!(root["category"], category, "{case}");
        assert_eq!(root["rule"], rule, "{case}");
        assert_eq!(code, 1, "{case}");
    }
}

/// The leak is found from the memory printed every step, and the OOM that
/// ends the run is its consequence.
#[test]
fn a_visible_leak_explains_the_oom_that_ends_the_run() {
    let (report, _) = analyze_json(&["fixtures/metrics/leak_visible/train.log"]);
    let root = &report["root_cause"];
    let summary = root["summary"].as_str().unwrap();
    assert!(
        summary.contains("16.0 MiB per step over 417 steps"),
        "{summary}"
    );
    let oom = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["category"] == "gpu-oom")
        .expect("the OOM at the end");
    assert_eq!(oom["role"], "symptom");
    assert_eq!(oom["explained_by"], "trend-gpu-memory-leak");
    // The evidence is the log line of the last sample before the OOM.
    assert_eq!(report["findings"][0]["first_seen"]["line"], 418);
}

#[test]
fn a_collapsing_loss_scale_is_found() {
    let (report, _) = analyze_json(&["fixtures/metrics/loss_scale_collapse/train.log"]);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(rules.contains(&"trend-loss-scale-collapse"), "{rules:?}");
}

/// Healthy runs and a leak too small to show in the printed numbers: no
/// trend is claimed.
#[test]
fn steady_metrics_claim_no_trend() {
    for case in [
        "fixtures/metrics/healthy_metrics/train.log",
        "fixtures/metrics/healthy_hf/train.log",
        "fixtures/metrics/loss_scale_stable/train.log",
        "fixtures/real-gpu/logs/leak.log",
    ] {
        let (report, code) = analyze_json(&[case]);
        assert_eq!(report["root_cause"]["category"], "unknown", "{case}");
        assert_eq!(code, 0, "{case}");
    }
}

/// Both ranks slow down at step 31: a warning on each rank, never a root
/// cause.
#[test]
fn a_throughput_collapse_is_a_warning_per_rank() {
    let (report, _) = analyze_json(&[&multi_gpu("throughput_collapse")]);
    assert_eq!(report["root_cause"]["category"], "unknown");
    let ranks: std::collections::BTreeSet<u64> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "trend-throughput-collapse")
        .filter_map(|f| f["rank"].as_u64())
        .collect();
    assert_eq!(ranks, [0, 1].into());
}

/// The kernel log names the GPU by PCI address; rank 1's NCCL communicator
/// says its device sits there: the Xid belongs to rank 1.
#[test]
fn an_xid_is_tied_to_the_rank_on_that_gpu() {
    let (report, _) = analyze_json(&[&multi_gpu("xid_rank")]);
    assert_eq!(report["root_cause"]["rank"], 1);
    let xid = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "xid-illegal-memory-access")
        .expect("the Xid from dmesg");
    assert_eq!(xid["captures"]["gpu"], "PCI:0000:00:07");
    assert_eq!(xid["rank"], 1);
}

/// After a device-side assert the CUDA context is broken and the next
/// matmul fails in cuBLAS: the assert is the cause, the cuBLAS error its
/// echo. The assertion lines are the real ones of assert_index.log; the
/// cuBLAS line is PyTorch's message for a failed `cublasSgemm`.
#[test]
fn a_cublas_error_after_an_assert_is_its_echo() {
    let assert =
        std::fs::read_to_string(crate::util::root().join(fixture("logs/assert_index.log")))
            .unwrap();
    let mut log: String = assert.lines().take(5).map(|l| format!("{l}\n")).collect();
    log.push_str("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n");
    let scratch = crate::util::Scratch::new("assert-cublas");
    let path = scratch.path("train.log");
    std::fs::write(&path, log).unwrap();
    let (report, _) = analyze_json(&[path.to_str().unwrap()]);
    assert_eq!(report["root_cause"]["category"], "device-side-assert");
    let cublas = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["category"] == "cublas-error")
        .expect("the cuBLAS error");
    assert_eq!(cublas["role"], "symptom");
}

/// Real compute-sanitizer reports: (file under fixtures/sanitizer,
/// root-cause category, rule).
#[test]
fn compute_sanitizer_reports_name_the_access() {
    for (file, category, rule) in [
        (
            "illegal.memcheck.txt",
            "illegal-memory-access",
            "sanitizer-invalid-access",
        ),
        (
            "misaligned.memcheck.txt",
            "illegal-memory-access",
            "sanitizer-invalid-access",
        ),
        (
            "assert.memcheck.txt",
            "device-side-assert",
            "cuda-kernel-assertion-failed",
        ),
    ] {
        let (report, _) = analyze_json(&[&format!("fixtures/sanitizer/{file}")]);
        assert_eq!(report["root_cause"]["category"], category, "{file}");
        assert_eq!(report["root_cause"]["rule"], rule, "{file}");
    }
    let (report, _) = analyze_json(&["fixtures/sanitizer/illegal.memcheck.txt"]);
    let captures = &report["findings"][0]["captures"];
    assert_eq!(captures["thread"], "57,0,0");
    assert_eq!(captures["block"], "23,0,0");
    assert_eq!(captures["problem"], "out of bounds");
}

/// A Python exception carries the frame it was raised in, read from the
/// traceback line just before it, and never from another rank's
/// interleaved output.
#[test]
fn a_python_exception_knows_where_it_was_raised() {
    let (report, _) = analyze_json(&[&multi_gpu("raise")]);
    let captures = &report["findings"][0]["captures"];
    assert_eq!(captures["exception"], "ValueError");
    assert!(captures["raised_file"]
        .as_str()
        .unwrap()
        .ends_with("incident.py"));
    assert_eq!(captures["raised_line"], "41");

    let scratch = crate::util::Scratch::new("interleaved-traceback");
    let path = scratch.path("console.log");
    std::fs::write(
        &path,
        "[rank1]: Traceback (most recent call last):\n\
         [rank0]:   File \"/job/other.py\", line 7, in step\n\
         [rank0]:     loss = model(batch)\n\
         [rank1]: ValueError: bad batch\n",
    )
    .unwrap();
    let (report, _) = analyze_json(&[path.to_str().unwrap()]);
    let captures = &report["findings"][0]["captures"];
    assert_eq!(captures["exception"], "ValueError");
    assert!(captures.get("raised_file").is_none(), "{captures}");
}

/// The findings of a report as (rule, category, severity, role, input).
fn data_loading_findings(
    report: &serde_json::Value,
) -> Vec<(String, String, String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "data-loading-bottleneck")
        .map(|f| {
            let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_owned();
            (
                s(&f["rule"]),
                s(&f["category"]),
                s(&f["severity"]),
                s(&f["role"]),
                s(&f["first_seen"]["input"]),
            )
        })
        .collect()
}

/// A DataLoader that needs 0.268 s of each 0.271 s step and the
/// nvidia-smi series recorded beside it (0 to 1 % utilisation): one warning
/// from each, and no root cause, since nothing crashed.
#[test]
fn a_data_loading_bottleneck_is_two_warnings_and_no_root_cause() {
    let (report, code) = analyze_json(&["fixtures/metrics/dataloader_bottleneck/"]);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "unknown", "{root}");
    assert!(root["rule"].is_null(), "{root}");
    assert!(root["severity"].is_null(), "{root}");
    assert_eq!(code, 0);
    let csv = report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["path"] == "fixtures/metrics/dataloader_bottleneck/gpu_util.csv")
        .expect("the nvidia-smi series is an input");
    assert_eq!(csv["kind"], "nvidia-smi");
    let mut found = data_loading_findings(&report);
    found.sort();
    let want = |rule: &str, file: &str| {
        (
            rule.to_owned(),
            "data-loading-bottleneck".to_owned(),
            "warning".to_owned(),
            "context".to_owned(),
            format!("fixtures/metrics/dataloader_bottleneck/{file}"),
        )
    };
    assert_eq!(
        found,
        vec![
            want("trend-data-wait", "train.log"),
            want("trend-gpu-idle", "gpu_util.csv"),
        ]
    );
    for f in report["findings"].as_array().unwrap() {
        assert_eq!(f["severity"], "warning", "{f}");
    }
    let wait = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "trend-data-wait")
        .unwrap();
    assert_eq!(wait["captures"]["share"], "99");
    assert_eq!(wait["first_seen"]["line"], 121);
}

/// The GPU-bound counterpart (data time 0.006 s of 0.305 s, 93 to 100 %
/// utilisation): neither finding.
#[test]
fn a_gpu_bound_run_has_no_data_loading_finding() {
    let (report, code) = analyze_json(&["fixtures/metrics/gpu_bound/"]);
    assert_eq!(report["root_cause"]["category"], "unknown");
    assert_eq!(code, 0);
    assert_eq!(data_loading_findings(&report), vec![]);
}

/// Two processes on one H200: one holds 130 GiB, the other runs out of
/// memory on a 1.12 GiB request while using 8.63 GiB itself.
#[test]
fn an_oom_caused_by_another_process_is_contention() {
    let (report, code) = analyze_json(&["fixtures/multi-gpu/contention"]);
    assert_eq!(code, 1);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "gpu-contention");
    assert_eq!(root["rule"], "torch-cuda-oom-other-process");
    let summary = root["summary"].as_str().unwrap();
    assert!(summary.contains("process 446 has 130.51 GiB"), "{summary}");
    // The plain OOM reading of the same line is superseded.
    assert!(!report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "torch-cuda-out-of-memory"));
}

/// PyTorch's out-of-memory message under the cudaMallocAsync allocator
/// (several lines, no "CUDA out of memory"), real on an H200.
#[test]
fn the_cuda_malloc_async_oom_message_is_read() {
    for (log, rule, requested) in [
        ("oom_async_filled.log", "torch-cuda-oom-async", "4.00 GiB"),
        (
            "oom_async_larger_than_gpu.log",
            "torch-cuda-oom-async-larger-than-gpu",
            "200.00 GiB",
        ),
    ] {
        let (report, code) = analyze_json(&[&format!("fixtures/oom-async/{log}")]);
        assert_eq!(code, 1, "{log}");
        let root = &report["root_cause"];
        assert_eq!(root["category"], "gpu-oom", "{log}");
        assert_eq!(root["rule"], rule, "{log}");
        assert_eq!(report["findings"][0]["captures"]["requested"], requested);
        assert_eq!(report["findings"].as_array().unwrap().len(), 1, "{log}");
    }
}

/// Single-GPU failures across frameworks, recorded on an H200
/// (fixtures/README.md, `one-gpu/`): (input, root-cause category, rank).
const ONE_GPU: &[(&str, &str, Option<u64>)] = &[
    ("jax_oom.log", "gpu-oom", None),
    ("jax_nan.log", "nan-inf-loss", None),
    ("jax_bad_shape.log", "python-error", None),
    ("cupy_oom.log", "gpu-oom", None),
    ("triton_smem.log", "launch-failure", None),
    ("triton_illegal.log", "illegal-memory-access", None),
    ("torch_no_gpu.log", "cuda-unavailable", None),
    ("torch_bad_ordinal.log", "invalid-device", None),
    ("torch_device_mismatch.log", "device-mismatch", None),
    ("torch_dtype_mismatch.log", "device-mismatch", None),
    ("lightning_devices.log", "invalid-device", None),
    ("hf_flash_attn.log", "missing-module", None),
    ("cublas_full.log", "gpu-oom", Some(0)),
    ("cudnn_full.log", "gpu-oom", Some(0)),
    ("dataloader_small_shm.log", "shm-exhausted", None),
    ("disk_full.log", "disk-full", None),
    ("permission_denied.log", "permission-denied", None),
    ("host-oom-cgroup", "host-oom", None),
    ("contention", "gpu-contention", None),
    ("cuda_c_sm80_only.log", "no-kernel-image", None),
    ("cuda_c_launch_2048_threads.log", "launch-failure", None),
    ("nccl_net_ib.log", "nccl-config", Some(0)),
    ("torchrun_port_taken.log", "rendezvous-failure", None),
    ("rdzv_one_node_of_two.log", "rendezvous-failure", None),
];

#[test]
fn each_single_gpu_failure_gets_its_root_cause() {
    let wrong = wrong_root_causes(ONE_GPU, |rel| format!("fixtures/one-gpu/{rel}"));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_single_gpu_machine_description_is_healthy() {
    for rel in ["versions.txt", "nvidia-smi.txt"] {
        let (report, code) = analyze_json(&[&format!("fixtures/one-gpu/{rel}")]);
        assert_eq!(report["root_cause"]["category"], "unknown", "{rel}");
        assert_eq!(code, 0, "{rel}");
    }
}

/// A DataLoader worker killed by SIGKILL, with no kernel log: the OOM
/// killer is the usual sender, but this worker killed itself, and nothing
/// in the log tells the two apart.
#[test]
fn a_killed_worker_without_a_kernel_log_is_not_a_confident_host_oom() {
    let (report, code) = analyze_json(&["fixtures/one-gpu/dl_killed.log"]);
    assert_eq!(code, 1);
    let root = &report["root_cause"];
    assert_ne!(root["confidence"], "high", "{root}");
}

/// Over gloo, the rank that times out is the one that waited: rank 0
/// reports the timeout of the all_reduce rank 1 never reached. Only rank
/// 1's own `stuck` line says which rank stalled, so the rank is not
/// checked: coroner names rank 0, the one that reported.
#[test]
fn a_gloo_timeout_is_a_collective_timeout() {
    let (report, code) = analyze_json(&["fixtures/one-gpu/gloo_rank1_stuck.log"]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "collective-timeout");
}

/// The first exception of a chain (`basic_ios::clear: iostream error`)
/// names no cause; the writer's check raised while handling it (`unexpected
/// pos`) does: the full disk is the root cause, not a Python error.
#[test]
fn a_bare_exception_does_not_explain_the_specific_one_raised_while_handling_it() {
    let (report, _) = analyze_json(&["fixtures/one-gpu/disk_full.log"]);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "disk-full");
    assert_eq!(root["rule"], "disk-full");
    let explained = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["category"] == "disk-full")
        .all(|f| f["explained_by"].is_null());
    assert!(explained, "{report}");
}
