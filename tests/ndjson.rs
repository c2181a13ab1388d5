//! The NDJSON framer's line cap at its boundary, from outside the crate: a line of exactly
//! `max_line` bytes is a line, one byte more is an error, whether its newline has come yet or
//! not (so that a line that never ends cannot grow the buffer past the cap) and whether it is
//! the body's last line without a newline. Written for the mutation pass: see mutants.md.

use lingo::translate::ndjson::LineFramer;

const MAX: usize = 8;

#[test]
fn a_line_of_exactly_max_line_bytes_is_a_line() {
    let mut framer = LineFramer::new(MAX);
    framer.push(b"12345678");
    assert!(
        framer.next_line().is_none(),
        "a partial line at the cap waits"
    );
    framer.push(b"\n");
    assert_eq!(framer.next_line().unwrap().unwrap(), b"12345678");

    let mut framer = LineFramer::new(MAX);
    framer.push(b"12345678");
    assert!(framer.next_line().is_none());
    assert_eq!(framer.finish().unwrap().unwrap(), b"12345678");
}

#[test]
fn one_byte_over_max_line_is_an_error_before_and_after_its_newline() {
    // No newline yet: refused as soon as the buffer passes the cap.
    let mut framer = LineFramer::new(MAX);
    framer.push(b"123456789");
    assert!(framer.next_line().unwrap().is_err());
    // Far over it, in one chunk.
    let mut framer = LineFramer::new(MAX);
    framer.push(&[b'x'; 100]);
    assert!(framer.next_line().unwrap().is_err());
    // With its newline.
    let mut framer = LineFramer::new(MAX);
    framer.push(b"123456789\n");
    assert!(framer.next_line().unwrap().is_err());
    // The body's last line, without a newline.
    let mut framer = LineFramer::new(MAX);
    framer.push(b"123456789");
    assert!(framer.finish().unwrap().is_err());
}
