//! Path normalisation: whatever is accepted holds no dot segment, empty segment, encoded
//! slash or backslash (before or after one more decoding, as an upstream would), no control
//! byte, and normalising it again changes nothing. (The properties are the proptest cases'.)

#![no_main]

#[path = "../../tests/support/hostile.rs"]
mod hostile;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(raw) = std::str::from_utf8(data)
        && let Err(broken) = hostile::path_properties(raw)
    {
        panic!("{broken}");
    }
});
