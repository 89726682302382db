//! Fuzz target `record_json`: see `mnemon::fuzzing::record_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::record_json(data) {
        panic!("{mismatch}");
    }
});
