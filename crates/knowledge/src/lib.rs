//! What coroner knows about the codes GPU software prints.
//!
//! The tables live as data files in the repository's `knowledge/` folder
//! and are embedded at build time:
//!
//! - `cuda_error_table.tsv`: every `cudaError_t` and `CUresult` with its
//!   name and message, as printed by a real CUDA 13.0 driver, and
//!   `cuda-errors.toml`: per code number, its category, severity, whether
//!   it is sticky (the context is lost), causes, fixes and source;
//! - `xid-catalog.tsv`: NVIDIA's Xid catalog, every code with its mnemonic
//!   and resolution buckets, and `xid.toml`: for the Xids training jobs
//!   meet, their likely cause and the immediate action in more words;
//! - `nccl-results.toml`, `cublas-status.toml`, `cudnn-status.toml`: the
//!   library status codes.
//!
//! [`Knowledge::builtin`] loads them as uniform [`Entry`]s;
//! [`Knowledge::explain`] answers `coroner explain`; [`generated_rules`]
//! writes the rule files that recognise every CUDA code and Xid in logs.
#![forbid(unsafe_code)]

mod catalog;
mod entry;
mod explain;
mod generate;
mod tables;

pub use catalog::{bucket_action, bucket_meaning};
pub use entry::{Entry, EntryKind};
pub use explain::Answer;
pub use generate::{generated_rules, GeneratedRule};
pub use tables::Knowledge;
