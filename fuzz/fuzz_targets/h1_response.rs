//! lingo's HTTP/1.1 client against hyper's, on the same bytes from an upstream responding to a
//! fixed request: the same response (status, version, fields, body, trailers) or both refused,
//! and the same decision to carry another request on the connection; every difference is
//! one listed in `h1/known/`, or a crash. Input: one byte (bit 0: `HEAD`, else `GET`;
//! bit 1: lingo keeps the fields as read; bits 2-4: how many pieces the bytes are written
//! in), then the bytes.

#![no_main]

#[path = "../h1/mod.rs"]
mod h1;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, bytes)) = data.split_first() else {
        return;
    };
    let request_kind = h1::response::RequestKind {
        head: first & 1 != 0,
        raw: first & 2 != 0,
    };
    let pieces = usize::from((first >> 2) & 7) + 1;
    let lingo = h1::block_on(h1::response::lingo(bytes, pieces, request_kind));
    let hyper = h1::block_on(h1::response::hyper(bytes, pieces, request_kind));
    h1::known::responses(bytes, request_kind, &lingo, &hyper);
});
