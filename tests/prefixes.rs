//! Lines as log collectors and launchers pass them on: a real log with a
//! Kubernetes time, a pod's name or a Slurm task label in front of every
//! line reads as the plain log does.

use crate::util::{analyze_json, fixture};

/// `fixture` with `prefix(i)` in front of line `i`, analysed.
fn analyze_prefixed(name: &str, prefix: impl Fn(usize) -> String) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let prefixed: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{}{l}\n", prefix(i)))
        .collect();
    // Tests run in parallel: each call gets a directory of its own.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "coroner-prefixes-{}-{call}-{}",
        std::process::id(),
        name.replace('/', "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("job.log");
    std::fs::write(&path, prefixed).unwrap();
    let (report, _) = analyze_json(&[path.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    report
}

fn frames(report: &serde_json::Value) -> Vec<(String, u64)> {
    report["findings"][0]["traceback"]["exceptions"][0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["function"].as_str().unwrap().to_owned(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn kubernetes_times_are_read_and_removed() {
    let (plain, _) = analyze_json(&[&fixture("logs/oom_train.log")]);
    let stamped = analyze_prefixed("logs/oom_train.log", |i| {
        format!("2026-11-29T15:16:{:02}.{:09}Z ", i % 60, i * 1000)
    });
    assert_eq!(stamped["root_cause"]["rule"], plain["root_cause"]["rule"]);
    assert_eq!(frames(&stamped), frames(&plain));
    assert!(!frames(&plain).is_empty());
    let time = stamped["findings"][0]["first_seen"]["time"]
        .as_str()
        .unwrap();
    assert!(time.starts_with("2026-11-29T15:16:"), "{time}");
}

#[test]
fn a_slurm_task_label_names_the_rank() {
    let report = analyze_prefixed("logs/oom_train.log", |_| "3: ".to_owned());
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    assert_eq!(report["root_cause"]["rank"], 3);
    assert!(frames(&report).contains(&("forward".to_owned(), 8)));
}

/// `kubectl logs --prefix` names each line's pod and container: the
/// out-of-memory error and its traceback read as without it.
#[test]
fn kubectl_pod_prefixes_are_removed() {
    let (plain, _) = analyze_json(&[&fixture("logs/oom_train.log")]);
    let prefixed = analyze_prefixed("logs/oom_train.log", |_| {
        "[pod/llm-pretrain-worker-0/pytorch] ".to_owned()
    });
    assert_eq!(prefixed["root_cause"]["rule"], plain["root_cause"]["rule"]);
    assert_eq!(frames(&prefixed), frames(&plain));
    assert!(!frames(&plain).is_empty());
}
