//! Exception codes (`CUDBGException_t`): names as cuda-gdb prints them and
//! the level the hardware attributes each one to.

/// The "unknown" code.
pub(crate) const UNKNOWN: u32 = 0xffff_ffff;

/// Name of an exception code as cuda-gdb prints it (`Warp Illegal
/// Address`); `None` for 0 (no exception) and for codes this reader does
/// not know.
pub fn exception_name(code: u32) -> Option<&'static str> {
    Some(match code {
        1 => "Lane Illegal Address",
        2 => "Lane User Stack Overflow",
        3 => "Device Hardware Stack Overflow",
        4 => "Warp Illegal Instruction",
        5 => "Warp Out-of-range Address",
        6 => "Warp Misaligned Address",
        7 => "Warp Invalid Address Space",
        8 => "Warp Invalid PC",
        9 => "Warp Hardware Stack Overflow",
        10 => "Device Illegal Address",
        11 => "Lane Misaligned Address",
        12 => "Warp Assert",
        13 => "Lane Syscall Error",
        14 => "Warp Illegal Address",
        15 => "Lane Nonmigratable Atomsys",
        16 => "Lane Invalid Atomsys",
        17 => "Cluster Out-of-range Address",
        18 => "Cluster Block Not Present",
        19 => "Warp Stack Canary",
        20 => "Warp Tensor Memory Access Check",
        21 => "Warp Tensor Memory Leak",
        22 => "Warp Call Requires Newer Driver",
        23 => "Warp Misaligned PC",
        24 => "Warp PC Overflow",
        25 => "Warp Misaligned Register",
        26 => "Warp Illegal Instruction Encoding",
        27 => "Warp Illegal Instruction Parameter",
        28 => "Warp Out-of-range Register",
        29 => "Warp Invalid Constant Address",
        30 => "Warp MMU Fault",
        31 => "Warp Barrier Arrival Mismatch",
        32 => "Cluster Shared Memory Issue",
        33 => "Warp API Stack Error",
        34 => "Warp Block Not Present",
        35 => "Warp User Stack Overflow",
        36 => "Warp TMA Syscall Error",
        UNKNOWN => "Device Unknown Exception",
        _ => return None,
    })
}

/// The name to report, with a fallback for unknown codes.
pub(crate) fn display_name(code: u32) -> String {
    match exception_name(code) {
        Some(n) => n.to_string(),
        None => format!("Unknown Exception {code}"),
    }
}

/// Where the hardware attributes a code: `lane` (exact PC), `warp` (PC
/// within a few instructions), `cluster` or `device` (kernel at best).
pub(crate) fn scope(code: u32) -> &'static str {
    match code {
        1 | 2 | 11 | 13 | 15 | 16 => "lane",
        3 | 10 | UNKNOWN => "device",
        17 | 18 | 32 => "cluster",
        _ => "warp",
    }
}

/// Sort key: more precise scopes first.
pub(crate) fn precision_rank(scope: &str) -> u8 {
    match scope {
        "lane" => 0,
        "warp" => 1,
        "cluster" => 2,
        "device" => 3,
        _ => 4,
    }
}

/// Lane numbers as ranges: `0-31`, `0-3,8,10-11`.
pub(crate) fn lane_ranges(lanes: &[u32]) -> String {
    let mut sorted = lanes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut iter = sorted.into_iter();
    let Some(mut start) = iter.next() else {
        return String::new();
    };
    let mut end = start;
    let flush = |s: u32, e: u32, out: &mut Vec<String>| {
        if s == e {
            out.push(s.to_string());
        } else {
            out.push(format!("{s}-{e}"));
        }
    };
    for l in iter {
        if Some(l) == end.checked_add(1) {
            end = l;
        } else {
            flush(start, end, &mut out);
            start = l;
            end = l;
        }
    }
    flush(start, end, &mut out);
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(lane_ranges(&(0..32).collect::<Vec<_>>()), "0-31");
        assert_eq!(lane_ranges(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(lane_ranges(&[5]), "5");
        assert_eq!(lane_ranges(&[]), "");
    }

    #[test]
    fn names() {
        assert_eq!(exception_name(14), Some("Warp Illegal Address"));
        assert_eq!(exception_name(12), Some("Warp Assert"));
        assert_eq!(exception_name(30), Some("Warp MMU Fault"));
        assert_eq!(exception_name(35), Some("Warp User Stack Overflow"));
        assert_eq!(exception_name(0), None);
        assert_eq!(exception_name(37), None);
        for c in 1..=36 {
            assert!(exception_name(c).is_some(), "{c}");
        }
    }
}
