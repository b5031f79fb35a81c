//! Fixture loading and gdb backtrace parsing shared by the tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use coroner_model::{Frame, HostCore};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn host_cores() -> PathBuf {
    repo().join("fixtures/host-cores")
}

/// The shared real-GPU fixtures, beside the repository, when present.
/// The repository's real GPU-machine fixtures (cores and the programs
/// that dumped them).
pub fn real_gpu() -> Option<PathBuf> {
    let dir = repo().join("fixtures/real-gpu");
    assert!(
        dir.join("cores/core.illegal.679.zst").is_file(),
        "missing {}",
        dir.display()
    );
    Some(dir)
}

pub fn unzstd(path: &Path) -> Vec<u8> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    zstd::decode_all(file).unwrap()
}

/// A zstd-compressed binary written out (once) to a temporary directory.
pub fn binary(compressed: &Path) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("coroner-hostcore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let name = compressed.file_stem().unwrap();
    let out = dir.join(name);
    if !out.exists() {
        let tmp = dir.join(format!("{}.part", name.to_string_lossy()));
        std::fs::write(&tmp, unzstd(compressed)).unwrap();
        std::fs::rename(&tmp, &out).unwrap();
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdbFrame {
    pub pc: Option<u64>,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// Threads of a `thread apply all bt` output: (tid, frames).
pub fn parse_gdb(text: &str) -> Vec<(u32, Vec<GdbFrame>)> {
    let mut threads: Vec<(u32, Vec<GdbFrame>)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Thread ") {
            let tid = rest
                .split("LWP ")
                .nth(1)
                .and_then(|t| t.split(')').next())
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0);
            threads.push((tid, Vec::new()));
            continue;
        }
        let Some(frame) = line.strip_prefix('#') else {
            continue;
        };
        let Some((_, mut rest)) = frame.split_once("  ") else {
            continue;
        };
        let Some(thread) = threads.last_mut() else {
            continue;
        };
        let mut pc = None;
        if let Some(hex) = rest.strip_prefix("0x") {
            let (addr, tail) = hex.split_once(" in ").unwrap_or((hex, ""));
            pc = u64::from_str_radix(addr.trim(), 16).ok();
            rest = tail;
        }
        let (mut head, mut file, mut line_no) = (rest.to_string(), None, None);
        if let Some((h, at)) = rest.rsplit_once(" at ") {
            if let Some((f, l)) = at.rsplit_once(':') {
                file = Some(f.rsplit('/').next().unwrap_or(f).to_string());
                line_no = l.trim().parse().ok();
                head = h.to_string();
            }
        } else if let Some((h, _)) = rest.rsplit_once(" from ") {
            head = h.to_string();
        }
        let function = strip_args(&head);
        thread.1.push(GdbFrame {
            pc,
            function: (function != "??" && !function.starts_with('<')).then_some(function),
            file,
            line: line_no,
        });
    }
    threads
}

/// `name (a=1, b=2)` → `name`.
fn strip_args(text: &str) -> String {
    let text = text.trim();
    if !text.ends_with(')') {
        return text.to_string();
    }
    let mut depth = 0;
    for (at, c) in text.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return text[..at].trim_end().to_string();
                }
            }
            _ => {}
        }
    }
    text.to_string()
}

/// gdb spells generic Rust functions with their parameters
/// (`read_volatile<u64>`); compare without them.
fn same_function(gdb: &str, ours: &str) -> bool {
    let plain = |s: &str| match s.find('<') {
        Some(at) if s.ends_with('>') => s[..at].to_string(),
        _ => s.to_string(),
    };
    gdb == ours || plain(gdb) == plain(ours)
}

/// Asserts our frames equal gdb's: function, file name, line, and the pc
/// wherever gdb prints one.
pub fn assert_same_frames(gdb: &[GdbFrame], ours: &[Frame], what: &str) {
    let summary: Vec<String> = ours
        .iter()
        .map(|f| {
            format!(
                "{:#x} {:?} {:?}:{:?} {}",
                f.pc, f.function, f.file, f.line, f.trust
            )
        })
        .collect();
    assert_eq!(
        gdb.len(),
        ours.len(),
        "{what}: frame count; ours: {summary:#?}\ngdb: {gdb:#?}"
    );
    for (i, (g, o)) in gdb.iter().zip(ours).enumerate() {
        if let Some(pc) = g.pc {
            assert_eq!(pc, o.pc, "{what} #{i} pc; ours: {summary:#?}");
        }
        match (&g.function, &o.function) {
            (Some(g), Some(o)) => assert!(same_function(g, o), "{what} #{i}: gdb {g} ours {o}"),
            (None, _) => {}
            (Some(g), None) => panic!("{what} #{i}: gdb names {g}, we do not; ours: {summary:#?}"),
        }
        if g.file.is_some() {
            let base = o
                .file
                .as_deref()
                .map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
            assert_eq!(g.file, base, "{what} #{i} file");
            assert_eq!(g.line, o.line, "{what} #{i} line");
        }
    }
}

pub fn thread(core: &HostCore, tid: u32) -> &coroner_model::HostThread {
    core.threads
        .iter()
        .find(|t| t.tid == tid)
        .unwrap_or_else(|| panic!("no thread {tid}"))
}

/// gdb, when installed.
pub fn gdb() -> Option<PathBuf> {
    let ok = std::process::Command::new("gdb")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("gdb"))
}
