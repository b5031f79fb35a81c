//! Names of Linux signals and `si_code` values (the generic numbering that
//! x86-64 and aarch64 share).

/// `SIGSEGV`, `SIGABRT`, ... for a signal number.
pub fn signal_name(number: u32) -> String {
    let name = match number {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        23 => "SIGURG",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        28 => "SIGWINCH",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        n if (34..=64).contains(&n) => return format!("SIGRTMIN+{}", n - 34),
        n => return format!("signal {n}"),
    };
    name.to_string()
}

pub const SIGILL: u32 = 4;
pub const SIGTRAP: u32 = 5;
pub const SIGABRT: u32 = 6;
pub const SIGBUS: u32 = 7;
pub const SIGFPE: u32 = 8;
pub const SIGSEGV: u32 = 11;

pub const SI_USER: i32 = 0;
pub const SI_TKILL: i32 = -6;
pub const SI_QUEUE: i32 = -1;

/// The name of `si_code` for `signal`, when known.
pub fn code_name(signal: u32, code: i32) -> Option<&'static str> {
    let generic = match code {
        0 => Some("SI_USER"),
        0x80 => Some("SI_KERNEL"),
        -1 => Some("SI_QUEUE"),
        -2 => Some("SI_TIMER"),
        -3 => Some("SI_MESGQ"),
        -4 => Some("SI_ASYNCIO"),
        -5 => Some("SI_SIGIO"),
        -6 => Some("SI_TKILL"),
        _ => None,
    };
    if code <= 0 || code == 0x80 {
        return generic;
    }
    let table: &[&str] = match signal {
        SIGSEGV => &[
            "SEGV_MAPERR",
            "SEGV_ACCERR",
            "SEGV_BNDERR",
            "SEGV_PKUERR",
            "SEGV_ACCADI",
            "SEGV_ADIDERR",
            "SEGV_ADIPERR",
            "SEGV_MTEAERR",
            "SEGV_MTESERR",
            "SEGV_CPERR",
        ],
        SIGBUS => &[
            "BUS_ADRALN",
            "BUS_ADRERR",
            "BUS_OBJERR",
            "BUS_MCEERR_AR",
            "BUS_MCEERR_AO",
        ],
        SIGILL => &[
            "ILL_ILLOPC",
            "ILL_ILLOPN",
            "ILL_ILLADR",
            "ILL_ILLTRP",
            "ILL_PRVOPC",
            "ILL_PRVREG",
            "ILL_COPROC",
            "ILL_BADSTK",
            "ILL_BADIADDR",
        ],
        SIGFPE => &[
            "FPE_INTDIV",
            "FPE_INTOVF",
            "FPE_FLTDIV",
            "FPE_FLTOVF",
            "FPE_FLTUND",
            "FPE_FLTRES",
            "FPE_FLTINV",
            "FPE_FLTSUB",
        ],
        SIGTRAP => &["TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT"],
        _ => &[],
    };
    let index = usize::try_from(code).ok()?.checked_sub(1)?;
    table.get(index).copied()
}

/// Whether `signal` with `code` carries a fault address in `si_addr`.
pub fn has_fault_address(signal: u32, code: i32) -> bool {
    matches!(signal, SIGSEGV | SIGBUS | SIGILL | SIGFPE) && code > 0 && code != 0x80
}

/// Whether `code` means a process sent the signal (`kill`, `tgkill`,
/// `sigqueue`), so `si_pid` is the sender.
pub fn has_sender(code: i32) -> bool {
    matches!(code, SI_USER | SI_TKILL | SI_QUEUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(code_name(SIGSEGV, 1), Some("SEGV_MAPERR"));
        assert_eq!(code_name(SIGSEGV, 2), Some("SEGV_ACCERR"));
        assert_eq!(code_name(SIGBUS, 2), Some("BUS_ADRERR"));
        assert_eq!(code_name(SIGABRT, -6), Some("SI_TKILL"));
        assert_eq!(code_name(SIGSEGV, 0), Some("SI_USER"));
        assert_eq!(code_name(SIGSEGV, 99), None);
        assert_eq!(code_name(SIGSEGV, i32::MIN), None);
    }
}
