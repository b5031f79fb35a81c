use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How bad a finding is. Ordered: `Info < Warning < Error < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing, not a failure.
    Info,
    /// Something is off but the job may survive it.
    Warning,
    /// The job failed, or will.
    Error,
    /// The process, node or GPU is gone.
    Critical,
}

impl Severity {
    /// All severities, lowest first.
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
    ];

    /// The lowercase name used in rule files, JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a severity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSeverity(pub String);

impl fmt::Display for UnknownSeverity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown severity `{}` (expected critical, error, warning or info)",
            self.0
        )
    }
}

impl std::error::Error for UnknownSeverity {}

impl FromStr for Severity {
    type Err = UnknownSeverity;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownSeverity(s.to_owned()))
    }
}

/// The part a finding plays in an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A failure in its own right: can be the root cause.
    #[default]
    Cause,
    /// Usually the echo of a failure elsewhere (a peer's connection reset,
    /// a launcher's summary). Named root cause only when no cause is found.
    Symptom,
    /// A hint that helps explain other findings; never the root cause.
    Context,
}

impl Role {
    /// The lowercase name used in rule files and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Cause => "cause",
            Role::Symptom => "symptom",
            Role::Context => "context",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_order_from_info_to_critical() {
        assert!(Severity::Info < Severity::Warning);
        assert!(Severity::Warning < Severity::Error);
        assert!(Severity::Error < Severity::Critical);
    }

    #[test]
    fn severity_round_trips_through_its_name() {
        for s in Severity::ALL {
            assert_eq!(s.as_str().parse::<Severity>(), Ok(s));
        }
        assert!("fatal".parse::<Severity>().is_err());
    }
}
