//! The known differences between lingo's HTTP/1.1 client and hyper's (`h1_response`).

use super::super::response::Read;
use super::look::*;
use super::{ResponseRule, Rule};

/// Taken out of hyper's reading before the other rules are tried, since it combines with
/// each of them (see `without_length_beside_coding`).
pub const LENGTH_BESIDE_CODING: ResponseRule = Rule {
    what: "a response with both Transfer-Encoding and Content-Length: hyper keeps both fields \
           and reuses the connection",
    lingo: "leaves the Content-Length out of the fields, reads by Transfer-Encoding, and does \
            not reuse the connection",
    why: "the length is not the body's (an intermediary removes it before passing the response \
          on), and such a response is handled as an error",
    rfc: "RFC 9112 §6.3 (3), §6.1",
    matches: |c| match (&c.lingo.response, &c.hyper.response) {
        (Some(l), Some(h)) => {
            has(c.heard, b"transfer-encoding")
                && has(&h.fields, b"content-length")
                && *l
                    == Read {
                        fields: without(&h.fields, b"content-length"),
                        ..h.clone()
                    }
                && (!c.lingo.reused || c.hyper.reused)
        }
        _ => false,
    },
};

/// lingo stricter on purpose.
pub const INTENDED: &[ResponseRule] = &[
    Rule {
        what: "a 101 to a request that asked for no upgrade: hyper reads it",
        lingo: "refuses the response",
        why: "lingo's client asks for no upgrade here (WebSockets go through hyper's); a \
              switch not asked for is no response",
        rfc: "RFC 9110 §15.2.2 (MUST NOT switch to a protocol not asked for), §7.8",
        matches: |c| {
            c.lingo.response.is_none() && c.hyper.response.as_ref().is_some_and(|h| h.status == 101)
        },
    },
    LENGTH_BESIDE_CODING,
    Rule {
        what: "a Connection value with a byte outside visible ASCII (obs-text): hyper reads no \
               token in a value it cannot read as text, and reuses the connection",
        lingo: "reads no token in it either, and does not reuse the connection",
        why: "a `close` may be in the value, and not reusing is always safe",
        rfc: "RFC 9112 §9.6, RFC 9110 §7.6.1",
        matches: |c| {
            c.lingo.response == c.hyper.response
                && !c.lingo.reused
                && c.hyper.reused
                && c.lingo.response.is_some()
                && opaque_connection(c.heard)
        },
    },
    Rule {
        what: "an HTTP/1.0 response with Transfer-Encoding and no body (to a HEAD, a 204, a \
               304): hyper reads it (it looks at no framing there)",
        lingo: "refuses the response",
        why: "an HTTP/1.0 message with Transfer-Encoding has faulty framing, whatever the \
              response's kind",
        rfc: "RFC 9112 §6.1 (MUST treat the framing as faulty)",
        matches: |c| {
            c.lingo.response.is_none()
                && c.hyper.response.as_ref().is_some_and(|h| {
                    h.version == "HTTP/1.0"
                        && has(c.heard, b"transfer-encoding")
                        && (c.request_kind.head || h.status == 204 || h.status == 304)
                })
        },
    },
    Rule {
        what: "a chunk extension with a control byte (or DEL), or a chunk-size line over 4 KiB: \
               hyper reads the body",
        lingo: "fails the body (the connection is not reused)",
        why: "an extension is tokens and quoted strings, which hold no control byte; a line \
              another reader could end elsewhere is not read; a recipient limits extensions",
        rfc: "RFC 9112 §7.1.1",
        matches: |c| {
            failed_here_read_there(c.lingo.response.as_ref(), c.hyper.response.as_ref())
                && odd_extension(c.bytes)
        },
    },
    Rule {
        what: "a trailer section with a bare LF line end (its last, empty line too): hyper \
               reads the body (a trailer line up to its CR)",
        lingo: "fails the body (the connection is not reused)",
        why: "the section ends at CRLF CRLF, where every reader finds the same end; a bare \
              LF there is a line end some readers see and others do not",
        rfc: "RFC 9112 §7.1.2, §7.1, §2.2 (a recipient MAY take a bare LF as a line end)",
        matches: |c| {
            failed_here_read_there(c.lingo.response.as_ref(), c.hyper.response.as_ref())
                && bare_lf_trailer(c.bytes)
        },
    },
    Rule {
        what: "a Transfer-Encoding value with a byte outside visible ASCII (obs-text) on an \
               response with a body: hyper reads the body by the last field (close-delimited \
               when that value has such a byte)",
        lingo: "refuses the response (faulty framing: no response, the connection not reused)",
        why: "a coding is a token, which has no such byte: the value is no list of codings, \
              and a reader that finds `chunked` in it ends the body elsewhere",
        rfc: "RFC 9112 §6.1, §6.3, §7, RFC 9110 §5.6.1",
        matches: |c| {
            c.lingo.response.is_none()
                && c.hyper.response.is_some()
                && values(c.heard, b"transfer-encoding").any(opaque)
        },
    },
];

/// **Expected for now**: differences this target found, neither fixed nor decided yet.
pub const FOUND: &[ResponseRule] = &[];
