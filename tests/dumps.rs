//! Hangs and PyTorch's own dumps: the rank that stopped, read from stack
//! dumps in console logs and per-rank files (fixtures/dumps/, made on an
//! H200 by fixtures/dumps/probe/).

use crate::util::analyze_json;

fn root(paths: &[&str]) -> serde_json::Value {
    analyze_json(paths).0["root_cause"].clone()
}

#[test]
fn a_rank_stuck_outside_the_collectives_is_named_from_the_console() {
    for (case, rank, frame) in [
        ("gloo4", 3, "load_shard (gloo_hang.py:23)"),
        ("gloo8", 5, "wait_for_file (gloo_hang.py:28)"),
    ] {
        let root = root(&[&format!("fixtures/dumps/{case}/console.log")]);
        assert_eq!(root["category"], "collective-timeout", "{case}: {root}");
        assert_eq!(root["rank"], rank, "{case}: {root}");
        assert_eq!(root["rule"], "stack-main-thread-waits", "{case}: {root}");
        let summary = root["summary"].as_str().unwrap();
        assert!(summary.contains(frame), "{case}: {summary}");
    }
}

#[test]
fn a_rank_stuck_outside_the_collectives_is_named_from_per_rank_files() {
    for (case, rank) in [("gloo4", 3), ("gloo8", 5)] {
        let root = root(&[&format!("fixtures/dumps/{case}/logs")]);
        assert_eq!(root["category"], "collective-timeout", "{case}: {root}");
        assert_eq!(root["rank"], rank, "{case}: {root}");
    }
}

#[test]
fn torchruns_first_exit_does_not_name_the_culprit() {
    // torchrun's summary names rank 0 as the first failure of gloo8: the
    // first rank whose collective timed out, not the one that stopped.
    let console = std::fs::read_to_string("fixtures/dumps/gloo8/console.log").unwrap();
    assert!(console.contains("Root Cause (first observed failure):\n[0]:"));
    assert_eq!(root(&["fixtures/dumps/gloo8/console.log"])["rank"], 5);
}

#[test]
fn a_faulthandler_dump_of_a_hung_process_names_the_waiting_frame() {
    for path in [
        "fixtures/dumps/fh/fh_hang.log",
        "fixtures/dumps/fh/pyspy.txt",
    ] {
        let root = root(&[path]);
        assert_eq!(root["category"], "hang", "{path}: {root}");
        let summary = root["summary"].as_str().unwrap();
        assert!(
            summary.contains("load_shard (fh_hang.py:10)"),
            "{path}: {summary}"
        );
        assert!(summary.contains("get (queue.py:171)"), "{path}: {summary}");
    }
}

#[test]
fn dumps_taken_before_the_stall_name_no_rank() {
    // Every rank sleeping at the same line: nothing tells them apart, so
    // the stack dumps add only a fact, and the answer rests on the logs.
    let text = concat!(
        "[default0]:Current thread 0x00007f4d56730140 (most recent call first):\n",
        "[default0]:  File \"/srv/train.py\", line 82 in main\n",
        "[default1]:Current thread 0x00007fb802f77140 (most recent call first):\n",
        "[default1]:  File \"/srv/train.py\", line 82 in main\n",
        "[default2]:Current thread 0x00007ff872a77140 (most recent call first):\n",
        "[default2]:  File \"/srv/train.py\", line 82 in main\n",
    );
    let scratch = crate::util::Scratch::new("alike");
    std::fs::write(scratch.path("console.log"), text).unwrap();
    let (report, code) = analyze_json(&[&scratch.display("console.log")]);
    assert_eq!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 0);
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "stack-ranks-alike"));
}

fn finding_rules(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_two_rank_stalls_dumps_alone_name_rank_1() {
    let (report, code) = analyze_json(&[
        "fixtures/multi-gpu/stall/fr_trace_rank_0",
        "fixtures/multi-gpu/stall/fr_trace_rank_1",
    ]);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "collective-timeout", "{root}");
    assert_eq!(root["rule"], "fr-rank-never-issued", "{root}");
    assert_eq!(root["rank"], 1, "{root}");
    let summary = root["summary"].as_str().unwrap();
    // What PyTorch's analyzer prints for the same dumps (fixtures/README.md):
    // `Not all ranks joining collective, sequence number: 20` with
    // `missing ranks: {1}`.
    assert!(
        summary.contains("collective 20 (nccl:all_reduce)"),
        "{summary}"
    );
    assert!(summary.contains("<module> (incident.py:50)"), "{summary}");
    assert_eq!(code, 1);
    for input in report["inputs"].as_array().unwrap() {
        assert_eq!(input["kind"], "flight-recorder", "{input}");
    }
}

#[test]
fn dumps_and_logs_of_the_stall_are_one_incident_that_agrees() {
    let root = root(&["fixtures/multi-gpu/stall"]);
    assert_eq!(root["rank"], 1, "{root}");
    assert_eq!(root["rule"], "fr-rank-never-issued", "{root}");
    let summary = root["summary"].as_str().unwrap();
    assert!(summary.contains("The watchdogs' counts agree"), "{summary}");
    assert!(root["explains"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "nccl-watchdog-timeout"));
}

#[test]
fn a_missing_dump_is_named_as_what_the_recorder_cannot_see() {
    let (report, _) = analyze_json(&["fixtures/multi-gpu/stall/fr_trace_rank_0"]);
    let root = &report["root_cause"];
    assert_eq!(root["rule"], "fr-collective-stuck", "{root}");
    let summary = root["summary"].as_str().unwrap();
    assert!(summary.contains("no dumps from rank 1"), "{summary}");
}

#[test]
fn the_json_form_of_a_dump_is_read_like_the_pickle() {
    for path in [
        "fixtures/dumps/nccl/fr_trace_json_rank_0",
        "fixtures/dumps/nccl/fr_trace_rank_0",
    ] {
        let (report, _) = analyze_json(&[path]);
        let root = &report["root_cause"];
        assert_eq!(root["rule"], "fr-collective-stuck", "{path}: {root}");
        assert!(root["summary"]
            .as_str()
            .unwrap()
            .contains("collective 4 (nccl:all_reduce) of process group 0 (default_pg)"));
        assert_eq!(report["inputs"][0]["kind"], "flight-recorder");
    }
}

#[test]
fn an_empty_flight_recorder_says_so_and_nothing_else() {
    let (report, code) = analyze_json(&["fixtures/dumps/gloo-empty-fr"]);
    assert_eq!(report["root_cause"]["category"], "unknown", "{report}");
    assert_eq!(code, 0);
    for input in report["inputs"].as_array().unwrap() {
        assert_eq!(input["kind"], "flight-recorder", "{input}");
        assert!(
            input["errors"].as_array().is_none_or(|e| e.is_empty()),
            "{input}"
        );
    }
}

#[test]
fn a_fragmentation_snapshot_alone_says_fragmentation_with_the_numbers() {
    for path in [
        "fixtures/dumps/memory/frag_oom.pickle",
        "fixtures/dumps/memory/frag_oom_cpp.pickle",
    ] {
        let (report, _) = analyze_json(&[path]);
        let root = &report["root_cause"];
        assert_eq!(root["category"], "gpu-oom-fragmentation", "{path}: {root}");
        let summary = root["summary"].as_str().unwrap();
        for number in ["2.50 GiB", "3.07 GiB", "144.0 MiB", "151 free blocks"] {
            assert!(summary.contains(number), "{path}: {summary}");
        }
        assert_eq!(report["inputs"][0]["kind"], "memory-snapshot");
    }
}

#[test]
fn a_leak_snapshot_alone_names_the_frame_and_the_growth() {
    for (path, blocks) in [
        ("fixtures/dumps/memory/leak.pickle", "30 live blocks"),
        (
            "fixtures/dumps/memory/leak_expandable.pickle",
            "live blocks of 16.0 MiB",
        ),
        ("fixtures/dumps/memory/leak_ring.pickle", "40 live blocks"),
        ("fixtures/dumps/memory/leak_oom.pickle", "176 live blocks"),
    ] {
        let root = root(&[path]);
        assert_eq!(root["category"], "gpu-memory-leak", "{path}: {root}");
        let summary = root["summary"].as_str().unwrap();
        assert!(
            summary.contains("main (leak_snapshot.py:38)"),
            "{path}: {summary}"
        );
        assert!(summary.contains(blocks), "{path}: {summary}");
        assert!(
            summary.contains("growing by 16.0 MiB each time"),
            "{path}: {summary}"
        );
    }
}

#[test]
fn a_snapshot_beside_its_oom_log_says_why_the_log_failed() {
    let (report, _) = analyze_json(&[
        "fixtures/dumps/memory/frag_oom.log",
        "fixtures/dumps/memory/frag_oom.pickle",
    ]);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "gpu-oom-fragmentation", "{root}");
    assert_eq!(root["rule"], "snapshot-fragmentation");
    let explained: Vec<&str> = root["explains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(!explained.is_empty(), "{root}");
    // The log alone says as much: the request fitted in the cache's unused
    // part, not in one piece of it, under the process's cap.
    let (report, _) = analyze_json(&["fixtures/dumps/memory/frag_oom.log"]);
    assert_eq!(report["root_cause"]["category"], "gpu-oom-fragmentation");
    assert_eq!(
        report["root_cause"]["rule"],
        "torch-cuda-oom-fragmentation-at-limit"
    );
    let (report, _) = analyze_json(&[
        "fixtures/dumps/memory/leak_oom.log",
        "fixtures/dumps/memory/leak_oom.pickle",
    ]);
    assert_eq!(report["root_cause"]["category"], "gpu-memory-leak");
    assert!(finding_rules(&report).iter().any(|r| r == "snapshot-oom"));
}
