//! `coroner run -- CMD ...`: runs a command, passes its output through
//! unchanged, keeps a bounded copy, and when the command fails analyses
//! what it printed (and the dumps and cores it left) and prints the
//! verdict on standard error. Exits with the command's own status.

use super::load_rules;
use crate::args::{ReportFormat, RunArgs};
use crate::exit::ExitCode;
use crate::output;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The exit status `run` ends with: the command's code, 128 + the signal
/// that killed it, or ours when it could not be started.
pub enum Status {
    Code(u8),
    Tool(ExitCode),
}

pub fn run(args: &RunArgs) -> Status {
    let Some(rules) = load_rules(&args.rule_args) else {
        return Status::Tool(ExitCode::ToolError);
    };
    let Some((program, rest)) = args.command.split_first() else {
        return Status::Tool(ExitCode::ToolError);
    };
    let started = SystemTime::now();
    let mut child = match Command::new(program)
        .args(rest)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            output::eprint(&format!(
                "coroner: cannot run `{}`: {e}\n",
                coroner_model::inert(&program.to_string_lossy())
            ));
            return Status::Tool(ExitCode::ToolError);
        }
    };
    // Ctrl-C and SIGTERM reach the command (same process group); coroner
    // stays to report what it printed.
    let _ = ctrlc::set_handler(|| {});
    let kept = Arc::new(Mutex::new(Kept::new(args.keep)));
    let mut copiers = Vec::new();
    if let Some(out) = child.stdout.take() {
        copiers.push(tee(out, std::io::stdout(), Arc::clone(&kept)));
    }
    if let Some(err) = child.stderr.take() {
        copiers.push(tee(err, std::io::stderr(), Arc::clone(&kept)));
    }
    for c in copiers {
        let _ = c.join();
    }
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            output::eprint(&format!("coroner: lost the command: {e}\n"));
            return Status::Tool(ExitCode::ToolError);
        }
    };
    let code = exit_code(&status);
    if code == 0 {
        return Status::Code(0);
    }
    let captured = kept.lock().map(|k| k.bytes()).unwrap_or_default();
    let scratch = std::env::temp_dir().join(format!("coroner-run-{}.log", std::process::id()));
    if let Err(e) = std::fs::write(&scratch, &captured) {
        output::eprint(&format!("coroner: cannot keep the command's output: {e}\n"));
        return Status::Code(code);
    }
    let mut paths = vec![scratch.to_string_lossy().into_owned()];
    paths.extend(
        args.log_dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned()),
    );
    paths.extend(
        left_behind(started)
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned()),
    );
    let names = [(scratch.clone(), "command output".to_owned())];
    let host_core = coroner_hostcore::Options::default();
    let options = coroner_analyze::Options {
        host_core: Some(&host_core),
        file_names: &names,
        ..coroner_analyze::Options::default()
    };
    let report = coroner_analyze::analyze_with(&paths, &rules, options);
    let _ = std::fs::remove_file(&scratch);
    let text = match args.format {
        ReportFormat::Json => coroner_report::json::render(&report),
        ReportFormat::Markdown => coroner_report::markdown::render(&report),
        _ => coroner_report::human::render(&report, output::stderr_style()),
    };
    output::eprint(&format!(
        "\ncoroner: the command failed ({}); what it printed says:\n\n{text}",
        describe(&status)
    ));
    Status::Code(code)
}

/// Copies `from` to `to` as it arrives, keeping a copy in `kept`.
fn tee<R, W>(mut from: R, mut to: W, kept: Arc<Mutex<Kept>>) -> std::thread::JoinHandle<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            // A reader of our output that went away does not stop the
            // command: its output is still kept.
            let _ = to.write_all(&buf[..n]).and_then(|()| to.flush());
            if let Ok(mut k) = kept.lock() {
                k.push(&buf[..n]);
            }
        }
    })
}

/// The first and the last bytes of a stream, `limit` in all: where a
/// job's configuration and its death are.
struct Kept {
    limit: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl Kept {
    fn new(limit: usize) -> Kept {
        Kept {
            limit: limit.max(2),
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            dropped: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let head_room = (self.limit / 2).saturating_sub(self.head.len());
        if head_room > 0 {
            let take = head_room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        let tail_limit = self.limit - self.limit / 2;
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(tail_limit);
        if over > 0 {
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut all = self.head.clone();
        if self.dropped > 0 {
            all.extend_from_slice(
                format!(
                    "\n[coroner: {} bytes of output left out here]\n",
                    self.dropped
                )
                .as_bytes(),
            );
        }
        all.extend(self.tail.iter());
        all
    }
}

#[cfg(unix)]
fn exit_code(status: &std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
        (None, Some(sig)) => u8::try_from((128 + sig) & 0xff).unwrap_or(1),
        (None, None) => 1,
    }
}

#[cfg(not(unix))]
fn exit_code(status: &std::process::ExitStatus) -> u8 {
    status
        .code()
        .map_or(1, |c| u8::try_from(c & 0xff).unwrap_or(1))
}

fn describe(status: &std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("killed by signal {sig}");
        }
    }
    status.code().map_or_else(
        || "no exit status".to_owned(),
        |c| format!("exit status {c}"),
    )
}

/// Dumps and cores the command left since `since`: PyTorch's
/// flight-recorder files (`TORCH_NCCL_DEBUG_INFO_TEMP_FILE`, default
/// `/tmp/nccl_trace_rank_`) and core files where the kernel's
/// `core_pattern` writes them. At most 64 files.
fn left_behind(since: SystemTime) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let fr_prefix = std::env::var("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
        .unwrap_or_else(|_| "/tmp/nccl_trace_rank_".to_owned());
    let fr_prefix = PathBuf::from(fr_prefix);
    if let (Some(dir), Some(stem)) = (fr_prefix.parent(), fr_prefix.file_name()) {
        let stem = stem.to_string_lossy().into_owned();
        newer_files(dir, since, |name| name.starts_with(&stem), &mut found);
    }
    if let Some(dir) = core_dir() {
        newer_files(&dir, since, |name| name.starts_with("core"), &mut found);
    }
    found.sort();
    found.dedup();
    found.truncate(64);
    found
}

/// The directory core files go to: that of a `core_pattern` that is a
/// path (not a pipe to a handler), else the current directory.
fn core_dir() -> Option<PathBuf> {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let pattern = pattern.trim();
    if pattern.starts_with('|') {
        return None;
    }
    match Path::new(pattern).parent() {
        Some(dir) if pattern.starts_with('/') => Some(dir.to_path_buf()),
        _ => std::env::current_dir().ok(),
    }
}

fn newer_files(
    dir: &Path,
    since: SystemTime,
    wanted: impl Fn(&str) -> bool,
    out: &mut Vec<PathBuf>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten().take(100_000) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !wanted(&name) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_file() && meta.modified().is_ok_and(|m| m >= since) {
            out.push(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;

    #[test]
    fn keeps_the_start_and_the_end_within_the_limit() {
        let mut k = Kept::new(10);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qrst"] {
            k.push(chunk);
        }
        let text = String::from_utf8(k.bytes()).unwrap_or_default();
        assert!(text.starts_with("abcde"), "{text}");
        assert!(text.ends_with("pqrst"), "{text}");
        assert!(text.contains("10 bytes of output left out"), "{text}");
    }
}
