//! Core dumps as byte slices without reading them into memory: a plain
//! file is memory-mapped; a compressed one is decompressed, as a stream, into
//! an unlinked temporary file that is then mapped.

use coroner_model::shown_path;
use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;

/// The bytes of a file, memory-mapped.
#[derive(Debug)]
pub struct Mapped {
    map: Option<memmap2::Mmap>,
}

impl Mapped {
    /// Maps the file at `path`, which must be a regular file: opening a
    /// FIFO would wait for a writer, and a device can be endless.
    pub fn open(path: &Path) -> io::Result<Mapped> {
        if !std::fs::metadata(path)?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", shown_path(path)),
            ));
        }
        let file = File::open(path)?;
        if !file.metadata()?.is_file() {
            // Replaced between the two looks.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", shown_path(path)),
            ));
        }
        Mapped::of_file(&file)
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
        Mapped::of_file(&file)
    }

    fn of_file(file: &File) -> io::Result<Mapped> {
        if file.metadata()?.len() == 0 {
            // Mapping an empty file fails on some systems; nothing to map.
            return Ok(Mapped { map: None });
        }
        // SAFETY: the map is read-only and private to this process. Another
        // process truncating the file while it is mapped would raise SIGBUS
        // on access; core files and our own unlinked temporary files are not
        // written after they are complete, which is the accepted risk of
        // every tool that maps its input (gdb, ripgrep).
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(Mapped { map: Some(map) })
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

    #[test]
    fn empty_file_maps_to_no_bytes() {
        let file = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
        let mapped = Mapped::open(file.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(mapped.is_empty());
    }
}
