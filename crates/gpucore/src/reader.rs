//! Dump-wide facts: metadata, devices, contexts, kernels, and the cubin
//! holding each module.

use std::collections::HashMap;

use coroner_model::{GpuCore, GpuDevice, GpuKernel};

use crate::elf::CoreFile;
use crate::kernels::{demangle, Cubin, Function};
use crate::records::{
    child_table, Context, Device, Grid, Meta, Table, CONTEXT, DEVICE, ELF_IMAGE, GLOBAL_MEMORY,
    GRID, LOCAL_MEMORY, META, MODULE, RELOCATED_ELF_IMAGE, SHARED_MEMORY,
};
use crate::warnings::Warnings;

/// Generation flags in the metadata: global, shared and local memory skipped.
const SKIP_MEMORY_FLAGS: u32 = 0b1110;

/// A grid row with what was resolved for it.
pub(crate) struct KernelInfo {
    pub device: u32,
    pub grid: Grid,
    /// Relocated-cubin section of its module.
    pub cubin: Option<u32>,
    pub function: Option<Function>,
}

pub(crate) struct Reader<'a> {
    pub core: CoreFile<'a>,
    pub warnings: Warnings,
    pub devtbl: Option<Table<'a>>,
    pub kernels: Vec<KernelInfo>,
    cubins: HashMap<u32, Option<Cubin>>,
    /// Relocated-cubin section → module label (`<section>#<row>`).
    pub module_labels: HashMap<u32, String>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(core: CoreFile<'a>, warnings: Warnings) -> Self {
        Reader {
            core,
            warnings,
            devtbl: None,
            kernels: Vec::new(),
            cubins: HashMap::new(),
            module_labels: HashMap::new(),
        }
    }

    pub(crate) fn read(mut self) -> GpuCore {
        let mut out = GpuCore::default();
        let meta = self.meta();
        if let Some(m) = &meta {
            out.driver = Some(format!(
                "{}.{}, CUDA {}.{}",
                m.driver_major, m.driver_minor, m.cuda_major, m.cuda_minor
            ));
        }
        out.flavour = self.flavour(meta.as_ref()).to_string();

        let devtbl = self.core.all_of(DEVICE.n).next();
        self.devtbl = devtbl.and_then(|i| Table::open(&self.core, i, DEVICE, &mut self.warnings));
        let Some(devtbl) = self.devtbl else {
            if !self.core.sections.is_empty() {
                self.warnings
                    .push("the dump has no device table".to_string());
            }
            out.warnings = self.warnings.finish();
            return out;
        };
        if devtbl.is_empty() {
            self.warnings.push("the device table is empty".to_string());
        }
        for (row, rec) in devtbl.rows() {
            let d = Device::read(rec);
            out.devices.push(GpuDevice {
                index: row,
                name: self.core.string(d.name).to_string(),
                sm_type: self.core.string(d.sm_type).to_string(),
                pci_bus_id: d.pci_bus_id,
                pci_device_id: d.pci_device_id,
                sms: d.sms,
            });
            self.contexts(devtbl.section, row, &mut out.host_tids);
            self.grids(devtbl.section, row);
        }
        out.kernels = self
            .kernels
            .iter()
            .map(|k| GpuKernel {
                device: k.device,
                grid_id: k.grid.id,
                name: k.function.as_ref().map(|f| demangle(&f.symbol)),
                symbol: k.function.as_ref().map(|f| f.symbol.clone()),
                grid_dim: k.grid.grid_dim,
                block_dim: k.grid.block_dim,
                cluster_dim: cluster(k.grid.cluster_dim),
                host_tid: (k.grid.host_tid != 0).then_some(k.grid.host_tid),
            })
            .collect();
        out.exceptions = self.exceptions(devtbl);
        out.warnings = self.warnings.finish();
        out
    }

    fn meta(&mut self) -> Option<Meta> {
        let index = self.core.all_of(META.n).next()?;
        let table = Table::open(&self.core, index, META, &mut self.warnings)?;
        let row = table.row(0);
        if row.is_none() {
            self.warnings
                .push("the metadata section is empty".to_string());
        }
        row.map(Meta::read)
    }

    fn flavour(&mut self, meta: Option<&Meta>) -> &'static str {
        let has = |kind: u32| self.core.all_of(kind).next().is_some();
        if has(SHARED_MEMORY) || has(LOCAL_MEMORY) || has(ELF_IMAGE) {
            return "full";
        }
        match meta {
            Some(m) if m.flags & SKIP_MEMORY_FLAGS == SKIP_MEMORY_FLAGS => "lightweight",
            Some(_) => "full",
            None if has(GLOBAL_MEMORY) => "full",
            None => "lightweight",
        }
    }

    fn contexts(&mut self, devtbl: u32, device: u32, tids: &mut Vec<u32>) {
        let Some(table) = child_table(&self.core, CONTEXT, devtbl, device, &mut self.warnings)
        else {
            self.warnings.push(format!(
                "device {device}: no context table; host thread ids unknown"
            ));
            return;
        };
        if table.is_empty() {
            self.warnings
                .push(format!("device {device}: the context table is empty"));
        }
        for (_, rec) in table.rows() {
            let c = Context::read(rec);
            if c.tid != 0 && !tids.contains(&c.tid) {
                tids.push(c.tid);
            }
        }
    }

    fn grids(&mut self, devtbl: u32, device: u32) {
        let Some(table) = child_table(&self.core, GRID, devtbl, device, &mut self.warnings) else {
            self.warnings.push(format!(
                "device {device}: no grid table; kernel launches unknown"
            ));
            return;
        };
        if table.is_empty() {
            self.warnings.push(format!(
                "device {device}: the grid table is empty; kernel names come from code addresses"
            ));
        }
        for (_, rec) in table.rows() {
            let grid = Grid::read(rec);
            let cubin = self.module_cubin(devtbl, device, grid.context, grid.module);
            let function = match cubin {
                Some(section) => {
                    let entry = grid.function_entry;
                    match self.cubin(section) {
                        Some(c) => c
                            .function_at(entry)
                            .or_else(|| c.function_containing(entry))
                            .cloned(),
                        None => None,
                    }
                }
                None => None,
            };
            if function.is_none() && cubin.is_some() {
                self.warnings.push(format!(
                    "device {device}, grid {}: no symbol at the kernel entry {:#x}",
                    grid.id, grid.function_entry
                ));
            }
            self.kernels.push(KernelInfo {
                device,
                grid,
                cubin,
                function,
            });
        }
    }

    /// The relocated cubin of module `handle`, searched in the device's
    /// contexts (the grid's own context first).
    fn module_cubin(&mut self, devtbl: u32, device: u32, context: u64, handle: u64) -> Option<u32> {
        let ctxtbl = child_table(&self.core, CONTEXT, devtbl, device, &mut self.warnings)?;
        let mut rows: Vec<(u32, bool)> = ctxtbl
            .rows()
            .map(|(i, r)| (i, Context::read(r).id == context))
            .collect();
        rows.sort_by_key(|(_, own)| !own);
        for (ctx_row, _) in rows {
            let Some(modtbl) = child_table(
                &self.core,
                MODULE,
                ctxtbl.section,
                ctx_row,
                &mut self.warnings,
            ) else {
                continue;
            };
            for (mod_row, rec) in modtbl.rows() {
                if rec.u64(0) != handle {
                    continue;
                }
                let found = self
                    .core
                    .child(RELOCATED_ELF_IMAGE, modtbl.section, mod_row);
                match found {
                    Some(section) => {
                        let label = self
                            .core
                            .section(section)
                            .map(|s| format!("{}#{mod_row}", self.core.name(s)))
                            .unwrap_or_default();
                        self.module_labels.insert(section, label);
                    }
                    None => self.warnings.push(format!(
                        "module {handle:#x} has no relocated cubin in the dump; kernel names and lines unavailable"
                    )),
                }
                return found;
            }
        }
        self.warnings.push(format!(
            "module {handle:#x} is not in the module tables; kernel names and lines unavailable"
        ));
        None
    }

    /// The parsed cubin in `section`, parsed once.
    pub(crate) fn cubin(&mut self, section: u32) -> Option<&Cubin> {
        if !self.cubins.contains_key(&section) {
            let parsed = match self.core.section(section).copied() {
                Some(s) => {
                    let data = self.core.data_of(&s, &mut self.warnings);
                    match Cubin::parse(data) {
                        Ok(c) => Some(c),
                        Err(e) => {
                            self.warnings.push_kind(
                                "cubin",
                                format!("cubin in {} unreadable: {e}", self.core.name(&s)),
                            );
                            None
                        }
                    }
                }
                None => None,
            };
            self.cubins.insert(section, parsed);
        }
        self.cubins.get(&section).and_then(Option::as_ref)
    }

    /// The cubin section and function holding `pc`: the kernel's own cubin
    /// first, then every relocated cubin in the dump.
    pub(crate) fn function_for(
        &mut self,
        preferred: Option<u32>,
        pc: u64,
    ) -> Option<(u32, Function)> {
        if let Some(section) = preferred {
            if let Some(f) = self.cubin(section).and_then(|c| c.function_containing(pc)) {
                return Some((section, f.clone()));
            }
        }
        let all: Vec<u32> = self.core.all_of(RELOCATED_ELF_IMAGE).collect();
        for section in all {
            if Some(section) == preferred {
                continue;
            }
            let found = self
                .cubin(section)
                .and_then(|c| c.function_containing(pc))
                .cloned();
            if let Some(f) = found {
                self.module_labels.entry(section).or_insert_with(|| {
                    self.core
                        .section(section)
                        .map(|s| self.core.name(s).to_string())
                        .unwrap_or_default()
                });
                return Some((section, f));
            }
        }
        None
    }
}

fn cluster(dim: [u32; 3]) -> Option<[u32; 3]> {
    if dim == [0, 0, 0] || dim == [1, 1, 1] {
        None
    } else {
        Some(dim)
    }
}
