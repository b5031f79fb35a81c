//! `coroner.toml`: settings for `analyze` and `baseline create` that a
//! repository keeps next to its CI files.
//!
//! Discovered like other tools' configuration: the current directory, then
//! each parent, stopping after the filesystem root or after a directory
//! that contains `.git` (the repository root). In each directory a
//! `coroner.toml` comes first, then a `pyproject.toml` with a
//! `[tool.coroner]` table (the same keys), as ruff reads `[tool.ruff]`.
//! Keys:
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
/// The Python project file whose `[tool.coroner]` table is read when a
/// directory has no coroner.toml.
pub const PYPROJECT: &str = "pyproject.toml";

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
/// directory when it is safe to apply (see [`untrusted`]); the second
/// value says why a discovered file was not applied. `Err` is a message
/// naming the file.
pub fn resolve(args: &ConfigArgs) -> Result<(Option<Config>, Option<String>), String> {
    if args.no_config {
        return Ok((None, None));
    }
    if let Some(path) = &args.config {
        return load(path).map(|c| (Some(c), None));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match discover(&cwd) {
        Some(path) => match untrusted(&path) {
            Some(why) => Ok((
                None,
                Some(format!(
                    "{} was not applied: {why} (name it with --config to use it)",
                    shown_path(&path)
                )),
            )),
            None => load(&path).map(|c| (Some(c), None)),
        },
        None => Ok((None, None)),
    }
}

/// Why a discovered `coroner.toml` must not be applied, as git refuses a
/// repository another user owns: the file or its directory belongs to
/// another user, or others may write to it. Such a file could have been
/// put there to hide findings (`ignore`, `baseline`) or to load rules.
#[cfg(unix)]
pub fn untrusted(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    for (what, p) in [("it", path), ("its directory", dir)] {
        let Ok(meta) = std::fs::metadata(p) else {
            return Some(format!("{what} cannot be examined"));
        };
        if meta.uid() != me {
            return Some(format!(
                "{what} belongs to another user (uid {})",
                meta.uid()
            ));
        }
        if meta.mode() & 0o002 != 0 {
            return Some(format!("others may write to {what}"));
        }
    }
    None
}

#[cfg(not(unix))]
pub fn untrusted(_path: &Path) -> Option<String> {
    None
}

/// The configuration that applies in `start`: the first coroner.toml, or
/// pyproject.toml with a `[tool.coroner]` table, found walking up from it,
/// stopping after a directory holding `.git`.
pub fn discover(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
        let pyproject = dir.join(PYPROJECT);
        if pyproject.is_file() && has_tool_table(&pyproject) {
            return Some(pyproject);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Whether the pyproject.toml at `path` speaks of `tool.coroner`: a file
/// that does not is another tool's and is passed over, whatever it holds
/// (one that does but is not valid TOML is then an error naming it).
fn has_tool_table(path: &Path) -> bool {
    read_regular(path, MAX_CONFIG).is_ok_and(|text| {
        text.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("[tool.coroner") || line.starts_with("tool.coroner")
        })
    })
}

/// Whether `path` names a Python project file (its settings are its
/// `[tool.coroner]` table).
fn is_pyproject(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == PYPROJECT)
}

/// The largest configuration file read.
pub const MAX_CONFIG: u64 = 1 << 20;

/// Reads and checks the file at `path`: a regular file of at most
/// [`MAX_CONFIG`] bytes, whose rule folders stay inside its directory.
pub fn load(path: &Path) -> Result<Config, String> {
    let shown = shown_path(path);
    let text = read_regular(path, MAX_CONFIG)
        .map_err(|e| format!("cannot read configuration {shown}: {e}"))?;
    let config = parse(&text, path).map_err(|e| format!("invalid configuration {shown}: {e}"))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let home = dir.unwrap_or(Path::new(".")).canonicalize();
    for rules in &config.rules {
        // A folder that exists must not lead outside through a link.
        let inside = match (&home, rules.canonicalize()) {
            (Ok(home), Ok(real)) => real.starts_with(home),
            _ => true,
        };
        if !inside {
            return Err(format!(
                "invalid configuration {shown}: the rule folder {} leads outside the directory of the file; give it with --rules instead",
                shown_path(rules)
            ));
        }
    }
    Ok(config)
}

/// The text of `path` when it is a regular file (links followed) of at
/// most `max` bytes.
pub fn read_regular(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > max {
        return Err(format!("larger than {max} bytes"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than {max} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
}

/// Parses the text of a coroner.toml found at `path`, or the `[tool.coroner]`
/// table of a pyproject.toml.
pub fn parse(text: &str, path: &Path) -> Result<Config, String> {
    // The parser's message only, with a line and column: its own display
    // quotes the line, and a file named by --config need not be one.
    let file: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map_or(String::new(), |span| {
            let before = text.get(..span.start).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!(" at line {line}, column {column}")
        });
        format!("{}{at}", e.message().trim_end())
    })?;
    let table = if is_pyproject(path) {
        match file.get("tool").and_then(|t| t.get("coroner")) {
            Some(toml::Value::Table(table)) => table,
            Some(other) => {
                return Err(format!(
                    "`tool.coroner` must be a table, not {}",
                    other.type_str()
                ))
            }
            None => return Err("it has no [tool.coroner] table".to_owned()),
        }
    } else {
        &file
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut config = Config {
        path: path.to_path_buf(),
        ..Config::default()
    };
    for (key, value) in table {
        match key.as_str() {
            "rules" => {
                // Relative to this file and inside its directory: a folder
                // elsewhere is given on the command line.
                let list = strings(key, value)?;
                if let Some(out) = list.iter().find(|r| leaves(Path::new(r))) {
                    return Err(format!(
                        "`rules`: {} is not inside the directory of this file; give it with --rules instead",
                        coroner_model::inert(out)
                    ));
                }
                config.rules = list.into_iter().map(|r| dir.join(r)).collect();
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

/// Whether the relative path `p` could lead out of the directory it is
/// relative to: absolute, or with a `..`.
fn leaves(p: &Path) -> bool {
    p.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    })
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
#[allow(clippy::unwrap_used)]
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
        assert!(parse("rules = [\"../up\"]", p).is_err_and(|e| e.contains("--rules")));
        assert!(parse("rules = [\"/etc\"]", p).is_err());
        assert!(parse("secret = [", p).is_err_and(|e| !e.contains("secret")));
    }

    #[test]
    fn a_pyproject_gives_its_tool_coroner_table() {
        let p = Path::new("/repo/pyproject.toml");
        let text = "[project]\nname = \"x\"\nignore = 3\n\n[tool.ruff]\nline-length = 100\n\n[tool.coroner]\nignore = [\"a\"]\nfail_on = \"error\"\n";
        assert_eq!(
            parse(text, p),
            Ok(Config {
                path: p.into(),
                ignore: vec!["a".into()],
                fail_on: Some(Severity::Error),
                ..Config::default()
            })
        );
        assert!(parse("[project]\nname = \"x\"\n", p).is_err_and(|e| e.contains("[tool.coroner]")));
        assert!(parse("[tool]\ncoroner = 1\n", p).is_err_and(|e| e.contains("table")));
        assert!(parse("[tool.coroner]\ncolour = 1\n", p).is_err_and(|e| e.contains("colour")));
    }

    #[test]
    fn discovery_prefers_coroner_toml_and_passes_over_other_pyprojects() {
        let dir = std::env::temp_dir().join(format!("coroner-config-{}", std::process::id()));
        let inner = dir.join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(inner.join(PYPROJECT), "[tool.ruff]\nline-length = 1\n").unwrap();
        std::fs::write(
            dir.join("a").join(PYPROJECT),
            "[tool.coroner]\nignore = []\n",
        )
        .unwrap();
        assert_eq!(discover(&inner), Some(dir.join("a").join(PYPROJECT)));
        std::fs::write(dir.join("a").join(FILE_NAME), "ignore = []\n").unwrap();
        assert_eq!(discover(&inner), Some(dir.join("a").join(FILE_NAME)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// What `coroner.toml` and the command line say together: flags win, and a
/// list given on the command line replaces the file's.
#[derive(Debug)]
pub struct Settings {
    /// The config file, when one was found and applied.
    pub file: Option<Config>,
    /// Why a config file that was found was not applied.
    pub refused: Option<String>,
    /// Whether `ignore` came from the config file.
    pub ignore_from_file: bool,
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
    let (file, refused) = resolve(config)?;
    let mut rule_args = rule_args.clone();
    if rule_args.rules.is_empty() {
        if let Some(c) = &file {
            rule_args.rules = c.rules.clone();
        }
    }
    let ignore_from_file = ignore.is_empty() && file.as_ref().is_some_and(|c| !c.ignore.is_empty());
    let ignore = if ignore.is_empty() {
        file.as_ref().map(|c| c.ignore.clone()).unwrap_or_default()
    } else {
        ignore.to_vec()
    };
    Ok(Settings {
        file,
        refused,
        ignore_from_file,
        rule_args,
        ignore,
    })
}
