//! Bounded sample storage with decimation.
//!
//! A [`Series`] keeps at most [`CAPACITY`] samples however long the run
//! (fewer when an input holds many ranks, so that memory stays bounded).
//! It keeps every sample whose ordinal is a multiple of its stride; when it
//! is full it drops every other one and doubles the stride. The first and
//! the last sample are always exact, and so are the first non-finite sample
//! and the one before it (the moment a value went bad is never decimated
//! away).

use crate::CURVE_POINTS;
use coroner_model::{Curve, CurvePoint};

/// The most samples a series holds (plus the last one, held aside).
pub(crate) const CAPACITY: usize = 4096;
/// The least a series may be given (see [`Series::with_capacity`]).
pub(crate) const MIN_CAPACITY: usize = 256;

/// The capacity of the series of the `position`-th rank or GPU of an input:
/// the first `full` get [`CAPACITY`], later ones less, so that an input of
/// a thousand ranks holds tens of MB, not GB.
pub(crate) fn capacity_at(position: usize, full: usize) -> usize {
    if position < full {
        CAPACITY
    } else {
        CAPACITY * full / (position + 1)
    }
}

/// One value of one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// The step, or the sample's ordinal when the line named no step.
    pub step: u64,
    pub value: f64,
    /// The input's 1-based line number.
    pub line: u64,
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    sample: Sample,
    ordinal: u64,
    pinned: bool,
}

/// The samples of one metric of one rank, decimated to a bound.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    kept: Vec<Kept>,
    last: Option<Kept>,
    seen: u64,
    stride: u64,
    seen_non_finite: bool,
    capacity: usize,
}

impl Default for Series {
    fn default() -> Self {
        Series {
            kept: Vec::new(),
            last: None,
            seen: 0,
            stride: 1,
            seen_non_finite: false,
            capacity: CAPACITY,
        }
    }
}

impl Series {
    /// A series that holds at most `capacity` samples (at least
    /// [`MIN_CAPACITY`], at most [`CAPACITY`]).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Series {
            capacity: capacity.clamp(MIN_CAPACITY, CAPACITY),
            ..Series::default()
        }
    }

    /// Adds the next sample.
    pub(crate) fn push(&mut self, sample: Sample) {
        let ordinal = self.seen;
        self.seen += 1;
        let first_bad = !sample.value.is_finite() && !self.seen_non_finite;
        self.seen_non_finite |= first_bad;
        if let Some(mut previous) = self.last.take() {
            previous.pinned |= first_bad;
            if previous.pinned || previous.ordinal % self.stride == 0 {
                self.kept.push(previous);
            }
        }
        self.last = Some(Kept {
            sample,
            ordinal,
            pinned: first_bad,
        });
        if self.kept.len() >= self.capacity {
            self.decimate();
        }
    }

    fn decimate(&mut self) {
        // Repeat in case pinned samples keep it full (they are at most two).
        while self.kept.len() >= self.capacity && self.stride < u64::MAX / 2 {
            self.stride *= 2;
            let stride = self.stride;
            self.kept
                .retain(|k| k.pinned || k.ordinal == 0 || k.ordinal % stride == 0);
        }
    }

    /// How many samples were pushed (before decimation).
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// The samples held, in order: the first, every stride-th, the pinned
    /// ones, and the last.
    pub(crate) fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        self.kept.iter().chain(self.last.iter()).map(|k| k.sample)
    }

    pub(crate) fn first(&self) -> Option<Sample> {
        self.samples().next()
    }

    pub(crate) fn last(&self) -> Option<Sample> {
        self.last.map(|k| k.sample)
    }

    /// The samples held, thinned evenly to at most [`CURVE_POINTS`] (the
    /// first and the last kept), as the curve of `metric` in `unit`.
    pub(crate) fn curve(&self, metric: &str, unit: &'static str) -> Curve {
        let held: Vec<Sample> = self.samples().collect();
        let n = held.len();
        let points = (0..n.min(CURVE_POINTS))
            .filter_map(|i| {
                let at = if n <= CURVE_POINTS {
                    i
                } else {
                    i * (n - 1) / (CURVE_POINTS - 1)
                };
                held.get(at)
            })
            .map(|s| CurvePoint {
                step: s.step,
                value: s.value.is_finite().then_some(s.value),
            })
            .collect();
        Curve {
            metric: metric.to_owned(),
            unit: unit.to_owned(),
            points,
            marks: Vec::new(),
            fit: None,
        }
    }

    /// How many samples are held.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.kept.len() + usize::from(self.last.is_some())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample(i: u64, value: f64) -> Sample {
        Sample {
            step: i + 1,
            value,
            line: i + 10,
        }
    }

    #[test]
    fn stays_bounded_and_keeps_ends_exact() {
        let mut s = Series::default();
        for i in 0..1_000_000 {
            s.push(sample(i, i as f64));
            assert!(s.held() <= CAPACITY + 1);
        }
        assert_eq!(s.seen(), 1_000_000);
        assert_eq!(s.first(), Some(sample(0, 0.0)));
        assert_eq!(s.last(), Some(sample(999_999, 999_999.0)));
        let held: Vec<_> = s.samples().collect();
        assert!(held.len() > CAPACITY / 2);
        assert!(held.windows(2).all(|w| w[0].step < w[1].step));
    }

    #[test]
    fn first_non_finite_and_its_predecessor_survive() {
        let mut s = Series::default();
        for i in 0..500_000 {
            let v = if i >= 123_457 { f64::NAN } else { 1.0 };
            s.push(sample(i, v));
        }
        let held: Vec<_> = s.samples().collect();
        let bad = held.iter().position(|x| x.value.is_nan()).unwrap();
        assert_eq!(held[bad].step, 123_458);
        assert_eq!(held[bad - 1].step, 123_457);
        assert_eq!(held[bad - 1].value, 1.0);
    }
}
