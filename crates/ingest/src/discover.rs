use crate::authored;
use crate::selection::Selection;
use crate::walk::{walk, WalkedDirectory};
use crate::zip_members::{self, ZipMember};
use coroner_model::shown_path;
use std::path::{Path, PathBuf};

/// Where an input's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputSource {
    /// Standard input.
    Stdin,
    /// A regular file.
    File(PathBuf),
    /// A named pipe given on the command line (`<(cmd)`, `/dev/stdin`,
    /// `/dev/fd/N`, a FIFO): read once, as a stream, as `cat` would.
    Pipe(PathBuf),
    /// A member of a zip archive.
    ZipMember(ZipMember),
}

/// One input to analyse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Path as shown in reports (`-` for standard input).
    pub display: String,
    /// Where to read it.
    pub source: InputSource,
    /// Rank the path names (`rank3.log`), if any.
    pub rank: Option<u32>,
    /// Named on the command line, rather than found in a directory.
    pub explicit: bool,
    /// Whether it is an ELF executable or shared library, where the walk
    /// already read its head (`Some(false)` for standard input); `None`
    /// where nothing has read it yet.
    pub loadable_elf: Option<bool>,
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Inputs to read, in order.
    pub inputs: Vec<Input>,
    /// Entries passed over, with the reason: hidden entries, special files.
    pub skipped: Vec<(String, String)>,
    /// The walked directories that had more passed over (source code,
    /// configs, docs, paths `--exclude` or `.coronerignore` left out), or
    /// a `.coronerignore` that could not be used.
    pub directories: Vec<WalkedDirectory>,
    /// Paths that could not be looked at, with the reason.
    pub errors: Vec<(String, String)>,
}

/// Expands command-line paths into inputs. Directories are walked
/// recursively in file-name order without following symbolic links;
/// hidden entries (a name starting with `.`) and anything that is not a
/// regular file are skipped and listed in [`Discovery::skipped`] (a FIFO
/// named in `paths` is read as a stream); source
/// code, notebooks, configs and docs are skipped and counted in
/// [`Discovery::directories`]; `selection` (`--include`, `--exclude`)
/// and `.coronerignore` files decide the rest. A file named in `paths` is
/// always read.
pub fn discover(paths: &[String], selection: &Selection) -> Discovery {
    let mut found = Discovery::default();
    for arg in paths {
        if arg == "-" {
            found.inputs.push(Input {
                display: "-".to_owned(),
                source: InputSource::Stdin,
                rank: None,
                explicit: true,
                loadable_elf: Some(false),
            });
            continue;
        }
        let path = Path::new(arg);
        match std::fs::metadata(path) {
            Err(e) => found.errors.push((arg.clone(), e.to_string())),
            Ok(meta) if meta.is_dir() => walk(path, selection, &mut found),
            Ok(meta) if meta.is_file() => push_file(&mut found, file_input(path, true), selection),
            Ok(meta) if is_pipe(&meta) => found.inputs.push(Input {
                source: InputSource::Pipe(path.to_path_buf()),
                ..file_input(path, true)
            }),
            Ok(_) => found
                .skipped
                .push((arg.clone(), "not a regular file".to_owned())),
        }
    }
    found
}

/// A FIFO (what `<(cmd)`, `/dev/stdin` and `/dev/fd/N` lead to when they
/// are pipes).
fn is_pipe(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        meta.file_type().is_fifo()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Adds a file found on the command line or in a directory: a zip archive
/// is its members, the others are themselves. Members are chosen as a
/// directory's files are: hidden ones (and macOS's `__MACOSX` copies) and
/// those `--exclude` names are left out, source, notebooks and docs
/// skipped unless `--include` names them; a named archive's members are
/// read as named files are.
pub(crate) fn push_file(found: &mut Discovery, input: Input, selection: &Selection) {
    let InputSource::File(path) = &input.source else {
        found.inputs.push(input);
        return;
    };
    // A file named on the command line is looked at whatever its name; in a
    // directory only `.zip` files are.
    let named = input.explicit || zip_members::is_zip_name(path);
    if !named || !zip_members::has_zip_magic(path) {
        found.inputs.push(input);
        return;
    }
    let listing = match zip_members::list(path) {
        Ok(listing) => listing,
        Err(why) => {
            found.errors.push((input.display, why));
            return;
        }
    };
    // A member's name is the archive's bytes: shown inert, as a path is.
    if listing.members.is_empty() && listing.skipped.is_empty() && listing.left_out == 0 {
        found
            .errors
            .push((input.display, "an empty archive: no file in it".to_owned()));
        return;
    }
    let inside = |name: &str| format!("{}:{}", input.display, coroner_model::inert(name));
    for (name, why) in listing.skipped {
        found.skipped.push((inside(&name), why));
    }
    if listing.left_out > 0 {
        found.errors.push((
            input.display.clone(),
            format!(
                "{} members past the first {} were not read",
                listing.left_out,
                zip_members::MAX_MEMBERS
            ),
        ));
    }
    for member in listing.members {
        let display = inside(&member.name);
        let member_path = Path::new(&member.name);
        let hidden = member_path.components().any(|c| {
            let part = c.as_os_str().to_string_lossy();
            part.starts_with('.') || part == "__MACOSX"
        });
        let why = if hidden {
            Some("hidden")
        } else if selection.excludes(member_path, false) {
            Some("left out by --exclude")
        } else if !selection.includes(member_path, false)
            && member_path
                .file_name()
                .is_some_and(|n| authored::authored_by_name(&n.to_string_lossy()))
        {
            Some("source code, a notebook or a doc")
        } else {
            None
        };
        if let Some(why) = why {
            found.skipped.push((display, why.to_owned()));
            continue;
        }
        found.inputs.push(Input {
            display,
            rank: rank_from_path(member_path),
            source: InputSource::ZipMember(member),
            explicit: input.explicit,
            loadable_elf: None,
        });
    }
}

pub(crate) fn file_input(path: &Path, explicit: bool) -> Input {
    Input {
        display: shown_path(path),
        source: InputSource::File(path.to_path_buf()),
        rank: rank_from_path(path),
        explicit,
        loadable_elf: None,
    }
}

/// The rank a path states: a file name such as `rank3.log`, `rank_3.txt`,
/// `rank-03.err` or `train.rank3.log`, or torchrun's `--log-dir` layout
/// `.../attempt_0/3/stderr.log` (the local rank, which is the rank on a
/// single node).
pub fn rank_from_path(path: &Path) -> Option<u32> {
    rank_from_name(path).or_else(|| torchrun_log_rank(path))
}

fn torchrun_log_rank(path: &Path) -> Option<u32> {
    let rank_dir = path.parent()?;
    let attempt = rank_dir.parent()?.file_name()?.to_string_lossy();
    let digits = rank_dir.file_name()?.to_string_lossy();
    if !attempt.starts_with("attempt_") || digits.is_empty() || digits.len() > 6 {
        return None;
    }
    digits.parse().ok()
}

fn rank_from_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let at = name.find("rank")?;
    let rest = name[at + 4..].trim_start_matches(['_', '-']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 6 {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zip_archive_is_its_members_but_code_and_docs() {
        let dir = std::env::temp_dir().join(format!("coroner-discover-zip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let zip = crate::zip_members::tests::zip_of(&[
            (
                "run/logs/rank1.log",
                b"RuntimeError: CUDA error: out of memory\n",
                true,
            ),
            ("run/train.py", b"import torch\n", false),
            ("run/README.md", b"# notes\n", true),
        ]);
        std::fs::write(dir.join("run.zip"), &zip).unwrap_or_else(|e| panic!("{e}"));
        // Named without its extension, it is still an archive.
        std::fs::write(dir.join("artifact"), &zip).unwrap_or_else(|e| panic!("{e}"));
        for name in ["run.zip", "artifact"] {
            let path = dir.join(name).to_string_lossy().into_owned();
            let found = discover(std::slice::from_ref(&path), &Selection::default());
            let inputs: Vec<(&str, Option<u32>)> = found
                .inputs
                .iter()
                .map(|i| (i.display.as_str(), i.rank))
                .collect();
            let member = format!("{}:run/logs/rank1.log", shown_path(Path::new(&path)));
            assert_eq!(inputs, [(member.as_str(), Some(1))], "{name}");
            assert_eq!(found.skipped.len(), 2, "{:?}", found.skipped);
        }
        // In a directory, a file is an archive only by its name.
        let found = discover(&[dir.to_string_lossy().into_owned()], &Selection::default());
        let displays: Vec<&str> = found.inputs.iter().map(|i| i.display.as_str()).collect();
        assert_eq!(displays.len(), 2, "{displays:?}");
        assert!(displays
            .iter()
            .any(|d| d.ends_with("run.zip:run/logs/rank1.log")));
        assert!(displays.iter().any(|d| d.ends_with("artifact")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hidden_excluded_and_empty_archives_are_left_out_with_a_reason() {
        let dir = std::env::temp_dir().join(format!("coroner-zip-pick-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let zip = crate::zip_members::tests::zip_of(&[
            ("run/rank0.log", b"text\n", false),
            ("run/.cache/x.log", b"text\n", false),
            ("__MACOSX/run/._rank0.log", b"\0\x05", false),
            ("run/old/rank1.log", b"text\n", false),
            ("run/train.py", b"import torch\n", false),
        ]);
        let path = dir.join("pick.zip");
        std::fs::write(&path, &zip).unwrap_or_else(|e| panic!("{e}"));
        let selection = Selection::new(&["**/train.py".to_owned()], &["**/old".to_owned()])
            .unwrap_or_else(|e| panic!("{e:?}"));
        let found = discover(&[path.to_string_lossy().into_owned()], &selection);
        let read: Vec<&str> = found
            .inputs
            .iter()
            .filter_map(|i| i.display.rsplit(':').next())
            .collect();
        assert_eq!(
            read,
            ["run/rank0.log", "run/train.py"],
            "{:?}",
            found.skipped
        );
        let reasons: Vec<&str> = found.skipped.iter().map(|(_, why)| why.as_str()).collect();
        assert_eq!(reasons, ["hidden", "hidden", "left out by --exclude"]);
        std::fs::write(&path, crate::zip_members::tests::zip_of(&[]))
            .unwrap_or_else(|e| panic!("{e}"));
        let found = discover(
            &[path.to_string_lossy().into_owned()],
            &Selection::default(),
        );
        assert!(found.inputs.is_empty());
        assert!(found
            .errors
            .iter()
            .any(|(_, why)| why.contains("empty archive")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_members_name_is_shown_inert() {
        let dir = std::env::temp_dir().join(format!("coroner-zip-name-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let zip = crate::zip_members::tests::zip_of(&[("log\x1b[2J.txt", b"text\n", false)]);
        let path = dir.join("escape.zip");
        std::fs::write(&path, &zip).unwrap_or_else(|e| panic!("{e}"));
        let found = discover(
            &[path.to_string_lossy().into_owned()],
            &Selection::default(),
        );
        let display = found.inputs.first().map(|i| i.display.as_str());
        assert!(
            display.is_some_and(|d| d.ends_with(":log^[[2J.txt")),
            "{display:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ranks_from_file_names() {
        assert_eq!(rank_from_path(Path::new("logs/rank3.log")), Some(3));
        assert_eq!(rank_from_path(Path::new("rank_12.txt")), Some(12));
        assert_eq!(rank_from_path(Path::new("train.rank-07.err")), Some(7));
        assert_eq!(rank_from_path(Path::new("ranking.log")), None);
        assert_eq!(rank_from_path(Path::new("rank3/out.log")), None);
        assert_eq!(
            rank_from_path(Path::new("logs/none_x1/attempt_0/1/stderr.log")),
            Some(1)
        );
        assert_eq!(
            rank_from_path(Path::new("logs/attempt_0/x/stderr.log")),
            None
        );
        assert_eq!(rank_from_path(Path::new("runs/7/stderr.log")), None);
    }
}
