//! Damaged input never panics: truncation, flipped bytes, absurd section
//! headers, empty and foreign input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use coroner_gpucore::read_gpu_core;

const CASES: [&str; 2] = ["gpu_light_679", "gpu_full_696"];

fn shoff(d: &[u8]) -> usize {
    u64::from_le_bytes(d[0x28..0x30].try_into().unwrap()) as usize
}

fn shnum(d: &[u8]) -> usize {
    u16::from_le_bytes(d[0x3c..0x3e].try_into().unwrap()) as usize
}

/// Offset of the header of the first section of `sh_type`.
fn header_of(d: &[u8], sh_type: u32) -> usize {
    let base = shoff(d);
    (0..shnum(d))
        .map(|i| base + i * 64)
        .find(|&h| u32::from_le_bytes(d[h + 4..h + 8].try_into().unwrap()) == sh_type)
        .expect("section type present")
}

/// Offsets of the headers of every section of `sh_type`.
fn headers_of(d: &[u8], sh_type: u32) -> Vec<usize> {
    let base = shoff(d);
    (0..shnum(d))
        .map(|i| base + i * 64)
        .filter(|&h| u32::from_le_bytes(d[h + 4..h + 8].try_into().unwrap()) == sh_type)
        .collect()
}

fn put_u64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn truncated_dumps_never_panic() {
    for case in CASES {
        let dump = common::dump(case);
        for i in 0..=64 {
            let len = dump.len() * i / 64;
            match read_gpu_core(&dump[..len]) {
                Ok(core) => {
                    if len < dump.len() {
                        assert!(!core.warnings.is_empty(), "{case} cut at {len}: no warning");
                    }
                }
                Err(e) => assert!(len < 64, "{case} cut at {len}: {e}"),
            }
        }
    }
}

/// A dump cut inside its section header table still reports the sections
/// whose headers survived, with a warning.
#[test]
fn truncated_section_headers_are_reported() {
    let dump = common::dump("gpu_light_679");
    let cut = shoff(&dump) + 64 * 40;
    let core = read_gpu_core(&dump[..cut]).unwrap();
    assert!(
        core.warnings
            .iter()
            .any(|w| w.contains("section headers declared")),
        "{:?}",
        core.warnings
    );
    assert_eq!(core.devices.len(), 1, "the device table's header survived");
}

#[test]
fn flipped_bytes_never_panic() {
    for case in CASES {
        let original = common::dump(case);
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _round in 0..48 {
            let mut d = original.clone();
            for _ in 0..64 {
                let at = (next() % d.len() as u64) as usize;
                d[at] ^= (next() & 0xff) as u8 | 1;
            }
            // Also hit the section headers and tables, where damage matters.
            let headers = shoff(&d)..d.len();
            for _ in 0..32 {
                let at = headers.start + (next() % headers.len() as u64) as usize;
                d[at] ^= (next() & 0xff) as u8 | 1;
            }
            let _ = read_gpu_core(&d);
        }
    }
}

#[test]
fn absurd_section_headers_are_survived() {
    let original = common::dump("gpu_light_679");
    for (sh_type, field, value) in [
        (0x8000_000f_u32, 56, u64::MAX),          // lane table entsize
        (0x8000_000f, 56, 1),                     // lane table entsize 1
        (0x8000_000f, 56, 0),                     // lane table entsize 0
        (0x8000_0009, 32, u64::MAX),              // device table size
        (0x8000_0009, 24, u64::MAX - 4),          // device table offset
        (0x8000_000b, 32, 1 << 40),               // SM table size
        (0x8000_000c, 56, 3),                     // grid table entsize 3
        (0x8000_0007, 32, u64::MAX),              // a cubin's size
        (0x8000_0016, 24, original.len() as u64), // metadata at the very end
    ] {
        let mut d = original.clone();
        let h = header_of(&d, sh_type);
        put_u64(&mut d, h + field, value);
        if sh_type == 0x8000_0007 {
            // Damage every cubin, so the kernel's own is hit.
            for h in headers_of(&original, sh_type) {
                put_u64(&mut d, h + field, value);
            }
        }
        let core = read_gpu_core(&d).unwrap_or_else(|e| panic!("{sh_type:#x}+{field}: {e}"));
        assert!(
            !core.warnings.is_empty(),
            "{sh_type:#x}+{field}={value}: no warning"
        );
    }
    // Extended numbering that claims far more sections than exist.
    let mut d = original.clone();
    d[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
    put_u64(&mut d, shoff(&original) + 32, u64::MAX);
    let core = read_gpu_core(&d).unwrap();
    assert!(core
        .warnings
        .iter()
        .any(|w| w.contains("section headers declared")));
    // Section header table offset past the end.
    let mut d = original.clone();
    put_u64(&mut d, 0x28, u64::MAX);
    let core = read_gpu_core(&d).unwrap();
    assert!(!core.warnings.is_empty());
}

#[test]
fn empty_and_foreign_input_is_an_error() {
    assert!(read_gpu_core(&[]).is_err());
    assert!(read_gpu_core(b"\x7fELF").is_err());
    assert!(read_gpu_core(&[0x1f, 0x8b, 8, 0, 0, 0]).is_err());
    let mut d = common::dump("gpu_light_679");
    d[7] = 0; // EI_OSABI
    assert!(read_gpu_core(&d).is_err());
    let mut d = common::dump("gpu_light_679");
    d[16] = 1; // ET_REL
    assert!(read_gpu_core(&d).is_err());
    let mut d = common::dump("gpu_light_679");
    d[18] = 0x3e; // x86-64
    assert!(read_gpu_core(&d).is_err());
    // The host executable of a test is ELF but not a CUDA core.
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let err = read_gpu_core(&exe).unwrap_err();
    assert!(
        err.to_string().starts_with("not a CUDA GPU core dump"),
        "{err}"
    );
}

/// A bare ELF header of a CUDA core, with nothing after it, is read as an
/// empty dump with a warning, not rejected.
#[test]
fn header_only_dump_is_ok_with_warnings() {
    let d = common::dump("gpu_light_679");
    let core = read_gpu_core(&d[..64]).unwrap();
    assert!(core.devices.is_empty() && core.exceptions.is_empty());
    assert!(!core.warnings.is_empty());
}

/// `read_gpu_core` on the full dump, in release builds:
/// `cargo test -p coroner-gpucore --release --test robustness -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_full_dump() {
    let d = common::dump("gpu_full_696");
    let runs = 50;
    let start = std::time::Instant::now();
    for _ in 0..runs {
        std::hint::black_box(read_gpu_core(std::hint::black_box(&d)).unwrap());
    }
    let each = start.elapsed() / runs;
    println!(
        "read_gpu_core on gpu_full_696 ({} bytes): {each:?} per call",
        d.len()
    );
}
