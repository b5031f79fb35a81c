//! Training-metric lines to series to trends.
//!
//! A [`MetricCollector`] is offered every line of one input. Lines that
//! print training metrics (loss, gradient norm, learning rate, loss scale,
//! allocator memory, throughput, step and data time) become samples of
//! per-rank series, each bounded to about 4096 samples however long the
//! run; rows of an `nvidia-smi --query-gpu` csv become per-GPU series of
//! utilisation. At the end,
//! [`MetricCollector::trends`] reads the series and returns [`Trend`]s: one
//! sentence each, in a fixed form that rules match.
//!
//! # Line shapes
//!
//! Any line where keys and values alternate: `step 12 | loss 0.42 | lr
//! 1.0e-03 | mem_allocated 1234.5MiB | 152.3 samples/s`, `iter 2:
//! loss=0.33 allocated=161.0MiB`, `step 1 loss 1.1 scale 32768 grad_norm
//! nan`, Hugging Face Trainer dictionaries (`{'loss': '1.07', 'grad_norm':
//! 'nan', ...}`, numbers or strings), Megatron-LM iteration lines (`lm loss:
//! 6.5E+00 | loss scale: 65536.0 | grad norm: 1.2`), DeepSpeed step lines,
//! Lightning progress-bar postfixes (`train_loss=0.123`). Keys are
//! normalised (`lm loss`, `train_loss` → loss; `grad norm` → grad_norm;
//! `scale`, `loss scale` → loss scale; `mem_allocated`, `allocated`,
//! `mem_alloc`, `mem` → memory allocated, which needs a size unit B, KiB,
//! MiB, GiB, KB, MB, GB, TB). Step time (`step_time`, `iter_time`,
//! `iteration_time`, `time_per_step`, `time_per_iteration`, `batch_time`,
//! Megatron's `elapsed time per iteration`) and data time (`data_time`,
//! `data_load_time`, `dataloader_time`, `data_loading_time`, `data_wait`,
//! `data_wait_time`) are in seconds: a time unit after the value (`0.271s`,
//! `271ms`, `0.27 sec`), in the key (`(ms)`, `(s)`, `_ms`, `_s`, `_sec`), or
//! none (seconds); a clock time (`12:30`) is not a value. The step comes from `step`, `steps`, `iter`,
//! `iteration` or `global_step`, else the line's ordinal among the rank's
//! metric lines. A line needs two recognised pairs, or one metric written
//! `key=value` or as a quoted dictionary key; a tqdm bar's own `it/s` and a
//! Hugging Face end-of-run summary (`train_runtime`) are not read. When a
//! line still carries carriage returns, its last segment holding metrics is
//! read. The caller removes rank prefixes (`[rank3]:`, a program's own
//! `[rank3] ` tag) first and names the rank.
//!
//! # GPU monitoring series
//!
//! The output of `nvidia-smi --query-gpu=... --format=csv` (usually run
//! with `-l`/`-lms` beside a job) is read from its header line on: the
//! columns `utilization.gpu` and `memory.used` (both needed), `index` or
//! `pci.bus_id` (at least one), `timestamp` (optional) are found in it by
//! name, with or without units (`nounits`). Without the header
//! (`noheader`) nothing is read. Only rows where the GPU's `memory.used` is
//! above 0 count (no process yet, or any more, is not idleness). A file
//! scanned in parts has its header in the first part only: the later
//! parts' rows are not read (see [`MetricCollector::absorb`]).
//!
//! # Sentences
//!
//! Stable forms; `{size}` is `N.N KiB|MiB|GiB`, `{value}` is `nan`, `inf`,
//! `-inf`, an integer (`32768`), a decimal (`245.75`) or scientific
//! (`1.4013e-45`), `{kind}` is `nan`, `inf`, `-inf` or `non-finite`, `{rate}`
//! has one decimal and `{unit}` is `samples/s`, `tokens/s` or `it/s`.
//!
//! - Growing memory, `line` at the last sample:
//!   `trend: memory allocated grows {size} per step over {steps} steps (R² {r2:.3}), from {size} at step {s} to {size} at step {s}`,
//!   followed by `, about {n} steps from the {x.x} GiB limit` when a metric
//!   line states the device's total (`total`, `capacity`, `mem_total`).
//!   `memory reserved` instead when no allocated memory is printed. Needs a
//!   line fit with slope > 0 and R² ≥ 0.9 over ≥ 20 samples and ≥ 20 steps,
//!   and growth of at least max(64 MiB, 20 % of the first value).
//! - A value turning non-finite (loss, grad_norm), `line` at the first bad
//!   sample: `trend: loss is {kind} from step {s} (last finite {value} at
//!   step {s}, first non-finite {value} at step {s})` when it ends
//!   non-finite after finite values, or `trend: grad_norm is {kind} at every
//!   step from step {s} to step {s}` when it was never finite. grad_norm
//!   needs at least three non-finite samples at the end, or two that lie three or more steps
//!   apart (a line every N steps) (mixed precision
//!   makes single overflow steps normal).
//! - Loss scale collapsing, `line` where the minimum is first reached:
//!   `trend: loss scale falls from {value} at step {s} to {value} at step
//!   {s}, halving on {h} of {p} steps` (counted from the last sample at the
//!   peak to the end). Needs a final value ≤ 1 and halvings on most steps of
//!   the fall up to the minimum.
//! - Throughput collapsing, `line` at the first collapsed sample:
//!   `trend: throughput falls from {rate} {unit} (median before step {s}) to
//!   {rate} {unit} from step {s}, {pct:.1}%`. Needs the median of the last
//!   quarter of the run below 20 % of the median of the first half.
//! - Steps dominated by data loading, `line` at the last sample:
//!   `trend: data loading takes {pct}% of each step (median data time
//!   {secs} s, step time {secs} s, from step {s} to step {s})`, `{pct}` a
//!   whole number, `{secs}` with three decimals (six below 0.01 s). Needs
//!   20 samples holding both times (paired by line), and the median data
//!   time of the last half of them at least 50 % of the median step time
//!   there (the first half, with the warm-up's slow first batches, is left
//!   out). The step time is taken to include the data time; when the data
//!   time's median is larger, it cannot, and the share is data / (data +
//!   step).
//! - An idle GPU in a monitoring series, `line` at its last counted row, no
//!   rank (the GPU is named in the sentence): `trend: GPU {gpu}
//!   utilisation is {pct}% (median of {n} samples, at most {pct}%, while up
//!   to {size} of its memory was in use, from {time} to {time})`; `{gpu}` is
//!   the `index` (followed by ` ({bus id})` when the csv has both) or the
//!   PCI bus id, and the `, from ... to ...` part appears only with a
//!   `timestamp` column. Needs 20 rows with memory in use, and their median
//!   utilisation at most 20 %.
//!
//! Trends are ordered by line, then rank.
#![forbid(unsafe_code)]
// Inputs are untrusted: no panicking shortcuts on the bytes they hold.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod format;
mod gpu_csv;
mod metric;
mod parse;
mod series;
mod trends;

use coroner_model::Curve;
use memchr::memmem;
use std::sync::OnceLock;

use metric::{Metric, METRICS};
use series::Sample;
use trends::Track;

/// The most ranks one input's series are kept for; lines of further ranks
/// are ignored.
const MAX_RANKS: usize = 1024;
/// Ranks whose series get the full capacity; later ranks get less, so an
/// input of a thousand ranks holds tens of MB, not GB.
const FULL_RANKS: usize = 8;

/// Substrings one of which every metric line contains (a key word or a
/// rate unit; `ime` for `time` and `Time`). Lines with none of them return
/// at once. An `nvidia-smi --query-gpu` csv header has one too (`mem` of
/// its `memory.used` column); its rows need none.
const KEY_WORDS: [&str; 13] = [
    "loss", "Loss", "lr", "learning", "grad", "scale", "alloc", "reserved", "mem", "/s", "samples",
    "tokens", "ime",
];

/// Collects metric samples from the lines of one input.
#[derive(Debug, Default)]
pub struct MetricCollector {
    ranks: Vec<RankSeries>,
    key_words: KeyWords,
    gpu_csv: gpu_csv::GpuCsv,
    /// The GPU monitoring csv's rows kept as evidence.
    csv_rows: Ends,
}

/// A trend read from a metric's series.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub rank: Option<u32>,
    /// The line where the trend is decided (e.g. the last sample of a
    /// growing series, the first bad step).
    pub line: u64,
    /// One sentence, in a fixed form that rules match (see the crate docs).
    pub text: String,
    /// The input's lines that show it, in order: the rank's first and last
    /// metric lines (the GPU monitoring csv's first and last rows), and
    /// the first line with a non-finite value when the trend is decided
    /// there.
    pub evidence: Vec<KeptLine>,
    /// The series behind it, thinned to at most [`CURVE_POINTS`] points.
    pub curve: Option<Curve>,
}

/// A line of the input, kept as evidence: its 1-based number and its text
/// (at most [`KEPT_BYTES`] bytes of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLine {
    pub line: u64,
    pub text: String,
}

/// The most bytes of a line kept as evidence.
pub const KEPT_BYTES: usize = 512;
/// The most points of a [`Curve`].
pub const CURVE_POINTS: usize = 64;

impl KeptLine {
    fn of(line: &[u8], number: u64) -> Self {
        KeptLine {
            line: number,
            text: String::from_utf8_lossy(line.get(..KEPT_BYTES).unwrap_or(line)).into_owned(),
        }
    }

    fn shifted(self, by: u64) -> Self {
        KeptLine {
            line: self.line.saturating_add(by),
            ..self
        }
    }
}

/// The searchers for [`KEY_WORDS`], built once per process: a collector is
/// made for every input, and a directory may hold thousands.
#[derive(Debug, Default)]
struct KeyWords;

impl KeyWords {
    fn any_in(&self, line: &[u8]) -> bool {
        static FINDERS: OnceLock<Vec<memmem::Finder<'static>>> = OnceLock::new();
        FINDERS
            .get_or_init(|| KEY_WORDS.iter().map(memmem::Finder::new).collect())
            .iter()
            .any(|f| f.find(line).is_some())
    }
}

#[derive(Debug)]
struct RankSeries {
    rank: Option<u32>,
    /// Metric lines seen: the x axis of lines that name no step.
    lines: u64,
    tracks: [Option<Track>; METRICS],
    /// The rank's metric lines kept as evidence.
    kept: Ends,
}

/// The first and last of a run of lines, and the first holding a
/// non-finite value: the lines a trend's evidence is taken from. The last
/// is overwritten in place, so keeping it costs a copy of each line.
#[derive(Debug, Default)]
struct Ends {
    first: Option<KeptLine>,
    last: Option<(u64, Vec<u8>)>,
    first_bad: Option<KeptLine>,
}

impl Ends {
    fn see(&mut self, line: &[u8], number: u64, bad: bool) {
        if self.first.is_none() {
            self.first = Some(KeptLine::of(line, number));
        }
        if bad && self.first_bad.is_none() {
            self.first_bad = Some(KeptLine::of(line, number));
        }
        let (at, text) = self.last.get_or_insert_with(Default::default);
        *at = number;
        text.clear();
        text.extend_from_slice(line.get(..KEPT_BYTES).unwrap_or(line));
    }

    fn absorb(&mut self, later: Ends, shift: u64) {
        if self.first.is_none() {
            self.first = later.first.map(|k| k.shifted(shift));
        }
        if self.first_bad.is_none() {
            self.first_bad = later.first_bad.map(|k| k.shifted(shift));
        }
        if let Some((at, text)) = later.last {
            self.last = Some((at.saturating_add(shift), text));
        }
    }

    /// The lines that show a trend decided at `line`.
    fn evidence(&self, line: u64) -> Vec<KeptLine> {
        let last = self.last.as_ref().map(|(at, text)| KeptLine::of(text, *at));
        let bad = self.first_bad.clone().filter(|k| k.line == line);
        let mut out: Vec<KeptLine> = [self.first.clone(), bad, last]
            .into_iter()
            .flatten()
            .collect();
        out.sort_by_key(|k| k.line);
        out.dedup_by_key(|k| k.line);
        out
    }
}

impl MetricCollector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether [`MetricCollector::line`] may read anything in `raw`, a
    /// line before its rank prefix is taken off: a cheap test that lets a
    /// caller skip decoding the many lines that name no metric.
    pub fn may_read(&self, raw: &[u8]) -> bool {
        self.gpu_csv.has_header() || self.key_words.any_in(raw)
    }

    /// Offers one line (already cleaned: no CR, no ANSI codes, launcher
    /// prefix like `[rank3]:` removed), its 1-based line number, and the
    /// rank it belongs to if known.
    pub fn line(&mut self, line: &[u8], number: u64, rank: Option<u32>) {
        if self.gpu_csv.row(line, number) {
            self.csv_rows.see(line, number, false);
            return;
        }
        if !self.key_words.any_in(line) || self.gpu_csv.header(line) {
            return;
        }

        let Some((segment, reading)) = read_segments(line) else {
            return;
        };
        let Some((position, state)) = self.rank(rank) else {
            return;
        };
        let capacity = series::capacity_at(position, FULL_RANKS);
        state.lines += 1;
        let bad = reading.iter().any(|(_, value)| !value.is_finite());
        state.kept.see(segment, number, bad);
        let step = reading.step.unwrap_or(state.lines);
        for (metric, value) in reading.iter() {
            if let Some(track) = state.tracks.get_mut(metric.index()) {
                track
                    .get_or_insert_with(|| Track::with_capacity(capacity))
                    .push(Sample {
                        step,
                        value,
                        line: number,
                    });
            }
        }
    }

    /// The trends found so far (call at the end).
    pub fn trends(&self) -> Vec<Trend> {
        let mut out = Vec::new();
        for state in &self.ranks {
            let track = |m: Metric| state.tracks.get(m.index()).and_then(Option::as_ref);
            let mut push = |found: Option<trends::Found>, metric: Metric| {
                if let Some(found) = found {
                    out.push(Trend {
                        rank: state.rank,
                        evidence: state.kept.evidence(found.line),
                        curve: track(metric).map(|t| {
                            let mut curve = t.series.curve(metric.name(), metric.unit());
                            curve.marks.extend(found.mark);
                            curve.fit = found.fit;
                            curve
                        }),
                        line: found.line,
                        text: found.text,
                    });
                }
            };
            for metric in [Metric::Loss, Metric::GradNorm] {
                push(track(metric).and_then(|t| t.finite.trend(metric)), metric);
            }
            push(
                track(Metric::LossScale).and_then(|t| t.fall.trend(Metric::LossScale)),
                Metric::LossScale,
            );
            let memory = [Metric::MemAllocated, Metric::MemReserved]
                .into_iter()
                .find_map(|m| track(m).map(|t| (m, t)));
            if let Some((metric, t)) = memory {
                let limit = track(Metric::MemTotal)
                    .and_then(|t| t.series.last())
                    .map(|s| s.value);
                push(trends::growth(metric, &t.series, limit), metric);
            }
            for metric in Metric::ALL.into_iter().filter(|m| m.is_throughput()) {
                push(
                    track(metric).and_then(|t| trends::throughput(metric, &t.series)),
                    metric,
                );
            }
            if let (Some(step), Some(data)) = (track(Metric::StepTime), track(Metric::DataTime)) {
                push(
                    trends::data_wait(&step.series, &data.series),
                    Metric::DataTime,
                );
            }
        }
        // A GPU index is not a rank: the sentence names the GPU.
        out.extend(self.gpu_csv.trends().map(|(found, curve)| Trend {
            rank: None,
            evidence: self.csv_rows.evidence(found.line),
            curve: Some(curve),
            line: found.line,
            text: found.text,
        }));
        out.sort_by(|a, b| (a.line, a.rank, &a.text).cmp(&(b.line, b.rank, &b.text)));
        out
    }

    /// The series of `rank` and its position among the ranks seen.
    /// Appends what `later` collected from the lines that follow this
    /// collector's (the next part of the same input, scanned on its own),
    /// with its line numbers moved on by `line_shift`. The samples `later`
    /// kept are replayed in order, so a long part contributes its decimated
    /// series.
    ///
    /// GPU monitoring rows (`nvidia-smi --query-gpu` csv) are read only
    /// after a header in the same part: a file scanned in parts has its
    /// header in the first part, so the GPU series cover that part only.
    pub fn absorb(&mut self, later: MetricCollector, line_shift: u64) {
        self.gpu_csv.absorb(later.gpu_csv, line_shift);
        self.csv_rows.absorb(later.csv_rows, line_shift);
        for state in later.ranks {
            let Some((_, mine)) = self.rank(state.rank) else {
                continue;
            };
            mine.lines = mine.lines.saturating_add(state.lines);
            mine.kept.absorb(state.kept, line_shift);
            for (slot, track) in mine.tracks.iter_mut().zip(state.tracks) {
                let Some(track) = track else {
                    continue;
                };
                let target = slot.get_or_insert_with(|| Track::with_capacity(series::CAPACITY));
                for sample in track.series.samples() {
                    target.push(Sample {
                        line: sample.line.saturating_add(line_shift),
                        ..sample
                    });
                }
            }
        }
    }

    fn rank(&mut self, rank: Option<u32>) -> Option<(usize, &mut RankSeries)> {
        let at = match self.ranks.iter().position(|r| r.rank == rank) {
            Some(at) => at,
            None if self.ranks.len() < MAX_RANKS => {
                self.ranks.push(RankSeries {
                    rank,
                    lines: 0,
                    tracks: Default::default(),
                    kept: Ends::default(),
                });
                self.ranks.len() - 1
            }
            None => return None,
        };
        self.ranks.get_mut(at).map(|state| (at, state))
    }
}

/// Reads the last carriage-return segment that holds metrics; returns it
/// with what it holds.
fn read_segments(line: &[u8]) -> Option<(&[u8], parse::Reading)> {
    if memchr::memchr(b'\r', line).is_none() {
        return parse::parse(line).map(|r| (line, r));
    }
    line.rsplit(|&b| b == b'\r')
        .find_map(|segment| parse::parse(segment).map(|r| (segment, r)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn carriage_return_segments() {
        let (segment, r) = read_segments(b"step 1 loss 2.0\rstep 2 loss 3.0\r   ").unwrap();
        assert_eq!(r.step, Some(2));
        assert_eq!(segment, b"step 2 loss 3.0");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod absorb_tests {
    use super::*;

    fn leak_lines(from: u64, to: u64) -> Vec<String> {
        (from..=to)
            .map(|step| {
                format!(
                    "step {step} | loss 0.5 | mem_allocated {:.1}MiB | mem_reserved 8192.0MiB",
                    100.0 + 16.0 * step as f64
                )
            })
            .collect()
    }

    #[test]
    fn a_file_scanned_in_two_parts_has_the_trends_of_the_whole() {
        let mut whole = MetricCollector::new();
        for (i, line) in leak_lines(1, 200).iter().enumerate() {
            whole.line(line.as_bytes(), i as u64 + 1, None);
        }
        let mut first = MetricCollector::new();
        let mut second = MetricCollector::new();
        for (i, line) in leak_lines(1, 100).iter().enumerate() {
            first.line(line.as_bytes(), i as u64 + 1, None);
        }
        for (i, line) in leak_lines(101, 200).iter().enumerate() {
            second.line(line.as_bytes(), i as u64 + 1, None);
        }
        first.absorb(second, 100);
        assert_eq!(first.trends(), whole.trends());
        assert_eq!(whole.trends().len(), 1);
        // Its evidence is the input's own first and last metric lines.
        let trend = &whole.trends()[0];
        let shown: Vec<(u64, &str)> = trend
            .evidence
            .iter()
            .map(|k| (k.line, k.text.as_str()))
            .collect();
        let lines = leak_lines(1, 200);
        assert_eq!(shown, [(1, lines[0].as_str()), (200, lines[199].as_str())]);
        let curve = trend.curve.as_ref().unwrap();
        assert_eq!(curve.metric, "memory allocated");
        assert_eq!(curve.points.len(), CURVE_POINTS);
        assert_eq!(curve.points.first().map(|p| p.step), Some(1));
        assert_eq!(curve.points.last().map(|p| p.step), Some(200));
    }

    #[test]
    fn a_non_finite_trend_shows_its_first_bad_line() {
        let mut c = MetricCollector::new();
        for step in 1..=30u64 {
            let loss = if step < 20 {
                format!("{:.2}", 3.0 / step as f64)
            } else {
                "nan".to_owned()
            };
            c.line(
                format!("\rstep {step} loss={loss} lr=0.1").as_bytes(),
                step + 4,
                Some(3),
            );
        }
        let trends = c.trends();
        assert_eq!(trends.len(), 1, "{trends:?}");
        let lines: Vec<u64> = trends[0].evidence.iter().map(|k| k.line).collect();
        assert_eq!(lines, [5, 24, 34]);
        // The carriage-return segment the values were read from.
        assert_eq!(trends[0].evidence[1].text, "step 20 loss=nan lr=0.1");
        let curve = trends[0].curve.as_ref().unwrap();
        assert_eq!(curve.points.last().and_then(|p| p.value), None);
    }
}
