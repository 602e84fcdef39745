#![no_main]
#[path = "../../src/bin/mcp/arguments.rs"]
mod arguments;
libfuzzer_sys::fuzz_target!(|data: &[u8]| arguments::fuzz(data));
