//! Walking one directory named on the command line: which of its files are
//! inputs, and what was passed over and why.

use crate::authored::look;
use crate::discover::{file_input, push_file, Discovery, Input};
use crate::parallel::parallel_map;
use crate::selection::{IgnoreFiles, IgnoreVerdict, Selection, IGNORE_FILE};
use coroner_model::shown_path;
use std::path::{Path, PathBuf};
use walkdir::{DirEntry, WalkDir};

/// Paths of one kind that were passed over: how many, and the first few.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassedOver {
    /// How many.
    pub count: usize,
    /// The first [`PassedOver::SHOWN`], relative to the walked directory
    /// (a directory's with a trailing `/`), in walk order.
    pub first: Vec<String>,
}

impl PassedOver {
    /// How many paths are kept by name.
    pub const SHOWN: usize = 5;

    fn push(&mut self, rel: &Path, is_dir: bool) {
        self.count += 1;
        if self.first.len() < Self::SHOWN {
            let slash = if is_dir { "/" } else { "" };
            self.first.push(format!("{}{slash}", shown_path(rel)));
        }
    }

    /// `a, b, c and 4 more`.
    fn names(&self) -> String {
        let shown = self.first.join(", ");
        match self.count.saturating_sub(self.first.len()) {
            0 => shown,
            more => format!("{shown} and {more} more"),
        }
    }
}

/// What a walked directory held that was not read, beyond hidden entries
/// and special files (which [`Discovery::skipped`] lists one by one).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WalkedDirectory {
    /// The directory as given.
    pub display: String,
    /// Source code, notebooks, configs and docs, which are no evidence.
    pub authored: PassedOver,
    /// Paths `--exclude` left out.
    pub excluded: PassedOver,
    /// Paths a `.coronerignore` left out.
    pub ignored: PassedOver,
    /// `.coronerignore` files that could not be used in full, and why.
    pub errors: Vec<String>,
}

impl WalkedDirectory {
    /// One remark for each reason something was passed over.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.authored.count > 0 {
            notes.push(format!(
                "skipped {} source/config/doc file(s): {} (name a file, or --include GLOB, to read it)",
                self.authored.count,
                self.authored.names()
            ));
        }
        for (what, by) in [
            (&self.excluded, "--exclude"),
            (&self.ignored, ".coronerignore"),
        ] {
            if what.count > 0 {
                notes.push(format!(
                    "left out {} path(s) matching {by}: {}",
                    what.count,
                    what.names()
                ));
            }
        }
        notes
    }

    fn is_empty(&self) -> bool {
        self.authored.count == 0
            && self.excluded.count == 0
            && self.ignored.count == 0
            && self.errors.is_empty()
    }
}

enum Verdict {
    Read,
    Excluded,
    Ignored,
    /// Read unless its content says it is source, a config or a doc.
    Unsettled,
}

/// Walks `root` recursively in file-name order without following symbolic
/// links. Hidden entries and special files are skipped (a `.coronerignore`
/// is read, not listed); then `--exclude`, `--include` and the
/// `.coronerignore` files decide, in that order, and what none of them
/// names is read unless it is source code, a notebook, a config or a doc
/// ([`crate::authored_kind`]). A directory left out is not entered.
pub(crate) fn walk(root: &Path, selection: &Selection, found: &mut Discovery) {
    let mut walked = WalkedDirectory {
        display: shown_path(root),
        ..WalkedDirectory::default()
    };
    let mut ignore_files = IgnoreFiles::default();
    // Files to read, in walk order; the unsettled ones are classified by
    // their content in parallel after the walk.
    let mut files: Vec<WalkedFile> = Vec::new();
    let mut it = WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = it.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let at = shown_path(e.path().unwrap_or(root));
                found.errors.push((at, e.to_string()));
                continue;
            }
        };
        let depth = entry.depth();
        ignore_files.leave(depth);
        let kind = entry.file_type();
        let path = entry.path();
        let name = entry.file_name().to_string_lossy();
        if depth > 0 && kind.is_file() && name == IGNORE_FILE {
            // Read when its directory was entered: no input, not hidden.
            continue;
        }
        if depth > 0 && name.starts_with('.') {
            found.skipped.push((shown_path(path), "hidden".to_owned()));
            if kind.is_dir() {
                it.skip_current_dir();
            }
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(path);
        let verdict = if depth == 0 {
            Verdict::Read
        } else {
            verdict(&entry, rel, selection, &ignore_files)
        };
        let passed_over = match verdict {
            Verdict::Read | Verdict::Unsettled => None,
            Verdict::Excluded => Some(&mut walked.excluded),
            Verdict::Ignored => Some(&mut walked.ignored),
        };
        if let Some(list) = passed_over {
            list.push(rel, kind.is_dir());
            if kind.is_dir() {
                it.skip_current_dir();
            }
            continue;
        }
        if kind.is_dir() {
            if let Err(why) = ignore_files.enter(path, depth) {
                walked.errors.push(why);
            }
        } else if kind.is_file() {
            files.push(WalkedFile {
                path: path.to_path_buf(),
                rel: rel.to_path_buf(),
                unsettled: matches!(verdict, Verdict::Unsettled),
            });
        } else {
            let why = if kind.is_symlink() {
                "symbolic link (not followed)"
            } else {
                "not a regular file"
            };
            found.skipped.push((shown_path(path), why.to_owned()));
        }
    }
    // Reading each file's ends is most of a large directory's walk.
    let looks = parallel_map(&files, |_, f| f.unsettled.then(|| look(&f.path)));
    for (file, looked) in files.iter().zip(looks) {
        if looked.is_some_and(|l| l.authored.is_some()) {
            walked.authored.push(&file.rel, false);
        } else {
            let input = Input {
                loadable_elf: looked.and_then(|l| l.loadable_elf),
                ..file_input(&file.path, false)
            };
            push_file(found, input, selection);
        }
    }
    if !walked.is_empty() {
        found.directories.push(walked);
    }
}

/// A regular file the walk reached.
struct WalkedFile {
    path: PathBuf,
    /// Its path in the walked directory.
    rel: PathBuf,
    /// Read unless its content says it is source, a config or a doc.
    unsettled: bool,
}

/// Whether to read `entry` (at `rel` in the walked directory).
fn verdict(
    entry: &DirEntry,
    rel: &Path,
    selection: &Selection,
    ignore_files: &IgnoreFiles,
) -> Verdict {
    let is_dir = entry.file_type().is_dir();
    if selection.excludes(rel, is_dir) {
        return Verdict::Excluded;
    }
    if selection.includes(rel, is_dir) {
        return Verdict::Read;
    }
    match ignore_files.verdict(entry.path(), is_dir) {
        IgnoreVerdict::Ignored => return Verdict::Ignored,
        IgnoreVerdict::Read => return Verdict::Read,
        IgnoreVerdict::Unmatched => {}
    }
    if entry.file_type().is_file() {
        Verdict::Unsettled
    } else {
        Verdict::Read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_tells_each_input_whether_its_head_is_a_program() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/incidents/gpu-exception");
        let mut found = Discovery::default();
        walk(&root, &Selection::default(), &mut found);
        let hint = |name: &str| {
            found
                .inputs
                .iter()
                .find(|i| i.display.ends_with(name))
                .map(|i| i.loadable_elf)
        };
        assert_eq!(hint("bin/trainer"), Some(Some(true)));
        assert_eq!(hint("train.log"), Some(Some(false)));
    }

    #[test]
    fn notes_count_and_name_the_first_few() {
        let mut walked = WalkedDirectory::default();
        for name in ["a.py", "b.md", "c.yaml", "d.ipynb", "e.sh", "f.rs", "g.cu"] {
            walked.authored.push(Path::new(name), false);
        }
        walked.ignored.push(Path::new("ckpt"), true);
        assert_eq!(
            walked.notes(),
            [
                "skipped 7 source/config/doc file(s): a.py, b.md, c.yaml, d.ipynb, e.sh and 2 more \
                 (name a file, or --include GLOB, to read it)",
                "left out 1 path(s) matching .coronerignore: ckpt/",
            ]
        );
        assert!(WalkedDirectory::default().notes().is_empty());
    }
}
