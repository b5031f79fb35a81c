//! JSON Lines, for following a live job: one object per finding as soon as
//! it is first seen (`"type": "finding"`, the fields of a JSON report's
//! finding at that moment, so `count` is 1), then one closing object
//! (`"type": "verdict"`) with the root cause, the final findings' counts,
//! the inputs and the totals.

use coroner_model::{Finding, Report};
use serde_json::{json, Value};

/// The line announcing a new finding.
pub fn finding(f: &Finding) -> String {
    let mut value = serde_json::to_value(f).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("type".to_owned(), json!("finding"));
    }
    line(&value)
}

/// The closing line.
pub fn verdict(report: &Report) -> String {
    let counts: Vec<Value> = report
        .findings
        .iter()
        .map(|f| json!({"rule": f.rule, "rank": f.rank, "count": f.count}))
        .collect();
    line(&json!({
        "type": "verdict",
        "schema_version": report.schema_version,
        "root_cause": report.root_cause,
        "findings": counts,
        "inputs": report.inputs,
        "stats": report.stats,
    }))
}

fn line(value: &Value) -> String {
    let mut out = serde_json::to_string(value).unwrap_or_default();
    out.push('\n');
    out
}
