//! Node, GPU and scheduler evidence: hosts and GPUs on findings, the
//! action a root cause calls for, Xids read per the catalog, scheduler end
//! states and DCGM results.

use crate::util::{analyze_json, run, Scratch};
use serde_json::Value;

fn root(report: &Value) -> &Value {
    &report["root_cause"]
}

fn findings_of<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

/// The real Xid 31 of a two-GPU run: the kernel log names only the GPU's
/// PCI address; NCCL's lines tie it to rank 1 on host `vm`.
#[test]
fn a_kernel_xid_joins_the_rank_and_host_that_used_its_gpu() {
    let (report, _) = analyze_json(&["fixtures/multi-gpu/xid_rank/"]);
    let xid = findings_of(&report, "xid-illegal-memory-access");
    assert_eq!(xid.len(), 1, "{report:#}");
    assert_eq!(xid[0]["rank"], 1);
    assert_eq!(xid[0]["host"], "vm");
    assert_eq!(xid[0]["gpu"], "0000:00:07");
    // torchrun's `host : localhost` names no node.
    for f in report["findings"].as_array().unwrap() {
        assert_ne!(f["host"], "localhost", "{f:#}");
    }
    let action = &root(&report)["action"];
    assert_eq!(action["kind"], "fix-code");
    assert_eq!(action["retry"], false);
}

const NODE17_NCCL: &str = "\
gpu-node-17:4121:4121 [0] NCCL INFO comm 0x55d0c1e0 rank 3 nranks 8 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x8d1f - Init COMPLETE
gpu-node-17:4121:4121 [0] NCCL INFO comm 0x55d0c9a0 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x77aa - Init COMPLETE
";
const NODE18_NCCL: &str = "\
gpu-node-18:5120:5120 [0] NCCL INFO comm 0x56a1d2f0 rank 4 nranks 8 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x8d1f - Init COMPLETE
[rank4]:[E1201 03:12:58.104203731 ProcessGroupNCCL.cpp:632] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=918, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.
";
const NODE17_KERNEL: &str = "\
Dec  1 03:02:51 gpu-node-17 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=4121, name=python3, GPU has fallen off the bus.
Dec  1 03:02:51 gpu-node-17 kernel: NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.
";

/// Two nodes, one GPU address each: the Xid 79 in node 17's kernel log is
/// rank 3's (the world communicator's rank on that host and bus, not the
/// 2-rank group's), and the action drains that node only.
#[test]
fn an_xid_79_on_one_node_drains_that_node() {
    let dir = Scratch::new("two-nodes");
    std::fs::create_dir_all(dir.path("gpu-node-17")).unwrap();
    std::fs::create_dir_all(dir.path("gpu-node-18")).unwrap();
    std::fs::write(dir.path("gpu-node-17/train.log"), NODE17_NCCL).unwrap();
    std::fs::write(dir.path("gpu-node-18/train.log"), NODE18_NCCL).unwrap();
    std::fs::write(dir.path("gpu-node-17/kern.log"), NODE17_KERNEL).unwrap();
    // dmesg without host fields: the directory names the node.
    std::fs::write(
        dir.path("gpu-node-18/dmesg.txt"),
        "[ 5512.804112] nvidia 0000:1b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n",
    )
    .unwrap();
    let (report, code) = analyze_json(&[&dir.display("")]);
    assert_eq!(code, 1);
    let corrected = findings_of(&report, "kernel-gpu-pcie-aer-corrected");
    assert_eq!(corrected[0]["host"], "gpu-node-18", "{report:#}");
    let root = root(&report);
    assert_eq!(root["category"], "xid-hardware", "{report:#}");
    assert_eq!(root["rank"], 3);
    assert_eq!(root["host"], "gpu-node-17");
    assert_eq!(root["gpu"], "0000:1b:00");
    let action = &root["action"];
    assert!(
        action["kind"] == "reboot-node" || action["kind"] == "drain-node",
        "{action}"
    );
    assert_eq!(action["hosts"], serde_json::json!(["gpu-node-17"]));
    assert_eq!(action["retry"], true);
    let human = run(&["analyze", "--format", "human", &dir.display("")], None);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("on rank 3 (gpu-node-17)") && text.contains("gpu-node-17 and resubmit"),
        "{text}"
    );
}

#[test]
fn xids_on_two_gpus_are_two_findings_and_nonfatal_nvlink_is_a_warning() {
    let dir = Scratch::new("xids");
    std::fs::write(
        dir.path("dmesg.txt"),
        "\
[ 812.1] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus.
[ 812.2] NVRM: Xid (PCI:0000:3d:00): 79, pid=2, name=python3, GPU has fallen off the bus.
[ 812.3] NVRM: Xid (PCI:0000:3d:00): 79, pid=2, name=python3, GPU has fallen off the bus.
[ 813.0] NVRM: Xid (PCI:0010:01:00): 145, RLW_REMAP  Nonfatal XC1 i0 Link 11 (0x00000201 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)
[ 814.0] NVRM: Xid (PCI:0000:5e:00): 203, pid=3, name=python3, Ch 00000008
[ 815.0] NVRM: Xid (PCI:0000:5e:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)
",
    )
    .unwrap();
    let (report, _) = analyze_json(&[&dir.display("dmesg.txt")]);
    let fallen = findings_of(&report, "xid-hardware-critical-reboot-node");
    assert_eq!(fallen.len(), 2, "{report:#}");
    let counts: Vec<u64> = fallen
        .iter()
        .map(|f| f["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [1, 2]);
    let nonfatal = findings_of(&report, "xid-nvlink5-nonfatal");
    assert_eq!(nonfatal[0]["severity"], "warning");
    assert_eq!(nonfatal[0]["captures"]["link"], "11");
    let unknown = findings_of(&report, "xid-uncatalogued");
    assert_eq!(unknown[0]["captures"]["xid"], "203");
    assert_eq!(unknown[0]["action"], "drain-node");
    let reset = findings_of(&report, "xid-154-reset-gpu");
    assert_eq!(reset[0]["action"], "reset-gpu");
    assert_eq!(reset[0]["gpu"], "0000:5e:00");
}

/// Scheduler end states, as Slurm, PBS and Kubernetes print them.
#[test]
fn scheduler_end_states_name_their_category() {
    let cases = [
        (
            "slurmstepd: error: *** JOB 4242 ON gpu-node-03 CANCELLED AT 2026-11-30T10:00:00 DUE TO TIME LIMIT ***",
            "time-limit",
        ),
        (
            "slurmstepd: error: *** JOB 4242 ON gpu-node-03 CANCELLED AT 2026-11-30T10:00:00 DUE TO PREEMPTION ***",
            "preempted",
        ),
        (
            "slurmstepd: error: *** JOB 4242 ON gpu-node-03 CANCELLED AT 2026-11-30T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            "node-failure",
        ),
        ("srun: error: gpu-node-17: task 3: Out Of Memory", "host-oom"),
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of your processes may have been killed by the cgroup out-of-memory handler.",
            "host-oom",
        ),
        (
            "       JobID    JobName      State ExitCode\n------------ ---------- ---------- --------\n        4242   train.sh    TIMEOUT      0:0\n",
            "time-limit",
        ),
        ("4242|train.sh|gpu|NODE_FAIL|0:0|", "node-failure"),
        ("        4242   train.sh OUT_OF_ME+    0:125", "host-oom"),
        ("=>> PBS: job killed: walltime 7236 exceeded limit 7200", "time-limit"),
        (
            "  Warning  DeadlineExceeded  2m  job-controller  Job was active longer than specified deadline",
            "time-limit",
        ),
    ];
    for (text, category) in cases {
        let out = run(&["analyze", "--format", "json", "-"], Some(text.as_bytes()));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(root(&report)["category"], category, "{text}");
    }
    let out = run(
        &["analyze", "--format", "json", "-"],
        Some(b"srun: error: gpu-node-17: task 3: Out Of Memory\n"),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(root(&report)["host"], "gpu-node-17");
    assert_eq!(root(&report)["action"]["retry"], false);
}

/// A hang is why the job ran into its time limit: the limit is its
/// consequence.
#[test]
fn a_time_limit_after_a_hang_is_the_hang_s_consequence() {
    let dir = Scratch::new("hang-limit");
    std::fs::write(
        dir.path("slurm.out"),
        "slurmstepd: error: *** JOB 91 ON n3 CANCELLED AT 2026-11-30T10:00:00 DUE TO TIME LIMIT ***\n",
    )
    .unwrap();
    let (report, _) = analyze_json(&["fixtures/dumps/fh/fh_hang.log", &dir.display("slurm.out")]);
    assert_eq!(root(&report)["category"], "hang", "{report:#}");
    let limit = findings_of(&report, "slurm-cancelled-time-limit");
    assert!(limit[0]["explained_by"].is_string(), "{report:#}");
}

#[test]
fn dcgm_failures_are_findings_on_their_gpu() {
    let text = "\
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPU: 1                                  |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 Error using CUDA API cuCtxCreate         |
";
    let out = run(&["analyze", "--format", "json", "-"], Some(text.as_bytes()));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = findings_of(&report, "dcgm-diag-test-failed");
    assert_eq!(failed.len(), 1, "{report:#}");
    assert_eq!(failed[0]["gpu"], "GPU 0");
    assert_eq!(root(&report)["action"]["kind"], "drain-node");
    // DCGM 4 prints one row per GPU under the test's overall result.
    let text = "\
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
|                           | GPU3: Fail                                     |
";
    let out = run(&["analyze", "--format", "json", "-"], Some(text.as_bytes()));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpus: Vec<&Value> = findings_of(&report, "dcgm-diag-test-failed")
        .iter()
        .map(|f| &f["gpu"])
        .collect();
    assert_eq!(gpus, [&Value::from("GPU 1"), &Value::from("GPU 3")]);
}

/// Every code of the checked-in catalog is explained, with its buckets,
/// in text and JSON; the catalog's table and the explanations agree both
/// ways (a code the table lacks is refused when the tables load).
#[test]
fn every_catalogued_xid_is_explained_with_its_buckets() {
    let catalog =
        std::fs::read_to_string(crate::util::root().join("knowledge/xid-catalog.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = catalog
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    assert!(rows.len() >= 170);
    let knowledge = coroner_knowledge::Knowledge::builtin().unwrap();
    let explained: Vec<i64> = knowledge
        .of_kind(coroner_knowledge::EntryKind::Xid)
        .filter_map(|e| e.code)
        .collect();
    let listed: Vec<i64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(explained, listed);
    for row in &rows {
        let entry = knowledge
            .of_kind(coroner_knowledge::EntryKind::Xid)
            .find(|e| e.code == row[0].parse().ok())
            .unwrap();
        let immediate: Vec<&str> = row[2].split(',').filter(|b| !b.is_empty()).collect();
        assert_eq!(entry.immediate, immediate, "Xid {}", row[0]);
    }
    let out = run(&["explain", "xid 79"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("RESTART_BM") && text.contains("For the job: reboot-node"),
        "{text}"
    );
    let out = run(&["explain", "--format", "json", "xid 171"], None);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["entries"][0]["action"], "drain-node");
}

#[test]
fn the_jsonl_verdict_carries_the_action() {
    let out = run(
        &["analyze", "--format", "jsonl", "-"],
        Some(b"Dec  1 03:02:51 gpu-node-17 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=4121, name=python3, GPU has fallen off the bus.\n"),
    );
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let verdict: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(verdict["type"], "verdict");
    assert_eq!(
        verdict["root_cause"]["action"],
        serde_json::json!({"kind": "reboot-node", "hosts": ["gpu-node-17"], "retry": true})
    );
}
