use clap::{Args, Parser, Subcommand, ValueEnum};
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
    /// With none, standard input is read when it is not a terminal.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Output format [default: human on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Exit with 1 when a finding has at least this severity.
    #[arg(long, value_name = "SEVERITY", default_value = "error", value_parser = parse_severity)]
    pub fail_on: Severity,
    #[command(flatten)]
    pub rule_args: RuleArgs,
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
