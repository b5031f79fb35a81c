//! Prints what a host core says: `hostcore CORE [EXE]` (the core may be
//! zstd-compressed, as systemd-coredump stores them).

use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(core) = args.next() else {
        eprintln!("usage: hostcore CORE [EXE]");
        std::process::exit(2);
    };
    let options = coroner_hostcore::Options {
        exe: args.next().map(PathBuf::from),
        ..Default::default()
    };
    let mapped = match coroner_ingest::Mapped::open(Path::new(&core)) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{core}: {e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let result = coroner_hostcore::read_host_core(&mapped, &options);
    let elapsed = started.elapsed();
    match result {
        Ok(host) => {
            println!(
                "arch {} pid {} name {:?} args {:?} exe {:?} platform {:?}",
                host.arch,
                host.process.pid,
                host.process.name,
                host.process.args,
                host.process.executable,
                host.process.platform
            );
            println!("signal {:?}", host.signal);
            println!(
                "fault_library {:?} cuda_loaded {}",
                host.fault_library, host.cuda_loaded
            );
            for t in &host.threads {
                println!(
                    "thread {} crashed={} note={:?}",
                    t.tid, t.crashed, t.unwind_note
                );
                for f in &t.frames {
                    println!(
                        "  #{:<2} {:#018x} {:<14} {} {}:{} {}+{:#x}{}",
                        f.index,
                        f.pc,
                        f.trust,
                        f.function.as_deref().unwrap_or("??"),
                        f.file.as_deref().unwrap_or("?"),
                        f.line.unwrap_or(0),
                        f.module.as_deref().unwrap_or("?"),
                        f.module_offset.unwrap_or(0),
                        if f.inlined { " [inlined]" } else { "" }
                    );
                }
            }
            for m in &host.modules {
                println!(
                    "module {:#x}-{:#x} {} {} {:?} {:?}",
                    m.start, m.end, m.status, m.path, m.build_id, m.resolved
                );
            }
            for w in &host.warnings {
                println!("warning: {w}");
            }
        }
        Err(e) => println!("error: {e}"),
    }
    eprintln!("read_host_core: {:.1} ms", elapsed.as_secs_f64() * 1000.0);
}
