//! The core dump sections of the terminal report: for a host core the
//! process, signal and threads with their frames (gdb's `thread apply all
//! bt`, condensed); for a GPU core dump the exception, kernel, faulting
//! threads, source line and device call stack.

use coroner_model::{Frame, GpuCore, GpuException, HostCore, HostThread, InputSummary};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Frames shown for the crashing thread.
const CRASHED_FRAMES: usize = 32;
/// Frames shown for each other thread.
const OTHER_FRAMES: usize = 3;
/// Other threads shown before the rest are counted.
const OTHER_THREADS: usize = 24;

/// The threads, each with the ids of the later threads whose stack
/// (frames and why the walk stopped) is the same, shown once as gdb and
/// eu-stack users group them; the crashing thread and threads without
/// frames stand alone.
fn same_stacks(threads: &[HostThread]) -> Vec<(&HostThread, Vec<u32>)> {
    let mut groups: Vec<(&HostThread, Vec<u32>)> = Vec::new();
    let mut first: HashMap<(&[Frame], Option<&str>), usize> = HashMap::new();
    for thread in threads {
        if thread.crashed || thread.frames.is_empty() {
            groups.push((thread, Vec::new()));
            continue;
        }
        let stack = (thread.frames.as_slice(), thread.unwind_note.as_deref());
        match first.get(&stack) {
            Some(&at) => groups[at].1.push(thread.tid),
            None => {
                first.insert(stack, groups.len());
                groups.push((thread, Vec::new()));
            }
        }
    }
    groups
}

/// Every core section of the inputs, or nothing.
pub(crate) fn render(inputs: &[InputSummary], bold: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    for input in inputs {
        if let Some(core) = &input.gpu_core {
            let _ = writeln!(out, "\n{}", bold(&format!("GPU core dump {}:", input.path)));
            gpu(&mut out, core);
        }
        if let Some(core) = &input.core {
            let _ = writeln!(out, "\n{}", bold(&format!("Core dump {}:", input.path)));
            host(&mut out, core);
        }
    }
    out
}

fn host(out: &mut String, core: &HostCore) {
    let p = &core.process;
    let _ = writeln!(out, "  process {} (pid {}): {}", p.name, p.pid, p.args);
    if let Some(signal) = &core.signal {
        let mut line = format!("  signal  {} ({})", signal.name, signal.number);
        if let Some(code) = &signal.code_name {
            let _ = write!(line, ", {code}");
        }
        if let Some(address) = signal.fault_address {
            let _ = write!(line, ", fault address {address:#x}");
        }
        if let Some(pid) = signal.sender_pid {
            let _ = write!(line, ", sent by pid {pid}");
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(library) = &core.fault_library {
        let _ = writeln!(out, "  fault   in {}", library_name(library));
    }
    let _ = writeln!(out, "  threads {} ({})", core.thread_count(), core.arch);
    let mut others = 0;
    for (thread, alike) in same_stacks(&core.threads) {
        if !thread.crashed {
            others += 1;
            if others > OTHER_THREADS {
                continue;
            }
        }
        let limit = if thread.crashed {
            CRASHED_FRAMES
        } else {
            OTHER_FRAMES
        };
        let mark = match (thread.crashed, alike.as_slice()) {
            (true, _) => " (crashed)".to_owned(),
            (false, []) => String::new(),
            (false, [one]) => format!(" and thread {one}, same stack"),
            (false, more) => format!(" and {} more threads with the same stack", more.len()),
        };
        let _ = writeln!(out, "  Thread {}{mark}:", thread.tid);
        for frame in thread.frames.iter().take(limit) {
            let _ = writeln!(out, "    {}", frame_line(frame));
        }
        if thread.frames.len() > limit {
            let _ = writeln!(out, "    ... {} more", thread.frames.len() - limit);
        }
        if let Some(note) = &thread.unwind_note {
            let _ = writeln!(out, "    (stopped: {note})");
        }
    }
    if others > OTHER_THREADS {
        let _ = writeln!(
            out,
            "  ... {} more threads (all of them are in the JSON report)",
            others - OTHER_THREADS
        );
    }
    if core.threads_omitted > 0 {
        // The threads past the cap were not read: none of their stacks is
        // known.
        let _ = writeln!(
            out,
            "  ... {} more threads not unwound (coroner unwinds the first {})",
            core.threads_omitted,
            HostCore::MAX_THREADS
        );
    }
    let unresolved: Vec<String> = core
        .modules
        .iter()
        .filter(|m| m.status == "missing" || m.status == "mismatch")
        .map(|m| {
            let why = if m.status == "missing" {
                "not found"
            } else {
                "a different build on disk, not used"
            };
            format!("{} ({why})", m.path)
        })
        .collect();
    if !unresolved.is_empty() {
        let _ = writeln!(
            out,
            "  No symbols for {} module(s); name them with --exe, --sysroot or --debug-dir:",
            unresolved.len()
        );
        for m in unresolved {
            let _ = writeln!(out, "    {m}");
        }
    }
    warnings(out, &core.warnings);
}

fn library_name(library: &str) -> &str {
    match library {
        "user" => "user code (not a system or CUDA library)",
        "libcuda" => "libcuda, the CUDA driver",
        "libcudart" => "libcudart, the CUDA runtime",
        "python" => "the Python interpreter",
        other => other,
    }
}

/// `#0  0x... in function (file:line) [module]`, as gdb prints frames.
fn frame_line(frame: &Frame) -> String {
    // A device frame's module is the dump's cubin section: no file name a
    // reader could use.
    let module = frame
        .module
        .as_deref()
        .filter(|m| !m.starts_with(".cudbg"))
        .map(|m| m.rsplit('/').next().unwrap_or(m));
    let mut line = format!("#{:<2} {:#018x} in ", frame.index, frame.pc);
    match (&frame.function, module, frame.module_offset) {
        (Some(function), _, _) => line.push_str(function),
        (None, Some(module), Some(offset)) => {
            let _ = write!(line, "{module}+{offset:#x}");
        }
        _ => line.push_str("??"),
    }
    if let (Some(file), Some(number)) = (&frame.file, frame.line) {
        let _ = write!(line, " at {file}:{number}");
    } else if frame.function.is_some() {
        if let Some(module) = module {
            let _ = write!(line, " from {module}");
        }
    }
    if frame.inlined {
        line.push_str(" [inlined]");
    }
    line
}

fn gpu(out: &mut String, core: &GpuCore) {
    for device in &core.devices {
        let _ = writeln!(
            out,
            "  device  {}: {} ({}, {} SMs, PCI bus {:#04x})",
            device.index, device.name, device.sm_type, device.sms, device.pci_bus_id
        );
    }
    if let Some(driver) = &core.driver {
        let _ = writeln!(out, "  driver  {driver}");
    }
    let _ = writeln!(out, "  dump    {}", core.flavour);
    if core.exceptions.is_empty() {
        let _ = writeln!(out, "  no exception recorded");
    }
    for e in &core.exceptions {
        exception(out, e);
    }
    for k in &core.kernels {
        let [gx, gy, gz] = k.grid_dim;
        let [bx, by, bz] = k.block_dim;
        let _ = writeln!(
            out,
            "  kernel  {} <<<({gx},{gy},{gz}),({bx},{by},{bz})>>> grid {} on device {}",
            k.name.as_deref().or(k.symbol.as_deref()).unwrap_or("??"),
            k.grid_id,
            k.device
        );
    }
    warnings(out, &core.warnings);
}

fn exception(out: &mut String, e: &GpuException) {
    let _ = writeln!(out, "  CUDA Exception: {} ({}-level)", e.name, e.scope);
    if let Some(pc) = e.pc {
        let mut at = format!("    at PC {pc:#x}");
        if let Some(kernel) = &e.kernel {
            let _ = write!(at, " in {kernel}");
        }
        if let Some(offset) = e.function_offset {
            let _ = write!(at, " +{offset:#x}");
        }
        let _ = writeln!(out, "{at}");
    }
    if let Some(first) = e.source.first() {
        let mut source = format!("    source {}:{}", first.file, first.line);
        if let Some(function) = &first.function {
            let _ = write!(source, " in {function}");
        }
        for outer in e.source.iter().skip(1) {
            let _ = write!(source, ", inlined from {}:{}", outer.file, outer.line);
        }
        let _ = writeln!(out, "{source}");
    }
    let mut place = format!("    device {} SM {}", e.device, e.sm);
    if let Some(warp) = e.warp {
        let _ = write!(place, " warp {warp}");
    }
    if let Some(lanes) = &e.lanes {
        let _ = write!(place, " lanes {lanes}");
    }
    if let Some([x, y, z]) = e.block {
        let _ = write!(place, ", block ({x},{y},{z})");
    }
    if let Some((a, b)) = e.threads {
        let _ = write!(
            place,
            " threads ({},{},{})..({},{},{})",
            a[0], a[1], a[2], b[0], b[1], b[2]
        );
    }
    let _ = writeln!(out, "{place}");
    if let Some(text) = &e.description {
        let _ = writeln!(out, "    driver says: {text}");
    }
    for frame in &e.backtrace {
        let _ = writeln!(out, "    {}", frame_line(frame));
    }
}

fn warnings(out: &mut String, warnings: &[String]) {
    for w in warnings {
        let _ = writeln!(out, "  ! {w}");
    }
}
