//! The collector on the repository's real training logs, fed as the
//! analysis pipeline feeds it: one line at a time, trailing CR and
//! rank prefixes removed by `coroner_logs::strip_rank_prefix`, the rank
//! taken from the prefix or else the file's path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use coroner_logs::strip_rank_prefix;
use coroner_metrics::{MetricCollector, Trend};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
}

fn feed(collector: &mut MetricCollector, path: &Path, rank: Option<u32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = String::from_utf8_lossy(raw);
        let prefixed = strip_rank_prefix(&text);
        collector.line(
            prefixed.rest.as_bytes(),
            i as u64 + 1,
            prefixed.rank.or(rank),
        );
    }
}

fn trends_of(rel: &str) -> Vec<Trend> {
    let mut collector = MetricCollector::new();
    feed(&mut collector, &fixture(rel), None);
    collector.trends()
}

fn texts(trends: &[Trend]) -> Vec<(Option<u32>, u64, &str)> {
    trends
        .iter()
        .map(|t| (t.rank, t.line, t.text.as_str()))
        .collect()
}

fn one(rel: &str) -> (Option<u32>, u64, String) {
    let trends = trends_of(rel);
    assert_eq!(trends.len(), 1, "{rel}: {trends:#?}");
    let t = &trends[0];
    (t.rank, t.line, t.text.clone())
}

#[test]
fn visible_leak_grows_16_mib_a_step() {
    assert_eq!(
        one("metrics/leak_visible/train.log"),
        (
            None,
            418,
            "trend: memory allocated grows 16.0 MiB per step over 417 steps (R\u{b2} 1.000), from 289.0 MiB at step 1 to 6945.0 MiB at step 417".to_owned()
        )
    );
}

#[test]
fn loss_scale_collapse_and_nan_gradients() {
    assert_eq!(
        texts(&trends_of("metrics/loss_scale_collapse/train.log")),
        vec![
            (
                None,
                1,
                "trend: grad_norm is nan at every step from step 1 to step 200"
            ),
            (
                None,
                166,
                "trend: loss scale falls from 32768 at step 1 to 0 at step 166, halving on 165 of 199 steps"
            ),
        ]
    );
}

#[test]
fn hugging_face_nan_gradients_through_tqdm_residue() {
    // The dictionaries carry no step: the x axis is the metric line's
    // ordinal. Line 2 holds the first dictionary; the summary dictionary
    // (`train_runtime`, `train_loss`) is not a step.
    assert_eq!(
        one("metrics/loss_scale_collapse_hf/train.log"),
        (
            None,
            2,
            "trend: grad_norm is nan at every step from step 1 to step 40".to_owned()
        )
    );
}

#[test]
fn nan_loss_names_the_first_bad_step() {
    assert_eq!(
        one("real-gpu/logs/nan_loss.log"),
        (
            None,
            2,
            "trend: loss is nan from step 3 (last finite 245.75 at step 1, first non-finite inf at step 2)".to_owned()
        )
    );
}

#[test]
fn quiet_logs_have_no_trend() {
    for rel in [
        "metrics/healthy_metrics/train.log",
        "metrics/healthy_hf/train.log",
        "metrics/loss_scale_stable/train.log",
        // The printed allocation stays at 161.0 MiB.
        "real-gpu/logs/leak.log",
        // Six steps of doubling batches before the OOM: too few to call.
        "real-gpu/logs/oom_train.log",
    ] {
        assert_eq!(trends_of(rel), vec![], "{rel}");
    }
}

const COLLAPSE: [&str; 2] = [
    "trend: throughput falls from 251139.6 samples/s (median before step 31) to 1019.6 samples/s from step 31, -99.6%",
    "trend: throughput falls from 255225.5 samples/s (median before step 31) to 1019.6 samples/s from step 31, -99.6%",
];

#[test]
fn throughput_collapse_per_rank_files() {
    // torchrun's `--log-dir` layout: `<run>/attempt_<n>/<local rank>/stdout.log`.
    let dir = fixture("multi-gpu/throughput_collapse/logs/none_z_chsfxh/attempt_0");
    for rank in 0..2u32 {
        let mut collector = MetricCollector::new();
        for file in ["stdout.log", "stderr.log"] {
            feed(
                &mut collector,
                &dir.join(rank.to_string()).join(file),
                Some(rank),
            );
        }
        let trends = collector.trends();
        assert_eq!(trends.len(), 1, "rank {rank}: {trends:#?}");
        assert_eq!(trends[0].rank, Some(rank));
        assert_eq!(trends[0].text, COLLAPSE[rank as usize]);
        // The step-31 line of the rank's own file.
        let text = std::fs::read_to_string(dir.join(rank.to_string()).join("stdout.log")).unwrap();
        let line = text.lines().nth(trends[0].line as usize - 1).unwrap();
        assert!(
            line.starts_with(&format!("[rank{rank}] step 31 |")),
            "{line}"
        );
    }
}

#[test]
fn throughput_collapse_in_the_interleaved_console() {
    let trends = trends_of("multi-gpu/throughput_collapse/console.log");
    assert_eq!(
        texts(&trends),
        vec![(Some(0), 202, COLLAPSE[0]), (Some(1), 203, COLLAPSE[1])]
    );
}

/// A DataLoader whose dataset sleeps 4 ms a sample (num_workers=0): each
/// step waits 0.268 s of its 0.271 s for the batch.
#[test]
fn data_loading_dominates_the_steps() {
    assert_eq!(
        one("metrics/dataloader_bottleneck/train.log"),
        (
            None,
            121,
            "trend: data loading takes 99% of each step (median data time 0.268 s, step time 0.271 s, from step 60 to step 120)".to_owned()
        )
    );
}

/// The nvidia-smi series recorded next to it: 0 to 1 % while the process
/// held its memory; the rows before and after it (0 MiB) do not count.
#[test]
fn an_idle_gpu_in_the_nvidia_smi_series() {
    assert_eq!(
        one("metrics/dataloader_bottleneck/gpu_util.csv"),
        (
            None,
            96,
            "trend: GPU 0 utilisation is 0% (median of 84 samples, at most 1%, while up to 915.0 MiB of its memory was in use, from 2026/11/29 20:39:33.098 to 2026/11/29 20:40:14.643)".to_owned()
        )
    );
}

/// The GPU-bound counterpart: data time 0.006 s of 0.305 s, 93 to 100 %
/// utilisation.
#[test]
fn a_gpu_bound_run_has_no_data_trend() {
    for rel in [
        "metrics/gpu_bound/train.log",
        "metrics/gpu_bound/gpu_util.csv",
    ] {
        assert_eq!(trends_of(rel), vec![], "{rel}");
    }
}
