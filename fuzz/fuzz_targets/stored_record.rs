//! Fuzz target `stored_record`: see `mnemon::fuzzing::stored_record`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::stored_record(data) {
        panic!("{mismatch}");
    }
});
