//! The NDJSON line framer: any split of any bytes gives the lines of the whole; no line is
//! longer than the cap, holds a newline or ends in `\r`/blanks; an over-long line is an error.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use lingo::translate::ndjson::LineFramer;

fuzz_target!(|input: &[u8]| {
    let Some((head, data)) = input.split_first_chunk::<3>() else {
        return;
    };
    let max = usize::from(u16::from_le_bytes([head[0], head[1]]) % 1024) + 1;
    let whole = framed(&[Bytes::copy_from_slice(data)], max);
    let split = framed(&chunks(data, head[2]), max);
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

/// `data` cut into pieces whose lengths follow a small generator seeded by `seed`.
fn chunks(data: &[u8], seed: u8) -> Vec<Bytes> {
    let mut state = u32::from(seed) | 1;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state as usize % 17).min(rest.len());
        let (piece, tail) = rest.split_at(len);
        out.push(Bytes::copy_from_slice(piece));
        rest = tail;
    }
    out
}

fn framed(chunks: &[Bytes], max: usize) -> Vec<Result<Bytes, String>> {
    let mut framer = LineFramer::new(max);
    let mut out = Vec::new();
    for chunk in chunks {
        framer.push(chunk);
        while let Some(line) = framer.next_line() {
            let failed = line.is_err();
            out.push(line.map_err(|e| e.to_string()));
            if failed {
                return out;
            }
        }
    }
    out.extend(framer.finish().map(|l| l.map_err(|e| e.to_string())));
    out
}
