//! The `.cudbg.*` record layouts, decoded field by field.
//!
//! Records only ever grow at the end between driver releases, so every
//! field has one fixed offset. A table's `sh_entsize` is the stride; a field
//! that lies beyond it (an older driver) reads as zero, and bytes beyond the
//! newest known layout (a newer driver) are skipped.

use crate::elf::{le_u32, le_u64, CoreFile, Section};
use crate::warnings::Warnings;

/// A table kind: its `sh_type` offset from the CUDA base, a name for
/// warnings, and the record sizes known from past driver releases.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    pub n: u32,
    pub name: &'static str,
    pub sizes: &'static [usize],
}

pub(crate) const DEVICE: Kind = Kind {
    n: 9,
    name: "device",
    sizes: &[72, 80, 88],
};
pub(crate) const CONTEXT: Kind = Kind {
    n: 10,
    name: "context",
    sizes: &[40],
};
pub(crate) const SM: Kind = Kind {
    n: 11,
    name: "SM",
    sizes: &[8, 24, 40, 48],
};
pub(crate) const GRID: Kind = Kind {
    n: 12,
    name: "grid",
    sizes: &[104, 120, 136],
};
pub(crate) const CTA: Kind = Kind {
    n: 13,
    name: "CTA",
    sizes: &[24, 40, 56],
};
pub(crate) const WARP: Kind = Kind {
    n: 14,
    name: "warp",
    sizes: &[32, 40, 48, 64, 80],
};
pub(crate) const LANE: Kind = Kind {
    n: 15,
    name: "lane",
    sizes: &[48, 56, 64],
};
pub(crate) const MODULE: Kind = Kind {
    n: 16,
    name: "module",
    sizes: &[8],
};
pub(crate) const BACKTRACE: Kind = Kind {
    n: 8,
    name: "backtrace",
    sizes: &[24],
};
pub(crate) const META: Kind = Kind {
    n: 22,
    name: "metadata",
    sizes: &[32],
};

/// Section kinds that hold no records.
pub(crate) const LOCAL_MEMORY: u32 = 3;
pub(crate) const SHARED_MEMORY: u32 = 4;
pub(crate) const GLOBAL_MEMORY: u32 = 2;
pub(crate) const ELF_IMAGE: u32 = 6;
pub(crate) const RELOCATED_ELF_IMAGE: u32 = 7;

/// Strides above this are not records but a damaged header.
const MAX_STRIDE: u64 = 1 << 16;

/// One record; reads past its end give zero.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec<'a>(&'a [u8]);

impl Rec<'_> {
    pub(crate) fn u32(&self, off: usize) -> u32 {
        if off.saturating_add(4) > self.0.len() {
            return 0;
        }
        le_u32(self.0, off)
    }

    pub(crate) fn u64(&self, off: usize) -> u64 {
        if off.saturating_add(8) > self.0.len() {
            return 0;
        }
        le_u64(self.0, off)
    }

    pub(crate) fn dim(&self, off: usize) -> [u32; 3] {
        [
            self.u32(off),
            self.u32(off.saturating_add(4)),
            self.u32(off.saturating_add(8)),
        ]
    }
}

/// A table of records backed by the bytes present in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table<'a> {
    /// Index of the section holding the table.
    pub section: u32,
    data: &'a [u8],
    stride: usize,
}

impl<'a> Table<'a> {
    /// Opens section `index` as a table of `kind`.
    pub(crate) fn open(
        core: &CoreFile<'a>,
        index: u32,
        kind: Kind,
        warnings: &mut Warnings,
    ) -> Option<Self> {
        let s: Section = *core.section(index)?;
        let data = core.data_of(&s, warnings);
        let newest = kind.sizes.last().copied().unwrap_or(0);
        let oldest = kind.sizes.first().copied().unwrap_or(0);
        let stride = if s.entsize == 0 {
            // Single-record sections (metadata) leave entsize at zero.
            if kind.sizes.len() == 1 && kind.n == META.n {
                data.len().max(1)
            } else {
                warnings.push(format!(
                    "{} table {} has no record size; assuming {newest} bytes",
                    kind.name,
                    core.name(&s)
                ));
                newest
            }
        } else if s.entsize > MAX_STRIDE {
            warnings.push(format!(
                "{} table {} claims {}-byte records; table skipped",
                kind.name,
                core.name(&s),
                s.entsize
            ));
            return None;
        } else {
            usize::try_from(s.entsize).ok()?
        };
        if stride > newest {
            warnings.push(
                format!(
                    "{} records are {stride} bytes, newer than the {newest} this reader knows; extra fields ignored",
                    kind.name
                ),
            );
        } else if stride < oldest {
            warnings.push(
                format!(
                    "{} records are {stride} bytes, shorter than any known layout ({oldest}); missing fields read as zero",
                    kind.name
                ),
            );
        }
        if stride == 0 {
            return None;
        }
        let rest = data.len() % stride;
        if rest != 0 {
            warnings.push_kind(
                "partial-record",
                format!(
                    "{} table {} ends with a partial record ({rest} bytes ignored)",
                    kind.name,
                    core.name(&s)
                ),
            );
        }
        Some(Table {
            section: index,
            data,
            stride,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.data.len() / self.stride
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn row(&self, i: usize) -> Option<Rec<'a>> {
        let start = i.checked_mul(self.stride)?;
        let end = start.checked_add(self.stride)?;
        self.data.get(start..end).map(Rec)
    }

    /// Rows with their index.
    pub(crate) fn rows(&self) -> impl Iterator<Item = (u32, Rec<'a>)> + '_ {
        self.data
            .chunks_exact(self.stride)
            .enumerate()
            .filter_map(|(i, r)| Some((u32::try_from(i).ok()?, Rec(r))))
    }
}

/// Opens the table of `kind` under (parent section, parent row), if any.
pub(crate) fn child_table<'a>(
    core: &CoreFile<'a>,
    kind: Kind,
    parent: u32,
    row: u32,
    warnings: &mut Warnings,
) -> Option<Table<'a>> {
    let index = core.child(kind.n, parent, row)?;
    Table::open(core, index, kind, warnings)
}

/// Device row.
pub(crate) struct Device {
    pub name: u64,
    pub sm_type: u64,
    pub pci_bus_id: u32,
    pub pci_device_id: u32,
    pub sms: u32,
}

impl Device {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Device {
            name: r.u64(0),
            sm_type: r.u64(16),
            pci_bus_id: r.u32(28),
            pci_device_id: r.u32(32),
            sms: r.u32(36),
        }
    }
}

/// Context row.
pub(crate) struct Context {
    pub id: u64,
    pub tid: u32,
}

impl Context {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Context {
            id: r.u64(0),
            tid: r.u32(36),
        }
    }
}

/// Grid (kernel launch) row.
pub(crate) struct Grid {
    pub id: u64,
    pub context: u64,
    pub function_entry: u64,
    pub module: u64,
    pub grid_dim: [u32; 3],
    pub block_dim: [u32; 3],
    pub host_tid: u32,
    pub cluster_dim: [u32; 3],
}

impl Grid {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Grid {
            id: r.u64(0),
            context: r.u64(8),
            function_entry: r.u64(24),
            module: r.u64(32),
            grid_dim: r.dim(72),
            block_dim: r.dim(84),
            host_tid: r.u32(100),
            cluster_dim: r.dim(104),
        }
    }
}

/// SM row.
pub(crate) struct Sm {
    pub id: u32,
    pub exception: u32,
    pub error_pc: Option<u64>,
    pub exception_string: u64,
}

impl Sm {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Sm {
            id: r.u32(0),
            exception: r.u32(8),
            error_pc: (r.u32(12) != 0).then(|| r.u64(16)),
            exception_string: r.u64(40),
        }
    }
}

/// CTA (block) row.
pub(crate) struct Cta {
    pub grid: u64,
    pub block: [u32; 3],
}

impl Cta {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Cta {
            grid: r.u64(0),
            block: r.dim(8),
        }
    }
}

/// Warp row.
pub(crate) struct Warp {
    pub id: u32,
    pub valid_lanes: u32,
    pub active_lanes: u32,
    pub error_pc: Option<u64>,
}

impl Warp {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Warp {
            id: r.u32(8),
            valid_lanes: r.u32(12),
            active_lanes: r.u32(16),
            error_pc: (r.u32(24) != 0).then(|| r.u64(0)),
        }
    }
}

/// Lane (thread) row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lane {
    pub virtual_pc: u64,
    pub phys_pc: u64,
    pub ln: u32,
    pub thread: [u32; 3],
    pub exception: u32,
}

impl Lane {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Lane {
            virtual_pc: r.u64(0),
            phys_pc: r.u64(8),
            ln: r.u32(16),
            thread: r.dim(20),
            exception: r.u32(32),
        }
    }
}

/// Backtrace row.
pub(crate) struct Backtrace {
    pub virtual_return_address: u64,
    pub level: u32,
}

impl Backtrace {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Backtrace {
            virtual_return_address: r.u64(8),
            level: r.u32(16),
        }
    }
}

/// Metadata row.
pub(crate) struct Meta {
    pub driver_major: u32,
    pub driver_minor: u32,
    pub cuda_major: u32,
    pub cuda_minor: u32,
    pub flags: u32,
}

impl Meta {
    pub(crate) fn read(r: Rec<'_>) -> Self {
        Meta {
            driver_major: r.u32(8),
            driver_minor: r.u32(12),
            cuda_major: r.u32(16),
            cuda_minor: r.u32(20),
            flags: r.u32(24),
        }
    }
}
