//! The text the rules read for a core dump.
//!
//! A core is not lines of text, so the rules cannot match it directly.
//! Instead the facts a reader extracted ([`HostCore`], [`GpuCore`]) are
//! written as short lines, one fact per line, the most telling first
//! (`crash: SIGSEGV (SEGV_MAPERR) at address 0x0, a NULL pointer
//! dereference, in sum_values (segv.c:5) [user code: segv]`). Rules limited
//! to the `elf-core` and `cuda-gpu-core` kinds match these lines, so what a
//! core means stays declarative, in `rules/`; evidence line numbers refer to
//! this summary.

use coroner_model::{Frame, GpuCore, GpuException, HostCore, HostThread, MappedModule};
use std::fmt::Write;

/// Frames of the crashing thread written out.
const CRASHED_FRAMES: usize = 48;
/// Frames written for every other thread.
const OTHER_FRAMES: usize = 6;
/// Faults below this address are NULL pointer dereferences (the first page
/// is never mapped).
const NULL_PAGE: u64 = 4096;

/// The summary of a host core, one fact per line.
pub(crate) fn host_core_text(core: &HostCore) -> String {
    let mut out = String::new();
    let crashed = core.threads.iter().find(|t| t.crashed);
    if let Some(line) = crash_line(core, crashed) {
        out.push_str(&line);
        out.push('\n');
    }
    let p = &core.process;
    let _ = writeln!(out, "process: {} pid {}: {}", p.name, p.pid, p.args);
    if let Some(exe) = &p.executable {
        let _ = writeln!(out, "executable: {exe}");
    }
    let _ = writeln!(out, "threads: {} ({})", core.threads.len(), core.arch);
    if core.cuda_loaded {
        let driver = core
            .modules
            .iter()
            .find(|m| is_libcuda(&m.path))
            .map_or("libcuda", |m| m.path.as_str());
        let _ = writeln!(out, "cuda: the CUDA driver is loaded ({driver})");
    }
    for thread in core.threads.iter() {
        let limit = if thread.crashed {
            CRASHED_FRAMES
        } else {
            OTHER_FRAMES
        };
        thread_lines(&mut out, thread, limit);
    }
    for module in &core.modules {
        if module.status == "missing" || module.status == "mismatch" {
            let _ = writeln!(out, "module {}: {}", module.status, module_line(module));
        }
    }
    for warning in &core.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    out
}

/// `crash: SIGNAL (CODE) at address A, what it means, in FRAME [library]`.
fn crash_line(core: &HostCore, crashed: Option<&HostThread>) -> Option<String> {
    let signal = core.signal.as_ref()?;
    let mut line = format!("crash: {}", signal.name);
    if let Some(code) = &signal.code_name {
        let _ = write!(line, " ({code})");
    }
    if let Some(address) = signal.fault_address {
        let _ = write!(line, " at address {address:#x}");
        if signal.name == "SIGSEGV" {
            line.push_str(if address < NULL_PAGE {
                ", a NULL pointer dereference"
            } else {
                ", an invalid pointer"
            });
        }
        if let Some(mapping) = core
            .modules
            .iter()
            .find(|m| (m.start..m.end).contains(&address))
        {
            let _ = write!(line, ", inside the file mapping {}", mapping.path);
        }
    } else if let Some(pid) = signal.sender_pid {
        let fault = ["SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"].contains(&signal.name.as_str());
        if pid == core.process.pid && fault {
            line.push_str(
                ", re-raised by the process itself: a crash handler (Python's faulthandler, a framework's) caught the fault, printed what it knew and raised it again, so the faulting address is lost and the printed report is in the log",
            );
        } else if pid == core.process.pid {
            line.push_str(", raised by the process itself");
        } else {
            let _ = write!(line, ", sent by pid {pid}");
        }
    }
    if let Some(frame) = crashed.and(coroner_hostcore::deciding_frame(core)) {
        let _ = write!(line, ", in {}", frame_text(frame));
    }
    if let Some(library) = &core.fault_library {
        let _ = write!(line, " [{}]", library_text(library));
    }
    Some(line)
}

fn library_text(library: &str) -> &str {
    match library {
        "user" => "user code",
        "libcuda" => "libcuda, the CUDA driver",
        "libcudart" => "libcudart, the CUDA runtime",
        "python" => "the Python interpreter",
        other => other,
    }
}

fn thread_lines(out: &mut String, thread: &HostThread, limit: usize) {
    let state = if thread.crashed { " (crashed)" } else { "" };
    for frame in thread.frames.iter().take(limit) {
        let _ = writeln!(
            out,
            "thread {}{state}: #{} {}",
            thread.tid,
            frame.index,
            frame_text(frame)
        );
    }
    if thread.frames.len() > limit {
        let _ = writeln!(
            out,
            "thread {}{state}: ... {} more frames",
            thread.tid,
            thread.frames.len() - limit
        );
    }
    if let Some(note) = &thread.unwind_note {
        let _ = writeln!(
            out,
            "thread {}{state}: unwinding stopped: {note}",
            thread.tid
        );
    }
}

/// `function (file:line) in module` or `module+0xoffset`.
fn frame_text(frame: &Frame) -> String {
    let module = frame.module.as_deref().map(file_name);
    let mut text = match (&frame.function, module, frame.module_offset) {
        (Some(function), _, _) => function.clone(),
        (None, Some(module), Some(offset)) => format!("{module}+{offset:#x}"),
        _ => format!("{:#x}", frame.pc),
    };
    if let (Some(file), Some(line)) = (&frame.file, frame.line) {
        let file = file_name(file);
        let _ = write!(text, " ({file}:{line})");
    }
    if frame.function.is_some() {
        if let Some(module) = module {
            let _ = write!(text, " in {module}");
        }
    }
    if frame.inlined {
        text.push_str(" [inlined]");
    }
    text
}

fn module_line(module: &MappedModule) -> String {
    match &module.build_id {
        Some(id) => format!("{} (build id {id})", module.path),
        None => module.path.clone(),
    }
}

fn is_libcuda(path: &str) -> bool {
    file_name(path).starts_with("libcuda.so")
}

/// The summary of a GPU core dump, one fact per line.
pub(crate) fn gpu_core_text(core: &GpuCore) -> String {
    let mut out = String::new();
    for exception in &core.exceptions {
        out.push_str(&exception_line(core, exception));
        out.push('\n');
    }
    for exception in &core.exceptions {
        for frame in &exception.backtrace {
            let _ = writeln!(out, "device frame: #{} {}", frame.index, frame_text(frame));
        }
    }
    for kernel in &core.kernels {
        let name = kernel.name.as_deref().unwrap_or("<unknown kernel>");
        let [gx, gy, gz] = kernel.grid_dim;
        let [bx, by, bz] = kernel.block_dim;
        let _ = writeln!(
            out,
            "kernel: {name} on device {} grid ({gx},{gy},{gz}) block ({bx},{by},{bz})",
            kernel.device
        );
    }
    for device in &core.devices {
        let _ = writeln!(
            out,
            "device {}: {} {} ({} SMs, PCI bus {:#04x})",
            device.index, device.name, device.sm_type, device.sms, device.pci_bus_id
        );
    }
    if let Some(driver) = &core.driver {
        let _ = writeln!(out, "driver: {driver}");
    }
    let _ = writeln!(out, "dump: {}", core.flavour);
    for warning in &core.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    out
}

/// `gpu exception: NAME in KERNEL at FILE:LINE (..), block (..) threads
/// (..)-(..), device D (NAME, sm_XX) SM S warp W lanes L, pc 0x..`.
fn exception_line(core: &GpuCore, e: &GpuException) -> String {
    let mut line = format!("gpu exception: {}", e.name);
    if let Some(kernel) = &e.kernel {
        let _ = write!(line, " in {kernel}");
    }
    if let Some(at) = e.source.first() {
        let _ = write!(line, " at {}:{}", file_name(&at.file), at.line);
        let outer: Vec<String> = e
            .source
            .iter()
            .skip(1)
            .map(|s| format!("{}:{}", file_name(&s.file), s.line))
            .collect();
        if let Some(function) = &at.function {
            let _ = write!(line, " in {function}");
        }
        if !outer.is_empty() {
            let _ = write!(line, ", inlined from {}", outer.join(" <- "));
        }
    }
    if let Some([x, y, z]) = e.block {
        let _ = write!(line, ", block ({x},{y},{z})");
    }
    if let Some((first, last)) = e.threads {
        let _ = write!(
            line,
            " threads ({},{},{})-({},{},{})",
            first[0], first[1], first[2], last[0], last[1], last[2]
        );
    }
    let device = core.devices.iter().find(|d| d.index == e.device);
    let _ = write!(line, ", device {}", e.device);
    if let Some(d) = device {
        let _ = write!(line, " ({}, {})", d.name, d.sm_type);
    }
    let _ = write!(line, " SM {}", e.sm);
    if let Some(warp) = e.warp {
        let _ = write!(line, " warp {warp}");
    }
    if let Some(lanes) = &e.lanes {
        let _ = write!(line, " lanes {lanes}");
    }
    if let Some(pc) = e.pc {
        let _ = write!(line, ", pc {pc:#x}");
    }
    let _ = write!(line, " ({}-level)", e.scope);
    line
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coroner_model::{GpuDevice, Process, Signal, SourceLine};

    fn frame(index: u32, function: &str, file: &str, line: u32, module: &str) -> Frame {
        Frame {
            index,
            pc: 0x1000 + u64::from(index),
            function: Some(function.to_owned()),
            file: Some(file.to_owned()),
            line: Some(line),
            module: Some(module.to_owned()),
            module_offset: Some(0x100),
            inlined: false,
            trust: "cfi".to_owned(),
        }
    }

    #[test]
    fn null_dereference_names_the_crashing_frame_first() {
        let core = HostCore {
            arch: "x86_64".to_owned(),
            process: Process {
                pid: 875,
                name: "segv".to_owned(),
                args: "./segv".to_owned(),
                ..Process::default()
            },
            signal: Some(Signal {
                number: 11,
                name: "SIGSEGV".to_owned(),
                code: 1,
                code_name: Some("SEGV_MAPERR".to_owned()),
                fault_address: Some(0),
                sender_pid: None,
            }),
            threads: vec![HostThread {
                tid: 875,
                crashed: true,
                frames: vec![
                    frame(0, "sum_values", "/src/segv.c", 5, "/bin/segv"),
                    frame(1, "main", "/src/segv.c", 10, "/bin/segv"),
                ],
                unwind_note: None,
            }],
            fault_library: Some("user".to_owned()),
            ..HostCore::default()
        };
        let text = host_core_text(&core);
        let first = text.lines().next().unwrap_or("");
        assert_eq!(
            first,
            "crash: SIGSEGV (SEGV_MAPERR) at address 0x0, a NULL pointer dereference, in sum_values (segv.c:5) in segv [user code]"
        );
        assert!(text.contains("thread 875 (crashed): #1 main (segv.c:10) in segv"));
    }

    #[test]
    fn abort_looks_past_the_c_library() {
        let core = HostCore {
            signal: Some(Signal {
                number: 6,
                name: "SIGABRT".to_owned(),
                code: -6,
                code_name: Some("SI_TKILL".to_owned()),
                fault_address: None,
                sender_pid: Some(679),
            }),
            process: Process {
                pid: 679,
                ..Process::default()
            },
            threads: vec![HostThread {
                tid: 679,
                crashed: true,
                frames: vec![
                    frame(0, "__pthread_kill_implementation", "", 0, "/lib/libc.so.6"),
                    frame(1, "abort", "", 0, "/lib/libc.so.6"),
                    Frame {
                        index: 2,
                        module: Some("/usr/lib/libcuda.so.1".to_owned()),
                        module_offset: Some(0x2f00),
                        ..Frame::default()
                    },
                ],
                unwind_note: None,
            }],
            fault_library: Some("libcuda".to_owned()),
            ..HostCore::default()
        };
        let first = host_core_text(&core);
        assert!(
            first.starts_with(
                "crash: SIGABRT (SI_TKILL), raised by the process itself, in libcuda.so.1+0x2f00 [libcuda, the CUDA driver]\n"
            ),
            "{first}"
        );
    }

    #[test]
    fn gpu_exception_line_carries_every_fact() {
        let core = GpuCore {
            devices: vec![GpuDevice {
                index: 0,
                name: "NVIDIA H200".to_owned(),
                sm_type: "sm_90".to_owned(),
                ..GpuDevice::default()
            }],
            exceptions: vec![GpuException {
                code: 14,
                name: "Warp Illegal Address".to_owned(),
                scope: "warp".to_owned(),
                device: 0,
                sm: 10,
                warp: Some(1),
                lanes: Some("0-31".to_owned()),
                pc: Some(0x7fd7_4f7a_00f0),
                kernel: Some("gather_kernel(int const*, int const*, int*, int)".to_owned()),
                block: Some([23, 0, 0]),
                threads: Some(([32, 0, 0], [63, 0, 0])),
                source: vec![
                    SourceLine {
                        file: "/src/illegal.cu".to_owned(),
                        line: 2,
                        function: Some("lookup".to_owned()),
                    },
                    SourceLine {
                        file: "/src/illegal.cu".to_owned(),
                        line: 5,
                        function: None,
                    },
                ],
                ..GpuException::default()
            }],
            ..GpuCore::default()
        };
        let text = gpu_core_text(&core);
        assert_eq!(
            text.lines().next(),
            Some("gpu exception: Warp Illegal Address in gather_kernel(int const*, int const*, int*, int) at illegal.cu:2 in lookup, inlined from illegal.cu:5, block (23,0,0) threads (32,0,0)-(63,0,0), device 0 (NVIDIA H200, sm_90) SM 10 warp 1 lanes 0-31, pc 0x7fd74f7a00f0 (warp-level)")
        );
    }
}
