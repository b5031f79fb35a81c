//! A metric's curve as one line of text: `loss ▁▁▂▃▅▇ 0.41 at step 1 → 2.93
//! at step 400`, the bars scaled between the curve's least and greatest
//! finite values, `×` for a value that was not finite.

use coroner_model::{Curve, CurvePoint};

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// The most bars drawn: a curve of more points is thinned evenly.
const MAX_BARS: usize = 32;
/// The bar of a value that was not finite (`nan`, `inf`).
const NOT_FINITE: char = '×';

/// The curve in one line, or `None` for a curve of fewer than two points.
pub(crate) fn line(curve: &Curve) -> Option<String> {
    let (first, last) = (curve.points.first()?, curve.points.last()?);
    if curve.points.len() < 2 {
        return None;
    }
    let finite = curve.points.iter().filter_map(|p| p.value);
    let (low, high) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let n = curve.points.len();
    let shown = (0..n.min(MAX_BARS)).filter_map(|i| {
        let at = if n <= MAX_BARS {
            i
        } else {
            i * (n - 1) / (MAX_BARS - 1)
        };
        curve.points.get(at)
    });
    let bars: String = shown
        .map(|p| match p.value {
            None => NOT_FINITE,
            Some(v) if high > low => {
                let at = ((v - low) / (high - low) * 7.0).round();
                BARS[(at.clamp(0.0, 7.0)) as usize]
            }
            Some(_) => BARS[0],
        })
        .collect();
    let mut text = format!(
        "{} {bars} {} → {}",
        curve.metric,
        point(first, &curve.unit),
        point(last, &curve.unit)
    );
    if curve.points.iter().any(|p| p.value.is_none()) {
        text.push_str(&format!(" ({NOT_FINITE}: not finite)"));
    }
    Some(text)
}

fn point(p: &CurvePoint, unit: &str) -> String {
    let value = p
        .value
        .map_or_else(|| "not finite".to_owned(), |v| value(v, unit));
    format!("{value} at step {}", p.step)
}

/// `v` written for a reader: sizes in KiB/MiB/GiB, seconds and percentages
/// with their unit, other numbers with four significant digits.
pub(crate) fn value(v: f64, unit: &str) -> String {
    match unit {
        "bytes" => {
            const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
            let mut size = v;
            let mut at = 0;
            while size.abs() >= 1024.0 && at < UNITS.len() - 1 {
                size /= 1024.0;
                at += 1;
            }
            format!("{size:.1} {}", UNITS[at])
        }
        "%" => format!("{v:.0}%"),
        "s" => format!("{} s", number(v)),
        _ => number(v),
    }
}

fn number(v: f64) -> String {
    let magnitude = v.abs();
    if magnitude != 0.0 && !(1e-3..1e6).contains(&magnitude) {
        return format!("{v:.3e}");
    }
    let digits = if magnitude >= 1000.0 {
        0
    } else if magnitude >= 100.0 {
        1
    } else if magnitude >= 1.0 {
        2
    } else {
        4
    };
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn curve(metric: &str, unit: &str, values: &[Option<f64>]) -> Curve {
        Curve {
            metric: metric.to_owned(),
            unit: unit.to_owned(),
            marks: Vec::new(),
            fit: None,
            points: values
                .iter()
                .enumerate()
                .map(|(i, &value)| CurvePoint {
                    step: i as u64 + 1,
                    value,
                })
                .collect(),
        }
    }

    #[test]
    fn a_growing_memory_curve() {
        let mib = 1024.0 * 1024.0;
        let values: Vec<Option<f64>> = (0..8).map(|i| Some((100 + 100 * i) as f64 * mib)).collect();
        assert_eq!(
            line(&curve("memory allocated", "bytes", &values)).unwrap(),
            "memory allocated ▁▂▃▄▅▆▇█ 100.0 MiB at step 1 → 800.0 MiB at step 8"
        );
    }

    #[test]
    fn a_loss_turning_nan() {
        let values = [Some(2.5), Some(2.25), Some(2.0), None, None];
        assert_eq!(
            line(&curve("loss", "", &values)).unwrap(),
            "loss █▅▁×× 2.5 at step 1 → not finite at step 5 (×: not finite)"
        );
    }

    #[test]
    fn a_long_curve_is_thinned_to_its_bars() {
        let values: Vec<Option<f64>> = (0..64).map(|i| Some(i as f64)).collect();
        let text = line(&curve("samples/s", "", &values)).unwrap();
        assert_eq!(text.chars().filter(|c| BARS.contains(c)).count(), MAX_BARS);
        assert!(text.ends_with("0 at step 1 → 63 at step 64"), "{text}");
    }

    #[test]
    fn flat_tiny_and_short_curves() {
        let flat = [Some(65536.0), Some(65536.0)];
        assert_eq!(
            line(&curve("loss scale", "", &flat)).unwrap(),
            "loss scale ▁▁ 65536 at step 1 → 65536 at step 2"
        );
        let tiny = [Some(1.4013e-45), Some(0.5)];
        assert!(line(&curve("loss scale", "", &tiny))
            .unwrap()
            .starts_with("loss scale ▁█ 1.401e-45 at step 1"));
        assert_eq!(line(&curve("loss", "", &[Some(1.0)])), None);
        assert_eq!(line(&curve("loss", "", &[])), None);
    }
}
