/// What the process exit status means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Nothing at or above the `--fail-on` threshold.
    Clean = 0,
    /// Findings at or above the threshold (or failing rule examples).
    Findings = 1,
    /// coroner could not do its job: no input could be analysed, a bad
    /// rule file, bad arguments.
    ToolError = 2,
}
