//! Fuzz target `index_files`: see `mnemon::fuzzing::index_files`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::index_files(data) {
        panic!("{mismatch}");
    }
});
