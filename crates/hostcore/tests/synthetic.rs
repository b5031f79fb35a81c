//! Cores built in the test from the kernel's note layouts: an aarch64
//! process (frame-pointer walk, pointer authentication, note decoding) and
//! damaged inputs that must give partial results, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use coroner_hostcore::{read_host_core, HostCoreError, Options};

const EM_AARCH64: u16 = 183;
const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
const NT_AUXV: u32 = 6;
const NT_SIGINFO: u32 = 0x5349_4749;
const NT_FILE: u32 = 0x4649_4c45;
const NT_ARM_PAC_MASK: u32 = 0x406;

struct Load {
    vaddr: u64,
    flags: u32,
    data: Vec<u8>,
    memsz: u64,
}

/// A little ELF64 core writer: header, program headers, one PT_NOTE,
/// then the PT_LOAD contents.
fn write_core(machine: u16, notes: &[(&str, u32, Vec<u8>)], loads: &[Load]) -> Vec<u8> {
    let phnum = 1 + loads.len();
    let mut note_bytes = Vec::new();
    for (name, kind, desc) in notes {
        let mut name = name.as_bytes().to_vec();
        name.push(0);
        note_bytes.extend((name.len() as u32).to_le_bytes());
        note_bytes.extend((desc.len() as u32).to_le_bytes());
        note_bytes.extend(kind.to_le_bytes());
        note_bytes.extend(&name);
        while note_bytes.len() % 4 != 0 {
            note_bytes.push(0);
        }
        note_bytes.extend(desc);
        while note_bytes.len() % 4 != 0 {
            note_bytes.push(0);
        }
    }
    let notes_at = 64 + 56 * phnum;
    let mut data_at = (notes_at + note_bytes.len()).next_multiple_of(4096);
    let mut out = vec![0u8; 64];
    out[..4].copy_from_slice(b"\x7fELF");
    out[4] = 2; // 64-bit
    out[5] = 1; // little-endian
    out[6] = 1;
    out[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
    out[18..20].copy_from_slice(&machine.to_le_bytes());
    out[20..24].copy_from_slice(&1u32.to_le_bytes());
    out[32..40].copy_from_slice(&64u64.to_le_bytes());
    out[52..54].copy_from_slice(&64u16.to_le_bytes());
    out[54..56].copy_from_slice(&56u16.to_le_bytes());
    out[56..58].copy_from_slice(&(phnum as u16).to_le_bytes());
    let phdr = |out: &mut Vec<u8>,
                kind: u32,
                flags: u32,
                offset: u64,
                vaddr: u64,
                filesz: u64,
                memsz: u64| {
        out.extend(kind.to_le_bytes());
        out.extend(flags.to_le_bytes());
        out.extend(offset.to_le_bytes());
        out.extend(vaddr.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend(filesz.to_le_bytes());
        out.extend(memsz.to_le_bytes());
        out.extend(4096u64.to_le_bytes());
    };
    phdr(
        &mut out,
        4,
        0,
        notes_at as u64,
        0,
        note_bytes.len() as u64,
        0,
    );
    let mut offsets = Vec::new();
    for load in loads {
        offsets.push(data_at);
        phdr(
            &mut out,
            1,
            load.flags,
            data_at as u64,
            load.vaddr,
            load.data.len() as u64,
            load.memsz,
        );
        data_at = (data_at + load.data.len()).next_multiple_of(4096);
    }
    out.extend(&note_bytes);
    for (load, at) in loads.iter().zip(offsets) {
        out.resize(at, 0);
        out.extend(&load.data);
    }
    out
}

fn put(buf: &mut [u8], at: usize, value: u64) {
    buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

const STACK: u64 = 0x7000_0000;
const TEXT: u64 = 0x40_0000;
const PAC_BITS: u64 = 0x002a_0000_0000_0000;

fn aarch64_core() -> Vec<u8> {
    // Stack with three frame records: fp0 -> fp1 -> fp2 (end).
    let mut stack = vec![0u8; 0x1000];
    let (fp0, fp1, fp2) = (STACK + 0x100, STACK + 0x200, STACK + 0x300);
    put(&mut stack, 0x100, fp1);
    put(&mut stack, 0x108, (TEXT + 0x1238) | PAC_BITS);
    put(&mut stack, 0x200, fp2);
    put(&mut stack, 0x208, TEXT + 0x1560);
    put(&mut stack, 0x300, 0);
    put(&mut stack, 0x308, 0);
    stack[0x800..0x808].copy_from_slice(b"aarch64\0");
    stack[0x900..0x90c].copy_from_slice(b"/opt/app/tr\0");

    let mut prstatus = vec![0u8; 392];
    prstatus[12..14].copy_from_slice(&11u16.to_le_bytes());
    prstatus[32..36].copy_from_slice(&4242u32.to_le_bytes());
    let reg = |i: usize| 112 + 8 * i;
    put(&mut prstatus, reg(29), fp0);
    put(&mut prstatus, reg(30), (TEXT + 0x1238) | PAC_BITS);
    put(&mut prstatus, reg(31), STACK + 0xf0);
    put(&mut prstatus, reg(32), TEXT + 0x1000);

    let mut second = prstatus.clone();
    second[32..36].copy_from_slice(&4243u32.to_le_bytes());
    put(&mut second, reg(29), fp1);
    put(&mut second, reg(31), STACK + 0x1f0);
    put(&mut second, reg(32), TEXT + 0x2000);
    put(&mut second, reg(30), TEXT + 0x1560);

    let mut psinfo = vec![0u8; 136];
    psinfo[24..28].copy_from_slice(&4242u32.to_le_bytes());
    psinfo[40..47].copy_from_slice(b"trainer");
    psinfo[56..74].copy_from_slice(b"trainer --epochs 3");

    let mut siginfo = vec![0u8; 128];
    siginfo[0..4].copy_from_slice(&11u32.to_le_bytes());
    siginfo[8..12].copy_from_slice(&2i32.to_le_bytes());
    put(&mut siginfo, 16, 0xdead_0000);

    let mut auxv = Vec::new();
    for (k, v) in [
        (15u64, STACK + 0x800),
        (31, STACK + 0x900),
        (9, TEXT + 0x100),
        (0, 0),
    ] {
        auxv.extend(k.to_le_bytes());
        auxv.extend(v.to_le_bytes());
    }

    let mut files = Vec::new();
    for v in [1u64, 4096, TEXT, TEXT + 0x10000, 0] {
        files.extend(v.to_le_bytes());
    }
    files.extend(b"/opt/app/trainer\0");

    let mut pac = Vec::new();
    pac.extend(0x00ff_0000_0000_0000u64.to_le_bytes());
    pac.extend(0x00ff_0000_0000_0000u64.to_le_bytes());

    write_core(
        EM_AARCH64,
        &[
            ("CORE", NT_PRSTATUS, prstatus),
            ("CORE", NT_PRPSINFO, psinfo),
            ("CORE", NT_SIGINFO, siginfo),
            ("CORE", NT_AUXV, auxv),
            ("CORE", NT_FILE, files),
            ("LINUX", NT_ARM_PAC_MASK, pac),
            ("CORE", NT_PRSTATUS, second),
        ],
        &[
            Load {
                vaddr: TEXT,
                flags: 5,
                data: Vec::new(),
                memsz: 0x10000,
            },
            Load {
                vaddr: STACK,
                flags: 6,
                data: stack,
                memsz: 0x1000,
            },
        ],
    )
}

#[test]
fn aarch64_notes_and_frame_pointer_walk() {
    let core = read_host_core(&aarch64_core(), &Options::default()).unwrap();
    assert_eq!(core.arch, "aarch64");
    assert_eq!(core.process.pid, 4242);
    assert_eq!(core.process.name, "trainer");
    assert_eq!(core.process.args, "trainer --epochs 3");
    assert_eq!(core.process.platform.as_deref(), Some("aarch64"));
    assert_eq!(core.process.executable.as_deref(), Some("/opt/app/tr"));
    let signal = core.signal.as_ref().unwrap();
    assert_eq!(
        (signal.name.as_str(), signal.code_name.as_deref()),
        ("SIGSEGV", Some("SEGV_ACCERR"))
    );
    assert_eq!(signal.fault_address, Some(0xdead_0000));
    assert_eq!(signal.sender_pid, None);
    assert_eq!(core.threads.len(), 2);
    assert_eq!(core.threads[0].tid, 4242);
    assert!(core.threads[0].crashed && !core.threads[1].crashed);

    let frames = &core.threads[0].frames;
    let pcs: Vec<u64> = frames.iter().map(|f| f.pc).collect();
    assert_eq!(
        pcs,
        [TEXT + 0x1000, TEXT + 0x1238, TEXT + 0x1560],
        "{frames:#?}"
    );
    let trust: Vec<&str> = frames.iter().map(|f| f.trust.as_str()).collect();
    assert_eq!(trust, ["context", "frame-pointer", "frame-pointer"]);
    assert!(frames
        .iter()
        .all(|f| f.module.as_deref() == Some("/opt/app/trainer")));
    assert_eq!(frames[1].module_offset, Some(0x1238));
    assert!(frames.iter().all(|f| f.function.is_none()));

    // A leaf whose return address is still in the link register.
    let second: Vec<u64> = core.threads[1].frames.iter().map(|f| f.pc).collect();
    assert_eq!(
        second,
        [TEXT + 0x2000, TEXT + 0x1560],
        "{:#?}",
        core.threads[1]
    );

    let module = &core.modules[0];
    assert_eq!(
        (module.path.as_str(), module.status.as_str()),
        ("/opt/app/trainer", "missing")
    );
    assert_eq!(core.fault_library.as_deref(), Some("user"));
    assert!(!core.cuda_loaded);
}

#[test]
fn not_a_core() {
    assert!(matches!(
        read_host_core(&[], &Options::default()),
        Err(HostCoreError::NotElf)
    ));
    assert!(matches!(
        read_host_core(b"\x7fEL", &Options::default()),
        Err(HostCoreError::NotElf)
    ));
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert!(matches!(
        read_host_core(&exe, &Options::default()),
        Err(HostCoreError::NotCore(_))
    ));
}

/// A small deterministic generator for noise.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect()
}

#[test]
fn random_bytes_never_panic() {
    for seed in 0..64 {
        let mut bytes = noise(seed, 4096);
        let _ = read_host_core(&bytes, &Options::default());
        // With a core's identification, everything after it is noise.
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[16..18].copy_from_slice(&4u16.to_le_bytes());
        bytes[18..20].copy_from_slice(&[62u16, 183][seed as usize % 2].to_le_bytes());
        assert!(read_host_core(&bytes, &Options::default()).is_ok());
    }
    // Noise after valid notes and headers.
    let core = aarch64_core();
    for seed in 0..32 {
        let mut bytes = core.clone();
        let at = (seed as usize * 97) % bytes.len();
        let end = (at + 64).min(bytes.len());
        bytes[at..end].copy_from_slice(&noise(seed, end - at));
        let result = read_host_core(&bytes, &Options::default());
        // Noise over the identification may make it not a core at all.
        assert!(result.is_ok() || at < 20, "noise at {at}");
    }
}

#[test]
fn truncated_cores_give_partial_results() {
    let bytes = common::unzstd(&common::host_cores().join("core.throw.zst"));
    let exe = common::binary(&common::host_cores().join("throw.zst"));
    let options = Options {
        exe: Some(exe),
        ..Options::default()
    };
    let full = read_host_core(&bytes, &options).unwrap();
    assert!(full.warnings.is_empty(), "{:?}", full.warnings);
    for cut in [
        0,
        4,
        17,
        18,
        63,
        64,
        100,
        800,
        0x500,
        0x1000,
        0x3000,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let result = read_host_core(&bytes[..cut], &options);
        if cut < 18 {
            assert!(result.is_err(), "cut at {cut}");
            continue;
        }
        let core = result.unwrap();
        assert!(!core.warnings.is_empty(), "cut at {cut}: no warning");
        if cut >= bytes.len() / 2 {
            // Notes are at the front: threads and signal survive.
            assert_eq!(core.threads.len(), full.threads.len());
            assert_eq!(core.signal, full.signal);
            assert!(
                core.warnings.iter().any(|w| w.contains("truncated")),
                "{:?}",
                core.warnings
            );
        }
    }
}

#[test]
fn absurd_note_size_is_a_warning() {
    let mut core = aarch64_core();
    // The first note's descsz claims almost 4 GiB.
    let notes_at = 64 + 56 * 3;
    core[notes_at + 4..notes_at + 8].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let host = read_host_core(&core, &Options::default()).unwrap();
    assert!(host.threads.is_empty());
    assert!(
        host.warnings.iter().any(|w| w.contains("claims")),
        "{:?}",
        host.warnings
    );
    // A mapped-files note claiming billions of entries.
    let mut files = Vec::new();
    for v in [u64::MAX / 2, 4096] {
        files.extend(v.to_le_bytes());
    }
    let core = write_core(EM_AARCH64, &[("CORE", NT_FILE, files)], &[]);
    let host = read_host_core(&core, &Options::default()).unwrap();
    assert!(host.modules.is_empty());
    assert!(
        host.warnings.iter().any(|w| w.contains("entries")),
        "{:?}",
        host.warnings
    );
}
