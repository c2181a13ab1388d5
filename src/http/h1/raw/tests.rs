use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};

use super::*;
use crate::http::h1::fields::{FramingHeaders, to_map};
use crate::http::hop::KEEP_ALIVE;

/// A section's fields as a map, the length of a chunked body taken out (as the parsers do).
fn mapped(section: &str) -> HeaderMap {
    let (bytes, spans, _) = spans_of(section);
    let mut framing = FramingHeaders::default();
    let mut map = to_map(&bytes, &spans, 0, &mut framing).unwrap();
    if framing.chunked.is_some() {
        map.remove(CONTENT_LENGTH);
    }
    map
}

/// A response's fields as the map path passes them on: [`mapped`], then the hop-by-hop ones
/// removed (`upstream::headers::to_client`).
fn the_maps(section: &str) -> HeaderMap {
    let mut map = mapped(section);
    hop::remove_hop_by_hop(&mut map);
    map
}

/// `raw` made into a map.
fn map_of(raw: &RawHeaders) -> HeaderMap {
    let mut map = HeaderMap::new();
    raw.append_to(&mut map);
    map
}

fn lowered(fields: impl IntoIterator<Item = (String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    let mut fields: Vec<_> = fields.into_iter().collect();
    fields.sort();
    fields
}

const SECTIONS: &[&str] = &[
    "Content-Type: application/json\r\nDate: Thu, 26 Nov 2026 05:00:00 GMT\r\nContent-Length: 2\r\n\r\n",
    "content-type: text/plain\r\ntransfer-encoding: chunked\r\ncontent-length: 9\r\n\r\n",
    "Transfer-Encoding: gzip, chunked\r\nX-A: 1\r\n\r\n",
    "Connection: keep-alive, X-Up-Hop\r\nx-up-hop: 1\r\nX-UP-HOP: 2\r\nx-up-end: kept\r\n\r\n",
    "connection: close\r\nconnection: x-b\r\nx-b: 1\r\nx-c: 2\r\n\r\n",
    "TE: trailers\r\nTrailer: x-sum\r\nUpgrade: h2c\r\nKeep-Alive: timeout=5\r\n\
     Proxy-Connection: keep-alive\r\nProxy-Authenticate: Basic\r\nProxy-Authorization: x\r\n\
     x-kept: a\r\nX-Kept: b\r\n\r\n",
    "set-cookie: a=1\r\nset-cookie: b=2\r\nvary: origin\r\nvary: accept\r\n\r\n",
    "x-empty:\r\nx-spaced:   v  \r\ncontent-length: 5, 5\r\n\r\n",
    "\r\n",
    "Connection: content-length, date\r\nContent-Length: 2\r\nDate: x\r\nx-a: 1\r\n\r\n",
    "Content-Length: 2\r\nHOST: a\r\nhost: b\r\n\r\n",
    "transfer-encoding: chunked\r\ncontent-length: 9\r\nHost: h\r\n\r\n",
];

/// [`SECTIONS`], and [`MAX_RAW`] fields with the kinds set apart last (the masks' last bit).
fn sections() -> Vec<String> {
    let between: String = (1..MAX_RAW - 1)
        .map(|i| format!("x-{i}: {i}\r\n"))
        .collect();
    let last = MAX_RAW - 2;
    // Past `ASKED_AT_MOST`: names told in any case, twice, padded, among many that name
    // nothing, some sharing a field's length or first bytes; fields of one name in two cases.
    let tokens: String = (0..400).map(|i| format!("y-{i}, X-{i}x, ")).collect();
    // A hop-by-hop field it names too, which is not passed on either way.
    let fewer: String = (1..MAX_RAW - 4)
        .map(|i| format!("x-{i}: {i}\r\n"))
        .collect();
    let long = format!(
        "Connection: {tokens}X-3 ,  x-12\r\nX-3: again\r\nconnection: ,, X-{},keep-alive, x-3\r\n\
         {fewer}Keep-Alive: timeout=5\r\nDate: a\r\n\r\n",
        MAX_RAW - 5
    );
    let full = [
        long,
        format!("Connection: x-{last}\r\n{between}Date: Thu, 26 Nov 2026 05:00:00 GMT\r\n\r\n"),
        format!("transfer-encoding: chunked\r\n{between}content-length: 7\r\n\r\n"),
        format!("Date: a\r\n{between}Content-Length: 7\r\n\r\n"),
        format!("{between}content-length: 7\r\nHost: last\r\n\r\n"),
    ];
    SECTIONS.iter().map(|s| s.to_string()).chain(full).collect()
}

/// What the writers pass on is what the map path passes on: the same fields and values,
/// whatever their case, hop-by-hop ones and a chunked body's length left out; and a
/// response's fields are read as its map reads.
#[test]
fn the_fields_passed_on_are_the_maps() {
    for section in &sections() {
        let mut passed = Vec::new();
        read(section, Kind::Request).each_passed(|name, value| {
            passed.push((
                String::from_utf8(name.to_ascii_lowercase()).unwrap(),
                value.to_vec(),
            ));
        });
        let map = the_maps(section);
        let mapped = map
            .iter()
            .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()));
        assert_eq!(lowered(passed), lowered(mapped), "{section:?}");
        let raw = read(section, Kind::Response);
        let length = map.get(CONTENT_LENGTH).map(HeaderValue::as_bytes);
        assert_eq!(raw.length(), length, "{section:?}");
        let request = read(section, Kind::Request);
        // What a request declares: the first read, passed on or not.
        assert_eq!(
            request.declared_length(),
            request.get(&CONTENT_LENGTH),
            "{section:?}"
        );
        let host = &hyper::header::HOST;
        assert_eq!(request.host(), request.get(host), "{section:?}");
        assert_eq!(request.host_shared(), request.get_shared(host));
        if section.contains("\r\nHost: last") {
            assert_eq!(request.host(), Some(&b"last"[..]));
        }
        let dated = raw.each_written(|name, _| assert!(!is(name, &CONTENT_LENGTH)));
        assert_eq!(dated, map.contains_key(DATE), "{section:?}");
        assert_eq!(map_of(&raw), map, "{section:?}");
        assert_eq!(raw.len(), map.len(), "{section:?}");
        for name in map.keys() {
            let kept: Vec<&[u8]> = raw.get_all(name).collect();
            let mapped: Vec<&[u8]> = map.get_all(name).iter().map(|v| v.as_bytes()).collect();
            assert_eq!(kept, mapped, "{section:?} {name}");
            assert_eq!(raw.get_shared(name).as_ref(), map.get(name), "{section:?}");
        }
        for hop in hop::HOP_BY_HOP {
            assert_eq!(
                raw.get(&hop),
                None,
                "{section:?}: a response's {hop} is its hop's"
            );
        }
    }
}

/// A field lingo sets among the fields read stands for theirs of its name, as one inserted
/// in a map does: passed on last, once, whatever the case or number of the response's own,
/// read as the only one, and so in the map made of them; the length and date passed on are
/// not moved.
#[test]
fn a_field_set_stands_for_the_responses() {
    let section = "X-Request-Id: upstreams\r\nContent-Length: 2\r\nx-request-id: again\r\n\
                   Date: d\r\nx-a: 1\r\n\r\n";
    let mut raw = read(section, Kind::Response);
    let set = HeaderValue::from_static("lingos");
    let id = HeaderName::from_static("x-request-id");
    let writers = [
        CONTENT_LENGTH,
        DATE,
        CONNECTION,
        TRANSFER_ENCODING,
        KEEP_ALIVE,
    ];
    for name in writers.iter().chain([&id]) {
        assert_eq!(raw.takes(name), *name == id, "{name}");
    }
    raw.insert(id.clone(), set.clone());
    assert!(raw.takes(&id) && !raw.takes(&HeaderName::from_static("x-other")));
    for name in &writers {
        assert!(!raw.takes(name), "{name}");
    }
    let mut passed = Vec::new();
    let dated = raw.each_written(|name, value| passed.push((name.to_vec(), value.to_vec())));
    let passed: Vec<(&[u8], &[u8])> = passed.iter().map(|(n, v)| (&n[..], &v[..])).collect();
    assert_eq!(
        passed,
        [
            (&b"Date"[..], &b"d"[..]),
            (b"x-a", b"1"),
            (b"x-request-id", b"lingos")
        ]
    );
    assert!(dated);
    assert_eq!(raw.length(), Some(&b"2"[..]));
    assert_eq!(raw.get_all(&id).collect::<Vec<_>>(), [b"lingos"]);
    assert_eq!(raw.get_shared(&id), Some(set.clone()));
    assert_eq!(raw.len(), 4);
    let map = map_of(&raw);
    let ids: Vec<_> = map.get_all("x-request-id").iter().collect();
    assert_eq!(ids, [&set]);
    assert_eq!(map["x-a"], "1");
    assert_eq!(map.len(), 4);
}

/// Past [`MAX_RAW`] fields, or a head too long for its offsets, a head has its map.
#[test]
fn many_fields_or_a_long_head_are_not_kept_as_read() {
    let fields = |n: usize| (0..n).map(|i| format!("x-{i}: v\r\n")).collect::<String>() + "\r\n";
    for kind in [Kind::Request, Kind::Response] {
        let kept = |section: &str| indexed(section, kind).3;
        assert_eq!(kept(&fields(MAX_RAW)).map(|raw| raw.len()), Some(MAX_RAW));
        assert!(kept(&fields(MAX_RAW + 1)).is_none());
        let long = format!("x-long: {}\r\n\r\n", "v".repeat(usize::from(u16::MAX) - 11));
        assert_eq!(long.len(), 64 * 1024);
        assert!(kept(&long).is_none());
        let longest = format!("x-long: {}\r\n\r\n", "v".repeat(usize::from(u16::MAX) - 12));
        assert_eq!(longest.len(), usize::from(u16::MAX));
        assert!(kept(&longest).is_some());
    }
    assert_eq!(read("\r\n", Kind::Request).len(), 0);
}

/// Raw header fields are not checked again: every byte httparse lets into a name or a
/// value (all of them, one at a time) is one the map's types take too, so that a map made
/// of them later cannot fail.
#[test]
fn what_httparse_reads_the_map_takes() {
    let taken = |section: &[u8]| {
        let mut fields = [httparse::EMPTY_HEADER; 2];
        if let Ok(httparse::Status::Complete(_)) = httparse::parse_headers(section, &mut fields) {
            let [field, _] = &fields;
            assert!(
                HeaderName::from_bytes(field.name.as_bytes()).is_ok(),
                "{section:?}"
            );
            assert!(HeaderValue::from_bytes(field.value).is_ok(), "{section:?}");
        }
    };
    // Long names and values too: httparse reads those 16 and 32 bytes at a time.
    let long = [b'a'; 40];
    for b in 0..=255u8 {
        taken(&[b"x".as_slice(), &[b], b"a: v\r\n\r\n"].concat());
        taken(&[b"x-a: v".as_slice(), &[b], b"v\r\n\r\n"].concat());
        taken(&[&long[..], &[b], &long, b": v\r\n\r\n"].concat());
        taken(&[b"x-a: ".as_slice(), &long, &[b], &long, b"\r\n\r\n"].concat());
    }
}

/// A field's name as read is noted as the map's typed name is.
#[test]
fn framing_read_from_bytes_is_the_maps() {
    let more = [
        "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "EXPECT: 100-Continue\r\n\r\n",
        "content-length: 5, 6\r\n\r\n",
        "content-length: x\r\n\r\n",
        "transfer-encoding: chunked, gzip\r\n\r\n",
    ];
    for section in sections().iter().map(String::as_str).chain(more) {
        let (bytes, spans, raw) = spans_of(section);
        let mut mapped = FramingHeaders::default();
        to_map(&bytes, &spans, 0, &mut mapped).unwrap();
        let facts = |f: &FramingHeaders| {
            (
                f.length,
                f.chunked,
                f.close,
                f.keep_alive,
                f.upgrade,
                f.upgrade_to,
                f.expects_continue,
            )
        };
        assert_eq!(facts(&raw), facts(&mapped), "{section:?}");
    }
}

/// A request's raw header fields are its map's, every one (hop-by-hop ones too) but a
/// chunked body's length: counted, looked up by name, and put in a map.
#[test]
fn every_field_kept_is_the_maps() {
    for section in &sections() {
        let map = mapped(section);
        let raw = read(section, Kind::Request);
        assert_eq!(raw.len(), map.len(), "{section:?}");
        assert_eq!(raw.is_empty(), map.is_empty(), "{section:?}");
        assert_eq!(raw.all().count(), map.len(), "{section:?}");
        for name in map.keys() {
            let kept: Vec<&[u8]> = raw.get_all(name).collect();
            let mapped: Vec<&[u8]> = map.get_all(name).iter().map(|v| v.as_bytes()).collect();
            assert_eq!(kept, mapped, "{section:?} {name}");
            assert_eq!(raw.get_shared(name).as_ref(), map.get(name), "{section:?}");
        }
        assert_eq!(map_of(&raw), map, "{section:?}");
    }
}

/// Finding the fields `Connection` names by sorting their names (for long values) finds
/// what asking each field finds, on every section (both ways asked of each).
#[test]
fn named_fields_are_found_alike_both_ways() {
    let mut sorted = 0;
    for section in &sections() {
        let mut raw = read(section, Kind::Response);
        if raw.connection_values().next().is_none() {
            continue;
        }
        let said: usize = raw.connection_values().map(<[u8]>::len).sum();
        sorted += usize::from(raw.read() * said > ASKED_AT_MOST);
        // As before the named ones were left out: every field but the hop-by-hop ones.
        raw.passed = (0..raw.read())
            .filter(|&i| !hop::is_hop_by_hop(raw.name(i)))
            .fold(0, |bits, i| bits | 1 << i);
        let (by_sorting, by_asking) = (raw.named_by_sorting(), raw.named_by_asking());
        assert_eq!(by_sorting, by_asking & raw.passed, "{section:?}");
        assert_ne!(by_sorting, 0, "{section:?}");
    }
    assert!(sorted >= 1, "no section was long enough to be sorted");
}
