//! PyTorch's own dumps, read as hostile input: flight-recorder dumps
//! ([`flight`]) and CUDA memory snapshots ([`snapshot`]), both pickles
//! ([`pickle`]) or, for the flight recorder, JSON.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod flight;
pub mod pickle;
pub mod snapshot;
mod tree;
