//! The chunked decoder at its edges: the trailer section's size limit by its value, whole
//! chunks copied in one call, a chunk's CRLF taken as soon as it is there, spaced chunk
//! extensions, a bare LF at a trailer section's end.

use bytes::{Bytes, BytesMut};

use super::decode::{BodyError, Chunk, Decoded, Decoder};
use super::fields::FieldError;

/// Decodes `input` (all there) with `decode` until it gives anything but data: what it
/// ended with, and the data before it.
fn decode_all(input: &[u8]) -> (Result<Decoded, BodyError>, Vec<u8>) {
    let (mut decoder, mut buf, mut data) = (
        Decoder::Chunked(Chunk::Size),
        BytesMut::from(input),
        Vec::new(),
    );
    loop {
        match decoder.decode(&mut buf) {
            Ok(Decoded::Data(d)) => data.extend_from_slice(&d),
            other => return (other, data),
        }
    }
}

/// A trailer section of `n` fields of about 160 bytes each, and its end.
fn trailer_section(n: usize) -> Vec<u8> {
    let mut section = b"0\r\n".to_vec();
    for i in 0..n {
        section.extend(format!("x-f{i:03}: {}\r\n", "v".repeat(150)).bytes());
    }
    section.extend_from_slice(b"\r\n");
    section
}

/// Up to 16 KiB of trailers are read (90 fields, 14.6 KiB); a section that reaches 16 KiB
/// without its end is refused, before more is read.
#[test]
fn a_trailer_section_may_take_up_to_16_kib() {
    let section = trailer_section(90);
    assert!(
        (14_000..16 * 1024).contains(&section.len()),
        "{}",
        section.len()
    );
    let (end, _) = decode_all(&section);
    let Ok(Decoded::Trailers(fields)) = end else {
        panic!("{end:?}");
    };
    assert_eq!(fields.len(), 90);
    assert_eq!(fields["x-f089"], "v".repeat(150));

    // The section starts after the last chunk's line, `0\r\n`.
    let endless = &trailer_section(110)[..3 + 16 * 1024];
    let (end, _) = decode_all(endless);
    assert_eq!(end, Err(BodyError::Trailers(FieldError::TooLarge)));
    let (end, _) = decode_all(&endless[..endless.len() - 1]);
    assert_eq!(end, Ok(Decoded::More));
}

/// One call of `decode_onto` copies every whole chunk at the front of the buffer, from a
/// chunk-size line or from the CRLF after a chunk's data, and leaves the rest there.
#[test]
fn whole_chunks_are_copied_in_one_call() {
    let mut decoder = Decoder::Chunked(Chunk::Size);
    let mut buf = BytesMut::from(&b"3\r\nabc\r\n2\r\nde\r\n4\r\nfg"[..]);
    let mut onto = BytesMut::new();
    assert_eq!(decoder.decode_onto(&mut buf, &mut onto), Ok(None));
    assert_eq!((&onto[..], &buf[..]), (&b"abcdefg"[..], &b""[..]));
    assert_eq!(decoder, Decoder::Chunked(Chunk::Data(2)));

    let mut decoder = Decoder::Chunked(Chunk::DataEnd);
    let mut buf = BytesMut::from(&b"\r\n1\r\nh\r\n2\r\nij\r\n0\r\n\r\n"[..]);
    let mut onto = BytesMut::new();
    assert_eq!(
        decoder.decode_onto(&mut buf, &mut onto),
        Ok(Some(Decoded::End))
    );
    assert_eq!((&onto[..], &buf[..]), (&b"hij"[..], &b""[..]));

    // Data that itself ends in CRLF, as a stream's lines do: the chunk's own CRLF follows it.
    let mut decoder = Decoder::Chunked(Chunk::Size);
    let mut buf = BytesMut::from(&b"4\r\nab\r\n\r\n2\r\n\r\n\r\n0\r\n\r\n"[..]);
    let mut onto = BytesMut::new();
    assert_eq!(
        decoder.decode_onto(&mut buf, &mut onto),
        Ok(Some(Decoded::End))
    );
    assert_eq!(&onto[..], b"ab\r\n\r\n");
}

/// The CRLF after a chunk's data is taken out as soon as it is all there: a body waiting
/// for its next chunk leaves nothing in the buffer (whose room is then given back).
#[test]
fn a_chunks_crlf_is_taken_as_soon_as_it_is_there() {
    for onto in [false, true] {
        let mut decoder = Decoder::Chunked(Chunk::Size);
        let mut buf = BytesMut::new();
        let mut data = BytesMut::new();
        for piece in [&b"5\r\nhello"[..], b"\r", b"\n"] {
            buf.extend_from_slice(piece);
            loop {
                let decoded = match onto {
                    true => decoder.decode_onto(&mut buf, &mut data),
                    false => decoder.decode(&mut buf).map(Some),
                };
                match decoded.unwrap() {
                    None => {}
                    Some(Decoded::Data(d)) => data.extend_from_slice(&d),
                    Some(Decoded::More) => break,
                    Some(other) => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(&data[..], b"hello");
        assert!(buf.is_empty(), "{buf:?}");
        assert_eq!(decoder, Decoder::Chunked(Chunk::Size));
    }
}

/// Chunk extensions may be spaced around `;` and `=` (RFC 9112 §7.1.1's BWS), as hyper reads
/// them; a DEL in one is refused like any other control.
#[test]
fn spaced_extensions_are_read_and_controls_refused() {
    for line in [&b"3 ; a = b"[..], b"3;a=\"b c\"", b"3\t; a"] {
        let body = [line, b"\r\nabc\r\n0\r\n\r\n"].concat();
        let (end, data) = decode_all(&body);
        assert_eq!(
            (end, &data[..]),
            (Ok(Decoded::End), &b"abc"[..]),
            "{line:?}"
        );
    }
    let (end, _) = decode_all(b"3;a\x7f\r\nabc\r\n0\r\n\r\n");
    assert_eq!(end, Err(BodyError::ChunkSize));
}

/// A trailer line ended by a bare LF right before the section's CRLF CRLF is refused as any
/// other bare LF is: the last line is checked up to the section's end.
#[test]
fn a_bare_lf_just_before_the_trailers_end_is_refused() {
    for input in [&b"0\r\nx-a: 1\n\r\n\r\n"[..], b"0\r\na:1\n\r\n\r\n"] {
        let (end, _) = decode_all(input);
        assert!(
            matches!(end, Err(BodyError::Trailers(FieldError::Malformed(_)))),
            "{input:?}: {end:?}"
        );
    }
    let (end, _) = decode_all(b"0\r\na:1\r\n\r\n");
    assert!(matches!(end, Ok(Decoded::Trailers(_))), "{end:?}");
}

/// A body's exact length is known up front only by `Content-Length`; one read to its end
/// has 0 bytes left (what a body's size hint says once it has ended), one chunked or up to
/// the close none known.
#[test]
fn only_a_length_or_the_end_says_how_much_is_left() {
    assert_eq!(Decoder::Length(7).exact(), Some(7));
    assert_eq!(Decoder::Done.exact(), Some(0));
    assert_eq!(Decoder::Chunked(Chunk::Size).exact(), None);
    assert_eq!(Decoder::Chunked(Chunk::Data(3)).exact(), None);
    assert_eq!(Decoder::CloseDelimited.exact(), None);
    let mut decoder = Decoder::Length(2);
    let mut buf = BytesMut::from(&b"hi"[..]);
    assert_eq!(
        decoder.decode(&mut buf),
        Ok(Decoded::Data(Bytes::from("hi")))
    );
    assert_eq!(decoder.exact(), Some(0));
}
