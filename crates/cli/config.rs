//! `coroner.toml`: settings for `analyze` and `baseline create` that a
//! repository keeps next to its CI files.
//!
//! Discovered like other tools' configuration: the current directory, then
//! each parent, stopping after the filesystem root or after a directory
//! that contains `.git` (the repository root). Keys:
//!
//! ```toml
//! rules = ["ci/coroner-rules"]        # rule directories, relative to this file
//! ignore = ["torchrun-sigterm-teardown"]
//! fail_on = "warning"
//! baseline = "ci/coroner-baseline.json"   # relative to this file
//! ```
//!
//! Command-line flags override these (a list given on the command line
//! replaces the file's). An unknown key or a value of the wrong type is an
//! error naming the file.

use crate::args::ConfigArgs;
use coroner_model::shown_path;
use coroner_model::Severity;
use std::path::{Path, PathBuf};

/// The file name looked for.
pub const FILE_NAME: &str = "coroner.toml";

/// The settings of one coroner.toml, paths resolved against its directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The file they came from.
    pub path: PathBuf,
    /// Rule directories.
    pub rules: Vec<PathBuf>,
    /// Rule ids whose findings are left out.
    pub ignore: Vec<String>,
    /// The exit-status threshold.
    pub fail_on: Option<Severity>,
    /// A baseline file.
    pub baseline: Option<PathBuf>,
}

/// The configuration the arguments ask for: none with `--no-config`, the
/// file named by `--config`, or the one discovered from the current
/// directory. `Err` is a message naming the file.
pub fn resolve(args: &ConfigArgs) -> Result<Option<Config>, String> {
    if args.no_config {
        return Ok(None);
    }
    if let Some(path) = &args.config {
        return load(path).map(Some);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match discover(&cwd) {
        Some(path) => load(&path).map(Some),
        None => Ok(None),
    }
}

/// The coroner.toml that applies in `start`: the first found walking up
/// from it, stopping after a directory holding `.git`.
pub fn discover(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Reads and checks the file at `path`.
pub fn load(path: &Path) -> Result<Config, String> {
    let shown = shown_path(path);
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read configuration {shown}: {e}"))?;
    parse(&text, path).map_err(|e| format!("invalid configuration {shown}: {e}"))
}

/// Parses the text of a coroner.toml found at `path`.
pub fn parse(text: &str, path: &Path) -> Result<Config, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let msg = e.to_string();
        msg.trim_end().to_owned()
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut config = Config {
        path: path.to_path_buf(),
        ..Config::default()
    };
    for (key, value) in &table {
        match key.as_str() {
            "rules" => {
                config.rules = strings(key, value)?
                    .into_iter()
                    .map(|r| dir.join(r))
                    .collect();
            }
            "ignore" => config.ignore = strings(key, value)?,
            "fail_on" => {
                let s = value.as_str().ok_or_else(|| {
                    format!("`fail_on` must be a string, not {}", value.type_str())
                })?;
                config.fail_on = Some(
                    s.parse::<Severity>()
                        .map_err(|e| format!("`fail_on`: {e}"))?,
                );
            }
            "baseline" => {
                let s = value.as_str().ok_or_else(|| {
                    format!("`baseline` must be a string, not {}", value.type_str())
                })?;
                config.baseline = Some(dir.join(s));
            }
            other => {
                return Err(format!(
                    "unknown key `{other}` (expected rules, ignore, fail_on, baseline)"
                ))
            }
        }
    }
    Ok(config)
}

fn strings(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let array = value.as_array().ok_or_else(|| {
        format!(
            "`{key}` must be an array of strings, not {}",
            value.type_str()
        )
    })?;
    array
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{key}` must hold strings, not {}", v.type_str()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_and_paths_resolved_against_the_file() {
        let c = parse(
            "rules = [\"r\"]\nignore = [\"a\"]\nfail_on = \"warning\"\nbaseline = \"b.json\"\n",
            Path::new("/repo/coroner.toml"),
        );
        assert_eq!(
            c,
            Ok(Config {
                path: "/repo/coroner.toml".into(),
                rules: vec!["/repo/r".into()],
                ignore: vec!["a".into()],
                fail_on: Some(Severity::Warning),
                baseline: Some("/repo/b.json".into()),
            })
        );
    }

    #[test]
    fn mistakes_are_reported() {
        let p = Path::new("coroner.toml");
        assert!(parse("fail_on = \"fatal\"", p).is_err_and(|e| e.contains("fatal")));
        assert!(parse("ignor = []", p).is_err_and(|e| e.contains("ignor")));
        assert!(parse("rules = \"r\"", p).is_err_and(|e| e.contains("array")));
        assert!(parse("rules = [", p).is_err());
    }
}

/// What `coroner.toml` and the command line say together: flags win, and a
/// list given on the command line replaces the file's.
#[derive(Debug)]
pub struct Settings {
    /// The config file, when one was found.
    pub file: Option<Config>,
    /// Rule directories and built-in switch.
    pub rule_args: crate::args::RuleArgs,
    /// Rule ids whose findings are left out.
    pub ignore: Vec<String>,
}

/// Finds the config file (unless disabled) and merges it with the flags.
pub fn settings(
    config: &ConfigArgs,
    rule_args: &crate::args::RuleArgs,
    ignore: &[String],
) -> Result<Settings, String> {
    let file = resolve(config)?;
    let mut rule_args = rule_args.clone();
    if rule_args.rules.is_empty() {
        if let Some(c) = &file {
            rule_args.rules = c.rules.clone();
        }
    }
    let ignore = if ignore.is_empty() {
        file.as_ref().map(|c| c.ignore.clone()).unwrap_or_default()
    } else {
        ignore.to_vec()
    };
    Ok(Settings {
        file,
        rule_args,
        ignore,
    })
}
