//! The ELF container of a core: header, program headers and the notes in
//! `PT_NOTE` segments, read defensively (a core cut short still yields what
//! it holds).

use crate::bytes::{slice, to_usize, u16_at, u32_at, u64_at};

pub const ET_CORE: u16 = 4;
pub const EM_X86_64: u16 = 62;
pub const EM_AARCH64: u16 = 183;
pub const PT_LOAD: u32 = 1;
pub const PT_NOTE: u32 = 4;
pub const PF_X: u32 = 1;

/// Notes larger than this are treated as corrupt.
const MAX_NOTE_BYTES: u64 = 256 << 20;
/// More program headers than this are treated as corrupt.
const MAX_PHDRS: usize = 1 << 20;

/// Why the bytes are not a core we can read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCore {
    NotElf,
    NotCore(u16),
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ProgramHeader {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct Note<'a> {
    pub name: &'a [u8],
    pub n_type: u32,
    pub desc: &'a [u8],
}

#[derive(Debug, Default)]
pub struct CoreFile<'a> {
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
    pub phdrs: Vec<ProgramHeader>,
    pub notes: Vec<Note<'a>>,
}

/// Parses the ELF header and program headers of a core. Problems past the
/// identification go to `warnings`.
pub fn parse_core<'a>(data: &'a [u8], warnings: &mut Vec<String>) -> Result<CoreFile<'a>, NotCore> {
    if data.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(NotCore::NotElf);
    }
    let class = data.get(4).copied().unwrap_or(0);
    let encoding = data.get(5).copied().unwrap_or(0);
    let e_type = u16_at(data, 16).ok_or(NotCore::NotElf)?;
    let mut core = CoreFile {
        is_64: class == 2,
        little_endian: encoding == 1,
        ..CoreFile::default()
    };
    if !core.little_endian {
        // A big-endian type field reads swapped; check both ways.
        if e_type.swap_bytes() != ET_CORE {
            return Err(NotCore::NotCore(e_type.swap_bytes()));
        }
        warnings.push("big-endian core: only little-endian cores are decoded".to_string());
        return Ok(core);
    }
    if e_type != ET_CORE {
        return Err(NotCore::NotCore(e_type));
    }
    core.machine = u16_at(data, 18).unwrap_or(0);
    if !core.is_64 {
        warnings.push("32-bit core: only 64-bit cores are decoded".to_string());
        return Ok(core);
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) =
        (u64_at(data, 32), u16_at(data, 54), u16_at(data, 56))
    else {
        warnings.push("core truncated inside the ELF header".to_string());
        return Ok(core);
    };
    let mut phnum = usize::from(phnum);
    if phnum == 0xffff {
        // PN_XNUM: the real count is in section header 0's sh_info.
        let shoff = u64_at(data, 40).map(to_usize).unwrap_or(0);
        phnum = shoff
            .checked_add(44)
            .and_then(|at| u32_at(data, at))
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .unwrap_or(0);
    }
    if phnum > MAX_PHDRS {
        warnings.push(format!(
            "{phnum} program headers: treated as corrupt, reading the first {MAX_PHDRS}"
        ));
        phnum = MAX_PHDRS;
    }
    let entsize = usize::from(phentsize);
    if entsize < 56 {
        warnings.push(format!("program header size {entsize} is too small"));
        return Ok(core);
    }
    let phoff = to_usize(phoff);
    for index in 0..phnum {
        let at = index
            .checked_mul(entsize)
            .and_then(|o| o.checked_add(phoff));
        let Some(raw) = at.and_then(|at| slice(data, at, 56)) else {
            warnings.push(format!(
                "core truncated in the program headers: read {index} of {phnum}"
            ));
            break;
        };
        core.phdrs.push(ProgramHeader {
            p_type: u32_at(raw, 0).unwrap_or(0),
            flags: u32_at(raw, 4).unwrap_or(0),
            offset: u64_at(raw, 8).unwrap_or(0),
            vaddr: u64_at(raw, 16).unwrap_or(0),
            filesz: u64_at(raw, 32).unwrap_or(0),
            memsz: u64_at(raw, 40).unwrap_or(0),
        });
    }
    for ph in core.phdrs.iter().filter(|ph| ph.p_type == PT_NOTE) {
        let start = to_usize(ph.offset);
        let wanted = to_usize(ph.filesz);
        let available = data.len().saturating_sub(start).min(wanted);
        if available < wanted {
            warnings.push(format!(
                "core truncated in the notes: {available} of {wanted} bytes present"
            ));
        }
        let Some(segment) = slice(data, start, available) else {
            continue;
        };
        read_notes(segment, &mut core.notes, warnings);
    }
    Ok(core)
}

fn align4(n: usize) -> Option<usize> {
    n.checked_add(3).map(|n| n & !3)
}

/// Splits a note segment into notes; stops at the first note that does
/// not fit, with a warning.
pub fn read_notes<'a>(segment: &'a [u8], notes: &mut Vec<Note<'a>>, warnings: &mut Vec<String>) {
    let mut at = 0usize;
    while at < segment.len() {
        let (Some(namesz), Some(descsz), Some(n_type)) = (
            u32_at(segment, at),
            u32_at(segment, at.saturating_add(4)),
            u32_at(segment, at.saturating_add(8)),
        ) else {
            warnings.push("note header cut short".to_string());
            return;
        };
        if u64::from(descsz) > MAX_NOTE_BYTES || u64::from(namesz) > MAX_NOTE_BYTES {
            warnings.push(format!(
                "note of type {n_type:#x} claims {descsz} bytes: treated as corrupt, later notes skipped"
            ));
            return;
        }
        let name_at = at.saturating_add(12);
        let namesz = to_usize(u64::from(namesz));
        let descsz = to_usize(u64::from(descsz));
        let desc_at = align4(namesz).and_then(|n| n.checked_add(name_at));
        let next = desc_at.and_then(|d| d.checked_add(descsz)).and_then(align4);
        let (Some(desc_at), Some(next)) = (desc_at, next) else {
            return;
        };
        let (Some(name), Some(desc)) = (
            slice(segment, name_at, namesz),
            slice(segment, desc_at, descsz),
        ) else {
            warnings.push(format!(
                "note of type {n_type:#x} ({descsz} bytes) runs past the end of its segment"
            ));
            return;
        };
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        notes.push(Note { name, n_type, desc });
        at = next;
    }
}
