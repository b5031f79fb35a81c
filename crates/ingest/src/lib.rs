//! Getting bytes out of whatever a failed job left behind.
//!
//! - [`discover`] turns command-line paths into [`Input`]s: files as given,
//!   directories walked in a deterministic order (hidden entries and
//!   special files skipped with a note), `-` for standard input. In a
//!   directory, source code, notebooks, configs and docs are no evidence
//!   and are skipped ([`authored_kind`]); [`Selection`] (`--include`,
//!   `--exclude`) and `.coronerignore` files decide the rest.
//! - [`open`] decompresses by magic bytes (gzip, zstd, xz) and detects what
//!   the content is ([`coroner_model::InputKind`]); decompressed size is
//!   capped relative to compressed size ([`TEXT_EXPANSION`],
//!   [`CORE_EXPANSION`]), and reads text as it was written: UTF-16, a
//!   notebook's outputs, JSON log lines, line ends written as `\n` or
//!   lost, lines listed newest first.
//! - [`BlockReader`] streams blocks of whole lines with bounded memory: a
//!   line longer than the read buffer is cut to [`MAX_LINE`] bytes, never
//!   buffered whole.
//! - [`clean_line`] removes what terminals add (CR, ANSI colour codes).
//! - [`Follow`] reads a file that is still being written, as `tail -f`.
#![deny(unsafe_code)]
// Inputs are untrusted: no panicking shortcuts on the bytes they hold.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod authored;
mod blocks;
mod clean;
mod decoded;
mod discover;
mod escaped;
mod flattened;
mod follow;
mod json_lines;
mod limits;
mod mapped;
mod newest_first;
mod notebook;
mod open;
mod parallel;
#[cfg(unix)]
mod pipe;
mod prefetch;
mod python_source;
mod selection;
#[cfg(unix)]
mod sigbus;
mod source;
#[cfg(test)]
mod test_support;
mod text;
mod utf16;
mod walk;
mod xz_streams;
mod zip_members;
mod zstd_frames;

pub use authored::{authored_kind, is_loadable_elf, Authored, LOOK_LEN};
pub use blocks::{Block, BlockReader, BLOCK_LEN, MAX_LINE};
pub use clean::{clean_line, has_web_text, quote_markers};
pub use discover::{discover, rank_from_path, Discovery, Input, InputSource};
pub use follow::Follow;
pub use json_lines::JsonLog;
pub use limits::{ExpansionLimit, CORE_EXPANSION, TEXT_EXPANSION};
pub use mapped::Mapped;
pub use open::{detect_kind, open, open_reader, Compression, Opened};
pub use parallel::parallel_map;
pub use prefetch::Prefetch;
pub use selection::{GlobError, Selection, IGNORE_FILE};
pub use text::lossy;
pub use utf16::Utf16;
pub use walk::{PassedOver, WalkedDirectory};
pub use xz_streams::XZ_MEMLIMIT;
pub use zip_members::ZipMember;
pub use zstd_frames::ZSTD_WINDOW_LOG_MAX;
