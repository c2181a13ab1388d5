use hyper::header::{HeaderName, HeaderValue};
use hyper::{HeaderMap, Response};

use super::*;
use crate::http::body::{Body, materialize};
use crate::http::h1::fields::{Facts, to_map};

/// The answer's fields as the map path passes them on: a map, the length of a chunked
/// answer taken out (`upstream::h1::head`), then the hop-by-hop ones (`to_client`).
fn the_maps(section: &str) -> HeaderMap {
    let (bytes, spans, _) = spans_of(section);
    let mut facts = Facts::default();
    let mut map = to_map(&bytes, &spans, 0, &mut facts).unwrap();
    if facts.chunked.is_some() {
        map.remove(CONTENT_LENGTH);
    }
    hop::remove_hop_by_hop(&mut map);
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
    let fewer: String = (1..MAX_RAW - 3)
        .map(|i| format!("x-{i}: {i}\r\n"))
        .collect();
    let long = format!(
        "Connection: {tokens}X-3 ,  x-12\r\nX-3: again\r\nconnection: ,, X-{},keep-alive, x-3\r\n\
         {fewer}Date: a\r\n\r\n",
        MAX_RAW - 4
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

/// What the client's writer passes on is what the map path passed on: the same fields and
/// values, whatever their case, hop-by-hop ones and a chunked answer's length left out.
#[test]
fn the_fields_passed_on_are_the_maps() {
    for section in &sections() {
        let mut passed = Vec::new();
        read(section).each(|name, value| {
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
        let raw = read(section);
        let length = map.get(CONTENT_LENGTH).map(HeaderValue::as_bytes);
        assert_eq!(raw.length(), length, "{section:?}");
        // What a request declares: the first read, passed on or not.
        assert_eq!(
            raw.declared_length(),
            raw.get(&CONTENT_LENGTH),
            "{section:?}"
        );
        assert_eq!(raw.host(), raw.get(&hyper::header::HOST), "{section:?}");
        if section.contains("\r\nHost: last") {
            assert_eq!(raw.host(), Some(&b"last"[..]));
        }
        let dated = raw.each_but_length(|name, _| assert!(!is(name, &CONTENT_LENGTH)));
        assert_eq!(dated, map.contains_key(DATE), "{section:?}");
        let mut made = HeaderMap::new();
        raw.into_map(&mut made);
        assert_eq!(made, map, "{section:?}");
    }
}

/// A field lingo set stands for the answer's fields of its name, in the map made and in
/// the test the writer uses.
#[test]
fn a_field_set_in_the_map_stands_for_the_answers() {
    let section = "X-Request-Id: upstreams\r\nx-request-id: again\r\nx-a: 1\r\n\r\n";
    let mut response = Response::new(Body::carrying(Body::empty(), Some(Box::new(read(section)))));
    let set = HeaderValue::from_static("lingos");
    response.headers_mut().insert("x-request-id", set.clone());
    assert!(set_in(response.headers(), b"X-REQUEST-ID"));
    assert!(!set_in(response.headers(), b"x-a"));
    materialize(&mut response);
    assert!(response.body_mut().take_raw().is_none());
    let ids: Vec<_> = response.headers().get_all("x-request-id").iter().collect();
    assert_eq!(ids, [&set]);
    assert_eq!(response.headers()["x-a"], "1");
    // Materialized once: a second time is nothing.
    materialize(&mut response);
    assert_eq!(response.headers().len(), 2);
}

/// A field lingo adds to the fields read stands for theirs of its name, as one set in the map
/// does: passed on last, once, whatever the case or number of the answer's own, and so in the
/// map made of them; the length and date passed on are not moved.
#[test]
fn a_field_added_stands_for_the_answers() {
    let section = "X-Request-Id: upstreams\r\nContent-Length: 2\r\nx-request-id: again\r\n\
                   Date: d\r\nx-a: 1\r\n\r\n";
    let mut raw = read(section);
    let set = HeaderValue::from_static("lingos");
    raw.add(HeaderName::from_static("x-request-id"), set.clone());
    let mut passed = Vec::new();
    let dated = raw.each_but_length(|name, value| passed.push((name.to_vec(), value.to_vec())));
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
    let mut response = Response::new(Body::carrying(Body::empty(), Some(Box::new(raw))));
    materialize(&mut response);
    let ids: Vec<_> = response.headers().get_all("x-request-id").iter().collect();
    assert_eq!(ids, [&set]);
    assert_eq!(response.headers()["x-a"], "1");
}

/// Past [`MAX_RAW`] fields, or a head too long for its offsets, an answer has its map.
#[test]
fn many_fields_or_a_long_head_are_not_kept_as_read() {
    let fields = |n: usize| (0..n).map(|i| format!("x-{i}: v\r\n")).collect::<String>() + "\r\n";
    assert_eq!(
        noted(&fields(MAX_RAW)).3.map(|raw| raw.len()),
        Some(MAX_RAW)
    );
    assert!(noted(&fields(MAX_RAW + 1)).3.is_none());
    let long = format!("x-long: {}\r\n\r\n", "v".repeat(usize::from(u16::MAX) - 11));
    assert_eq!(long.len(), 64 * 1024);
    assert!(noted(&long).3.is_none());
    let longest = format!("x-long: {}\r\n\r\n", "v".repeat(usize::from(u16::MAX) - 12));
    assert_eq!(longest.len(), usize::from(u16::MAX));
    assert!(noted(&longest).3.is_some());
}

/// Fields kept as read are not checked again: every byte httparse lets into a name or a
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
fn facts_from_bytes_are_the_maps() {
    let more = [
        "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "EXPECT: 100-Continue\r\n\r\n",
        "content-length: 5, 6\r\n\r\n",
        "content-length: x\r\n\r\n",
        "transfer-encoding: chunked, gzip\r\n\r\n",
    ];
    for section in sections().iter().map(String::as_str).chain(more) {
        let (bytes, spans, raw) = spans_of(section);
        let mut mapped = Facts::default();
        to_map(&bytes, &spans, 0, &mut mapped).unwrap();
        let facts = |f: &Facts| {
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

/// A request's fields kept as read are its map's, every one (hop-by-hop ones too) but a
/// chunked body's length: counted, looked up by name, and put in a map.
#[test]
fn every_field_kept_is_the_maps() {
    for section in &sections() {
        let (bytes, spans, _) = spans_of(section);
        let mut facts = Facts::default();
        let mut map = to_map(&bytes, &spans, 0, &mut facts).unwrap();
        if facts.chunked.is_some() {
            map.remove(CONTENT_LENGTH);
        }
        let raw = read(section);
        assert_eq!(raw.len(), map.len(), "{section:?}");
        assert_eq!(raw.is_empty(), map.is_empty(), "{section:?}");
        for name in map.keys() {
            let kept: Vec<&[u8]> = raw.get_all(name).collect();
            let mapped: Vec<&[u8]> = map.get_all(name).iter().map(|v| v.as_bytes()).collect();
            assert_eq!(kept, mapped, "{section:?} {name}");
        }
        let mut filled = HeaderMap::new();
        raw.fill_map(&mut filled);
        assert_eq!(filled, map, "{section:?}");
    }
}

/// Finding the fields `Connection` names by sorting their names (for long values) finds
/// what asking each field finds, on every section (both ways asked of each).
#[test]
fn named_fields_are_found_alike_both_ways() {
    let mut sorted = 0;
    for section in &sections() {
        let mut raw = read(section);
        if raw.connection_values().next().is_none() {
            continue;
        }
        let said: usize = raw.connection_values().map(<[u8]>::len).sum();
        sorted += usize::from(raw.len() * said > ASKED_AT_MOST);
        // As before the named ones were left out: every field but the hop-by-hop ones.
        raw.passed = (0..raw.len())
            .filter(|&i| !hop::is_hop_by_hop(raw.name(i)))
            .fold(0, |bits, i| bits | 1 << i);
        let (by_sorting, by_asking) = (raw.named_by_sorting(), raw.named_by_asking());
        assert_eq!(by_sorting, by_asking & raw.passed, "{section:?}");
        assert_ne!(by_sorting, 0, "{section:?}");
    }
    assert!(sorted >= 1, "no section was long enough to be sorted");
}
