//! Fuzz target `commit_entry`: see `mnemon::fuzzing::commit_entry`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::commit_entry(data) {
        panic!("{mismatch}");
    }
});
