use bytes::Bytes;
use hyper::header::{CONNECTION, CONTENT_LENGTH, HOST};

use super::*;
use crate::http::h1::fields::{STACK_SPANS, to_map};
use crate::http::h1::raw::{Kind, MAX_RAW, PendingHeaders};
use crate::http::hop::remove_hop_by_hop;

/// A head of `n` fields, as lingo's connections read one: `Host`, a hop-by-hop `Connection`
/// naming one more, that one, and others, some sharing a name.
fn section(n: usize) -> String {
    let mut fields = vec![
        "Host: lingo".to_owned(),
        "Connection: keep-alive, X-Hop".into(),
        "X-Hop: 1".into(),
    ];
    fields.extend((fields.len()..n).map(|i| format!("X-{}: v{i}", i % 5)));
    fields.truncate(n);
    fields
        .iter()
        .map(|f| format!("{f}\r\n"))
        .collect::<String>()
        + "\r\n"
}

/// The fields of `section` as its parser hands them on for `keep` (kept raw when they
/// fit), and as a map made of every one of them.
fn parsed(section: &str, keep: Kind) -> (Headers, HeaderMap) {
    let head = Bytes::copy_from_slice(section.as_bytes());
    let mut fields = vec![httparse::EMPTY_HEADER; 2 * MAX_RAW];
    let Ok(httparse::Status::Complete((len, read))) = httparse::parse_headers(&head, &mut fields)
    else {
        panic!("not a field section: {section:?}");
    };
    let (mut room, mut heap) = (None, Vec::new());
    let pending = PendingHeaders::index(&head, len, read, Some(keep), (&mut room, &mut heap));
    let (headers, _) = pending.attach(head.clone(), 0).unwrap();
    let (mut room, mut heap) = ([const { (0..0, 0..0) }; STACK_SPANS], Vec::new());
    let spans = crate::http::h1::fields::spans(&head, read, &mut room, &mut heap);
    let map = to_map(&head, spans, 0, &mut Default::default()).unwrap();
    (headers, map)
}

/// Every field a reader sees through `view`, as a map.
fn seen(view: HeaderView<'_>) -> HeaderMap {
    let mut map = HeaderMap::new();
    view.append_to(&mut map);
    map
}

/// Whatever the number of fields (kept raw up to `MAX_RAW`, in a map past it), a
/// request read as lingo's server reads one shows every field through its one door, the
/// same in the map `headers_mut` makes and in hyper's request handed on.
#[test]
fn a_requests_fields_are_all_read_through_its_headers() {
    for n in [1, 8, MAX_RAW, MAX_RAW + 8] {
        let (headers, map) = parsed(&section(n), Kind::Request);
        let kept = matches!(headers, Headers::Raw(_));
        assert_eq!(kept, n <= MAX_RAW, "{n}");
        let (parts, ()) = hyper::Request::new(()).into_parts();
        let mut req = Request::from_head(parts, headers, Body::empty());
        let fields = req.headers();
        assert_eq!(fields.len(), n, "{n}");
        assert_eq!(seen(fields), map, "{n}");
        assert_eq!(fields.get(&HOST), Some(&b"lingo"[..]), "{n}");
        assert_eq!(fields.host(), map.get(HOST).cloned(), "{n}");
        for name in map.keys() {
            let read: Vec<&[u8]> = fields.get_all(name).collect();
            let mapped: Vec<&[u8]> = map.get_all(name).iter().map(|v| v.as_bytes()).collect();
            assert_eq!(read, mapped, "{n} {name}");
        }
        assert_eq!(*req.headers_mut(), map, "{n}");
        assert!(
            matches!(req.headers(), HeaderView::Map(_)),
            "made a map once"
        );
        let (head, body) = req.into_parts();
        let handed_on = Request::from_parts(head, body).into_hyper();
        assert_eq!(Request::from(handed_on).headers().len(), n, "{n}");
    }
}

/// A response kept raw shows the fields passed on, as its map does once its hop-by-hop
/// ones are removed; lingo's request id set among them stands for the response's own, and
/// hyper's response handed on has them all.
#[test]
fn a_responses_fields_are_read_as_its_map_would_read() {
    let id = HeaderName::from_static("x-request-id");
    let lingos = HeaderValue::from_static("lingos");
    for n in [1, 8, MAX_RAW, MAX_RAW + 8] {
        let section = section(n).replacen("\r\n\r\n", "\r\nX-Request-Id: upstreams\r\n\r\n", 1);
        let (headers, mut map) = parsed(&section, Kind::Response);
        remove_hop_by_hop(&mut map);
        let kept = matches!(headers, Headers::Raw(_));
        assert_eq!(kept, n < MAX_RAW, "{n}");
        let (parts, ()) = hyper::Response::new(()).into_parts();
        let mut response = Response::from_head(parts, headers, ());
        if !kept {
            // As lingo's client does to a response's map.
            remove_hop_by_hop(response.headers_mut());
        }
        assert_eq!(seen(response.headers()), map, "{n}");
        assert_eq!(response.headers().get(&CONNECTION), None, "{n}");
        response.insert_header(id.clone(), lingos.clone());
        map.insert(id.clone(), lingos.clone());
        assert_eq!(response.headers().value(&id), Some(lingos.clone()), "{n}");
        assert_eq!(seen(response.headers()), map, "{n}");
        response.insert_header(CONTENT_LENGTH, HeaderValue::from(5));
        map.insert(CONTENT_LENGTH, HeaderValue::from(5));
        assert!(matches!(response.headers(), HeaderView::Map(_)), "{n}");
        let handed_on = Response::from(response.into_hyper());
        assert_eq!(seen(handed_on.headers()), map, "{n}");
    }
}

/// lingo's own JSON responses say what they are.
#[test]
fn a_json_response_says_so() {
    let response = Response::json(StatusCode::NOT_FOUND, "{}");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let content_type = response.headers().get(&CONTENT_TYPE);
    assert_eq!(content_type, Some(&b"application/json"[..]));
}
