//! Executables and shared libraries that lie among the inputs: an incident
//! directory often holds the program that crashed next to its core, so
//! their folders are searched for the binaries a host core names.

use coroner_ingest::{is_loadable_elf, parallel_map, Input, InputSource};
use std::io::Read;
use std::path::PathBuf;

/// Whether the file at `input` is an ELF executable or shared library:
/// known from the walk where it read the file's head, else read here.
pub(crate) fn is_elf_binary(input: &Input) -> bool {
    if let Some(known) = input.loadable_elf {
        return known;
    }
    let InputSource::File(path) = &input.source else {
        return false;
    };
    let mut head = [0u8; 18];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    read.is_ok() && is_loadable_elf(&head)
}

/// The folders holding ELF binaries among `inputs`, without duplicates, in
/// input order. The inputs' heads are read in parallel: a directory may
/// hold thousands.
pub(crate) fn binary_dirs(inputs: &[Input]) -> Vec<PathBuf> {
    let binary = parallel_map(inputs, |_, input| is_elf_binary(input));
    let mut dirs: Vec<PathBuf> = Vec::new();
    let binaries = inputs.iter().zip(binary).filter(|(_, b)| *b);
    for (input, _) in binaries {
        if let InputSource::File(path) = &input.source {
            if let Some(dir) = path.parent() {
                if !dirs.iter().any(|d| d == dir) {
                    dirs.push(dir.to_path_buf());
                }
            }
        }
    }
    dirs
}
