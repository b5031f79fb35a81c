//! Which files of a walked directory are read: the `--include` and
//! `--exclude` globs of the command line and the `.coronerignore` files of
//! the directories, all in gitignore syntax.

use coroner_model::shown_path;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Path, PathBuf};

/// The file, in any walked directory, whose patterns leave paths out
/// (gitignore syntax; `!pattern` reads a path that would be skipped).
pub const IGNORE_FILE: &str = ".coronerignore";

/// A larger ignore file is not read.
const IGNORE_FILE_MAX: u64 = 1024 * 1024;

/// The `--include` and `--exclude` globs, matched against paths relative
/// to the walked directory.
#[derive(Debug, Clone)]
pub struct Selection {
    include: Gitignore,
    exclude: Gitignore,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            include: Gitignore::empty(),
            exclude: Gitignore::empty(),
        }
    }
}

/// A glob that is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobError {
    /// The glob as given.
    pub glob: String,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid glob `{}`: {}", self.glob, self.message)
    }
}

impl std::error::Error for GlobError {}

impl Selection {
    /// The selection of the globs given (gitignore syntax: `*.log`,
    /// `ckpt/`, `node0/**/debug.txt`).
    pub fn new(include: &[String], exclude: &[String]) -> Result<Selection, GlobError> {
        Ok(Selection {
            include: globs(include)?,
            exclude: globs(exclude)?,
        })
    }

    /// Whether `--exclude` leaves `rel` out (a directory, or a file in one).
    pub(crate) fn excludes(&self, rel: &Path, is_dir: bool) -> bool {
        matches_here_or_above(&self.exclude, rel, is_dir)
    }

    /// Whether `--include` reads `rel` whatever it looks like.
    pub(crate) fn includes(&self, rel: &Path, is_dir: bool) -> bool {
        matches_here_or_above(&self.include, rel, is_dir)
    }
}

fn globs(patterns: &[String]) -> Result<Gitignore, GlobError> {
    // Rooted at `.`, matched against relative paths: nothing is stripped.
    let mut builder = GitignoreBuilder::new(".");
    for glob in patterns {
        builder.add_line(None, glob).map_err(|e| GlobError {
            glob: glob.clone(),
            message: e.to_string(),
        })?;
    }
    builder.build().map_err(|e| GlobError {
        glob: patterns.join(" "),
        message: e.to_string(),
    })
}

fn matches_here_or_above(globs: &Gitignore, rel: &Path, is_dir: bool) -> bool {
    !rel.has_root() && globs.matched_path_or_any_parents(rel, is_dir).is_ignore()
}

/// What the ignore files say about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IgnoreVerdict {
    /// No pattern matches it.
    Unmatched,
    /// A pattern leaves it out.
    Ignored,
    /// A `!pattern` reads it.
    Read,
}

/// The `.coronerignore` files of the directories a walk is in, outermost
/// first. An inner file's patterns take precedence, as in git.
#[derive(Debug, Default)]
pub(crate) struct IgnoreFiles {
    open: Vec<(usize, PathBuf, Gitignore)>,
}

impl IgnoreFiles {
    /// Forgets the files of the directories an entry at `depth` is not in.
    pub(crate) fn leave(&mut self, depth: usize) {
        while self.open.last().is_some_and(|(d, _, _)| *d >= depth) {
            self.open.pop();
        }
    }

    /// Reads the ignore file of `dir` (at `depth` in the walk), if it has
    /// one. `Err` says why it could not be used in full; the patterns that
    /// could be read apply.
    pub(crate) fn enter(&mut self, dir: &Path, depth: usize) -> Result<(), String> {
        let path = dir.join(IGNORE_FILE);
        // Only a regular file is opened: never wait on a FIFO.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Ok(());
        };
        let shown = shown_path(&path);
        if !meta.is_file() {
            return Err(format!("{shown}: not a regular file, not read"));
        }
        if meta.len() > IGNORE_FILE_MAX {
            return Err(format!("{shown}: larger than 1 MiB, not read"));
        }
        let mut builder = GitignoreBuilder::new(".");
        let partial = builder.add(&path);
        let built = builder.build();
        let problem = match (&partial, &built) {
            (_, Err(e)) | (Some(e), _) => Some(format!("{shown}: {e}")),
            _ => None,
        };
        if let Ok(globs) = built {
            self.open.push((depth, dir.to_path_buf(), globs));
        }
        problem.map_or(Ok(()), Err)
    }

    /// What the innermost ignore file with a matching pattern says about
    /// `path` (a path the walk found, under the directories entered).
    pub(crate) fn verdict(&self, path: &Path, is_dir: bool) -> IgnoreVerdict {
        for (_, dir, globs) in self.open.iter().rev() {
            let Ok(rel) = path.strip_prefix(dir) else {
                continue;
            };
            let found = globs.matched(rel, is_dir);
            if found.is_ignore() {
                return IgnoreVerdict::Ignored;
            }
            if found.is_whitelist() {
                return IgnoreVerdict::Read;
            }
        }
        IgnoreVerdict::Unmatched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(include: &[&str], exclude: &[&str]) -> Selection {
        let owned = |g: &[&str]| g.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        Selection::new(&owned(include), &owned(exclude)).unwrap_or_default()
    }

    #[test]
    fn globs_match_as_in_gitignore() {
        let s = selection(&["notes/*.py", "docs/"], &["*.bak", "ckpt/", "/top.log"]);
        assert!(s.excludes(Path::new("a/b/x.bak"), false));
        assert!(s.excludes(Path::new("run/ckpt"), true));
        assert!(s.excludes(Path::new("ckpt/x.log"), false));
        assert!(
            !s.excludes(Path::new("ckpt"), false),
            "a file is no directory"
        );
        assert!(s.excludes(Path::new("top.log"), false));
        assert!(!s.excludes(Path::new("node0/top.log"), false), "anchored");
        assert!(s.includes(Path::new("notes/train.py"), false));
        assert!(!s.includes(Path::new("train.py"), false));
        assert!(s.includes(Path::new("docs/README.md"), false));
    }

    #[test]
    fn an_invalid_glob_is_named() {
        let err = Selection::new(&["log{a,b".to_owned()], &[]).err();
        assert_eq!(err.map(|e| e.glob), Some("log{a,b".to_owned()));
    }
}
