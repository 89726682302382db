//! Fuzz target `operation_call`: see `mnemon::fuzzing::operation_call`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::operation_call(data) {
        panic!("{mismatch}");
    }
});
