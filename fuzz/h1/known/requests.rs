//! The known differences between lingo's HTTP/1.1 server and hyper's (`h1_request`).

use super::super::BodyEnd;
use super::super::request::{Seen, Served};
use super::look::*;
use super::{RequestCase, RequestRule, Rule};

/// lingo stricter on purpose.
pub const INTENDED: &[RequestRule] = &[
    Rule {
        what: "bytes that are no request: hyper closes without an answer (an HTTP/2 preface; \
               after a partial head it looks again only once a head's end has come, so a \
               bare CR, or a 101st field, in a head that never ends is never answered)",
        lingo: "answers 400 (431 past 100 fields) and closes",
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
        lingo: "fails the body (the request is answered, the connection closed)",
        why: "an extension is tokens and quoted strings, which hold no control byte; a line \
              another reader could end elsewhere is not read; a recipient limits extensions",
        rfc: "RFC 9112 §7.1.1",
        matches: |c| failed_here_read_there(c.l, c.h) && odd_extension(c.bytes),
    },
    Rule {
        what: "a Connection value with a byte outside visible ASCII (obs-text) and a `close` \
               token: hyper reads no token in a value it cannot read as text, keeps the \
               connection and reads on",
        lingo: "reads the `close` and closes the connection after the answer",
        why: "closing is always safe, and the client said close",
        rfc: "RFC 9112 §9.6, RFC 9110 §7.6.1",
        matches: |c| {
            c.l.is_none()
                && c.lingo.closed_first
                && c.lingo.refusal.is_none()
                && c.before.is_some_and(|b| opaque_token(&b.fields, b"close"))
        },
    },
    Rule {
        what: "an upgrade request with a body: hyper serves it",
        lingo: "refuses it (400)",
        why: "once the protocol switches, a body not read yet would reach the tunnel as the \
              new protocol's bytes, with none of lingo's rules applied to it",
        rfc: "RFC 9110 §7.8",
        matches: |c| {
            refused_by_lingo_served_by_hyper(c)
                .is_some_and(|h| asks_upgrade(&h.fields) && has_body_framing(&h.fields))
        },
    },
    Rule {
        what: "a request whose Host is missing (HTTP/1.1), repeated or invalid: hyper serves it",
        lingo: "refuses it (400)",
        why: "the Host names the origin lingo forwards for and reports; a server MUST refuse",
        rfc: "RFC 9112 §3.2",
        matches: |c| refused_by_lingo_served_by_hyper(c).is_some_and(bad_host),
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

/// **Expected for now**: what the fix under way changes; emptied once it lands.
pub const BEING_FIXED: &[RequestRule] = &[
    Rule {
        what: "`Content-Length: 5, 5` (a list of one value): hyper refuses it (400)",
        lingo: "LAXITY: reads a length of 5 (will refuse it, 400)",
        why: "being fixed: as hyper and nginx do",
        rfc: "RFC 9110 §8.6, RFC 9112 §6.3",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(400)
                && c.l.is_some_and(|l| {
                    let lengths: Vec<_> = values(&l.fields, b"content-length").collect();
                    lengths.iter().any(|v| items(v).count() > 1) && one_value(&lengths)
                })
        },
    },
    Rule {
        what: "a repeated `Content-Length: 5`: hyper serves it, keeping one field",
        lingo: "LAXITY: serves it with both fields (will refuse it, 400: then an intended rule)",
        why: "being fixed",
        rfc: "RFC 9110 §8.6, RFC 9112 §6.3",
        matches: |c| match (c.l, c.h) {
            (Some(l), Some(h)) => {
                let lengths: Vec<_> = values(&l.fields, b"content-length").collect();
                lengths.len() >= 2
                    && one_value(&lengths)
                    && Seen {
                        fields: one_length(&l.fields),
                        ..l.clone()
                    } == *h
            }
            _ => false,
        },
    },
    Rule {
        what: "a chunk size written with more than 16 digits (leading zeros): hyper reads it",
        lingo: "STRICTNESS: fails the body (will read it when its value fits in 64 bits)",
        why: "being fixed: only the value may overflow, not the spelling",
        rfc: "RFC 9112 §7.1 (chunk-size = 1*HEXDIG)",
        matches: |c| failed_here_read_there(c.l, c.h) && long_chunk_size(c.bytes),
    },
    Rule {
        what: "a trailer section with a bare LF line end: hyper fails the body",
        lingo: "LAXITY: takes everything up to the next CRLF CRLF as the trailers, dropping \
                what its field parser did not read, so a next request's bytes can vanish \
                into them (the section will end where the parser says, or the connection \
                will close)",
        why: "being fixed",
        rfc: "RFC 9112 §7.1.2, §2.2",
        matches: |c| match (c.l, c.h) {
            (Some(l), Some(h)) => {
                Seen {
                    body: h.body.clone(),
                    ..l.clone()
                } == *h
                    && l.body != h.body
                    && bare_lf_trailer(c.bytes)
            }
            _ => false,
        },
    },
    Rule {
        what: "a request target over 65,534 bytes: hyper answers 414",
        lingo: "answers 400 (will answer 414)",
        why: "being fixed",
        rfc: "RFC 9110 §15.5.15",
        matches: |c| {
            c.l.is_none()
                && c.h.is_none()
                && c.lingo.refusal == Some(400)
                && c.hyper.refusal == Some(414)
        },
    },
];

/// **Expected for now**: laxities found by this target that no fix is under way for yet.
pub const FOUND: &[RequestRule] = &[
    Rule {
        what: "an invalid Content-Length before `Transfer-Encoding: chunked`: hyper refuses \
               the request (400; one after the Transfer-Encoding it ignores)",
        lingo: "LAXITY: reads the body as chunked, ignoring the length, and closes after the \
                answer",
        why: "the RFC allows framing by Transfer-Encoding alone and closing, but lingo then \
              accepts what hyper refuses; to decide: refuse an invalid length always",
        rfc: "RFC 9112 §6.1 (MAY reject; MUST close after), §6.3 (3)",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(400)
                && c.l.is_some_and(|l| {
                    has(&l.fields, b"transfer-encoding")
                        && field_lines(c.bytes, b"content-length") > 0
                })
        },
    },
    Rule {
        what: "a Transfer-Encoding value with a byte outside visible ASCII (obs-text) whose \
               last coding is `chunked`: hyper refuses the request (400; to it, a value it \
               cannot read as text does not end in chunked)",
        lingo: "LAXITY: reads the body as chunked",
        why: "a coding is a token, which has no such byte; to fix: refuse such a value (400)",
        rfc: "RFC 9112 §6.1, RFC 9110 §5.6.2",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(400)
                && c.l.is_some_and(|l| opaque_chunked(&l.fields))
        },
    },
    Rule {
        what: "an HTTP/1.0 request whose Connection value has a byte outside visible ASCII \
               (obs-text) and a `keep-alive` token: hyper closes after the answer",
        lingo: "LAXITY: keeps the connection and reads the next request",
        why: "lingo reads more requests than hyper; to fix: read no token in such a value",
        rfc: "RFC 9112 §9.3, RFC 9110 §5.5, §7.6.1",
        matches: |c| {
            c.h.is_none()
                && c.hyper.closed_first
                && c.hyper.refusal.is_none()
                && (c.l.is_some() || c.lingo.refusal.is_some() || !c.lingo.closed_first)
                && c.before.is_some_and(|b| {
                    b.version == "HTTP/1.0" && opaque_token(&b.fields, b"keep-alive")
                })
        },
    },
    Rule {
        what: "a Content-Length of 2^64-2 or more: hyper refuses it (431: its lengths end at \
               2^64-3)",
        lingo: "LAXITY: reads it (or refuses the head with 400 for another field)",
        why: "no body reaches such a length, and a route's body limit refuses it (413) before \
              any is read; to decide: refuse it as hyper does",
        rfc: "RFC 9110 §8.6",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(431)
                && (c.l.is_some() || c.lingo.refusal == Some(400))
                && huge_length(c.bytes)
        },
    },
];

fn refused_by_lingo_served_by_hyper<'a>(c: &RequestCase<'a>) -> Option<&'a Seen> {
    (c.l.is_none() && c.lingo.refusal == Some(400))
        .then_some(c.h)
        .flatten()
}
