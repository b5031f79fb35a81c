//! The outer ELF container of a GPU core: identity check, section headers
//! (with extended numbering) and an index of the `.cudbg.*` tables by
//! (type, parent section, parent row).

use crate::warnings::Warnings;
use crate::GpuCoreError;

/// `sh_type` base of every CUDA debugger section.
pub(crate) const CUDBG_BASE: u32 = 0x8000_0000;

const SHT_STRTAB: u32 = 3;
const EHDR_LEN: usize = 64;
const SHDR_LEN: usize = 64;
const SHN_XINDEX: u16 = 0xffff;

/// One section header, as read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Section {
    pub name: u32,
    pub sh_type: u32,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub entsize: u64,
}

/// The parsed container.
pub(crate) struct CoreFile<'a> {
    data: &'a [u8],
    pub sections: Vec<Section>,
    shstrndx: Option<usize>,
    strtab: &'a [u8],
    /// (type, link, info, section index), sorted.
    index: Vec<(u32, u32, u32, u32)>,
}

pub(crate) fn le_u16(b: &[u8], off: usize) -> u16 {
    let mut v = [0u8; 2];
    if let Some(s) = b.get(off..) {
        for (d, s) in v.iter_mut().zip(s.iter()) {
            *d = *s;
        }
    }
    u16::from_le_bytes(v)
}

pub(crate) fn le_u32(b: &[u8], off: usize) -> u32 {
    let mut v = [0u8; 4];
    if let Some(s) = b.get(off..) {
        for (d, s) in v.iter_mut().zip(s.iter()) {
            *d = *s;
        }
    }
    u32::from_le_bytes(v)
}

pub(crate) fn le_u64(b: &[u8], off: usize) -> u64 {
    let mut v = [0u8; 8];
    if let Some(s) = b.get(off..) {
        for (d, s) in v.iter_mut().zip(s.iter()) {
            *d = *s;
        }
    }
    u64::from_le_bytes(v)
}

fn check_identity(data: &[u8]) -> Result<(), GpuCoreError> {
    let not = |why: &str| Err(GpuCoreError::NotCudaCore(why.to_string()));
    if data.len() < 4 || data.get(..4) != Some(b"\x7fELF".as_slice()) {
        if data.get(..2) == Some([0x1f, 0x8b].as_slice()) {
            return not("gzip-compressed; decompress it first");
        }
        return not("not an ELF file");
    }
    if data.len() < EHDR_LEN {
        return not("ELF header truncated");
    }
    if data.get(4) != Some(&2) {
        return not("not ELF64");
    }
    if data.get(5) != Some(&1) {
        return not("not little-endian");
    }
    if data.get(7) != Some(&0x33) {
        return not("ELF OS/ABI is not CUDA (0x33)");
    }
    if le_u16(data, 16) != 4 {
        return not("ELF type is not ET_CORE");
    }
    if le_u16(data, 18) != 0xbe {
        return not("ELF machine is not EM_CUDA (0xBE)");
    }
    Ok(())
}

fn read_shdr(data: &[u8], at: usize) -> Option<Section> {
    let b = data.get(at..at.checked_add(SHDR_LEN)?)?;
    Some(Section {
        name: le_u32(b, 0),
        sh_type: le_u32(b, 4),
        offset: le_u64(b, 24),
        size: le_u64(b, 32),
        link: le_u32(b, 40),
        info: le_u32(b, 44),
        entsize: le_u64(b, 56),
    })
}

impl<'a> CoreFile<'a> {
    pub(crate) fn parse(data: &'a [u8], warnings: &mut Warnings) -> Result<Self, GpuCoreError> {
        check_identity(data)?;
        let mut file = CoreFile {
            data,
            sections: Vec::new(),
            shstrndx: None,
            strtab: &[],
            index: Vec::new(),
        };
        let shoff = le_u64(data, 0x28);
        let shentsize = usize::from(le_u16(data, 0x3a));
        let e_shnum = le_u16(data, 0x3c);
        let e_shstrndx = le_u16(data, 0x3e);
        if shoff == 0 {
            warnings.push("the dump has no section header table".to_string());
            return Ok(file);
        }
        if shentsize < SHDR_LEN {
            warnings.push(format!("section header size {shentsize} is too small"));
            return Ok(file);
        }
        let Some(start) = usize::try_from(shoff).ok().filter(|s| *s < data.len()) else {
            warnings.push(format!(
                "dump truncated: section header table at offset {shoff} lies past the end ({} bytes)",
                data.len()
            ));
            return Ok(file);
        };
        let present = (data.len() - start) / shentsize;
        let first = read_shdr(data, start);
        let declared: u64 = if e_shnum == 0 {
            first.map_or(0, |s| s.size)
        } else {
            u64::from(e_shnum)
        };
        let count = match usize::try_from(declared) {
            Ok(n) if n <= present => n,
            _ => {
                warnings.push(format!(
                    "dump truncated: {declared} section headers declared, {present} present"
                ));
                present
            }
        };
        file.sections.reserve(count);
        for i in 0..count {
            let Some(at) = i.checked_mul(shentsize).and_then(|o| o.checked_add(start)) else {
                break;
            };
            match read_shdr(data, at) {
                Some(s) => file.sections.push(s),
                None => break,
            }
        }
        let shstrndx = if e_shstrndx == SHN_XINDEX {
            first.map(|s| s.link as usize)
        } else {
            Some(usize::from(e_shstrndx))
        };
        file.shstrndx = shstrndx.filter(|i| *i != 0 && *i < file.sections.len());

        // The string table the records point into is `.strtab`, kept apart
        // from the section-name table.
        let mut strtab = None;
        for (i, s) in file.sections.iter().enumerate() {
            if s.sh_type != SHT_STRTAB || Some(i) == file.shstrndx {
                continue;
            }
            if strtab.is_none() || file.name(s) == ".strtab" {
                strtab = Some(*s);
            }
        }
        match strtab {
            Some(s) => file.strtab = file.data_of(&s, warnings),
            None if !file.sections.is_empty() => {
                warnings.push("the dump has no string table; names are missing".to_string());
            }
            None => {}
        }

        file.index = file
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.sh_type >= CUDBG_BASE)
            .filter_map(|(i, s)| Some((s.sh_type, s.link, s.info, u32::try_from(i).ok()?)))
            .collect();
        file.index.sort_unstable();
        Ok(file)
    }

    /// The bytes of a section, clipped to the file; warns when clipped.
    pub(crate) fn data_of(&self, s: &Section, warnings: &mut Warnings) -> &'a [u8] {
        let len = self.data.len() as u64;
        if s.offset >= len {
            if s.size > 0 {
                warnings.push_kind(
                    "truncated",
                    format!("dump truncated: section {} lies past the end", self.name(s)),
                );
            }
            return &[];
        }
        let end = s.offset.saturating_add(s.size);
        let clipped = end.min(len);
        if end > len {
            warnings.push_kind(
                "truncated",
                format!(
                    "dump truncated: section {} has {} of {} bytes",
                    self.name(s),
                    clipped - s.offset,
                    s.size
                ),
            );
        }
        // Both bounds are at most `len`, which came from a usize.
        let (Ok(a), Ok(b)) = (usize::try_from(s.offset), usize::try_from(clipped)) else {
            return &[];
        };
        self.data.get(a..b).unwrap_or(&[])
    }

    /// Section name from the section-name table, or `""`.
    pub(crate) fn name(&self, s: &Section) -> &'a str {
        let Some(tab) = self.shstrndx.and_then(|i| self.sections.get(i)) else {
            return "";
        };
        let len = self.data.len() as u64;
        let start = tab.offset.min(len);
        let end = tab.offset.saturating_add(tab.size).min(len);
        let (Ok(a), Ok(b)) = (usize::try_from(start), usize::try_from(end)) else {
            return "";
        };
        let table = self.data.get(a..b).unwrap_or(&[]);
        cstr(table, u64::from(s.name))
    }

    /// String at `off` in the core's string table, or `""`.
    pub(crate) fn string(&self, off: u64) -> &'a str {
        cstr(self.strtab, off)
    }

    /// Sections of `kind` whose parent is section `link`, row `info`.
    pub(crate) fn children(
        &self,
        kind: u32,
        link: u32,
        info: u32,
    ) -> impl Iterator<Item = u32> + '_ {
        let key = (CUDBG_BASE.wrapping_add(kind), link, info);
        let from = self.index.partition_point(|e| (e.0, e.1, e.2) < key);
        self.index
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .take_while(move |e| (e.0, e.1, e.2) == key)
            .map(|e| e.3)
    }

    /// The first section of `kind` under (link, info).
    pub(crate) fn child(&self, kind: u32, link: u32, info: u32) -> Option<u32> {
        self.children(kind, link, info).next()
    }

    /// Every section of `kind`, in file order.
    pub(crate) fn all_of(&self, kind: u32) -> impl Iterator<Item = u32> + '_ {
        let t = CUDBG_BASE.wrapping_add(kind);
        let from = self.index.partition_point(|e| e.0 < t);
        let mut v: Vec<u32> = self
            .index
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .take_while(move |e| e.0 == t)
            .map(|e| e.3)
            .collect();
        v.sort_unstable();
        v.into_iter()
    }

    pub(crate) fn section(&self, i: u32) -> Option<&Section> {
        self.sections.get(i as usize)
    }
}

/// NUL-terminated UTF-8 string at `off`; `""` when out of range or invalid.
pub(crate) fn cstr(table: &[u8], off: u64) -> &str {
    let Some(rest) = usize::try_from(off).ok().and_then(|o| table.get(o..)) else {
        return "";
    };
    let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
    std::str::from_utf8(rest.get(..end).unwrap_or(&[])).unwrap_or("")
}
