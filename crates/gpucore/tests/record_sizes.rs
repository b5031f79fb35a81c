//! Records grow between driver releases. A dump built with the oldest
//! known record sizes and one with records longer than any known today
//! must read the same. The dumps are built here around the real cubin of
//! the illegal-address fixture, so names and lines are real.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use coroner_gpucore::read_gpu_core;

const BASE: u32 = 0x8000_0000;
const ENTRY: u64 = 0x7fd7_4f7a_0000; // gather_kernel in the fixture's cubin
const ERROR_PC: u64 = ENTRY + 0xf0;
const LANE_PC: u64 = ENTRY + 0x110;

/// The relocated cubin of `gather_kernel` (module row 9) in the light dump.
fn real_cubin() -> Vec<u8> {
    let d = common::dump("gpu_light_679");
    let shoff = u64::from_le_bytes(d[0x28..0x30].try_into().unwrap()) as usize;
    let n = u16::from_le_bytes(d[0x3c..0x3e].try_into().unwrap()) as usize;
    for i in 0..n {
        let h = &d[shoff + i * 64..shoff + i * 64 + 64];
        let t = u32::from_le_bytes(h[4..8].try_into().unwrap());
        let info = u32::from_le_bytes(h[44..48].try_into().unwrap());
        if t == BASE + 7 && info == 9 {
            let off = u64::from_le_bytes(h[24..32].try_into().unwrap()) as usize;
            let size = u64::from_le_bytes(h[32..40].try_into().unwrap()) as usize;
            return d[off..off + size].to_vec();
        }
    }
    panic!("cubin not found");
}

/// A record laid out at today's offsets (`known` bytes), cut to `size`
/// (an older layout: later fields absent) or extended to it with bytes a
/// newer layout would hold (unknown here, so not zero).
fn rec(size: usize, known: usize, fields: &[(usize, u64, usize)]) -> Vec<u8> {
    let mut v = vec![0u8; known.max(size)];
    for &(off, value, width) in fields {
        v[off..off + width].copy_from_slice(&value.to_le_bytes()[..width]);
    }
    for b in v.iter_mut().skip(known) {
        *b = 0xee;
    }
    v.truncate(size);
    v
}

struct Sec {
    name: String,
    sh_type: u32,
    link: u32,
    info: u32,
    entsize: u64,
    data: Vec<u8>,
}

fn elf(sections: &[Sec]) -> Vec<u8> {
    let mut shstr = vec![0u8];
    let mut names = Vec::new();
    for s in sections {
        names.push(shstr.len() as u32);
        shstr.extend_from_slice(s.name.as_bytes());
        shstr.push(0);
    }
    let shstr_name = shstr.len() as u32;
    shstr.extend_from_slice(b".shstrtab\0");
    let mut body = vec![0u8; 64];
    let mut placed = Vec::new();
    for s in sections {
        placed.push((body.len() as u64, s.data.len() as u64));
        body.extend_from_slice(&s.data);
    }
    let shstr_off = body.len() as u64;
    body.extend_from_slice(&shstr);
    let shoff = body.len() as u64;
    let count = sections.len() + 2;
    let mut headers = vec![0u8; 64]; // null section
    let mut push = |name: u32, t: u32, off: u64, size: u64, link: u32, info: u32, ent: u64| {
        let mut h = vec![0u8; 64];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&t.to_le_bytes());
        h[24..32].copy_from_slice(&off.to_le_bytes());
        h[32..40].copy_from_slice(&size.to_le_bytes());
        h[40..44].copy_from_slice(&link.to_le_bytes());
        h[44..48].copy_from_slice(&info.to_le_bytes());
        h[56..64].copy_from_slice(&ent.to_le_bytes());
        headers.extend_from_slice(&h);
    };
    for (i, s) in sections.iter().enumerate() {
        push(
            names[i],
            s.sh_type,
            placed[i].0,
            placed[i].1,
            s.link,
            s.info,
            s.entsize,
        );
    }
    push(shstr_name, 3, shstr_off, shstr.len() as u64, 0, 0, 0);
    body.extend_from_slice(&headers);
    body[0..4].copy_from_slice(b"\x7fELF");
    body[4] = 2;
    body[5] = 1;
    body[6] = 1;
    body[7] = 0x33;
    body[16..18].copy_from_slice(&4u16.to_le_bytes());
    body[18..20].copy_from_slice(&0xbeu16.to_le_bytes());
    body[20..24].copy_from_slice(&1u32.to_le_bytes());
    body[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    body[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    body[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    body[0x3c..0x3e].copy_from_slice(&(count as u16).to_le_bytes());
    body[0x3e..0x40].copy_from_slice(&((count - 1) as u16).to_le_bytes());
    body
}

struct Sizes {
    device: usize,
    grid: usize,
    sm: usize,
    cta: usize,
    warp: usize,
    lane: usize,
}

const OLDEST: Sizes = Sizes {
    device: 72,
    grid: 104,
    sm: 8,
    cta: 24,
    warp: 32,
    lane: 48,
};
const NEWER: Sizes = Sizes {
    device: 104,
    grid: 168,
    sm: 72,
    cta: 80,
    warp: 112,
    lane: 96,
};

/// One device, one context, one module (the real cubin), one grid; SM 1
/// holds block (5,0,0) whose warp 3 has lanes 0-15 faulting. With
/// `grid_rows = false` the grid table is empty.
fn build(z: &Sizes, grid_rows: bool, sm_only: bool) -> Vec<u8> {
    build_with(z, grid_rows, sm_only, true)
}

fn build_with(z: &Sizes, grid_rows: bool, sm_only: bool, lane_exceptions: bool) -> Vec<u8> {
    let strtab = b"\0NVIDIA H200\0sm_90\0".to_vec();
    let mut s = Vec::new();
    let sec = |name: &str, n: u32, link: u32, info: u32, ent: usize, data: Vec<u8>| Sec {
        name: name.to_string(),
        sh_type: BASE + n,
        link,
        info,
        entsize: ent as u64,
        data,
    };
    // Section indices are 1-based (0 is the null section).
    s.push(Sec {
        name: ".strtab".into(),
        sh_type: 3,
        link: 0,
        info: 0,
        entsize: 0,
        data: strtab,
    }); // 1
    s.push(sec(
        ".cudbg.devtbl",
        9,
        0,
        0,
        z.device,
        rec(
            z.device,
            88,
            &[(0, 1, 8), (16, 13, 8), (28, 0x41, 4), (36, 132, 4)],
        ),
    )); // 2
    s.push(sec(
        ".cudbg.ctxtbl.dev0",
        10,
        2,
        0,
        40,
        rec(40, 40, &[(0, 0xc0, 8), (36, 4242, 4)]),
    )); // 3
    s.push(sec(
        ".cudbg.modtbl.dev0.ctx0",
        16,
        3,
        0,
        8,
        rec(8, 8, &[(0, 0xabc, 8)]),
    )); // 4
    s.push(sec(".cudbg.relfimg.dev0.ctx0", 7, 4, 0, 0, real_cubin())); // 5
    let grid = rec(
        z.grid,
        136,
        &[
            (0, 7, 8),
            (8, 0xc0, 8),
            (24, ENTRY, 8),
            (32, 0xabc, 8),
            (72, 32, 4),
            (76, 1, 4),
            (80, 1, 4),
            (84, 128, 4),
            (88, 1, 4),
            (92, 1, 4),
            (100, 4242, 4),
        ],
    );
    s.push(sec(
        ".cudbg.gridtbl.dev0",
        12,
        2,
        0,
        z.grid,
        if grid_rows { grid } else { Vec::new() },
    )); // 6
    let mut sms = rec(z.sm, 48, &[(0, 0, 4)]);
    sms.extend(rec(
        z.sm,
        48,
        &[(0, 1, 4), (8, 14, 4), (12, 1, 4), (16, ERROR_PC, 8)],
    ));
    s.push(sec(".cudbg.smtbl.dev0", 11, 2, 0, z.sm, sms)); // 7
    if sm_only {
        return elf(&s);
    }
    s.push(sec(
        ".cudbg.ctatbl.dev0.sm1",
        13,
        7,
        1,
        z.cta,
        rec(z.cta, 56, &[(0, 7, 8), (8, 5, 4)]),
    )); // 8
    let warp = rec(
        z.warp,
        80,
        &[
            (0, ERROR_PC, 8),
            (8, 3, 4),
            (12, 0xffff_ffff, 4),
            (16, 0xffff_ffff, 4),
            (24, 1, 4),
        ],
    );
    s.push(sec(".cudbg.wptbl.dev0.sm1.cta0", 14, 8, 0, z.warp, warp)); // 9
    let mut lanes = Vec::new();
    for ln in 0..32u64 {
        let exception = if ln < 16 && lane_exceptions { 14 } else { 0 };
        lanes.extend(rec(
            z.lane,
            64,
            &[
                (0, LANE_PC, 8),
                (8, 0x110, 8),
                (16, ln, 4),
                (20, 96 + ln, 4),
                (32, exception, 4),
            ],
        ));
    }
    s.push(sec(
        ".cudbg.lntbl.dev0.sm1.cta0.wp0",
        15,
        9,
        0,
        z.lane,
        lanes,
    )); // 10
    elf(&s)
}

fn check(core: &coroner_model::GpuCore) {
    assert_eq!(core.devices.len(), 1, "{:?}", core.warnings);
    assert_eq!(core.devices[0].name, "NVIDIA H200");
    assert_eq!(core.devices[0].sm_type, "sm_90");
    assert_eq!(core.devices[0].pci_bus_id, 0x41);
    assert_eq!(core.devices[0].sms, 132);
    assert_eq!(core.host_tids, [4242]);
    assert_eq!(core.driver, None);
    let e = &core.exceptions[0];
    assert_eq!(core.exceptions.len(), 1);
    assert_eq!(e.name, "Warp Illegal Address");
    assert_eq!((e.device, e.sm, e.warp), (0, 1, Some(3)));
    assert_eq!(e.lanes.as_deref(), Some("0-15"));
    assert_eq!(e.threads, Some(([96, 0, 0], [111, 0, 0])));
    assert_eq!(e.block, Some([5, 0, 0]));
    assert_eq!(e.pc, Some(ERROR_PC));
    assert_eq!(e.function_offset, Some(0xf0));
    assert_eq!(
        e.kernel.as_deref(),
        Some("gather_kernel(int const*, int const*, int*, int)")
    );
    let lines: Vec<u32> = e.source.iter().map(|s| s.line).collect();
    assert_eq!(lines, [2, 5]);
    assert_eq!(e.backtrace[0].pc, LANE_PC);
    assert_eq!(e.backtrace[0].line, Some(5));
}

#[test]
fn oldest_record_sizes() {
    let core = read_gpu_core(&build(&OLDEST, true, false)).unwrap();
    check(&core);
    assert_eq!(core.kernels[0].grid_dim, [32, 1, 1]);
    assert_eq!(core.kernels[0].host_tid, Some(4242));
    assert!(core.warnings.is_empty(), "{:?}", core.warnings);
}

#[test]
fn newer_record_sizes() {
    let core = read_gpu_core(&build(&NEWER, true, false)).unwrap();
    check(&core);
    assert_eq!(core.kernels[0].block_dim, [128, 1, 1]);
    // The unknown trailing bytes are ignored, and said to be.
    assert!(
        core.warnings.iter().any(|w| w.contains("newer than")),
        "{:?}",
        core.warnings
    );
    // ...including the cluster dims of a grid row, which stay unset.
    assert_eq!(core.kernels[0].cluster_dim, None);
}

/// An empty grid table (seen in the field): the kernel is named from the
/// code address instead.
#[test]
fn empty_grid_table() {
    let core = read_gpu_core(&build(&NEWER, false, false)).unwrap();
    check(&core);
    assert!(core.kernels.is_empty());
    assert!(
        core.warnings
            .iter()
            .any(|w| w.contains("grid table is empty")),
        "{:?}",
        core.warnings
    );
}

/// Warps already gone: only the SM records the exception and error PC.
#[test]
fn sm_level_exception_only() {
    let core = read_gpu_core(&build(&NEWER, true, true)).unwrap();
    let e = &core.exceptions[0];
    assert_eq!(e.scope, "sm");
    assert_eq!(e.name, "Warp Illegal Address");
    assert_eq!((e.device, e.sm, e.warp), (0, 1, None));
    assert_eq!(e.pc, Some(ERROR_PC));
    assert_eq!(
        e.kernel.as_deref(),
        Some("gather_kernel(int const*, int const*, int*, int)")
    );
    assert_eq!(e.source.len(), 2);
    // The oldest SM records carry no exception at all.
    let core = read_gpu_core(&build(&OLDEST, true, true)).unwrap();
    assert!(core.exceptions.is_empty());
}

/// No lane names the exception, but the warp holds a valid error PC: the
/// SM's exception is attributed to that warp's active lanes.
#[test]
fn warp_attributed_sm_exception() {
    let core = read_gpu_core(&build_with(&NEWER, true, false, false)).unwrap();
    assert_eq!(core.exceptions.len(), 1);
    let e = &core.exceptions[0];
    assert_eq!(e.name, "Warp Illegal Address");
    assert_eq!(e.scope, "warp");
    assert_eq!((e.sm, e.warp), (1, Some(3)));
    assert_eq!(e.lanes.as_deref(), Some("0-31"));
    assert_eq!(e.threads, Some(([96, 0, 0], [127, 0, 0])));
    assert_eq!(e.pc, Some(ERROR_PC));
    // Many tables of one newer layout give one warning, not one per table.
    assert_eq!(
        core.warnings
            .iter()
            .filter(|w| w.contains("lane records"))
            .count(),
        1
    );
}
