//! Opening a named pipe given on the command line without waiting for a
//! writer: opened non-blocking (which returns at once even with no writer),
//! then switched back to blocking reads, so that the bytes of a writer that
//! is there (`<(cmd)`, a pipe on standard input) are read as they come, and
//! a FIFO nobody writes to reads as empty instead of holding the run.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

pub(crate) fn open_pipe(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is a descriptor this function owns through `file`;
    // F_GETFL and F_SETFL only read and change its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}
