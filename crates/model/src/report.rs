use crate::{Action, Category, Evidence, Finding, GpuCore, HostCore, MemoryMap, Severity};
use serde::{Deserialize, Serialize};

/// The name and version of the tool that wrote a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `coroner`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

/// The one cause a report names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCause {
    /// Taxonomy category; [`Category::Unknown`] when nothing matched with
    /// confidence.
    pub category: Category,
    /// The rule behind it, if any.
    pub rule: Option<String>,
    /// One sentence.
    pub summary: String,
    /// The rank where it happened, when known.
    pub rank: Option<u32>,
    /// The rank is not named by any line but presumed (from the CUDA
    /// device an out-of-memory error names); absent when it is named.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rank_presumed: bool,
    /// The lines that show it.
    pub evidence: Vec<Evidence>,
    /// What to do, most likely fix first.
    pub remediation: Vec<String>,
    /// Severity of the finding behind it; absent when unknown.
    pub severity: Option<Severity>,
    /// Rules of the other findings that are consequences of this cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explains: Vec<String>,
    /// How sure the answer is; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// What to do with the job and the nodes; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The node the root cause happened on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The GPU it happened on (a PCI bus id), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

/// How sure a named root cause is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// Only a warning points at it: the job may have died of something
    /// the inputs do not show.
    Low,
    /// A generic failure (a plain Python exception), an echo of a failure
    /// elsewhere, one of several unrelated causes, or the usual reading of
    /// a sign that no input records (a SIGKILL read as the OOM killer's).
    Medium,
    /// A specific failure, the only cause of its severity.
    High,
}

impl Confidence {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

impl RootCause {
    /// The explicit answer when nothing matched with confidence.
    pub fn unknown(summary: impl Into<String>) -> Self {
        RootCause {
            category: Category::Unknown,
            rule: None,
            summary: summary.into(),
            rank: None,
            rank_presumed: false,
            evidence: Vec::new(),
            remediation: Vec::new(),
            severity: None,
            explains: Vec::new(),
            confidence: None,
            action: None,
            host: None,
            gpu: None,
        }
    }
}

/// What an input turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    /// Text output of a training job or program.
    Log,
    /// Output dominated by `NCCL INFO`/`NCCL WARN` debug lines.
    NcclDebug,
    /// A kernel log (dmesg, journald, syslog).
    KernelLog,
    /// Output of `nvidia-smi`.
    NvidiaSmi,
    /// A host ELF core dump.
    ElfCore,
    /// A CUDA GPU core dump.
    CudaGpuCore,
    /// Not an input of its own: the trends coroner derives from the
    /// training-metric lines of a text input (memory growing every step, a
    /// loss turning nan, a loss scale collapsing). Rules limited to this
    /// kind read them.
    MetricTrends,
    /// Not an input of its own: what coroner concludes by comparing the
    /// versions the incident's inputs report (the driver's highest CUDA
    /// version against the CUDA version a framework was built for). Rules
    /// limited to this kind read them.
    EnvironmentFacts,
    /// Not an input of its own: the thread stack dumps found in text
    /// inputs (faulthandler, `py-spy dump`, a `KeyboardInterrupt`,
    /// ProcessGroupNCCL's stack of the failed collective), one sentence each
    /// saying where the main thread waits, the desync report's snapshot
    /// of where each rank was, and the collectives the ranks' watchdogs
    /// timed out, where they differ. Rules limited to this kind read
    /// them.
    StackDumps,
    /// A PyTorch flight-recorder dump (pickle or JSON): the last
    /// collectives of one rank.
    FlightRecorder,
    /// A CUDA memory snapshot of PyTorch's caching allocator (pickle).
    MemorySnapshot,
    /// Binary data that is not a known format.
    Binary,
    /// Could not be opened at all.
    Unreadable,
    /// Not an input of its own: a directory that was walked, listed when
    /// some of its files were passed over (source code, notebooks, configs
    /// and docs; paths `--exclude` or `.coronerignore` left out), which
    /// its notes count and name, or when its `.coronerignore` could not be
    /// used, which its errors say.
    Directory,
}

impl InputKind {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::Log => "log",
            InputKind::NcclDebug => "nccl-debug",
            InputKind::KernelLog => "kernel-log",
            InputKind::NvidiaSmi => "nvidia-smi",
            InputKind::ElfCore => "elf-core",
            InputKind::CudaGpuCore => "cuda-gpu-core",
            InputKind::MetricTrends => "metric-trends",
            InputKind::EnvironmentFacts => "environment-facts",
            InputKind::StackDumps => "stack-dumps",
            InputKind::FlightRecorder => "flight-recorder",
            InputKind::MemorySnapshot => "memory-snapshot",
            InputKind::Binary => "binary",
            InputKind::Unreadable => "unreadable",
            InputKind::Directory => "directory",
        }
    }

    /// Kinds of text input, which rules may be limited to.
    pub const TEXT: [InputKind; 4] = [
        InputKind::Log,
        InputKind::NcclDebug,
        InputKind::KernelLog,
        InputKind::NvidiaSmi,
    ];

    /// The text kind named `name` (`log`, `nccl-debug`, `kernel-log`,
    /// `nvidia-smi`).
    pub fn text_kind(name: &str) -> Option<InputKind> {
        InputKind::TEXT.into_iter().find(|k| k.as_str() == name)
    }

    /// Kinds that rules may be limited to: the text kinds, and the text
    /// coroner writes of core dumps, metric trends and version comparisons.
    pub const RULE_KINDS: [InputKind; 11] = [
        InputKind::Log,
        InputKind::NcclDebug,
        InputKind::KernelLog,
        InputKind::NvidiaSmi,
        InputKind::ElfCore,
        InputKind::CudaGpuCore,
        InputKind::MetricTrends,
        InputKind::EnvironmentFacts,
        InputKind::StackDumps,
        InputKind::FlightRecorder,
        InputKind::MemorySnapshot,
    ];

    /// The kind named `name` that rules may be limited to (one of
    /// [`InputKind::RULE_KINDS`]).
    pub fn rule_kind(name: &str) -> Option<InputKind> {
        InputKind::RULE_KINDS
            .into_iter()
            .find(|k| k.as_str() == name)
    }

    /// Whether the input is scanned line by line by the rule engine.
    pub fn is_text(self) -> bool {
        matches!(
            self,
            InputKind::Log | InputKind::NcclDebug | InputKind::KernelLog | InputKind::NvidiaSmi
        )
    }
}

/// Something that went wrong reading one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputError {
    /// What went wrong.
    pub message: String,
    /// Byte offset in the (decompressed) input where it went wrong.
    pub offset: Option<u64>,
}

impl InputError {
    /// The message, with the offset when there is one: `truncated (at byte 42)`.
    pub fn located(&self) -> String {
        match self.offset {
            Some(o) => format!("{} (at byte {o})", self.message),
            None => self.message.clone(),
        }
    }
}

/// One input as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSummary {
    /// Display path (`-` for standard input).
    pub path: String,
    /// Kind detected from content.
    pub kind: InputKind,
    /// Compression detected from magic bytes (`gzip`, `zstd`, `xz`).
    pub compression: Option<String>,
    /// Bytes read after decompression.
    pub bytes: u64,
    /// Lines read (0 for binary inputs).
    pub lines: u64,
    /// The number of the last line with text: lines that hold only
    /// spaces or quote markers (`>`) at the end of a paste do not count.
    /// Not part of the report.
    #[serde(skip)]
    pub last_text_line: u64,
    /// Whether it was read as a double-spaced paste (a blank line after
    /// every line of the log): its lines stand twice as far apart.
    /// Not part of the report.
    #[serde(skip)]
    pub double_spaced: bool,
    /// Rank the whole input belongs to, when its name says so.
    pub rank: Option<u32>,
    /// Problems reading it; the rest of the input, and the other inputs,
    /// are still analysed.
    pub errors: Vec<InputError>,
    /// Remarks that are not errors (an input skipped, a line truncated).
    pub notes: Vec<String>,
    /// What a host core dump says, for an `elf-core` input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<Box<HostCore>>,
    /// What a CUDA GPU core dump says, for a `cuda-gpu-core` input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_core: Option<Box<GpuCore>>,
    /// The segment map of a memory snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Box<MemoryMap>>,
}

impl InputSummary {
    /// An input of `kind` at `path` with nothing read yet.
    pub fn new(path: impl Into<String>, kind: InputKind) -> Self {
        InputSummary {
            path: path.into(),
            kind,
            compression: None,
            bytes: 0,
            lines: 0,
            last_text_line: 0,
            double_spaced: false,
            rank: None,
            errors: Vec::new(),
            notes: Vec::new(),
            core: None,
            gpu_core: None,
            memory: None,
        }
    }
}

/// Totals for the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Bytes read, after decompression.
    pub bytes: u64,
    /// Lines read.
    pub lines: u64,
    /// Wall time of the analysis in milliseconds.
    pub elapsed_ms: u64,
}

/// A whole analysis: the root cause, every finding, and what was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: Tool,
    /// The one root cause (never absent; `unknown` when nothing matched).
    pub root_cause: RootCause,
    /// Every finding, root cause first, then by severity and position.
    pub findings: Vec<Finding>,
    /// Every input, in the order read.
    pub inputs: Vec<InputSummary>,
    /// Totals.
    pub stats: Stats,
    /// When the root cause is unknown: the lines that look like a
    /// failure but that no rule read, grouped by template, most frequent
    /// first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<UnreadLines>,
    /// What the settings did to this report: a `coroner.toml` that was
    /// found but not applied, and the files (a configuration, a baseline)
    /// that left findings out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Findings left out of `findings` (the least severe, the last seen)
    /// because more than coroner lists were found.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings_omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Lines of one template that look like a failure and that no rule read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadLines {
    /// The line with its variable words (numbers, ids, paths, quoted
    /// strings) masked as `<*>`.
    pub template: String,
    /// How many lines have this template.
    pub count: u64,
    /// The first of them.
    pub first: Evidence,
}

impl Report {
    /// The highest severity among the findings, if any.
    pub fn max_severity(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// Whether any input could not be read in full.
    pub fn has_input_errors(&self) -> bool {
        self.inputs.iter().any(|i| !i.errors.is_empty())
    }

    /// Inputs listed, leaving out the walked directories' entries, which
    /// are no input of their own.
    pub fn input_count(&self) -> usize {
        self.inputs
            .iter()
            .filter(|i| i.kind != InputKind::Directory)
            .count()
    }

    /// Inputs that were analysed, in full or up to an error: text that was
    /// scanned, and core dumps that were read.
    pub fn analysed_inputs(&self) -> usize {
        self.inputs
            .iter()
            .filter(|i| i.kind.is_text() || i.core.is_some() || i.gpu_core.is_some())
            .count()
    }

    /// Whether the run failed as a whole: some input had an error and none
    /// could be analysed.
    pub fn nothing_analysed(&self) -> bool {
        self.has_input_errors() && self.analysed_inputs() == 0
    }

    /// Whether no byte of any input was read: no input at all (an empty
    /// directory), or every one skipped (binary data, special files,
    /// source code, paths left out) or unreadable. Such a run has nothing
    /// to say about the job, which is not the same as a clean one.
    pub fn nothing_read(&self) -> bool {
        self.inputs.iter().all(|i| {
            matches!(i.kind, InputKind::Directory | InputKind::Unreadable)
                || (i.kind == InputKind::Binary && i.bytes == 0 && i.lines == 0)
        })
    }
}
