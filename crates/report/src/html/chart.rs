//! A metric's curve as an SVG line chart: the values over the steps, the
//! values that were not finite as red crosses along the top, the steps a
//! trend was decided at as dashed verticals, and a growth's fitted line.

use super::text;
use crate::sparkline::value;
use coroner_model::{Curve, Finding};
use maud::{html, Markup};

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 86.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 40.0;
const TICKS: usize = 4;

/// The chart of `curve`, the series behind `finding`.
pub(super) fn render(finding: &Finding, curve: &Curve) -> Markup {
    let steps = curve.points.iter().map(|p| p.step);
    let (Some(first), Some(last)) = (steps.clone().min(), steps.max()) else {
        return html! {};
    };
    let finite: Vec<f64> = curve.points.iter().filter_map(|p| p.value).collect();
    let (mut low, mut high) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if finite.is_empty() {
        (low, high) = (0.0, 1.0);
    }
    // A curve of positive values is drawn from zero unless that flattens
    // it; a percentage on its whole scale.
    if low > 0.0 && low < high * 0.5 {
        low = 0.0;
    }
    if curve.unit == "%" {
        (low, high) = (low.min(0.0), high.max(100.0));
    }
    if high <= low {
        high = low + low.abs().max(1.0);
    }
    let (low, high, ticks) = nice_ticks(low, high, &curve.unit);
    let span_steps = (last - first).max(1) as f64;
    let x = |step: u64| {
        LEFT + (step.saturating_sub(first)) as f64 / span_steps * (WIDTH - LEFT - RIGHT)
    };
    let y = |v: f64| TOP + (1.0 - (v - low) / (high - low)) * (HEIGHT - TOP - BOTTOM);
    let path: String = runs(curve)
        .iter()
        .map(|run| {
            run.iter()
                .enumerate()
                .map(|(i, (step, v))| {
                    format!(
                        "{}{:.1},{:.1}",
                        if i == 0 { "M" } else { " L" },
                        x(*step),
                        y(*v)
                    )
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ");
    let dots = curve.points.len() <= 40;
    let rank = finding
        .rank
        .map(|r| format!(" on rank {r}"))
        .unwrap_or_default();
    let caption = format!("{}{rank}: {}", curve.metric, text(&finding.message, 300));
    let fit = curve.fit.map(|f| {
        let at = |step: u64| f.intercept + f.slope * step as f64;
        (x(first), y(at(first)), x(last), y(at(last)))
    });
    html! {
        figure.figure data-metric=(curve.metric) {
            figcaption { (caption) }
            svg viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img" aria-label=(format!("{} over steps {first} to {last}", curve.metric)) {
                @if finite.is_empty() {
                    text.small x=(LEFT - 8.0) y=(fmt(y(high))) text-anchor="end" { "no finite value" }
                }
                @for t in ticks.iter().filter(|_| !finite.is_empty()) {
                    line.grid x1=(LEFT) x2=(WIDTH - RIGHT) y1=(fmt(y(*t))) y2=(fmt(y(*t))) {}
                    text.small x=(LEFT - 8.0) y=(fmt(y(*t) + 4.0)) text-anchor="end" { (value(*t, &curve.unit)) }
                }
                line.axis x1=(LEFT) x2=(WIDTH - RIGHT) y1=(HEIGHT - BOTTOM) y2=(HEIGHT - BOTTOM) {}
                text.small x=(LEFT) y=(HEIGHT - BOTTOM + 18.0) text-anchor="start" { "step " (first) }
                text.small x=(WIDTH - RIGHT) y=(HEIGHT - BOTTOM + 18.0) text-anchor="end" { "step " (last) }
                @if let Some((x1, y1, x2, y2)) = fit {
                    line.fit x1=(fmt(x1)) y1=(fmt(y1)) x2=(fmt(x2)) y2=(fmt(y2)) {
                        title { "least-squares line" }
                    }
                }
                path.series d=(path) {}
                @if dots {
                    @for p in &curve.points {
                        @if let Some(v) = p.value {
                            circle.m-info cx=(fmt(x(p.step))) cy=(fmt(y(v))) r="2.5" {
                                title { "step " (p.step) ": " (value(v, &curve.unit)) }
                            }
                        }
                    }
                }
                @for p in curve.points.iter().filter(|p| p.value.is_none()) {
                    g {
                        title { "step " (p.step) ": not finite" }
                        line.nonfinite x1=(fmt(x(p.step) - 4.0)) x2=(fmt(x(p.step) + 4.0)) y1=(TOP - 14.0) y2=(TOP - 6.0) {}
                        line.nonfinite x1=(fmt(x(p.step) - 4.0)) x2=(fmt(x(p.step) + 4.0)) y1=(TOP - 6.0) y2=(TOP - 14.0) {}
                    }
                }
                @for mark in &curve.marks {
                    line.onset x1=(fmt(x(mark.step))) x2=(fmt(x(mark.step))) y1=(TOP) y2=(HEIGHT - BOTTOM) {}
                    text.onset-label x=(fmt(x(mark.step) + 5.0)) y=(TOP + 12.0)
                        text-anchor=(if x(mark.step) > WIDTH * 0.7 { "end" } else { "start" })
                        dx=(if x(mark.step) > WIDTH * 0.7 { "-10" } else { "0" }) {
                        (text(&mark.label, 80)) " (step " (mark.step) ")"
                    }
                }
            }
            div.legend {
                span.l-series { (curve.metric) @if !curve.unit.is_empty() && curve.unit != "%" { " (" (curve.unit) ")" } }
                @if curve.fit.is_some() { span.l-fit { "least-squares line" } }
                @if !curve.marks.is_empty() { span.l-onset { "where the trend was decided" } }
                @if curve.points.iter().any(|p| p.value.is_none()) { span.l-symptom { "not finite (×)" } }
            }
        }
    }
}

/// The curve's finite points as runs broken where a value was not finite.
fn runs(curve: &Curve) -> Vec<Vec<(u64, f64)>> {
    let mut out: Vec<Vec<(u64, f64)>> = vec![Vec::new()];
    for p in &curve.points {
        match (p.value, out.last_mut()) {
            (Some(v), Some(run)) => run.push((p.step, v)),
            (None, Some(run)) if !run.is_empty() => out.push(Vec::new()),
            _ => {}
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

/// Round ticks for the range `low`..`high`: a step of 1, 2, 2.5 or 5 times a
/// power of ten (of the range's binary unit for bytes), about [`TICKS`] of
/// them, and the range widened to the first and last.
fn nice_ticks(low: f64, high: f64, unit: &str) -> (f64, f64, Vec<f64>) {
    let scale = if unit == "bytes" {
        let mut scale = 1.0;
        while high.abs().max(low.abs()) / scale >= 1024.0 && scale < 1024f64.powi(4) {
            scale *= 1024.0;
        }
        scale
    } else {
        1.0
    };
    let raw = (high - low) / scale / TICKS as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power)
        * scale;
    if !(step.is_finite() && step > 0.0) {
        return (low, high, vec![low, high]);
    }
    let first = (low / step).floor() * step;
    let last = (high / step).ceil() * step;
    let n = ((last - first) / step).round() as usize;
    let ticks = (0..=n.min(20)).map(|i| first + step * i as f64).collect();
    (first, last, ticks)
}

fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        let (low, high, ticks) = nice_ticks(0.0, 6945.0 * 1024.0 * 1024.0, "bytes");
        assert_eq!(low, 0.0);
        assert_eq!(high, 8.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(ticks.len(), 5);
        let (_, _, ticks) = nice_ticks(0.0, 100.0, "%");
        assert_eq!(ticks, vec![0.0, 25.0, 50.0, 75.0, 100.0]);
        let (low, high, _) = nice_ticks(0.266, 0.277, "s");
        assert!(
            (low - 0.265).abs() < 1e-9 && (high - 0.28).abs() < 1e-9,
            "{low} {high}"
        );
        let (low, high, ticks) = nice_ticks(5.0, 5.0, "");
        assert_eq!((low, high, ticks.len()), (5.0, 5.0, 2));
    }
}
