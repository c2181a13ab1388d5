//! The differences from hyper that are known: each a rule that recognises one by its shape
//! (what each side made of the bytes) and, where the shape alone could hide another, by what
//! in the bytes causes it. A difference no rule recognises is a crash: a new finding.
//!
//! - [`INTENDED_REQUESTS`], [`INTENDED_ANSWERS`]: lingo is stricter than hyper on purpose,
//!   each with its reason and the RFC section it keeps (lingo may be stricter, never laxer).
//! - [`FOR_NOW_REQUESTS`], [`FOR_NOW_ANSWERS`]: **expected for now**, laxities (and one
//!   strictness) in lingo's HTTP/1.1 code that are being fixed. These lists are emptied once
//!   the fix lands: from then on each is a crash again (or, where lingo then refuses what
//!   hyper reads, an intended rule above recognises it).
//!
//! Once a rule recognises the first difference, what follows it is not compared: the two
//! connections have parted ways (one closed, or read the rest as other requests).

use super::request::{Seen, Served};
use super::response::{Answered, Asked, Read};
use super::{BodyEnd, Fields, Octets, escaped};

/// A known difference, recognised by `matches` (a function of a [`RequestCase`] or an
/// [`AnswerCase`]).
pub struct Rule<M> {
    /// What differs.
    pub what: &'static str,
    /// What lingo does and why.
    pub why: &'static str,
    /// The RFC section lingo keeps.
    pub rfc: &'static str,
    pub matches: M,
}

pub type RequestRule = Rule<fn(&RequestCase<'_>) -> bool>;
pub type AnswerRule = Rule<fn(&AnswerCase<'_>) -> bool>;

/// The first request the two servers differ on.
pub struct RequestCase<'a> {
    pub bytes: &'a [u8],
    pub lingo: &'a Served,
    pub hyper: &'a Served,
    /// The request each made of the bytes at that point, if any.
    pub l: Option<&'a Seen>,
    pub h: Option<&'a Seen>,
    /// The last request both read alike, if any.
    pub before: Option<&'a Seen>,
}

/// The answer the two clients differ on.
pub struct AnswerCase<'a> {
    pub bytes: &'a [u8],
    pub asked: Asked,
    pub lingo: &'a Answered,
    pub hyper: &'a Answered,
}

// === requests ===

pub const INTENDED_REQUESTS: &[RequestRule] = &[
    Rule {
        what: "bytes that are no request: lingo answers 400 and closes, hyper closes without \
               an answer (an HTTP/2 preface; after a partial head, hyper looks again only \
               once a head's end has come, so a bare CR is never answered)",
        why: "both refuse the bytes and serve nothing more; lingo says so, as the RFC asks",
        rfc: "RFC 9112 §2.2 (SHOULD respond with 400 and close the connection)",
        matches: |c| {
            c.l.is_none()
                && c.h.is_none()
                && c.lingo.refusal == Some(400)
                && c.hyper.refusal.is_none()
        },
    },
    Rule {
        what: "a chunk-size line or trailer section that cannot be read: one side fails the \
               body and closes before the client closes, the other only at the client's \
               close (hyper fails at the first wrong byte but reads any extension up to \
               16 KiB; lingo judges a line once it has all of it, up to 4 KiB, and a trailer \
               section up to 16 KiB)",
        why: "timing only: both fail the same body and serve nothing after it",
        rfc: "RFC 9112 §7.1, §7.1.1 (the grammar either way; a recipient limits extensions)",
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
        what: "a chunk extension with a control byte, or a chunk-size line over 4 KiB: lingo \
               fails the body, hyper reads it (it takes any byte but LF in an extension, up \
               to 16 KiB in all)",
        why: "an extension is tokens and quoted strings; a control byte is none, and a line \
              another reader could end elsewhere; lingo's limit on a line is 4 KiB",
        rfc: "RFC 9112 §7.1.1 (chunk-ext grammar; a server ought to limit extensions)",
        matches: |c| failed_here_read_there(c.l, c.h) && odd_extension(c.bytes),
    },
    Rule {
        what: "a Connection value with a byte outside visible ASCII (obs-text) and a `close` \
               token: lingo closes the connection after the answer, hyper keeps it (it reads \
               no token in a value it cannot read as text)",
        why: "closing is always safe; the client said close",
        rfc: "RFC 9112 §9.6 (close), RFC 9110 §7.6.1",
        matches: |c| {
            c.l.is_none()
                && c.lingo.closed_first
                && !c.hyper.closed_first
                && c.before.is_some_and(|b| opaque_token(&b.fields, b"close"))
        },
    },
    Rule {
        what: "an upgrade request with a body: lingo refuses it (400), hyper serves it",
        why: "once the protocol switches, a body not read yet would reach the tunnel as the \
              new protocol's bytes, with none of lingo's rules applied to it",
        rfc: "RFC 9110 §7.8 (a switch applies after the request; a proxy may refuse)",
        matches: |c| {
            refused_by_lingo_served_by_hyper(c)
                .is_some_and(|h| asks_upgrade(&h.fields) && has_body_framing(&h.fields))
        },
    },
    Rule {
        what: "a request whose Host is missing (HTTP/1.1), repeated or invalid: lingo refuses \
               it (400), hyper serves it",
        why: "the Host names the origin lingo forwards to and reports; a server MUST refuse",
        rfc: "RFC 9112 §3.2",
        matches: |c| refused_by_lingo_served_by_hyper(c).is_some_and(bad_host),
    },
    Rule {
        what: "a request with a repeated Content-Length of one value: lingo refuses it (400), \
               hyper serves it (as one)",
        why: "a proxy stricter than the servers behind it cannot be desynchronised by one \
              that reads the repetition differently",
        rfc: "RFC 9110 §8.6 (a recipient MAY reject it), RFC 9112 §6.3",
        matches: |c| {
            refused_by_lingo_served_by_hyper(c).is_some()
                && field_lines(c.bytes, b"content-length") >= 2
        },
    },
];

/// **Expected for now**: laxities in lingo (being fixed, or found here and to be fixed),
/// and one strictness being relaxed; emptied as the fixes land.
pub const FOR_NOW_REQUESTS: &[RequestRule] = &[
    Rule {
        what: "`Content-Length: 5, 5` (a list of one value): lingo reads a length of 5, hyper \
               refuses it (400)",
        why: "LAXITY being fixed: lingo will refuse it (400), as hyper and nginx do",
        rfc: "RFC 9110 §8.6, RFC 9112 §6.3",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(400)
                && c.l.is_some_and(|l| {
                    let lengths: Vec<&Octets> = values(&l.fields, b"content-length").collect();
                    lengths.iter().any(|v| items(v).count() > 1) && one_value(&lengths)
                })
        },
    },
    Rule {
        what: "a repeated `Content-Length: 5`: both serve it, lingo keeps both fields, hyper one",
        why: "LAXITY being fixed: lingo will refuse it (400; then the intended rule above)",
        rfc: "RFC 9110 §8.6, RFC 9112 §6.3",
        matches: |c| match (c.l, c.h) {
            (Some(l), Some(h)) => {
                let lengths: Vec<&Octets> = values(&l.fields, b"content-length").collect();
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
        what: "a chunk size written with more than 16 digits (leading zeros): lingo fails the \
               body, hyper reads it",
        why: "STRICTNESS being fixed: lingo will read it when its value fits in 64 bits",
        rfc: "RFC 9112 §7.1 (chunk-size = 1*HEXDIG)",
        matches: |c| failed_here_read_there(c.l, c.h) && long_chunk_size(c.bytes),
    },
    Rule {
        what: "an invalid Content-Length before a `Transfer-Encoding: chunked`: lingo reads the \
               body as chunked (and closes after it), hyper refuses the request (400); after \
               the Transfer-Encoding, hyper ignores it too",
        why: "LAXITY found by this target, not part of the fix under way: lingo accepts what \
              hyper refuses (it frames by Transfer-Encoding alone and closes after the \
              answer, which the RFC allows); to be decided: refuse an invalid length always",
        rfc: "RFC 9112 §6.1 (MAY reject a request with both; MUST close after it), §6.3 (3)",
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
               last coding is `chunked`: lingo reads the body as chunked, hyper refuses the \
               request (400: to it, a value it cannot read as text does not end in chunked)",
        why: "LAXITY found by this target, not part of the fix under way: lingo accepts what \
              hyper refuses; a coding is a token, which has no such byte; to be fixed: \
              refuse such a value (400)",
        rfc: "RFC 9112 §6.1 (transfer-coding = token), RFC 9110 §5.6.2",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(400)
                && c.l.is_some_and(|l| opaque_chunked(&l.fields))
        },
    },
    Rule {
        what: "an HTTP/1.0 request whose Connection value has a byte outside visible ASCII \
               (obs-text) and a `keep-alive` token: lingo keeps the connection and reads the \
               next request, hyper closes after the answer",
        why: "LAXITY found by this target, not part of the fix under way: lingo reads more \
              requests than hyper; to be fixed: read no token in such a value (or close)",
        rfc: "RFC 9112 §9.3 (persistence), RFC 9110 §5.5 (obs-text), §7.6.1",
        matches: |c| {
            c.h.is_none()
                && c.hyper.closed_first
                && !(c.l.is_none() && c.lingo.closed_first)
                && c.before.is_some_and(|b| {
                    b.version == "HTTP/1.0" && opaque_token(&b.fields, b"keep-alive")
                })
        },
    },
    Rule {
        what: "a Content-Length of 2^64-2 or more: hyper refuses it (431: it holds lengths up \
               to 2^64-3), lingo reads it (or refuses the head with 400 for another field)",
        why: "LAXITY found by this target, not part of the fix under way: a length no body \
              reaches; a route's body limit refuses it (413) before any is read; to be \
              decided: refuse it as hyper does",
        rfc: "RFC 9110 §8.6 (guard against overflow; no largest length)",
        matches: |c| {
            c.h.is_none()
                && c.hyper.refusal == Some(431)
                && (c.l.is_some() || c.lingo.refusal == Some(400))
                && huge_length(c.bytes)
        },
    },
    Rule {
        what: "a trailer section with a bare LF line end: lingo takes everything up to the next \
               CRLF CRLF as the trailers (and drops what its parser did not read of them), so \
               the bytes of a next request can disappear into them; hyper fails the body",
        why: "LAXITY being fixed: the section will end where the parser says it ends, or the \
              connection will close",
        rfc: "RFC 9112 §7.1.2 (trailer-section), §2.2 (bare LF)",
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
        what: "a request target over 65,534 bytes: lingo refuses it with 400, hyper with 414",
        why: "being fixed: lingo will answer 414",
        rfc: "RFC 9112 §3 (414 URI Too Long), RFC 9110 §15.5.15",
        matches: |c| {
            c.l.is_none()
                && c.h.is_none()
                && c.lingo.refusal == Some(400)
                && c.hyper.refusal == Some(414)
        },
    },
];

fn refused_by_lingo_served_by_hyper<'a>(c: &RequestCase<'a>) -> Option<&'a Seen> {
    (c.l.is_none() && c.lingo.refusal == Some(400))
        .then_some(c.h)
        .flatten()
}

/// Compares what the two servers made of `bytes`: every difference is a known one, or this
/// panics with both readings.
pub fn requests(bytes: &[u8], lingo: &Served, hyper: &Served) {
    if show() {
        eprintln!("lingo: {lingo:?}\nhyper: {hyper:?}");
    }
    if lingo == hyper {
        return;
    }
    let at = (lingo.requests.iter())
        .zip(&hyper.requests)
        .take_while(|(l, h)| l == h)
        .count();
    let case = RequestCase {
        bytes,
        lingo,
        hyper,
        l: lingo.requests.get(at),
        h: hyper.requests.get(at),
        before: at.checked_sub(1).map(|i| &lingo.requests[i]),
    };
    let rules = INTENDED_REQUESTS.iter().chain(FOR_NOW_REQUESTS);
    if let Some(rule) = rules.into_iter().find(|rule| (rule.matches)(&case)) {
        if show() {
            eprintln!("known: {}", rule.what);
        }
        return;
    }
    panic!(
        "an unknown difference from hyper's server at request {at} of b\"{}\"\n\
         lingo: {lingo:?}\nhyper: {hyper:?}",
        escaped(bytes)
    );
}

// === answers ===

pub const INTENDED_ANSWERS: &[AnswerRule] = &[
    Rule {
        what: "a 101 to a request that asked for no upgrade: lingo refuses the answer, hyper \
               reads it",
        why: "lingo's client asks for no upgrade; a switch it did not ask for is no answer",
        rfc: "RFC 9110 §15.2.2 (a server MUST NOT switch to a protocol not asked for), §7.8",
        matches: |c| {
            c.lingo.answer.is_none() && c.hyper.answer.as_ref().is_some_and(|h| h.status == 101)
        },
    },
    Rule {
        what: "an answer with both Transfer-Encoding and Content-Length: lingo leaves the \
               Content-Length out of its fields and does not reuse the connection, hyper keeps \
               both and reuses it",
        why: "the length is not the body's; an intermediary removes it before passing the \
              answer on, and such an answer is handled as an error (no second request on \
              that connection)",
        rfc: "RFC 9112 §6.3 (3), §6.1",
        matches: |c| match (&c.lingo.answer, &c.hyper.answer) {
            (Some(l), Some(h)) => {
                has(&h.fields, b"transfer-encoding")
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
    },
    Rule {
        what: "a Connection value with a byte outside visible ASCII (obs-text) and a `close` \
               token: lingo does not reuse the connection, hyper does (it reads no token in a \
               value it cannot read as text)",
        why: "not reusing is always safe; the upstream said close",
        rfc: "RFC 9112 §9.6 (close), RFC 9110 §7.6.1",
        matches: |c| {
            c.lingo.answer == c.hyper.answer
                && !c.lingo.reused
                && c.hyper.reused
                && c.lingo
                    .answer
                    .as_ref()
                    .is_some_and(|a| opaque_token(&a.fields, b"close"))
        },
    },
    Rule {
        what: "an HTTP/1.0 answer with Transfer-Encoding and no body (to a HEAD, a 204, a \
               304): lingo refuses it, hyper reads it (it looks at no framing there)",
        why: "an HTTP/1.0 message with Transfer-Encoding has faulty framing, whatever the \
              answer's kind",
        rfc: "RFC 9112 §6.1 (MUST treat the framing as faulty)",
        matches: |c| {
            c.lingo.answer.is_none()
                && c.hyper.answer.as_ref().is_some_and(|h| {
                    h.version == "HTTP/1.0"
                        && has(&h.fields, b"transfer-encoding")
                        && (c.asked.head || h.status == 204 || h.status == 304)
                })
        },
    },
    Rule {
        what: "a chunk extension with a control byte, or a chunk-size line over 4 KiB: lingo \
               fails the body, hyper reads it",
        why: "an extension is tokens and quoted strings; a control byte is none, and a line \
              another reader could end elsewhere; lingo's limit on a line is 4 KiB",
        rfc: "RFC 9112 §7.1.1 (chunk-ext grammar; a recipient ought to limit extensions)",
        matches: |c| {
            failed_here_read_there(c.lingo.answer.as_ref(), c.hyper.answer.as_ref())
                && odd_extension(c.bytes)
        },
    },
];

/// **Expected for now**: laxities in lingo (being fixed, or found here and to be fixed),
/// and one strictness being relaxed; emptied as the fixes land.
pub const FOR_NOW_ANSWERS: &[AnswerRule] = &[
    Rule {
        what: "an HTTP/1.0 answer whose Connection value has a byte outside visible ASCII \
               (obs-text) and a `keep-alive` token: lingo reuses the connection, hyper does not",
        why: "LAXITY found by this target, not part of the fix under way: lingo keeps what \
              hyper closes; to be fixed: read no token in such a value (or close)",
        rfc: "RFC 9112 §9.3 (persistence), RFC 9110 §5.5 (obs-text), §7.6.1",
        matches: |c| {
            c.lingo.answer == c.hyper.answer
                && c.lingo.reused
                && !c.hyper.reused
                && c.lingo.answer.as_ref().is_some_and(|a| {
                    a.version == "HTTP/1.0" && opaque_token(&a.fields, b"keep-alive")
                })
        },
    },
    Rule {
        what: "a Transfer-Encoding value with a byte outside visible ASCII (obs-text) whose \
               last coding is `chunked`: lingo reads the body as chunked, hyper up to the \
               close (to it, a value it cannot read as text does not end in chunked)",
        why: "LAXITY found by this target, not part of the fix under way: the two read a \
              different body from the same bytes; to be fixed: such framing is faulty (no \
              answer, the connection closed)",
        rfc: "RFC 9112 §6.1 (transfer-coding = token), §6.3",
        matches: |c| match (&c.lingo.answer, &c.hyper.answer) {
            (Some(l), Some(h)) => {
                opaque_chunked(&h.fields)
                    && l.status == h.status
                    && l.version == h.version
                    && l.fields == h.fields
            }
            _ => false,
        },
    },
    Rule {
        what: "a trailer section with a bare LF line end: lingo takes everything up to the next \
               CRLF CRLF as the trailers, hyper fails the body",
        why: "LAXITY being fixed: the section will end where the parser says it ends, or the \
              connection will close",
        rfc: "RFC 9112 §7.1.2 (trailer-section), §2.2 (bare LF)",
        matches: |c| match (&c.lingo.answer, &c.hyper.answer) {
            (Some(l), Some(h)) => {
                Read {
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
        what: "a chunk size written with more than 16 digits (leading zeros): lingo fails the \
           body, hyper reads it",
        why: "STRICTNESS being fixed: lingo will read it when its value fits in 64 bits",
        rfc: "RFC 9112 §7.1 (chunk-size = 1*HEXDIG)",
        matches: |c| {
            failed_here_read_there(c.lingo.answer.as_ref(), c.hyper.answer.as_ref())
                && long_chunk_size(c.bytes)
        },
    },
];

/// Compares what the two clients made of `bytes`: every difference is a known one, or this
/// panics with both readings.
pub fn answers(bytes: &[u8], asked: Asked, lingo: &Answered, hyper: &Answered) {
    if show() {
        eprintln!("lingo: {lingo:?}\nhyper: {hyper:?}");
    }
    if lingo == hyper {
        return;
    }
    // The one difference that combines with the others (a Content-Length beside a
    // Transfer-Encoding) is taken out of hyper's reading first.
    let hyper = &without_length_beside_coding(lingo, hyper);
    if lingo == hyper {
        if show() {
            eprintln!("known: {}", INTENDED_ANSWERS[LENGTH_BESIDE_CODING].what);
        }
        return;
    }
    let case = AnswerCase {
        bytes,
        asked,
        lingo,
        hyper,
    };
    let rules = INTENDED_ANSWERS.iter().chain(FOR_NOW_ANSWERS);
    if let Some(rule) = rules.into_iter().find(|rule| (rule.matches)(&case)) {
        if show() {
            eprintln!("known: {}", rule.what);
        }
        return;
    }
    panic!(
        "an unknown difference from hyper's client ({asked:?}) on b\"{}\"\n\
         lingo: {lingo:?}\nhyper: {hyper:?}",
        escaped(bytes)
    );
}

/// Where in [`INTENDED_ANSWERS`] the rule about a Content-Length beside a
/// Transfer-Encoding is.
const LENGTH_BESIDE_CODING: usize = 1;

/// hyper's reading of an answer with both a Transfer-Encoding and a Content-Length, as lingo
/// reads it by the intended rule ([`LENGTH_BESIDE_CODING`]): the length left out of the
/// fields, and the connection not reused where lingo does not reuse it.
fn without_length_beside_coding(lingo: &Answered, hyper: &Answered) -> Answered {
    let mut read = hyper.clone();
    if let (Some(l), Some(h)) = (&lingo.answer, &mut read.answer)
        && has(&h.fields, b"transfer-encoding")
        && has(&h.fields, b"content-length")
        && l.fields == without(&h.fields, b"content-length")
    {
        h.fields = l.fields.clone();
        read.reused &= lingo.reused;
    }
    read
}

// === what the rules look at ===

/// `H1_SHOW=1`: each run tells both readings (and the rule that knew their difference).
fn show() -> bool {
    std::env::var_os("H1_SHOW").is_some()
}

fn values<'a>(fields: &'a Fields, name: &'a [u8]) -> impl Iterator<Item = &'a Octets> {
    fields
        .iter()
        .filter(move |(n, _)| n.0 == name)
        .map(|(_, v)| v)
}

fn has(fields: &Fields, name: &[u8]) -> bool {
    values(fields, name).next().is_some()
}

fn without(fields: &Fields, name: &[u8]) -> Fields {
    fields
        .iter()
        .filter(|(n, _)| n.0 != name)
        .cloned()
        .collect()
}

/// The fields with only the first of their `Content-Length` fields.
fn one_length(fields: &Fields) -> Fields {
    let mut seen = false;
    (fields.iter())
        .filter(|(n, _)| n.0 != b"content-length" || !std::mem::replace(&mut seen, true))
        .cloned()
        .collect()
}

/// The comma-separated items of a field value, trimmed.
fn items(value: &Octets) -> impl Iterator<Item = &[u8]> {
    value.0.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

/// Whether every item of `values` is a number, all the same number.
fn one_value(values: &[&Octets]) -> bool {
    let numbers: Vec<Option<u64>> = values.iter().flat_map(|v| items(v)).map(number).collect();
    numbers
        .first()
        .is_some_and(|first| first.is_some() && numbers.iter().all(|n| n == first))
}

/// `1*DIGIT` within 64 bits.
fn number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn token_in(fields: &Fields, name: &[u8], token: &[u8]) -> bool {
    values(fields, name).any(|v| items(v).any(|i| i.eq_ignore_ascii_case(token)))
}

fn asks_upgrade(fields: &Fields) -> bool {
    token_in(fields, b"connection", b"upgrade") && has(fields, b"upgrade")
}

/// A body framed by its fields: chunked, or a length above zero.
fn has_body_framing(fields: &Fields) -> bool {
    has(fields, b"transfer-encoding")
        || values(fields, b"content-length").any(|v| items(v).any(|i| i.iter().any(|&d| d != b'0')))
}

/// No `Host` in an HTTP/1.1 request, more than one, or one that is no `uri-host [":" port]`.
fn bad_host(h: &Seen) -> bool {
    let hosts: Vec<&Octets> = values(&h.fields, b"host").collect();
    match hosts[..] {
        [] => h.version == "HTTP/1.1",
        [one] => {
            let authority = hyper::http::uri::Authority::try_from(&one.0[..]);
            !one.0.is_empty() && (authority.is_err() || one.0.contains(&b'@'))
        }
        _ => true,
    }
}

/// How many field lines named `name` (any case) `bytes` holds.
fn field_lines(bytes: &[u8], name: &[u8]) -> usize {
    (bytes.split(|&b| b == b'\n'))
        .filter(|line| line.len() > name.len() && line[..name.len()].eq_ignore_ascii_case(name))
        .filter(|line| line[name.len()..].trim_ascii_start().starts_with(b":"))
        .count()
}

/// A request or an answer: a head and a body.
trait Message: Clone + PartialEq {
    fn body(&mut self) -> &mut BodyEnd;
}

impl Message for Seen {
    fn body(&mut self) -> &mut BodyEnd {
        &mut self.body
    }
}

impl Message for Read {
    fn body(&mut self) -> &mut BodyEnd {
        &mut self.body
    }
}

/// Whether lingo's body failed where hyper read the same message whole, all else equal.
fn failed_here_read_there<T: Message>(lingo: Option<&T>, hyper: Option<&T>) -> bool {
    let (Some(l), Some(h)) = (lingo, hyper) else {
        return false;
    };
    let (mut failed, mut read) = (l.clone(), h.clone());
    *failed.body() == BodyEnd::Failed && matches!(read.body(), BodyEnd::Whole(..)) && {
        *failed.body() = read.body().clone();
        failed == read
    }
}

/// Whether `bytes` hold a line that begins as a chunk size with an extension (`;`) and
/// holds a control byte, or runs over 4 KiB.
fn odd_extension(bytes: &[u8]) -> bool {
    bytes.split(|&b| b == b'\n').any(|line| {
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        let rest = line[digits..].trim_ascii_start();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        digits > 0
            && rest.starts_with(b";")
            && (line.len() >= 4096 || line.iter().any(|&b| b < b' ' && b != b'\t' || b == 0x7f))
    })
}

/// Whether `bytes` hold a `Content-Length` line whose value is 2^64-2 or more.
fn huge_length(bytes: &[u8]) -> bool {
    let name = b"content-length:";
    bytes.split(|&b| b == b'\n').any(|line| {
        line.len() > name.len()
            && line[..name.len()].eq_ignore_ascii_case(name)
            && items(&Octets(line[name.len()..].to_vec())).any(|v| {
                number(v.strip_suffix(b"\r").unwrap_or(v)).is_some_and(|n| n >= u64::MAX - 1)
            })
    })
}

/// Whether a value has a byte outside visible ASCII (and tab): hyper cannot read it as
/// text, and reads no token in it.
fn opaque(value: &Octets) -> bool {
    value.0.iter().any(|&b| b < b' ' && b != b'\t' || b >= 0x7f)
}

/// A `Transfer-Encoding` whose last coding is `chunked` in an [`opaque`] value (hyper
/// takes it as not chunked).
fn opaque_chunked(fields: &Fields) -> bool {
    values(fields, b"transfer-encoding")
        .last()
        .is_some_and(|v| {
            opaque(v)
                && items(v)
                    .last()
                    .is_some_and(|i| i.eq_ignore_ascii_case(b"chunked"))
        })
}

/// A `Connection` value that is [`opaque`] and holds `token`.
fn opaque_token(fields: &Fields, token: &[u8]) -> bool {
    values(fields, b"connection")
        .any(|v| opaque(v) && items(v).any(|i| i.eq_ignore_ascii_case(token)))
}

/// Whether `bytes` hold a last chunk (`0` CRLF) whose trailer section, up to the next
/// CRLF CRLF, has a bare LF.
fn bare_lf_trailer(bytes: &[u8]) -> bool {
    (0..bytes.len()).any(|at| {
        let line_start = at == 0 || bytes[at - 1] == b'\n';
        let zeros = bytes[at..].iter().take_while(|&&b| b == b'0').count();
        let Some(rest) = bytes[at + zeros..].strip_prefix(b"\r\n") else {
            return false;
        };
        let section = match rest.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => &rest[..end + 4],
            None => rest,
        };
        let bare =
            (0..section.len()).any(|i| section[i] == b'\n' && (i == 0 || section[i - 1] != b'\r'));
        line_start && zeros > 0 && bare
    })
}

/// Whether `bytes` hold a line that begins with more than 16 hex digits, the first a zero:
/// a chunk size spelt with leading zeros.
fn long_chunk_size(bytes: &[u8]) -> bool {
    bytes.split(|&b| b == b'\n').any(|line| {
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        digits > 16 && line[0] == b'0'
    })
}
