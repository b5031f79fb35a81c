//! Real cores compared with gdb's backtraces of them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use coroner_hostcore::{read_host_core, Options};

fn read(core: &Path, exe: Option<&Path>) -> coroner_model::HostCore {
    let bytes = unzstd(core);
    let options = Options {
        exe: exe.map(Path::to_path_buf),
        ..Options::default()
    };
    read_host_core(&bytes, &options).unwrap()
}

/// A local case: the crashing thread (and every thread gdb lists) equals
/// the stored gdb backtrace.
fn local_case(name: &str) -> coroner_model::HostCore {
    let dir = host_cores();
    let exe = binary(&dir.join(format!("{name}.zst")));
    let core = read(&dir.join(format!("core.{name}.zst")), Some(&exe));
    let gdb = std::fs::read_to_string(dir.join(format!("gdb_bt_{name}.txt"))).unwrap();
    let threads = parse_gdb(&gdb);
    assert_eq!(threads.len(), core.threads.len(), "thread count");
    for (tid, frames) in &threads {
        assert_same_frames(
            frames,
            &thread(&core, *tid).frames,
            &format!("{name} thread {tid}"),
        );
    }
    core
}

#[test]
fn segv_matches_gdb_and_never_uses_another_libc() {
    let Some(dir) = real_gpu() else {
        eprintln!("note: real-gpu fixtures not found; skipped");
        return;
    };
    let exe = dir.join("bin/segv");
    let core = read(&dir.join("cores/core.segv.875.zst"), Some(&exe));
    let gdb = std::fs::read_to_string(dir.join("cores/gdb_bt_core.segv.875.txt")).unwrap();
    // That file repeats frame 0 before the thread's list; keep the list.
    let text: String = gdb.lines().skip(2).map(|l| format!("{l}\n")).collect();
    let threads = parse_gdb(&format!("Thread 1 (LWP 875):\n{text}"));
    let crashed = &core.threads[0];
    assert!(crashed.crashed);
    assert_eq!(crashed.tid, 875);
    assert_same_frames(&threads[0].1, &crashed.frames, "segv");
    let signal = core.signal.as_ref().unwrap();
    assert_eq!(signal.name, "SIGSEGV");
    assert_eq!(signal.code_name.as_deref(), Some("SEGV_MAPERR"));
    assert_eq!(signal.fault_address, Some(0));
    assert_eq!(core.fault_library.as_deref(), Some("user"));
    assert_eq!(core.process.pid, 875);
    assert_eq!(core.process.name, "segv");
    assert_eq!(
        core.process.executable.as_deref(),
        Some("/tmp/art_a/bin/segv")
    );
    assert_eq!(core.process.platform.as_deref(), Some("x86_64"));
    let libc = core
        .modules
        .iter()
        .find(|m| m.path.ends_with("/libc.so.6"))
        .unwrap();
    if libc.status == "mismatch" {
        assert!(libc.resolved.is_none());
    }
    let main = core
        .modules
        .iter()
        .find(|m| m.path == "/tmp/art_a/bin/segv")
        .unwrap();
    assert_eq!(main.status, "found");
    assert_eq!(
        main.build_id.as_deref(),
        Some("b105942a9a9da7007281a3c87b0f9ad3d43acff2")
    );
    assert!(core
        .modules
        .iter()
        .any(|m| m.path == "[vdso]" && m.status == "memory"));
}

#[test]
fn segv_matches_gdb_run_now() {
    let (Some(dir), Some(gdb)) = (real_gpu(), gdb()) else {
        eprintln!("note: gdb is missing; skipped");
        return;
    };
    let raw = std::env::temp_dir().join(format!("coroner-hostcore-segv-{}", std::process::id()));
    std::fs::write(&raw, unzstd(&dir.join("cores/core.segv.875.zst"))).unwrap();
    let out = std::process::Command::new(gdb)
        .args(["-batch", "-ex", "thread apply all bt"])
        .arg(dir.join("bin/segv"))
        .arg(&raw)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let threads = parse_gdb(&text);
    let core = read_host_core(
        &std::fs::read(&raw).unwrap(),
        &Options {
            exe: Some(dir.join("bin/segv")),
            ..Options::default()
        },
    )
    .unwrap();
    let _ = std::fs::remove_file(&raw);
    assert_eq!(threads.len(), 1, "{text}");
    assert_same_frames(&threads[0].1, &core.threads[0].frames, "segv (live gdb)");
}

#[test]
fn cuda_abort_lists_every_thread_and_blames_the_driver() {
    let Some(dir) = real_gpu() else {
        eprintln!("note: real-gpu fixtures not found; skipped");
        return;
    };
    let core = read(
        &dir.join("cores/core.illegal.679.zst"),
        Some(&dir.join("bin/illegal")),
    );
    let signal = core.signal.as_ref().unwrap();
    assert_eq!(signal.name, "SIGABRT");
    assert_eq!(signal.code_name.as_deref(), Some("SI_TKILL"));
    assert_eq!(signal.sender_pid, Some(679));
    // readelf -n: the order of the NT_PRSTATUS notes.
    let tids: Vec<u32> = core.threads.iter().map(|t| t.tid).collect();
    assert_eq!(tids, [684, 679, 686, 688, 687, 691, 690, 689, 692, 680]);
    assert!(core.threads[0].crashed && core.threads.iter().skip(1).all(|t| !t.crashed));
    assert!(core.cuda_loaded);
    let libcuda = core
        .modules
        .iter()
        .find(|m| m.path.contains("libcuda.so"))
        .unwrap();
    assert_eq!(libcuda.status, "missing");
    assert_eq!(core.fault_library.as_deref(), Some("libcuda"));
    // The abort path runs from libc into the driver; nothing there is named.
    let crashed = &core.threads[0].frames;
    assert!(crashed
        .iter()
        .any(|f| f.module.as_deref() == Some(libcuda.path.as_str())));
    assert!(crashed
        .iter()
        .filter(|f| f
            .module
            .as_deref()
            .is_some_and(|m| m.contains("libcuda") || m.contains("libc.so")))
        .all(|f| f.function.is_none() && f.module_offset.is_some()));
    // The main thread waits in cudaDeviceSynchronize, called from main.
    let main = &thread(&core, 679).frames;
    let last = main.last().unwrap();
    assert_eq!(last.function.as_deref(), Some("main"));
    assert_eq!(last.line, Some(13));
    assert!(main
        .iter()
        .any(|f| f.function.as_deref() == Some("cudaDeviceSynchronize")));
    let files: BTreeSet<_> = core.modules.iter().map(|m| m.status.as_str()).collect();
    assert!(files.contains("found") && files.contains("missing"));
}

#[test]
fn cpp_uncaught_exception() {
    let core = local_case("throw");
    assert_eq!(core.signal.as_ref().unwrap().name, "SIGABRT");
    // The abort path is libc and libstdc++ code linked into the program;
    // the decision to terminate is the program's own.
    assert_eq!(core.fault_library.as_deref(), Some("user"));
    let names: Vec<_> = core.threads[0]
        .frames
        .iter()
        .filter_map(|f| f.function.as_deref())
        .collect();
    assert!(names.contains(&"std::terminate()") && names.contains(&"checked_index"));
}

#[test]
fn worker_thread_segfault() {
    let core = local_case("worker_segv");
    let signal = core.signal.as_ref().unwrap();
    assert_eq!(signal.fault_address, Some(12));
    assert_eq!(core.threads.len(), 3);
    assert_eq!(
        core.threads[0].frames[0].function.as_deref(),
        Some("read_slot")
    );
}

#[test]
fn rust_null_read() {
    let core = local_case("null_read");
    assert_eq!(core.signal.as_ref().unwrap().fault_address, Some(0));
    assert_eq!(
        core.threads[0].frames.last().unwrap().function.as_deref(),
        Some("null_read::main")
    );
}

#[test]
fn python_faulthandler_signal_frame() {
    let core = read(&host_cores().join("core.python.zst"), None);
    let signal = core.signal.as_ref().unwrap();
    assert_eq!(signal.name, "SIGSEGV");
    // faulthandler re-raised the signal from its handler.
    assert_eq!(signal.code_name.as_deref(), Some("SI_TKILL"));
    assert_eq!(core.process.name, "python3");
    let libc = core
        .modules
        .iter()
        .find(|m| m.path.ends_with("/libc.so.6"))
        .unwrap();
    if libc.status != "found" {
        eprintln!("note: this machine's libc differs from the core's; signal frame not checked");
        return;
    }
    let frames = &core.threads[0].frames;
    let at = frames
        .iter()
        .position(|f| f.trust == "signal")
        .expect("a signal frame");
    // The interrupted code: ctypes' string_at called strlen on NULL.
    assert!(frames[at..]
        .iter()
        .any(|f| f.function.as_deref() == Some("string_at")));
    assert_eq!(core.fault_library.as_deref(), Some("libc"));
    let gdb = std::fs::read_to_string(host_cores().join("gdb_bt_python.txt")).unwrap();
    let threads = parse_gdb(&gdb);
    let gdb_frames = &threads[0].1;
    // gdb with libc's debug info names inner libc frames we leave as
    // offsets; from the interrupted frame outwards both agree.
    let gdb_at = gdb_frames
        .iter()
        .position(|f| f.function.as_deref() == Some("string_at"))
        .unwrap();
    let ours_at = frames
        .iter()
        .position(|f| f.function.as_deref() == Some("string_at"))
        .unwrap();
    for (g, o) in gdb_frames[gdb_at..].iter().zip(&frames[ours_at..]) {
        assert_eq!(g.pc.unwrap_or(o.pc), o.pc);
        if let (Some(g), Some(o)) = (&g.function, &o.function) {
            assert_eq!(g, o);
        }
    }
}
