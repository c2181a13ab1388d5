//! The differences from hyper that are known: each a rule that recognises one by its shape
//! (what each side made of the bytes) and, where the shape alone could hide another, by what
//! in the bytes causes it. A difference no rule recognises is a crash: a new finding.
//!
//! Two lists for each target ([`requests`], [`responses`]):
//!
//! - `INTENDED`: lingo is stricter than hyper on purpose, each with its reason and the RFC
//!   section it keeps (lingo may be stricter, never laxer).
//! - `FOUND`: **expected for now**, differences these targets found that are neither fixed
//!   nor decided yet: each needs a fix (then it leaves the list) or a decision (then it
//!   becomes intended, with its reason).
//!
//! Once a rule recognises the first difference, what follows it is not compared: the two
//! connections have parted ways (one closed, or read the rest as other requests).

pub mod responses;
pub mod look;
pub mod requests;

use super::Fields;
use super::escaped;
use super::request::{Seen, Served};
use super::response::{Responded, RequestKind};
use lingo::http::hop::{is_hop_by_hop, names};
use look::{has, values, without};

/// A known difference, recognised by `matches` (a function of a [`RequestCase`] or an
/// [`ResponseCase`]).
pub struct Rule<M> {
    /// What differs.
    pub what: &'static str,
    /// What lingo does.
    pub lingo: &'static str,
    /// Why.
    pub why: &'static str,
    /// The RFC sections.
    pub rfc: &'static str,
    pub matches: M,
}

pub type RequestRule = Rule<fn(&RequestCase<'_>) -> bool>;
pub type ResponseRule = Rule<fn(&ResponseCase<'_>) -> bool>;

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

/// The response the two clients differ on.
pub struct ResponseCase<'a> {
    pub bytes: &'a [u8],
    pub request_kind: RequestKind,
    pub lingo: &'a Responded,
    /// hyper's reading, its fields those passed on (as lingo's).
    pub hyper: &'a Responded,
    /// Every field hyper read, the hop-by-hop ones too (none when it read no response): what
    /// framed the response.
    pub heard: &'a Fields,
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
    let mut rules = (requests::INTENDED.iter()).chain(requests::FOUND);
    if let Some(rule) = rules.find(|rule| (rule.matches)(&case)) {
        return known(rule.what);
    }
    panic!(
        "an unknown difference from hyper's server at request {at} of b\"{}\"\n\
         lingo: {lingo:?}\nhyper: {hyper:?}",
        escaped(bytes)
    );
}

/// Compares what the two clients made of `bytes`: every difference is a known one, or this
/// panics with both readings.
pub fn responses(bytes: &[u8], request_kind: RequestKind, lingo: &Responded, hyper: &Responded) {
    if show() {
        eprintln!("lingo: {lingo:?}\nhyper: {hyper:?}");
    }
    // lingo's client leaves the hop-by-hop fields out of a response (they stay on the
    // upstream's hop): hyper's reading is compared without them too.
    let no_fields = Fields::new();
    let heard = hyper.response.as_ref().map_or(&no_fields, |h| &h.fields);
    let hyper = &passed_on(hyper);
    if lingo == hyper {
        return;
    }
    // The one difference that combines with the others (a Content-Length beside a
    // Transfer-Encoding) is taken out of hyper's reading first.
    let hyper = &without_length_beside_coding(lingo, hyper, heard);
    if lingo == hyper {
        return known(responses::LENGTH_BESIDE_CODING.what);
    }
    let case = ResponseCase {
        bytes,
        request_kind,
        lingo,
        hyper,
        heard,
    };
    let mut rules = (responses::INTENDED.iter()).chain(responses::FOUND);
    if let Some(rule) = rules.find(|rule| (rule.matches)(&case)) {
        return known(rule.what);
    }
    panic!(
        "an unknown difference from hyper's client ({request_kind:?}) on b\"{}\"\n\
         lingo: {lingo:?}\nhyper: {hyper:?}",
        escaped(bytes)
    );
}

/// `read` with only the fields a proxy passes on: not the hop-by-hop ones, nor those its
/// `Connection` fields name (RFC 9110 §7.6.1), as lingo's client decides both.
fn passed_on(read: &Responded) -> Responded {
    let mut read = read.clone();
    if let Some(response) = &mut read.response {
        let connection: Vec<_> = values(&response.fields, b"connection").cloned().collect();
        response.fields.retain(|(name, _)| {
            !is_hop_by_hop(&name.0) && !connection.iter().any(|v| names(&v.0, &name.0))
        });
    }
    read
}

/// hyper's reading of a response with both a Transfer-Encoding and a Content-Length, as lingo
/// reads it by the intended rule ([`responses::LENGTH_BESIDE_CODING`]): the length left out of
/// the fields, and the connection not reused where lingo does not reuse it.
fn without_length_beside_coding(lingo: &Responded, hyper: &Responded, heard: &Fields) -> Responded {
    let mut read = hyper.clone();
    if let (Some(l), Some(h)) = (&lingo.response, &mut read.response)
        && has(heard, b"transfer-encoding")
        && has(&h.fields, b"content-length")
        && l.fields == without(&h.fields, b"content-length")
    {
        h.fields = l.fields.clone();
        read.reused &= lingo.reused;
    }
    read
}

/// `H1_SHOW=1`: each run tells both readings, and the rule that knew their difference.
fn show() -> bool {
    std::env::var_os("H1_SHOW").is_some()
}

fn known(what: &str) {
    if show() {
        eprintln!("known: {what}");
    }
}
