//! Fuzz target `import_line`: see `mnemon::fuzzing::import_line`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::import_line(data) {
        panic!("{mismatch}");
    }
});
