//! WebSocket upgrades through lingo: key injection in `Authorization` and the subprotocol,
//! the upstream key kept out of the 101, and bytes tunnelled both ways.

mod support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use lingo::http::body::Body;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An upstream that accepts any upgrade, echoes the offered subprotocol (as the `ws` library
/// does by default) and then echoes bytes.
async fn echo_upstream() -> (String, Arc<Mutex<Option<HeaderMap>>>) {
    slow_echo_upstream(Duration::ZERO).await
}

/// [`echo_upstream`], responding to the handshake after `delay`.
async fn slow_echo_upstream(delay: Duration) -> (String, Arc<Mutex<Option<HeaderMap>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(None));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let service = service_fn(move |mut req: Request<Incoming>| {
            *record.lock().unwrap() = Some(req.fields().clone());
            let protocol = req.fields().get("sec-websocket-protocol").cloned();
            let upgrade = hyper::upgrade::on(&mut req);
            tokio::spawn(async move {
                let mut io = TokioIo::new(upgrade.await.unwrap());
                let mut buf = [0u8; 64];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            let mut response = Response::builder()
                .status(StatusCode::SWITCHING_PROTOCOLS)
                .header("connection", "upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-accept", "dummy");
            if let Some(p) = protocol {
                response = response.header("sec-websocket-protocol", p);
            }
            async move {
                tokio::time::sleep(delay).await;
                Ok::<_, Infallible>(response.body(Body::empty()).unwrap())
            }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades()
            .await;
    });
    (url, seen)
}

/// Reads an HTTP response head from a raw stream.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

#[tokio::test]
async fn crawl_watcher_upgrade_is_tunnelled_with_the_key_swapped() {
    let (upstream_url, seen) = echo_upstream().await;
    let yaml = table(&format!(
        "clients:\n  - {{ name: js-sdk, key: {{ value: lingo-client-key }} }}\n\
         upstreams:\n  webdata:\n    url: {upstream_url}\n    speaks: web-data\n    auth: {{ bearer: {{ value: fc-upstream-key }} }}\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;

    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let handshake = format!(
        "GET /v1/crawl/3f1c HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Protocol: lingo-client-key\r\n\r\n",
        lingo.addr
    );
    stream.write_all(handshake.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("sec-websocket-protocol: lingo-client-key"),
        "{head}"
    );
    assert!(
        !head.contains("fc-upstream-key"),
        "the upstream key leaked: {head}"
    );

    let upstream_saw = seen.lock().unwrap().clone().unwrap();
    assert_eq!(upstream_saw["authorization"], "Bearer fc-upstream-key");
    assert_eq!(upstream_saw["sec-websocket-protocol"], "fc-upstream-key");
    assert!(!format!("{upstream_saw:?}").contains("lingo-client-key"));

    stream.write_all(b"\x81\x04ping").await.unwrap();
    let mut echo = [0u8; 6];
    stream.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"\x81\x04ping");
}

/// The upstream's time to respond to the handshake is not lingo's overhead.
#[tokio::test]
async fn a_slow_handshake_is_the_upstreams_time() {
    let (upstream_url, _) = slow_echo_upstream(Duration::from_millis(800)).await;
    let (lingo, head) = watched(&upstream_url).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let route = r#"route="prefix /v1",upstream="webdata""#;
    let (total, overhead) = one_request_times(&lingo, route).await;
    assert!(total >= 0.8, "the upstream responded after 800ms: {total}");
    assert!(
        overhead < 0.4,
        "the wait is not lingo's: {overhead} of {total}"
    );
}

/// lingo in front of a web-data upstream at `url` (`/v1` routed to it), and the head of its
/// response to a crawl watcher's handshake; lingo is kept for what the test reads after.
async fn watched(url: &str) -> (Lingo, String) {
    let yaml = table(&format!(
        "upstreams:\n  webdata:\n    url: {url}\n    speaks: web-data\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let handshake = format!(
        "GET /v1/crawl/3f1c HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        lingo.addr
    );
    stream.write_all(handshake.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    (lingo, head)
}

/// Reads the head and the `Content-Length` body that follows it.
async fn read_response(stream: &mut TcpStream) -> (String, serde_json::Value) {
    let head = read_head(stream).await;
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no content-length: {head}"));
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await.unwrap();
    (head, serde_json::from_slice(&body).unwrap())
}

/// An upgrade with no key at all (neither `Authorization` nor a `Sec-WebSocket-Protocol`
/// offer) and one with a wrong key are each refused with 401 in the web-data shape, with the
/// code that tells them apart, and never reach the upstream.
#[tokio::test]
async fn upgrade_without_a_client_key_is_401() {
    let (upstream_url, seen) = echo_upstream().await;
    let yaml = table(&format!(
        "clients:\n  - {{ name: js-sdk, key: {{ value: lingo-client-key }} }}\n\
         upstreams:\n  webdata:\n    url: {upstream_url}\n    speaks: web-data\n\
         routes:\n  - {{ prefix: /v2, to: webdata }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;
    for (key, code) in [
        ("", "MISSING_API_KEY"),
        ("Sec-WebSocket-Protocol: wrong\r\n", "INVALID_API_KEY"),
        ("Authorization: Bearer wrong\r\n", "INVALID_API_KEY"),
    ] {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        let handshake = format!(
            "GET /v2/crawl/1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{key}\r\n"
        );
        stream.write_all(handshake.as_bytes()).await.unwrap();
        let (head, body) = read_response(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 401"), "{key:?}: {head}");
        assert_eq!(body["success"], false, "{body}");
        assert_eq!(body["code"], code, "{key:?}: {body}");
    }
    assert!(seen.lock().unwrap().is_none());
}

// === where upgrades go, judged by an upstream that records every byte ===

/// A WebSocket handshake for `path` with `more` fields, and after it `after` (a body, the
/// next requests).
fn handshake_to(path: &str, more: &str, after: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: lingo\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{more}\r\n{after}"
    )
}

/// Closes every exchange below: served only if lingo reads it as the next request.
const HEALTH_CLOSE: &str = "GET /healthz HTTP/1.1\r\nHost: lingo\r\nConnection: close\r\n\r\n";

/// lingo in front of one recording upstream, reached as a web-data upstream (`/v1`, `/v2`)
/// and as a native one (`/api`, whose route says `api`), with `rest` of the table (clients).
async fn recorded(api: &str, rest: &str) -> (Lingo, recording::Recording) {
    let upstream = recording::Recording::start().await;
    let url = upstream.url();
    let yaml = table(&format!(
        "{rest}upstreams:\n  webdata:\n    url: {url}\n    speaks: web-data\n  \
         models:\n    url: {url}\n    speaks: native\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n  - {{ prefix: /v2, to: webdata }}\n  \
           - {{ prefix: /api, to: models{api} }}\n"
    ));
    (Lingo::start(&yaml).await, upstream)
}

/// Writes `bytes` on a connection of its own and reads until lingo closes it (or, should
/// it never close, a tunnel being open, for a long guard): what came.
async fn exchange(lingo: &Lingo, bytes: &str) -> String {
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    stream.write_all(bytes.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let reading = async {
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            all.extend_from_slice(&buf[..n]);
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(20), reading).await;
    String::from_utf8_lossy(&all).into_owned()
}

/// The status of each response in `all` (their bodies are JSON, which has no status line).
fn statuses(all: &str) -> Vec<&str> {
    all.match_indices("HTTP/1.1 ")
        .map(|(at, _)| &all[at + 9..at + 12])
        .collect()
}

/// A watcher's handshake that carries a body (here a whole request, hidden in it) is
/// refused 400 in its route's dialect, by its length or chunked, on a watcher path and on a
/// route that tunnels every path; the body is read past as a body (the request after it is
/// the next one served, never the hidden one), and the upstream, which records every byte
/// it is ever sent, gets nothing of either: no handshake, no tunnel, no hidden request.
#[tokio::test]
async fn an_upgrade_with_a_body_is_refused_and_nothing_reaches_the_upstream() {
    let (lingo, upstream) = recorded(", websocket: true", "").await;
    let hidden = "GET /v1/hidden HTTP/1.1\r\nHost: up\r\n\r\n";
    let by_length = format!("Content-Length: {}\r\n", hidden.len());
    let chunked = format!("{:x}\r\n{hidden}\r\n0\r\n\r\n", hidden.len());
    let cases = [
        ("/v1/crawl/3f1c", by_length.as_str(), hidden, "web-data"),
        (
            "/v2/crawl/3f1c",
            "Transfer-Encoding: chunked\r\n",
            chunked.as_str(),
            "web-data",
        ),
        ("/api/anything", by_length.as_str(), hidden, "native"),
    ];
    for (path, framing, body, dialect) in cases {
        let ask = handshake_to(path, framing, &format!("{body}{HEALTH_CLOSE}"));
        let all = exchange(&lingo, &ask).await;
        assert_eq!(statuses(&all), ["400", "200"], "{path} {framing}: {all}");
        let (head, rest) = all.split_once("\r\n\r\n").unwrap();
        let (json, _) = rest.split_once("HTTP/1.1").unwrap();
        let response = WholeResponse {
            status: hyper::StatusCode::BAD_REQUEST,
            headers: [("content-type", "application/json")]
                .into_iter()
                .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
                .collect(),
            body: json.to_owned(),
        };
        assert!(head.contains("content-type: application/json"), "{head}");
        let code = (dialect == "web-data").then_some("invalid_request");
        assert_shape(&response, dialect, 400, code, "cannot carry a body");
    }
    // The judge works: a plain call reaches it, and it is the first thing it ever got.
    assert_eq!(get(&lingo.url("/v1/scrape")).await.status, 200);
    let received = upstream
        .received_when(|r| r.contains("GET /v1/scrape"))
        .await;
    assert!(
        received.starts_with("GET /v1/scrape HTTP/1.1\r\n"),
        "{received}"
    );
    assert!(!received.contains("hidden"), "{received}");
}

/// Where no route tunnels WebSockets (a native path; a web-data path that is no job
/// watcher), a request that asks to upgrade is served as a plain one: the upstream gets it
/// without `Upgrade` or an `upgrade` token, its response is a plain 200, and the connection
/// stays lingo's: the next request on it (`/api/pull`, which the route blocks) is read and
/// refused by lingo, never carried to the upstream through a tunnel.
#[tokio::test]
async fn an_upgrade_where_no_route_tunnels_is_served_as_a_plain_request() {
    let (lingo, upstream) = recorded("", "").await;
    let pull = "GET /api/pull HTTP/1.1\r\nHost: lingo\r\n\r\n";
    let ask = handshake_to("/api/tags", "", &format!("{pull}{HEALTH_CLOSE}"));
    let all = exchange(&lingo, &ask).await;
    assert_eq!(statuses(&all), ["200", "403", "200"], "{all}");
    assert!(all.contains("{\"ok\":true}"), "{all}");
    let all = exchange(&lingo, &handshake_to("/v1/scrape", "", HEALTH_CLOSE)).await;
    assert_eq!(statuses(&all), ["200", "200"], "{all}");
    let received = upstream
        .received_when(|r| r.contains("GET /v1/scrape"))
        .await;
    let heads: Vec<&str> = received
        .split("\r\n\r\n")
        .filter(|h| !h.is_empty())
        .collect();
    assert_eq!(heads.len(), 2, "{received}");
    assert!(
        heads[0].starts_with("GET /api/tags HTTP/1.1\r\n"),
        "{received}"
    );
    let lower = received.to_ascii_lowercase();
    assert!(
        !lower.contains("upgrade"),
        "the upgrade went up: {received}"
    );
    assert!(!received.contains("/api/pull"), "{received}");
}

/// A key offered as a WebSocket subprotocol is a key only where the upgrade is tunnelled
/// (where lingo swaps the offer for the upstream's key): served as a plain request, the
/// offer would go up as it came, key and all, so such a request has no key (401) and
/// nothing reaches the upstream; on a watcher the same offer is the client's key.
#[tokio::test]
async fn a_key_offered_as_a_subprotocol_counts_only_where_the_upgrade_is_tunnelled() {
    let clients = "clients:\n  - { name: js, key: { value: lingo-client-key } }\n";
    let (lingo, upstream) = recorded("", clients).await;
    let offer = "Sec-WebSocket-Protocol: lingo-client-key\r\n";
    let all = exchange(&lingo, &handshake_to("/api/tags", offer, HEALTH_CLOSE)).await;
    assert_eq!(statuses(&all), ["401", "200"], "{all}");
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let head = head_of(&mut stream, &handshake_to("/v1/crawl/3f1c", offer, "")).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let received = upstream
        .received_when(|r| r.contains("GET /v1/crawl/3f1c"))
        .await;
    assert!(
        received.starts_with("GET /v1/crawl/3f1c HTTP/1.1\r\n"),
        "{received}"
    );
    assert!(!received.contains("lingo-client-key"), "{received}");
}

/// A route that says `websocket: true` tunnels an upgrade on any of its paths: the
/// handshake goes up as one, and after the 101 the client's bytes reach the upstream as
/// they are.
#[tokio::test]
async fn a_route_that_says_websocket_tunnels_upgrades_on_every_path() {
    let (lingo, upstream) = recorded(", websocket: true", "").await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let head = head_of(&mut stream, &handshake_to("/api/events", "", "")).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    stream.write_all(b"\x81\x05frame").await.unwrap();
    let received = upstream.received_when(|r| r.ends_with("frame")).await;
    assert!(
        received.starts_with("GET /api/events HTTP/1.1\r\n"),
        "{received}"
    );
    let lower = received.to_ascii_lowercase();
    assert!(lower.contains("upgrade: websocket\r\n"), "{received}");
}

#[tokio::test]
async fn a_watcher_is_tunnelled_under_the_upstreams_base_path() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (said, heard) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let head = read_head(&mut stream).await;
        let _ = said.send(head.lines().next().unwrap_or("").to_owned());
        let switched = "HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\n\
                        upgrade: websocket\r\nsec-websocket-accept: dummy\r\n\r\n";
        stream.write_all(switched.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
    });
    let (_lingo, head) = watched(&format!("http://{addr}/firecrawl")).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert_eq!(
        heard.await.unwrap(),
        "GET /firecrawl/v1/crawl/3f1c HTTP/1.1"
    );
}
