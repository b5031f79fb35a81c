//! Which library a crash belongs to, from the crashing thread's frames.

use coroner_model::{Frame, HostCore};

use crate::modules::file_name;
use crate::signals::SIGABRT;

/// The library family of a module path.
pub fn library_of(path: &str, main_executable: bool) -> &'static str {
    let name = file_name(path);
    if name.starts_with("libcuda.so") || name.starts_with("libcudadebugger") {
        "libcuda"
    } else if name.starts_with("libcudart") {
        "libcudart"
    } else if name.starts_with("libnccl") {
        "libnccl"
    } else if name.starts_with("libtorch") || name.starts_with("libc10") {
        "libtorch"
    } else if name.starts_with("libc.so")
        || name.starts_with("libc-")
        || name.starts_with("ld-linux")
        || name.starts_with("libpthread")
    {
        "libc"
    } else if name.starts_with("libpython") || name.starts_with("python") {
        "python"
    } else if main_executable || !path.is_empty() {
        "user"
    } else {
        "unknown"
    }
}

/// Functions on the way from a decision to abort to the signal itself.
fn is_abort_path(function: &str) -> bool {
    const NAMES: [&str; 12] = [
        "abort",
        "raise",
        "gsignal",
        "pthread_kill",
        "__pthread_kill_implementation",
        "__pthread_kill_internal",
        "__GI_raise",
        "__GI_abort",
        "std::terminate",
        "__cxa_throw",
        "__cxa_rethrow",
        "__gnu_cxx::__verbose_terminate_handler",
    ];
    let base = crate::symbols::strip_parameters(function);
    NAMES.contains(&base)
        || base.starts_with("__cxxabiv1::")
        || base.starts_with("std::__terminate")
        || base.starts_with("__pthread_kill")
}

/// Runtime libraries whose frames only carry an abort out.
fn is_runtime(path: &str) -> bool {
    let name = file_name(path);
    library_of(path, false) == "libc"
        || name.starts_with("libstdc++")
        || name.starts_with("libgcc_s")
}

/// The frame that explains how the crashed thread died: past the frames
/// of a signal handler (the interrupted frames are the crash), and for
/// SIGABRT past the C library and C++ runtime frames that only carry an
/// abort out (`raise`, `abort`, `std::terminate`, `__cxa_throw`, ...), so
/// the frame that decided to abort. The innermost frame otherwise.
pub fn deciding_frame(core: &HostCore) -> Option<&Frame> {
    let thread = core
        .threads
        .iter()
        .find(|t| t.crashed)
        .or_else(|| core.threads.first())?;
    let signal = core.signal.as_ref().map_or(0, |s| s.number);
    let start = thread
        .frames
        .iter()
        .position(|f| f.trust == crate::unwind::TRUST_SIGNAL)
        .unwrap_or(0);
    let frames = thread.frames.get(start..).unwrap_or_default();
    if signal == SIGABRT {
        frames
            .iter()
            .find(|f| {
                let on_path = f.function.as_deref().is_some_and(is_abort_path);
                let runtime = f.module.as_deref().is_some_and(is_runtime);
                !on_path && !runtime && f.module.is_some()
            })
            .or_else(|| frames.first())
    } else {
        frames.first()
    }
}

/// `fault_library`: the library family of the [`deciding_frame`].
pub fn fault_library(core: &HostCore) -> Option<String> {
    let frame = deciding_frame(core)?;
    let Some(path) = frame.module.as_deref() else {
        return Some("unknown".to_string());
    };
    let main = core
        .process
        .executable
        .as_deref()
        .is_some_and(|exe| exe == path);
    Some(library_of(path, main).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(library_of("/usr/lib64/libcuda.so.580.1", false), "libcuda");
        assert_eq!(library_of("/x/libcudart.so.13", false), "libcudart");
        assert_eq!(library_of("/x/libnccl.so.2", false), "libnccl");
        assert_eq!(library_of("/x/libc10_cuda.so", false), "libtorch");
        assert_eq!(library_of("/lib/x86_64-linux-gnu/libc.so.6", false), "libc");
        assert_eq!(library_of("/lib64/ld-linux-x86-64.so.2", false), "libc");
        assert_eq!(library_of("/usr/bin/python3.12", true), "python");
        assert_eq!(library_of("/srv/app/train", true), "user");
        assert_eq!(library_of("", false), "unknown");
    }
}
