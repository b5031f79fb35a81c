//! A mapped file that another process truncates raises SIGBUS on the next
//! access past its new end, which would kill the whole run. While a
//! [`Guard`] is held for a mapping, a SIGBUS inside it is answered by
//! mapping a page of zeros over the faulting page, so the access goes on
//! and reads zeros, and the guard records that the file shrank: the reader
//! of that one input reports it as an input error. A SIGBUS anywhere else
//! goes to the handler that was there before (the standard library's).
//!
//! Copying every core to a private file first would also be safe, but it
//! doubles the disk traffic and space of the largest inputs; reading into
//! memory would not be bounded. Mapping a zero page from the handler is
//! async-signal-safe (one `mmap` system call) and costs nothing until a
//! file actually shrinks.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// Mappings guarded at once at most; past this a mapping is unguarded.
const SLOTS: usize = 64;

/// One guarded mapping: its address range (`start` 0 when free), and
/// whether a fault inside it was answered with zeros.
struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    shrank: AtomicBool,
}

static SLOT_LIST: [Slot; SLOTS] = [const {
    Slot {
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        shrank: AtomicBool::new(false),
    }
}; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALL: Once = Once::new();

/// A guarded mapping; dropping it ends the guard.
#[derive(Debug)]
pub(crate) struct Guard {
    slot: &'static Slot,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").finish_non_exhaustive()
    }
}

impl Guard {
    /// Guards the `len` bytes mapped at `start`; `None` when every slot is
    /// taken.
    pub(crate) fn new(start: *const u8, len: usize) -> Option<Guard> {
        install();
        let start = start as usize;
        for slot in &SLOT_LIST {
            if slot
                .start
                .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                slot.shrank.store(false, Ordering::Relaxed);
                slot.end.store(start.saturating_add(len), Ordering::Release);
                return Some(Guard { slot });
            }
        }
        None
    }

    /// Whether an access past the end of the file was answered with zeros.
    pub(crate) fn shrank(&self) -> bool {
        self.slot.shrank.load(Ordering::Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.slot.end.store(0, Ordering::Release);
        self.slot.start.store(0, Ordering::Release);
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sysconf and sigaction are called with valid arguments;
        // the handler only touches atomics and calls mmap and sigaction,
        // which are async-signal-safe.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::Relaxed);
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0 {
                let _ = PREVIOUS.set(previous);
            }
        }
    });
}

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in &SLOT_LIST {
        let start = slot.start.load(Ordering::Acquire);
        let end = slot.end.load(Ordering::Acquire);
        if start == 0 || addr < start || addr >= end {
            continue;
        }
        let page = PAGE.load(Ordering::Relaxed);
        let at = addr & !(page - 1);
        // SAFETY: the page lies inside a mapping this process made and
        // holds; replacing it with zeros changes only what it reads.
        let zeros = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            slot.shrank.store(true, Ordering::Release);
            return;
        }
    }
    // Not ours: put the previous handler back; the access faults again and
    // it decides.
    if let Some(previous) = PREVIOUS.get() {
        // SAFETY: restores the action saved when the guard was installed.
        unsafe {
            libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
        }
    }
}
