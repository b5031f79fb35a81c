use clap::{Args, Parser, Subcommand, ValueEnum};
use coroner_ingest::Selection;
use coroner_model::{inert, Severity};
use std::path::PathBuf;

/// Tells you why a GPU training job died.
#[derive(Debug, Parser)]
#[command(
    name = "coroner",
    version,
    long_version = crate::version::long(),
    about,
    max_term_width = 100,
    after_help = EXAMPLES
)]
pub struct Cli {
    /// When to colour output: `auto` colours a terminal unless `NO_COLOR`
    /// is set or `TERM=dumb`, and a pipe when `CLICOLOR_FORCE` or
    /// `FORCE_COLOR` is set.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "\
Examples:
  coroner analyze ./run-42/                     a run directory: logs, dumps, cores
  kubectl logs job/train | coroner analyze -    a pipe
  coroner analyze --format sarif=coroner.sarif --format markdown=summary.md logs/
  coroner run -- torchrun --nproc-per-node 8 train.py
  coroner explain 700        coroner explain \"xid 79\"        coroner explain 137";

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
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
    /// Run a command, pass its output through, and when it fails say why.
    Run(RunArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), for `man -l -` or a man directory.
    Man,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Also analyse the files under DIR when the command fails (a
    /// torchrun `--log-dir`, a directory of dumps; repeatable).
    #[arg(long = "log-dir", value_name = "DIR")]
    pub log_dirs: Vec<PathBuf>,
    /// Keep at most this many bytes of the command's output for the
    /// analysis (its start and its end are kept).
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub keep: usize,
    /// Report format written to standard error when the command fails.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
    #[command(flatten)]
    pub rule_args: RuleArgs,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
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
    /// Read settings from FILE (a coroner.toml, or a pyproject.toml with a
    /// [tool.coroner] table) instead of discovering one.
    #[arg(long = "config", value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Do not look for a coroner.toml or [tool.coroner].
    #[arg(long)]
    pub no_config: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// What to explain: `700`, `CUDA_ERROR_ILLEGAL_ADDRESS`,
    /// `cudaErrorIllegalAddress`, "an illegal memory access was
    /// encountered", `xid 79`, `ncclSystemError`,
    /// `CUBLAS_STATUS_NOT_INITIALIZED`, a rule id.
    #[arg(required = true, num_args = 1.., value_name = "THING", allow_negative_numbers = true)]
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
    /// Output format, and where it goes: `FORMAT` to standard output (or
    /// to --output), `FORMAT=FILE` to FILE (repeatable: one to standard
    /// output, any number to files). Formats: human, json, sarif, github,
    /// markdown, junit, jsonl, html [default: human].
    #[arg(long, value_name = "FORMAT[=FILE]", value_parser = parse_target)]
    pub format: Vec<Target>,
    /// Write the report that would go to standard output to FILE.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit with 0 even when findings reach --fail-on (a tool error is
    /// still 2).
    #[arg(long)]
    pub exit_zero: bool,
    /// The name standard input goes by in the report (locations in SARIF,
    /// annotations); a rank in it, as in `rank3.log`, is its rank.
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<String>,
    /// Exit with 1 when a finding has at least this severity (after
    /// --baseline and --ignore) [default: error, or `fail_on` of
    /// coroner.toml].
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<Severity>,
    /// Print only the one-line verdict, whatever the format.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Show everything in the human report: each finding in full, every
    /// step, however long (it is otherwise kept no longer than the log).
    #[arg(short, long)]
    pub verbose: bool,
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

/// One report of `coroner analyze`: a format and the file it goes to
/// (`None`: standard output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub format: ReportFormat,
    pub file: Option<PathBuf>,
}

fn parse_target(s: &str) -> Result<Target, String> {
    let (name, file) = match s.split_once('=') {
        Some((name, file)) if !file.is_empty() => (name, Some(PathBuf::from(file))),
        Some(_) => return Err(format!("`{}` names no file after `=`", inert(s))),
        None => (s, None),
    };
    let format = ReportFormat::from_str(name, true).map_err(|_| {
        let known: Vec<String> = ReportFormat::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_owned()))
            .collect();
        format!(
            "unknown format `{}` (one of {})",
            inert(name),
            known.join(", ")
        )
    })?;
    Ok(Target { format, file })
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
    /// One self-contained HTML page: the verdict, a timeline with a lane
    /// per rank, the curves behind a trend, memory maps and core dumps.
    Html,
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
    s.parse::<Severity>()
        .map_err(|e| inert(&e.to_string()).into_owned())
}
