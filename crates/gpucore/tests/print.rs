//! Prints what is read from every fixture next to cuda-gdb's view:
//! `cargo test -p coroner-gpucore --test print -- --ignored --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[test]
#[ignore]
fn print_cases() {
    for case in common::cases() {
        let core = coroner_gpucore::read_gpu_core(&common::dump(&case)).unwrap();
        println!("== {case}\n{core:#?}");
        println!("{:#?}", common::parse(&common::cudagdb_text(&case)));
    }
}
