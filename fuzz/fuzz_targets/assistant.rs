//! Fuzz target `assistant`: see `mnemon::fuzzing::assistant`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::assistant(data) {
        panic!("{mismatch}");
    }
});
