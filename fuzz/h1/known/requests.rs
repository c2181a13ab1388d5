//! The known differences between lingo's HTTP/1.1 server and hyper's (`h1_request`).

use super::super::BodyEnd;
use super::super::request::{Seen, Served};
use super::look::*;
use super::{RequestCase, RequestRule, Rule};

/// lingo stricter on purpose.
pub const INTENDED: &[RequestRule] = &[
    Rule {
        what: "bytes that are no request: hyper closes without a response (an HTTP/2 preface; \
               after a partial head it looks again only once a head's end has come, so a \
               bare CR, or a 101st field, in a head that never ends never gets a response)",
        lingo: "responds with 400 (431 past 100 fields) and closes",
        why: "both refuse the bytes and serve nothing more; lingo says so",
        rfc: "RFC 9112 §2.2 (SHOULD respond with 400 and close), RFC 6585 §5 (431)",
        matches: |c| {
            c.l.is_none()
                && c.h.is_none()
                && matches!(c.lingo.refusal, Some(400 | 431))
                && c.hyper.refusal.is_none()
        },
    },
    Rule {
        what: "a chunk-size line or trailer section that cannot be read: one side fails the \
               body and closes before the client closes, the other only at the client's close",
        lingo: "judges a chunk-size line once it has all of it (up to 4 KiB), a trailer \
                section up to 16 KiB; hyper fails at the first wrong byte, but reads any \
                extension byte but LF up to 16 KiB",
        why: "timing only: both fail the same body and serve nothing after it",
        rfc: "RFC 9112 §7.1, §7.1.1",
        matches: |c| {
            let last_failed =
                |s: &Served| s.requests.last().is_some_and(|r| r.body == BodyEnd::Failed);
            c.l.is_none()
                && c.h.is_none()
                && last_failed(c.lingo)
                && last_failed(c.hyper)
                && c.lingo.refusal == c.hyper.refusal
                && c.lingo.closed_at_end == c.hyper.closed_at_end
                && c.lingo.closed_first != c.hyper.closed_first
        },
    },
    Rule {
        what: "a chunk extension with a control byte (or DEL), or a chunk-size line over 4 KiB: \
               hyper reads the body",
        lingo: "fails the body (the request gets a response, the connection closed)",
        why: "an extension is tokens and quoted strings, which hold no control byte; a line \
              another reader could end elsewhere is not read; a recipient limits extensions",
        rfc: "RFC 9112 §7.1.1",
        matches: |c| failed_here_read_there(c.l, c.h) && odd_extension(c.bytes),
    },
    Rule {
        what: "a Connection value with a byte outside visible ASCII (obs-text): hyper reads no \
               token in a value it cannot read as text, keeps the connection and reads on",
        lingo: "reads no token in it either, and closes the connection after the response",
        why: "a `close` may be in the value, and closing is always safe",
        rfc: "RFC 9112 §9.6, RFC 9110 §7.6.1",
        matches: |c| {
            c.l.is_none()
                && c.lingo.closed_first
                && c.lingo.refusal.is_none()
                && c.before.is_some_and(|b| opaque_connection(&b.fields))
        },
    },
    Rule {
        what: "a trailer section with a bare LF line end (its last, empty line too): hyper \
               reads the body (a trailer line up to its CR, so a next request's head \
               can become trailers)",
        lingo: "fails the body (the request gets a response, the connection closed)",
        why: "the section ends at CRLF CRLF, where every reader finds the same end; a bare \
              LF there is a line end some readers see and others do not",
        rfc: "RFC 9112 §7.1.2, §7.1, §2.2 (a recipient MAY take a bare LF as a line end)",
        matches: |c| failed_here_read_there(c.l, c.h) && bare_lf_trailer(c.bytes),
    },
    Rule {
        what: "a Content-Length that is no number, or over 2^64-3, after `Transfer-Encoding: \
               chunked`: hyper skips it and reads the body as chunked (one before the \
               Transfer-Encoding it refuses, as lingo does)",
        lingo: "refuses the request (400), whichever order the two fields come in",
        why: "a length lingo cannot read is unrecoverable framing; a server behind lingo \
              that frames by it instead of the chunked coding must never be given such a \
              request",
        rfc: "RFC 9112 §6.3 (5), §6.1 (a server MAY reject a request with both)",
        matches: |c| {
            refused_by_lingo_served_by_hyper(c).is_some_and(|h| {
                has(&h.fields, b"transfer-encoding")
                    && !has(&h.fields, b"content-length")
                    && (no_number_length(c.bytes) || huge_length(c.bytes))
            })
        },
    },
    Rule {
        what: "a Transfer-Encoding field with a byte outside visible ASCII (obs-text) before \
               the last one: hyper reads the coding of the last field only",
        lingo: "refuses the request (400), as hyper refuses one whose last value has such a byte",
        why: "a coding is a token, which has no such byte: the value is no list of codings, \
              and a reader that joins the fields could find other codings than hyper's",
        rfc: "RFC 9112 §6.1, §7, RFC 9110 §5.6.1, §5.3",
        matches: |c| {
            refused_by_lingo_served_by_hyper(c)
                .is_some_and(|h| values(&h.fields, b"transfer-encoding").any(opaque))
        },
    },
    Rule {
        what: "a Content-Length of 2^64-2 or more: hyper refuses it with 431 (its lengths \
               end at 2^64-3; past 64 bits it responds with 400)",
        lingo: "refuses it with 400, as every length it does not read",
        why: "both refuse; a number no body length can be is an invalid length, not a field \
              section too large",
        rfc: "RFC 9110 §8.6, RFC 9112 §6.3 (5) (a server responds to an invalid length with 400)",
        matches: |c| {
            c.l.is_none()
                && c.h.is_none()
                && c.lingo.refusal == Some(400)
                && c.hyper.refusal == Some(431)
                && huge_length(c.bytes)
        },
    },
    Rule {
        what: "a repeated Content-Length of one value: hyper serves it (keeping one field)",
        lingo: "refuses it (400)",
        why: "a proxy stricter than the servers behind it cannot be desynchronised by one \
              that reads the repetition otherwise; nginx refuses it too",
        rfc: "RFC 9110 §8.6 (a recipient MAY reject it), RFC 9112 §6.3",
        matches: |c| {
            refused_by_lingo_served_by_hyper(c).is_some()
                && field_lines(c.bytes, b"content-length") >= 2
        },
    },
];

/// **Expected for now**: differences this target found, neither fixed nor decided yet.
pub const FOUND: &[RequestRule] = &[];

fn refused_by_lingo_served_by_hyper<'a>(c: &RequestCase<'a>) -> Option<&'a Seen> {
    (c.l.is_none() && c.lingo.refusal == Some(400))
        .then_some(c.h)
        .flatten()
}
