use coroner_model::{ActionKind, Category, Severity};
use serde::Serialize;

/// Which table an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    /// A CUDA runtime (`cudaError_t`) and/or driver (`CUresult`) code.
    CudaError,
    /// An NVIDIA Xid reported by the kernel driver.
    Xid,
    /// An NCCL `ncclResult_t`.
    NcclResult,
    /// A cuBLAS `cublasStatus_t`.
    CublasStatus,
    /// A cuDNN `cudnnStatus_t`.
    CudnnStatus,
    /// A POSIX signal that killed a process (and Slurm's SIG_OOM).
    Signal,
    /// A coroner rule.
    Rule,
}

impl EntryKind {
    /// A short human name.
    pub fn label(self) -> &'static str {
        match self {
            EntryKind::CudaError => "CUDA error code",
            EntryKind::Xid => "NVIDIA Xid",
            EntryKind::NcclResult => "NCCL result",
            EntryKind::CublasStatus => "cuBLAS status",
            EntryKind::CudnnStatus => "cuDNN status",
            EntryKind::Signal => "signal",
            EntryKind::Rule => "coroner rule",
        }
    }
}

/// One thing coroner can explain, in the same shape whatever its table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The table it comes from.
    pub kind: EntryKind,
    /// Its number, where it has one.
    pub code: Option<i64>,
    /// Every name it is known by (runtime and driver names, rule id).
    pub names: Vec<String>,
    /// The runtime API name (`cudaErrorIllegalAddress`), for CUDA codes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_name: Option<String>,
    /// The driver API name (`CUDA_ERROR_ILLEGAL_ADDRESS`), for CUDA codes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_name: Option<String>,
    /// The number an older release used (cuDNN 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legacy_code: Option<i64>,
    /// The text the library prints for it.
    pub message: Option<String>,
    /// Taxonomy category of a failure showing it.
    pub category: Category,
    /// How bad it is.
    pub severity: Severity,
    /// For CUDA codes: whether the error corrupts the context, so that
    /// every later CUDA call in the process fails too.
    pub sticky: Option<bool>,
    /// What it means.
    pub summary: String,
    /// Likely causes, most likely first.
    pub causes: Vec<String>,
    /// What to do, first step first.
    pub fixes: Vec<String>,
    /// Where the facts come from.
    pub source: Option<String>,
    /// For Xids: NVIDIA's immediate resolution buckets (`RESTART_APP`,
    /// `RESET_GPU`, ...), from its Xid catalog.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub immediate: Vec<String>,
    /// For Xids: NVIDIA's investigatory resolution buckets.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub investigatory: Vec<String>,
    /// For Xids: whether the catalog marks the code unused on current GPUs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unused: bool,
    /// For CUDA codes: whether the message names the error on its own,
    /// with no `CUDA error:` before it (`invalid device function`, which
    /// nothing but a CUDA runtime prints). Messages of 30 characters or
    /// more are taken as such anyway.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub distinctive: bool,
    /// What to do with the job and the node when it is the root cause.
    pub action: ActionKind,
}
