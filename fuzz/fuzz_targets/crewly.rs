//! Fuzz target `crewly`: see `mnemon::fuzzing::crewly`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::crewly(data) {
        panic!("{mismatch}");
    }
});
