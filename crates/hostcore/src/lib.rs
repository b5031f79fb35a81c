#![forbid(unsafe_code)]
// Inputs are untrusted: no panicking shortcuts on the bytes they hold.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]
//! Reads a host process's ELF core dump offline, without gdb: threads and
//! their registers, the fatal signal, the mapped files, and for every
//! thread a stack unwound (DWARF CFI, signal frames, frame pointers,
//! a validated stack scan) and symbolized (DWARF with inlined frames,
//! else ELF symbols, else module and offset).
//!
//! Entry point: [`read_host_core`], which fills a [`coroner_model::HostCore`].
//! Binaries are looked up on disk by the paths the core records (or under
//! [`Options::sysroots`], [`Options::debug_dirs`], [`Options::exe`]) and
//! used only when their GNU build id matches the one the core holds.

mod bytes;
mod classify;
mod elf;
mod memory;
mod modules;
mod notes;
mod regs;
mod signals;
mod symbols;
mod unwind;

use std::path::PathBuf;

use coroner_model::{Frame, HostCore, HostThread, Process, Signal};

pub use crate::classify::deciding_frame;
use crate::memory::Memory;
use crate::modules::{Modules, OpenFiles};
use crate::regs::Arch;
use crate::unwind::{Walk, Walker};

/// Where to find the binaries a core refers to.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The main executable, when it is not at the recorded path (matched
    /// by build id or by file name).
    pub exe: Option<PathBuf>,
    /// Directories holding a copy of the crashed machine's file system;
    /// each is a prefix of the recorded paths.
    pub sysroots: Vec<PathBuf>,
    /// Directories with separate debug files: `.build-id/xx/yyyy.debug`,
    /// or files named like the recorded ones.
    pub debug_dirs: Vec<PathBuf>,
}

/// Why bytes could not be read as an ELF core at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostCoreError {
    /// The bytes do not start with the ELF magic.
    #[error("not an ELF file")]
    NotElf,
    /// An ELF file, but not a core dump.
    #[error("ELF file of type {0}, not a core dump (ET_CORE)")]
    NotCore(u16),
}

/// Functions after which a backtrace stops, as gdb's does.
const OUTERMOST: [&str; 6] = [
    "main",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__clone_internal",
];

/// Reads a whole (decompressed) ELF core. Fails only when `core` is not an
/// ELF core; every other problem is a warning in the result.
pub fn read_host_core(core: &[u8], options: &Options) -> Result<HostCore, HostCoreError> {
    let mut warnings = Vec::new();
    let file = elf::parse_core(core, &mut warnings).map_err(|e| match e {
        elf::NotCore::NotElf => HostCoreError::NotElf,
        elf::NotCore::NotCore(t) => HostCoreError::NotCore(t),
    })?;
    let arch = match file.machine {
        elf::EM_X86_64 => Some(Arch::X86_64),
        elf::EM_AARCH64 => Some(Arch::Aarch64),
        0 => None,
        other => {
            warnings.push(format!(
                "machine {other} is not supported: no registers or stacks"
            ));
            None
        }
    };
    let mut out = HostCore {
        arch: arch.map_or_else(
            || format!("machine {}", file.machine),
            |a| a.name().to_string(),
        ),
        ..HostCore::default()
    };

    let mut truncated = false;
    let memory = Memory::new(core, &file.phdrs, &mut truncated);
    if truncated {
        let wanted = file
            .phdrs
            .iter()
            .filter(|p| p.p_type == elf::PT_LOAD)
            .map(|p| p.offset.saturating_add(p.filesz))
            .max()
            .unwrap_or(0);
        warnings.push(format!(
            "core truncated: {} of {wanted} bytes present; memory past the end is missing",
            core.len()
        ));
    }
    let notes = notes::decode(&file.notes, arch, &mut warnings);
    if notes.threads.is_empty() {
        warnings.push("no thread status notes in the core".to_string());
    }

    out.process = process(&notes, &memory);
    out.signal = signal(&notes);

    let mut resolutions = modules::group(&notes.files, &memory, notes.auxv(notes::AT_ENTRY));
    modules::add_vdso(
        &mut resolutions,
        &memory,
        notes.auxv(notes::AT_SYSINFO_EHDR),
    );
    let mut open = OpenFiles::default();
    modules::resolve(&mut resolutions, options, &mut open, &mut warnings);
    // A mapping with no executable code in the process (a device file,
    // shared memory, a data file) is no module to find symbols for.
    let has_code = |path: &str| {
        notes
            .files
            .iter()
            .any(|f| f.path == path && memory.is_executable(f.start))
    };
    for r in resolutions.iter_mut() {
        if r.info.status == modules::STATUS_MISSING && !has_code(&r.info.path) {
            r.info.status = modules::STATUS_DATA.to_string();
        }
    }
    let modules = Modules::build(resolutions, &open, &memory);

    if let Some(arch) = arch {
        let mut walker = Walker::new(&modules, &memory, arch, notes.pac_mask);
        for (index, thread) in notes.threads.iter().enumerate() {
            let (frames, note) = match &thread.regs {
                Some(regs) => {
                    let walk = walker.walk(regs.clone());
                    symbolize(&walk, &modules)
                }
                None => (Vec::new(), Some("no registers recorded".to_string())),
            };
            out.threads.push(HostThread {
                tid: thread.tid,
                crashed: index == 0 && out.signal.is_some(),
                frames,
                unwind_note: note,
            });
        }
    } else {
        out.threads = notes
            .threads
            .iter()
            .enumerate()
            .map(|(index, t)| HostThread {
                tid: t.tid,
                crashed: index == 0 && out.signal.is_some(),
                frames: Vec::new(),
                unwind_note: Some("registers of this architecture are not decoded".to_string()),
            })
            .collect();
    }
    out.threads_omitted = notes.threads_omitted;
    if notes.threads_omitted > 0 {
        warnings.push(format!(
            "{} more threads not unwound: the first {} are",
            notes.threads_omitted,
            HostCore::MAX_THREADS
        ));
    }

    let mut listed: Vec<_> = modules.list.iter().map(|m| m.info.clone()).collect();
    listed.retain(|m| !m.path.is_empty());
    out.cuda_loaded = listed
        .iter()
        .any(|m| modules::file_name(&m.path).starts_with("libcuda.so"));
    out.modules = listed;
    out.fault_library = classify::fault_library(&out);
    warnings.dedup();
    out.warnings = warnings;
    Ok(out)
}

fn process(notes: &notes::Notes, memory: &Memory<'_>) -> Process {
    let ps = notes.psinfo.clone().unwrap_or_default();
    Process {
        pid: ps.pid,
        name: ps.fname,
        args: ps.psargs,
        executable: notes
            .auxv(notes::AT_EXECFN)
            .and_then(|addr| memory.c_string(addr, 4096)),
        platform: notes
            .auxv(notes::AT_PLATFORM)
            .and_then(|addr| memory.c_string(addr, 64)),
    }
}

fn signal(notes: &notes::Notes) -> Option<Signal> {
    let (number, code, addr, pid) = match &notes.siginfo {
        Some(si) if si.signo != 0 => (si.signo, si.code, si.addr, si.pid),
        _ => {
            let cursig = notes.threads.first()?.cursig;
            if cursig == 0 {
                return None;
            }
            (u32::from(cursig), 0x80, 0, 0)
        }
    };
    let known_code = notes.siginfo.is_some();
    Some(Signal {
        number,
        name: signals::signal_name(number),
        code,
        code_name: known_code
            .then(|| signals::code_name(number, code))
            .flatten()
            .map(str::to_string),
        fault_address: (known_code && signals::has_fault_address(number, code)).then_some(addr),
        sender_pid: (known_code && signals::has_sender(code)).then_some(pid),
    })
}

/// Whether the frames just added end in a Rust program's `crate::main`
/// called from the standard library's start-up code (gdb's main there).
fn is_rust_main(
    frames: &[Frame],
    walk: &[unwind::RawFrame],
    pc: u64,
    modules: &Modules<'_>,
) -> bool {
    let Some(name) = frames.last().and_then(|f| f.function.as_deref()) else {
        return false;
    };
    let parts: Vec<&str> = name.split("::").collect();
    if parts.len() != 2 || parts.get(1) != Some(&"main") {
        return false;
    }
    // Look a few frames further for the runtime's start function.
    walk.iter()
        .skip_while(|r| r.pc != pc)
        .skip(1)
        .take(16)
        .any(|r| {
            modules.find(r.pc).is_some_and(|m| {
                symbols::symbolize(m, r.lookup).iter().any(|l| {
                    l.function
                        .as_deref()
                        .is_some_and(|f| f.starts_with("std::rt::lang_start"))
                })
            })
        })
}

/// Turns a walk into model frames (inlined calls expanded) and stops after
/// the outermost function gdb shows.
fn symbolize(walk: &Walk, modules: &Modules<'_>) -> (Vec<Frame>, Option<String>) {
    let mut frames: Vec<Frame> = Vec::new();
    let mut note = walk.note.clone();
    'raw: for raw in &walk.frames {
        let module = modules.find(raw.pc);
        let base = Frame {
            index: 0,
            pc: raw.pc,
            function: None,
            file: None,
            line: None,
            module: module.map(|m| m.info.path.clone()),
            module_offset: module.map(|m| raw.pc.wrapping_sub(m.info.start)),
            inlined: false,
            trust: raw.trust.to_string(),
        };
        let locations = module
            .map(|m| symbols::symbolize(m, raw.lookup))
            .unwrap_or_default();
        if locations.is_empty() {
            frames.push(base);
            continue;
        }
        let mut stop = false;
        for location in locations {
            stop |= location
                .function
                .as_deref()
                .is_some_and(|f| OUTERMOST.contains(&f));
            frames.push(Frame {
                function: location.function,
                file: location.file,
                line: location.line,
                inlined: location.inlined,
                ..base.clone()
            });
        }
        if stop || is_rust_main(&frames, &walk.frames, raw.pc, modules) {
            note = None;
            break 'raw;
        }
    }
    for (index, frame) in (0u32..).zip(frames.iter_mut()) {
        frame.index = index;
    }
    (frames, note)
}
