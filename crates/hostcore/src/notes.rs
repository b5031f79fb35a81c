//! Decoding of the Linux core notes: threads, process, signal, auxiliary
//! vector, mapped files and the aarch64 pointer-authentication mask.

use crate::bytes::{c_string, i32_at, slice, to_usize, u16_at, u32_at, u64_at};
use crate::elf::Note;
use crate::regs::{Arch, Registers};

pub const NT_PRSTATUS: u32 = 1;
pub const NT_PRPSINFO: u32 = 3;
pub const NT_AUXV: u32 = 6;
pub const NT_SIGINFO: u32 = 0x5349_4749;
pub const NT_FILE: u32 = 0x4649_4c45;
/// aarch64 pointer-authentication masks (data, instruction).
pub const NT_ARM_PAC_MASK: u32 = 0x406;

pub const AT_ENTRY: u64 = 9;
pub const AT_PLATFORM: u64 = 15;
pub const AT_EXECFN: u64 = 31;
pub const AT_SYSINFO_EHDR: u64 = 33;

/// Bytes before `pr_reg` in `struct elf_prstatus` (64-bit).
const PRSTATUS_HEADER: usize = 112;
/// Mapped-file entries past this are ignored as corrupt.
const MAX_FILES: u64 = 1 << 20;

#[derive(Debug, Clone)]
pub struct ThreadNote {
    pub tid: u32,
    pub cursig: u16,
    pub regs: Option<Registers>,
}

#[derive(Debug, Clone, Default)]
pub struct PsInfo {
    pub pid: u32,
    pub fname: String,
    pub psargs: String,
}

#[derive(Debug, Clone, Default)]
pub struct SigInfo {
    pub signo: u32,
    pub code: i32,
    pub addr: u64,
    pub pid: u32,
}

#[derive(Debug, Clone)]
pub struct FileMapping {
    pub start: u64,
    pub end: u64,
    pub file_offset: u64,
    pub path: String,
}

#[derive(Debug, Default)]
pub struct Notes {
    /// The first [`coroner_model::HostCore::MAX_THREADS`] threads.
    pub threads: Vec<ThreadNote>,
    /// The thread notes past those.
    pub threads_omitted: u64,
    pub psinfo: Option<PsInfo>,
    pub siginfo: Option<SigInfo>,
    pub auxv: Vec<(u64, u64)>,
    pub files: Vec<FileMapping>,
    pub pac_mask: Option<u64>,
}

impl Notes {
    pub fn auxv(&self, key: u64) -> Option<u64> {
        self.auxv.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

pub fn decode(notes: &[Note<'_>], arch: Option<Arch>, warnings: &mut Vec<String>) -> Notes {
    let mut out = Notes::default();
    for note in notes {
        let core = note.name == b"CORE";
        let linux = note.name == b"LINUX";
        match note.n_type {
            NT_PRSTATUS if core && out.threads.len() >= coroner_model::HostCore::MAX_THREADS => {
                out.threads_omitted += 1;
            }
            NT_PRSTATUS if core => out.threads.push(prstatus(note.desc, arch, warnings)),
            NT_PRPSINFO if core => out.psinfo = psinfo(note.desc),
            NT_SIGINFO if core => out.siginfo = siginfo(note.desc),
            NT_AUXV if core => out.auxv = auxv(note.desc),
            NT_FILE if core => out.files = files(note.desc, warnings),
            NT_ARM_PAC_MASK if linux => {
                // struct user_pac_mask { data_mask; insn_mask; }
                out.pac_mask = u64_at(note.desc, 8).or_else(|| u64_at(note.desc, 0));
            }
            _ => {}
        }
    }
    out
}

fn prstatus(desc: &[u8], arch: Option<Arch>, warnings: &mut Vec<String>) -> ThreadNote {
    let tid = u32_at(desc, 32).unwrap_or(0);
    let cursig = u16_at(desc, 12).unwrap_or(0);
    let regs = arch.and_then(|arch| {
        let count = match arch {
            Arch::X86_64 => 27,
            Arch::Aarch64 => 34,
        };
        let regs = slice(desc, PRSTATUS_HEADER, count * 8)
            .and_then(|pr_reg| Registers::from_prstatus(arch, pr_reg));
        if regs.is_none() {
            warnings.push(format!(
                "thread {tid}: register note is {} bytes, too short for {}",
                desc.len(),
                arch.name()
            ));
        }
        regs
    });
    ThreadNote { tid, cursig, regs }
}

fn psinfo(desc: &[u8]) -> Option<PsInfo> {
    Some(PsInfo {
        pid: u32_at(desc, 24)?,
        fname: slice(desc, 40, 16).map(c_string).unwrap_or_default(),
        psargs: slice(desc, 56, 80)
            .map(c_string)
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    })
}

fn siginfo(desc: &[u8]) -> Option<SigInfo> {
    Some(SigInfo {
        signo: u32_at(desc, 0)?,
        code: i32_at(desc, 8)?,
        addr: u64_at(desc, 16).unwrap_or(0),
        pid: u32_at(desc, 16).unwrap_or(0),
    })
}

fn auxv(desc: &[u8]) -> Vec<(u64, u64)> {
    desc.chunks_exact(16)
        .filter_map(|pair| Some((u64_at(pair, 0)?, u64_at(pair, 8)?)))
        .take_while(|(key, _)| *key != 0)
        .collect()
}

fn files(desc: &[u8], warnings: &mut Vec<String>) -> Vec<FileMapping> {
    let (Some(count), Some(page_size)) = (u64_at(desc, 0), u64_at(desc, 8)) else {
        warnings.push("mapped-files note cut short".to_string());
        return Vec::new();
    };
    if count > MAX_FILES {
        warnings.push(format!(
            "mapped-files note claims {count} entries: ignored as corrupt"
        ));
        return Vec::new();
    }
    let count = to_usize(count);
    let names_at = count.checked_mul(24).and_then(|n| n.checked_add(16));
    let mut names = names_at
        .and_then(|at| desc.get(at..))
        .unwrap_or_default()
        .split(|&b| b == 0);
    let mut out = Vec::with_capacity(count.min(4096));
    for index in 0..count {
        let at = index.saturating_mul(24).saturating_add(16);
        let (Some(start), Some(end), Some(pgoff)) = (
            u64_at(desc, at),
            u64_at(desc, at.saturating_add(8)),
            u64_at(desc, at.saturating_add(16)),
        ) else {
            warnings.push(format!(
                "mapped-files note cut short after {index} of {count} entries"
            ));
            break;
        };
        let path = names
            .next()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        out.push(FileMapping {
            start,
            end,
            file_offset: pgoff.saturating_mul(page_size),
            path,
        });
    }
    out
}
