//! Rule files generated from the tables, so that every CUDA code and every
//! Xid is recognised in a log without writing one rule per code.
//!
//! One rule per category: `cuda-error-<category>` matches the runtime and
//! driver names, `CUDA error: <message>` and `CUDA error <number>` forms,
//! glog's `Check failed: error == cudaSuccess (<number> vs. 0) <message>`
//! (mshadow's with `Name: <kernel> ErrStr:` before the message),
//! THC's `THCudaCheck FAIL ... error=<number> : <message>`, Caffe2's
//! `error == cudaSuccess. <number> vs 0. Error at: <file>: <message>`,
//! Triton's `Triton Error [CUDA]: <message>`, the CUDA samples' `(error
//! code <message>)`, "CUDA by Example"'s `<message> in <file>.cu at line
//! <n>`, RELION's `... (error-code <n>)`, the old SDK's cutil checks
//! (`Cuda error in file '<f>' in line <n> : <message>.`, `Runtime API
//! error <number>: <message>.`) and the samples' `getLastCudaError`,
//! the widely copied `code: <number>, reason: <message>` check (dlib's
//! too),
//! PyTorch's `Unexpected error from cudaGetDeviceCount() ... Error <number>:
//! <message>` warning
//! (and, for distinctive messages, the bare message) of every code of that
//! category; `xid-<category>` matches `NVRM: Xid (PCI:...): <code>` kernel
//! lines. The CUDA rules are fallbacks: a hand-written rule that matches
//! the same line wins. Examples use the driver's own names and messages;
//! lines that hand-written rules already recognise are left out (the
//! caller says which).

use crate::entry::{Entry, EntryKind};
use crate::tables::Knowledge;
use coroner_model::{ActionKind, Category, Severity};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A rule file to write under `rules/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedRule {
    /// Path relative to the repository root.
    pub path: String,
    /// The file's contents.
    pub text: String,
}

/// Messages at least this long, naming no generic condition, are matched
/// even without a `CUDA error` prefix; shorter ones only where the table
/// marks them `distinctive`.
const DISTINCTIVE_MESSAGE: usize = 30;

/// The generated rule files. `recognised(line)` tells whether a line is
/// already recognised by another rule; such lines are not used as firing
/// examples.
pub fn generated_rules(k: &Knowledge, recognised: &dyn Fn(&str) -> bool) -> Vec<GeneratedRule> {
    let mut out = Vec::new();
    let owners = message_owners(k);
    for ((category, severity), codes) in group(
        k.of_kind(EntryKind::CudaError)
            .filter(|e| e.severity > Severity::Info),
    ) {
        if let Some(rule) = cuda_rule(category, severity, &codes, &owners, recognised) {
            out.push(rule);
        }
    }
    // Xid 154 only annotates another Xid; the recovery action it names is
    // read by hand-written rules.
    let xids = k
        .of_kind(EntryKind::Xid)
        .filter(|e| !e.immediate.iter().any(|b| b == "XID_154"));
    let mut by_action: BTreeMap<(Category, Severity, ActionKind), Vec<&Entry>> = BTreeMap::new();
    for ((category, severity), entries) in group(xids) {
        for e in entries {
            by_action
                .entry((category, severity, e.action))
                .or_default()
                .push(e);
        }
    }
    let mut by_category: BTreeMap<Category, Vec<&Entry>> = BTreeMap::new();
    for ((category, severity, action), xids) in by_action {
        out.push(xid_rule(category, severity, action, &xids));
        by_category.entry(category).or_default().extend(xids);
    }
    for (category, mut xids) in by_category {
        xids.sort_by_key(|e| e.code);
        out.push(device_plugin_rule(category, &xids));
    }
    out
}

/// The code each message is read as. CUDA gives two codes of different
/// categories the same text (`device kernel image is invalid` is both 200,
/// an image the device cannot run, and 300, JIT source that failed to
/// compile); the message alone is read as the lower code, the one a launch
/// reports, and the other is still read by its number and name.
fn message_owners(k: &Knowledge) -> BTreeMap<&str, i64> {
    let mut owners: BTreeMap<&str, i64> = BTreeMap::new();
    for e in k.of_kind(EntryKind::CudaError) {
        if let (Some(message), Some(code)) = (e.message.as_deref(), e.code) {
            let owner = owners.entry(message).or_insert(code);
            *owner = (*owner).min(code);
        }
    }
    owners
}

/// Entries by category and severity, so that each rule has the severity
/// of every code it matches.
fn group<'a>(
    entries: impl Iterator<Item = &'a Entry>,
) -> BTreeMap<(Category, Severity), Vec<&'a Entry>> {
    let mut groups: BTreeMap<(Category, Severity), Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        groups.entry((e.category, e.severity)).or_default().push(e);
    }
    for list in groups.values_mut() {
        // Sticky before not, then by number.
        list.sort_by_key(|e| (!e.sticky.unwrap_or(false), e.code));
    }
    groups
}

/// The first thing to do about a CUDA error of `category`, in one short
/// imperative sentence: the report's next step. The general advice (look
/// the code up, rerun synchronously) and the code's own fixes follow it.
/// A warning's codes (a status, or a call made while the process exits)
/// have no step of their own.
fn first_step(category: Category, severity: Severity) -> Option<&'static str> {
    if severity < Severity::Error {
        return None;
    }
    Some(match category {
        Category::NoKernelImage => "Install a build of the framework, or rebuild the extension, with code for this GPU's architecture.",
        Category::DriverTooOld => "Upgrade the NVIDIA driver, or install a framework build for a CUDA release the installed driver supports.",
        Category::CudaUnavailable => "Run `nvidia-smi` where the job ran; if it fails, fix the driver or the container's access to the GPU first.",
        Category::CudaDriverOom => "Free GPU memory: stop other processes on the GPU (`nvidia-smi`), or lower the batch size.",
        Category::LaunchFailure => "Rerun with `CUDA_LAUNCH_BLOCKING=1` to find the call that failed, and check its launch configuration and arguments.",
        Category::IllegalMemoryAccess => "Rerun with `CUDA_LAUNCH_BLOCKING=1`, or under `compute-sanitizer`, to find the kernel that touched memory out of bounds.",
        Category::DeviceSideAssert => "Rerun with `CUDA_LAUNCH_BLOCKING=1` to find the op whose assertion failed, and check the indices and labels it was given.",
        Category::EccError => "Drain the node and check the GPU's ECC counters (`nvidia-smi -q -d ECC,ROW_REMAPPER`) before it runs jobs again.",
        Category::XidHardware | Category::NvlinkError => "Drain the node and check the kernel log for Xid errors (`dmesg -T | grep -i xid`) before the GPU runs jobs again.",
        Category::LibraryMismatch => "Reinstall so that the framework, its CUDA libraries and the driver belong to one CUDA release.",
        Category::InvalidDevice => "Ask for a GPU that exists: compare the device index and `CUDA_VISIBLE_DEVICES` with `nvidia-smi -L`.",
        Category::GpuContention => "Stop the other process that holds the GPU (`nvidia-smi`), or set the GPU's compute mode back to Default.",
        Category::FileNotFound => "Check that the file the CUDA call loads (a module, fatbin or PTX) exists at the path it was given.",
        Category::NcclConfig => "Disable GPU peer-to-peer (`NCCL_P2P_DISABLE=1`) to go on, or enable peer access on the platform (ACS, IOMMU, a VM's settings).",
        Category::PermissionDenied => "Give the job access to the GPU's device files (`/dev/nvidia*`): run the container with `--gpus`, or fix the device permissions.",
        _ => return None,
    })
}

/// `<prefix>-<category>`, with `-<severity>` unless the severity is error.
fn rule_id(prefix: &str, category: Category, severity: Severity) -> String {
    let category = category.as_str().trim_start_matches("xid-");
    match severity {
        Severity::Error => format!("{prefix}-{category}"),
        other => format!("{prefix}-{category}-{other}"),
    }
}

fn cuda_rule(
    category: Category,
    severity: Severity,
    codes: &[&Entry],
    owners: &BTreeMap<&str, i64>,
    recognised: &dyn Fn(&str) -> bool,
) -> Option<GeneratedRule> {
    // The messages this rule reads: those of its codes that no lower code
    // of another category shares.
    fn owned<'e>(e: &&'e Entry, owners: &BTreeMap<&str, i64>) -> Option<&'e str> {
        let message = e.message.as_deref()?;
        (owners.get(message).copied() == e.code).then_some(message)
    }
    let mut examples = Vec::new();
    for e in codes {
        let (Some(message), Some(name)) = (&e.message, e.names.first()) else {
            continue;
        };
        let code = e.code.unwrap_or_default().to_string();
        let owns = owned(e, owners).is_some();
        for (line, what) in [
            (format!("{name}: {message}"), name.clone()),
            (
                format!("torch.AcceleratorError: CUDA error: {message}"),
                message.clone(),
            ),
            (format!("CUDA error {code}"), code),
        ] {
            let by_message = what == *message;
            if examples.len() < 2 && !recognised(&line) && (owns || !by_message) {
                examples.push((line, what));
            }
        }
    }
    if examples.is_empty() {
        return None;
    }
    let names: Vec<&str> = codes
        .iter()
        .flat_map(|e| e.names.iter().map(String::as_str))
        .collect();
    let messages: Vec<&str> = unique(codes.iter().filter_map(|e| owned(e, owners)));
    let numbers: Vec<String> = codes
        .iter()
        .filter_map(|e| e.code)
        .map(|c| c.to_string())
        .collect();
    let distinctive: Vec<&str> = unique(
        codes
            .iter()
            .filter(|e| e.distinctive)
            .filter_map(|e| owned(e, owners))
            .chain(
                messages
                    .iter()
                    .copied()
                    .filter(|m| m.len() >= DISTINCTIVE_MESSAGE),
            ),
    );
    let mut any = vec![
        format!(r"\b(?P<what>{})\b", alternation(&names)),
        // `CUDA error: <message>`, CNTK's and ONNX Runtime's `CUDA
        // failure <number>: <message> ; GPU=...`, and NCCL's quoted `Cuda
        // failure 'invalid argument'` (`Cuda failure 1 '...'` since 2.19).
        format!(
            r"(?i:CUDA (?:error|failure)s?)(?: \d+)?:? +(?:\\?')?(?P<what>{})",
            alternation(&messages)
        ),
        // glog's check of a runtime call (Caffe, Caffe2, Detectron, MXNet
        // plugins): `Check failed: error == cudaSuccess (2 vs. 0)  out of
        // memory`. The number is left open: runtimes before CUDA 10.1
        // numbered the codes otherwise (8 for `invalid device function`),
        // and the message says which error it is. mshadow (MXNet) names
        // the kernel first: `(8 vs. 0) Name: MapPlanKernel ErrStr:invalid
        // device function`; MXNet 1.x puts a colon before it, with or
        // without the word: `(77 vs. 0) : Name: MapPlanKernel ErrStr:…`,
        // `(2 vs. 0) : mxnet_generic_kernel ErrStr:out of memory`.
        format!(
            r"== cudaSuccess \( *\d+ vs\. 0 *\) *(?::\s*)?(?:(?:Name:\s*)?\S+ ErrStr: ?)?(?P<what>{})",
            alternation(&messages)
        ),
        // PyTorch before 1.0 (THC): `THCudaCheck FAIL file=<f> line=<n>
        // error=30 : unknown error` and `cuda runtime error (30) : unknown
        // error at <file>`, with the codes of their CUDA release.
        format!(
            r"(?:THCudaCheck FAIL file=\S+ line=\d+ error=\d+|cuda runtime error \(\d+\)) : (?P<what>{})",
            alternation(&messages)
        ),
        // Triton's driver calls: `Triton Error [CUDA]: out of memory`.
        format!(
            r"Triton Error \[CUDA\]: (?P<what>{})",
            alternation(&messages)
        ),
        // Caffe2's enforce: `error == cudaSuccess. 8 vs 0. Error at:
        // <file>:<line>: invalid device function`.
        format!(
            r"== cudaSuccess\. \d+ vs 0\. Error at: \S+?: (?P<what>{})",
            alternation(&messages)
        ),
        format!(
            r"(?i:\bCUDA (?:runtime |driver )?error(?: code)?) *[:=(]? *(?P<what>{})\b",
            numbers.join("|")
        ),
        // TensorRT's builder and runtime: `CUDA initialization failure with
        // error: 35. Please check your CUDA installation`.
        format!(
            r"CUDA initialization failure with error:? (?P<what>{})\b",
            numbers.join("|")
        ),
        // The driver's initialisation result as programs print it: the
        // CUDA samples' deviceQueryDrv and the tools copied from it
        // (`cuInit(0) returned 100`), Ollama's GPU discovery (`cuInit err:
        // 802`, `cuda driver library init failure: 999`, earlier `nvcuda
        // init failure: 999`, and through the runtime library before 0.1.32:
        // `cudart init failure: 35`, `cudaSetDevice err: 35`).
        format!(
            r"(?:\bcuInit(?:\(0\))?(?: returned| err:)|\bcudaSetDevice err:|\b(?:cuda driver library|nvcuda|cudart) init failure:) *(?P<what>{})\b",
            numbers.join("|")
        ),
        // A runtime call's code as NVIDIA DIGITS and other C programs print
        // it: `cudaRuntimeGetVersion() failed with error #35`.
        format!(
            r"\bcu(?:da)?[A-Z]\w*\(\) failed with error #(?P<what>{})\b",
            numbers.join("|")
        ),
        // cuDNN's own check of the driver call that launched its kernel, in
        // its error text: `failed with message: err 700 != CUDA_SUCCESS ::
        // shimCuLaunchKernelEx(...)` (`CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER`).
        format!(r"\berr (?P<what>{}) != CUDA_SUCCESS\b", numbers.join("|")),
        // spconv 1.x and tensorview's check of a runtime call
        // (`TV_CHECK_CUDA_ERR`): `<file> <line>` then `cuda execution failed
        // with error 2`.
        format!(
            r"\bcuda execution failed with error (?P<what>{})\b",
            numbers.join("|")
        ),
        // Charm++'s check of a runtime call (`hapiCheck`): `Fatal CUDA Error
        // at cuda-hybrid-api.cu:450.` then `Return value 46 from
        // 'cudaStreamCreate(&kernel_stream)'.`
        format!(
            r"\bReturn value (?P<what>{}) from '(?:cuda|cu)[A-Z]\w*\(",
            numbers.join("|")
        ),
        // The CUDA samples' check, copied into many programs: `Failed to
        // allocate device vector A (error code out of memory)!`.
        format!(r"\(error code (?P<what>{})\)", alternation(&messages)),
        // The check of "CUDA by Example" (`book.h`), copied into many
        // programs: `out of memory in kernel.cu at line 41`; RELION's adds
        // the code: `ERROR: out of memory in .../acc_backprojector_impl.h at
        // line 37 (error-code 2)`.
        format!(
            r"(?P<what>{}) in \S+?(?:\.cuh?(?: at line \d+)|(?: at line \d+) \(error-code \d+\))",
            alternation(&messages)
        ),
        // The old CUDA SDK's cutil checks, still copied into programs:
        // `Cuda error in file 'kernel.cu' in line 88 : out of memory.`
        // (`CUDA_SAFE_CALL`; `CUT_CHECK_ERROR` puts its own words first:
        // `Cuda error: Kernel execution failed in file ...`), and
        // `cutilSafeCall() Runtime API error 2: out of memory.`; the
        // samples' `getLastCudaError`: `CUDA error : <what the caller
        // did> : (2) out of memory.`
        format!(
            r"(?i:Cuda error)(?:: [^\n]*?)? in file '[^'\n]*' in line \d+ : (?P<what>{})",
            alternation(&messages)
        ),
        format!(
            r"Runtime API error \d+: (?P<what>{})",
            alternation(&messages)
        ),
        // MSCCL++'s driver-call check: `Call to cuMemCreate(...) failed.
        // <file>:<line> (Cu failure: operation not permitted)`.
        format!(r"\(Cu failure: (?P<what>{})\)", alternation(&messages)),
        format!(
            r"(?i:CUDA error) : [^\n]*? : \(\d+\) (?P<what>{})",
            alternation(&messages)
        ),
        // The `CHECK` macro of "Professional CUDA C Programming", copied
        // into many programs (`Error: kernel.cu:41, code: 2, reason: out of
        // memory`), and dlib's `CHECK_CUDA` (`Error while calling
        // cudaMallocHost(...) in file gpu_data.cpp:181. code: 2, reason:
        // out of memory`); some copies capitalise `Code` and `Reason`.
        format!(
            r"(?:\bError: \S+:\d+, |\bin file \S+:\d+\. )(?i:code): ?\d+, (?i:reason): (?P<what>{})",
            alternation(&messages)
        ),
        // PyTorch's warning when counting devices fails: `Unexpected error
        // from cudaGetDeviceCount(). ... Error 802: system not yet initialized`.
        format!(
            r"Unexpected error from cudaGetDeviceCount\(\).*?\bError (?:{}): (?P<what>{})",
            numbers.join("|"),
            alternation(&messages)
        ),
    ];
    if !distinctive.is_empty() {
        any.push(format!("(?P<what>{})", alternation(&distinctive)));
    }
    let mut literals = vec![
        "cudaError".to_owned(),
        "CUDA_ERROR_".to_owned(),
        "CUDA error".to_owned(),
        "CUDA failure".to_owned(),
        "CUDA runtime error".to_owned(),
        "CUDA driver error".to_owned(),
        "Unexpected error from cudaGetDeviceCount".to_owned(),
        "== cudaSuccess".to_owned(),
        "THCudaCheck FAIL".to_owned(),
        "Triton Error [CUDA]".to_owned(),
        "Runtime API error".to_owned(),
        "(Cu failure: ".to_owned(),
        ", reason: ".to_owned(),
        "CUDA initialization failure".to_owned(),
        "cuInit(0) returned".to_owned(),
        "cuInit returned".to_owned(),
        "cuInit err:".to_owned(),
        "Return value ".to_owned(),
        "cuda execution failed with error".to_owned(),
        "!= CUDA_SUCCESS".to_owned(),
        "init failure:".to_owned(),
        "cudaSetDevice err:".to_owned(),
        ") failed with error #".to_owned(),
        "(error code ".to_owned(),
        " at line ".to_owned(),
    ];
    literals.extend(distinctive.iter().map(|m| (*m).to_owned()));
    let canonical = codes[0];
    let mut remediation: Vec<String> = first_step(category, severity)
        .map(str::to_owned)
        .into_iter()
        .collect();
    remediation.extend([
        "Look the exact code up with `coroner explain <name or number>`: it says what the code means, whether it is sticky (then every later CUDA call in the process fails with it too, so the first CUDA error in the log is the one to fix), its likely causes and the fixes.".to_owned(),
        "CUDA reports kernel errors asynchronously: rerun with `CUDA_LAUNCH_BLOCKING=1` so the error is raised by the call that caused it, and the traceback points at the right line.".to_owned(),
    ]);
    remediation.extend(canonical.fixes.iter().cloned());
    let id = rule_id("cuda-error", category, severity);
    let mut text = header("knowledge/cuda_error_table.tsv and knowledge/cuda-errors.toml");
    field(&mut text, "id", &id);
    field(
        &mut text,
        "title",
        &format!("A CUDA call failed: {}", category.meaning()),
    );
    field(&mut text, "category", category.as_str());
    field(&mut text, "severity", severity.as_str());
    field(
        &mut text,
        "message",
        &format!("CUDA reported {{what}}: {}", category.meaning()),
    );
    // NCCL's `Cuda failure '<message>'` is read by its own rule for any
    // message; the code's category says more, except that no usable GPU:
    // NCCL runs in a process that has used its GPU already, so there an
    // `initialization error` is CUDA used after a fork, not a missing GPU.
    let nccl_says_more = category != Category::CudaUnavailable;
    if nccl_says_more {
        text.push_str(
            "fallback = true\nsupersedes = [\"python-exception\", \"nccl-cuda-failure\"]\n",
        );
    } else {
        text.push_str("fallback = true\nsupersedes = [\"python-exception\"]\n");
    }
    list(&mut text, "remediation", &remediation);
    list(
        &mut text,
        "references",
        &unique(codes.iter().filter_map(|e| e.source.as_deref())),
    );
    text.push_str("\n[match]\n");
    list(&mut text, "literals", &literals);
    list(&mut text, "any", &any);
    // The hint line alone names a code without reporting it; a paste that
    // flattened the error and its hint onto one line still reports it.
    let mut not = vec!["^\\s*Search for `".to_owned()];
    if !nccl_says_more {
        not.push("NCCL WARN Cuda failure".to_owned());
    }
    list(&mut text, "not", &not);
    for (line, what) in &examples {
        text.push_str("\n[[examples]]\nfires = true\n");
        field(&mut text, "input", line);
        let _ = writeln!(text, "captures = {{ what = {} }}", quote(what));
    }
    text.push_str("\n[[examples]]\nfires = false\n");
    field(
        &mut text,
        "input",
        "  Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
    );
    Some(GeneratedRule {
        path: format!("rules/cuda-codes/{id}.toml"),
        text,
    })
}

fn xid_rule(
    category: Category,
    severity: Severity,
    action: ActionKind,
    xids: &[&Entry],
) -> GeneratedRule {
    let canonical = xids[0];
    let codes: Vec<String> = xids
        .iter()
        .filter_map(|e| e.code)
        .map(|c| c.to_string())
        .collect();
    let mut id = rule_id("xid", category, severity);
    if action != category.default_action() {
        id = format!("{id}-{action}");
    }
    let mut remediation = vec![format!(
        "Look the Xid up with `coroner explain xid <code>`: it says what the Xid means, its likely cause (application, driver or hardware) and the immediate action."
    )];
    remediation.extend(canonical.fixes.iter().cloned());
    remediation.push(
        "Collect evidence before resetting anything: `nvidia-smi -q` (ECC, row remapping, retired pages), `nvidia-bug-report.sh`, and the kernel log around the Xid (`dmesg -T | grep -i -E \"NVRM|Xid\"`).".to_owned(),
    );
    let mut text = header("knowledge/xid.toml");
    field(&mut text, "id", &id);
    field(
        &mut text,
        "title",
        &format!("The NVIDIA driver reported an Xid: {}", category.meaning()),
    );
    field(&mut text, "category", category.as_str());
    field(&mut text, "severity", severity.as_str());
    field(
        &mut text,
        "message",
        &format!("Xid {{xid}} on GPU {{gpu}}: {}", category.meaning()),
    );
    field(&mut text, "action", action.as_str());
    // A hand-written rule that reads more of an Xid line (an NVLink
    // error's Fatal or Nonfatal word) replaces this one on that line.
    text.push_str("fallback = true\nsupersedes = [\"xid-uncatalogued\"]\n");
    list(&mut text, "remediation", &remediation);
    list(
        &mut text,
        "references",
        &unique(xids.iter().filter_map(|e| e.source.as_deref())),
    );
    text.push_str("\n[match]\n");
    list(&mut text, "literals", &["NVRM: Xid".to_owned()]);
    list(
        &mut text,
        "any",
        &[format!(
            r"NVRM: Xid \((?P<gpu>[^)]*)\): (?P<xid>{})\b",
            codes.join("|")
        )],
    );
    let example = |code: i64| {
        format!("[ 8123.402617] NVRM: Xid (PCI:0000:01:00): {code}, pid=2096908, name=python3")
    };
    for e in xids.iter().take(2) {
        let code = e.code.unwrap_or_default();
        text.push_str("\n[[examples]]\nfires = true\n");
        field(&mut text, "input", &example(code));
        let _ = writeln!(
            text,
            "captures = {{ xid = \"{code}\", gpu = \"PCI:0000:01:00\" }}"
        );
    }
    text.push_str("\n[[examples]]\nfires = false\n");
    field(
        &mut text,
        "input",
        "[    0.510817] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)",
    );
    GeneratedRule {
        path: format!("rules/xid/{id}.toml"),
        text,
    }
}

/// The Kubernetes NVIDIA device plugin's report of a catalogued Xid
/// (`health.go`), read for the code's own category instead of the plugin
/// rule's generic one. The plugin takes the GPU out of service, so the
/// report is critical whatever the Xid's own severity.
fn device_plugin_rule(category: Category, xids: &[&Entry]) -> GeneratedRule {
    let codes: Vec<String> = xids
        .iter()
        .filter_map(|e| e.code)
        .map(|c| c.to_string())
        .collect();
    let id = format!(
        "k8s-device-plugin-xid-{}",
        category.as_str().trim_start_matches("xid-")
    );
    let mut text = header("knowledge/xid.toml");
    field(&mut text, "id", &id);
    field(
        &mut text,
        "title",
        &format!(
            "The Kubernetes NVIDIA device plugin marked a GPU unhealthy after an Xid: {}",
            category.meaning()
        ),
    );
    field(&mut text, "category", category.as_str());
    field(&mut text, "severity", Severity::Critical.as_str());
    field(
        &mut text,
        "message",
        &format!(
            "The NVIDIA device plugin saw Xid {{xid}}[[ on {{gpu}}]] and marked the GPU unhealthy: {}",
            category.meaning()
        ),
    );
    text.push_str("supersedes = [\"k8s-device-plugin-xid-critical\"]\n");
    // An application's fault (an illegal address, a failed launch) leaves
    // the GPU usable; the plugin marks it unhealthy all the same.
    let application = matches!(
        category,
        Category::IllegalMemoryAccess | Category::LaunchFailure
    );
    let first = if application {
        "Find the process whose kernel faulted (the pid on the Xid's line: `dmesg -T | grep -i xid`) and fix or rerun it; the GPU itself is usually fine."
    } else {
        "Drain the node (`kubectl drain <node> --ignore-daemonsets`) and read its kernel log around that time (`dmesg -T | grep -i xid`)."
    };
    let last = if application {
        "The plugin keeps the GPU marked unhealthy until the plugin itself restarts: restart the device plugin's pod once the faulting process is gone (reset the GPU with `nvidia-smi -r -i <n>` if it no longer works)."
    } else {
        "The plugin keeps the GPU marked unhealthy until the plugin itself restarts: after resetting the GPU (`nvidia-smi -r -i <n>`) or rebooting the node, restart the device plugin's pod, and have the hardware checked if the Xid repeats."
    };
    list(
        &mut text,
        "remediation",
        &[
            first,
            "Look the Xid up with `coroner explain xid <code>`: it says what the Xid means, its likely cause (application, driver or hardware) and the immediate action.",
            last,
        ],
    );
    list(
        &mut text,
        "references",
        &[
            "https://github.com/NVIDIA/k8s-device-plugin",
            "https://docs.nvidia.com/deploy/xid-errors/index.html",
        ],
    );
    text.push_str("\n[match]\n");
    list(&mut text, "literals", &["XidCriticalError"]);
    list(
        &mut text,
        "any",
        &[format!(
            r"XidCriticalError: Xid=(?P<xid>{})(?: on Device=(?P<gpu>[\w/-]+)|, All devices will go unhealthy)",
            codes.join("|")
        )],
    );
    let device = "GPU-3b6ec030-5adc-1847-e155-79f635584b4e";
    for code in codes.iter().take(2) {
        text.push_str("\n[[examples]]\nfires = true\n");
        field(
            &mut text,
            "input",
            &format!("I0809 13:32:51.873541       1 health.go:185] XidCriticalError: Xid={code} on Device={device}; marking device as unhealthy."),
        );
        let _ = writeln!(
            text,
            "captures = {{ xid = \"{code}\", gpu = \"{device}\" }}"
        );
    }
    // Older releases, for an event that names no GPU.
    if let Some(code) = codes.first() {
        text.push_str("\n[[examples]]\nfires = true\n");
        field(
            &mut text,
            "input",
            &format!(
                "2019/03/02 10:11:12 XidCriticalError: Xid={code}, All devices will go unhealthy."
            ),
        );
    }
    text.push_str("\n[[examples]]\nfires = false\n");
    field(
        &mut text,
        "input",
        "I0809 13:32:51.873532       1 health.go:159] Processing event {Device:{Handle:0x7e590d4986e8} EventType:8 EventData:94 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}",
    );
    GeneratedRule {
        path: format!("rules/xid/{id}.toml"),
        text,
    }
}

fn header(from: &str) -> String {
    format!(
        "# Generated from {from} by the coroner-knowledge crate.\n\
         # Edit the table, then regenerate: UPDATE_GENERATED=1 cargo test --test tests generated\n\n"
    )
}

fn unique<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn alternation(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| regex_escape(s))
        .collect::<Vec<_>>()
        .join("|")
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A TOML string: a literal string when it can be one, else a basic one.
fn quote(s: &str) -> String {
    if !s.contains('\'') && !s.contains('\n') {
        format!("'{s}'")
    } else {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
}

fn field(text: &mut String, key: &str, value: &str) {
    let _ = writeln!(text, "{key} = {}", quote(value));
}

fn list<S: AsRef<str>>(text: &mut String, key: &str, items: &[S]) {
    let _ = writeln!(text, "{key} = [");
    for i in items {
        let _ = writeln!(text, "  {},", quote(i.as_ref()));
    }
    text.push_str("]\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(regex_escape("a.b(c)"), r"a\.b\(c\)");
        assert_eq!(quote("plain"), "'plain'");
        assert_eq!(quote("it's"), "\"it's\"");
    }
}
