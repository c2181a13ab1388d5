//! JSON strings written as serde_json writes them, eight bytes at a time.
//!
//! serde_json writes a string byte by byte through its escape table, and its writer checks
//! for room at each quote and run: ~190 instructions a token's text in a streamed chat
//! completion (callgrind), mostly for texts of a few bytes that need no escape at all. Here
//! a run that needs none is found a word at a time and copied at once; only a quote, a
//! backslash or a control character is escaped, each the way serde_json escapes it (the
//! tests check every byte value and generated texts against serde_json itself).

/// `text` as a JSON string literal, quotes and all, onto the end of `out`. Always inlined:
/// called once a token, a call's saved registers cost as much as a short text's reading.
#[inline(always)]
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let at = plain_until(bytes, start);
        out.extend_from_slice(&bytes[start..at]);
        let Some(&byte) = bytes.get(at) else { break };
        escape(out, byte);
        start = at + 1;
    }
    out.push(b'"');
}

/// A word with the high bit set in each byte that is a quote, a backslash or below 0x20:
/// exact up to the first such byte (a borrow may mark bytes after it), which is all its
/// readers look at. Bytes past ASCII are not marked.
#[inline(always)]
pub fn special(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES * 0x80;
    let zero_at = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    zero_at(word ^ (ONES * u64::from(b'"')))
        | zero_at(word ^ (ONES * u64::from(b'\\')))
        | below_space
}

/// Where the run of bytes from `at` that need no escape ends (at the end of `bytes` if none
/// does): a word at a time, then the last few bytes through a table, as serde_json reads
/// every byte (a word padded for them cost a copy, more than the table for a token's few).
#[inline(always)]
fn plain_until(bytes: &[u8], at: usize) -> usize {
    run_until(bytes, at, special, |byte| ESCAPED[usize::from(byte)])
}

/// Where the run from `at` ends: at the first byte `marks` marks in its word (the word's
/// first marked byte is exact, as [`special`]'s are), eight bytes at a time, then at the
/// first of the last few that `stops` at; at the end of `bytes` if none does. What the
/// scanner's strings and this writer's both read.
#[inline(always)]
pub fn run_until(
    bytes: &[u8],
    mut at: usize,
    marks: impl Fn(u64) -> u64,
    stops: impl Fn(u8) -> bool,
) -> usize {
    while let Some(word) = bytes.get(at..at + 8) {
        let marked = marks(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        if marked != 0 {
            return at + marked.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    while bytes.get(at).is_some_and(|&byte| !stops(byte)) {
        at += 1;
    }
    at
}

/// The bytes that need an escape: a quote, a backslash, a control character.
static ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// One byte that needs an escape, escaped: the short forms JSON has, else `\u00XX`.
#[cold]
fn escape(out: &mut Vec<u8>, byte: u8) {
    let short: &[u8] = match byte {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(&hex);
            return;
        }
    };
    out.extend_from_slice(short);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(text: &str) -> String {
        let mut out = b"x".to_vec();
        write_str(&mut out, text);
        String::from_utf8(out[1..].to_vec()).unwrap()
    }

    /// Every character below 0x80 and some past it, alone, at every place of a word, and
    /// next to each other: the same as serde_json.
    #[test]
    fn every_byte_is_written_as_serde_writes_it() {
        let others = [
            '\u{7f}',
            '\u{80}',
            '\u{e9}',
            '\u{2028}',
            '\u{ffff}',
            '\u{1f600}',
        ];
        let chars = (0u8..0x80).map(char::from).chain(others);
        for c in chars {
            for before in 0..10 {
                for after in [0, 1, 7, 9] {
                    let text = format!("{}{c}{}", "a".repeat(before), "b".repeat(after));
                    assert_eq!(
                        ours(&text),
                        serde_json::to_string(&text).unwrap(),
                        "{text:?}"
                    );
                }
            }
        }
        let all: String = (0u8..0x80).map(char::from).chain(others).collect();
        assert_eq!(ours(&all), serde_json::to_string(&all).unwrap());
        assert_eq!(ours(""), "\"\"");
    }

    /// Generated texts of every length up to 40 from a small alphabet of plain, escaped and
    /// multi-byte characters: the same as serde_json.
    #[test]
    fn generated_texts_are_written_as_serde_writes_them() {
        let alphabet = [
            'a',
            ' ',
            '"',
            '\\',
            '\n',
            '\u{1}',
            '\u{1f}',
            '\u{e9}',
            '\u{1f600}',
            '/',
        ];
        let mut next = crate::base::picks::picker(0x9e37_79b9_7f4a_7c15);
        for len in 0..=40 {
            for _ in 0..200 {
                let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
                assert_eq!(
                    ours(&text),
                    serde_json::to_string(&text).unwrap(),
                    "{text:?}"
                );
            }
        }
    }
}
