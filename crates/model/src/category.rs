use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! categories {
    ($( $(#[$doc:meta])* $variant:ident = $id:literal : $meaning:literal, )*) => {
        /// A root-cause category. The ids are part of the JSON contract and
        /// are listed, with their meaning, in the project's taxonomy.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Category {
            $( $(#[$doc])* #[serde(rename = $id)] $variant, )*
        }

        impl Category {
            /// Every category, in taxonomy order.
            pub const ALL: &'static [Category] = &[ $( Category::$variant, )* ];

            /// The kebab-case id.
            pub fn as_str(self) -> &'static str {
                match self { $( Category::$variant => $id, )* }
            }

            /// One line saying what the category means.
            pub fn meaning(self) -> &'static str {
                match self { $( Category::$variant => $meaning, )* }
            }
        }
    };
}

categories! {
    /// Framework-level GPU out of memory.
    GpuOom = "gpu-oom": "framework-level GPU out of memory",
    /// OOM where reserved-but-unallocated memory is large.
    GpuOomFragmentation = "gpu-oom-fragmentation": "GPU out of memory with much memory reserved but unallocated (fragmentation)",
    /// Driver or runtime API allocation failure outside a framework allocator.
    CudaDriverOom = "cuda-driver-oom": "CUDA driver/runtime allocation failure outside a framework allocator",
    /// Host RAM exhausted, process killed.
    HostOom = "host-oom": "host RAM exhausted, process killed",
    /// Memory grows steadily across iterations.
    GpuMemoryLeak = "gpu-memory-leak": "GPU memory grows steadily across iterations",
    /// /dev/shm too small for DataLoader workers.
    ShmExhausted = "shm-exhausted": "/dev/shm too small for DataLoader workers",
    /// DataLoader worker died for another reason.
    DataloaderWorkerCrash = "dataloader-worker-crash": "a DataLoader worker process died",
    /// Kernel assertion (bad index or label).
    DeviceSideAssert = "device-side-assert": "a kernel assertion failed (bad index or label)",
    /// Kernel touched invalid memory.
    IllegalMemoryAccess = "illegal-memory-access": "a kernel touched invalid memory",
    /// Other kernel launch or execution failure.
    LaunchFailure = "launch-failure": "a kernel failed to launch or to run",
    /// Binary not built for this GPU architecture.
    NoKernelImage = "no-kernel-image": "the binary has no code for this GPU architecture",
    /// Driver older than the CUDA runtime needs.
    DriverTooOld = "driver-too-old": "the NVIDIA driver is older than the CUDA runtime needs",
    /// No usable GPU visible.
    CudaUnavailable = "cuda-unavailable": "no usable GPU is visible",
    /// Library, ABI or version conflict.
    LibraryMismatch = "library-mismatch": "a library, ABI or version conflict",
    /// cuDNN failure not explained by a mismatch.
    CudnnError = "cudnn-error": "a cuDNN call failed",
    /// cuBLAS failure.
    CublasError = "cublas-error": "a cuBLAS call failed",
    /// Numerical divergence or overflow.
    NanInfLoss = "nan-inf-loss": "numerical divergence: the loss or a gradient became NaN or inf",
    /// A collective hung and a watchdog or timeout fired.
    CollectiveTimeout = "collective-timeout": "a collective hung and a watchdog or timeout fired",
    /// The job stopped making progress without a collective timing out.
    Hang = "hang": "the job stopped making progress without a collective timing out",
    /// NCCL transport, socket or InfiniBand failure.
    NcclNetwork = "nccl-network": "an NCCL transport, socket or InfiniBand failure",
    /// NCCL misuse or configuration error.
    NcclConfig = "nccl-config": "NCCL was misused or misconfigured",
    /// Process group, store or torchrun initialisation failed.
    RendezvousFailure = "rendezvous-failure": "process group, store or launcher rendezvous failed",
    /// Ranks called different collectives or shapes.
    CollectiveMismatch = "collective-mismatch": "ranks called different collectives or shapes",
    /// GPU hardware or driver fault reported by the kernel.
    XidHardware = "xid-hardware": "a GPU hardware or driver fault reported by the kernel (Xid)",
    /// ECC, row-remapping or page-retirement problems.
    EccError = "ecc-error": "GPU memory ECC, row-remapping or page-retirement problems",
    /// NVLink link down or erroring.
    NvlinkError = "nvlink-error": "an NVLink link is down or erroring",
    /// Host process crashed with a signal.
    Segfault = "segfault": "the host process crashed with a memory-access signal",
    /// Host process aborted.
    Abort = "abort": "the host process aborted",
    /// Python import failed.
    MissingModule = "missing-module": "a Python import failed",
    /// A path the job needs is missing.
    FileNotFound = "file-not-found": "a path the job needs is missing",
    /// The job may not read or write a path or device.
    PermissionDenied = "permission-denied": "the job may not read or write a path or device",
    /// No space left for checkpoints, logs or shm.
    DiskFull = "disk-full": "no space left on a device",
    /// Tensors on different devices or dtypes in one op.
    DeviceMismatch = "device-mismatch": "tensors on different devices or dtypes met in one operation",
    /// Asked for a GPU that does not exist for this process.
    InvalidDevice = "invalid-device": "the process asked for a GPU it cannot see",
    /// Another process holds the GPU or its memory.
    GpuContention = "gpu-contention": "another process holds the GPU or its memory",
    /// The scheduler ended the job at its time limit.
    TimeLimit = "time-limit": "the scheduler ended the job at its time limit",
    /// The scheduler preempted or evicted the job.
    Preempted = "preempted": "the scheduler preempted or requeued the job",
    /// The node the job ran on failed or was lost.
    NodeFailure = "node-failure": "the node the job ran on failed or was lost",
    /// The GPU waits for input (a warning, not a crash cause).
    DataLoadingBottleneck = "data-loading-bottleneck": "the GPU waits for input data",
    /// Plain Python exception, not GPU-specific.
    PythonError = "python-error": "a Python exception that is not GPU-specific",
    /// Nothing matched with confidence.
    Unknown = "unknown": "nothing matched with confidence",
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a category id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCategory(pub String);

impl fmt::Display for UnknownCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown category `{}`", self.0)
    }
}

impl std::error::Error for UnknownCategory {}

impl FromStr for Category {
    type Err = UnknownCategory;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCategory(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_from_str_and_serde() {
        for &c in Category::ALL {
            assert_eq!(c.as_str().parse::<Category>(), Ok(c));
            let json = serde_json::to_string(&c).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
    }

    #[test]
    fn unknown_ids_are_rejected() {
        assert!("nccl-timeout".parse::<Category>().is_err());
    }
}
