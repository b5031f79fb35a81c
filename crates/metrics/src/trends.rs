//! Trend detectors. Each reads one metric of one rank: the bounded
//! [`Series`] or a streaming tracker fed every sample (so counts are exact
//! however long the run).

use crate::format::{self, MIB};
use crate::metric::Metric;
use crate::series::{Sample, Series};
use coroner_model::{CurveFit, CurveMark};

/// A detector's verdict before the rank is attached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    pub line: u64,
    pub text: String,
    /// The step the trend was decided at, and what happened there.
    pub mark: Option<CurveMark>,
    /// The line a growth was judged by.
    pub fit: Option<CurveFit>,
}

impl Found {
    pub(crate) fn new(line: u64, text: String) -> Self {
        Found {
            line,
            text,
            mark: None,
            fit: None,
        }
    }

    fn marked(mut self, step: u64, label: &str) -> Self {
        self.mark = Some(CurveMark {
            step,
            label: label.to_owned(),
        });
        self
    }
}

/// Everything kept about one metric of one rank.
#[derive(Debug, Clone, Default)]
pub(crate) struct Track {
    pub series: Series,
    pub finite: FiniteTrack,
    pub fall: FallTrack,
}

impl Track {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Track {
            series: Series::with_capacity(capacity),
            ..Track::default()
        }
    }

    pub(crate) fn push(&mut self, sample: Sample) {
        self.series.push(sample);
        self.finite.push(sample);
        self.fall.push(sample);
    }
}

// ---------------------------------------------------------------------------
// Non-finite values (loss, grad_norm)

/// Follows where a value stops being finite.
#[derive(Debug, Clone, Default)]
pub(crate) struct FiniteTrack {
    first: Option<Sample>,
    last: Option<Sample>,
    last_finite: Option<Sample>,
    /// First sample of the current run of non-finite values.
    bad_start: Option<Sample>,
    bad_len: u64,
    /// First sample of the current run of one kind (nan, inf, -inf).
    kind_start: Option<Sample>,
    /// Whether the whole current non-finite run is of one kind.
    one_kind: bool,
}

impl FiniteTrack {
    fn push(&mut self, s: Sample) {
        self.first.get_or_insert(s);
        if s.value.is_finite() {
            self.last_finite = Some(s);
            self.bad_start = None;
            self.bad_len = 0;
            self.kind_start = None;
        } else {
            match self.last {
                Some(prev) if self.bad_start.is_some() => {
                    if format::value_kind(prev.value) != format::value_kind(s.value) {
                        self.kind_start = Some(s);
                        self.one_kind = false;
                    }
                }
                _ => {
                    self.bad_start = Some(s);
                    self.kind_start = Some(s);
                    self.one_kind = true;
                }
            }
            self.bad_len += 1;
        }
        self.last = Some(s);
    }

    /// `trend: loss is nan from step 3 (last finite 245.75 at step 1,
    /// first non-finite inf at step 2)`, or `trend: grad_norm is nan at
    /// every step from step 1 to step 200`.
    pub(crate) fn trend(&self, metric: Metric) -> Option<Found> {
        let (last, bad, kind_start) = (self.last?, self.bad_start?, self.kind_start?);
        // Mixed precision skips a step on an overflow and the gradient norm
        // is inf or nan for it; a short run of those at the end is normal.
        // A run counts when it has three samples, or two that lie three or
        // more steps apart (a log line every N steps).
        if metric == Metric::GradNorm {
            let spanned = last.step.saturating_sub(bad.step) + 1;
            if self.bad_len < 2 || self.bad_len < 3 && spanned < 3 {
                return None;
            }
        }
        let name = metric.name();
        let text = match self.last_finite {
            None => {
                let first = self.first?;
                let what = if self.one_kind {
                    format::value_kind(last.value)
                } else {
                    "non-finite"
                };
                format!(
                    "trend: {name} is {what} at every step from step {} to step {}",
                    first.step, last.step
                )
            }
            Some(finite) => format!(
                "trend: {name} is {} from step {} (last finite {} at step {}, first non-finite {} at step {})",
                format::value_kind(last.value),
                kind_start.step,
                format::value(finite.value),
                finite.step,
                format::value(bad.value),
                bad.step,
            ),
        };
        Some(Found::new(bad.line, text).marked(bad.step, "first non-finite value"))
    }
}

// ---------------------------------------------------------------------------
// Loss scale collapse

/// Follows the current fall of a value from its last peak.
#[derive(Debug, Clone, Default)]
pub(crate) struct FallTrack {
    previous: Option<f64>,
    /// The last sample at the peak the current fall started from.
    peak: Option<Sample>,
    pairs: u64,
    halvings: u64,
    /// Lowest value of the fall, first reached.
    low: Option<Sample>,
    pairs_to_low: u64,
    halvings_to_low: u64,
}

impl FallTrack {
    fn push(&mut self, s: Sample) {
        let v = s.value;
        if !v.is_finite() || v < 0.0 {
            return;
        }
        let Some(previous) = self.previous.replace(v) else {
            self.restart(s);
            return;
        };
        let at_peak = self.peak.is_some_and(|p| p.value == v);
        if v > previous || at_peak {
            self.restart(s);
            return;
        }
        self.pairs += 1;
        if v < previous && v <= previous * 0.55 {
            self.halvings += 1;
        }
        if self.low.is_none_or(|low| v < low.value) {
            self.low = Some(s);
            self.pairs_to_low = self.pairs;
            self.halvings_to_low = self.halvings;
        }
    }

    fn restart(&mut self, s: Sample) {
        self.peak = Some(s);
        self.pairs = 0;
        self.halvings = 0;
        self.low = None;
        self.pairs_to_low = 0;
        self.halvings_to_low = 0;
    }

    /// `trend: loss scale falls from 32768 at step 1 to 0 at step 166,
    /// halving on 165 of 199 steps`.
    pub(crate) fn trend(&self, metric: Metric) -> Option<Found> {
        // `previous` is the last value pushed.
        let (peak, low, last) = (self.peak?, self.low?, self.previous?);
        let collapsed = last <= 1.0
            && low.value < peak.value
            && self.halvings_to_low >= 2
            && self.halvings_to_low * 2 > self.pairs_to_low;
        collapsed.then(|| {
            Found::new(
                low.line,
                format!(
                "trend: {} falls from {} at step {} to {} at step {}, halving on {} of {} steps",
                metric.name(),
                format::value(peak.value),
                peak.step,
                format::value(low.value),
                low.step,
                self.halvings,
                self.pairs,
            ),
            )
            .marked(low.step, "lowest loss scale")
        })
    }
}

// ---------------------------------------------------------------------------
// Memory growth

/// The fewest samples and steps a growth must span.
const GROWTH_MIN_SAMPLES: u64 = 20;
const GROWTH_MIN_STEPS: u64 = 20;
const GROWTH_MIN_R2: f64 = 0.9;

/// `trend: memory allocated grows 16.0 MiB per step over 417 steps
/// (R² 1.000), from 289.0 MiB at step 1 to 6945.0 MiB at step 417`, with
/// `, about N steps from the X GiB limit` when `limit` is known.
pub(crate) fn growth(metric: Metric, series: &Series, limit: Option<f64>) -> Option<Found> {
    let (first, last) = (series.first()?, series.last()?);
    let span = last.step.checked_sub(first.step)? + 1;
    if series.seen() < GROWTH_MIN_SAMPLES || span < GROWTH_MIN_STEPS {
        return None;
    }
    let growth = last.value - first.value;
    if growth < (64.0 * MIB).max(0.2 * first.value) {
        return None;
    }
    let finite: Vec<Sample> = series.samples().filter(|s| s.value.is_finite()).collect();
    let (line, r2) = fit(&finite)?;
    let slope = line.slope;
    if !(slope > 0.0 && r2 >= GROWTH_MIN_R2) {
        return None;
    }
    let mut text = format!(
        "trend: {} grows {} per step over {span} steps (R\u{b2} {r2:.3}), from {} at step {} to {} at step {}",
        metric.name(),
        format::size(slope),
        format::size(first.value),
        first.step,
        format::size(last.value),
        last.step,
    );
    if let Some(limit) = limit.filter(|l| *l > last.value) {
        let steps = ((limit - last.value) / slope).ceil();
        text.push_str(&format!(
            ", about {} steps from the {} limit",
            format::value(steps),
            format::gib(limit)
        ));
    }
    Some(Found {
        fit: Some(line),
        ..Found::new(last.line, text)
    })
}

/// Least-squares line through (step, value), and its R².
fn fit(samples: &[Sample]) -> Option<(CurveFit, f64)> {
    #[allow(clippy::cast_precision_loss)]
    let point = |s: &Sample| (s.step as f64, s.value);
    let (mut n, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for (x, y) in samples.iter().map(point) {
        n += 1.0;
        sx += x;
        sy += y;
    }
    if n < 2.0 {
        return None;
    }
    let (mx, my) = (sx / n, sy / n);
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in samples.iter().map(point) {
        let (dx, dy) = (x - mx, y - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = (sxy * sxy) / (sxx * syy);
    let intercept = my - slope * mx;
    Some((CurveFit { slope, intercept }, r2))
}

// ---------------------------------------------------------------------------
// Throughput collapse

/// The fewest samples a throughput series needs before it is judged.
const THROUGHPUT_MIN_SAMPLES: usize = 8;
/// The last quarter's median must fall below this share of the first half's.
const THROUGHPUT_COLLAPSE: f64 = 0.2;

/// `trend: throughput falls from 251234.0 samples/s (median before step
/// 31) to 1019.6 samples/s from step 31, -99.6%`.
pub(crate) fn throughput(metric: Metric, series: &Series) -> Option<Found> {
    let samples: Vec<Sample> = series
        .samples()
        .filter(|s| s.value.is_finite() && s.value >= 0.0)
        .collect();
    let n = samples.len();
    if n < THROUGHPUT_MIN_SAMPLES {
        return None;
    }
    let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
    let early = median(values.get(..n / 2)?)?;
    let late = median(values.get(n - n / 4..)?)?;
    if !(early > 0.0 && late < THROUGHPUT_COLLAPSE * early) {
        return None;
    }
    // The change point: the split that leaves the fewest samples on the
    // wrong side of a threshold between the two levels.
    let threshold = (early * late).sqrt().max(late + (early - late) / 100.0);
    let mut below_before = 0usize;
    let above_total = values.iter().filter(|v| **v >= threshold).count();
    let mut above_before = 0usize;
    let mut best = (usize::MAX, 0usize);
    for (i, v) in values.iter().enumerate() {
        let above_after = above_total - above_before;
        let cost = below_before + above_after;
        if cost < best.0 && *v < threshold {
            best = (cost, i);
        }
        if *v < threshold {
            below_before += 1;
        } else {
            above_before += 1;
        }
    }
    let split = best.1;
    let before = median(values.get(..split)?)?;
    let after = median(values.get(split..)?)?;
    let at = samples.get(split)?;
    if !(before > 0.0 && after < THROUGHPUT_COLLAPSE * before) {
        return None;
    }
    let change = (after - before) / before * 100.0;
    let unit = metric.name();
    let text = format!(
        "trend: throughput falls from {} {unit} (median before step {}) to {} {unit} from step {}, {change:.1}%",
        format::rate(before),
        at.step,
        format::rate(after),
        at.step,
    );
    Some(Found::new(at.line, text).marked(at.step, "throughput falls"))
}

// ---------------------------------------------------------------------------
// Steps dominated by data loading

/// The fewest samples holding both a step and a data time before the two
/// are compared.
const DATA_WAIT_MIN_SAMPLES: usize = 20;
/// The share of a step spent waiting for data from which the input
/// pipeline is the bottleneck. At half the step or more, the GPU idles for
/// at least as long as it computes: more GPU work would hardly slow the step
/// down, and faster loading would up to double the throughput. A loader
/// that keeps up measures well under a tenth of the step (the prefetched
/// batch is ready), so shares between those two are left alone as common
/// and unclear (a slow host-to-device copy, a loader that only just keeps
/// up).
const DATA_WAIT_SHARE: f64 = 0.5;

/// `trend: data loading takes 99% of each step (median data time 0.268 s,
/// step time 0.271 s, from step 61 to step 120)`.
///
/// Compares the medians over the last half of the samples that hold both
/// times: the first steps often wait long for the first batches (workers
/// starting, caches cold) and say nothing about the run. The step time is
/// taken to include the data time (as in PyTorch's ImageNet example,
/// MMEngine, timm and Megatron); when the data time's median is the larger,
/// the step time cannot include it and the share is data / (data + step).
pub(crate) fn data_wait(step: &Series, data: &Series) -> Option<Found> {
    // Both series are fed from the same lines; pair them by line.
    let mut pairs: Vec<(Sample, f64)> = Vec::new();
    let mut data_samples = data.samples().peekable();
    for s in step.samples() {
        while data_samples.peek().is_some_and(|d| d.line < s.line) {
            data_samples.next();
        }
        if let Some(d) = data_samples.peek().filter(|d| d.line == s.line) {
            if s.value.is_finite() && d.value.is_finite() {
                pairs.push((s, d.value));
            }
        }
    }
    let n = pairs.len();
    if n < DATA_WAIT_MIN_SAMPLES {
        return None;
    }
    let late = pairs.get(n / 2..)?;
    let step_median = median(&late.iter().map(|(s, _)| s.value).collect::<Vec<_>>())?;
    let data_median = median(&late.iter().map(|(_, d)| *d).collect::<Vec<_>>())?;
    let whole = if data_median > step_median {
        data_median + step_median
    } else {
        step_median
    };
    if whole <= 0.0 {
        return None;
    }
    let share = data_median / whole;
    if share < DATA_WAIT_SHARE {
        return None;
    }
    let (first, last) = (late.first()?.0, late.last()?.0);
    let text = format!(
        "trend: data loading takes {}% of each step (median data time {} s, step time {} s, from step {} to step {})",
        format::percent(share * 100.0),
        format::seconds(data_median),
        format::seconds(step_median),
        first.step,
        last.step,
    );
    Some(Found::new(last.line, text))
}

/// The median (the mean of the middle two for an even count).
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted.get(mid).copied()
    } else {
        Some((sorted.get(mid.checked_sub(1)?)? + sorted.get(mid)?) / 2.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn track(values: &[f64]) -> Track {
        let mut t = Track::default();
        for (i, v) in values.iter().enumerate() {
            t.push(Sample {
                step: i as u64 + 1,
                value: *v,
                line: i as u64 + 1,
            });
        }
        t
    }

    #[test]
    fn transient_grad_norm_overflow_is_not_a_trend() {
        let t = track(&[1.0, 2.0, f64::INFINITY, 1.5, 1.2, f64::NAN]);
        assert_eq!(t.finite.trend(Metric::GradNorm), None);
        assert!(t.finite.trend(Metric::Loss).is_some());
    }

    #[test]
    fn two_non_finite_grad_norms_logged_ten_steps_apart_are_a_trend() {
        let mut t = Track::default();
        for (i, v) in [3.06, 2.76, 2.51, f64::NAN, f64::NAN].iter().enumerate() {
            let i = i as u64;
            t.push(Sample {
                step: 200 + 10 * i,
                value: *v,
                line: i + 1,
            });
        }
        assert_eq!(
            t.finite.trend(Metric::GradNorm).unwrap().text,
            "trend: grad_norm is nan from step 230 (last finite 2.51 at step 220, first non-finite nan at step 230)"
        );
        // Two in a row on consecutive steps: still a transient overflow.
        let t = track(&[1.0, 2.0, f64::NAN, f64::NAN]);
        assert_eq!(t.finite.trend(Metric::GradNorm), None);
    }

    #[test]
    fn mixed_non_finite_from_the_start() {
        let t = track(&[f64::NAN, f64::INFINITY, f64::NAN]);
        assert_eq!(
            t.finite.trend(Metric::Loss).unwrap().text,
            "trend: loss is non-finite at every step from step 1 to step 3"
        );
    }

    #[test]
    fn a_scale_that_dips_and_recovers_is_not_a_collapse() {
        let mut v = vec![65536.0; 50];
        v.extend([32768.0; 50]);
        v.extend([65536.0; 50]);
        assert_eq!(track(&v).fall.trend(Metric::LossScale), None);
    }

    #[test]
    fn a_collapse_after_a_long_flat_stretch() {
        let mut v = vec![65536.0; 1500];
        let mut s = 65536.0;
        while s > 0.5 {
            s /= 2.0;
            v.push(s);
        }
        v.extend([0.5; 3000]);
        let found = track(&v).fall.trend(Metric::LossScale).unwrap();
        assert_eq!(
            found.text,
            "trend: loss scale falls from 65536 at step 1500 to 0.5 at step 1517, halving on 17 of 3017 steps"
        );
    }

    #[test]
    fn noisy_memory_is_not_growth() {
        let v: Vec<f64> = (0..100)
            .map(|i| (1000.0 + if i % 2 == 0 { 500.0 } else { 0.0 } + i as f64) * MIB)
            .collect();
        assert_eq!(growth(Metric::MemAllocated, &track(&v).series, None), None);
    }

    #[test]
    fn growth_with_a_limit() {
        let v: Vec<f64> = (0..100).map(|i| (1024.0 + 10.0 * i as f64) * MIB).collect();
        let found = growth(
            Metric::MemAllocated,
            &track(&v).series,
            Some(80.0 * 1024.0 * MIB),
        )
        .unwrap();
        assert_eq!(
            found.text,
            "trend: memory allocated grows 10.0 MiB per step over 100 steps (R\u{b2} 1.000), from 1024.0 MiB at step 1 to 2014.0 MiB at step 100, about 7991 steps from the 80.0 GiB limit"
        );
    }

    /// Step and data time series of `steps` lines, from step 1 on line 1.
    fn times(steps: u64, at: impl Fn(u64) -> (f64, f64)) -> (Series, Series) {
        let (mut step, mut data) = (Series::default(), Series::default());
        for i in 1..=steps {
            let (s, d) = at(i);
            step.push(Sample {
                step: i,
                value: s,
                line: i,
            });
            data.push(Sample {
                step: i,
                value: d,
                line: i,
            });
        }
        (step, data)
    }

    #[test]
    fn steps_waiting_for_data() {
        let (step, data) = times(120, |i| (if i == 1 { 0.81 } else { 0.271 }, 0.268));
        let found = data_wait(&step, &data).unwrap();
        assert_eq!(
            found.text,
            "trend: data loading takes 99% of each step (median data time 0.268 s, step time 0.271 s, from step 61 to step 120)"
        );
        assert_eq!(found.line, 120);
    }

    #[test]
    fn a_loader_that_keeps_up_is_quiet() {
        let (step, data) = times(130, |_| (0.305, 0.006));
        assert_eq!(data_wait(&step, &data), None);
        // Just under half.
        let (step, data) = times(130, |_| (0.3, 0.149));
        assert_eq!(data_wait(&step, &data), None);
    }

    #[test]
    fn warm_up_data_time_alone_is_quiet() {
        // The first eight steps wait for workers to start and caches to
        // fill; afterwards the batch is ready.
        let (step, data) = times(40, |i| if i <= 8 { (2.0, 1.9) } else { (0.3, 0.01) });
        assert_eq!(data_wait(&step, &data), None);
    }

    #[test]
    fn too_few_steps_are_not_judged() {
        let (step, data) = times(19, |_| (0.3, 0.29));
        assert_eq!(data_wait(&step, &data), None);
    }

    #[test]
    fn a_step_time_without_the_data_time() {
        // 0.3 s of compute after 0.6 s of waiting: two thirds of the step.
        let (step, data) = times(40, |_| (0.3, 0.6));
        let found = data_wait(&step, &data).unwrap();
        assert!(
            found.text.starts_with("trend: data loading takes 67% of each step (median data time 0.600 s, step time 0.300 s,"),
            "{}",
            found.text
        );
    }

    #[test]
    fn times_on_different_lines_are_paired_by_line() {
        // The data time on every other line only: 20 pairs are not there.
        let (step, _) = times(30, |_| (0.3, 0.29));
        let mut data = Series::default();
        for i in (2..=30).step_by(2) {
            data.push(Sample {
                step: i,
                value: 0.29,
                line: i,
            });
        }
        assert_eq!(data_wait(&step, &data), None);
    }

    #[test]
    fn steady_throughput_with_a_slow_first_step_is_fine() {
        let mut v = vec![3000.0];
        v.extend([260000.0; 99]);
        assert_eq!(
            throughput(Metric::SamplesPerSecond, &track(&v).series),
            None
        );
    }
}
