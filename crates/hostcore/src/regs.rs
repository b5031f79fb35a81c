//! Register sets, numbered as DWARF numbers them, for x86-64 and aarch64.

/// The architectures whose registers we decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// DWARF number of the stack pointer.
    pub fn sp(self) -> u16 {
        match self {
            Arch::X86_64 => 7,
            Arch::Aarch64 => 31,
        }
    }

    /// DWARF number of the frame pointer.
    pub fn fp(self) -> u16 {
        match self {
            Arch::X86_64 => 6,
            Arch::Aarch64 => 29,
        }
    }

    /// DWARF number of the return-address column.
    pub fn ra(self) -> u16 {
        match self {
            Arch::X86_64 => 16,
            Arch::Aarch64 => 30,
        }
    }
}

/// Number of DWARF registers tracked: x86-64 0..=16, aarch64 0..=31.
pub const COUNT: usize = 33;

/// One frame's registers; `None` where the value is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registers {
    pub arch: Arch,
    pub pc: u64,
    pub regs: [Option<u64>; COUNT],
}

impl Registers {
    pub fn new(arch: Arch, pc: u64) -> Registers {
        Registers {
            arch,
            pc,
            regs: [None; COUNT],
        }
    }

    pub fn get(&self, dwarf: u16) -> Option<u64> {
        self.regs.get(usize::from(dwarf)).copied().flatten()
    }

    pub fn set(&mut self, dwarf: u16, value: Option<u64>) {
        if let Some(slot) = self.regs.get_mut(usize::from(dwarf)) {
            *slot = value;
        }
    }

    pub fn sp(&self) -> Option<u64> {
        self.get(self.arch.sp())
    }

    pub fn fp(&self) -> Option<u64> {
        self.get(self.arch.fp())
    }

    /// Registers from `pr_reg` of an `NT_PRSTATUS` note.
    pub fn from_prstatus(arch: Arch, pr_reg: &[u8]) -> Option<Registers> {
        let word = |i: usize| {
            i.checked_mul(8)
                .and_then(|at| crate::bytes::u64_at(pr_reg, at))
        };
        match arch {
            Arch::X86_64 => {
                // user_regs_struct order: r15 r14 r13 r12 rbp rbx r11 r10 r9
                // r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ...
                const DWARF: [(usize, u16); 16] = [
                    (0, 15),
                    (1, 14),
                    (2, 13),
                    (3, 12),
                    (4, 6),
                    (5, 3),
                    (6, 11),
                    (7, 10),
                    (8, 9),
                    (9, 8),
                    (10, 0),
                    (11, 2),
                    (12, 1),
                    (13, 4),
                    (14, 5),
                    (19, 7),
                ];
                let mut regs = Registers::new(arch, word(16)?);
                for (slot, dwarf) in DWARF {
                    regs.set(dwarf, word(slot));
                }
                Some(regs)
            }
            Arch::Aarch64 => {
                // x0..x30, sp, pc, pstate
                let mut regs = Registers::new(arch, word(32)?);
                for i in 0..32u16 {
                    regs.set(i, word(usize::from(i)));
                }
                Some(regs)
            }
        }
    }
}
