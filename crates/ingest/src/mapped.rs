//! Core dumps as byte slices without reading them into memory: a plain
//! file is memory-mapped; a compressed one is decompressed, as a stream, into
//! an unlinked temporary file that is then mapped.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;

/// The bytes of a file, memory-mapped. Should the file shrink while it is
/// mapped, the bytes past its new end read as zeros instead of killing
/// the process, and [`Mapped::shrank`] says so.
#[derive(Debug)]
pub struct Mapped {
    /// Dropped before the map, so the guard never outlives it.
    #[cfg(unix)]
    guard: Option<crate::sigbus::Guard>,
    map: Option<memmap2::Mmap>,
    file: Option<File>,
}

impl Mapped {
    /// Maps the file at `path`, which must be a regular file: opening a
    /// FIFO would wait for a writer, and a device can be endless.
    pub fn open(path: &Path) -> io::Result<Mapped> {
        Mapped::of_file(crate::open::open_regular(path)?)
    }

    /// Decompressed `reader` written to an unlinked temporary file, then
    /// mapped; at most `limit` bytes are written before giving up with an
    /// error.
    pub fn spill(reader: &mut dyn Read, limit: u64) -> io::Result<Mapped> {
        let mut file = tempfile::tempfile()?;
        let written = io::copy(&mut reader.take(limit.saturating_add(1)), &mut file)?;
        if written > limit {
            return Err(io::Error::other(format!(
                "the temporary copy of the core stopped at {limit} bytes, the most a core may \
                 take on disk"
            )));
        }
        Mapped::of_file(file)
    }

    fn of_file(file: File) -> io::Result<Mapped> {
        if file.metadata()?.len() == 0 {
            // Mapping an empty file fails on some systems; nothing to map.
            return Ok(Mapped {
                #[cfg(unix)]
                guard: None,
                map: None,
                file: None,
            });
        }
        // SAFETY: the map is read-only and private to this process. Another
        // process truncating the file while it is mapped would raise SIGBUS
        // on access past the new end: the guard answers that with zeros
        // and records it (see `sigbus`).
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Mapped {
            #[cfg(unix)]
            guard: crate::sigbus::Guard::new(map.as_ptr(), map.len()),
            map: Some(map),
            file: Some(file),
        })
    }

    /// Whether the file shrank while it was mapped: some bytes read as
    /// zeros, or its size is now less than what was mapped. What was read
    /// from it cannot be trusted in full.
    pub fn shrank(&self) -> bool {
        #[cfg(unix)]
        if self.guard.as_ref().is_some_and(|g| g.shrank()) {
            return true;
        }
        match (&self.file, &self.map) {
            (Some(file), Some(map)) => file.metadata().is_ok_and(|m| m.len() < map.len() as u64),
            _ => false,
        }
    }
}

impl Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spill_maps_what_was_read() {
        let mut data: &[u8] = b"hello core";
        let mapped = Mapped::spill(&mut data, 1 << 20).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&*mapped, b"hello core");
    }

    #[test]
    fn spill_stops_at_the_limit() {
        let mut data: &[u8] = &[0u8; 100];
        assert!(Mapped::spill(&mut data, 10).is_err());
    }

    #[test]
    fn special_files_are_not_mapped() {
        let err = Mapped::open(Path::new("/dev/null")).err();
        assert!(err.is_some_and(|e| e.to_string().contains("not a regular file")));
        assert!(Mapped::open(Path::new("/")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_file_truncated_while_mapped_reads_zeros_and_says_so() {
        let file = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(file.path(), vec![7u8; 256 * 1024]).unwrap_or_else(|e| panic!("{e}"));
        let mapped = Mapped::open(file.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!mapped.shrank());
        // Another writer cuts it to 4 KiB, as a crashing job's core that
        // is still being written or is rotated away.
        let other = std::fs::OpenOptions::new()
            .write(true)
            .open(file.path())
            .unwrap_or_else(|e| panic!("{e}"));
        other.set_len(4096).unwrap_or_else(|e| panic!("{e}"));
        let sum: u64 = mapped.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 7 * 4096, "the bytes past the new end read as zeros");
        assert!(mapped.shrank());
    }

    #[test]
    fn empty_file_maps_to_no_bytes() {
        let file = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
        let mapped = Mapped::open(file.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(mapped.is_empty());
    }
}
