//! Fuzz target `segment_block`: see `mnemon::fuzzing::segment_block`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::segment_block(data) {
        panic!("{mismatch}");
    }
});
