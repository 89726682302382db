//! Fuzz target `mcp_jsonl`: see `mnemon::fuzzing::mcp_jsonl`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(mismatch) = mnemon::fuzzing::mcp_jsonl(data) {
        panic!("{mismatch}");
    }
});
