//! Stack walking over a core: DWARF CFI (`.eh_frame`, `.debug_frame`),
//! signal-handler frames, frame pointers, then a bounded, validated stack
//! scan. Every step reads the stack from the core's memory.

use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EhFrameHdr, EvaluationResult, LittleEndian,
    ParsedEhFrameHdr, Register, RegisterRule, UnwindContext, UnwindSection, UnwindTableRow,
};
use object::{Object, ObjectSection};

use crate::bytes::u32_at;
use crate::memory::Memory;
use crate::modules::{Image, Module, Modules};
use crate::regs::{Arch, Registers, COUNT};

type Slice<'d> = gimli::EndianSlice<'d, LittleEndian>;

/// Most frames reported per thread.
pub const MAX_FRAMES: usize = 256;
/// Most stack words examined by scanning, per thread.
const SCAN_BUDGET: usize = 4096;
/// Most words one scan step looks at.
const SCAN_WINDOW: usize = 512;

pub const TRUST_CONTEXT: &str = "context";
pub const TRUST_CFI: &str = "cfi";
pub const TRUST_FP: &str = "frame-pointer";
pub const TRUST_SCAN: &str = "scan";
pub const TRUST_SIGNAL: &str = "signal";

/// x86-64 `__restore_rt`: `mov $15, %rax; syscall`.
const X86_SIGRETURN: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];
/// aarch64 `__kernel_rt_sigreturn`: `mov x8, #139; svc #0`.
const ARM_SIGRETURN: [u8; 8] = [0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4];

/// Unwind tables of one module.
pub struct Cfi<'d> {
    eh_frame: Option<(
        EhFrame<Slice<'d>>,
        BaseAddresses,
        Option<ParsedEhFrameHdr<Slice<'d>>>,
    )>,
    debug_frame: Option<(DebugFrame<Slice<'d>>, BaseAddresses)>,
}

impl<'d> Cfi<'d> {
    fn load(image: &Image<'d>, debug: Option<&Image<'d>>) -> Option<Cfi<'d>> {
        let file = &image.file;
        let text = file.section_by_name(".text").map_or(0, |s| s.address());
        let eh_frame = file.section_by_name(".eh_frame").and_then(|section| {
            let data = section.data().ok()?;
            let mut bases = BaseAddresses::default()
                .set_eh_frame(section.address())
                .set_text(text);
            let hdr = file.section_by_name(".eh_frame_hdr").and_then(|hdr| {
                bases = bases.clone().set_eh_frame_hdr(hdr.address());
                EhFrameHdr::new(hdr.data().ok()?, LittleEndian)
                    .parse(&bases, 8)
                    .ok()
            });
            let mut eh = EhFrame::new(data, LittleEndian);
            eh.set_address_size(8);
            Some((eh, bases, hdr))
        });
        let debug_frame = [Some(image), debug]
            .into_iter()
            .flatten()
            .find_map(|img| img.file.section_by_name(".debug_frame"))
            .and_then(|section| {
                let mut frame = DebugFrame::new(section.data().ok()?, LittleEndian);
                frame.set_address_size(8);
                Some((frame, BaseAddresses::default()))
            });
        if eh_frame.is_none() && debug_frame.is_none() {
            return None;
        }
        Some(Cfi {
            eh_frame,
            debug_frame,
        })
    }
}

/// Which table a row came from (expressions point into it).
enum Table<'a, 'd> {
    Eh(&'a EhFrame<Slice<'d>>),
    Debug(&'a DebugFrame<Slice<'d>>),
}

/// One frame found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    pub pc: u64,
    /// Address to symbolize: `pc - 1` for return addresses.
    pub lookup: u64,
    pub trust: &'static str,
}

/// The frames of one thread and why the walk stopped early, if it did.
#[derive(Debug, Default)]
pub struct Walk {
    pub frames: Vec<RawFrame>,
    pub note: Option<String>,
}

#[allow(clippy::large_enum_variant)] // short-lived, returned once per frame
enum Step {
    Caller(Registers, &'static str, bool),
    /// The outermost frame, as the unwind tables say.
    End,
    Stuck(String),
}

#[allow(clippy::large_enum_variant)] // short-lived, returned once per frame
enum CfiStep {
    Caller(Registers),
    End,
    NoInfo,
}

pub struct Walker<'m, 'd> {
    modules: &'m Modules<'d>,
    memory: &'m Memory<'d>,
    arch: Arch,
    pac_mask: u64,
    ctx: Box<UnwindContext<usize>>,
}

impl<'m, 'd> Walker<'m, 'd> {
    pub fn new(
        modules: &'m Modules<'d>,
        memory: &'m Memory<'d>,
        arch: Arch,
        pac_mask: Option<u64>,
    ) -> Self {
        Walker {
            modules,
            memory,
            arch,
            pac_mask: pac_mask.unwrap_or(0),
            ctx: Box::new(UnwindContext::new()),
        }
    }

    /// Strips pointer-authentication bits from a code address.
    fn strip(&self, pc: u64) -> u64 {
        match self.arch {
            Arch::Aarch64 => pc & !self.pac_mask,
            Arch::X86_64 => pc,
        }
    }

    /// Walks the stack starting from a thread's registers.
    pub fn walk(&mut self, start: Registers) -> Walk {
        let mut walk = Walk::default();
        let mut regs = start;
        regs.pc = self.strip(regs.pc);
        let mut trust = TRUST_CONTEXT;
        let mut exact = true;
        let mut budget = SCAN_BUDGET;
        loop {
            let pc = regs.pc;
            let lookup = if exact { pc } else { pc.saturating_sub(1) };
            walk.frames.push(RawFrame { pc, lookup, trust });
            if walk.frames.len() >= MAX_FRAMES {
                walk.note = Some(format!("stopped after {MAX_FRAMES} frames"));
                break;
            }
            let first = walk.frames.len() == 1;
            match self.step(&regs, exact, first, &mut budget) {
                Step::End => break,
                Step::Stuck(why) => {
                    walk.note = Some(why);
                    break;
                }
                Step::Caller(mut next, how, next_exact) => {
                    next.pc = self.strip(next.pc);
                    if next.pc == 0 {
                        break;
                    }
                    if self.modules.find(next.pc).is_none() {
                        walk.note = Some(format!(
                            "return address {:#x} is outside every known module",
                            next.pc
                        ));
                        break;
                    }
                    let (old_sp, new_sp) = (regs.sp().unwrap_or(0), next.sp().unwrap_or(0));
                    let moved = new_sp > old_sp || (new_sp == old_sp && next.pc != regs.pc);
                    if how != TRUST_SIGNAL && !moved {
                        walk.note = Some("the stack pointer did not increase".to_string());
                        break;
                    }
                    regs = next;
                    trust = how;
                    exact = next_exact;
                }
            }
        }
        walk
    }

    fn step(&mut self, regs: &Registers, exact: bool, first: bool, budget: &mut usize) -> Step {
        if let Some(caller) = self.signal_frame(regs) {
            return Step::Caller(caller, TRUST_SIGNAL, true);
        }
        let lookup = if exact {
            regs.pc
        } else {
            regs.pc.saturating_sub(1)
        };
        if let Some(module) = self.modules.find(regs.pc) {
            match self.cfi_step(module, regs, lookup) {
                CfiStep::Caller(caller) => return Step::Caller(caller, TRUST_CFI, false),
                CfiStep::End => return Step::End,
                CfiStep::NoInfo => {}
            }
        }
        if let Some(caller) = self.frame_pointer_step(regs, first) {
            return Step::Caller(caller, TRUST_FP, false);
        }
        match self.scan_step(regs, budget) {
            Some(caller) => Step::Caller(caller, TRUST_SCAN, false),
            None => Step::Stuck(format!(
                "no unwind information or return address found below {:#x}",
                regs.pc
            )),
        }
    }

    /// Code bytes at `addr`: from the core, else from the verified file.
    fn code(&self, addr: u64, len: usize) -> Option<&'d [u8]> {
        self.memory.read(addr, len).or_else(|| {
            self.modules
                .find(addr)
                .and_then(|m| m.bytes_at(addr, len as u64))
        })
    }

    /// The interrupted registers, when `regs.pc` is a sigreturn trampoline.
    fn signal_frame(&self, regs: &Registers) -> Option<Registers> {
        let sp = regs.sp()?;
        match self.arch {
            Arch::X86_64 => {
                if self.code(regs.pc, X86_SIGRETURN.len())? != X86_SIGRETURN {
                    return None;
                }
                // sp points at the ucontext; its mcontext gregs start after
                // uc_flags, uc_link and the 24-byte stack_t, in the order
                // r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
                let gregs = sp.checked_add(40)?;
                const DWARF: [u16; 16] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7];
                let greg = |i: u64| self.memory.u64(gregs.checked_add(i.checked_mul(8)?)?);
                let mut out = Registers::new(self.arch, greg(16)?);
                for (i, dwarf) in (0u64..).zip(DWARF) {
                    out.set(dwarf, greg(i));
                }
                Some(out)
            }
            Arch::Aarch64 => {
                if self.code(regs.pc, ARM_SIGRETURN.len())? != ARM_SIGRETURN {
                    return None;
                }
                // rt_sigframe: 128-byte siginfo, then the ucontext whose
                // sigcontext (fault_address, x0..x30, sp, pc) is at 176.
                let sigcontext = sp.checked_add(128 + 176)?;
                let word = |i: u64| self.memory.u64(sigcontext.checked_add(i.checked_mul(8)?)?);
                let mut out = Registers::new(self.arch, word(33)?);
                for i in 0..32u16 {
                    out.set(i, word(u64::from(i).saturating_add(1)));
                }
                Some(out)
            }
        }
    }

    fn cfi_step(&mut self, module: &Module<'d>, regs: &Registers, lookup: u64) -> CfiStep {
        let Some(cfi) = module
            .cfi
            .get_or_init(|| {
                module
                    .image
                    .as_ref()
                    .and_then(|img| Cfi::load(img, module.debug_image.as_ref()))
            })
            .as_ref()
        else {
            return CfiStep::NoInfo;
        };
        let svma = module.svma(lookup);
        let ctx = &mut *self.ctx;
        let mut found: Option<(UnwindTableRow<usize>, Table<'_, 'd>)> = None;
        if let Some((eh, bases, hdr)) = &cfi.eh_frame {
            let row = match hdr.as_ref().and_then(|h| h.table()) {
                Some(table) => table.unwind_info_for_address(eh, bases, ctx, svma, |s, b, o| {
                    s.cie_from_offset(b, o)
                }),
                None => {
                    eh.unwind_info_for_address(bases, ctx, svma, |s, b, o| s.cie_from_offset(b, o))
                }
            };
            if let Ok(row) = row {
                found = Some((row.clone(), Table::Eh(eh)));
            }
        }
        if found.is_none() {
            if let Some((frame, bases)) = &cfi.debug_frame {
                if let Ok(row) = frame
                    .unwind_info_for_address(bases, ctx, svma, |s, b, o| s.cie_from_offset(b, o))
                {
                    found = Some((row.clone(), Table::Debug(frame)));
                }
            }
        }
        let Some((row, table)) = found else {
            return CfiStep::NoInfo;
        };
        match self.apply_row(&row, &table, regs) {
            Some(Some(caller)) => CfiStep::Caller(caller),
            Some(None) => CfiStep::End,
            None => CfiStep::NoInfo,
        }
    }

    /// The caller's registers by one CFI row; `Some(None)` when the row
    /// marks the outermost frame.
    fn apply_row(
        &self,
        row: &UnwindTableRow<usize>,
        table: &Table<'_, 'd>,
        regs: &Registers,
    ) -> Option<Option<Registers>> {
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => {
                regs.get(register.0)?.checked_add_signed(*offset)?
            }
            CfaRule::Expression(expr) => {
                let expr = match table {
                    Table::Eh(s) => expr.get(*s).ok()?,
                    Table::Debug(s) => expr.get(*s).ok()?,
                };
                self.evaluate(expr, regs, None)?
            }
        };
        let ra_column = self.arch.ra();
        let mut caller = Registers::new(self.arch, 0);
        for number in 0..COUNT as u16 {
            let rule = row.register(Register(number));
            let value = match rule {
                None | Some(RegisterRule::SameValue) => regs.get(number),
                Some(RegisterRule::Undefined) => {
                    if number == ra_column {
                        return Some(None);
                    }
                    None
                }
                Some(RegisterRule::Offset(offset)) => {
                    self.memory.u64(cfa.checked_add_signed(offset)?)
                }
                Some(RegisterRule::ValOffset(offset)) => cfa.checked_add_signed(offset),
                Some(RegisterRule::Register(other)) => regs.get(other.0),
                Some(RegisterRule::Expression(expr)) | Some(RegisterRule::ValExpression(expr)) => {
                    let is_value = matches!(rule, Some(RegisterRule::ValExpression(_)));
                    let expr = match table {
                        Table::Eh(s) => expr.get(*s).ok(),
                        Table::Debug(s) => expr.get(*s).ok(),
                    };
                    let addr = expr.and_then(|e| self.evaluate(e, regs, Some(cfa)));
                    if is_value {
                        addr
                    } else {
                        addr.and_then(|a| self.memory.u64(a))
                    }
                }
                Some(RegisterRule::Constant(value)) => Some(value),
                Some(_) => None,
            };
            caller.set(number, value);
        }
        caller.set(self.arch.sp(), Some(cfa));
        let ra = match self.arch {
            Arch::X86_64 => caller.get(ra_column)?,
            Arch::Aarch64 => caller.get(ra_column).or(regs.get(ra_column))?,
        };
        if self.arch == Arch::X86_64 {
            caller.set(ra_column, None);
        }
        caller.pc = ra;
        Some(Some(caller))
    }

    fn evaluate(
        &self,
        expr: gimli::Expression<Slice<'d>>,
        regs: &Registers,
        initial: Option<u64>,
    ) -> Option<u64> {
        let encoding = gimli::Encoding {
            address_size: 8,
            format: gimli::Format::Dwarf32,
            version: 4,
        };
        let mut eval = expr.evaluation(encoding);
        eval.set_max_iterations(1000);
        if let Some(value) = initial {
            eval.set_initial_value(value);
        }
        let mut state = eval.evaluate().ok()?;
        for _ in 0..256 {
            state = match state {
                EvaluationResult::Complete => {
                    return match eval.as_result().first()?.location {
                        gimli::Location::Address { address } => Some(address),
                        gimli::Location::Value { value } => value.to_u64(u64::MAX).ok(),
                        gimli::Location::Register { register } => regs.get(register.0),
                        _ => None,
                    };
                }
                EvaluationResult::RequiresMemory { address, size, .. } => {
                    let bytes = self.memory.read(address, usize::from(size))?;
                    let mut word = [0u8; 8];
                    word.get_mut(..bytes.len())?.copy_from_slice(bytes);
                    eval.resume_with_memory(gimli::Value::Generic(u64::from_le_bytes(word)))
                        .ok()?
                }
                EvaluationResult::RequiresRegister { register, .. } => eval
                    .resume_with_register(gimli::Value::Generic(regs.get(register.0)?))
                    .ok()?,
                _ => return None,
            };
        }
        None
    }

    /// Whether `addr` can be a code address in a known module.
    fn is_code(&self, addr: u64) -> bool {
        self.memory.is_executable(addr) && self.modules.find(addr).is_some()
    }

    fn frame_pointer_step(&self, regs: &Registers, first: bool) -> Option<Registers> {
        let sp = regs.sp()?;
        let fp = regs.fp()?;
        if self.arch == Arch::Aarch64 && first {
            // A leaf may not have saved the link register yet.
            let lr = self.strip(regs.get(30)?);
            let saved = self.memory.u64(fp.checked_add(8)?).map(|v| self.strip(v));
            if lr != 0 && self.is_code(lr) && saved != Some(lr) {
                let mut caller = regs.clone();
                caller.pc = lr;
                return Some(caller);
            }
        }
        if fp < sp || fp % 8 != 0 || fp.checked_sub(sp)? > (64 << 20) {
            return None;
        }
        let caller_fp = self.memory.u64(fp)?;
        let ra = self.strip(self.memory.u64(fp.checked_add(8)?)?);
        if !self.is_code(ra) {
            return None;
        }
        let mut caller = regs.clone();
        caller.pc = ra;
        caller.set(self.arch.fp(), Some(caller_fp));
        caller.set(self.arch.sp(), fp.checked_add(16));
        if self.arch == Arch::Aarch64 {
            caller.set(30, Some(ra));
        }
        Some(caller)
    }

    /// Whether the instruction before `ra` is a call, or `None` when the
    /// code is not available to check.
    fn follows_call(&self, ra: u64) -> Option<bool> {
        match self.arch {
            Arch::X86_64 => {
                let before = self.code(ra.checked_sub(7)?, 7)?;
                let at = |back: usize| before.get(7usize.checked_sub(back)?).copied();
                // call rel32
                if at(5) == Some(0xe8) {
                    return Some(true);
                }
                // call r/m64 (ff /2), 2 to 7 bytes long
                for len in 2..=7usize {
                    if at(len) == Some(0xff) {
                        if let Some(modrm) = at(len.saturating_sub(1)) {
                            if (modrm >> 3) & 7 == 2 {
                                return Some(true);
                            }
                        }
                    }
                }
                Some(false)
            }
            Arch::Aarch64 => {
                let insn = u32_at(self.code(ra.checked_sub(4)?, 4)?, 0)?;
                let bl = insn & 0xfc00_0000 == 0x9400_0000;
                let blr = insn & 0xffff_fc1f == 0xd63f_0000;
                let blra = insn & 0xfeff_f800 == 0xd63f_0800;
                Some(bl || blr || blra)
            }
        }
    }

    fn scan_step(&self, regs: &Registers, budget: &mut usize) -> Option<Registers> {
        let sp = regs.sp()?;
        let window = SCAN_WINDOW.min(*budget);
        for i in 0..window as u64 {
            *budget = budget.saturating_sub(1);
            let slot = sp.checked_add(i.checked_mul(8)?)?;
            let Some(value) = self.memory.u64(slot) else {
                break;
            };
            let candidate = self.strip(value);
            if candidate == regs.pc || !self.is_code(candidate) {
                continue;
            }
            // Unverifiable when the module's code is neither in the core
            // nor on disk; such candidates are still taken (trust `scan`).
            if self.follows_call(candidate) == Some(false) {
                continue;
            }
            let mut caller = regs.clone();
            caller.pc = candidate;
            caller.set(self.arch.sp(), slot.checked_add(8));
            return Some(caller);
        }
        None
    }
}
