//! Line shapes: the `key value` pairs of one line, kept when the key names
//! a training metric.
//!
//! The tokenizer walks the bytes once. It finds number tokens (`12`,
//! `1.0e-03`, `-inf`, `nan`, each standing alone as a word, optionally
//! quoted, optionally followed by a size or rate unit), and takes the text
//! between the previous token and this one as the key: trailing separators
//! (`=`, `:`, quotes, `[`) are dropped, a `(unit)` is set aside, and the key
//! starts after the last delimiter (`|`, `,`, `{`, `]`, ...). So `lm loss:
//! 6.5E+00 |`, `loss=0.3`, `'loss': '1.07'`, `step 12 | loss 0.42` and
//! `step 1 loss 1.1 scale 32768` all give the key `loss`. Multi-word keys
//! must match whole (`lm loss`, `grad norm`), so prose such as `the loss 3`
//! is not a metric.
//!
//! A line counts only when it has two recognised pairs (the step counts),
//! or one metric written `key=value` or as a quoted dictionary key: a lone
//! number after a word in an error message is never a metric.

use crate::format::{GIB, KIB, MIB, TIB};
use crate::metric::{Metric, METRICS};
use memchr::memmem::Finder;
use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::{char, digit1, space0};
use nom::combinator::map_res;
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};
use std::sync::LazyLock;

/// The longest key (normalised) that can name a metric.
const KEY_MAX: usize = 40;
/// The longest number token looked at (digits, point, exponent).
const NUMBER_MAX: usize = 40;

/// What one line says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reading {
    /// The step (or iteration) the line names, if any.
    pub step: Option<u64>,
    /// Value per metric (memory in bytes), first occurrence in the line.
    pub values: [Option<f64>; METRICS],
}

impl Reading {
    /// The metrics present, in [`Metric::ALL`] order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Metric, f64)> + '_ {
        Metric::ALL
            .iter()
            .zip(self.values.iter())
            .filter_map(|(m, v)| v.map(|v| (*m, v)))
    }
}

/// A unit written after a number or in a key.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
enum Unit {
    #[default]
    None,
    /// Bytes per unit.
    Size(f64),
    /// A rate; the metric it measures.
    Rate(Metric),
    /// A duration (`ms`, `s`, `sec`); seconds per unit. Only the step and
    /// data time metrics read it: for any other metric it is what `Other`
    /// is.
    Time(f64),
    /// Some other unit (`%`): the value is not a size.
    Other,
}

/// A number token.
#[derive(Debug, Clone, Copy)]
struct Token {
    start: usize,
    end: usize,
    value: f64,
    unit: Unit,
    /// A time unit written after a space (`0.27 sec`): seconds per unit and
    /// where the word ends. Only a time metric's key takes it (and the
    /// value's end moves past it); for any other key the word is left to the
    /// text of the next key, as before time units were read.
    spaced_time: Option<(f64, usize)>,
}

/// How the key was tied to its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Tie {
    /// `key value`.
    #[default]
    Space,
    /// `key: value`, `key = value`.
    Loose,
    /// `key=value`, `'key': value`, `"key": value`.
    Tight,
}

/// Parses one line; `None` when it holds no metric in a recognised shape.
pub(crate) fn parse(line: &[u8]) -> Option<Reading> {
    let mut reading = Reading {
        step: None,
        values: [None; METRICS],
    };
    let mut recognised = 0u32;
    let mut metrics = 0u32;
    let mut tight_metric = false;
    let mut key_from = 0;
    let mut pos = 0;
    while let Some(token) = next_token(line, &mut pos) {
        let key_text = line.get(key_from..token.start).unwrap_or_default();
        key_from = token.end;
        let key = Key::read(key_text).unwrap_or_default();
        let name = key.name();
        let spaced_time = token.spaced_time.filter(|_| token.unit == Unit::None);
        if name == b"train_runtime" || name == b"eval_runtime" {
            // A Hugging Face end-of-run summary: averages, not a step.
            return None;
        }
        match classify(&key, &token) {
            Some(Slot::Step(step)) if reading.step.is_none() => {
                reading.step = Some(step);
                recognised += 1;
            }
            Some(Slot::Metric(metric, value)) => {
                if let (true, Some((_, end))) = (metric.is_time(), spaced_time) {
                    key_from = end;
                }
                let slot = reading.values.get_mut(metric.index())?;
                if slot.is_none() {
                    *slot = Some(value);
                    recognised += 1;
                    metrics += 1;
                    tight_metric |= key.tie == Tie::Tight;
                }
            }
            Some(Slot::Step(_)) | None => {}
        }
    }
    if reading.step.is_none() && metrics > 0 {
        if let Some(step) = mmengine_step(line) {
            reading.step = Some(step);
            recognised += 1;
        }
    }
    let shaped = recognised >= 2 || tight_metric;
    (metrics > 0 && shaped).then_some(reading)
}

/// The iteration of an MMEngine (OpenMMLab, XTuner) training line:
/// `Epoch(train) [1][240/735]` (by epoch: the iteration within the epoch)
/// or `Iter(train) [  240/10000]` (by iteration).
fn mmengine_step(line: &[u8]) -> Option<u64> {
    static TRAIN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"(train) ["));
    let at = TRAIN.find(line)?;
    let head = line
        .get(..at)?
        .iter()
        .rposition(|b| !b.is_ascii_alphabetic())
        .map_or(0, |i| i + 1);
    let (_, step) = mmengine_position(line.get(head..)?).ok()?;
    Some(step)
}

/// `Epoch(train) [E][I/N]` or `Iter(train) [I/N]`: I.
fn mmengine_position(s: &[u8]) -> IResult<&[u8], u64> {
    let number = || {
        map_res(digit1, |d: &[u8]| {
            std::str::from_utf8(d)
                .map_err(|_| ())
                .and_then(|d| d.parse::<u64>().map_err(|_| ()))
        })
    };
    let iteration = || {
        delimited(
            (char('['), space0),
            terminated(number(), (char('/'), space0, digit1)),
            char(']'),
        )
    };
    alt((
        preceded(
            (tag(&b"Epoch(train) ["[..]), space0, digit1, char(']')),
            iteration(),
        ),
        preceded(tag(&b"Iter(train) "[..]), iteration()),
    ))
    .parse(s)
}

enum Slot {
    Step(u64),
    Metric(Metric, f64),
}

fn classify(key: &Key, token: &Token) -> Option<Slot> {
    let (known, key_unit) = match key_kind(key.name()) {
        Some(kind) => (Some(kind), key.unit),
        None => match time_suffix(key.name()) {
            Some((metric, per_unit)) if key.unit == Unit::None => {
                (Some(KeyKind::Metric(metric)), Unit::Time(per_unit))
            }
            _ => (None, key.unit),
        },
    };
    match known {
        Some(KeyKind::Step) => {
            let v = token.value;
            let integral = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 9.0e15;
            // Integral by the check above; the cast cannot truncate.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let step = v as u64;
            (integral && token.unit == Unit::None).then_some(Slot::Step(step))
        }
        Some(KeyKind::Metric(metric)) if metric.is_memory() => {
            let per_unit = match (token.unit, key_unit) {
                (Unit::Size(s), _) | (Unit::None, Unit::Size(s)) => s,
                _ => return None,
            };
            let bytes = token.value * per_unit;
            (bytes.is_finite() && bytes >= 0.0).then_some(Slot::Metric(metric, bytes))
        }
        Some(KeyKind::Metric(metric)) if metric.is_time() => {
            // The value's own unit first (`0.271s`, `271 ms`), then the
            // key's (`(ms)`, `_ms`); none is seconds.
            let spaced = token.spaced_time.map(|(per_unit, _)| Unit::Time(per_unit));
            let per_unit = match (token.unit, spaced, key_unit) {
                (Unit::Time(t), _, _)
                | (Unit::None, Some(Unit::Time(t)), _)
                | (Unit::None, None, Unit::Time(t)) => t,
                (Unit::None, None, Unit::None) => 1.0,
                _ => return None,
            };
            let seconds = token.value * per_unit;
            (seconds.is_finite() && seconds >= 0.0).then_some(Slot::Metric(metric, seconds))
        }
        Some(KeyKind::Metric(metric)) => match token.unit {
            Unit::None => Some(Slot::Metric(metric, token.value)),
            Unit::Rate(rate) if metric.is_throughput() => Some(Slot::Metric(rate, token.value)),
            _ => None,
        },
        None => match token.unit {
            // `152.3 samples/s` after a `|`: the unit names the metric.
            Unit::Rate(rate) => Some(Slot::Metric(rate, token.value)),
            _ => None,
        },
    }
}

enum KeyKind {
    Step,
    Metric(Metric),
}

fn key_kind(name: &[u8]) -> Option<KeyKind> {
    use Metric::*;
    let metric = match name {
        b"step" | b"steps" | b"iter" | b"iteration" | b"global_step" => return Some(KeyKind::Step),
        b"loss" | b"lm_loss" | b"train_loss" | b"training_loss" | b"train/loss" => Loss,
        b"grad_norm" | b"gradient_norm" | b"train/grad_norm" => GradNorm,
        b"lr" | b"learning_rate" | b"train/learning_rate" => LearningRate,
        b"scale" | b"loss_scale" | b"cur_scale" => LossScale,
        b"mem_allocated" | b"allocated" | b"memory_allocated" | b"mem_alloc" | b"mem"
        | b"memory" | b"gpu_mem" | b"gpu_memory" | b"allocated_memory" => MemAllocated,
        b"mem_reserved" | b"reserved" | b"memory_reserved" | b"reserved_memory" => MemReserved,
        b"total" | b"capacity" | b"mem_total" | b"memory_total" | b"total_memory"
        | b"mem_capacity" => MemTotal,
        b"samples/s"
        | b"samples/sec"
        | b"samples_per_second"
        | b"samples_per_sec"
        | b"sample/s" => SamplesPerSecond,
        b"tokens/s" | b"tokens/sec" | b"tokens_per_second" | b"tokens_per_sec" | b"tok/s" => {
            TokensPerSecond
        }
        b"it/s" | b"iters/s" | b"iterations/s" | b"it/sec" => IterationsPerSecond,
        b"step_time"
        | b"iter_time"
        | b"iteration_time"
        | b"time_per_step"
        | b"time_per_iteration"
        | b"batch_time"
        | b"elapsed_time_per_iteration" => StepTime,
        b"data_time" | b"data_load_time" | b"dataloader_time" | b"data_loading_time"
        | b"data_wait" | b"data_wait_time" => DataTime,
        _ => return None,
    };
    Some(KeyKind::Metric(metric))
}

/// A time key with its unit as a suffix (`step_time_ms`, `data_time_s`):
/// the metric and seconds per unit.
fn time_suffix(name: &[u8]) -> Option<(Metric, f64)> {
    [(&b"_ms"[..], 0.001), (b"_s", 1.0), (b"_sec", 1.0)]
        .into_iter()
        .find_map(|(suffix, per_unit)| {
            let stem = name.strip_suffix(suffix)?;
            match key_kind(stem)? {
                KeyKind::Metric(metric) if metric.is_time() => Some((metric, per_unit)),
                _ => None,
            }
        })
}

/// A key, normalised: ASCII lower case, spaces and dashes as `_`.
struct Key {
    buf: [u8; KEY_MAX],
    len: usize,
    tie: Tie,
    unit: Unit,
}

impl Default for Key {
    fn default() -> Self {
        Key {
            buf: [0; KEY_MAX],
            len: 0,
            tie: Tie::Space,
            unit: Unit::None,
        }
    }
}

impl Key {
    fn name(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// Reads the key from the text between the previous token and a value.
    fn read(text: &[u8]) -> Option<Key> {
        // Separators between key and value.
        let mut end = text.len();
        while let Some(&b) = end.checked_sub(1).and_then(|i| text.get(i)) {
            if matches!(b, b' ' | b'\t' | b'=' | b':' | b'\'' | b'"' | b'[' | b'(') {
                end -= 1;
            } else {
                break;
            }
        }
        let separators = text.get(end..).unwrap_or_default();
        let tie = match separators {
            [b'=', ..] | [b'\'' | b'"', b':', ..] => Tie::Tight,
            s if s.iter().any(|&b| b == b':' || b == b'=') => Tie::Loose,
            _ => Tie::Space,
        };
        let mut text = text.get(..end).unwrap_or_default();
        // `(ms)`, `(GiB)`: a unit for the value.
        let mut unit = Unit::None;
        if text.last() == Some(&b')') {
            let window = text.len().saturating_sub(12);
            let open = text
                .get(window..)
                .and_then(|t| memchr::memrchr(b'(', t))
                .map(|i| i + window)?;
            let inner = text.get(open + 1..text.len() - 1).unwrap_or_default();
            unit = unit_word(inner).unwrap_or(Unit::Other);
            text = trim_end_spaces(text.get(..open).unwrap_or_default());
        }
        // The key starts after the last delimiter.
        let window = text.len().saturating_sub(KEY_MAX + 1);
        let tail = text.get(window..).unwrap_or_default();
        let start = tail
            .iter()
            .rposition(|&b| is_delimiter(b))
            .map(|i| i + 1)
            .or((window == 0).then_some(0))?;
        let raw = trim_start(tail.get(start..).unwrap_or_default());
        if raw.is_empty() || raw.len() > KEY_MAX {
            return None;
        }
        let mut key = Key {
            tie,
            unit,
            ..Key::default()
        };
        let mut last_space = false;
        for &b in raw {
            let c = match b {
                b' ' | b'\t' | b'-' => b'_',
                b'\'' | b'"' => return None,
                _ => b.to_ascii_lowercase(),
            };
            if c == b'_' && last_space {
                continue;
            }
            last_space = matches!(b, b' ' | b'\t');
            *key.buf.get_mut(key.len)? = c;
            key.len += 1;
        }
        key.split_unit_suffix();
        Some(key)
    }

    /// `memory_allocated_gb` → `memory_allocated` with a GiB-style unit.
    fn split_unit_suffix(&mut self) {
        if self.unit != Unit::None {
            return;
        }
        let name = self.name();
        for (suffix, per_unit) in [
            (&b"_bytes"[..], 1.0),
            (b"_kib", KIB),
            (b"_kb", KIB),
            (b"_mib", MIB),
            (b"_mb", MIB),
            (b"_gib", GIB),
            (b"_gb", GIB),
        ] {
            if name.len() > suffix.len() && name.ends_with(suffix) {
                self.len -= suffix.len();
                self.unit = Unit::Size(per_unit);
                return;
            }
        }
    }
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b'|' | b',' | b'{' | b'}' | b';' | b'[' | b']' | b'(' | b')' | b':' | b'=' | b'<' | b'>'
    )
}

fn trim_start(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\'' | b'"', rest @ ..] = s {
        s = rest;
    }
    s
}

fn trim_end_spaces(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Bytes that continue a word (a number glued to them is part of a name).
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

/// A unit word: sizes (`B`, `KiB`, `MB`, `GiB`, ...), rates (`samples/s`,
/// `tokens/s`), time.
fn unit_word(w: &[u8]) -> Option<Unit> {
    let unit = match w {
        b"B" | b"bytes" => Unit::Size(1.0),
        b"KiB" | b"KB" | b"kB" | b"K" => Unit::Size(KIB),
        b"MiB" | b"MB" | b"M" => Unit::Size(MIB),
        b"GiB" | b"GB" | b"G" => Unit::Size(GIB),
        b"TiB" | b"TB" => Unit::Size(TIB),
        b"samples/s" | b"samples/sec" | b"sample/s" => Unit::Rate(Metric::SamplesPerSecond),
        b"tokens/s" | b"tokens/sec" | b"tok/s" => Unit::Rate(Metric::TokensPerSecond),
        b"ms" => Unit::Time(0.001),
        b"s" | b"sec" => Unit::Time(1.0),
        b"%" => Unit::Other,
        _ => return None,
    };
    Some(unit)
}

/// The unit word starting at `at`, if one ends at a word boundary there.
fn unit_at(line: &[u8], at: usize) -> Option<(Unit, usize)> {
    let rest = line.get(at..)?;
    let len = rest
        .iter()
        .take(12)
        .position(|&b| !(b.is_ascii_alphabetic() || b == b'/'))
        .unwrap_or(rest.len().min(12));
    let word = rest.get(..len)?;
    // A word followed by `:` or `=` is the next key (`samples/sec: 125`).
    if rest
        .get(len)
        .is_some_and(|&b| (is_word(b) && b != b'.') || b == b':' || b == b'=')
    {
        return None;
    }
    let unit = unit_word(word)?;
    Some((unit, at + len))
}

/// Finds the next number token at or after `*pos` and moves `*pos` past it.
fn next_token(line: &[u8], pos: &mut usize) -> Option<Token> {
    let mut i = *pos;
    while let Some(&b) = line.get(i) {
        let candidate = matches!(
            b,
            b'0'..=b'9' | b'.' | b'-' | b'+' | b'n' | b'N' | b'i' | b'I'
        );
        let boundary = i == 0 || line.get(i - 1).is_some_and(|&p| !is_word(p));
        if candidate && boundary {
            match lex(line, i) {
                Ok(token) => {
                    *pos = token.end;
                    return Some(token);
                }
                Err(skip) => i = skip.max(i + 1),
            }
        } else {
            i += 1;
        }
    }
    *pos = line.len();
    None
}

/// Lexes a number token at `start`; on failure, where to resume.
fn lex(line: &[u8], start: usize) -> Result<Token, usize> {
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut j = start;
    if matches!(at(j), b'-' | b'+') {
        j += 1;
    }
    let value;
    if at(j).is_ascii_alphabetic() {
        let word_end = j + line
            .get(j..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        let word = line.get(j..word_end).unwrap_or_default();
        let special = [&b"nan"[..], b"inf", b"infinity"]
            .iter()
            .any(|w| word.eq_ignore_ascii_case(w));
        if !special {
            return Err(word_end);
        }
        j = word_end;
        value = parse_f64(line.get(start..j).unwrap_or_default()).ok_or(j)?;
    } else {
        let int_start = j;
        while at(j).is_ascii_digit() {
            j += 1;
        }
        let mut digits = j - int_start;
        if at(j) == b'.' && at(j + 1).is_ascii_digit() {
            j += 1;
            let frac_start = j;
            while at(j).is_ascii_digit() {
                j += 1;
            }
            digits += j - frac_start;
        }
        if digits == 0 {
            return Err(j + 1);
        }
        if matches!(at(j), b'e' | b'E') {
            let mut k = j + 1;
            if matches!(at(k), b'-' | b'+') {
                k += 1;
            }
            if at(k).is_ascii_digit() {
                while at(k).is_ascii_digit() {
                    k += 1;
                }
                j = k;
            }
        }
        if j - start > NUMBER_MAX {
            return Err(j);
        }
        value = parse_f64(line.get(start..j).unwrap_or_default()).ok_or(j)?;
    }
    // What follows: a unit, a boundary, or something that makes this part
    // of another shape (a time `12:30`, a version `1.2.3`, a name `4x`).
    let next = at(j);
    let mut unit = Unit::None;
    let mut end = j;
    let mut spaced_time = None;
    if next.is_ascii_alphabetic() || next == b'%' {
        if next == b'%' {
            unit = Unit::Other;
            end = j + 1;
        } else {
            let Some((u, e)) = unit_at(line, j) else {
                return Err(j);
            };
            unit = u;
            end = e;
        }
    } else if is_word(next) || (matches!(next, b':' | b'.') && at(j + 1).is_ascii_digit()) {
        return Err(j);
    } else if next == b' ' {
        let spaces = line
            .get(j..)
            .unwrap_or_default()
            .iter()
            .take(3)
            .take_while(|&&b| b == b' ')
            .count();
        match unit_at(line, j + spaces) {
            Some((Unit::Time(per_unit), e)) => spaced_time = Some((per_unit, e)),
            Some((Unit::Other, _)) | None => {}
            Some((u, e)) => {
                unit = u;
                end = e;
            }
        }
    }
    Ok(Token {
        start,
        end,
        value,
        unit,
        spaced_time,
    })
}

fn parse_f64(bytes: &[u8]) -> Option<f64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    type Got = (Option<u64>, Vec<(Metric, f64)>);

    fn get(line: &str) -> Option<Got> {
        parse(line.as_bytes()).map(|r| (r.step, r.iter().collect()))
    }

    const MIB: f64 = 1024.0 * 1024.0;

    #[test]
    fn mmengine_lines_name_their_iteration() {
        let (step, values) = get("10/30 22:19:57 - mmengine - INFO - Epoch(train) [1][240/735]  lr: 1.9813e-04  eta: 2:44:49  time: 2.8874  data_time: 0.0042  memory: 10762  loss: 2.5128  grad_norm: nan").unwrap();
        assert_eq!(step, Some(240));
        assert!(values
            .iter()
            .any(|(m, v)| *m == Metric::GradNorm && v.is_nan()));
        let (step, _) = get("2023/05/01 10:00:00 - mmengine - INFO - Iter(train) [  1200/160000]  lr: 1.0e-02  time: 0.5  loss: 0.71").unwrap();
        assert_eq!(step, Some(1200));
        assert_eq!(mmengine_step(b"Epoch(val) [1][20/50]  loss: 0.3"), None);
        assert_eq!(mmengine_step(b"Iter(train) [x/10]"), None);
    }

    #[test]
    fn pipe_separated_step_line() {
        let (step, values) = get(
            "step 12 | loss 0.4213 | lr 1.0e-03 | mem_allocated 1234.5MiB | mem_reserved 2048.0MiB | 152.3 samples/s",
        )
        .unwrap();
        assert_eq!(step, Some(12));
        assert_eq!(
            values,
            vec![
                (Metric::Loss, 0.4213),
                (Metric::LearningRate, 1.0e-3),
                (Metric::MemAllocated, 1234.5 * MIB),
                (Metric::MemReserved, 2048.0 * MIB),
                (Metric::SamplesPerSecond, 152.3),
            ]
        );
    }

    #[test]
    fn epoch_step_loss_with_padding_and_inf() {
        let (step, values) = get("Epoch 0 | step    2 | loss inf | lr 10.0").unwrap();
        assert_eq!(step, Some(2));
        assert_eq!(values[0], (Metric::Loss, f64::INFINITY));
        let (_, values) = get("Epoch 0 | step    3 | loss nan | lr 10.0").unwrap();
        assert!(values[0].1.is_nan());
    }

    #[test]
    fn iter_colon_key_equals_value() {
        let (step, values) =
            get("iter 2: loss=0.33338 allocated=161.0MiB reserved=482.0MiB").unwrap();
        assert_eq!(step, Some(2));
        assert_eq!(
            values,
            vec![
                (Metric::Loss, 0.33338),
                (Metric::MemAllocated, 161.0 * MIB),
                (Metric::MemReserved, 482.0 * MIB),
            ]
        );
    }

    #[test]
    fn space_separated_scale_line() {
        let (step, values) = get("step 165 loss 1.2040 scale 1.4013e-45 grad_norm nan").unwrap();
        assert_eq!(step, Some(165));
        assert_eq!(values[0], (Metric::Loss, 1.2040));
        assert_eq!(values[1].0, Metric::GradNorm);
        assert!(values[1].1.is_nan());
        assert_eq!(values[2], (Metric::LossScale, 1.4013e-45));
    }

    #[test]
    fn hugging_face_dicts_with_numbers_and_strings() {
        let (step, values) =
            get("{'loss': 0.5, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.01}").unwrap();
        assert_eq!(step, None);
        assert_eq!(values[0], (Metric::Loss, 0.5));
        assert!(values[1].1.is_nan());
        assert_eq!(values[2], (Metric::LearningRate, 1e-5));
        let (_, values) =
            get("{'loss': '1.07', 'grad_norm': 'nan', 'learning_rate': '1e-05', 'epoch': '0.01'}")
                .unwrap();
        assert_eq!(values[0], (Metric::Loss, 1.07));
        assert!(values[1].1.is_nan());
        assert_eq!(values[2], (Metric::LearningRate, 1e-5));
    }

    #[test]
    fn tqdm_residue_before_a_dict_is_not_a_metric() {
        let line = "  0%|          | 0/40 [00:00<?, ?it/s]  2%|\u{258e}         | 1/40 [00:00<00:15,  2.57it/s]                                              {'loss': '1.07', 'grad_norm': 'nan', 'learning_rate': '1e-05', 'epoch': '0.01'}";
        let (step, values) = get(line).unwrap();
        assert_eq!(step, None);
        assert_eq!(values.len(), 3);
        assert!(get("  2%|\u{258e}         | 1/40 [00:00<00:15,  2.57it/s]").is_none());
    }

    #[test]
    fn hugging_face_summary_is_not_a_step() {
        assert!(get("{'train_runtime': '0.5365', 'train_samples_per_second': '2386', 'train_steps_per_second': '74.55', 'train_loss': '1.075', 'epoch': '0.4'}").is_none());
    }

    // Typed from Megatron-LM's documented iteration line; no real log of it
    // is in the fixtures.
    #[test]
    fn megatron_iteration_line() {
        let (step, values) = get(" iteration      100/  500000 | consumed samples: 51200 | elapsed time per iteration (ms): 1234.5 | learning rate: 1.500E-04 | global batch size:   512 | lm loss: 6.543210E+00 | loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |").unwrap();
        assert_eq!(step, Some(100));
        assert_eq!(
            values,
            vec![
                (Metric::Loss, 6.54321),
                (Metric::GradNorm, 1.234),
                (Metric::LearningRate, 1.5e-4),
                (Metric::LossScale, 65536.0),
                // `elapsed time per iteration (ms): 1234.5`, in seconds.
                (Metric::StepTime, 1.2345),
            ]
        );
    }

    // Typed from DeepSpeed's documented step lines; no real log of them is
    // in the fixtures.
    #[test]
    fn deepspeed_lines() {
        let (step, values) =
            get("[Rank 0] step=100, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]").unwrap();
        assert_eq!(step, Some(100));
        assert_eq!(values, vec![(Metric::LearningRate, 0.0001)]);
        let (step, values) =
            get("steps: 100 loss: 2.3456 iter time (s): 0.512 samples/sec: 125.0").unwrap();
        assert_eq!(step, Some(100));
        assert_eq!(
            values,
            vec![
                (Metric::Loss, 2.3456),
                (Metric::SamplesPerSecond, 125.0),
                // `iter time (s): 0.512`.
                (Metric::StepTime, 0.512),
            ]
        );
    }

    // Typed from PyTorch Lightning's progress-bar postfix; the bar's own
    // `it/s` is not read (tqdm switches to `s/it` when slow).
    #[test]
    fn lightning_progress_postfix() {
        let (step, values) = get(
            "Epoch 0: 100%|##########| 10/10 [00:01<00:00,  8.50it/s, v_num=0, train_loss=0.123]",
        )
        .unwrap();
        assert_eq!(step, None);
        assert_eq!(values, vec![(Metric::Loss, 0.123)]);
    }

    #[test]
    fn key_forms_and_units() {
        let (_, v) = get("loss: 0.5 | tokens/s: 1.5e4").unwrap();
        assert_eq!(
            v,
            vec![(Metric::Loss, 0.5), (Metric::TokensPerSecond, 15000.0)]
        );
        let (_, v) = get("step=3 memory_allocated_gb=1.5 it/s=2").unwrap();
        assert_eq!(
            v,
            vec![
                (Metric::MemAllocated, 1.5 * 1024.0 * MIB),
                (Metric::IterationsPerSecond, 2.0)
            ]
        );
        let (_, v) = get("step 4 mem (MiB): 100 loss -inf").unwrap();
        assert_eq!(
            v,
            vec![
                (Metric::Loss, f64::NEG_INFINITY),
                (Metric::MemAllocated, 100.0 * MIB)
            ]
        );
        let (_, v) = get("step 5 loss NaN mem_alloc 6.19 GiB").unwrap();
        assert!(v[0].1.is_nan());
        assert_eq!(v[1].0, Metric::MemAllocated);
        let (_, v) = get("{\"loss\": 2.5}").unwrap();
        assert_eq!(v, vec![(Metric::Loss, 2.5)]);
    }

    // The shape of fixtures/metrics/dataloader_bottleneck/train.log.
    #[test]
    fn step_and_data_time() {
        let (step, values) =
            get("step 119 | loss 2.2928 | step_time 0.271s | data_time 0.268s | 236.5 samples/s")
                .unwrap();
        assert_eq!(step, Some(119));
        assert_eq!(
            values,
            vec![
                (Metric::Loss, 2.2928),
                (Metric::SamplesPerSecond, 236.5),
                (Metric::StepTime, 0.271),
                (Metric::DataTime, 0.268),
            ]
        );
    }

    #[test]
    fn time_units_after_the_value_or_in_the_key() {
        let times = |line: &str| -> Vec<(Metric, f64)> {
            get(line)
                .unwrap()
                .1
                .into_iter()
                .filter(|(m, _)| m.is_time())
                .collect()
        };
        let both = |step: f64, data: f64| vec![(Metric::StepTime, step), (Metric::DataTime, data)];
        assert_eq!(
            times("step 3 iter_time 271ms data_wait 250ms"),
            both(0.271, 0.25)
        );
        assert_eq!(
            times("step 3 | batch_time 0.27 sec | data_time 0.25 s"),
            both(0.27, 0.25)
        );
        assert_eq!(
            times("step 3 iteration_time 2 s data_load_time 1 s"),
            both(2.0, 1.0)
        );
        assert_eq!(
            times("iter 3: time_per_step=0.5 dataloader_time=0.25"),
            both(0.5, 0.25)
        );
        assert_eq!(
            times("step=3 step_time_ms=271 data_time_s=0.25"),
            both(0.271, 0.25)
        );
        assert_eq!(
            times("iteration 3 | step time (ms): 271.0 | data loading time (s): 0.25"),
            both(0.271, 0.25)
        );
        assert_eq!(
            times("{'loss': 0.5, 'step_time': '0.3', 'data_time': '0.1'}"),
            both(0.3, 0.1)
        );
        // A time unit after a space belongs to the time key only: the next
        // key is read after it.
        assert_eq!(
            get("step 3 step_time 0.3 s loss 0.5").unwrap().1,
            vec![(Metric::Loss, 0.5), (Metric::StepTime, 0.3)]
        );
    }

    #[test]
    fn time_needs_a_time_unit_or_none() {
        for line in [
            "step 3 | data_time 25% | loss 0.5",
            "step 3 | data_time 1.5MiB | loss 0.5",
            "step 3 | data_time (%): 25 | loss 0.5",
            "step 3 | data_time -0.5s | loss 0.5",
        ] {
            let (_, values) = get(line).unwrap();
            assert_eq!(values, vec![(Metric::Loss, 0.5)], "{line}");
        }
    }

    #[test]
    fn clock_times_and_prose_are_not_step_times() {
        for line in [
            "time 12:30",
            "step_time 12:30 data_time 12:31",
            "step 3 at 12:30:01.5 data time 12:30",
            "the data loading time was 3 s and the step took 4 s",
            "waited 0.5 s for data, step took 0.6 s",
            "data_time 0.268s",
            "Epoch 1 finished in 42.0 s, time 12:30",
        ] {
            assert_eq!(get(line), None, "{line}");
        }
    }

    #[test]
    fn other_metrics_read_as_before_time_units() {
        // `s`, `ms`, `sec` after a non-time metric: as before, a spaced one
        // is left alone and a glued one makes the value unreadable.
        let (_, v) = get("step 3 loss 0.5 s lr 0.1").unwrap();
        assert_eq!(v, vec![(Metric::Loss, 0.5)]);
        let (_, v) = get("step 3 loss 0.5ms lr 0.1").unwrap();
        assert_eq!(v, vec![(Metric::LearningRate, 0.1)]);
        assert_eq!(get("step 3s loss 0.5"), None);
    }

    #[test]
    fn memory_needs_a_unit() {
        let (_, v) = get("step 1 loss 2 allocated 1234").unwrap();
        assert_eq!(v, vec![(Metric::Loss, 2.0)]);
    }

    #[test]
    fn prose_and_error_numbers_are_not_metrics() {
        for line in [
            "training 33562624 parameters, batch 1024, lr 0.001",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 132.10 GiB is free. Including non-PyTorch memory, this process has 7.70 GiB memory in use. 6.99 GiB allowed; Of the allocated memory 6.92 GiB is allocated by PyTorch",
            "vm:1001:1001 [1] NCCL INFO Init timings - ncclCommInitRankConfig: rank 1 nranks 2 total 0.39 (kernels 0.31, alloc 0.01, bootstrap 0.00)",
            "| Allocated memory      | 164900 KiB | 328757 KiB |  14209 MiB |  14048 MiB |",
            "| GPU reserved memory   | 493568 KiB | 493568 KiB | 493568 KiB |      0 B   |",
            "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output.",
            "at step 5 the loss 3.2 was too high",
            "    loss = loss / 2",
            "W1129 15:17:28.342000 2012 torch/distributed/run.py:851] loss 1.0",
            "version 1.2.3 loss 2.0",
        ] {
            assert_eq!(get(line), None, "{line}");
        }
    }
}
