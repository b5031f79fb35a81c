//! What to do with the job and the node after a failure.

use crate::Category;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The next step a root cause calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// Resubmit the job as it is: the failure was transient or came from
    /// outside it (a preemption, a network fault, a lost peer).
    RestartJob,
    /// Reset the GPU (no process on it, then `nvidia-smi -r`) before it
    /// takes work again.
    ResetGpu,
    /// Reboot the node before it takes work again.
    RebootNode,
    /// Take the node out of the scheduler and have it repaired or checked.
    DrainNode,
    /// The program is at fault: change the code.
    FixCode,
    /// The job's settings are at fault (sizes, limits, NCCL variables).
    FixConfig,
    /// The software or system around the job is at fault (driver,
    /// libraries, packages, disks, shared memory).
    FixEnvironment,
    /// Nothing to do about this finding.
    None,
}

impl ActionKind {
    /// Every kind, in the order above.
    pub const ALL: &'static [ActionKind] = &[
        ActionKind::RestartJob,
        ActionKind::ResetGpu,
        ActionKind::RebootNode,
        ActionKind::DrainNode,
        ActionKind::FixCode,
        ActionKind::FixConfig,
        ActionKind::FixEnvironment,
        ActionKind::None,
    ];

    /// The kebab-case id used in rules and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::RestartJob => "restart-job",
            ActionKind::ResetGpu => "reset-gpu",
            ActionKind::RebootNode => "reboot-node",
            ActionKind::DrainNode => "drain-node",
            ActionKind::FixCode => "fix-code",
            ActionKind::FixConfig => "fix-config",
            ActionKind::FixEnvironment => "fix-environment",
            ActionKind::None => "none",
        }
    }

    /// Whether the step is done to particular nodes, so that the action
    /// names them.
    pub fn is_about_nodes(self) -> bool {
        matches!(
            self,
            ActionKind::ResetGpu
                | ActionKind::RebootNode
                | ActionKind::DrainNode
                | ActionKind::FixEnvironment
        )
    }

    /// Whether resubmitting the same job, without the named nodes, can
    /// succeed after this kind of failure.
    pub fn retry(self) -> bool {
        matches!(
            self,
            ActionKind::RestartJob
                | ActionKind::ResetGpu
                | ActionKind::RebootNode
                | ActionKind::DrainNode
        )
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action id that is not one of [`ActionKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAction(pub String);

impl fmt::Display for UnknownAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown action `{}`", self.0)
    }
}

impl std::error::Error for UnknownAction {}

impl FromStr for ActionKind {
    type Err = UnknownAction;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ActionKind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownAction(s.to_owned()))
    }
}

/// What to do with the job and the nodes, as a scheduler hook reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// The step.
    pub kind: ActionKind,
    /// The nodes it applies to: the ones to exclude or repair. Empty when
    /// the step is not about nodes or no host is known.
    pub hosts: Vec<String>,
    /// Whether resubmitting the same job, without `hosts`, can succeed.
    pub retry: bool,
}

impl Category {
    /// The step a failure of this category calls for when its rule names
    /// none.
    pub fn default_action(self) -> ActionKind {
        use ActionKind as A;
        match self {
            Category::GpuOom
            | Category::GpuOomFragmentation
            | Category::CudaDriverOom
            | Category::HostOom
            | Category::NanInfLoss
            | Category::NcclConfig
            | Category::TimeLimit
            | Category::DataLoadingBottleneck
            | Category::InvalidDevice => A::FixConfig,
            Category::GpuMemoryLeak
            | Category::DataloaderWorkerCrash
            | Category::DeviceSideAssert
            | Category::IllegalMemoryAccess
            | Category::LaunchFailure
            | Category::CublasError
            | Category::CollectiveMismatch
            | Category::Segfault
            | Category::Abort
            | Category::DeviceMismatch
            | Category::PythonError => A::FixCode,
            Category::ShmExhausted
            | Category::NoKernelImage
            | Category::DriverTooOld
            | Category::CudaUnavailable
            | Category::LibraryMismatch
            | Category::CudnnError
            | Category::MissingModule
            | Category::FileNotFound
            | Category::PermissionDenied
            | Category::DiskFull
            | Category::GpuContention => A::FixEnvironment,
            Category::CollectiveTimeout
            | Category::Hang
            | Category::NcclNetwork
            | Category::RendezvousFailure
            | Category::Preempted => A::RestartJob,
            Category::XidHardware | Category::NodeFailure => A::DrainNode,
            Category::EccError | Category::NvlinkError => A::ResetGpu,
            Category::Unknown => A::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for kind in ActionKind::ALL {
            assert_eq!(kind.as_str().parse::<ActionKind>(), Ok(*kind));
            let json = serde_json::to_string(kind).ok();
            assert_eq!(json, Some(format!("\"{}\"", kind.as_str())));
        }
        assert!("reboot".parse::<ActionKind>().is_err());
    }

    #[test]
    fn hardware_is_retried_code_is_not() {
        assert!(Category::XidHardware.default_action().retry());
        assert!(Category::Preempted.default_action().retry());
        assert!(!Category::GpuOom.default_action().retry());
        assert!(!Category::PythonError.default_action().retry());
    }
}
