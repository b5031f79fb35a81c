//! Files people write (source code, notebooks, configs, docs), as opposed
//! to what a job leaves behind. A run directory holds both; only the second
//! is evidence, however often the first mentions `CUDA out of memory`.
//!
//! [`authored_kind`] decides from the file's name and, where the name does
//! not settle it, from its first and last [`LOOK_LEN`] bytes.

use crate::open::detect_kind;
use crate::python_source::LineShapes;
use coroner_model::InputKind;
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Bytes looked at, at each end of a file, to tell source from a log.
pub const LOOK_LEN: usize = 4 * 1024;

/// What kind of written-by-hand file something is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authored {
    /// Program source or a script.
    Source,
    /// A Jupyter notebook.
    Notebook,
    /// A configuration or data file (YAML, TOML, JSON, INI, lock files).
    Config,
    /// Documentation (Markdown, reStructuredText, licences).
    Doc,
}

const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "pyx", "pxd", "c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "cu", "cuh", "rs",
    "go", "java", "kt", "scala", "js", "mjs", "cjs", "ts", "tsx", "jsx", "sh", "bash", "zsh",
    "fish", "ps1", "bat", "pl", "rb", "lua", "jl", "swift", "cmake", "mk", "proto", "sql", "css",
];
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "adoc", "tex", "html", "htm"];
const CONFIG_EXTENSIONS: &[&str] = &["toml", "cfg", "ini", "conf", "lock"];
/// Formats that usually hold configuration but can hold evidence: read
/// when their content says so ([`holds_evidence`]).
const DATA_EXTENSIONS: &[&str] = &["json", "yaml", "yml"];
/// Extensions that compression adds, looked through for the name check.
const COMPRESSION_EXTENSIONS: &[&str] = &["gz", "zst", "xz"];

/// File names (before the first `.`, any case) of sources and docs.
const SOURCE_NAMES: &[&str] = &[
    "makefile",
    "gnumakefile",
    "dockerfile",
    "containerfile",
    "cmakelists",
    "jenkinsfile",
    "vagrantfile",
];
const DOC_NAMES: &[&str] = &[
    "readme",
    "license",
    "licence",
    "copying",
    "notice",
    "authors",
    "contributors",
    "changelog",
    "codeowners",
];
/// (And any name starting with `requirements`: `requirements-dev.txt`.)
const CONFIG_NAMES: &[&str] = &["constraints", "pipfile"];
/// Extensions that only output has: a `notice.log` is no notice.
const OUTPUT_EXTENSIONS: &[&str] = &["log", "out", "err"];

/// Strings in a JSON or YAML file that mark it as something a job or its
/// launcher wrote: torchelastic's error file (`@record`), PyTorch's flight
/// recorder dump, a Kubernetes pod's status, a Cloud Logging export.
const EVIDENCE_MARKERS: &[&str] = &[
    "py_callstack",
    "pg_config",
    "containerStatuses",
    "textPayload",
];

/// What a file found in a directory is, when it is written by hand rather
/// than left behind by a job; `None` for evidence. A file the name does not
/// settle (a `.log`, a `.txt`, no extension) is read at both ends: plain
/// Python source, or a script starting with `#!`, is [`Authored::Source`].
/// Whatever a reader recognises (NCCL debug output, a kernel log,
/// `nvidia-smi`, a core dump), compressed or binary content, and a file
/// that cannot be read here are left for the readers.
pub fn authored_kind(path: &Path) -> Option<Authored> {
    look(path).authored
}

/// What reading a file's name, and its ends where the name does not
/// settle it, says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Look {
    /// See [`authored_kind`].
    pub(crate) authored: Option<Authored>,
    /// Whether its head is an ELF executable or shared library; `None`
    /// where the head was not read.
    pub(crate) loadable_elf: Option<bool>,
}

/// Reads `path`'s name, and its ends where the name does not settle what
/// it is (see [`authored_kind`]).
pub(crate) fn look(path: &Path) -> Look {
    let named = |authored| Look {
        authored,
        loadable_elf: None,
    };
    let Some(name) = path.file_name() else {
        return named(None);
    };
    let name = name.to_string_lossy().to_ascii_lowercase();
    let says = kind_by_name(&name);
    if let NameSays::Authored(kind) = says {
        return named(Some(kind));
    }
    let Ok(ends) = read_ends(path) else {
        return named(None);
    };
    let authored = match says {
        NameSays::DataFormat => (!holds_evidence(&ends)).then_some(Authored::Config),
        _ => is_source(&ends).then_some(Authored::Source),
    };
    Look {
        authored,
        loadable_elf: Some(is_loadable_elf(&ends.head)),
    }
}

/// `ET_EXEC` and `ET_DYN`: the ELF types of executables and libraries.
const LOADABLE: [u16; 2] = [2, 3];

/// Whether `head`, a file's first bytes, starts an ELF executable or
/// shared library (little-endian, the only byte order coroner's readers
/// take).
pub fn is_loadable_elf(head: &[u8]) -> bool {
    // e_type, at bytes 16 and 17.
    match (head.starts_with(b"\x7fELF"), head.get(16..18)) {
        (true, Some(&[low, high])) => LOADABLE.contains(&u16::from_le_bytes([low, high])),
        _ => false,
    }
}

/// Whether a file's name alone says it is written by hand (source, a
/// notebook, a doc); a data format's content is not looked at.
pub(crate) fn authored_by_name(file_name: &str) -> bool {
    matches!(
        kind_by_name(&file_name.to_ascii_lowercase()),
        NameSays::Authored(_)
    )
}

enum NameSays {
    Authored(Authored),
    DataFormat,
    Nothing,
}

fn kind_by_name(name: &str) -> NameSays {
    let mut name = name;
    while let Some((stem, ext)) = name.rsplit_once('.') {
        if !COMPRESSION_EXTENSIONS.contains(&ext) {
            break;
        }
        name = stem;
    }
    let base = name.split('.').next().unwrap_or(name);
    let extension = name.rsplit_once('.').map(|(_, ext)| ext);
    if !extension.is_some_and(|ext| OUTPUT_EXTENSIONS.contains(&ext)) {
        let licence = base.starts_with("license-") || base.starts_with("licence-");
        let named = |names: &[&str]| names.contains(&base);
        if named(DOC_NAMES) || licence {
            return NameSays::Authored(Authored::Doc);
        }
        if named(SOURCE_NAMES) {
            return NameSays::Authored(Authored::Source);
        }
        if named(CONFIG_NAMES) || base.starts_with("requirements") {
            return NameSays::Authored(Authored::Config);
        }
    }
    match extension {
        Some("ipynb") => NameSays::Authored(Authored::Notebook),
        Some(ext) if SOURCE_EXTENSIONS.contains(&ext) => NameSays::Authored(Authored::Source),
        Some(ext) if DOC_EXTENSIONS.contains(&ext) => NameSays::Authored(Authored::Doc),
        Some(ext) if CONFIG_EXTENSIONS.contains(&ext) => NameSays::Authored(Authored::Config),
        Some(ext) if DATA_EXTENSIONS.contains(&ext) => NameSays::DataFormat,
        _ => NameSays::Nothing,
    }
}

/// The first and last [`LOOK_LEN`] bytes of a file. The tail never
/// overlaps the head: it is empty for a file of at most [`LOOK_LEN`] bytes,
/// and what follows the head for one shorter than twice that.
struct Ends {
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// Reads from `at` to the end of `file` into `tail` (at most its
/// capacity): positioned reads, one call for a regular file.
#[cfg(unix)]
fn read_tail(file: &File, at: u64, tail: &mut Vec<u8>) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; tail.capacity()];
    let mut filled = 0;
    while filled < buf.len() {
        let Some(free) = buf.get_mut(filled..) else {
            break;
        };
        match file.read_at(free, at + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    *tail = buf;
    Ok(())
}

#[cfg(not(unix))]
fn read_tail(mut file: &File, at: u64, tail: &mut Vec<u8>) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(at))?;
    file.take(tail.capacity() as u64).read_to_end(tail)?;
    Ok(())
}

fn read_ends(path: &Path) -> io::Result<Ends> {
    // Only a regular file is opened: never wait on a FIFO.
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let size = meta.len();
    let mut file = File::open(path)?;
    let mut head = Vec::with_capacity(LOOK_LEN);
    (&mut file).take(LOOK_LEN as u64).read_to_end(&mut head)?;
    // Room for the whole tail up front: read at once, not in growing steps.
    let mut tail = Vec::with_capacity(LOOK_LEN);
    let look = LOOK_LEN as u64;
    if size > look {
        read_tail(&file, size.saturating_sub(look).max(look), &mut tail)?;
    }
    Ok(Ends { head, tail })
}

impl Ends {
    /// What a reader of coroner makes of the content: anything but a log
    /// (binary data included) is for the readers to handle.
    fn is_plain_text(&self) -> bool {
        detect_kind(&self.head) == InputKind::Log
    }

    /// The head's whole lines, and the tail's, as text.
    fn texts(&self) -> (Cow<'_, str>, Cow<'_, str>) {
        let head = if self.tail.is_empty() && self.head.len() < LOOK_LEN {
            self.head.as_slice()
        } else {
            before_last_newline(&self.head)
        };
        let tail = after_first_newline(&self.tail);
        (crate::text::lossy(head), crate::text::lossy(tail))
    }
}

fn before_last_newline(bytes: &[u8]) -> &[u8] {
    match memchr::memrchr(b'\n', bytes) {
        Some(at) => bytes.get(..at).unwrap_or_default(),
        None => bytes,
    }
}

fn after_first_newline(bytes: &[u8]) -> &[u8] {
    match memchr::memchr(b'\n', bytes) {
        Some(at) => bytes.get(at + 1..).unwrap_or_default(),
        None => &[],
    }
}

fn is_source(ends: &Ends) -> bool {
    // The shapes first: most files are logs, and the shapes alone say so
    // without the content sniffing that tells a log from the other kinds.
    let shaped = ends.head.starts_with(b"#!") || {
        let (head, tail) = ends.texts();
        LineShapes::is_python_source(&[&head, &tail])
    };
    shaped && ends.is_plain_text()
}

/// Whether a JSON or YAML file is something coroner reads: a format a
/// reader recognises, an [`EVIDENCE_MARKERS`] string, or JSON Lines (a
/// structured log: its first two lines each one object).
fn holds_evidence(ends: &Ends) -> bool {
    if !ends.is_plain_text() {
        return true;
    }
    let (head, _) = ends.texts();
    if EVIDENCE_MARKERS.iter().any(|m| head.contains(m)) {
        return true;
    }
    let objects = head
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(2)
        .filter(|l| l.starts_with('{') && l.ends_with('}'))
        .count();
    objects == 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walks_look_at_a_files_head_tells_a_loadable_elf_from_a_log() {
        let fixture = |rel: &str| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures")
                .join(rel)
        };
        let binary = look(&fixture("real-gpu/bin/segv"));
        assert_eq!((binary.authored, binary.loadable_elf), (None, Some(true)));
        let log = look(&fixture("real-gpu/logs/torchrun_kill.log"));
        assert_eq!((log.authored, log.loadable_elf), (None, Some(false)));
        // A name that settles it is not read.
        assert_eq!(look(Path::new("no/such/train.py")).loadable_elf, None);
        // An ELF core (type 4) is no executable or library.
        let mut core = b"\x7fELF\x02\x01\x01".to_vec();
        core.resize(16, 0);
        core.extend([4, 0]);
        assert!(!is_loadable_elf(&core));
        core[16] = 3;
        assert!(is_loadable_elf(&core));
        assert!(!is_loadable_elf(&core[..17]));
    }

    fn by_name(name: &str) -> Option<Authored> {
        match kind_by_name(name) {
            NameSays::Authored(kind) => Some(kind),
            _ => None,
        }
    }

    #[test]
    fn names_of_sources_configs_and_docs() {
        for (name, kind) in [
            ("train.py", Authored::Source),
            ("kernel.cu", Authored::Source),
            ("launch.sh", Authored::Source),
            ("train.py.gz", Authored::Source),
            ("makefile", Authored::Source),
            ("dockerfile.gpu", Authored::Source),
            ("cmakelists.txt", Authored::Source),
            ("eval.ipynb", Authored::Notebook),
            ("readme.md", Authored::Doc),
            ("readme", Authored::Doc),
            ("license-mit", Authored::Doc),
            ("notes.rst", Authored::Doc),
            ("pyproject.toml", Authored::Config),
            ("setup.cfg", Authored::Config),
            ("requirements-dev.txt", Authored::Config),
            ("uv.lock", Authored::Config),
        ] {
            assert_eq!(by_name(name), Some(kind), "{name}");
        }
        for name in [
            "train.log",
            "stdout.txt",
            "slurm-42.out",
            "rank3",
            "dmesg.txt.gz",
            "notice.log",
        ] {
            assert!(matches!(kind_by_name(name), NameSays::Nothing), "{name}");
        }
        for name in ["config.json", "pod.yaml", "ds.yml"] {
            assert!(matches!(kind_by_name(name), NameSays::DataFormat), "{name}");
        }
    }

    fn ends(text: &str) -> Ends {
        Ends {
            head: text.as_bytes().to_vec(),
            tail: Vec::new(),
        }
    }

    #[test]
    fn content_tells_source_from_logs() {
        assert!(is_source(&ends("import torch\n\ndef main():\n    pass\n")));
        assert!(is_source(&ends("#!/bin/bash\necho 'CUDA out of memory'\n")));
        assert!(!is_source(&ends(
            "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n    import x\nModuleNotFoundError: No module named 'x'\n"
        )));
        assert!(!is_source(&ends(
            "vm:1:1 [0] NCCL INFO import torch\nvm:1:1 [0] NCCL INFO def f(\n"
        )));
        assert!(!is_source(&ends("\0\0\0\0import torch\n")));
    }

    #[test]
    fn the_tail_must_be_source_too() {
        let head = "import torch\n".repeat(LOOK_LEN / 13 + 1);
        let long = Ends {
            head: head.as_bytes()[..LOOK_LEN].to_vec(),
            tail: b"ss\n[rank0]: RuntimeError: CUDA error: an illegal memory access\n".repeat(50),
        };
        assert!(!is_source(&long));
        let code = Ends {
            head: head.as_bytes()[..LOOK_LEN].to_vec(),
            tail: b"    return x\n".repeat(50),
        };
        assert!(is_source(&code));
    }

    #[test]
    fn json_and_yaml_hold_evidence_or_config() {
        assert!(!holds_evidence(&ends(
            "{\n  \"train_batch_size\": 64,\n  \"note\": \"CUDA out of memory\"\n}\n"
        )));
        assert!(!holds_evidence(&ends(
            "model:\n  layers: 12\n# CUDA out of memory below 80 GiB\n"
        )));
        assert!(holds_evidence(&ends(
            "{\"message\": {\"message\": \"RuntimeError: CUDA error\", \"extraInfo\": {\"py_callstack\": \"Traceback\"}}}\n"
        )));
        assert!(holds_evidence(&ends(
            "{\"version\": \"2.10\", \"pg_config\": {}, \"entries\": []}\n"
        )));
        assert!(holds_evidence(&ends(
            "status:\n  containerStatuses:\n  - lastState:\n      terminated:\n        reason: OOMKilled\n"
        )));
        assert!(holds_evidence(&ends(
            "{\"level\": \"info\", \"msg\": \"step 1\"}\n{\"level\": \"error\", \"msg\": \"CUDA out of memory\"}\n"
        )));
    }
}
