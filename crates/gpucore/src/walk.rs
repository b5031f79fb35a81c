//! The device → SM → CTA → warp → lane walk that finds exceptions, and
//! what is attached to each: kernel, source line, device call stack.

use coroner_model::{Frame, GpuException, SourceLine};

use crate::exceptions::{display_name, lane_ranges, precision_rank, scope};
use crate::kernels::demangle;
use crate::reader::Reader;
use crate::records::{
    child_table, Backtrace, Cta, Lane, Sm, Table, Warp, BACKTRACE, CTA, LANE, SM, WARP,
};

/// Bound on the device frames taken from one lane's backtrace table.
const MAX_FRAMES: usize = 256;

/// Where an entry came from, for choosing the one cuda-gdb focuses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A lane's own exception field.
    Lane,
    /// The SM's exception, attributed to a warp with a valid error PC.
    Warp,
    /// The SM's exception alone (its warps are gone).
    Sm,
}

/// Lanes of one warp sharing an exception and PC.
struct Group {
    code: u32,
    pc: u64,
    lanes: Vec<u32>,
    first: Lane,
    first_row: u32,
    last_thread: [u32; 3],
}

impl Group {
    fn add(groups: &mut Vec<Group>, code: u32, pc: u64, lane: Lane, row: u32) {
        if let Some(g) = groups.iter_mut().find(|g| g.code == code && g.pc == pc) {
            g.lanes.push(lane.ln);
            g.last_thread = lane.thread;
        } else {
            groups.push(Group {
                code,
                pc,
                lanes: vec![lane.ln],
                first: lane,
                first_row: row,
                last_thread: lane.thread,
            });
        }
    }
}

fn lane_valid(mask: u32, ln: u32) -> bool {
    ln >= 32 || mask & (1u32 << ln) != 0
}

impl Reader<'_> {
    pub(crate) fn exceptions(&mut self, devtbl: Table<'_>) -> Vec<GpuException> {
        let mut found: Vec<(Origin, GpuException)> = Vec::new();
        for (device, _) in devtbl.rows() {
            let Some(smtbl) =
                child_table(&self.core, SM, devtbl.section, device, &mut self.warnings)
            else {
                self.warnings.push(format!("device {device}: no SM table"));
                continue;
            };
            for (sm_row, rec) in smtbl.rows() {
                let sm = Sm::read(rec);
                let before = found.len();
                let mut first_grid = None;
                if let Some(ctatbl) =
                    child_table(&self.core, CTA, smtbl.section, sm_row, &mut self.warnings)
                {
                    for (cta_row, rec) in ctatbl.rows() {
                        let cta = Cta::read(rec);
                        first_grid.get_or_insert(cta.grid);
                        self.cta(device, &sm, &cta, ctatbl.section, cta_row, &mut found);
                    }
                }
                if found.len() == before && sm.exception != 0 {
                    let e = self.sm_entry(device, &sm, first_grid);
                    found.push((Origin::Sm, e));
                }
            }
        }
        order(found)
    }

    fn cta(
        &mut self,
        device: u32,
        sm: &Sm,
        cta: &Cta,
        ctatbl: u32,
        cta_row: u32,
        found: &mut Vec<(Origin, GpuException)>,
    ) {
        let Some(wptbl) = child_table(&self.core, WARP, ctatbl, cta_row, &mut self.warnings) else {
            return;
        };
        for (warp_row, rec) in wptbl.rows() {
            let warp = Warp::read(rec);
            let Some(lntbl) = child_table(
                &self.core,
                LANE,
                wptbl.section,
                warp_row,
                &mut self.warnings,
            ) else {
                continue;
            };
            let mut groups: Vec<Group> = Vec::new();
            for (row, rec) in lntbl.rows() {
                let lane = Lane::read(rec);
                if lane.exception == 0 || !lane_valid(warp.valid_lanes, lane.ln) {
                    continue;
                }
                let pc = warp
                    .error_pc
                    .or(sm.error_pc.filter(|_| sm.exception == lane.exception))
                    .unwrap_or(lane.virtual_pc);
                Group::add(&mut groups, lane.exception, pc, lane, row);
            }
            let mut origin = Origin::Lane;
            if groups.is_empty() && sm.exception != 0 {
                // No lane names it, but the warp holds the SM's error PC:
                // the SM's exception belongs to this warp's active lanes.
                if let Some(pc) = warp.error_pc {
                    origin = Origin::Warp;
                    for (row, rec) in lntbl.rows() {
                        let lane = Lane::read(rec);
                        if lane_valid(warp.valid_lanes & warp.active_lanes, lane.ln) && lane.ln < 32
                        {
                            Group::add(&mut groups, sm.exception, pc, lane, row);
                        }
                    }
                }
            }
            for g in groups {
                let e = self.lane_entry(device, sm, &warp, cta, &g, lntbl.section);
                found.push((origin, e));
            }
        }
    }

    fn lane_entry(
        &mut self,
        device: u32,
        sm: &Sm,
        warp: &Warp,
        cta: &Cta,
        g: &Group,
        lntbl: u32,
    ) -> GpuException {
        let kernel = self.kernel_index(device, cta.grid);
        let preferred = kernel
            .and_then(|k| self.kernels.get(k))
            .and_then(|k| k.cubin);
        let located = self.function_for(preferred, g.pc);
        let lane_start = g.first.virtual_pc.checked_sub(g.first.phys_pc);
        let function_offset = match &located {
            Some((_, f)) => g.pc.checked_sub(f.address),
            None => lane_start.and_then(|s| g.pc.checked_sub(s)),
        };
        let source = self.source(located.as_ref().map(|l| l.0), g.pc, false);
        let backtrace = self.backtrace(preferred, &g.first, lntbl, g.first_row);
        GpuException {
            code: g.code,
            name: display_name(g.code),
            scope: scope(g.code).to_string(),
            device,
            sm: sm.id,
            warp: Some(warp.id),
            lanes: Some(lane_ranges(&g.lanes)),
            pc: Some(g.pc),
            function_offset,
            grid_id: Some(cta.grid),
            kernel: self.kernel_name(kernel, located.as_ref().map(|l| &l.1)),
            block: Some(cta.block),
            threads: Some((g.first.thread, g.last_thread)),
            source,
            backtrace,
            description: self.description(sm),
        }
    }

    fn sm_entry(&mut self, device: u32, sm: &Sm, grid: Option<u64>) -> GpuException {
        let kernel = grid.and_then(|g| self.kernel_index(device, g));
        let preferred = kernel
            .and_then(|k| self.kernels.get(k))
            .and_then(|k| k.cubin);
        let located = sm.error_pc.and_then(|pc| self.function_for(preferred, pc));
        let source = match sm.error_pc {
            Some(pc) => self.source(located.as_ref().map(|l| l.0), pc, false),
            None => Vec::new(),
        };
        GpuException {
            code: sm.exception,
            name: display_name(sm.exception),
            scope: "sm".to_string(),
            device,
            sm: sm.id,
            pc: sm.error_pc,
            function_offset: located
                .as_ref()
                .and_then(|(_, f)| sm.error_pc?.checked_sub(f.address)),
            grid_id: grid,
            kernel: self.kernel_name(kernel, located.as_ref().map(|l| &l.1)),
            source,
            description: self.description(sm),
            ..GpuException::default()
        }
    }

    fn description(&self, sm: &Sm) -> Option<String> {
        if sm.exception_string == 0 {
            return None;
        }
        let s = self.core.string(sm.exception_string);
        (!s.is_empty()).then(|| s.to_string())
    }

    fn kernel_index(&mut self, device: u32, grid: u64) -> Option<usize> {
        let i = self
            .kernels
            .iter()
            .position(|k| k.device == device && k.grid.id == grid);
        if i.is_none() {
            self.warnings.push(format!(
                "device {device}: grid {grid} is not in the grid table; its kernel is named from the code address"
            ));
        }
        i
    }

    fn kernel_name(
        &self,
        kernel: Option<usize>,
        located: Option<&crate::kernels::Function>,
    ) -> Option<String> {
        kernel
            .and_then(|k| self.kernels.get(k))
            .and_then(|k| k.function.as_ref())
            .or(located)
            .map(|f| demangle(&f.symbol))
    }

    /// Source positions at `pc` in the cubin in `section`, innermost first.
    /// For a return address (`caller`), the call instruction is looked up.
    fn source(&mut self, section: Option<u32>, pc: u64, caller: bool) -> Vec<SourceLine> {
        let Some(section) = section else {
            return Vec::new();
        };
        let lookup = if caller { pc.saturating_sub(1) } else { pc };
        let Some(cubin) = self.cubin(section) else {
            return Vec::new();
        };
        let Some(lines) = &cubin.lines else {
            return Vec::new();
        };
        let outer = cubin
            .function_containing(lookup)
            .map(|f| demangle(&f.symbol));
        let chain = lines.locate(lookup, &cubin.debug_str);
        let count = chain.len();
        chain
            .into_iter()
            .enumerate()
            .map(|(i, loc)| SourceLine {
                file: loc.file,
                line: loc.line,
                function: match loc.inlined_function {
                    Some(name) if !name.is_empty() => Some(demangle(&name)),
                    Some(_) => None,
                    None if i.saturating_add(1) == count => outer.clone(),
                    None => None,
                },
            })
            .collect()
    }

    /// Device call stack of one lane: its PC, then the return addresses in
    /// its backtrace table; inlined calls get their own frames.
    fn backtrace(
        &mut self,
        preferred: Option<u32>,
        lane: &Lane,
        lntbl: u32,
        row: u32,
    ) -> Vec<Frame> {
        let mut pcs = vec![(lane.virtual_pc, false)];
        if let Some(bt) = child_table(&self.core, BACKTRACE, lntbl, row, &mut self.warnings) {
            let mut rows: Vec<Backtrace> = bt
                .rows()
                .take(MAX_FRAMES)
                .map(|(_, r)| Backtrace::read(r))
                .collect();
            rows.sort_by_key(|b| b.level);
            pcs.extend(rows.iter().map(|b| (b.virtual_return_address, true)));
        }
        let mut frames = Vec::new();
        for (pc, caller) in pcs {
            let lookup = if caller { pc.saturating_sub(1) } else { pc };
            let located = self.function_for(preferred, lookup);
            let section = located.as_ref().map(|l| l.0);
            let module = section.and_then(|s| self.module_labels.get(&s).cloned());
            let module_offset = located
                .as_ref()
                .and_then(|(_, f)| pc.checked_sub(f.section_address));
            let function = located.as_ref().map(|(_, f)| demangle(&f.symbol));
            let lines = self.source(section, pc, caller);
            let base = Frame {
                pc,
                module,
                module_offset,
                trust: "device".to_string(),
                ..Frame::default()
            };
            if lines.is_empty() {
                frames.push(Frame {
                    index: index(&frames),
                    function,
                    ..base
                });
                continue;
            }
            let count = lines.len();
            for (i, l) in lines.into_iter().enumerate() {
                let last = i.saturating_add(1) == count;
                frames.push(Frame {
                    index: index(&frames),
                    function: if last { function.clone() } else { l.function },
                    file: Some(l.file),
                    line: Some(l.line),
                    inlined: !last,
                    ..base.clone()
                });
            }
        }
        frames
    }
}

fn index(frames: &[Frame]) -> u32 {
    u32::try_from(frames.len()).unwrap_or(u32::MAX)
}

/// The entry cuda-gdb focuses first (first device with an exception, its
/// first lane-level one), then the rest, most precise first.
fn order(found: Vec<(Origin, GpuException)>) -> Vec<GpuException> {
    let Some(first_device) = found.first().map(|(_, e)| e.device) else {
        return Vec::new();
    };
    let focus = found
        .iter()
        .position(|(o, e)| e.device == first_device && *o == Origin::Lane)
        .unwrap_or(0);
    let mut rest: Vec<(usize, GpuException)> = Vec::with_capacity(found.len());
    let mut head = None;
    for (i, (_, e)) in found.into_iter().enumerate() {
        if i == focus {
            head = Some(e);
        } else {
            rest.push((i, e));
        }
    }
    rest.sort_by_key(|(i, e)| (precision_rank(&e.scope), *i));
    head.into_iter()
        .chain(rest.into_iter().map(|(_, e)| e))
        .collect()
}
