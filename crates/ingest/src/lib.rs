//! Getting bytes out of whatever a failed job left behind.
//!
//! - [`discover`] turns command-line paths into [`Input`]s: files as given,
//!   directories walked in a deterministic order (hidden entries and
//!   special files skipped with a note), `-` for standard input.
//! - [`open`] decompresses by magic bytes (gzip, zstd, xz) and detects what
//!   the content is ([`coroner_model::InputKind`]).
//! - [`LineReader`] streams lines with bounded memory: a line longer than
//!   [`MAX_LINE`] is truncated for matching, never buffered whole.
//! - [`clean_line`] removes what terminals add (CR, ANSI colour codes).

mod clean;
mod discover;
mod lines;
mod open;

pub use clean::clean_line;
pub use discover::{discover, rank_from_path, Discovery, Input, InputSource};
pub use lines::{LineReader, RawLine, MAX_LINE};
pub use open::{detect_kind, open, Compression, Opened};
