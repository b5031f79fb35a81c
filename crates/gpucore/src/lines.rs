//! Source lines from a cubin's `.debug_line`, with NVIDIA's inlining
//! records.
//!
//! `nvcc -lineinfo` writes a DWARF line program without `.debug_info`.
//! Inlining is carried by a vendor extended opcode (0x90) holding two
//! ULEB128 values: the call site, as the 1-based number of an earlier row
//! of the same line program (0 when the code is not inlined), and the
//! offset of the inlined function's (mangled) name in `.debug_str`. Every
//! row carries the values last set. A call-site row may itself be inlined,
//! which gives the whole chain.

use gimli::{DebugLine, DebugLineOffset, LineInstruction, LittleEndian, Reader as _};

/// The vendor opcode that sets the inlining context.
const DW_LNE_NV_INLINED: u8 = 0x90;
/// Bound on the inlining chain followed for one address.
const MAX_INLINE_DEPTH: usize = 32;
/// Bound on the line programs read from one section.
const MAX_UNITS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Row {
    address: u64,
    file: u64,
    line: u64,
    /// 1-based row number of the call site; 0 when not inlined.
    call_site: u64,
    /// `.debug_str` offset of the inlined function's name.
    function: u64,
    end_sequence: bool,
}

#[derive(Debug)]
struct Unit {
    files: Vec<String>,
    rows: Vec<Row>,
}

/// The line programs of one cubin.
#[derive(Debug, Default)]
pub(crate) struct LineTable {
    units: Vec<Unit>,
}

/// One step of the chain at an address, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    pub file: String,
    pub line: u32,
    /// Mangled name of the inlined function this position is in; `None`
    /// for the outermost step (the function holding the address).
    pub inlined_function: Option<String>,
}

impl LineTable {
    /// Reads every line program in the section; stops quietly at damage.
    pub(crate) fn parse(section: &[u8]) -> Self {
        let debug_line = DebugLine::new(section, LittleEndian);
        let mut units = Vec::new();
        let mut offset = 0usize;
        while offset < section.len() && units.len() < MAX_UNITS {
            let Ok(program) = debug_line.program(DebugLineOffset(offset), 8, None, None) else {
                break;
            };
            let header = program.header();
            let length = header.unit_length();
            let step = if header.format() == gimli::Format::Dwarf64 {
                12
            } else {
                4
            };
            let Some(next) = length.checked_add(step).and_then(|l| offset.checked_add(l)) else {
                break;
            };
            units.push(read_unit(header));
            if next <= offset {
                break;
            }
            offset = next;
        }
        LineTable { units }
    }

    /// The positions at `pc`, innermost (inlined) first.
    pub(crate) fn locate(&self, pc: u64, debug_str: &[u8]) -> Vec<Location> {
        for unit in &self.units {
            let Some(i) = unit.row_for(pc) else { continue };
            let mut out = Vec::new();
            let mut current = i;
            for _ in 0..MAX_INLINE_DEPTH {
                let Some(row) = unit.rows.get(current) else {
                    break;
                };
                let file = unit
                    .files
                    .get(usize::try_from(row.file).unwrap_or(usize::MAX))
                    .cloned()
                    .unwrap_or_default();
                let inlined = row.call_site != 0;
                out.push(Location {
                    file,
                    line: u32::try_from(row.line).unwrap_or(u32::MAX),
                    inlined_function: inlined
                        .then(|| crate::elf::cstr(debug_str, row.function).to_string()),
                });
                if !inlined {
                    break;
                }
                // 1-based, and must point at an earlier row.
                match usize::try_from(row.call_site - 1) {
                    Ok(next) if next < current => current = next,
                    _ => break,
                }
            }
            return out;
        }
        Vec::new()
    }
}

impl Unit {
    /// Index of the row covering `pc`: the last row at the highest address
    /// not above `pc`, inside one sequence.
    fn row_for(&self, pc: u64) -> Option<usize> {
        let mut found = None;
        for (i, pair) in self.rows.windows(2).enumerate() {
            let (Some(a), Some(b)) = (pair.first(), pair.get(1)) else {
                continue;
            };
            if a.end_sequence {
                continue;
            }
            if a.address <= pc && pc < b.address {
                found = Some(i);
            }
        }
        found
    }
}

fn read_unit(header: &gimli::LineProgramHeader<gimli::EndianSlice<'_, LittleEndian>>) -> Unit {
    let mut files = Vec::new();
    // Index 0 is a placeholder in DWARF 2-4, where file numbers start at 1.
    if header.version() < 5 {
        files.push(String::new());
    }
    for f in header.file_names() {
        files.push(file_path(header, f));
    }
    let min_len = u64::from(header.minimum_instruction_length());
    let line_base = i64::from(header.line_base());
    let line_range = u64::from(header.line_range());
    let opcode_base = u64::from(header.opcode_base());
    let initial_file = 1u64;
    let mut rows = Vec::new();
    let mut state = Row {
        address: 0,
        file: initial_file,
        line: 1,
        call_site: 0,
        function: 0,
        end_sequence: false,
    };
    let reset = |s: &mut Row| {
        *s = Row {
            address: 0,
            file: initial_file,
            line: 1,
            call_site: 0,
            function: 0,
            end_sequence: false,
        };
    };
    let add_line = |line: u64, delta: i64| -> u64 { line.saturating_add_signed(delta) };
    let mut instructions = header.instructions();
    while let Ok(Some(instruction)) = instructions.next_instruction(header) {
        match instruction {
            LineInstruction::Special(op) => {
                if line_range == 0 {
                    break;
                }
                let adjusted = u64::from(op).saturating_sub(opcode_base);
                let advance = (adjusted / line_range).saturating_mul(min_len);
                state.address = state.address.wrapping_add(advance);
                let delta =
                    line_base.saturating_add(i64::try_from(adjusted % line_range).unwrap_or(0));
                state.line = add_line(state.line, delta);
                rows.push(state);
            }
            LineInstruction::Copy => rows.push(state),
            LineInstruction::AdvancePc(n) => {
                state.address = state.address.wrapping_add(n.saturating_mul(min_len));
            }
            LineInstruction::AdvanceLine(n) => state.line = add_line(state.line, n),
            LineInstruction::SetFile(f) => state.file = f,
            LineInstruction::ConstAddPc => {
                if line_range == 0 {
                    break;
                }
                let adjusted = 255u64.saturating_sub(opcode_base);
                state.address = state
                    .address
                    .wrapping_add((adjusted / line_range).saturating_mul(min_len));
            }
            LineInstruction::FixedAddPc(n) => {
                state.address = state.address.wrapping_add(u64::from(n));
            }
            LineInstruction::EndSequence => {
                state.end_sequence = true;
                rows.push(state);
                reset(&mut state);
            }
            LineInstruction::SetAddress(a) => state.address = a,
            LineInstruction::UnknownExtended(op, mut operands) if op.0 == DW_LNE_NV_INLINED => {
                state.call_site = operands.read_uleb128().unwrap_or(0);
                state.function = operands.read_uleb128().unwrap_or(0);
            }
            _ => {}
        }
    }
    Unit { files, rows }
}

fn file_path(
    header: &gimli::LineProgramHeader<gimli::EndianSlice<'_, LittleEndian>>,
    file: &gimli::FileEntry<gimli::EndianSlice<'_, LittleEndian>>,
) -> String {
    let text = |v: gimli::AttributeValue<gimli::EndianSlice<'_, LittleEndian>>| match v {
        gimli::AttributeValue::String(s) => String::from_utf8_lossy(s.slice()).into_owned(),
        _ => String::new(),
    };
    let name = text(file.path_name());
    if name.starts_with('/') {
        return name;
    }
    let dir = file.directory(header).map(text).unwrap_or_default();
    if dir.is_empty() {
        name
    } else {
        format!("{}/{name}", dir.trim_end_matches('/'))
    }
}
