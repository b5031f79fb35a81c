//! The process's memory as the core holds it: `PT_LOAD` segments, of which
//! only the first `p_filesz` bytes are present (the rest was not dumped).

use crate::bytes::{to_usize, u64_at};
use crate::elf::{ProgramHeader, PF_X, PT_LOAD};

#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    /// One past the last mapped address (`p_vaddr + p_memsz`).
    end: u64,
    /// Bytes of this segment present in the core.
    present: usize,
    offset: usize,
    executable: bool,
}

/// Reads process memory out of a core.
#[derive(Debug, Default)]
pub struct Memory<'a> {
    data: &'a [u8],
    segments: Vec<Segment>,
}

impl<'a> Memory<'a> {
    /// Builds the reader; `truncated` is set when some segment's dumped
    /// bytes run past the end of `data`.
    pub fn new(data: &'a [u8], phdrs: &[ProgramHeader], truncated: &mut bool) -> Memory<'a> {
        let mut segments: Vec<Segment> = phdrs
            .iter()
            .filter(|ph| ph.p_type == PT_LOAD && ph.memsz > 0)
            .map(|ph| {
                let offset = to_usize(ph.offset);
                let in_file = data.len().saturating_sub(offset);
                let wanted = to_usize(ph.filesz.min(ph.memsz));
                if in_file < wanted {
                    *truncated = true;
                }
                Segment {
                    start: ph.vaddr,
                    end: ph.vaddr.saturating_add(ph.memsz),
                    present: wanted.min(in_file),
                    offset,
                    executable: ph.flags & PF_X != 0,
                }
            })
            .collect();
        segments.sort_by_key(|s| s.start);
        Memory { data, segments }
    }

    fn segment(&self, addr: u64) -> Option<&Segment> {
        let index = self
            .segments
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        self.segments.get(index).filter(|s| addr < s.end)
    }

    /// `len` bytes at `addr`, when all are present in one segment.
    pub fn read(&self, addr: u64, len: usize) -> Option<&'a [u8]> {
        let seg = self.segment(addr)?;
        let rel = to_usize(addr.checked_sub(seg.start)?);
        let end = rel.checked_add(len)?;
        if end > seg.present {
            return None;
        }
        let from = seg.offset.checked_add(rel)?;
        self.data.get(from..from.checked_add(len)?)
    }

    /// The bytes present from `addr` to the end of its segment's dumped part.
    pub fn read_rest(&self, addr: u64) -> Option<&'a [u8]> {
        let seg = self.segment(addr)?;
        let rel = to_usize(addr.checked_sub(seg.start)?);
        let len = seg.present.checked_sub(rel)?;
        self.read(addr, len)
    }

    pub fn u64(&self, addr: u64) -> Option<u64> {
        self.read(addr, 8).and_then(|b| u64_at(b, 0))
    }

    /// Whether `addr` is in a mapping the core marks executable.
    pub fn is_executable(&self, addr: u64) -> bool {
        self.segment(addr).is_some_and(|s| s.executable)
    }

    /// A NUL-terminated string at `addr`, at most `max` bytes.
    pub fn c_string(&self, addr: u64, max: usize) -> Option<String> {
        let rest = self.read_rest(addr)?;
        let window = rest.get(..max.min(rest.len()))?;
        let end = window.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(window.get(..end)?).into_owned())
    }
}
