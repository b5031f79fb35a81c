//! Baselines: findings recorded once and left out of later reports.
//!
//! A finding's fingerprint is its rule id and its first evidence line,
//! normalised so that what changes from one run of the same failure to the
//! next does not change it: the launcher's `[rankN]:` prefix is removed,
//! hexadecimal numbers (`0x7f3a…`, long hex words) become `<hex>`, every
//! other run of digits (pids, timestamps, addresses, step counters, the
//! numeric parts of paths) becomes `<n>`, and whitespace is collapsed.
//! Line numbers are never part of it.
//!
//! The hash is 64-bit FNV-1a, written out here rather than taken from
//! `std::hash`: baselines are files kept in repositories and compared by
//! later coroner builds, and std's `DefaultHasher` is explicitly not
//! stable across Rust releases or platforms. FNV-1a is a few lines,
//! deterministic everywhere, and spreads short strings well enough for the
//! few hundred fingerprints a baseline holds; it is not a defence against
//! someone forging collisions, which a baseline does not need (the rule id
//! is stored and compared alongside it).

use crate::args::BaselineCreateArgs;
use crate::exit::ExitCode;
use crate::output;
use coroner_model::shown_path;
use coroner_model::{Finding, Report};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::Path;

/// The largest baseline file read (a baseline holds a few hundred
/// fingerprints of about 100 bytes each).
pub const MAX_BASELINE: u64 = 16 << 20;

/// The baseline file layout version.
pub const VERSION: u64 = 1;

/// The fingerprint of a finding: 16 lowercase hex digits.
pub fn fingerprint(f: &Finding) -> String {
    let line = f.evidence.first().map_or("", |e| e.text.as_str());
    let mut bytes = f.rule.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend_from_slice(normalize(line).as_bytes());
    format!("{:016x}", fnv1a64(&bytes))
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// An evidence line with what varies between runs replaced by
/// placeholders (see the module documentation).
pub fn normalize(line: &str) -> String {
    let line = coroner_logs::strip_rank_prefix(line.trim_start()).rest;
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            out.push(' ');
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            normalize_word(&word, &mut out);
            continue;
        }
        out.push(c);
        i += 1;
    }
    out.trim().to_owned()
}

/// One word of letters, digits and underscores.
fn normalize_word(word: &str, out: &mut String) {
    let lower = word.to_ascii_lowercase();
    let hex_body = lower
        .strip_prefix("0x")
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let long_hex = word.len() >= 8
        && word.bytes().all(|b| b.is_ascii_hexdigit())
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_alphabetic());
    if hex_body.is_some() || long_hex {
        out.push_str("<hex>");
        return;
    }
    let mut in_digits = false;
    for c in word.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str("<n>");
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
}

/// The recorded findings of a baseline file.
#[derive(Debug, Default, Clone)]
pub struct Baseline {
    entries: HashSet<(String, String)>,
}

impl Baseline {
    /// Reads a baseline file; `Err` is a message naming it.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        let shown = shown_path(path);
        let text = crate::config::read_regular(path, MAX_BASELINE)
            .map_err(|e| format!("cannot read baseline {shown}: {e}"))?;
        Baseline::parse(&text).map_err(|e| format!("invalid baseline {shown}: {e}"))
    }

    /// Parses the JSON of a baseline file.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match value.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => return Err(format!("unsupported version {v} (expected {VERSION})")),
            None => return Err("no `version`".to_owned()),
        }
        let list = value
            .get("fingerprints")
            .and_then(Value::as_array)
            .ok_or("no `fingerprints` array")?;
        let mut entries = HashSet::new();
        for (i, item) in list.iter().enumerate() {
            let field = |name: &str| {
                item.get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("fingerprints[{i}] has no string `{name}`"))
            };
            entries.insert((field("rule")?, field("fingerprint")?));
        }
        Ok(Baseline { entries })
    }

    /// Whether `f` is recorded.
    pub fn contains(&self, f: &Finding) -> bool {
        self.entries.contains(&(f.rule.clone(), fingerprint(f)))
    }
}

/// The baseline of `report`'s findings, as pretty JSON with a newline.
pub fn render(report: &Report) -> String {
    let mut items: Vec<(String, String, String)> = report
        .findings
        .iter()
        .map(|f| {
            let example = f.evidence.first().map_or("", |e| e.text.as_str());
            (f.rule.clone(), fingerprint(f), example.to_owned())
        })
        .collect();
    items.sort();
    items.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    let fingerprints: Vec<Value> = items
        .into_iter()
        .map(|(rule, fingerprint, example)| {
            json!({"rule": rule, "fingerprint": fingerprint, "example": example})
        })
        .collect();
    let doc = json!({"version": VERSION, "fingerprints": fingerprints});
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}

/// How many findings a filter removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Suppressed {
    /// By `--ignore` / `ignore`.
    pub ignored: usize,
    /// By the baseline.
    pub baselined: usize,
}

/// Removes the findings of ignored rules and those in `baseline`, and, when
/// any were removed, chooses the root cause again from what is left.
pub fn apply(
    report: &mut Report,
    rules: &coroner_rules::RuleSet,
    ignore: &[String],
    baseline: Option<&Baseline>,
) -> Suppressed {
    let mut suppressed = Suppressed::default();
    let findings = std::mem::take(&mut report.findings);
    let mut kept = Vec::with_capacity(findings.len());
    for f in findings {
        if ignore.contains(&f.rule) {
            suppressed.ignored += 1;
        } else if baseline.is_some_and(|b| b.contains(&f)) {
            suppressed.baselined += 1;
        } else {
            kept.push(f);
        }
    }
    if suppressed == Suppressed::default() {
        report.findings = kept;
        return suppressed;
    }
    // `choose` wants the findings in order of first appearance: by input
    // (in the order read) and line.
    let position = |input: &str| {
        report
            .inputs
            .iter()
            .position(|i| i.path == input)
            .unwrap_or(usize::MAX)
    };
    kept.sort_by_key(|f| (position(&f.first_seen.input), f.first_seen.line));
    let (root, findings) = coroner_analyze::root_cause::choose(kept, &report.inputs, &|id| {
        coroner_analyze::root_cause::Standing::of(rules, id)
    });
    report.root_cause = root;
    report.findings = findings;
    suppressed
}

/// `coroner baseline create`.
pub fn create(args: &BaselineCreateArgs) -> ExitCode {
    let settings = match crate::config::settings(&args.config, &args.rule_args, &args.ignore) {
        Ok(s) => s,
        Err(msg) => {
            output::eprint(&format!("coroner: {msg}\n"));
            return ExitCode::ToolError;
        }
    };
    if let Some(why) = &settings.refused {
        output::eprint(&format!("coroner: warning: {why}\n"));
    }
    let (rule_args, ignore) = (settings.rule_args, settings.ignore);
    let selection = match args.walk.selection() {
        Ok(s) => s,
        Err(msg) => {
            output::eprint(&format!("coroner: {msg}\n"));
            return ExitCode::ToolError;
        }
    };
    let Some(rules) = super::load_rules(&rule_args) else {
        return ExitCode::ToolError;
    };
    let Some(paths) = super::input_paths(&args.paths, "record", "baseline create") else {
        return ExitCode::ToolError;
    };
    let options = coroner_analyze::Options {
        selection: Some(&selection),
        ..coroner_analyze::Options::default()
    };
    let mut report = coroner_analyze::analyze_with(&paths, &rules, options);
    super::warn_unknown_rules(&ignore, &rules);
    apply(&mut report, &rules, &ignore, None);
    let text = render(&report);
    match &args.output {
        Some(path) if path.as_os_str() != "-" => {
            if let Err(e) = output::write_file(path, &text) {
                output::eprint(&format!(
                    "coroner: cannot write baseline {}: {e}\n",
                    shown_path(path)
                ));
                return ExitCode::ToolError;
            }
            output::eprint(&format!(
                "coroner: recorded {} finding(s) in {}\n",
                report.findings.len(),
                shown_path(path)
            ));
        }
        _ => {
            if !output::print(&text) {
                return ExitCode::ToolError;
            }
        }
    }
    for input in &report.inputs {
        for e in &input.errors {
            output::eprint(&format!("coroner: {}: {}\n", input.path, e.message));
        }
    }
    if report.has_input_errors() {
        ExitCode::ToolError
    } else {
        ExitCode::Clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_varies_between_runs_is_normalised() {
        let a = "[rank1]: W1129 15:17:28.342000 2012 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: -9) local_rank: 1 (pid: 2038) at 0x7f3a9c001000";
        let b = "[rank3]:   W1130 09:02:11.000001 77 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 3 (pid: 99)  at 0x55d0";
        assert_eq!(normalize(a), normalize(b));
        assert_eq!(
            normalize("[rank0]: CUDA out of memory. Tried to allocate 2.00 GiB on GPU 0"),
            "CUDA out of memory. Tried to allocate <n>.<n> GiB on GPU <n>"
        );
        assert_eq!(normalize("job deadbeef1234 done"), "job <hex> done");
        assert_eq!(normalize("[note]: kept"), "[note]: kept");
        assert_ne!(
            normalize("No such file: model.pt"),
            normalize("No such file: data.pt")
        );
    }

    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn baseline_files_are_checked() {
        assert!(Baseline::parse("{\"version\": 1, \"fingerprints\": []}").is_ok());
        assert!(Baseline::parse("{\"version\": 2, \"fingerprints\": []}").is_err());
        assert!(Baseline::parse("{\"version\": 1, \"fingerprints\": [{}]}").is_err());
        assert!(Baseline::parse("not json").is_err());
    }
}
