//! [`HeaderView`]: a message's header fields read wherever they are kept. Pure.

use hyper::HeaderMap;
use hyper::header::{self, CONTENT_LENGTH, HeaderName, HeaderValue};

use crate::http::h1::fields::is_text;
use crate::http::h1::raw::{self, Headers, RawHeaders};

/// A request's or a response's header fields, lent: in its map, or kept raw (its map
/// then empty). Every reader of a message's fields reads them through this
/// (`message::Request::headers`, `message::Response::headers`).
#[derive(Clone, Copy, Debug)]
pub enum HeaderView<'a> {
    Map(&'a HeaderMap),
    Raw(&'a RawHeaders),
}

impl<'a> HeaderView<'a> {
    /// The value of the first field named `name`.
    pub fn get(self, name: &HeaderName) -> Option<&'a [u8]> {
        match self {
            HeaderView::Map(map) => map.get(name).map(HeaderValue::as_bytes),
            HeaderView::Raw(raw) => raw.get(name),
        }
    }

    /// The values of every field named `name`, in order.
    pub fn get_all<'n>(self, name: &'n HeaderName) -> HeaderValues<'a, 'n> {
        match self {
            HeaderView::Map(map) => HeaderValues::Map(map.get_all(name).into_iter()),
            HeaderView::Raw(raw) => HeaderValues::Raw(raw.get_all(name)),
        }
    }

    /// Whether a field named `name` is there.
    pub fn contains(self, name: &HeaderName) -> bool {
        self.get(name).is_some()
    }

    /// The value of the first field named `name` as a map's value (sharing its bytes, not
    /// copied).
    pub fn value(self, name: &HeaderName) -> Option<HeaderValue> {
        match self {
            HeaderView::Map(map) => map.get(name).cloned(),
            HeaderView::Raw(raw) => raw.get_shared(name),
        }
    }

    /// The value of the first `Content-Length` (a request's, kept raw, without a search).
    pub fn content_length(self) -> Option<&'a [u8]> {
        match self {
            HeaderView::Map(map) => map.get(CONTENT_LENGTH).map(HeaderValue::as_bytes),
            HeaderView::Raw(raw) => raw.declared_length(),
        }
    }

    /// The first `Host`, as a map's value (a request's, kept raw, without a search).
    pub fn host(self) -> Option<HeaderValue> {
        match self {
            HeaderView::Map(map) => map.get(hyper::header::HOST).cloned(),
            HeaderView::Raw(raw) => raw.host_shared(),
        }
    }

    /// How many fields there are.
    pub fn len(self) -> usize {
        match self {
            HeaderView::Map(map) => map.len(),
            HeaderView::Raw(raw) => raw.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Every field, in order (a map's grouped by name, as it iterates).
    pub fn iter(self) -> HeaderIter<'a> {
        match self {
            HeaderView::Map(map) => HeaderIter::Map(map.iter()),
            HeaderView::Raw(raw) => HeaderIter::Raw(raw.all()),
        }
    }

    /// The bytes the fields take on the wire (`name: value` and CRLF each).
    pub fn wire_len(self) -> usize {
        let line = |(name, value): (&[u8], &[u8])| name.len() + value.len() + 4;
        match self {
            HeaderView::Map(map) => map
                .iter()
                .map(|(name, value)| line((name.as_str().as_bytes(), value.as_bytes())))
                .sum(),
            HeaderView::Raw(raw) => raw.all().map(line).sum(),
        }
    }

    /// Appends every field to `map` (the values shared, not copied).
    pub fn append_to(self, map: &mut HeaderMap) {
        match self {
            HeaderView::Map(fields) => {
                map.reserve(fields.len());
                for (name, value) in fields {
                    map.append(name.clone(), value.clone());
                }
            }
            HeaderView::Raw(raw) => raw.append_to(map),
        }
    }
}

/// The values of the fields of one name (see [`HeaderView::get_all`]).
pub enum HeaderValues<'a, 'n> {
    Map(header::ValueIter<'a, HeaderValue>),
    Raw(raw::RawHeaderValues<'a, 'n>),
}

impl<'a> Iterator for HeaderValues<'a, '_> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            HeaderValues::Map(values) => values.next().map(HeaderValue::as_bytes),
            HeaderValues::Raw(values) => values.next(),
        }
    }
}

/// Every field, as names and values (see [`HeaderView::iter`]).
pub enum HeaderIter<'a> {
    Map(header::Iter<'a, HeaderValue>),
    Raw(raw::RawHeaderIter<'a>),
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HeaderIter::Map(fields) => {
                (fields.next()).map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes()))
            }
            HeaderIter::Raw(fields) => fields.next(),
        }
    }
}

impl HeaderView<'_> {
    /// The fields, kept: a map is copied, fields kept raw share their head's bytes.
    pub fn to_headers(self) -> Headers {
        match self {
            HeaderView::Map(map) => Headers::Map(map.clone()),
            HeaderView::Raw(raw) => Headers::Raw(Box::new(raw.clone())),
        }
    }
}

impl<'a> From<&'a Headers> for HeaderView<'a> {
    fn from(headers: &'a Headers) -> Self {
        match headers {
            Headers::Map(map) => HeaderView::Map(map),
            Headers::Raw(raw) => HeaderView::Raw(raw),
        }
    }
}

impl<'a> From<&'a HeaderMap> for HeaderView<'a> {
    fn from(map: &'a HeaderMap) -> Self {
        HeaderView::Map(map)
    }
}

/// `value` as text when it is visible ASCII (tabs and spaces too), as `HeaderValue::to_str`
/// reads it.
pub fn text(value: &[u8]) -> Option<&str> {
    is_text(value)
        .then(|| std::str::from_utf8(value).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::raw::{self, Kind};

    const SECTION: &str = "Host: a\r\nX-Two: 1\r\nx-two: 2\r\nConnection: upgrade\r\n\
        Content-Type: text/plain\r\n\r\n";

    /// A request's fields read where they are kept are the same as in a map made of them.
    #[test]
    fn kept_as_read_or_mapped_the_fields_read_the_same() {
        let kept = raw::read(SECTION, Kind::Request);
        let mut map = HeaderMap::new();
        HeaderView::Raw(&kept).append_to(&mut map);
        for fields in [HeaderView::Raw(&kept), HeaderView::from(&map)] {
            assert_eq!(fields.len(), 5);
            assert!(!fields.is_empty());
            assert_eq!(fields.get(&"host".parse().unwrap()), Some(&b"a"[..]));
            let two: HeaderName = "x-two".parse().unwrap();
            assert_eq!(fields.get_all(&two).collect::<Vec<_>>(), [b"1", b"2"]);
            assert_eq!(fields.value(&two), Some(HeaderValue::from_static("1")));
            assert_eq!(fields.get(&"x-none".parse().unwrap()), None);
            assert!(fields.contains(&two) && !fields.contains(&CONTENT_LENGTH));
            let connection = fields.get(&hyper::header::CONNECTION);
            assert_eq!(connection, Some(&b"upgrade"[..]));
            assert_eq!(fields.wire_len(), SECTION.len() - 2);
            assert_eq!(fields.host(), Some(HeaderValue::from_static("a")));
            assert_eq!(fields.content_length(), None);
            let mut again = HeaderMap::new();
            fields.append_to(&mut again);
            assert_eq!(again, map);
        }
        let sized = "Host: b\r\nContent-Length: 7\r\ncontent-length: 8\r\n\r\n";
        let sized = raw::read(sized, Kind::Request);
        assert_eq!(HeaderView::Raw(&sized).content_length(), Some(&b"7"[..]));
        let mut map = HeaderMap::new();
        sized.append_to(&mut map);
        assert_eq!(HeaderView::from(&map).content_length(), Some(&b"7"[..]));
        assert!(HeaderView::from(&HeaderMap::new()).is_empty());
    }

    /// Text as `HeaderValue::to_str` reads it, byte for byte.
    #[test]
    fn text_is_what_the_map_calls_text() {
        for b in 0..=255u8 {
            let value = [b'a', b, b'z'];
            let Ok(mapped) = HeaderValue::from_bytes(&value) else {
                continue;
            };
            assert_eq!(text(&value), mapped.to_str().ok(), "{b}");
        }
    }
}
