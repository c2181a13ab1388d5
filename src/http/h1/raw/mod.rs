//! A head's fields kept as read: a passed-through answer's, and the request of an HTTP/1.x
//! client. Pure.
//!
//! A passed-through answer's fields only go from the upstream's head to the client's: making
//! a map of them (each name parsed, each value checked, an entry made for each) cost a whole
//! pass-through 2,000 of its 29,600 instructions, and the map was then searched for
//! hop-by-hop fields and written out again. Such an answer keeps its fields as read instead
//! ([`Raw`], carried in its body's box: see `body::Body::carrying`), with which of them pass
//! on decided once as they are read. The client's HTTP/1.1 writer writes those as they are;
//! whatever else reads or edits an answer's fields (a redaction, an HTTP/2 client's
//! connection) makes them into the map first (`body::materialize`). A field in the map
//! stands for every field of its name in `Raw`; so does the one field lingo adds to an answer
//! kept as read (`X-Request-Id`, [`Raw::add`]), which then needs no map at all.
//!
//! A request read by lingo's HTTP/1.1 server keeps its fields the same way (its map, built,
//! searched and dropped, was 2,600 of a pass-through's 26,500): the phases before a plan read
//! them through `http::fields::Fields`; the header rules forward them
//! (`upstream::headers::Forwarding::raw_fields`: written as they are by lingo's own client,
//! `upstream::h1::head`, put in the map for the others, [`Raw::fill_map`]); the WebSocket
//! tunnel, which reads them itself, puts them in its map first.
//!
//! Only answers lingo's own client (plain `http://`, HTTP/1.1 upstreams) reads for a
//! pass-through to an HTTP/1.x client, and only requests lingo's HTTP/1.1 server reads, carry
//! `Raw`, and only those with at most [`MAX_RAW`] fields in a head under 64 KiB; every other
//! message has its map.

use bytes::Bytes;
use hyper::HeaderMap;
use hyper::header::{CONNECTION, CONTENT_LENGTH, DATE, HOST, HeaderName, HeaderValue};

use super::fields::{Facts, FieldError, STACK_SPANS, Span, spans, to_map};
use crate::base::pinned;
use crate::http::hop::{self, is};

/// The most fields a head keeps as read: room for them is part of [`Raw`] (no allocation of
/// its own); a head with more is made into a map. (The official SDKs send up to 17 fields.)
pub const MAX_RAW: usize = 32;

/// A head's fields as its parser hands them on: in a map (`Some` map, no `Raw`), or kept as
/// read (no map, so that none is made only to be dropped beside the message's own).
pub type Section = (Option<HeaderMap>, Option<Box<Raw>>);

/// One bit per field.
type Bits = u32;

/// A head's fields as httparse read them, noted before its bytes leave the read buffer.
pub enum Noting<'r> {
    /// Kept as read ([`Raw::note`]), with what they say about framing.
    Kept(Noted, Facts),
    /// Past what [`Raw`] keeps ([`Raw::fits`]): where each sits, for a map.
    Spans(&'r [Span]),
}

impl<'r> Noting<'r> {
    /// The `fields` httparse read from the head `buf` starts with (`len` bytes): kept as
    /// read when `keep` asks for it and they fit ([`Raw::fits`]), else where each sits,
    /// noted in `room` (made only then: zeroing its 1 KiB cost ~75 instructions a head) or,
    /// past it, in `heap`.
    pub fn of(
        buf: &[u8],
        len: usize,
        fields: &[httparse::Header<'_>],
        keep: bool,
        (room, heap): (&'r mut Option<[Span; STACK_SPANS]>, &'r mut Vec<Span>),
    ) -> Noting<'r> {
        if keep && Raw::fits(fields.len(), len) {
            let facts = Facts::of_fields(fields);
            let noted = Raw::note(&buf[..len], fields, facts.chunked.is_some());
            return Noting::Kept(noted, facts);
        }
        let room = room.insert([const { (0..0, 0..0) }; STACK_SPANS]);
        Noting::Spans(spans(buf, fields, room, heap))
    }

    /// The fields, with `head`, the head's bytes taken out of the read buffer: kept as read,
    /// or made into a map with room for `adds` more; and what they say about framing. A
    /// chunked body's `Content-Length` is left out either way (RFC 9112 §6.1: it is not the
    /// body's, and a forwarder must not pass it on).
    pub fn section(self, head: Bytes, adds: usize) -> Result<(Section, Facts), FieldError> {
        let spans = match self {
            Noting::Kept(noted, facts) => return Ok(((None, Some(noted.with_head(head))), facts)),
            Noting::Spans(spans) => spans,
        };
        let mut facts = Facts::default();
        let mut map = to_map(&head, spans, adds, &mut facts)?;
        if facts.chunked.is_some() {
            map.remove(CONTENT_LENGTH);
        }
        Ok(((Some(map), None), facts))
    }
}

/// A head's fields noted as read ([`Raw::note`]), waiting for the head's bytes.
pub struct Noted {
    raw: Box<Raw>,
    /// Whether a `Connection` field names others to leave out.
    connection: bool,
}

impl Noted {
    /// The fields, kept with `head`: the bytes they were noted in, taken out of the read
    /// buffer (the same bytes, the same length).
    pub fn with_head(self, head: Bytes) -> Box<Raw> {
        let Noted {
            mut raw,
            connection,
        } = self;
        debug_assert!(
            raw.fields[..raw.len()]
                .iter()
                .all(|f| usize::from(f.value.1) <= head.len()),
            "not the head the fields were noted in"
        );
        raw.head = head;
        if connection {
            raw.leave_named(); // notes the length too
        } else {
            raw.note_length();
        }
        raw
    }
}

/// Up to this many fields x bytes of `Connection` values, the fields it names are found by
/// asking it about each field (see [`Raw::leave_named`]).
const ASKED_AT_MOST: usize = 4096;

/// Where one field's name and value sit in the head (a head kept as read is under 64 KiB).
#[derive(Clone, Copy, Default)]
struct Field {
    name: (u16, u16),
    value: (u16, u16),
}

/// A head's fields as they were written (but the `Content-Length` of a chunked body, which
/// is not the body's: RFC 9112 §6.1), and which of them are passed on (decided once, as they
/// are read: they are written, or made into a map, once).
pub struct Raw {
    /// The head they were read from.
    head: Bytes,
    fields: [Field; MAX_RAW],
    /// How many fields (at most [`MAX_RAW`]: a byte, so that `Raw` is 384 bytes, not 392).
    len: u8,
    /// Bit `i`: field `i` is passed on (not hop-by-hop, not named by `Connection`).
    passed: Bits,
    /// The first `Content-Length` passed on.
    length: Option<u8>,
    /// The first `Content-Length` read (passed on or not): what a request declares.
    declared: Option<u8>,
    /// The first `Host` read: where a request is addressed.
    host: Option<u8>,
    /// Bit `i`: field `i` is a `Content-Length` passed on.
    lengths: Bits,
    /// Bit `i`: field `i` is a `Date` passed on.
    dates: Bits,
    /// The field lingo adds (see [`Raw::add`]), passed on after those read.
    added: Option<(HeaderName, HeaderValue)>,
}

impl Raw {
    /// The fields httparse read from `head` (the head's bytes, still in the read buffer),
    /// kept as read: at most [`MAX_RAW`] of them in a head under 64 KiB ([`Raw::fits`]; more
    /// go into a map). `chunked`: the body was framed by `Transfer-Encoding`, so a
    /// `Content-Length` with it is not the body's, and is left out (RFC 9112 §6.1), as the
    /// map leaves it out.
    ///
    /// Noted before the head's bytes are taken out of the buffer ([`Noted::with_head`] joins
    /// them), so that no list of where each field sits is made in between (see
    /// [`Noting::of`]). Made in the box it is kept in (`base::pinned::in_box`): made on the
    /// stack and moved there, its 384 bytes were copied once more a head.
    pub fn note(head: &[u8], fields: &[httparse::Header<'_>], chunked: bool) -> Noted {
        debug_assert!(Raw::fits(fields.len(), head.len()), "see `Raw::fits`");
        let at = |s: &[u8]| {
            let start = s.as_ptr() as usize - head.as_ptr() as usize;
            (start as u16, (start + s.len()) as u16)
        };
        let mut raw = pinned::in_box(|| Raw {
            head: Bytes::new(),
            fields: [Field::default(); MAX_RAW],
            len: 0,
            passed: 0,
            length: None,
            declared: None,
            host: None,
            lengths: 0,
            dates: 0,
            added: None,
        });
        let mut connection = false;
        for field in fields {
            let read = field.name.as_bytes();
            let length = is(read, &CONTENT_LENGTH);
            if chunked && length {
                continue;
            }
            let i = usize::from(raw.len);
            raw.fields[i] = Field {
                name: at(read),
                value: at(field.value),
            };
            raw.len += 1;
            if length && raw.declared.is_none() {
                raw.declared = Some(i as u8);
            } else if raw.host.is_none() && is(read, &HOST) {
                raw.host = Some(i as u8);
            }
            connection |= is(read, &CONNECTION);
            if hop::is_hop_by_hop(read) {
                continue;
            }
            raw.passed |= 1 << i;
            raw.lengths |= Bits::from(length) << i;
            raw.dates |= Bits::from(is(read, &DATE)) << i;
        }
        Noted { raw, connection }
    }

    /// Whether `fields` fields of a head of `len` bytes can be kept as read.
    pub fn fits(fields: usize, len: usize) -> bool {
        fields <= MAX_RAW && len <= usize::from(u16::MAX)
    }

    /// Adds lingo's field `name` (`X-Request-Id`), passed on after the fields read and
    /// standing for theirs of its name, as a field set in the map would: an answer kept as
    /// read then needs no map (making one and adding the field to it cost a whole
    /// pass-through ~680 instructions, callgrind). One field: another replaces it. Not one
    /// that frames or dates the answer, nor a hop-by-hop one: the writer adds those itself.
    pub fn add(&mut self, name: HeaderName, value: HeaderValue) {
        debug_assert!(
            ![CONTENT_LENGTH, hyper::header::TRANSFER_ENCODING, DATE].contains(&name)
                && !hop::is_hop_by_hop(name.as_str().as_bytes()),
            "{name} is the writer's to add"
        );
        let named = self.named(&name).fold(0, |named: Bits, i| named | 1 << i);
        self.leave(named);
        self.added = Some((name, value));
    }

    /// Leaves the fields of `left` out of those passed on.
    fn leave(&mut self, left: Bits) {
        let kept = !left;
        (self.passed, self.lengths, self.dates) =
            (self.passed & kept, self.lengths & kept, self.dates & kept);
        self.note_length();
    }

    /// Notes which field is the first `Content-Length` passed on.
    fn note_length(&mut self) {
        self.length = (self.lengths != 0).then(|| self.lengths.trailing_zeros() as u8);
    }

    /// The fields read named `name`, by index.
    fn named<'n>(&self, name: &'n HeaderName) -> impl Iterator<Item = usize> + use<'_, 'n> {
        let lower = name.as_str().as_bytes();
        (0..self.len()).filter(move |&i| hop::is_lowered(self.name(i), lower))
    }

    /// Leaves out the fields a `Connection` field names (each name token read as
    /// `hop::names` reads it).
    fn leave_named(&mut self) {
        let said: usize = self.connection_values().map(<[u8]>::len).sum();
        let left = if self.len() * said <= ASKED_AT_MOST {
            self.named_by_asking()
        } else {
            self.named_by_sorting()
        };
        self.leave(left);
    }

    fn connection_values(&self) -> impl Iterator<Item = &[u8]> {
        self.named(&CONNECTION).map(|c| self.value(c))
    }

    /// The fields named, found by asking each `Connection` value about each field: the
    /// cheapest way for the few fields and short values nearly every message has.
    fn named_by_asking(&self) -> Bits {
        (0..self.len())
            .filter(|&i| {
                self.connection_values()
                    .any(|v| hop::names(v, self.name(i)))
            })
            .fold(0, |left, i| left | 1 << i)
    }

    /// The fields named, found by looking each token up among the names passed on, sorted
    /// once (case aside) into runs of one name each: at most seven comparisons a token, each
    /// ending within its length. Asking each field about every token costs fields x value
    /// bytes: for a 64 KiB head of 32 fields, two million byte comparisons a request.
    fn named_by_sorting(&self) -> Bits {
        let mut order = [0u8; MAX_RAW];
        let mut n = 0;
        for i in (0..self.len()).filter(|&i| self.passed & (1 << i) != 0) {
            order[n] = i as u8;
            n += 1;
        }
        let order = &mut order[..n];
        order.sort_unstable_by(|&a, &b| self.cmp_name(a, self.name(usize::from(b))));
        let mut runs = [(0u8, 0 as Bits); MAX_RAW];
        let mut len = 0;
        for &i in order.iter() {
            if len > 0
                && self
                    .cmp_name(runs[len - 1].0, self.name(usize::from(i)))
                    .is_eq()
            {
                runs[len - 1].1 |= 1 << i;
            } else {
                runs[len] = (i, 1 << i);
                len += 1;
            }
        }
        let runs = &runs[..len];
        let mut left = 0;
        for token in self
            .connection_values()
            .flat_map(|v| v.split(|&b| b == b','))
        {
            let token = token.trim_ascii();
            let at = runs.partition_point(|&(i, _)| self.cmp_name(i, token).is_lt());
            if let Some(&(i, fields)) = runs.get(at)
                && self.cmp_name(i, token).is_eq()
            {
                left |= fields;
            }
        }
        left
    }

    /// Field `i`'s name against `other`, case aside.
    fn cmp_name(&self, i: u8, other: &[u8]) -> std::cmp::Ordering {
        hop::cmp_ignoring_case(self.name(usize::from(i)), other)
    }

    fn name(&self, i: usize) -> &[u8] {
        let (start, end) = self.fields[i].name;
        &self.head[usize::from(start)..usize::from(end)]
    }

    fn value(&self, i: usize) -> &[u8] {
        let (start, end) = self.fields[i].value;
        &self.head[usize::from(start)..usize::from(end)]
    }

    /// Each field passed on, in the order read (lingo's own last), lent to `each`.
    pub fn each(&self, each: impl FnMut(&[u8], &[u8])) {
        self.each_of(self.passed, each);
    }

    /// Each field passed on but `Content-Length` (which the writer frames the body by), and
    /// whether one of them was `Date`.
    pub fn each_but_length(&self, each: impl FnMut(&[u8], &[u8])) -> bool {
        self.each_of(self.passed & !self.lengths, each);
        self.dates != 0
    }

    fn each_of(&self, mut bits: Bits, mut each: impl FnMut(&[u8], &[u8])) {
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            each(self.name(i), self.value(i));
        }
        if let Some((name, value)) = &self.added {
            each(name.as_str().as_bytes(), value.as_bytes());
        }
    }

    /// The value of each `Content-Length` passed on, lent to `each` in the order read.
    pub fn each_length(&self, mut each: impl FnMut(&[u8])) {
        let mut bits = self.lengths;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            each(self.value(i));
        }
    }

    /// The value of the first `Content-Length` passed on.
    pub fn length(&self) -> Option<&[u8]> {
        self.length.map(|i| self.value(usize::from(i)))
    }

    /// The value of the first `Content-Length` read, passed on or not: `get(CONTENT_LENGTH)`
    /// without looking (every request's size is checked against its route's limit).
    pub fn declared_length(&self) -> Option<&[u8]> {
        self.declared.map(|i| self.value(usize::from(i)))
    }

    /// The value of the first `Host` read: `get(HOST)` without looking (every request's is
    /// forwarded as `X-Forwarded-Host`).
    pub fn host(&self) -> Option<&[u8]> {
        self.host.map(|i| self.value(usize::from(i)))
    }

    /// How many fields were read, hop-by-hop ones too (not one added: so for what follows).
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every field read, hop-by-hop ones too, in the order read.
    pub fn all(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.len()).map(|i| (self.name(i), self.value(i)))
    }

    /// The values of every field read named `name` (hop-by-hop ones too), in the order read.
    pub fn get_all<'r, 'n>(
        &'r self,
        name: &'n HeaderName,
    ) -> impl Iterator<Item = &'r [u8]> + use<'r, 'n> {
        self.named(name).map(|i| self.value(i))
    }

    /// The value of the first field read named `name`.
    pub fn get(&self, name: &HeaderName) -> Option<&[u8]> {
        self.get_all(name).next()
    }

    /// `value` (one of this head's) as a map's value, sharing the head's bytes. (httparse
    /// checks values as the map does, see the tests: never `None` for a value read.)
    pub fn shared(&self, value: &[u8]) -> Option<HeaderValue> {
        HeaderValue::from_maybe_shared(self.head.slice_ref(value)).ok()
    }

    /// Adds every field (hop-by-hop ones too) to `map`: a request's fields as a map, as if
    /// they had been read into one, for whatever reads or rewrites them there.
    pub fn fill_map(&self, map: &mut HeaderMap) {
        debug_assert!(self.added.is_none(), "a request's fields have none added");
        map.reserve(self.len());
        for (name, value) in self.all() {
            match (HeaderName::from_bytes(name), self.shared(value)) {
                (Ok(name), Some(value)) => drop(map.append(name, value)),
                // httparse checks names and values as the map does (see the tests): not met.
                _ => tracing::error!("a request's field could not be made a map's"),
            }
        }
    }

    /// Adds the fields passed on to `map`, but those of a name `map` already has: the
    /// answer's fields as a map, as if they had been read into one.
    pub fn into_map(self, map: &mut HeaderMap) {
        let set: Vec<HeaderName> = map.keys().cloned().collect();
        let mut bits = self.passed;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let name = HeaderName::from_bytes(self.name(i));
            match (name, self.shared(self.value(i))) {
                (Ok(name), Some(value)) if !set.contains(&name) => drop(map.append(name, value)),
                (Ok(_), Some(_)) => {}
                // httparse checks names and values as the map does (see the tests): not met.
                _ => tracing::error!("an answer's field could not be made a map's"),
            }
        }
        if let Some((name, value)) = self.added
            && !set.contains(&name)
        {
            map.append(name, value);
        }
    }
}

/// A field section (`name: value` lines, then an empty line) read as an answer's is: its
/// bytes, where each field sits, and what they say about framing (for the tests here and
/// those of the writer).
#[cfg(test)]
pub(crate) fn spans_of(section: &str) -> (Bytes, Vec<Span>, Facts) {
    let (head, spans, facts, _) = noted(section);
    (head, spans, facts)
}

/// [`spans_of`], and the fields kept as an answer's are (`None` past what `Raw` keeps).
#[cfg(test)]
pub(crate) fn noted(section: &str) -> (Bytes, Vec<Span>, Facts, Option<Box<Raw>>) {
    let head = Bytes::copy_from_slice(section.as_bytes());
    let mut fields = vec![httparse::EMPTY_HEADER; 2 * MAX_RAW];
    let Ok(httparse::Status::Complete((_, parsed))) = httparse::parse_headers(&head, &mut fields)
    else {
        panic!("not a field section: {section:?}");
    };
    let (mut room, mut heap) = ([const { (0..0, 0..0) }; STACK_SPANS], Vec::new());
    let spans = spans(&head, parsed, &mut room, &mut heap).to_vec();
    let facts = Facts::of_fields(parsed);
    let raw = Raw::fits(parsed.len(), head.len())
        .then(|| Raw::note(&head, parsed, facts.chunked.is_some()).with_head(head.clone()));
    (head, spans, facts, raw)
}

/// A field section kept as an answer's are.
#[cfg(test)]
pub(crate) fn read(section: &str) -> Raw {
    *noted(section).3.expect("at most MAX_RAW fields")
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lossy = String::from_utf8_lossy;
        let mut map = f.debug_map();
        self.each(|name, value| {
            map.entry(&lossy(name), &lossy(value));
        });
        map.finish()
    }
}

/// Whether `map` has a field named `name` (as read, any case): a field lingo set, which
/// stands for the answer's own of that name.
pub fn set_in(map: &HeaderMap, name: &[u8]) -> bool {
    map.keys()
        .any(|set| set.as_str().as_bytes().eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests;
