//! Findings about one process joined by its pid: the kernel's OOM kill,
//! torchrun's report of the same death, NCCL's pid of each rank.

use crate::util::analyze_json;

const CASE: &str = "fixtures/multi-gpu/host_oom_rank";

#[test]
fn the_kernels_oom_kill_is_the_cause_and_the_launchers_reports_its_echoes() {
    let (report, code) = analyze_json(&[CASE]);
    assert_eq!(code, 1);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "host-oom");
    assert_eq!(root["rule"], "kernel-oom-kill-constraint");
    assert_eq!(root["rank"], 1);
    assert_eq!(root["evidence"][0]["input"], format!("{CASE}/dmesg.txt"));
    let explains: Vec<&str> = root["explains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for echo in ["torchrun-root-cause-sigkill", "process-oom-killed"] {
        assert!(explains.contains(&echo), "{echo} not in {explains:?}");
    }
    // torchrun's two accounts of the death (its worker line and its Root
    // Cause block, both naming pid 641) are one finding with both lines,
    // and the kernel's record makes the reading certain.
    assert!(
        !explains.contains(&"torchrun-worker-sigkill"),
        "{explains:?}"
    );
    let block = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "torchrun-root-cause-sigkill")
        .unwrap();
    let texts: Vec<&str> = block["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("failed (exitcode: -9) local_rank: 1")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Root Cause (first observed failure)")),
        "{texts:?}"
    );
    assert_eq!(root["confidence"], "high");
}

#[test]
fn nccls_init_lines_give_the_killed_pid_its_rank() {
    // Without torchrun's summary, only the rank's own NCCL lines
    // (`vm:641:641 [1] NCCL INFO ... rank 1 nranks 2 ...`) know pid 641.
    let logs = format!("{CASE}/logs");
    let dmesg = format!("{CASE}/dmesg.txt");
    let (report, _) = analyze_json(&[&dmesg, &logs]);
    assert_eq!(report["root_cause"]["rule"], "kernel-oom-kill-constraint");
    assert_eq!(report["root_cause"]["rank"], 1);
    let (alone, _) = analyze_json(&[&dmesg]);
    assert_eq!(alone["root_cause"]["category"], "host-oom");
    assert!(alone["root_cause"]["rank"].is_null());
}
