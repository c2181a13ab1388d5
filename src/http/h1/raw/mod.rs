//! A head's raw header fields ([`RawHeaders`]): the unparsed header block of a
//! request lingo's HTTP/1.1 server read, or of a response its HTTP/1.1 client read to pass
//! on. Pure.
//!
//! Such fields mostly go from one head to the next unchanged, so they are kept as the bytes
//! they came in, with where each field sits and which of them pass on (decided once, as they
//! are read); a map is made of them only for whatever reads or edits them as a map
//! (`http::message`). A head is kept this way when it has at most [`MAX_RAW`] fields and is
//! under 64 KiB; any other head's fields go into a map. `docs/benchmarks.md` says what this
//! saves.

use bytes::Bytes;
use hyper::HeaderMap;
use hyper::header::{
    CONNECTION, CONTENT_LENGTH, DATE, HOST, HeaderName, HeaderValue, TRANSFER_ENCODING,
};

use super::fields::{FieldError, FramingHeaders, STACK_SPANS, Span, spans, to_map};
use crate::base::pinned;
use crate::http::hop::{self, is};

/// The most fields a head keeps as read: room for them is part of [`RawHeaders`] (no
/// allocation of its own). The official SDKs send up to 17.
pub const MAX_RAW: usize = 32;

/// One bit per field.
type Bits = u32;

/// A head's header fields as its parser hands them on: in a map, or kept raw.
#[derive(Debug)]
pub enum Headers {
    Map(HeaderMap),
    Raw(Box<RawHeaders>),
}

/// Which message a head's fields are kept for: what a reader of them sees differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request: readers see every field (its hop-by-hop ones say how it came).
    Request,
    /// A response passed on: readers see the fields passed on, as they would see its map once
    /// its hop-by-hop fields are removed (`upstream::headers::to_client`).
    Response,
}

/// A head's fields as httparse read them, indexed while the head's bytes are still in the
/// read buffer; [`PendingHeaders::attach`] joins the head's bytes once they are taken out.
pub enum PendingHeaders<'r> {
    /// To be kept raw, with what they say about framing.
    Raw {
        raw: Box<RawHeaders>,
        /// A `Connection` field may name others to leave out.
        connection: bool,
        framing: FramingHeaders,
    },
    /// For a map: where each field sits.
    Spans(&'r [Span]),
}

impl<'r> PendingHeaders<'r> {
    /// The `fields` httparse read from the head `buf` starts with (`len` bytes): kept raw
    /// for `keep` when they fit ([`RawHeaders::fits`]), else noted for a map, in `room` (made
    /// only then, as zeroing it costs) or, past it, in `heap`.
    pub fn index(
        buf: &[u8],
        len: usize,
        fields: &[httparse::Header<'_>],
        keep: Option<Kind>,
        (room, heap): (&'r mut Option<[Span; STACK_SPANS]>, &'r mut Vec<Span>),
    ) -> PendingHeaders<'r> {
        if let Some(kind) = keep
            && RawHeaders::fits(fields.len(), len)
        {
            let framing = FramingHeaders::of_fields(fields);
            let (raw, connection) = RawHeaders::index(&buf[..len], fields, framing.chunked, kind);
            return PendingHeaders::Raw {
                raw,
                connection,
                framing,
            };
        }
        let room = room.insert([const { (0..0, 0..0) }; STACK_SPANS]);
        PendingHeaders::Spans(spans(buf, fields, room, heap))
    }

    /// The fields, joined with `head` (the head's bytes taken out of the read buffer): kept
    /// as read, or made into a map with room for `adds` more; and what they say about
    /// framing. A chunked body's `Content-Length` is left out either way (RFC 9112 §6.1: it
    /// is not the body's, and a forwarder must not pass it on).
    pub fn attach(self, head: Bytes, adds: usize) -> Result<(Headers, FramingHeaders), FieldError> {
        let spans = match self {
            PendingHeaders::Raw {
                mut raw,
                connection,
                framing,
            } => {
                raw.attach(head, connection);
                return Ok((Headers::Raw(raw), framing));
            }
            PendingHeaders::Spans(spans) => spans,
        };
        let mut framing = FramingHeaders::default();
        let mut map = to_map(&head, spans, adds, &mut framing)?;
        if framing.chunked.is_some() {
            map.remove(CONTENT_LENGTH);
        }
        Ok((Headers::Map(map), framing))
    }
}

/// Up to this many fields x bytes of `Connection` values, the fields it names are found by
/// asking it about each field (see [`RawHeaders::leave_named`]).
const ASKED_AT_MOST: usize = 4096;

/// Where one field's name and value sit in the head (a head kept raw is under 64 KiB).
#[derive(Clone, Copy, Default)]
struct Field {
    name: (u16, u16),
    value: (u16, u16),
}

/// A head's fields as they were written (but the `Content-Length` of a chunked body, which
/// is not the body's: RFC 9112 §6.1), and which of them pass on (not hop-by-hop, not named
/// by `Connection`). A copy shares the head's bytes.
#[derive(Clone)]
pub struct RawHeaders {
    /// The head they were read from.
    head: Bytes,
    fields: [Field; MAX_RAW],
    /// How many fields (at most [`MAX_RAW`]).
    len: u8,
    kind: Kind,
    /// Bit `i`: field `i` is passed on.
    passed: Bits,
    /// Bit `i`: field `i` is one a reader sees (see [`Kind`]).
    visible: Bits,
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
    /// The field lingo set (see [`RawHeaders::insert`]), after those read.
    added: Option<(HeaderName, HeaderValue)>,
}

impl RawHeaders {
    /// The fields httparse read from `head` (the head's bytes, still in the read buffer):
    /// where each sits, and which pass on; and whether one is `Connection`, whose values
    /// are read once the head's bytes are attached. `chunked`: the body is framed by
    /// `Transfer-Encoding`, so a `Content-Length` is left out, as the map leaves it out.
    /// Built in its box (`base::pinned::in_box`), where it stays.
    fn index(
        head: &[u8],
        fields: &[httparse::Header<'_>],
        chunked: Option<bool>,
        kind: Kind,
    ) -> (Box<RawHeaders>, bool) {
        debug_assert!(RawHeaders::fits(fields.len(), head.len()), "see `fits`");
        let at = |s: &[u8]| {
            let start = s.as_ptr() as usize - head.as_ptr() as usize;
            (start as u16, (start + s.len()) as u16)
        };
        let mut raw = pinned::in_box(|| RawHeaders {
            head: Bytes::new(),
            fields: [Field::default(); MAX_RAW],
            len: 0,
            kind,
            passed: 0,
            visible: 0,
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
            if chunked.is_some() && length {
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
        (raw, connection)
    }

    /// Joins the head's bytes (the same bytes the fields were indexed in, taken out of the
    /// read buffer); then leaves out what `Connection` names, which needs its values.
    fn attach(&mut self, head: Bytes, connection: bool) {
        debug_assert!(
            self.fields[..self.read()]
                .iter()
                .all(|f| usize::from(f.value.1) <= head.len()),
            "not the head the fields were indexed in"
        );
        self.head = head;
        if connection {
            self.leave_named(); // notes the length too
        } else {
            self.note_length();
        }
        self.visible = match self.kind {
            Kind::Request => Bits::MAX
                .checked_shr(Bits::BITS - u32::from(self.len))
                .unwrap_or(0),
            Kind::Response => self.passed,
        };
    }

    /// Whether `fields` fields of a head of `len` bytes can be kept raw.
    pub fn fits(fields: usize, len: usize) -> bool {
        fields <= MAX_RAW && len <= usize::from(u16::MAX)
    }

    /// Whether [`RawHeaders::insert`] takes a field named `name`: one it does not add itself
    /// (framing and dates are the writer's, hop-by-hop fields stay on their hop), and at most
    /// one name.
    pub fn takes(&self, name: &HeaderName) -> bool {
        let writers = [CONTENT_LENGTH, TRANSFER_ENCODING, DATE].contains(name)
            || hop::is_hop_by_hop(name.as_str().as_bytes());
        !writers && self.added.as_ref().is_none_or(|(added, _)| added == name)
    }

    /// Sets lingo's field `name` (the request id), passed on after the fields read and
    /// standing for theirs of its name, as inserting it in a map would. Only a name
    /// [`RawHeaders::takes`].
    pub fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        debug_assert!(self.takes(&name), "{name}: see `takes`");
        let named = self.named(&name).fold(0, |named: Bits, i| named | 1 << i);
        self.leave(named);
        self.visible &= !named;
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

    /// Every field read named `name`, by index (visible or not).
    fn named<'n>(&self, name: &'n HeaderName) -> impl Iterator<Item = usize> + use<'_, 'n> {
        let lower = name.as_str().as_bytes();
        (0..self.read()).filter(move |&i| hop::is_lowered(self.name(i), lower))
    }

    /// Leaves out the fields a `Connection` field names (each name token read as
    /// `hop::names` reads it).
    fn leave_named(&mut self) {
        let said: usize = self.connection_values().map(<[u8]>::len).sum();
        let left = if self.read() * said <= ASKED_AT_MOST {
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
        (0..self.read())
            .filter(|&i| {
                self.connection_values()
                    .any(|v| hop::names(v, self.name(i)))
            })
            .fold(0, |left, i| left | 1 << i)
    }

    /// The fields named, found by looking each token up among the names passed on, sorted
    /// once (case aside) into runs of one name each: at most seven comparisons a token, each
    /// ending within its length. Asking each field about every token would cost fields x
    /// value bytes, millions of comparisons for the largest head kept.
    fn named_by_sorting(&self) -> Bits {
        let mut order = [0u8; MAX_RAW];
        let mut n = 0;
        for i in (0..self.read()).filter(|&i| self.passed & (1 << i) != 0) {
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
    pub fn each_passed(&self, each: impl FnMut(&[u8], &[u8])) {
        self.each_of(self.passed, each);
    }

    /// Each field passed on but `Content-Length` (which the writer frames the body by), and
    /// whether one of them was `Date`.
    pub fn each_written(&self, each: impl FnMut(&[u8], &[u8])) -> bool {
        self.each_of(self.passed & !self.lengths, each);
        self.dates != 0
    }

    fn each_of(&self, bits: Bits, mut each: impl FnMut(&[u8], &[u8])) {
        for i in indices(bits) {
            each(self.name(i), self.value(i));
        }
        if let Some((name, value)) = &self.added {
            each(name.as_str().as_bytes(), value.as_bytes());
        }
    }

    /// The value of each `Content-Length` passed on, lent to `each` in the order read.
    pub fn each_length(&self, mut each: impl FnMut(&[u8])) {
        for i in indices(self.lengths) {
            each(self.value(i));
        }
    }

    /// The value of the first `Content-Length` passed on.
    pub fn length(&self) -> Option<&[u8]> {
        self.length.map(|i| self.value(usize::from(i)))
    }

    /// The value of the first `Content-Length` read, passed on or not: what a request
    /// declares, found without a search (every request's size is checked).
    pub fn declared_length(&self) -> Option<&[u8]> {
        self.declared.map(|i| self.value(usize::from(i)))
    }

    /// The value of the first `Host` read, found without a search (every request's is
    /// forwarded as `X-Forwarded-Host`).
    pub fn host(&self) -> Option<&[u8]> {
        self.host.map(|i| self.value(usize::from(i)))
    }

    /// How many fields were read, hop-by-hop ones and those left out too.
    fn read(&self) -> usize {
        usize::from(self.len)
    }

    /// How many fields a reader sees (see [`Kind`]), lingo's own included.
    pub fn len(&self) -> usize {
        self.visible.count_ones() as usize + usize::from(self.added.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every field a reader sees, in the order read (lingo's own last).
    pub fn all(&self) -> RawHeaderIter<'_> {
        RawHeaderIter {
            raw: self,
            bits: self.visible,
            added: self.added.as_ref(),
        }
    }

    /// The values of every field a reader sees named `name`, in order.
    pub fn get_all<'r, 'n>(&'r self, name: &'n HeaderName) -> RawHeaderValues<'r, 'n> {
        let added = self.added.as_ref().filter(|(added, _)| added == name);
        RawHeaderValues {
            raw: self,
            lower: name.as_str().as_bytes(),
            next: 0,
            added: added.map(|(_, value)| value.as_bytes()),
        }
    }

    /// The value of the first field a reader sees named `name`.
    pub fn get(&self, name: &HeaderName) -> Option<&[u8]> {
        self.get_all(name).next()
    }

    /// The first field a reader sees named `name`, as a map's value (sharing the head's
    /// bytes, not copied).
    pub fn get_shared(&self, name: &HeaderName) -> Option<HeaderValue> {
        let seen = self.named(name).find(|&i| self.visible & (1 << i) != 0);
        match seen {
            Some(i) => self.shared(self.value(i)),
            None => (self.added.as_ref())
                .filter(|(added, _)| added == name)
                .map(|(_, value)| value.clone()),
        }
    }

    /// The first `Host` read, as a map's value (sharing the head's bytes).
    pub fn host_shared(&self) -> Option<HeaderValue> {
        self.shared(self.host()?)
    }

    /// `value` (one read in this head) as a map's value, sharing the head's bytes. (httparse
    /// checks values as the map does, see the tests: never `None` for a value read.)
    fn shared(&self, value: &[u8]) -> Option<HeaderValue> {
        HeaderValue::from_maybe_shared(self.head.slice_ref(value)).ok()
    }

    /// Appends every field a reader sees to `map`, as if they had been read into one.
    pub fn append_to(&self, map: &mut HeaderMap) {
        map.reserve(self.len());
        for i in indices(self.visible) {
            match (
                HeaderName::from_bytes(self.name(i)),
                self.shared(self.value(i)),
            ) {
                (Ok(name), Some(value)) => drop(map.append(name, value)),
                // httparse checks names and values as the map does (see the tests): not met.
                _ => tracing::error!("a field kept raw could not be made a map's"),
            }
        }
        if let Some((name, value)) = &self.added {
            map.append(name.clone(), value.clone());
        }
    }
}

/// The indices of the bits set in `bits`, lowest first.
fn indices(mut bits: Bits) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let i = (bits != 0).then(|| bits.trailing_zeros() as usize)?;
        bits &= bits - 1;
        Some(i)
    })
}

/// Every field a reader sees, in order, as names and values (see [`RawHeaders::all`]).
pub struct RawHeaderIter<'r> {
    raw: &'r RawHeaders,
    /// The fields read not yet handed out.
    bits: Bits,
    added: Option<&'r (HeaderName, HeaderValue)>,
}

impl<'r> Iterator for RawHeaderIter<'r> {
    type Item = (&'r [u8], &'r [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.bits != 0 {
            let i = self.bits.trailing_zeros() as usize;
            self.bits &= self.bits - 1;
            return Some((self.raw.name(i), self.raw.value(i)));
        }
        let (name, value) = self.added.take()?;
        Some((name.as_str().as_bytes(), value.as_bytes()))
    }
}

/// The values of the fields a reader sees of one name, in order (see
/// [`RawHeaders::get_all`]).
pub struct RawHeaderValues<'r, 'n> {
    raw: &'r RawHeaders,
    /// The name, lowercase.
    lower: &'n [u8],
    /// The next field read to look at.
    next: usize,
    /// The value lingo set for the name, after those read.
    added: Option<&'r [u8]>,
}

impl<'r> Iterator for RawHeaderValues<'r, '_> {
    type Item = &'r [u8];

    fn next(&mut self) -> Option<&'r [u8]> {
        while self.next < self.raw.read() {
            let i = self.next;
            self.next += 1;
            let seen = self.raw.visible & (1 << i) != 0;
            if seen && hop::is_lowered(self.raw.name(i), self.lower) {
                return Some(self.raw.value(i));
            }
        }
        self.added.take()
    }
}

impl std::fmt::Debug for RawHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lossy = String::from_utf8_lossy;
        let mut map = f.debug_map();
        for (name, value) in self.all() {
            map.entry(&lossy(name), &lossy(value));
        }
        map.finish()
    }
}

/// A field section (`name: value` lines, then an empty line) read as a head's is: its bytes,
/// where each field sits, and what they say about framing (for the tests here and those of
/// the writer).
#[cfg(test)]
pub(crate) fn spans_of(section: &str) -> (Bytes, Vec<Span>, FramingHeaders) {
    let (head, spans, framing, _) = indexed(section, Kind::Response);
    (head, spans, framing)
}

/// [`spans_of`], and the raw header fields for `kind` (`None` past what `RawHeaders`
/// keeps).
#[cfg(test)]
pub(crate) fn indexed(
    section: &str,
    kind: Kind,
) -> (Bytes, Vec<Span>, FramingHeaders, Option<Box<RawHeaders>>) {
    let head = Bytes::copy_from_slice(section.as_bytes());
    let mut fields = vec![httparse::EMPTY_HEADER; 2 * MAX_RAW];
    let Ok(httparse::Status::Complete((_, parsed))) = httparse::parse_headers(&head, &mut fields)
    else {
        panic!("not a field section: {section:?}");
    };
    let (mut room, mut heap) = ([const { (0..0, 0..0) }; STACK_SPANS], Vec::new());
    let spans = spans(&head, parsed, &mut room, &mut heap).to_vec();
    let framing = FramingHeaders::of_fields(parsed);
    let raw = RawHeaders::fits(parsed.len(), head.len()).then(|| {
        let (mut raw, connection) = RawHeaders::index(&head, parsed, framing.chunked, kind);
        raw.attach(head.clone(), connection);
        raw
    });
    (head, spans, framing, raw)
}

/// A field section kept as a `kind`'s fields are.
#[cfg(test)]
pub(crate) fn read(section: &str, kind: Kind) -> RawHeaders {
    *indexed(section, kind).3.expect("at most MAX_RAW fields")
}

#[cfg(test)]
mod tests;
