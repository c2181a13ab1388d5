//! Key redaction of a streamed error response: for any key, response and chunking, the output is
//! the response with every occurrence replaced, and less than the key is ever held back. (The
//! properties are the proptest cases'.) Input: one byte of key length, the key, one byte of
//! chunking seed, the response.

#![no_main]

#[path = "../../tests/support/hostile.rs"]
mod hostile;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&len, rest)) = data.split_first() else {
        return;
    };
    let len = usize::from(len % 32).min(rest.len());
    let (key, rest) = rest.split_at(len);
    let Some((&seed, response)) = rest.split_first() else {
        return;
    };
    let pieces = hostile::chunks(response, seed, 64);
    if let Err(broken) = hostile::redaction_properties(key, response, &pieces) {
        panic!("{broken}");
    }
});
