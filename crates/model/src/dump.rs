//! What a core dump says, as plain data: [`HostCore`] for a host process's
//! ELF core, [`GpuCore`] for a CUDA GPU core dump (`.nvcudmp`).

use serde::{Deserialize, Serialize};

/// One stack frame, host or device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// 0 for the innermost frame. Inlined frames share their caller's
    /// address and get their own index.
    pub index: u32,
    /// Program counter (for callers, the return address).
    pub pc: u64,
    /// Demangled function name, when symbols were found.
    pub function: Option<String>,
    /// Source file, when line information was found.
    pub file: Option<String>,
    /// 1-based source line.
    pub line: Option<u32>,
    /// Path of the module (executable, shared library, cubin) holding `pc`.
    pub module: Option<String>,
    /// `pc` relative to the module's load address.
    pub module_offset: Option<u64>,
    /// Whether this frame was inlined into the next one.
    pub inlined: bool,
    /// How the frame was found: `context` (registers), `cfi`,
    /// `frame-pointer`, `scan`, `signal` (crossed a signal handler),
    /// `device` (from a GPU dump's backtrace table).
    pub trust: String,
}

/// Why a host process stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signal {
    /// Signal number.
    pub number: u32,
    /// `SIGSEGV`, `SIGABRT`, ...
    pub name: String,
    /// `si_code`.
    pub code: i32,
    /// `SEGV_MAPERR`, `SI_TKILL`, ... when known.
    pub code_name: Option<String>,
    /// Faulting address for SIGSEGV, SIGBUS, SIGILL and SIGFPE.
    pub fault_address: Option<u64>,
    /// Sending process for signals sent by a process (`kill`, `abort`).
    pub sender_pid: Option<u32>,
}

/// The process a host core belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Process id.
    pub pid: u32,
    /// Short name (`pr_fname`, at most 15 bytes).
    pub name: String,
    /// Command line as recorded (the kernel keeps the first 80 bytes).
    pub args: String,
    /// Executable path (`AT_EXECFN`), when recorded.
    pub executable: Option<String>,
    /// `AT_PLATFORM` (`x86_64`, `aarch64`).
    pub platform: Option<String>,
}

/// One thread of a host core.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostThread {
    /// Thread id.
    pub tid: u32,
    /// Whether this thread received the fatal signal.
    pub crashed: bool,
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
    /// Why the walk stopped early, when it did.
    pub unwind_note: Option<String>,
}

/// A file mapped into the process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappedModule {
    /// Path as recorded in the core.
    pub path: String,
    /// Lowest mapped address.
    pub start: u64,
    /// One past the highest mapped address.
    pub end: u64,
    /// GNU build id (hex), when the core holds the module's first page.
    pub build_id: Option<String>,
    /// The file used for symbols and unwinding, when one was found and
    /// its build id matches.
    pub resolved: Option<String>,
    /// `found`, `missing` (no file), `mismatch` (a file with another
    /// build id, not used), `memory` (read from the core, e.g. vDSO) or
    /// `data` (a mapping without code: a device file, shared memory, a
    /// data file).
    pub status: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl HostCore {
    /// Threads of a core that are unwound and reported at most, the
    /// crashing thread (the first) always among them.
    pub const MAX_THREADS: usize = 1024;

    /// The threads in the core: those reported and those not unwound.
    pub fn thread_count(&self) -> u64 {
        self.threads.len() as u64 + self.threads_omitted
    }
}

/// What a host ELF core says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCore {
    /// `x86_64` or `aarch64`.
    pub arch: String,
    /// The process.
    pub process: Process,
    /// The fatal signal.
    pub signal: Option<Signal>,
    /// The threads, the crashing thread first (at most
    /// [`HostCore::MAX_THREADS`]).
    pub threads: Vec<HostThread>,
    /// Threads in the core that were not unwound or reported: those past
    /// the first [`HostCore::MAX_THREADS`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub threads_omitted: u64,
    /// Files mapped into the process.
    pub modules: Vec<MappedModule>,
    /// Where the fault is: `libcuda`, `libcudart`, `libnccl`, `libtorch`,
    /// `libc`, `python`, `user` or `unknown`.
    pub fault_library: Option<String>,
    /// Whether the process had the CUDA driver loaded (libcuda mapped).
    pub cuda_loaded: bool,
    /// Problems reading the core; what could be read is still reported.
    pub warnings: Vec<String>,
}

/// A GPU in a GPU core dump.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuDevice {
    /// Device index in the dump.
    pub index: u32,
    /// Marketing name (`NVIDIA H200`).
    pub name: String,
    /// SM architecture (`sm_90`).
    pub sm_type: String,
    /// PCI bus id.
    pub pci_bus_id: u32,
    /// PCI device id.
    pub pci_device_id: u32,
    /// Number of SMs.
    pub sms: u32,
}

/// A kernel launch (grid) present in a GPU core dump.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuKernel {
    /// Device index.
    pub device: u32,
    /// Grid id.
    pub grid_id: u64,
    /// Demangled kernel name (`gather_kernel(int const*, int const*, int*, int)`).
    pub name: Option<String>,
    /// Mangled symbol name.
    pub symbol: Option<String>,
    /// Grid dimensions.
    pub grid_dim: [u32; 3],
    /// Block dimensions.
    pub block_dim: [u32; 3],
    /// Cluster dimensions, when clusters are used.
    pub cluster_dim: Option<[u32; 3]>,
    /// Host thread that launched it.
    pub host_tid: Option<u32>,
}

/// A source position on the device, with the inlining chain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLine {
    /// Source file as recorded in the cubin's line table.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// Function this position is in, when known (for inlined code, the
    /// inlined function).
    pub function: Option<String>,
}

/// An exception a GPU core dump records, with every lane that shares it
/// collapsed into one entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuException {
    /// `CUDBGException_t` code.
    pub code: u32,
    /// Name as cuda-gdb prints it (`Warp Illegal Address`).
    pub name: String,
    /// `lane`, `warp`, `device`, `cluster` or `sm`: where the hardware
    /// attributed it, which bounds how exact `pc` is.
    pub scope: String,
    /// Device index.
    pub device: u32,
    /// SM id.
    pub sm: u32,
    /// Warp id, when lane- or warp-level.
    pub warp: Option<u32>,
    /// Lanes, as ranges (`0-31`).
    pub lanes: Option<String>,
    /// Error PC (absolute).
    pub pc: Option<u64>,
    /// Offset of `pc` in its function.
    pub function_offset: Option<u64>,
    /// Grid id of the faulting kernel.
    pub grid_id: Option<u64>,
    /// Demangled kernel name.
    pub kernel: Option<String>,
    /// Block index.
    pub block: Option<[u32; 3]>,
    /// First and last thread index of the faulting lanes.
    pub threads: Option<([u32; 3], [u32; 3])>,
    /// Source position at `pc`, innermost (inlined) first.
    pub source: Vec<SourceLine>,
    /// Device call stack of the first faulting lane, innermost first.
    pub backtrace: Vec<Frame>,
    /// The driver's own description, when the dump carries one.
    pub description: Option<String>,
}

/// What a CUDA GPU core dump says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuCore {
    /// Driver branch and CUDA version from the dump's metadata
    /// (`580.95.05, CUDA 13.0`), when present.
    pub driver: Option<String>,
    /// Whether memory images are present (`full`) or not (`lightweight`).
    pub flavour: String,
    /// GPUs in the dump.
    pub devices: Vec<GpuDevice>,
    /// Kernels that were running.
    pub kernels: Vec<GpuKernel>,
    /// Exceptions, most precise first.
    pub exceptions: Vec<GpuException>,
    /// Host thread ids of the CUDA contexts, to join with a host core.
    pub host_tids: Vec<u32>,
    /// Problems reading the dump; what could be read is still reported.
    pub warnings: Vec<String>,
}

/// The segments of a CUDA caching allocator's memory snapshot, as runs of
/// blocks in one state: enough to draw the map, not to analyse again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryMap {
    /// The largest segments, in the snapshot's order.
    pub segments: Vec<MemorySegment>,
    /// Segments left out (the smallest).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub segments_omitted: u64,
}

/// One segment: memory the allocator reserved from the driver in one piece.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySegment {
    pub device: i64,
    pub size: u64,
    /// Neighbouring blocks in one state, in address order.
    pub runs: Vec<MemoryRun>,
}

/// Neighbouring blocks of a segment in one state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRun {
    /// `allocated`, `freeing` (freed, waiting for a stream), `free`, or
    /// `mixed` for the blocks folded into a segment's last run.
    pub state: String,
    pub bytes: u64,
    pub blocks: u64,
}
