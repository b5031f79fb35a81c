//! The series of a training metric behind a trend finding.

use serde::{Deserialize, Serialize};

/// One metric's values over the steps of a run, thinned evenly to a few
/// dozen points (the first and the last kept): enough to draw, not to
/// analyse again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The metric's name: `loss`, `grad_norm`, `loss scale`, `memory
    /// allocated`, `samples/s`, `data time`, `GPU utilisation`, ...
    pub metric: String,
    /// The unit of the values: `bytes`, `s`, `%`, or empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// The points in step order.
    pub points: Vec<CurvePoint>,
    /// Where the trend was decided: the first non-finite value, the step
    /// the loss scale bottomed out, the step throughput fell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<CurveMark>,
    /// The least-squares line a growth was judged by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<CurveFit>,
}

// The values are finite (a non-finite one is `None`), so equality is one.
impl Eq for Curve {}

/// One point of a [`Curve`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The step (or the sample's ordinal where the log names no step).
    pub step: u64,
    /// The value; `None` where it was not finite (`nan`, `inf`).
    pub value: Option<f64>,
}

/// A step of a [`Curve`] that a trend was decided at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveMark {
    pub step: u64,
    /// What happened there: `first non-finite value`, `collapse`, ...
    pub label: String,
}

/// A straight line through a [`Curve`]: value = `intercept` + `slope` × step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurveFit {
    pub slope: f64,
    pub intercept: f64,
}
