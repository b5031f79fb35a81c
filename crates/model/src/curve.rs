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
