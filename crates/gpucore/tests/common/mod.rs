//! Fixtures and a reader for cuda-gdb's own output, the oracle the tests
//! compare against.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gpu-cores")
}

/// The decompressed dump of `case` (`<case>.nvcudmp.zst`).
pub fn dump(case: &str) -> Vec<u8> {
    let path = fixtures_dir().join(format!("{case}.nvcudmp.zst"));
    let compressed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    zstd::decode_all(compressed.as_slice()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// cuda-gdb's output for `case` (`<case>.cudagdb.txt`).
pub fn cudagdb_text(case: &str) -> String {
    let path = fixtures_dir().join(format!("{case}.cudagdb.txt"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every case that has both a dump and cuda-gdb output, sorted.
pub fn cases() -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(case) = name.strip_suffix(".nvcudmp.zst") {
            if fixtures_dir().join(format!("{case}.cudagdb.txt")).exists() {
                out.push(case.to_string());
            }
        }
    }
    out.sort();
    out
}

#[derive(Debug, Default, Clone)]
pub struct Focus {
    pub kernel: Option<u32>,
    pub grid: Option<u64>,
    pub block: Option<[u32; 3]>,
    pub thread: Option<[u32; 3]>,
    pub device: Option<u32>,
    pub sm: Option<u32>,
    pub warp: Option<u32>,
    pub lane: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Src {
    pub file: String,
    pub line: u32,
    pub function: Option<String>,
}

#[derive(Debug, Clone)]
pub struct GdbFrame {
    pub level: u32,
    pub pc: Option<u64>,
    pub function: String,
    pub grid_dim: Option<[u32; 3]>,
    pub block_dim: Option<[u32; 3]>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct GdbLane {
    pub ln: u32,
    pub pc: u64,
    pub thread: [u32; 3],
    pub exception: String,
}

#[derive(Debug, Clone)]
pub struct GdbKernel {
    pub device: u32,
    pub grid: u64,
    pub grid_dim: [u32; 3],
    pub block_dim: [u32; 3],
    pub invocation: String,
}

/// What cuda-gdb printed.
#[derive(Debug, Default, Clone)]
pub struct CudaGdb {
    pub focus: Focus,
    pub exception: Option<String>,
    pub error_pc: Option<u64>,
    pub error_function: Option<String>,
    pub error_source: Vec<Src>,
    /// The first backtrace printed.
    pub frames: Vec<GdbFrame>,
    /// Lanes of the focused warp (`info cuda lanes`).
    pub lanes: Vec<GdbLane>,
    /// `=> 0xPC <symbol+offset>:` of `x/4i $pc`.
    pub pc_symbol: Option<(u64, String, u64)>,
    pub kernels: Vec<GdbKernel>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `(32,1,1)` → [32, 1, 1].
fn dim(s: &str) -> Option<[u32; 3]> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    let v: Vec<u32> = inner
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

fn after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.find(key).map(|i| &s[i + key.len()..])
}

fn parse_focus(line: &str) -> Focus {
    // [Current focus set to CUDA kernel 0, grid 1, block (23,0,0), thread (32,0,0), device 0, sm 10, warp 1, lane 0]
    let word = |key: &str| {
        after(line, key).and_then(|r| {
            r.split([',', ']'])
                .next()
                .and_then(|v| v.trim().parse().ok())
        })
    };
    let tuple = |key: &str| after(line, key).and_then(|r| r.find(')').and_then(|e| dim(&r[..=e])));
    Focus {
        kernel: word("kernel "),
        grid: word("grid ").map(u64::from),
        block: tuple("block "),
        thread: tuple("thread "),
        device: word("device "),
        sm: word("sm "),
        warp: word("warp "),
        lane: word("lane "),
    }
}

/// `illegal.cu:2 in lookup inlined from illegal.cu:5` → innermost first.
fn parse_source(s: &str) -> Vec<Src> {
    s.split(" inlined from ")
        .filter_map(|part| {
            let (pos, function) = match part.split_once(" in ") {
                Some((p, f)) => (p, Some(f.trim().to_string())),
                None => (part, None),
            };
            let (file, line) = pos.trim().rsplit_once(':')?;
            Some(Src {
                file: file.to_string(),
                line: line.parse().ok()?,
                function,
            })
        })
        .collect()
}

fn parse_frame(line: &str) -> Option<GdbFrame> {
    // #0  0x00007fd74f7a0110 in gather_kernel<<<(32,1,1),(128,1,1)>>> () at /x/illegal.cu:5
    // #1  0x... in foo (a=1) at f.cu:3     |     #0  bar () at f.cu:2 (inlined)
    let rest = line.strip_prefix('#')?;
    let (level, rest) = rest.split_once(' ')?;
    let level = level.parse().ok()?;
    let rest = rest.trim_start();
    let (pc, rest) = if rest.starts_with("0x") {
        let (pc, r) = rest.split_once(" in ")?;
        (hex(pc), r)
    } else {
        (None, rest)
    };
    let (head, at) = match rest.rsplit_once(" at ") {
        Some((h, a)) => (h, Some(a)),
        None => (rest, None),
    };
    let (function, grid_dim, block_dim) = match head.split_once("<<<") {
        Some((name, dims)) => {
            let dims = dims.split(">>>").next().unwrap_or("");
            let (g, b) = dims.split_once("),(").unwrap_or(("", ""));
            (
                name.to_string(),
                dim(&format!("{g})")),
                dim(&format!("({b}")),
            )
        }
        None => (
            head.split(" (").next().unwrap_or(head).trim().to_string(),
            None,
            None,
        ),
    };
    let (file, line_no) = match at.and_then(|a| a.trim().rsplit_once(':')) {
        Some((f, l)) => (Some(f.to_string()), l.trim().parse().ok()),
        None => (None, None),
    };
    Some(GdbFrame {
        level,
        pc,
        function,
        grid_dim,
        block_dim,
        file,
        line: line_no,
    })
}

pub fn parse(text: &str) -> CudaGdb {
    let mut out = CudaGdb::default();
    let mut in_lanes = false;
    let mut in_kernels = false;
    // Consecutive frame lines; the longest run is the backtrace (a
    // focus change prints frame #0 alone).
    let mut blocks: Vec<Vec<GdbFrame>> = Vec::new();
    let mut block: Vec<GdbFrame> = Vec::new();
    for line in text.lines() {
        let t = line.trim_end();
        if t.starts_with("[Current focus set to") && out.focus.device.is_none() {
            out.focus = parse_focus(t);
        } else if let Some(name) = t.strip_prefix("CUDA Exception: ") {
            out.exception.get_or_insert_with(|| name.trim().to_string());
        } else if let Some(rest) = t.strip_prefix("The exception was triggered at PC ") {
            let parts: Vec<&str> = rest.split("  ").filter(|p| !p.is_empty()).collect();
            out.error_pc = parts.first().and_then(|p| hex(p));
            out.error_function = parts.get(1).map(|s| s.trim().to_string());
            if let Some(src) = parts.get(2) {
                let src = src.trim().trim_start_matches('(').trim_end_matches(')');
                out.error_source = parse_source(src);
            }
        } else if t.starts_with('#') {
            if let Some(f) = parse_frame(t) {
                if f.level == 0 && !block.is_empty() {
                    blocks.push(std::mem::take(&mut block));
                }
                block.push(f);
            }
        } else if !block.is_empty() {
            blocks.push(std::mem::take(&mut block));
        }
        if t.trim_start().starts_with("Ln ") && t.contains("Exception") {
            in_lanes = true;
            continue;
        }
        if t.trim_start().starts_with("Kernel ") && t.contains("GridDim") {
            in_kernels = true;
            continue;
        }
        if in_kernels {
            let tokens: Vec<&str> = t.trim_start_matches('*').split_whitespace().collect();
            if tokens.len() >= 9 && tokens[0].parse::<u32>().is_ok() {
                out.kernels.push(GdbKernel {
                    device: tokens[2].parse().unwrap_or(u32::MAX),
                    grid: tokens[3].parse().unwrap_or(u64::MAX),
                    grid_dim: dim(tokens[6]).unwrap_or_default(),
                    block_dim: dim(tokens[7]).unwrap_or_default(),
                    invocation: tokens[8..].join(" "),
                });
                continue;
            }
            in_kernels = false;
        }
        if in_lanes {
            let tokens: Vec<&str> = t.trim_start_matches('*').split_whitespace().collect();
            if tokens.len() >= 4 && tokens[0].parse::<u32>().is_ok() {
                out.lanes.push(GdbLane {
                    ln: tokens[0].parse().unwrap_or(u32::MAX),
                    pc: hex(tokens[2]).unwrap_or(0),
                    thread: dim(tokens[3]).unwrap_or_default(),
                    exception: tokens[4..].join(" "),
                });
                continue;
            }
            if !t.starts_with("Device ") {
                in_lanes = false;
            }
        }
        if let Some(rest) = t.strip_prefix("=> ") {
            // => 0x7fd74f7a0110 <_Z13gather_kernelPKiS0_Pii+272>:	STG.E ...
            if let (Some((pc, r)), None) = (rest.split_once(' '), out.pc_symbol.as_ref()) {
                if let Some(sym) = r
                    .strip_prefix('<')
                    .and_then(|r| r.split_once(">:"))
                    .map(|x| x.0)
                {
                    let (name, off) = sym.rsplit_once('+').unwrap_or((sym, "0"));
                    if let (Some(pc), Ok(off)) = (hex(pc), off.parse()) {
                        out.pc_symbol = Some((pc, name.to_string(), off));
                    }
                }
            }
        }
    }
    if !block.is_empty() {
        blocks.push(block);
    }
    // A device assert prints "Assertion failed." instead of the exception
    // line; the focused lane's row names it.
    if out.exception.is_none() {
        let focused = out.lanes.iter().find(|l| Some(l.ln) == out.focus.lane);
        out.exception = focused
            .map(|l| l.exception.clone())
            .filter(|e| !e.is_empty());
    }
    for b in blocks {
        if b.len() >= out.frames.len() {
            out.frames = b;
        }
    }
    out
}

pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `lookup(int const*, int)` → `lookup`.
pub fn short_name(name: &str) -> &str {
    name.split('(').next().unwrap_or(name)
}
