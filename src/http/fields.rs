//! A request's fields, wherever they are kept: in its map, or as read (`h1::raw`). Pure.
//!
//! The phases before a plan (framing, ids, limits, the key, the exchange) read a request's
//! fields through [`Fields`], so that a request lingo's HTTP/1.1 server kept as read is not
//! made into a map only to be searched. After them, its fields go up by the header rules
//! (`upstream::headers::Forwarding`, which write them as they are or put them in the map the
//! upstream's client needs), and the one way that reads them itself (a WebSocket tunnel)
//! puts them in the request's map first (`Raw::fill_map`).

use hyper::HeaderMap;
use hyper::header::{CONTENT_LENGTH, HOST, HeaderName, HeaderValue};

use crate::http::h1::fields::is_text;
use crate::http::h1::raw::Raw;

/// A request's fields: in its map, or kept as read (its map then empty).
#[derive(Clone, Copy)]
pub enum Fields<'a> {
    Map(&'a HeaderMap),
    Raw(&'a Raw),
}

impl<'a> Fields<'a> {
    /// The fields of a request whose map is `map`, kept as read in `raw` if they are.
    pub fn new(map: &'a HeaderMap, raw: Option<&'a Raw>) -> Self {
        match raw {
            Some(raw) => {
                debug_assert!(map.is_empty(), "a request's fields are in one place");
                Fields::Raw(raw)
            }
            None => Fields::Map(map),
        }
    }

    /// The value of the first field named `name`.
    pub fn get(self, name: &HeaderName) -> Option<&'a [u8]> {
        match self {
            Fields::Map(map) => map.get(name).map(HeaderValue::as_bytes),
            Fields::Raw(raw) => raw.get(name),
        }
    }

    /// The value of the first `Content-Length`.
    pub fn content_length(self) -> Option<&'a [u8]> {
        match self {
            Fields::Map(map) => map.get(CONTENT_LENGTH).map(HeaderValue::as_bytes),
            Fields::Raw(raw) => raw.declared_length(),
        }
    }

    /// The first `Host`, as a map's value (sharing its bytes).
    pub fn host(self) -> Option<HeaderValue> {
        match self {
            Fields::Map(map) => map.get(HOST).cloned(),
            Fields::Raw(raw) => raw.shared(raw.host()?),
        }
    }

    /// The values of every field named `name`, in order.
    pub fn get_all<'n>(self, name: &'n HeaderName) -> impl Iterator<Item = &'a [u8]> + use<'a, 'n> {
        let (mapped, raw) = match self {
            Fields::Map(map) => (Some(map.get_all(name).into_iter()), None),
            Fields::Raw(raw) => (None, Some(raw.get_all(name))),
        };
        let mapped = mapped.into_iter().flatten().map(HeaderValue::as_bytes);
        mapped.chain(raw.into_iter().flatten())
    }

    /// The value of the first field named `name` as a map's value (sharing its bytes, not
    /// copied).
    pub fn value(self, name: &HeaderName) -> Option<HeaderValue> {
        match self {
            Fields::Map(map) => map.get(name).cloned(),
            Fields::Raw(raw) => raw.shared(raw.get(name)?),
        }
    }

    /// How many fields there are.
    pub fn len(self) -> usize {
        match self {
            Fields::Map(map) => map.len(),
            Fields::Raw(raw) => raw.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The bytes the fields take on the wire (`name: value` and CRLF each).
    pub fn wire_len(self) -> usize {
        let line = |(name, value): (&[u8], &[u8])| name.len() + value.len() + 4;
        match self {
            Fields::Map(map) => map
                .iter()
                .map(|(name, value)| line((name.as_str().as_bytes(), value.as_bytes())))
                .sum(),
            Fields::Raw(raw) => raw.all().map(line).sum(),
        }
    }
}

impl<'a> From<&'a HeaderMap> for Fields<'a> {
    fn from(map: &'a HeaderMap) -> Self {
        Fields::Map(map)
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
    use crate::http::h1::raw;

    const SECTION: &str = "Host: a\r\nX-Two: 1\r\nx-two: 2\r\nConnection: upgrade\r\n\
        Content-Type: text/plain\r\n\r\n";

    /// A head's fields read where they are kept are the same as in a map made of them.
    #[test]
    fn kept_as_read_or_mapped_the_fields_read_the_same() {
        let kept = raw::read(SECTION);
        let mut map = HeaderMap::new();
        kept.fill_map(&mut map);
        let empty = HeaderMap::new();
        let (as_read, mapped) = (Fields::new(&empty, Some(&kept)), Fields::from(&map));
        for fields in [as_read, mapped] {
            assert_eq!(fields.len(), 5);
            assert!(!fields.is_empty());
            assert_eq!(fields.get(&"host".parse().unwrap()), Some(&b"a"[..]));
            let two: HeaderName = "x-two".parse().unwrap();
            assert_eq!(fields.get_all(&two).collect::<Vec<_>>(), [b"1", b"2"]);
            assert_eq!(fields.value(&two), Some(HeaderValue::from_static("1")));
            assert_eq!(fields.get(&"x-none".parse().unwrap()), None);
            let connection = fields.get(&hyper::header::CONNECTION);
            assert_eq!(connection, Some(&b"upgrade"[..]));
            assert_eq!(fields.wire_len(), SECTION.len() - 2);
            assert_eq!(fields.host(), Some(HeaderValue::from_static("a")));
            assert_eq!(fields.content_length(), None);
        }
        let sized = raw::read("Host: b\r\nContent-Length: 7\r\ncontent-length: 8\r\n\r\n");
        assert_eq!(Fields::Raw(&sized).content_length(), Some(&b"7"[..]));
        let mut map = HeaderMap::new();
        sized.fill_map(&mut map);
        assert_eq!(Fields::from(&map).content_length(), Some(&b"7"[..]));
        assert!(Fields::from(&empty).is_empty());
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
