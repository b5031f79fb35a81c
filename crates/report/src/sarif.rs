//! SARIF 2.1.0, for code-scanning tools (GitHub's `upload-sarif`, GitLab,
//! IDE viewers).
//!
//! One run. `tool.driver.rules` lists the rules that fired, each once;
//! every finding becomes one result pointing at its rule by id and index,
//! with one location per evidence line. The root cause's result comes first
//! and carries `properties.rootCause = true`. Artifact URIs are relative to
//! the [`PathBase`] (forward slashes, percent-encoded), or absolute `file:`
//! URIs for inputs outside it, and `stdin` for standard input (named by
//! `--stdin-filename` when given): every result has a location. A
//! consequence of another finding is a `note` whose `relatedLocations`
//! point at the finding that explains it. Square brackets in every plain
//! text are escaped, as SARIF asks, so that text from an input never forms
//! an embedded link.

use crate::{root_finding, PathBase};
use coroner_model::{Finding, Report, Severity};
use serde_json::{json, Map, Value};

/// The schema the output follows.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Renders `report` as a SARIF 2.1.0 log, pretty-printed, with a trailing
/// newline.
pub fn render(report: &Report, base: &PathBase) -> String {
    render_with_fingerprints(report, base, |_| None)
}

/// [`render`], with each result's `partialFingerprints` from
/// `fingerprint` (the baseline's fingerprint of a finding, stable across
/// runs of the same failure), so that code scanning tracks an alert over
/// runs.
pub fn render_with_fingerprints(
    report: &Report,
    base: &PathBase,
    fingerprint: impl Fn(&Finding) -> Option<String>,
) -> String {
    let mut log = log(report, base);
    if let Some(results) = log["runs"][0]["results"].as_array_mut() {
        for (result, f) in results.iter_mut().zip(&report.findings) {
            if let Some(fp) = fingerprint(f) {
                result["partialFingerprints"] = json!({ "coronerFinding/v1": fp });
            }
        }
    }
    let mut out = serde_json::to_string_pretty(&log)
        .unwrap_or_else(|e| format!("{{\"error\":\"cannot serialise SARIF: {e}\"}}"));
    out.push('\n');
    out
}

/// The SARIF level of a severity.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The SARIF log as a JSON value.
pub fn log(report: &Report, base: &PathBase) -> Value {
    let root = root_finding(report);
    let mut rule_ids: Vec<&str> = Vec::new();
    let mut rules = Vec::new();
    for f in &report.findings {
        if !rule_ids.contains(&f.rule.as_str()) {
            rule_ids.push(&f.rule);
            rules.push(rule(f));
        }
    }
    let results: Vec<Value> = report
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let index = rule_ids.iter().position(|r| *r == f.rule).unwrap_or(0);
            let explainer = f
                .explained_by
                .as_deref()
                .and_then(|rule| report.findings.iter().find(|g| g.rule == rule));
            let mut r = result(f, index, i == 0 && root.is_some(), base);
            if let Some(cause) = explainer {
                // A consequence is not another error to fix.
                r["level"] = json!("note");
                r["relatedLocations"] = json!([{
                    "id": 0,
                    "physicalLocation": location(&cause.first_seen.input, cause.first_seen.line, None, base)["physicalLocation"],
                    "message": {"text": plain(&format!("explained by {}: {}", cause.rule, non_empty(&cause.message, &cause.title)))},
                }]);
                r["message"]["text"] = json!(format!(
                    "{} (a consequence of [{}](0))",
                    plain(non_empty(&f.message, &f.title)),
                    plain(&cause.rule)
                ));
            }
            r
        })
        .collect();
    let root_cause = &report.root_cause;
    let notifications: Vec<Value> = report
        .inputs
        .iter()
        .flat_map(|input| {
            input.errors.iter().map(move |e| {
                json!({
                    "level": "error",
                    "message": {"text": plain(&format!("{}: {}", input.path, e.message))},
                })
            })
        })
        .collect();
    let mut invocation = json!({ "executionSuccessful": notifications.is_empty() });
    if !notifications.is_empty() {
        invocation["toolExecutionNotifications"] = Value::Array(notifications);
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": report.tool.name,
                    "version": report.tool.version,
                    "semanticVersion": report.tool.version,
                    "rules": rules,
                }
            },
            "invocations": [invocation],
            "results": results,
            "properties": {
                "rootCause": {
                    "category": root_cause.category.as_str(),
                    "rule": root_cause.rule,
                    "rank": root_cause.rank,
                    "rankPresumed": root_cause.rank_presumed,
                    "summary": root_cause.summary,
                }
            }
        }]
    })
}

fn rule(f: &Finding) -> Value {
    let mut help_text = String::new();
    let mut help_md = String::new();
    for (i, step) in f.remediation.iter().enumerate() {
        help_text.push_str(&format!("{}. {}\n", i + 1, plain(step)));
        help_md.push_str(&format!("{}. {}\n", i + 1, crate::markdown::inline(step)));
    }
    if !f.references.is_empty() {
        help_text.push_str("\nReferences:\n");
        help_md.push_str("\n**References**\n\n");
        for r in &f.references {
            help_text.push_str(&format!("- {}\n", plain(r)));
            help_md.push_str(&format!("- {}\n", crate::markdown::reference(r)));
        }
    }
    if help_text.is_empty() {
        help_text = plain(&f.title);
        help_md = crate::markdown::inline(&f.title);
    }
    let full = if f.message.is_empty() {
        &f.title
    } else {
        &f.message
    };
    json!({
        "id": f.rule,
        "name": pascal_case(&f.rule),
        "shortDescription": {"text": plain(non_empty(&f.title, &f.rule))},
        "fullDescription": {"text": plain(non_empty(full, &f.rule))},
        "help": {"text": help_text.trim_end(), "markdown": help_md.trim_end()},
        "defaultConfiguration": {"level": level(f.severity)},
        "properties": {
            "category": f.category.as_str(),
            "severity": f.severity.as_str(),
            "role": f.role.as_str(),
            "tags": [f.category.as_str(), f.role.as_str()],
        }
    })
}

/// The artifact URI of an input: relative to the base, a `file:` URI
/// outside it, and `stdin` for standard input (code scanning rejects a
/// result without a location; `--stdin-filename` names it better).
fn artifact_uri(input: &str, base: &PathBase) -> String {
    match base.relative(input) {
        Some(Ok(rel)) => encode_path(&rel),
        Some(Err(abs)) => file_uri(&abs),
        None => "stdin".to_owned(),
    }
}

fn location(input: &str, line: u64, snippet: Option<&str>, base: &PathBase) -> Value {
    let mut region = json!({"startLine": line.max(1)});
    if let Some(text) = snippet {
        region["snippet"] = json!({"text": text});
    }
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(input, base)},
            "region": region,
        }
    })
}

fn result(f: &Finding, rule_index: usize, is_root: bool, base: &PathBase) -> Value {
    let mut locations: Vec<Value> = f
        .evidence
        .iter()
        .map(|e| location(&e.input, e.line, Some(&e.text), base))
        .collect();
    if locations.is_empty() {
        locations.push(location(&f.first_seen.input, f.first_seen.line, None, base));
    }
    let mut properties = Map::new();
    properties.insert("count".into(), json!(f.count));
    properties.insert("rank".into(), json!(f.rank));
    properties.insert("category".into(), json!(f.category.as_str()));
    properties.insert("severity".into(), json!(f.severity.as_str()));
    properties.insert("role".into(), json!(f.role.as_str()));
    if is_root {
        properties.insert("rootCause".into(), Value::Bool(true));
    }
    let mut result = json!({
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": level(f.severity),
        "message": {"text": plain(non_empty(&f.message, &f.title))},
        "properties": properties,
    });
    result["locations"] = Value::Array(locations);
    result
}

/// Plain text for a SARIF message: square brackets escaped (`\[`, `\]`),
/// and the backslashes just before one doubled, so that no text from an
/// input forms an embedded link (`[text](id)`, which viewers turn into a
/// link to a location or a URL); the report's own links are written
/// around the escaped text.
fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut backslashes = 0;
    for c in s.chars() {
        if c == '\\' {
            backslashes += 1;
            continue;
        }
        let bracket = c == '[' || c == ']';
        let n = if bracket {
            2 * backslashes + 1
        } else {
            backslashes
        };
        out.extend(std::iter::repeat_n('\\', n));
        out.push(c);
        backslashes = 0;
    }
    out.extend(std::iter::repeat_n('\\', backslashes));
    out
}

/// Where `text`, a plain text of a SARIF log, holds a square bracket that
/// is not escaped (one a viewer could read as part of an embedded link).
pub fn unescaped_bracket(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if !escaped && (c == '[' || c == ']') {
            return Some(at);
        }
        escaped = !escaped && c == '\\';
    }
    None
}

fn non_empty<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.trim().is_empty() {
        fallback
    } else {
        s
    }
}

/// `torch-cuda-out-of-memory` -> `TorchCudaOutOfMemory`.
fn pascal_case(id: &str) -> String {
    id.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut cs = w.chars();
            cs.next()
                .map(|c| c.to_ascii_uppercase().to_string() + cs.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// What a path keeps unencoded in a URI reference: RFC 3986's unreserved
/// characters and `/` (a `:` is encoded so that the first segment is never
/// read as a scheme).
const PATH_KEEPS: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// Percent-encodes a relative path for a URI reference (UTF-8 bytes
/// outside [`PATH_KEEPS`] as `%XX`).
pub fn encode_path(path: &str) -> String {
    percent_encoding::utf8_percent_encode(path, PATH_KEEPS).to_string()
}

/// An absolute path as a `file:` URI.
fn file_uri(abs: &str) -> String {
    let encoded = encode_path(abs);
    if encoded.starts_with('/') {
        format!("file://{encoded}")
    } else {
        // A Windows path such as `C:/x` (its colon encoded).
        format!("file:///{encoded}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded() {
        assert_eq!(encode_path("logs/a b%.log"), "logs/a%20b%25.log");
        assert_eq!(encode_path("rank:1/é.log"), "rank%3A1/%C3%A9.log");
        assert_eq!(file_uri("/tmp/x y"), "file:///tmp/x%20y");
    }

    #[test]
    fn brackets_in_plain_text_never_form_a_link() {
        assert_eq!(plain("[rank0]: x"), r"\[rank0\]: x");
        assert_eq!(plain(r"[a](0) \[b](1) C:\x"), r"\[a\](0) \\\[b\](1) C:\x");
        assert_eq!(plain(r"end \"), r"end \");
        for text in ["[rank0]: x", r"[a](0) \[b](1) C:\x", r"\\[", "]"] {
            assert_eq!(unescaped_bracket(&plain(text)), None, "{text}");
        }
        assert_eq!(unescaped_bracket(r"a \\[b"), Some(4));
    }

    #[test]
    fn levels_follow_severity() {
        assert_eq!(level(Severity::Critical), "error");
        assert_eq!(level(Severity::Error), "error");
        assert_eq!(level(Severity::Warning), "warning");
        assert_eq!(level(Severity::Info), "note");
    }

    #[test]
    fn rule_names_are_pascal_case() {
        assert_eq!(
            pascal_case("torch-cuda-out-of-memory"),
            "TorchCudaOutOfMemory"
        );
    }
}
