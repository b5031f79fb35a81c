//! The metrics a line can carry, and the names sentences give them.

/// How many [`Metric`]s there are (the length of per-metric arrays).
pub(crate) const METRICS: usize = 12;

/// One training metric, after key names are normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metric {
    Loss,
    GradNorm,
    LearningRate,
    LossScale,
    /// Bytes allocated by the framework's allocator.
    MemAllocated,
    /// Bytes reserved (cached) by the framework's allocator.
    MemReserved,
    /// Bytes the device offers in all (a limit), when a line states it.
    MemTotal,
    SamplesPerSecond,
    TokensPerSecond,
    IterationsPerSecond,
    /// Seconds one training step (iteration) takes, data loading included.
    StepTime,
    /// Seconds of a step spent waiting for the next batch.
    DataTime,
}

impl Metric {
    pub(crate) const ALL: [Metric; METRICS] = [
        Metric::Loss,
        Metric::GradNorm,
        Metric::LearningRate,
        Metric::LossScale,
        Metric::MemAllocated,
        Metric::MemReserved,
        Metric::MemTotal,
        Metric::SamplesPerSecond,
        Metric::TokensPerSecond,
        Metric::IterationsPerSecond,
        Metric::StepTime,
        Metric::DataTime,
    ];

    /// Position in per-metric arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The name a trend sentence uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Loss => "loss",
            Metric::GradNorm => "grad_norm",
            Metric::LearningRate => "lr",
            Metric::LossScale => "loss scale",
            Metric::MemAllocated => "memory allocated",
            Metric::MemReserved => "memory reserved",
            Metric::MemTotal => "memory total",
            Metric::SamplesPerSecond => "samples/s",
            Metric::TokensPerSecond => "tokens/s",
            Metric::IterationsPerSecond => "it/s",
            Metric::StepTime => "step time",
            Metric::DataTime => "data time",
        }
    }

    /// The unit of its values: bytes for memory, seconds for times.
    pub(crate) fn unit(self) -> &'static str {
        if self.is_memory() {
            "bytes"
        } else if self.is_time() {
            "s"
        } else {
            ""
        }
    }

    /// Whether the value is an amount of memory (bytes, needing a size unit).
    pub(crate) fn is_memory(self) -> bool {
        matches!(
            self,
            Metric::MemAllocated | Metric::MemReserved | Metric::MemTotal
        )
    }

    /// Whether the value is a duration (seconds, read with a time unit).
    pub(crate) fn is_time(self) -> bool {
        matches!(self, Metric::StepTime | Metric::DataTime)
    }

    /// Whether the value is a rate of progress.
    pub(crate) fn is_throughput(self) -> bool {
        matches!(
            self,
            Metric::SamplesPerSecond | Metric::TokensPerSecond | Metric::IterationsPerSecond
        )
    }
}
