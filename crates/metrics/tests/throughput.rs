//! Parsing speed. Run with
//! `cargo test -p coroner-metrics --release --test throughput -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use coroner_metrics::MetricCollector;

#[test]
#[ignore = "benchmark: run in --release"]
fn ten_million_metric_lines() {
    const LINES: u64 = 10_000_000;
    let mut collector = MetricCollector::new();
    let mut line = Vec::with_capacity(160);
    // The lines are made on the fly (10 million would not fit in memory
    // comfortably); their making is timed apart and subtracted.
    let make = |line: &mut Vec<u8>, step: u64| {
        use std::io::Write;
        line.clear();
        write!(
            line,
            "step {step} | loss {:.4} | lr 1.0e-03 | mem_allocated {:.1}MiB | mem_reserved 2048.0MiB | {:.1} samples/s",
            1.0 + (step % 97) as f64 / 1000.0,
            1234.5 + (step % 13) as f64,
            150_000.0 + (step % 1000) as f64,
        )
        .unwrap();
    };
    let start = Instant::now();
    let mut bytes = 0u64;
    for step in 1..=LINES {
        make(&mut line, step);
        bytes += line.len() as u64;
    }
    let making = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for step in 1..=LINES {
        make(&mut line, step);
        collector.line(&line, step, Some(0));
    }
    let trends = collector.trends();
    let elapsed = start.elapsed().as_secs_f64() - making;
    println!(
        "metric lines: {LINES} in {elapsed:.2} s ({making:.2} s to make them not counted): {:.0} lines/s, {:.0} MB/s, {} trends",
        LINES as f64 / elapsed,
        bytes as f64 / elapsed / 1e6,
        trends.len()
    );

    // Lines without metrics: the key-word check alone.
    let quiet = b"vm:1001:1001 [1] NCCL INFO Channel 08/0 : 1[1] -> 0[0] via P2P/CUMEM/read";
    let start = Instant::now();
    for n in 1..=LINES {
        collector.line(quiet, n, Some(0));
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "other lines: {LINES} in {elapsed:.2} s: {:.0} lines/s",
        LINES as f64 / elapsed
    );
}
