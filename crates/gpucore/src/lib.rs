//! Reads CUDA GPU core dumps (`.nvcudmp`) offline, without cuda-gdb.
//!
//! [`read_gpu_core`] takes the whole (decompressed) dump and returns a
//! [`coroner_model::GpuCore`]: devices, running kernels, and the exceptions
//! the dump records, each with its error PC, kernel, block, threads, source
//! line (with inlining) and device call stack. [`exception_name`] names an
//! exception code the way cuda-gdb prints it.
//!
//! A GPU core is an ELF core (`EI_OSABI` 0x33, `e_machine` 0xBE) whose
//! `.cudbg.*` sections form a tree (device → SM → CTA → warp → lane, plus
//! contexts, modules and grids) linked through `sh_link` (parent section)
//! and `sh_info` (parent row). Records grow between driver releases; every
//! table is read with its own `sh_entsize` as the stride. Damage never
//! stops the reader: what can be read is returned, with warnings.
//!
//! Two PCs matter and differ for warp-level exceptions:
//! - `GpuException::pc` is the error PC, where the hardware says the
//!   exception was triggered (cuda-gdb: "The exception was triggered at
//!   PC ..."); `source` and `function_offset` describe that address.
//! - `backtrace[0].pc` is the lane's PC when the dump was taken (cuda-gdb's
//!   frame #0 and `$pc`), usually a few instructions later. For device
//!   frames `module` names the relocated cubin section (`<section>#<module
//!   row>`) and `module_offset` is the offset in the code section holding
//!   the PC, which for a kernel is its offset from the kernel's entry.
//!
//! Exceptions are collapsed per warp: lanes with the same code and error
//! PC form one entry with a lane range. The entry cuda-gdb focuses (first
//! device with an exception, its first faulting lane) comes first.

#![forbid(unsafe_code)]
// Inputs are untrusted: no panicking shortcuts on the bytes they hold.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod elf;
mod exceptions;
mod kernels;
mod lines;
mod reader;
mod records;
mod walk;
mod warnings;

pub use exceptions::exception_name;

use coroner_model::GpuCore;

/// Why a dump could not be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuCoreError {
    /// The bytes are not a CUDA GPU core dump (wrong magic, class, OS/ABI,
    /// machine or ELF type; or gzip-compressed).
    #[error("not a CUDA GPU core dump: {0}")]
    NotCudaCore(String),
}

/// Reads a CUDA GPU core dump.
///
/// `dump` is the whole file, already decompressed. Returns `Err` only when
/// the bytes are not a CUDA GPU core; a truncated or damaged dump gives
/// what could be read, with the problems in [`GpuCore::warnings`].
pub fn read_gpu_core(dump: &[u8]) -> Result<GpuCore, GpuCoreError> {
    let mut warnings = warnings::Warnings::default();
    let core = elf::CoreFile::parse(dump, &mut warnings)?;
    Ok(reader::Reader::new(core, warnings).read())
}
