use clap::{Args, Parser, Subcommand, ValueEnum};
use coroner_ingest::Selection;
use coroner_model::Severity;
use std::path::PathBuf;

/// Tells you why a GPU training job died.
#[derive(Debug, Parser)]
#[command(name = "coroner", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse what a failed job left behind and name its root cause.
    Analyze(AnalyzeArgs),
    /// List, show, test and validate rules.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Explain a CUDA error code, an Xid, an NCCL, cuBLAS or cuDNN status,
    /// an error message, or a rule, offline.
    Explain(ExplainArgs),
    /// Record the findings of known logs so that `analyze --baseline`
    /// leaves them out.
    #[command(subcommand)]
    Baseline(BaselineCommand),
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Analyse PATHs and write a baseline of every finding.
    Create(BaselineCreateArgs),
}

#[derive(Debug, Args)]
pub struct BaselineCreateArgs {
    /// Files, directories (walked recursively) or `-` for standard input.
    /// With none, standard input is read when it is not a terminal. In a
    /// directory, source code, notebooks, configs and docs are skipped
    /// (by name, and by content for `.log`, `.txt` and other files), and
    /// a `.coronerignore` (gitignore syntax) leaves out the paths it
    /// names; a file named here is always read.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Write the baseline to FILE [default: standard output].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub walk: WalkArgs,
    /// Leave the findings of rule RULE out of the baseline (repeatable;
    /// replaces `ignore` of coroner.toml).
    #[arg(long = "ignore", value_name = "RULE")]
    pub ignore: Vec<String>,
    #[command(flatten)]
    pub rule_args: RuleArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Which files of a walked directory are read.
#[derive(Debug, Args, Clone, Default)]
pub struct WalkArgs {
    /// Read the files of walked directories that match GLOB, even source
    /// code, notebooks, configs and docs, and those a .coronerignore
    /// leaves out (repeatable; gitignore syntax, relative to the
    /// directory: `notes.md`, `logs/*.py`, `docs/`).
    #[arg(long = "include", value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out the files and directories of walked directories that
    /// match GLOB (repeatable; gitignore syntax, relative to the
    /// directory: `*.bak`, `checkpoints/`); wins over --include.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
}

impl WalkArgs {
    /// The globs, checked. `Err` names the one that is not a glob.
    pub fn selection(&self) -> Result<Selection, String> {
        Selection::new(&self.include, &self.exclude).map_err(|e| e.to_string())
    }
}

/// Where the configuration file comes from.
#[derive(Debug, Args, Clone, Default)]
pub struct ConfigArgs {
    /// Read settings from FILE instead of discovering coroner.toml.
    #[arg(long = "config", value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Do not look for a coroner.toml.
    #[arg(long)]
    pub no_config: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// What to explain: `700`, `CUDA_ERROR_ILLEGAL_ADDRESS`,
    /// `cudaErrorIllegalAddress`, "an illegal memory access was
    /// encountered", `xid 79`, `ncclSystemError`,
    /// `CUBLAS_STATUS_NOT_INITIALIZED`, a rule id.
    #[arg(required = true, num_args = 1.., value_name = "THING")]
    pub thing: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    #[command(flatten)]
    pub rule_args: RuleArgs,
}

/// Where rules come from.
#[derive(Debug, Args, Clone)]
pub struct RuleArgs {
    /// Add the rule files under DIR (repeatable).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Do not load the built-in rules.
    #[arg(long)]
    pub no_builtin_rules: bool,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Files, directories (walked recursively) or `-` for standard input.
    /// With none, standard input is read when it is not a terminal. In a
    /// directory, source code, notebooks, configs and docs are skipped
    /// (by name, and by content for `.log`, `.txt` and other files), and
    /// a `.coronerignore` (gitignore syntax) leaves out the paths it
    /// names; a file named here is always read.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Output format [default: human on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Exit with 1 when a finding has at least this severity (after
    /// --baseline and --ignore) [default: error, or `fail_on` of
    /// coroner.toml].
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<Severity>,
    /// Print only the one-line verdict, whatever the format.
    #[arg(short, long)]
    pub quiet: bool,
    /// Follow one growing input (a file being written, or `-`): report
    /// each finding as it appears, and the verdict when the input ends or
    /// on Ctrl-C.
    #[arg(long)]
    pub follow: bool,
    /// Leave out the findings recorded in FILE (made by `coroner baseline
    /// create`); the root cause is chosen from what is left.
    #[arg(long, value_name = "FILE", conflicts_with = "no_baseline")]
    pub baseline: Option<PathBuf>,
    /// Do not use the baseline named in coroner.toml.
    #[arg(long)]
    pub no_baseline: bool,
    /// Leave out the findings of rule RULE (repeatable; replaces `ignore`
    /// of coroner.toml).
    #[arg(long = "ignore", value_name = "RULE")]
    pub ignore: Vec<String>,
    /// Make file paths in sarif and github output relative to DIR
    /// [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub path_prefix: Option<PathBuf>,
    #[command(flatten)]
    pub walk: WalkArgs,
    #[command(flatten)]
    pub core_args: CoreArgs,
    #[command(flatten)]
    pub rule_args: RuleArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Where the binaries that host core dumps name are, when they are not at
/// the paths recorded in the core.
#[derive(Debug, Args, Clone, Default)]
pub struct CoreArgs {
    /// The executable that dumped core, when it is not at the path the core
    /// records (a core copied off the machine it crashed on).
    #[arg(long, value_name = "PATH")]
    pub exe: Option<PathBuf>,
    /// Look for the core's libraries under DIR as a root: a library
    /// recorded as /usr/lib/x/libc.so.6 is looked for at DIR/usr/lib/x/libc.so.6
    /// (repeatable; a copy of the crashed machine's or container's files).
    #[arg(long, value_name = "DIR")]
    pub sysroot: Vec<PathBuf>,
    /// Look for separate debug files under DIR, by build id
    /// (DIR/.build-id/ab/cdef....debug) and by file name (repeatable).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
}

impl CoreArgs {
    /// The host core reader's options.
    pub fn options(&self) -> coroner_hostcore::Options {
        coroner_hostcore::Options {
            exe: self.exe.clone(),
            sysroots: self.sysroot.clone(),
            debug_dirs: self.debug_dir.clone(),
        }
    }
}

/// The formats of `coroner analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Readable report for a terminal.
    Human,
    /// The versioned JSON report.
    Json,
    /// SARIF 2.1.0, for code scanning (GitHub upload-sarif).
    Sarif,
    /// GitHub Actions workflow commands (annotations) and a verdict.
    Github,
    /// A Markdown summary ($GITHUB_STEP_SUMMARY, merge-request comments).
    Markdown,
    /// JUnit XML (GitLab, Jenkins test reports).
    Junit,
    /// JSON Lines: each finding as soon as it is seen, then the verdict.
    Jsonl,
}

#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// List the loaded rules.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        #[command(flatten)]
        rule_args: RuleArgs,
    },
    /// Print one rule's file.
    Show {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        rule_args: RuleArgs,
    },
    /// Run the firing and quiet examples of the rules in DIR (the
    /// built-in rules when DIR is absent).
    Test {
        /// A directory of rule files.
        dir: Option<PathBuf>,
        /// Do not load the built-in rules alongside DIR.
        #[arg(long)]
        no_builtin_rules: bool,
    },
    /// Check the rule files in DIR without running their examples.
    Validate {
        /// A directory of rule files.
        dir: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Readable report for a terminal.
    Human,
    /// The versioned JSON report.
    Json,
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    s.parse::<Severity>().map_err(|e| e.to_string())
}
