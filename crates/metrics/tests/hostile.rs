//! Hostile input: the collector must not panic, and its time must stay
//! linear in the input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use coroner_metrics::MetricCollector;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Generous for a debug build on a busy machine; quadratic behaviour on
/// the inputs below would take minutes.
const BOUND: Duration = Duration::from_secs(20);

fn run(lines: &[Vec<u8>]) -> Duration {
    let start = Instant::now();
    let mut collector = MetricCollector::new();
    for (i, line) in lines.iter().enumerate() {
        collector.line(line, i as u64 + 1, Some((i % 3) as u32));
    }
    let _ = collector.trends();
    start.elapsed()
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let alphabet = b"loss=step 0123456789.eE+-nanif:|{}'\"[]()MiB/s \x00\xff\r";
    let lines: Vec<Vec<u8>> = (0..20_000)
        .map(|_| {
            let len = (rng.next() % 200) as usize;
            (0..len)
                .map(|_| {
                    let r = rng.next();
                    if r.is_multiple_of(4) {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect()
        })
        .collect();
    assert!(run(&lines) < BOUND);
}

#[test]
fn ten_megabyte_lines() {
    let ten_mb = 10 * 1024 * 1024;
    let shapes: [&[u8]; 7] = [
        b"loss 1 ",
        b"step=1 loss=nan ",
        b"1",
        b"1.",
        b"-",
        b"nan",
        b"{'loss': '1e-05', ",
    ];
    for shape in shapes {
        let line: Vec<u8> = shape.iter().copied().cycle().take(ten_mb).collect();
        let elapsed = run(&[line]);
        assert!(
            elapsed < BOUND,
            "{:?}: {elapsed:?}",
            String::from_utf8_lossy(shape)
        );
    }
}

#[test]
fn thousands_of_equals_signs() {
    let mut lines = Vec::new();
    for n in [1_000, 10_000, 100_000] {
        let mut line = b"loss".to_vec();
        line.extend(std::iter::repeat_n(b'=', n));
        line.extend_from_slice(b"1 ");
        line.extend(std::iter::repeat_n(b'=', n));
        line.extend_from_slice(b" step");
        line.extend(std::iter::repeat_n(b'=', n));
        line.extend_from_slice(b"2");
        lines.push(line);
        lines.push(b"=".repeat(n).iter().chain(b"loss=3").copied().collect());
        lines.push(b"loss=1 =".repeat(n));
    }
    assert!(run(&lines) < BOUND);
}

#[test]
fn many_ranks_stay_bounded() {
    let mut collector = MetricCollector::new();
    for step in 0..60u64 {
        for rank in 0..1500u32 {
            let line = format!("step {step} | loss nan | mem_allocated {step}MiB");
            collector.line(line.as_bytes(), step * 1500 + u64::from(rank), Some(rank));
        }
    }
    // Ranks beyond the kept number are ignored; the rest still report.
    let trends = collector.trends();
    assert!(trends.len() >= 1000, "{}", trends.len());
}
