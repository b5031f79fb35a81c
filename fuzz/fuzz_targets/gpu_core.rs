//! Arbitrary bytes as a CUDA GPU core dump (`.nvcudmp`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = coroner_gpucore::read_gpu_core(data);
});
