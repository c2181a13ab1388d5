//! Pass-through over real sockets: streaming both ways, header rules, key injection.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response};
use lingo::http::body::Body;
use support::*;

fn native_table(backend: &Backend, extra: &str) -> String {
    table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\n{extra}routes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    ))
}

/// The first NDJSON line reaches the client before the backend has sent the second.
#[tokio::test]
async fn streams_each_line_as_the_upstream_sends_it() {
    let (backend, lines_tx) = scripted_backend().await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    each_line_as_sent(&lingo, lines_tx).await;
}

/// The same on worker threads (the binary's way): the connection, its upstream connection
/// and the frames batched between them stay on one worker, and still nothing waits.
#[tokio::test]
async fn streams_each_line_as_the_upstream_sends_it_on_workers() {
    let (backend, lines_tx) = scripted_backend().await;
    let lingo = Lingo::start_on(&native_table(&backend, ""), 2).await;
    each_line_as_sent(&lingo, lines_tx).await;
    lingo.shutdown().await;
}

async fn each_line_as_sent(lingo: &Lingo, lines_tx: tokio::sync::mpsc::UnboundedSender<Bytes>) {
    let req = request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[],
        r#"{"model":"m"}"#,
    );
    let response = client().request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();

    lines_tx.send(Bytes::from_static(b"{\"n\":1}\n")).unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("the first line must arrive while the upstream is still streaming")
        .unwrap()
        .unwrap();
    assert_eq!(first.into_data().unwrap(), "{\"n\":1}\n");

    lines_tx
        .send(Bytes::from_static(b"{\"n\":2,\"done\":true}\n"))
        .unwrap();
    drop(lines_tx);
    let rest = body.collect().await.unwrap().to_bytes();
    assert_eq!(rest, "{\"n\":2,\"done\":true}\n");
}

/// A large upload reaches the upstream intact (it is streamed, not refused or cut).
#[tokio::test]
async fn uploads_stream_through_intact() {
    let backend = Backend::start(|seen| async move {
        json_response(200, &format!("{{\"received\":{}}}", seen.body.len()))
    })
    .await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    let big = "x".repeat(3 * 1024 * 1024);
    let response = send(request(
        Method::POST,
        &lingo.url("/api/blobsafe"),
        &[],
        &big,
    ))
    .await;
    assert_eq!(response.json()["received"], big.len());
    assert_eq!(backend.last().body.len(), big.len());
}

/// Method, path and query arrive unchanged; hop-by-hop headers do not; `Host` is the
/// upstream's; `X-Forwarded-*` and `X-Request-Id` are set.
#[tokio::test]
async fn forwards_request_line_and_sets_forwarding_headers() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    for method in [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    ] {
        let req = request(
            method.clone(),
            &lingo.url("/api/show?verbose=true&x=%20y"),
            &[
                ("connection", "x-hop"),
                ("x-hop", "secret-hop"),
                ("x-forwarded-for", "6.6.6.6"),
                ("x-custom", "kept"),
            ],
            "{}",
        );
        let response = send(req).await;
        assert_eq!(response.status, 200, "{method}");
        let seen = backend.last();
        assert_eq!(seen.method, method);
        assert_eq!(seen.uri, "/api/show?verbose=true&x=%20y");
        assert_eq!(seen.headers["host"], backend.addr.to_string());
        assert_eq!(seen.headers["x-forwarded-for"], "127.0.0.1");
        assert_eq!(seen.headers["x-forwarded-proto"], "http");
        assert_eq!(seen.headers["x-forwarded-host"], lingo.addr.to_string());
        assert_eq!(seen.headers["x-custom"], "kept");
        assert!(!seen.headers.contains_key("x-hop"));
        let rid = seen.headers["x-request-id"].to_str().unwrap().to_owned();
        assert_eq!(rid.len(), 32, "a request id is generated");
        assert_eq!(
            response.headers["x-request-id"],
            rid.as_str(),
            "and returned to the client"
        );
    }
    let req = request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("x-request-id", "abc-123")],
        "",
    );
    let response = send(req).await;
    assert_eq!(backend.last().headers["x-request-id"], "abc-123");
    assert_eq!(response.headers["x-request-id"], "abc-123");
}

/// A head of a few fields (kept raw, up to 32 with lingo's `Host` and `Content-Length`)
/// and one of many (past what is kept raw: made into a map) go up by the same rules: the client's end-to-end fields in their order, its
/// hop-by-hop ones and those its `Connection` names left behind, its key and forwarding
/// fields replaced by lingo's, its `Content-Length` written by lingo.
#[tokio::test]
async fn few_fields_or_many_go_up_by_the_same_rules() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    for count in [1, 8, 20, 40] {
        let names: Vec<String> = (0..count).map(|i| format!("x-field-{i}")).collect();
        let mut fields: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
        fields.extend([
            ("Connection", "X-Hop, keep-alive"),
            ("X-HOP", "secret-hop"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("proxy-authorization", "Basic eHl6"),
            ("authorization", "Bearer the-clients"),
            ("X-Forwarded-For", "6.6.6.6"),
            ("x-forwarded-host", "spoofed"),
            ("x-kept", "a"),
            ("X-Kept", "b"),
        ]);
        let req = request(Method::POST, &lingo.url("/api/chat"), &fields, "{}");
        let response = send(req).await;
        assert_eq!(response.status, 200, "{count}: {}", response.body);
        let seen = backend.last();
        let ours: Vec<&str> = (seen.headers.keys())
            .map(|n| n.as_str())
            .filter(|n| n.starts_with("x-field-"))
            .collect();
        assert_eq!(ours, names, "{count}");
        assert_eq!(seen.headers["x-forwarded-host"], lingo.addr.to_string());
        assert_eq!(seen.headers["host"], backend.addr.to_string());
        assert_eq!(seen.headers["content-length"], "2");
        let kept: Vec<_> = seen.headers.get_all("x-kept").iter().collect();
        assert_eq!(kept, ["a", "b"], "{count}");
        assert_eq!(seen.body, "{}");
    }
}

/// A response of a few fields (kept raw by lingo's client, up to 32 with the upstream's
/// own) and one of many (made into a map) come back by the same rules: every end-to-end field of the upstream's, in order and
/// with every value, its hop-by-hop ones and those its `Connection` names left behind.
#[tokio::test]
async fn few_fields_or_many_come_back_by_the_same_rules() {
    for count in [1, 8, 26, 40] {
        let backend = Backend::start(move |_| async move {
            let mut response = json_response(200, "{}");
            let fields = response.fields_mut();
            for i in 0..count {
                fields.append(
                    format!("x-field-{}", i % 7)
                        .parse::<hyper::header::HeaderName>()
                        .unwrap(),
                    i.into(),
                );
            }
            fields.insert("connection", "X-Hop, keep-alive".parse().unwrap());
            fields.insert("x-hop", "secret-hop".parse().unwrap());
            fields.insert("keep-alive", "timeout=5".parse().unwrap());
            response
        })
        .await;
        let lingo = Lingo::start(&native_table(&backend, "")).await;
        let response = send(request(Method::GET, &lingo.url("/api/tags"), &[], "")).await;
        assert_eq!(response.status, 200, "{count}: {}", response.body);
        for name in (0..count.min(7)).map(|i| format!("x-field-{i}")) {
            let sent: Vec<String> = (0..count)
                .filter(|i| format!("x-field-{}", i % 7) == name)
                .map(|i| i.to_string())
                .collect();
            let got: Vec<&str> = (response.headers.get_all(&name).iter())
                .map(|v| v.to_str().unwrap())
                .collect();
            assert_eq!(got, sent, "{count}: {name}");
        }
        for gone in ["connection", "x-hop", "keep-alive"] {
            assert!(!response.headers.contains_key(gone), "{count}: {gone}");
        }
        assert_eq!(
            response.headers["content-type"], "application/json",
            "{count}"
        );
        assert_eq!(response.body, "{}", "{count}");
    }
}

/// The response carries lingo's request id, not one the upstream set, and none of the fields
/// of the upstream's hop (hop-by-hop, and those its `Connection` names); its own fields stay.
#[tokio::test]
async fn the_response_carries_lingos_request_id_and_not_the_upstreams_hop() {
    let backend = Backend::start(|_| async {
        let mut response = json_response(200, "{}");
        for (name, value) in [
            ("x-request-id", "upstream-id"),
            ("keep-alive", "timeout=5"),
            ("connection", "x-upstream-hop"),
            ("x-upstream-hop", "1"),
            ("x-upstream-own", "kept"),
        ] {
            response.fields_mut().insert(name, value.parse().unwrap());
        }
        response
    })
    .await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    let response = send(request(Method::GET, &lingo.url("/api/tags"), &[], "")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let rid = backend.last().headers["x-request-id"].clone();
    let ids: Vec<_> = response.headers.get_all("x-request-id").iter().collect();
    assert_eq!(ids, [&rid], "lingo's id, sent up and back, alone");
    assert_eq!(response.headers["x-upstream-own"], "kept");
    for gone in ["keep-alive", "x-upstream-hop"] {
        assert!(!response.headers.contains_key(gone), "{gone}");
    }
}

/// The client's key is replaced by the upstream's; the upstream never sees the client's.
#[tokio::test]
async fn injects_the_upstream_key_and_drops_the_clients() {
    let backend = Backend::json(200, "{}").await;
    let yaml = table(&format!(
        "clients:\n  - {{ name: app, key: {{ value: client-secret-1 }} }}\n\
         upstreams:\n  webdata:\n    url: {}\n    speaks: web-data\n    auth: {{ bearer: {{ value: fc-upstream-secret }} }}\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let req = request(
        Method::POST,
        &lingo.url("/v1/scrape"),
        &[("authorization", "Bearer client-secret-1")],
        r#"{"url":"https://example.com"}"#,
    );
    let response = send(req).await;
    assert_eq!(response.status, 200);
    let seen = backend.last();
    let auth: Vec<_> = seen.headers.get_all("authorization").iter().collect();
    assert_eq!(auth, ["Bearer fc-upstream-secret"]);
    assert!(!format!("{:?}", seen.headers).contains("client-secret-1"));
    assert_eq!(seen.body, r#"{"url":"https://example.com"}"#);
}

/// An upstream that repeats its key in an error response has it redacted however large the
/// response is and wherever its chunks split the key, and from its headers; the rest arrives
/// unchanged.
#[tokio::test]
async fn an_echoed_key_is_redacted_from_error_responses_of_any_size() {
    const KEY: &str = "fc-upstream-secret";
    let filler = "x".repeat(40 * 1024);
    let pieces: Vec<Bytes> = vec![
        Bytes::from(format!("{{\"error\":\"bad key {KEY}; ")),
        Bytes::from(filler.clone()),
        Bytes::from(format!("again {}", &KEY[..7])),
        Bytes::from(format!("{} and {KEY}{KEY}", &KEY[7..])),
        Bytes::from(filler.clone()),
        Bytes::from(format!("{}\"}}", &KEY[..KEY.len() - 1])),
    ];
    let sent: String = pieces
        .iter()
        .map(|p| std::str::from_utf8(p).unwrap())
        .collect();
    let backend = Backend::start(move |_| {
        let pieces = pieces.clone();
        async move {
            Response::builder()
                .status(500)
                .header("content-type", "application/json")
                .header("x-error", format!("key {KEY} refused"))
                .body(Body::pieces(pieces))
                .unwrap()
        }
    })
    .await;
    let auth = format!("    auth: {{ bearer: {{ value: {KEY} }} }}\n");
    let lingo = Lingo::start(&native_table(&backend, &auth)).await;
    let gzip = [("accept-encoding", "gzip, br")];
    let response = send(request(Method::POST, &lingo.url("/api/chat"), &gzip, "{}")).await;
    assert_eq!(response.status, 500);
    // A compressed response could not be searched for the key.
    assert_eq!(backend.last().headers["accept-encoding"], "identity");
    assert!(sent.len() > 64 * 1024);
    assert_eq!(response.body, sent.replace(KEY, "<redacted>"));
    assert_eq!(response.body.matches("<redacted>").count(), 4);
    assert_eq!(response.headers["x-error"], "key <redacted> refused");
}

/// With no key configured for the upstream, the client's `Authorization` is removed.
#[tokio::test]
async fn removes_the_clients_key_when_the_upstream_has_none() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    let req = request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("authorization", "Bearer sk-client")],
        "",
    );
    send(req).await;
    assert!(!backend.last().headers.contains_key("authorization"));
}

/// A custom auth header (`header: X-Api-Key`, raw `value:`) is injected as written.
#[tokio::test]
async fn injects_a_custom_auth_header() {
    let backend = Backend::json(200, "{}").await;
    let extra = "    auth: { header: X-Api-Key, value: { value: raw-key } }\n";
    let lingo = Lingo::start(&native_table(&backend, extra)).await;
    let req = request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("x-api-key", "client-guess"), ("authorization", "Bearer c")],
        "",
    );
    send(req).await;
    let seen = backend.last();
    assert_eq!(seen.headers["x-api-key"], "raw-key");
    assert!(!seen.headers.contains_key("authorization"));
}

/// A client key is required when keys are configured: missing and wrong keys get 401 in the
/// route's dialect, and the upstream never sees those requests.
#[tokio::test]
async fn client_key_is_required_when_configured() {
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let extra_clients = "clients:\n  - { name: app, key: { value: k-123 } }\n";
    let yaml = table(&format!(
        "{extra_clients}upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let missing = get(&lingo.url("/api/tags")).await;
    assert_eq!(missing.status, 401);
    assert!(
        missing.json()["error"]
            .as_str()
            .unwrap()
            .contains("missing client key")
    );
    let wrong = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("authorization", "Bearer k-124")],
        "",
    ))
    .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["error"], "invalid client key");
    assert!(backend.requests().is_empty());
    let ok = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("authorization", "Bearer k-123")],
        "",
    ))
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body, r#"{"models":[]}"#);
}

/// Model-management calls are refused on a native pass-through route unless it opts in,
/// however the path is spelled.
#[tokio::test]
async fn model_management_needs_an_opt_in() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&native_table(&backend, "")).await;
    // Each endpoint, and spellings that normalise to one: 403 in the native shape (which has
    // no `code`; the message names the refusal).
    for (path, normalised) in [
        ("/api/pull", "/api/pull"),
        ("/api/push", "/api/push"),
        ("/api/create", "/api/create"),
        ("/api/copy", "/api/copy"),
        ("/api/delete", "/api/delete"),
        ("/api/blobs/sha256:0", "/api/blobs/sha256:0"),
        ("/api/%70ull", "/api/pull"),
        ("/api/create/", "/api/create/"),
    ] {
        let response = send(request(Method::POST, &lingo.url(path), &[], "{}")).await;
        assert_shape(
            &response,
            "native",
            403,
            None,
            &format!(
                "{normalised} is a model-management call, which this route does not allow (`allow_model_management: true` on the route allows it)"
            ),
        );
    }
    // A dot segment is refused before anything else: 400, the path refusal.
    let response = send(request(
        Method::POST,
        &lingo.url("/api/tags/../pull"),
        &[],
        "{}",
    ))
    .await;
    assert_shape(
        &response,
        "native",
        400,
        None,
        "the request path is not acceptable",
    );
    assert!(
        backend.requests().is_empty(),
        "no model-management call reached the upstream"
    );

    let yaml = table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models, allow_model_management: true }}\n",
        backend.url()
    ));
    let open = Lingo::start(&yaml).await;
    let response = send(request(
        Method::POST,
        &open.url("/api/pull"),
        &[],
        r#"{"model":"x"}"#,
    ))
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(backend.last().uri, "/api/pull");
}

/// Web-data responses have their API links re-based onto lingo's address; nested scraped
/// URLs are left alone.
#[tokio::test]
async fn web_data_links_point_back_at_lingo() {
    let upstream_host = Arc::new(Mutex::new(String::new()));
    let host = Arc::clone(&upstream_host);
    let backend = Backend::start(move |seen| {
        let host = seen.headers["host"].to_str().unwrap().to_owned();
        *Arc::clone(&upstream_host).lock().unwrap() = host.clone();
        async move {
            let body = if seen.method == Method::POST {
                format!(r#"{{"success":true,"id":"abc","url":"https://{host}/v1/crawl/abc"}}"#)
            } else {
                format!(
                    r#"{{"success":true,"status":"scraping","next":"https://{host}/v2/crawl/abc?skip=1","data":[{{"url":"https://{host}/page"}}]}}"#
                )
            };
            json_response(200, &body)
        }
    })
    .await;
    let yaml = table(&format!(
        "upstreams:\n  webdata:\n    url: {}\n    speaks: web-data\nroutes:\n  - {{ prefix: /v1, to: webdata }}\n  - {{ prefix: /v2, to: webdata }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let started = send(request(
        Method::POST,
        &lingo.url("/v1/crawl"),
        &[],
        r#"{"url":"https://example.com"}"#,
    ))
    .await;
    assert_eq!(
        started.json()["url"],
        format!("http://{}/v1/crawl/abc", lingo.addr)
    );
    assert_eq!(
        started.headers["content-length"],
        started.body.len().to_string().as_str(),
        "the length is the rewritten body's"
    );
    let status = get(&lingo.url("/v2/crawl/abc")).await;
    let json = status.json();
    assert_eq!(
        json["next"],
        format!("http://{}/v2/crawl/abc?skip=1", lingo.addr)
    );
    let upstream = host.lock().unwrap().clone();
    assert_eq!(
        json["data"][0]["url"],
        format!("https://{upstream}/page"),
        "nested urls untouched"
    );
    assert!(!started.body.contains(&upstream));
    assert_eq!(backend.last().headers["accept-encoding"], "identity");
}

/// A bodyless request with a query and a response without content type pass unchanged.
#[tokio::test]
async fn non_json_responses_pass_unchanged() {
    let backend = Backend::start(|_| async {
        Response::builder()
            .status(404)
            .header("content-type", "text/html")
            .body(Body::full("Cannot GET /v1/xyz"))
            .unwrap()
    })
    .await;
    let yaml = table(&format!(
        "upstreams:\n  webdata:\n    url: {}\n    speaks: web-data\nroutes:\n  - {{ prefix: /v1, to: webdata }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let response = get(&lingo.url("/v1/xyz")).await;
    assert_eq!(response.status, 404);
    assert_eq!(response.body, "Cannot GET /v1/xyz");
    let _unused: Option<Request<Full<Bytes>>> = None;
}
