//! Fuzz target `vector_value`: see `mnemon::fuzzing::vector_value`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::vector_value(data) {
        panic!("{mismatch}");
    }
});
