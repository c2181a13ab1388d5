//! lingo's HTTP/1.1 server against hyper's, on the same bytes from a client: the same
//! requests (method, target, version, fields, body), the same refusal, the same connection
//! left open or closed; every difference is one listed in `h1/known/`, or a crash. Input:
//! one byte (how many pieces the bytes are written in), then the bytes.

#![no_main]

#[path = "../h1/mod.rs"]
mod h1;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pieces, bytes)) = data.split_first() else {
        return;
    };
    let pieces = usize::from(pieces % 8) + 1;
    let lingo = h1::block_on(h1::request::lingo(bytes, pieces));
    let hyper = h1::block_on(h1::request::hyper(bytes, pieces));
    h1::known::requests(bytes, &lingo, &hyper);
});
