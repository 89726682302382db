//! Fuzz target `time_text`: see `mnemon::fuzzing::time_text`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::time_text(data) {
        panic!("{mismatch}");
    }
});
