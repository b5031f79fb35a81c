//! Versions compared across an incident's inputs: the CUDA version a
//! framework was built for against what the NVIDIA driver supports.

use crate::util::analyze_json;

fn rules_of(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_build_for_a_newer_cuda_major_than_the_driver_is_the_cause() {
    let (report, code) = analyze_json(&["fixtures/env/driver-too-old"]);
    assert_eq!(code, 1);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "driver-too-old");
    assert_eq!(root["rule"], "env-driver-too-old-for-build");
    let summary = root["summary"].as_str().unwrap();
    assert!(
        summary.contains("PyTorch 2.11.0 is built for CUDA 13.0"),
        "{summary}"
    );
    // The driver's version is looked up in NVIDIA's table: 470.82.01 → 11.4.
    assert!(
        summary.contains("470.82.01 supports CUDA only up to 11.4"),
        "{summary}"
    );
    let lines: Vec<u64> = root["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [3, 20], "the PyTorch and the driver lines");
}

#[test]
fn a_newer_cuda_minor_is_a_warning_only() {
    let (report, code) = analyze_json(&["fixtures/env/driver-older-minor"]);
    assert_eq!(code, 0);
    assert_eq!(report["root_cause"]["category"], "unknown");
    assert_eq!(rules_of(&report), ["env-driver-older-minor"]);
    let message = report["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("CUDA 12.8"), "{message}");
    assert!(message.contains("up to 12.2"), "{message}");
}

#[test]
fn matching_versions_say_nothing() {
    // The healthy H200 machine: nvidia-smi, nvidia-smi -q, collect_env, nvcc
    // (all CUDA 13.0, driver 580.159.04), and NCCL's own lines in a 2-GPU
    // incident.
    for dir in ["fixtures/real-gpu/system", "fixtures/multi-gpu/raise"] {
        let (report, _) = analyze_json(&[dir]);
        let env: Vec<String> = rules_of(&report)
            .into_iter()
            .filter(|r| r.starts_with("env-"))
            .collect();
        assert!(env.is_empty(), "{dir}: {env:?}");
    }
}

/// The same real lines with one number changed: the comparison reads them.
#[test]
fn real_report_lines_are_read_once_a_version_differs() {
    let dir = std::env::temp_dir().join(format!("coroner-versions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // NCCL's own init lines: `cudaDriverVersion 13000` → 12020 (CUDA 12.2)
    // against `NCCL version 2.28.9+cuda13.0`.
    let console = std::fs::read_to_string("fixtures/multi-gpu/raise/console.log").unwrap();
    assert!(console.contains("cudaDriverVersion 13000"));
    std::fs::write(
        dir.join("console.log"),
        console.replace("cudaDriverVersion 13000", "cudaDriverVersion 12020"),
    )
    .unwrap();
    // nvidia-smi's header: CUDA Version 13.0 → 12.2, against nvcc 13.0.
    let smi = std::fs::read_to_string("fixtures/real-gpu/system/nvidia-smi.txt").unwrap();
    std::fs::write(
        dir.join("nvidia-smi.txt"),
        smi.replace("CUDA Version: 13.0", "CUDA Version: 12.2"),
    )
    .unwrap();
    std::fs::copy("fixtures/real-gpu/system/nvcc.txt", dir.join("nvcc.txt")).unwrap();
    let (report, _) = analyze_json(&[dir.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    let found = rules_of(&report);
    assert!(
        found.contains(&"env-driver-too-old-for-build".to_owned()),
        "{found:?}"
    );
    assert!(
        found.contains(&"env-toolkit-newer-than-driver".to_owned()),
        "{found:?}"
    );
    let nccl = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "env-driver-too-old-for-build")
        .unwrap();
    assert!(
        nccl["message"]
            .as_str()
            .unwrap()
            .starts_with("NCCL 2.28.9 is built for CUDA 13.0"),
        "{nccl:#}"
    );
}

/// NCCL's own version line against PyTorch's build, from two real reports;
/// the NCCL line changed from `+cuda13.0` to `+cuda12.8`.
#[test]
fn an_nccl_for_another_cuda_major_than_pytorch_is_a_library_mismatch() {
    let dir = std::env::temp_dir().join(format!("coroner-nccl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        "fixtures/real-gpu/system/collect_env.txt",
        dir.join("collect_env.txt"),
    )
    .unwrap();
    let console = std::fs::read_to_string("fixtures/multi-gpu/raise/console.log").unwrap();
    assert!(console.contains("NCCL version 2.28.9+cuda13.0"));
    let run = |console: &str| {
        std::fs::write(dir.join("console.log"), console).unwrap();
        let (report, _) = analyze_json(&[dir.to_str().unwrap()]);
        rules_of(&report)
    };
    assert!(!run(&console).contains(&"env-nccl-cuda-mismatch".to_owned()));
    let found = run(&console.replace(
        "NCCL version 2.28.9+cuda13.0",
        "NCCL version 2.28.9+cuda12.8",
    ));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        found.contains(&"env-nccl-cuda-mismatch".to_owned()),
        "{found:?}"
    );
}

/// Minor version compatibility needs the major version's oldest compatible
/// driver: a 450.51 driver supports CUDA 11.0, whose own minimum it meets,
/// but not an 11.1 build (450.80.02 and later do). The same real report
/// with PyTorch's CUDA tag and the driver's version changed.
#[test]
fn a_newer_minor_on_a_driver_before_minor_compatibility_is_the_cause() {
    let dir = std::env::temp_dir().join(format!("coroner-minor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = std::fs::read_to_string("fixtures/env/driver-older-minor/collect_env.txt")
        .unwrap()
        .replace("2.11.0+cu128", "2.11.0+cu111")
        .replace(
            "CUDA used to build PyTorch: 12.8",
            "CUDA used to build PyTorch: 11.1",
        );
    let run = |driver: &str| {
        let text = report.replace("535.104.05", driver);
        std::fs::write(dir.join("collect_env.txt"), text).unwrap();
        analyze_json(&[dir.to_str().unwrap()]).0
    };
    let before = run("450.51.06");
    let after = run("450.80.02");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(before["root_cause"]["rule"], "env-driver-too-old-for-build");
    let summary = before["root_cause"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("450.51.06 supports CUDA only up to 11.0"),
        "{summary}"
    );
    assert_eq!(rules_of(&after), ["env-driver-older-minor"]);
}
