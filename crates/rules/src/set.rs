//! A set of rules: the built-ins embedded at build time plus any user
//! directories, checked together.

use crate::error::{RuleError, RuleErrorKind};
use crate::patterns::{Patterns, PATTERNS_FILE};
use crate::prefilter::Prefilter;
use crate::rule::{parse_rule_with, Compile, Rule};
use coroner_model::InputKind;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use walkdir::WalkDir;

include!(concat!(env!("OUT_DIR"), "/builtin_rules.rs"));

/// Validated rules and the prefilter that finds candidate lines for them.
#[derive(Debug)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// One prefilter per text input kind, built when first needed.
    prefilters: [OnceLock<Prefilter>; InputKind::RULE_KINDS.len()],
    /// For each rule, the indices of the rules it supersedes.
    pub(crate) supersedes: Vec<Vec<usize>>,
    /// The position of each rule by id.
    by_id: std::collections::HashMap<String, usize>,
}

/// Where rules come from.
#[derive(Debug, Clone, Default)]
pub struct RuleSources {
    /// Include the built-in rules.
    pub builtin: bool,
    /// Directories of user rule files (walked recursively for `*.toml`).
    pub dirs: Vec<std::path::PathBuf>,
    /// Accept `supersedes` names of built-in rules even when the built-ins
    /// are not loaded (to validate a directory on its own).
    pub builtin_names: bool,
}

impl RuleSet {
    /// Loads, validates and compiles rules from `sources`. Every problem in
    /// every file is returned.
    /// Runs every check `coroner rules validate` runs on each built-in rule
    /// file, including those that need the compiled regexes, which loading
    /// defers to first use.
    pub fn validate_builtin() -> Result<(), Vec<RuleError>> {
        let errors: Vec<RuleError> = BUILTIN_RULES
            .iter()
            .filter_map(|(path, text)| {
                parse_rule_with(
                    path,
                    &stem_of(path),
                    text,
                    Compile::Now,
                    Patterns::builtin(),
                )
                .err()
            })
            .flatten()
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    pub fn load(sources: &RuleSources) -> Result<RuleSet, Vec<RuleError>> {
        let mut files: Vec<(String, String, String, Compile)> = Vec::new();
        let mut errors = Vec::new();
        if sources.builtin {
            for (path, text) in BUILTIN_RULES {
                files.push((
                    path.to_string(),
                    stem_of(path),
                    text.to_string(),
                    Compile::OnFirstUse,
                ));
            }
        }
        let mut user = Vec::new();
        let mut tables = Vec::new();
        for dir in &sources.dirs {
            read_dir(dir, &mut user, &mut tables, &mut errors);
        }
        // The built-in names are known to user rules even without the
        // built-in rules, so that a directory can be validated on its own.
        let mut patterns = Patterns::builtin().clone();
        for (path, text) in &tables {
            match Patterns::parse(path, text).and_then(|t| patterns.merge(t, path)) {
                Ok(()) => {}
                Err(mut e) => errors.append(&mut e),
            }
        }
        files.extend(
            user.into_iter()
                .map(|(path, stem, text)| (path, stem, text, Compile::Now)),
        );
        let mut rules = Vec::new();
        for parsed in parse_all(&files, &patterns) {
            match parsed {
                Ok(rule) => rules.push(rule),
                Err(mut e) => errors.append(&mut e),
            }
        }
        let known: Vec<String> = if sources.builtin_names {
            BUILTIN_RULES.iter().map(|(p, _)| stem_of(p)).collect()
        } else {
            Vec::new()
        };
        match RuleSet::with_known_names(rules, &known) {
            Ok(set) if errors.is_empty() => Ok(set),
            Ok(_) => Err(errors),
            Err(mut e) => {
                errors.append(&mut e);
                Err(errors)
            }
        }
    }

    /// Builds a set from parsed rules, rejecting duplicate ids and unknown
    /// `supersedes` references.
    pub fn new(rules: Vec<Rule>) -> Result<RuleSet, Vec<RuleError>> {
        RuleSet::with_known_names(rules, &[])
    }

    /// Like [`RuleSet::new`], but a `supersedes` entry naming one of
    /// `known` (rules defined elsewhere) is accepted and ignored.
    fn with_known_names(rules: Vec<Rule>, known: &[String]) -> Result<RuleSet, Vec<RuleError>> {
        let mut errors = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, rule) in rules.iter().enumerate() {
            if let Some(&first) = index.get(rule.id.as_str()) {
                errors.push(
                    RuleError::new(
                        RuleErrorKind::DuplicateId,
                        &rule.source,
                        &rule.text,
                        id_span(&rule.text, &rule.id),
                        format!("duplicate rule id `{}`", rule.id),
                    )
                    .with_help(format!(
                        "first defined in {}",
                        rules.get(first).map_or("", |r| r.source.as_str())
                    )),
                );
            } else {
                index.insert(&rule.id, i);
            }
        }
        let mut supersedes = Vec::with_capacity(rules.len());
        for rule in &rules {
            let mut targets = Vec::new();
            for target in &rule.supersedes {
                match index.get(target.as_str()) {
                    Some(&t) => targets.push(t),
                    None if known.contains(target) => {}
                    None => errors.push(RuleError::new(
                        RuleErrorKind::UnknownRule,
                        &rule.source,
                        &rule.text,
                        rule.text.find(target.as_str()).map(|s| s..s + target.len()),
                        format!("`supersedes` names `{target}`, which is not a loaded rule"),
                    )),
                }
            }
            supersedes.push(targets);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut by_id = std::collections::HashMap::new();
        for (i, r) in rules.iter().enumerate() {
            by_id.entry(r.id.clone()).or_insert(i);
        }
        Ok(RuleSet {
            rules,
            prefilters: Default::default(),
            supersedes,
            by_id,
        })
    }

    /// The prefilter of the rules that apply to inputs of `kind` (a
    /// binary input scanned as text counts as a log).
    pub(crate) fn prefilter(&self, kind: InputKind) -> &Prefilter {
        let [log, ..] = &self.prefilters;
        let (kind, cell) = InputKind::RULE_KINDS
            .iter()
            .zip(&self.prefilters)
            .find(|(k, _)| **k == kind)
            .unwrap_or((&InputKind::Log, log));
        cell.get_or_init(|| Prefilter::new(&self.rules, *kind))
    }

    /// The rules, in load order (built-ins sorted by path first).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Looks a rule up by id.
    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.get(self.position(id)?)
    }

    /// Index of a rule by id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }
}

/// Parses rule files in order, on every core: parsing the built-in rules
/// is a good part of the time a run takes to start.
fn parse_all(
    files: &[(String, String, String, Compile)],
    patterns: &Patterns,
) -> Vec<Result<Rule, Vec<RuleError>>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let chunk = files.len().div_ceil(threads).max(1);
    let parse = |part: &[(String, String, String, Compile)]| -> Vec<_> {
        part.iter()
            .map(|(path, stem, text, compile)| {
                parse_rule_with(path, stem, text, *compile, patterns)
            })
            .collect()
    };
    std::thread::scope(|scope| {
        let parts: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || parse(part)))
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

fn stem_of(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn id_span(text: &str, id: &str) -> Option<std::ops::Range<usize>> {
    text.find(&format!("\"{id}\""))
        .map(|s| s + 1..s + 1 + id.len())
}

/// The largest rule file read (the largest built-in rule is a few KiB).
pub const MAX_RULE_FILE: u64 = 1 << 20;

/// Reads a directory's rule files into `files` and its pattern tables
/// (`patterns.toml`, as path and text) into `tables`.
fn read_dir(
    dir: &Path,
    files: &mut Vec<(String, String, String)>,
    tables: &mut Vec<(String, String)>,
    errors: &mut Vec<RuleError>,
) {
    let io_error = |path: &Path, e: &dyn std::fmt::Display| {
        RuleError::new(
            RuleErrorKind::Io,
            &path.display().to_string(),
            "",
            None,
            format!("cannot read rules: {e}"),
        )
    };
    if !dir.is_dir() {
        errors.push(io_error(dir, &"not a directory"));
        return;
    }
    for entry in WalkDir::new(dir).sort_by_file_name() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                errors.push(io_error(e.path().unwrap_or(dir), &e));
                continue;
            }
        };
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        if entry.metadata().is_ok_and(|m| m.len() > MAX_RULE_FILE) {
            errors.push(io_error(
                path,
                &format!("larger than {MAX_RULE_FILE} bytes"),
            ));
            continue;
        }
        match std::fs::read_to_string(path) {
            Ok(text) if entry.file_name() == PATTERNS_FILE => {
                tables.push((path.display().to_string(), text));
            }
            Ok(text) => files.push((
                path.display().to_string(),
                stem_of(&path.to_string_lossy()),
                text,
            )),
            Err(e) => errors.push(io_error(path, &e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in rules are compiled on first use at run time; here every
    /// regex is compiled and every placeholder checked, as for a user's rules.
    #[test]
    fn builtin_rules_compile_and_validate_in_full() {
        for (path, text) in BUILTIN_RULES {
            if let Err(e) = crate::rule::parse_rule(path, &stem_of(path), text) {
                panic!("{path}: {e:?}");
            }
        }
    }
}
