//! The NDJSON line framer: any split of any bytes gives the lines of the whole; no line is
//! longer than the cap, holds a newline or ends in `\r`/blanks; an over-long line is an error.

#![no_main]

#[path = "../../tests/support/hostile.rs"]
mod hostile;

use bytes::Bytes;
use hostile::{chunks, framed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((head, data)) = input.split_first_chunk::<3>() else {
        return;
    };
    let max = usize::from(u16::from_le_bytes([head[0], head[1]]) % 1024) + 1;
    let whole = framed(&[Bytes::copy_from_slice(data)], max);
    let split = framed(&chunks(data, head[2], 16), max);
    assert_eq!(whole, split, "chunking changed the lines (max {max})");
    for line in whole.iter().flatten() {
        assert!(
            !line.is_empty() && line.len() <= max,
            "{line:?} (max {max})"
        );
        assert!(!line.contains(&b'\n'));
        assert!(!matches!(line.last(), Some(b'\r' | b' ' | b'\t')));
    }
});
