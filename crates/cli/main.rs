//! The `coroner` command: parses arguments, runs a command, maps the
//! outcome to an exit code. All the work happens in the library crates.
#![forbid(unsafe_code)]

mod args;
mod commands;
mod config;
mod exit;
mod output;
mod usage;
mod version;

use exit::ExitCode;

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match usage::parse(&args) {
        Ok(cli) => cli,
        Err(code) => return std::process::ExitCode::from(code),
    };
    output::set_color(cli.color);
    let code = match cli.command {
        args::Command::Analyze(a) => commands::analyze::run(&a),
        args::Command::Rules(r) => commands::rules::run(&r),
        args::Command::Explain(e) => commands::explain::run(&e),
        args::Command::Baseline(args::BaselineCommand::Create(b)) => commands::baseline::create(&b),
        args::Command::Completions { shell } => commands::completions(shell),
        args::Command::Man => commands::man(),
        args::Command::Run(r) => match commands::run::run(&r) {
            commands::run::Status::Code(c) => return std::process::ExitCode::from(c),
            commands::run::Status::Tool(code) => code,
        },
    };
    code.into()
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}
