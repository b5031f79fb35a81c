//! Arbitrary bytes as a host ELF core dump. No sysroots: files the core
//! names are looked up only at their recorded paths.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = coroner_hostcore::Options::default();
    let _ = coroner_hostcore::read_host_core(data, &options);
});
