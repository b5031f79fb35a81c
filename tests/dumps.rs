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
