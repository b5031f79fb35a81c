use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A command for the built binary, run from the repository root so that
/// input paths in reports are relative and stable.
pub fn coroner() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coroner"));
    cmd.current_dir(root()).env("NO_COLOR", "1");
    cmd
}

/// `coroner analyze --follow --format jsonl FILE`, its output piped.
pub fn follow_jsonl(file: &str) -> Command {
    let mut command = coroner();
    command
        .args(["analyze", "--follow", "--format", "jsonl", file])
        .stdout(std::process::Stdio::piped());
    command
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> String {
    let path = Path::new("fixtures/real-gpu").join(rel);
    assert!(
        root().join(&path).exists(),
        "missing fixture {}",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// Runs the binary with `args`, feeding `stdin` if given.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = coroner();
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn coroner");
    if let Some(data) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    child.wait_with_output().expect("wait for coroner")
}

/// Runs `analyze --format json` and parses the report.
pub fn analyze_json(args: &[&str]) -> (serde_json::Value, i32) {
    let mut all = vec!["analyze", "--format", "json"];
    all.extend_from_slice(args);
    let out = run(&all, None);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code().unwrap_or(-1))
}

/// A scratch directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("coroner-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    pub fn display(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The built-in rules, loaded once per caller for in-process analysis.
pub fn builtin_rules() -> coroner_rules::RuleSet {
    coroner_rules::RuleSet::load(&coroner_rules::RuleSources {
        builtin: true,
        dirs: Vec::new(),
        builtin_names: true,
    })
    .unwrap_or_else(|e| panic!("built-in rules: {e:?}"))
}
