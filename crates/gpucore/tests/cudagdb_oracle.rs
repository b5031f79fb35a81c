//! Every fact cuda-gdb prints about a dump must come out of
//! `read_gpu_core` the same way. Expected values are parsed from cuda-gdb's
//! output in `fixtures/gpu-cores/<case>.cudagdb.txt`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{basename, short_name, CudaGdb};
use coroner_gpucore::read_gpu_core;
use coroner_model::{GpuCore, GpuException};

fn read(case: &str) -> (GpuCore, CudaGdb) {
    let core = read_gpu_core(&common::dump(case)).unwrap_or_else(|e| panic!("{case}: {e}"));
    let gdb = common::parse(&common::cudagdb_text(case));
    (core, gdb)
}

/// The exception cuda-gdb focuses on must be our first one.
fn focused<'a>(case: &str, core: &'a GpuCore) -> &'a GpuException {
    core.exceptions
        .first()
        .unwrap_or_else(|| panic!("{case}: no exception read; warnings: {:?}", core.warnings))
}

/// Asserts every fact of the focused exception that cuda-gdb printed.
fn check_against_cudagdb(case: &str, core: &GpuCore, gdb: &CudaGdb) {
    if gdb.exception.is_none() && gdb.error_pc.is_none() {
        // cuda-gdb itself found no exception (e.g. a dump cut short): we
        // must still read the dump without error, and find none either or
        // say why in the warnings.
        assert!(
            core.exceptions.is_empty() || !core.warnings.is_empty() || gdb.focus.device.is_none(),
            "{case}: {:?}",
            core.exceptions
        );
        return;
    }
    let e = focused(case, core);

    if let Some(name) = &gdb.exception {
        assert_eq!(&e.name, name, "{case}: exception name");
        assert_eq!(
            coroner_gpucore::exception_name(e.code),
            Some(name.as_str()),
            "{case}: exception_name({})",
            e.code
        );
    }
    if let Some(pc) = gdb.error_pc {
        assert_eq!(
            e.pc,
            Some(pc),
            "{case}: error PC (exception was triggered at)"
        );
    }
    if let Some(function) = &gdb.error_function {
        // cuda-gdb names the function holding the error PC (a device
        // function, or the kernel itself): the outermost source entry.
        let ours = e
            .source
            .last()
            .and_then(|s| s.function.as_deref())
            .or(e.kernel.as_deref());
        assert_eq!(
            ours,
            Some(function.as_str()),
            "{case}: function at the error PC"
        );
    }
    // The kernel is the launched one (`info cuda kernels`, focus kernel).
    if let Some(k) = gdb.kernels.iter().find(|k| Some(k.grid) == gdb.focus.grid) {
        let short = k.invocation.split('(').next().unwrap_or("");
        // cuda-gdb's kernel table leaves out a template's return type.
        let ours = e.kernel.as_deref().map(short_name).unwrap_or("");
        assert!(ours.ends_with(short), "{case}: kernel {ours} vs {short}");
    }

    // Focus: device, SM, warp, block, grid, first thread.
    let f = &gdb.focus;
    if let Some(d) = f.device {
        assert_eq!(e.device, d, "{case}: device");
    }
    if let Some(sm) = f.sm {
        assert_eq!(e.sm, sm, "{case}: SM");
    }
    if let Some(w) = f.warp {
        assert_eq!(e.warp, Some(w), "{case}: warp");
    }
    if let Some(b) = f.block {
        assert_eq!(e.block, Some(b), "{case}: block");
    }
    if let Some(g) = f.grid {
        assert_eq!(e.grid_id, Some(g), "{case}: grid id");
    }
    if let Some(t) = f.thread {
        assert_eq!(e.threads.map(|t| t.0), Some(t), "{case}: first thread");
    }

    // Lanes of the focused warp that carry the exception: the collapsed
    // lane range and the first/last thread.
    let faulting: Vec<&common::GdbLane> = gdb
        .lanes
        .iter()
        .filter(|l| Some(&l.exception) == gdb.exception.as_ref())
        .collect();
    if let (Some(first), Some(last)) = (faulting.first(), faulting.last()) {
        let lanes: Vec<String> = faulting.iter().map(|l| l.ln.to_string()).collect();
        let contiguous = faulting.windows(2).all(|w| w[1].ln == w[0].ln + 1);
        if contiguous && faulting.len() > 1 {
            assert_eq!(
                e.lanes.as_deref(),
                Some(format!("{}-{}", first.ln, last.ln).as_str()),
                "{case}: lanes"
            );
        } else if faulting.len() == 1 {
            assert_eq!(e.lanes.as_deref(), Some(lanes[0].as_str()), "{case}: lanes");
        }
        assert_eq!(
            e.threads,
            Some((first.thread, last.thread)),
            "{case}: first/last thread"
        );
        // The lane PC (frame #0) is what `info cuda lanes` shows.
        let frame0 = e.backtrace.first().expect("frame #0");
        assert_eq!(
            frame0.pc, first.pc,
            "{case}: lane PC of the first faulting lane"
        );
    }

    // Source at the error PC, innermost (inlined) first.
    if !gdb.error_source.is_empty() {
        assert_eq!(
            e.source.len(),
            gdb.error_source.len(),
            "{case}: source chain {:?}",
            e.source
        );
        for (ours, theirs) in e.source.iter().zip(&gdb.error_source) {
            assert_eq!(
                basename(&ours.file),
                basename(&theirs.file),
                "{case}: source file"
            );
            assert_eq!(ours.line, theirs.line, "{case}: source line");
            if let Some(func) = &theirs.function {
                let ours_fn = ours.function.as_deref().map(short_name).unwrap_or("");
                assert!(
                    ours_fn.ends_with(func.as_str()),
                    "{case}: inlined function {ours_fn} vs {func}"
                );
            }
        }
    }

    // Backtrace: cuda-gdb's frames, outermost kernel frame with launch dims.
    let ours: Vec<&coroner_model::Frame> = e.backtrace.iter().collect();
    assert!(!ours.is_empty(), "{case}: backtrace");
    for (i, theirs) in gdb.frames.iter().enumerate() {
        let Some(mine) = ours.get(i) else {
            panic!(
                "{case}: cuda-gdb has frame #{i}, we have {} frames",
                ours.len()
            );
        };
        if let Some(pc) = theirs.pc {
            assert_eq!(mine.pc, pc, "{case}: frame #{i} pc");
        }
        let name = mine.function.as_deref().unwrap_or("??");
        let name = if theirs.function.contains('(') {
            name
        } else {
            short_name(name)
        };
        assert!(
            theirs.function == "??" || name.ends_with(theirs.function.as_str()),
            "{case}: frame #{i} function {name} vs {}",
            theirs.function
        );
        if let Some(file) = &theirs.file {
            assert_eq!(
                mine.file.as_deref(),
                Some(file.as_str()),
                "{case}: frame #{i} file"
            );
        }
        if let Some(line) = theirs.line {
            assert_eq!(mine.line, Some(line), "{case}: frame #{i} line");
        }
        if let (Some(g), Some(b)) = (theirs.grid_dim, theirs.block_dim) {
            let k = core
                .kernels
                .iter()
                .find(|k| Some(k.grid_id) == e.grid_id && k.device == e.device)
                .expect("the faulting kernel is in the kernel list");
            assert_eq!(k.grid_dim, g, "{case}: grid dim");
            assert_eq!(k.block_dim, b, "{case}: block dim");
        }
    }

    // `x/4i $pc`: symbol and offset of the lane PC.
    if let Some((pc, symbol, offset)) = &gdb.pc_symbol {
        let frame0 = &e.backtrace[0];
        assert_eq!(frame0.pc, *pc, "{case}: $pc");
        let error_fn = e.source.last().and_then(|s| s.function.as_deref());
        let mut checked = false;
        if error_fn.is_some() && error_fn == frame0.function.as_deref() && !frame0.inlined {
            // Same function as the error PC: the offsets agree.
            let start =
                e.pc.zip(e.function_offset)
                    .map(|(p, o)| p - o)
                    .expect("start");
            assert_eq!(
                frame0.pc.checked_sub(start),
                Some(*offset),
                "{case}: $pc in {symbol}"
            );
            checked = true;
        }
        if frame0.function.is_some() && frame0.function == e.kernel && !frame0.inlined {
            // The lane is in the kernel itself: its symbol, and the offset
            // from the kernel's entry.
            let k = core
                .kernels
                .iter()
                .find(|k| Some(k.grid_id) == e.grid_id)
                .expect("kernel");
            assert_eq!(
                k.symbol.as_deref(),
                Some(symbol.as_str()),
                "{case}: mangled symbol"
            );
            assert_eq!(
                frame0.module_offset,
                Some(*offset),
                "{case}: $pc offset in {symbol}"
            );
            checked = true;
        }
        assert!(
            checked,
            "{case}: $pc {pc:#x} <{symbol}+{offset}> not checked: {frame0:?}"
        );
    }

    // `info cuda kernels`: every kernel, with device, grid and dims.
    for gk in &gdb.kernels {
        let k = core
            .kernels
            .iter()
            .find(|k| k.device == gk.device && k.grid_id == gk.grid)
            .unwrap_or_else(|| panic!("{case}: kernel dev {} grid {} missing", gk.device, gk.grid));
        assert_eq!(
            k.grid_dim, gk.grid_dim,
            "{case}: grid dim of grid {}",
            gk.grid
        );
        assert_eq!(
            k.block_dim, gk.block_dim,
            "{case}: block dim of grid {}",
            gk.grid
        );
        let short = gk.invocation.split('(').next().unwrap_or("");
        let ours = k.name.as_deref().map(short_name).unwrap_or("");
        assert!(
            ours.ends_with(short),
            "{case}: kernel name {ours} vs {short}"
        );
    }
}

#[test]
fn light_dump_matches_cudagdb() {
    let (core, gdb) = read("gpu_light_679");
    check_against_cudagdb("gpu_light_679", &core, &gdb);
    assert_eq!(core.flavour, "lightweight");
}

#[test]
fn full_dump_matches_cudagdb() {
    let (core, gdb) = read("gpu_full_696");
    check_against_cudagdb("gpu_full_696", &core, &gdb);
    assert_eq!(core.flavour, "full");
}

/// The facts of the illegal-address program, spelled out, for both dumps:
/// what the oracle check above compares, made explicit.
#[test]
fn illegal_address_facts() {
    for case in ["gpu_light_679", "gpu_full_696"] {
        let (core, gdb) = read(case);
        assert!(core.warnings.is_empty(), "{case}: {:?}", core.warnings);
        let e = focused(case, &core);
        assert_eq!(e.name, "Warp Illegal Address");
        assert_eq!(e.code, 14);
        assert_eq!(e.scope, "warp");
        assert_eq!((e.device, e.sm, e.warp), (0, 10, Some(1)));
        assert_eq!(e.lanes.as_deref(), Some("0-31"));
        assert_eq!(e.block, Some([23, 0, 0]));
        assert_eq!(e.threads, Some(([32, 0, 0], [63, 0, 0])));
        assert_eq!(e.grid_id, Some(1));
        assert_eq!(
            e.kernel.as_deref(),
            Some("gather_kernel(int const*, int const*, int*, int)")
        );
        // The error PC and the lane PC are two instructions apart: the
        // warp error PC names the load that faulted (inside the inlined
        // lookup), the lanes had moved on to the store.
        let pc = e.pc.expect("error pc");
        assert_eq!(Some(pc), gdb.error_pc);
        assert_eq!(pc & 0xfff, 0x0f0);
        assert_eq!(e.function_offset, Some(0xf0));
        let frame0 = &e.backtrace[0];
        assert_eq!(frame0.pc, pc + 0x20);
        assert_eq!(frame0.module_offset, Some(272));
        assert_eq!(frame0.trust, "device");
        assert_eq!(frame0.line, Some(5));
        assert_eq!(e.backtrace.len(), 1);
        let src: Vec<(&str, u32, Option<&str>)> = e
            .source
            .iter()
            .map(|s| (basename(&s.file), s.line, s.function.as_deref()))
            .collect();
        assert_eq!(
            src,
            [
                ("illegal.cu", 2, Some("lookup(int const*, int)")),
                (
                    "illegal.cu",
                    5,
                    Some("gather_kernel(int const*, int const*, int*, int)")
                ),
            ]
        );
        assert_eq!(core.exceptions.len(), 1, "{case}: one warp faulted");

        assert_eq!(core.kernels.len(), 1);
        let k = &core.kernels[0];
        assert_eq!((k.device, k.grid_id), (0, 1));
        assert_eq!(k.grid_dim, [32, 1, 1]);
        assert_eq!(k.block_dim, [128, 1, 1]);
        assert_eq!(k.cluster_dim, None);
        assert_eq!(k.symbol.as_deref(), Some("_Z13gather_kernelPKiS0_Pii"));

        // nvidia-smi on that machine: NVIDIA H200, bus id 00000000:00:06.0,
        // driver 580.159.04, CUDA 13.0 (fixtures/real-gpu/system/).
        assert_eq!(core.devices.len(), 1);
        let d = &core.devices[0];
        assert_eq!(d.name, "NVIDIA H200");
        assert_eq!(d.sm_type, "sm_90");
        assert_eq!((d.pci_bus_id, d.pci_device_id), (0, 6));
        assert_eq!(d.sms, 132);
        assert_eq!(core.driver.as_deref(), Some("580.159, CUDA 13.0"));
        assert_eq!(core.host_tids.len(), 1);
        assert_eq!(k.host_tid, core.host_tids.first().copied());
    }
}

/// Every case in `fixtures/gpu-cores/` (including ones added later) is
/// checked against its cuda-gdb output.
#[test]
fn every_fixture_matches_cudagdb() {
    let cases = common::cases();
    assert!(cases.len() >= 2, "fixtures missing: {cases:?}");
    for case in cases {
        let (core, gdb) = read(&case);
        check_against_cudagdb(&case, &core, &gdb);
    }
}

/// One test per real case, so a failure names it.
fn case(name: &str) {
    let (core, gdb) = read(name);
    check_against_cudagdb(name, &core, &gdb);
}

#[test]
fn device_assert() {
    case("assert");
    let (core, _) = read("assert");
    let e = &core.exceptions[0];
    assert_eq!(
        (e.code, e.name.as_str(), e.scope.as_str()),
        (12, "Warp Assert", "warp")
    );
    assert_eq!(e.lanes.as_deref(), Some("8-9"));
}

#[test]
fn device_assert_default_flags() {
    case("assert_default_flags");
}

#[test]
fn misaligned_address() {
    case("misaligned");
}

#[test]
fn second_context() {
    case("multi_context");
    let (core, _) = read("multi_context");
    assert_eq!(core.host_tids.len(), 2, "two contexts, two host threads");
}

#[test]
fn several_kernels() {
    case("multi_kernel");
}

#[test]
fn stack_overflow() {
    case("stack_overflow");
}

#[test]
fn pytorch_index_assert() {
    case("torch_index");
}
