//! Fuzz target `lexical_rows`: see `mnemon::fuzzing::lexical_rows`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::lexical_rows(data) {
        panic!("{mismatch}");
    }
});
