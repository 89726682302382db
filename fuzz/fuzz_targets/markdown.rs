//! Fuzz target `markdown`: see `mnemon::fuzzing::markdown`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::markdown(data) {
        panic!("{mismatch}");
    }
});
