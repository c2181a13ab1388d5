//! Documented promises that no other file pinned, each over real sockets: the upstream's base
//! path, `public_url`, the `X-Request-Id` cap, hop-by-hop headers both ways, redacted responses
//! losing their length, an upload streamed before it ends, `n` and prompt batches run
//! concurrently, the legacy-embeddings fallback forgotten on reload, `HEAD` and the header
//! limits on the health endpoints, the `first_byte_timeout` metric, docs/configuration.md's
//! defaults, and docs/errors.md's table of error codes driven from real conditions.

mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::{Method, Response};
use lingo::http::body::Body;
use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Not a threshold: a guard so that a test whose event never comes fails with a message
/// instead of hanging.
const HANG: Duration = Duration::from_secs(60);

async fn guarded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(HANG, f)
        .await
        .unwrap_or_else(|_| panic!("never happened: {what}"))
}

fn routed(upstream: &str, speaks: &str, prefix: &str, extra: &str) -> String {
    table(&format!(
        "{extra}upstreams:\n  up:\n    url: {upstream}\n    speaks: {speaks}\n\
         routes:\n  - {{ prefix: {prefix}, to: up }}\n"
    ))
}

// === the upstream's base path ===

/// `url: http://host/base` prepends `/base` to every forwarded path (with or without a
/// trailing slash in the table), query included.
#[tokio::test]
async fn the_upstream_base_path_is_prepended_to_forwarded_paths() {
    let backend = Backend::json(200, "{}").await;
    for base in ["/ollama", "/ollama/", "/a/b"] {
        let url = format!("{}{base}", backend.url());
        let lingo = Lingo::start(&routed(&url, "native", "/api", "")).await;
        let response = get(&lingo.url("/api/tags?x=1")).await;
        assert_eq!(response.status, 200, "{base}: {}", response.body);
        let want = format!("{}/api/tags?x=1", base.trim_end_matches('/'));
        assert_eq!(backend.last().uri, want, "{base}");
    }
}

/// A translated request goes to the upstream's base path too (lingo's own client is given
/// only the path and query; the base path must be in it).
#[tokio::test]
async fn the_upstream_base_path_is_prepended_to_translated_paths() {
    let native = r#"{"model":"m","message":{"role":"assistant","content":"hi"},"done":true}"#;
    let backend = Backend::json(200, native).await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  up:\n    url: {}/ollama/\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: up }}\n",
        backend.url()
    )))
    .await;
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hello"}]}"#;
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        body,
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json()["choices"][0]["message"]["content"], "hi");
    assert_eq!(backend.last().uri, "/ollama/api/chat");
}

/// A web-data link that points under the upstream's base path comes back without it, on
/// lingo's address.
#[tokio::test]
async fn web_data_links_lose_the_upstream_base_path() {
    let backend = Backend::start(|seen| async move {
        let host = seen.headers["host"].to_str().unwrap().to_owned();
        json_response(
            200,
            &format!(r#"{{"success":true,"id":"a","url":"http://{host}/fc/v1/crawl/a"}}"#),
        )
    })
    .await;
    let lingo = Lingo::start(&routed(
        &format!("{}/fc", backend.url()),
        "web-data",
        "/v1",
        "",
    ))
    .await;
    let response = send(request(Method::POST, &lingo.url("/v1/crawl"), &[], "{}")).await;
    assert_eq!(backend.last().uri, "/fc/v1/crawl");
    assert_eq!(
        response.json()["url"],
        format!("http://{}/v1/crawl/a", lingo.addr)
    );
}

// === public_url ===

/// A web-data backend responding to a crawl start with `url` and a status page with `next`, both
/// on its own address.
async fn crawl_backend() -> Backend {
    Backend::start(|seen| async move {
        let host = seen.headers["host"].to_str().unwrap().to_owned();
        let body = if seen.method == Method::POST {
            format!(r#"{{"success":true,"id":"a","url":"http://{host}/v1/crawl/a"}}"#)
        } else {
            format!(r#"{{"status":"scraping","next":"http://{host}/v1/crawl/a?skip=5"}}"#)
        };
        json_response(200, &body)
    })
    .await
}

/// `listen[].public_url` wins over the client's `Host` and the listener's scheme, trailing
/// slash or not.
#[tokio::test]
async fn public_url_is_what_web_data_links_are_rebased_onto() {
    let backend = crawl_backend().await;
    for public in ["https://proxy.example.com", "https://proxy.example.com/"] {
        let yaml = format!(
            "listen:\n  - addr: 127.0.0.1:0\n    public_url: {public}\n\
             upstreams:\n  up:\n    url: {}\n    speaks: web-data\n\
             routes:\n  - {{ prefix: /v1, to: up }}\n",
            backend.url()
        );
        let lingo = Lingo::start(&yaml).await;
        let host = [("host", "client.example:81")];
        let started = send(request(Method::POST, &lingo.url("/v1/crawl"), &host, "{}")).await;
        assert_eq!(
            started.json()["url"],
            "https://proxy.example.com/v1/crawl/a"
        );
        let status = send(request(Method::GET, &lingo.url("/v1/crawl/a"), &host, "")).await;
        assert_eq!(
            status.json()["next"],
            "https://proxy.example.com/v1/crawl/a?skip=5"
        );
    }
    // Without it: the listener's scheme and the client's Host.
    let lingo = Lingo::start(&routed(&backend.url(), "web-data", "/v1", "")).await;
    let host = [("host", "client.example:81")];
    let started = send(request(Method::POST, &lingo.url("/v1/crawl"), &host, "{}")).await;
    assert_eq!(started.json()["url"], "http://client.example:81/v1/crawl/a");
}

// === X-Request-Id ===

/// A client's id of up to 128 characters is kept, end to end; a longer or empty one is
/// replaced by a generated one (32 hex characters), sent up and returned.
#[tokio::test]
async fn a_request_id_is_kept_up_to_128_characters() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&routed(&backend.url(), "native", "/api", "")).await;
    let at_cap = "r".repeat(128);
    let response = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("x-request-id", &at_cap)],
        "",
    ))
    .await;
    assert_eq!(backend.last().headers["x-request-id"], at_cap.as_str());
    assert_eq!(response.headers["x-request-id"], at_cap.as_str());
    for sent in ["r".repeat(129), String::new()] {
        let response = send(request(
            Method::GET,
            &lingo.url("/api/tags"),
            &[("x-request-id", &sent)],
            "",
        ))
        .await;
        let up = backend.last().headers["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(up.len(), 32, "{up}");
        assert!(up.bytes().all(|b| b.is_ascii_hexdigit()), "{up}");
        assert_eq!(response.headers["x-request-id"], up.as_str());
    }
}

// === hop-by-hop headers ===

/// `Trailer`, `TE`, `Upgrade`, `Keep-Alive`, `Proxy-Connection`, `Proxy-Authorization` and what
/// `Connection` names stay on the client's hop; the response's `Trailer`, `Upgrade`,
/// `Keep-Alive`, `Proxy-Connection`, `Proxy-Authenticate` and what its `Connection` names stay
/// on the upstream's. End-to-end headers pass both ways. (`Transfer-Encoding` is re-framed
/// by hyper on each hop whatever lingo leaves in the map; the unit test of `headers` holds it.)
#[tokio::test]
async fn hop_by_hop_headers_stay_on_their_hop() {
    let backend = Backend::start(|_| async {
        Response::builder()
            .header("content-type", "application/json")
            .header("trailer", "x-checksum")
            .header("upgrade", "h2c")
            .header("keep-alive", "timeout=5")
            .header("proxy-connection", "keep-alive")
            .header("proxy-authenticate", "Basic")
            .header("connection", "x-up-hop")
            .header("x-up-hop", "1")
            .header("x-up-end", "kept")
            .body(Body::full("{}"))
            .unwrap()
    })
    .await;
    let lingo = Lingo::start(&routed(&backend.url(), "native", "/api", "")).await;
    let response = send(request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[
            ("trailer", "x-checksum"),
            ("te", "trailers"),
            ("upgrade", "h2c"),
            ("keep-alive", "timeout=5"),
            ("proxy-connection", "keep-alive"),
            ("proxy-authorization", "Basic eDp5"),
            ("connection", "x-client-hop"),
            ("x-client-hop", "1"),
            ("x-client-end", "kept"),
        ],
        "{}",
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let up = backend.last().headers;
    for name in [
        "trailer",
        "te",
        "upgrade",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "x-client-hop",
    ] {
        assert!(
            !up.contains_key(name),
            "{name} reached the upstream: {up:?}"
        );
    }
    assert_eq!(up["x-client-end"], "kept");
    let down = &response.headers;
    for name in [
        "trailer",
        "upgrade",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "x-up-hop",
    ] {
        assert!(
            !down.contains_key(name),
            "{name} reached the client: {down:?}"
        );
    }
    assert_eq!(down["x-up-end"], "kept");

    // Half a WebSocket handshake is no upgrade: `Upgrade: websocket` without `Connection:
    // upgrade`, or the reverse, is an ordinary request and its `Upgrade` stays on its hop.
    for half in [
        &[("upgrade", "websocket")][..],
        &[("connection", "upgrade")][..],
    ] {
        let response = send(request(Method::GET, &lingo.url("/api/tags"), half, "")).await;
        assert_eq!(response.status, 200, "{half:?}: {}", response.body);
        let up = backend.last().headers;
        assert!(!up.contains_key("upgrade"), "{half:?}: {up:?}");
        assert!(!up.contains_key("connection"), "{half:?}: {up:?}");
    }
}

// === redaction and Content-Length ===

/// An error response of an upstream with a key is redacted as it streams, so it cannot keep
/// the upstream's `Content-Length` (the key and `<redacted>` differ in length): it is framed
/// by what is sent (chunked, or the redacted body's own length when all of it was ready
/// before the head), and the body is whole.
#[tokio::test]
async fn a_redacted_response_loses_its_content_length() {
    const KEY: &str = "upstream-key-0123456789";
    let backend = Backend::start(|_| async {
        json_response(401, &format!(r#"{{"error":"key {KEY} is revoked"}}"#))
    })
    .await;
    let yaml = table(&format!(
        "upstreams:\n  up:\n    url: {}\n    speaks: native\n    auth: {{ bearer: {{ value: {KEY} }} }}\n\
         routes:\n  - {{ prefix: /api, to: up }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let response = client()
        .request(request(Method::POST, &lingo.url("/api/chat"), &[], "{}"))
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let fields = response.fields().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, r#"{"error":"key <redacted> is revoked"}"#);
    match fields.get("content-length") {
        Some(length) => assert_eq!(length, body.len().to_string().as_str(), "{fields:?}"),
        None => assert_eq!(fields["transfer-encoding"], "chunked", "{fields:?}"),
    }
    // Without a key to redact, the response keeps its length.
    let yaml = routed(&backend.url(), "native", "/api", "");
    let lingo = Lingo::start(&yaml).await;
    let whole = send(request(Method::POST, &lingo.url("/api/chat"), &[], "{}")).await;
    assert_eq!(whole.status, 401);
    assert_eq!(
        whole.headers["content-length"],
        whole.body.len().to_string().as_str()
    );
}

// === uploads are streamed ===

/// The upstream receives the start of an upload before the client has sent the rest: lingo
/// never waits for the whole body. A raw upstream reads until the first piece arrives and only
/// then lets the client send the second.
#[tokio::test]
async fn an_upload_reaches_the_upstream_before_it_ends() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = format!("http://{}", listener.local_addr().unwrap());
    let (first_seen, first_seen_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("FIRST-PIECE") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the upload ended before its first piece arrived");
            got.extend_from_slice(&buf[..n]);
        }
        first_seen.send(()).unwrap();
        while !String::from_utf8_lossy(&got).contains("SECOND-PIECE") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            .await
            .unwrap();
    });
    let lingo = Lingo::start(&routed(&upstream, "native", "/api", "")).await;
    let (mut tx, body) =
        http_body_util::channel::Channel::<Bytes, std::convert::Infallible>::new(1);
    let req = hyper::Request::post(lingo.url("/api/create-ish"))
        .body(body)
        .unwrap();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let whole = tokio::spawn(async move { client.request(req).await });
    tx.send_data(Bytes::from_static(b"FIRST-PIECE "))
        .await
        .unwrap();
    guarded(
        "the first piece reached the upstream while the upload was open",
        first_seen_rx,
    )
    .await
    .unwrap();
    tx.send_data(Bytes::from_static(b"SECOND-PIECE"))
        .await
        .unwrap();
    drop(tx);
    let response = guarded("the response", whole).await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
}

// === concurrency of n and prompt batches ===

/// A native backend whose responses wait until `n` requests are in: run one after another,
/// lingo would wait forever on the first.
async fn barrier_backend(n: usize, response: &'static str) -> Backend {
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    Backend::start(move |_| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            ndjson_response(response)
        }
    })
    .await
}

#[tokio::test]
async fn n_choices_are_requested_concurrently() {
    let backend = barrier_backend(
        3,
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true,\"done_reason\":\"stop\"}\n",
    )
    .await;
    let yaml = table(&format!(
        "upstreams:\n  up:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: up }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    for stream in [false, true] {
        let body = json!({"model": "m", "n": 3, "stream": stream,
                          "messages": [{"role": "user", "content": "hi"}]});
        let response = guarded(
            "three native requests in flight at once",
            send(request(
                Method::POST,
                &lingo.url("/v1/chat/completions"),
                &[],
                &body.to_string(),
            )),
        )
        .await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    assert_eq!(backend.requests().len(), 6);
}

#[tokio::test]
async fn prompt_batches_are_requested_concurrently() {
    let backend = barrier_backend(
        3,
        "{\"model\":\"m\",\"response\":\"x\",\"done\":true,\"done_reason\":\"stop\"}\n",
    )
    .await;
    let yaml = table(&format!(
        "upstreams:\n  up:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/completions, speaks: chat-completions, to: up }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    for stream in [false, true] {
        let body = json!({"model": "m", "prompt": ["a", "b", "c"], "stream": stream});
        let response = guarded(
            "three prompts in flight at once",
            send(request(
                Method::POST,
                &lingo.url("/v1/completions"),
                &[],
                &body.to_string(),
            )),
        )
        .await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
}

#[tokio::test]
async fn legacy_embeddings_are_requested_concurrently_one_input_each() {
    // `/api/embed` is missing, so each input is its own `/api/embeddings` call; the three
    // response only once all three are in.
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let backend = Backend::start(move |seen| {
        let barrier = Arc::clone(&barrier);
        async move {
            if seen.uri == "/api/embed" {
                // What a server from before `/api/embed` responds with: its router's plain 404.
                return Response::builder()
                    .status(404)
                    .header("content-type", "text/plain")
                    .body(Body::full("404 page not found"))
                    .unwrap();
            }
            barrier.wait().await;
            let prompt: Value = serde_json::from_slice(&seen.body).unwrap();
            let first = prompt["prompt"].as_str().unwrap().len();
            json_response(200, &format!(r#"{{"embedding":[{first}]}}"#))
        }
    })
    .await;
    let yaml = table(&format!(
        "upstreams:\n  up:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/embeddings, speaks: chat-completions, to: up }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let response = guarded(
        "three inputs in flight at once",
        send(request(
            Method::POST,
            &lingo.url("/v1/embeddings"),
            &[],
            r#"{"model":"m","input":["a","bb","ccc"]}"#,
        )),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let vectors: Vec<Value> = response.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| json!([d["index"], d["embedding"][0]]))
        .collect();
    assert_eq!(
        vectors,
        [json!([0, 1.0]), json!([1, 2.0]), json!([2, 3.0])],
        "in input order"
    );
}

// === the legacy-embeddings fallback ===

/// lingo remembers that an upstream has no `/api/embed` only until the next reload: the
/// upstream may have been upgraded meanwhile.
#[tokio::test]
async fn the_legacy_embeddings_fallback_is_forgotten_on_reload() {
    let backend = Backend::start(|seen| async move {
        if seen.uri == "/api/embed" {
            return Response::builder()
                .status(404)
                .header("content-type", "text/plain")
                .body(Body::full("404 page not found"))
                .unwrap();
        }
        json_response(200, r#"{"embedding":[0.5]}"#)
    })
    .await;
    let yaml = table(&format!(
        "upstreams:\n  up:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/embeddings, speaks: chat-completions, to: up }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let embed = || async {
        let response = send(request(
            Method::POST,
            &lingo.url("/v1/embeddings"),
            &[],
            r#"{"model":"m","input":"x"}"#,
        ))
        .await;
        assert_eq!(response.status, 200, "{}", response.body);
    };
    let paths = || -> Vec<String> { backend.requests().iter().map(|s| s.uri.clone()).collect() };
    embed().await;
    embed().await;
    assert_eq!(
        paths(),
        ["/api/embed", "/api/embeddings", "/api/embeddings"]
    );
    lingo.reloader.reload(true).unwrap();
    embed().await;
    assert_eq!(
        paths()[3..],
        ["/api/embed", "/api/embeddings"],
        "tried /api/embed again after the reload"
    );
}

// === health endpoints ===

/// `HEAD` on `/healthz`, `/readyz` and `/metrics` responds like `GET` without a body; all
/// three are served before the header limits (a request over `max_headers` and
/// `max_header_bytes` is still served), while any other path gets the 431.
#[tokio::test]
async fn health_endpoints_respond_to_head_and_ignore_the_header_limits() {
    let yaml = table(
        "limits: { max_headers: 5, max_header_bytes: 1KiB }\n\
         upstreams:\n  up:\n    mock: {}\n    speaks: native\n\
         routes:\n  - { prefix: /api, to: up }\n",
    );
    let lingo = Lingo::start(&yaml).await;
    // Over both limits, but under hyper's backstop (twice each), which refuses before parsing.
    let many: Vec<(String, String)> = (0..9)
        .map(|i| (format!("x-h{i}"), "v".repeat(120)))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    for path in ["/healthz", "/readyz", "/metrics"] {
        let head = send(request(Method::HEAD, &lingo.url(path), &[], "")).await;
        assert_eq!(head.status, 200, "HEAD {path}");
        assert!(head.body.is_empty(), "HEAD {path}: {}", head.body);
        let get = send(request(Method::GET, &lingo.url(path), &[], "")).await;
        assert_eq!(
            head.headers.get("content-type"),
            get.headers.get("content-type"),
            "{path}"
        );
        let crowded = send(request(Method::GET, &lingo.url(path), &many, "")).await;
        assert_eq!(crowded.status, 200, "GET {path} over the header limits");
        let crowded = send(request(Method::HEAD, &lingo.url(path), &many, "")).await;
        assert_eq!(crowded.status, 200, "HEAD {path} over the header limits");
    }
    let refused = send(request(Method::GET, &lingo.url("/api/tags"), &many, "")).await;
    assert_shape(&refused, "native", 431, None, "too large");
    // Other methods are not lingo's: `POST /healthz` is routed like any other path.
    let post = send(request(Method::POST, &lingo.url("/healthz"), &[], "")).await;
    assert_shape(
        &post,
        "chat",
        404,
        Some("unknown_url"),
        "no route for POST /healthz",
    );
}

// === metrics ===

/// An upstream that never sends its response's head within `first_byte` is counted under
/// `lingo_upstream_errors_total{kind="first_byte_timeout"}`.
#[tokio::test]
async fn a_first_byte_timeout_is_counted_by_kind() {
    let backend = Backend::start(|_| std::future::pending::<Response<Body>>()).await;
    let yaml = table(&format!(
        "upstreams:\n  slow:\n    url: {}\n    speaks: native\n    timeouts: {{ first_byte: 200ms }}\n\
         routes:\n  - {{ prefix: /api, to: slow }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let response = send(request(Method::POST, &lingo.url("/api/chat"), &[], "{}")).await;
    assert_shape(
        &response,
        "native",
        504,
        None,
        "first-byte timeout of 200ms",
    );
    let metrics = get(&lingo.url("/metrics")).await.body;
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("lingo_upstream_errors_total{")
                && l.contains("upstream=\"slow\"")
                && l.contains("kind=\"first_byte_timeout\"")
        })
        .unwrap_or_else(|| panic!("no first_byte_timeout sample:\n{metrics}"));
    assert!(line.ends_with(" 1"), "{line}");
}

// === docs/configuration.md's defaults, as literal values ===

/// Each default docs/configuration.md states, checked against a table that sets nothing, as
/// the literal the page writes (not the code's own constants, which a change would move along
/// with the code). Each row's default column is checked to still say it.
#[test]
fn the_documented_defaults_are_the_defaults() {
    const MIB: u64 = 1024 * 1024;
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    let yaml = "listen:\n  - addr: 127.0.0.1:0\n\
                upstreams:\n  up:\n    url: http://127.0.0.1:1\n    speaks: native\n\
                routes:\n  - { prefix: /api, to: up }\n";
    let t = lingo::config::load_str(yaml, std::path::Path::new("proxy.yaml")).unwrap();
    let secs = Duration::from_secs;
    let up = &t.upstreams[0];
    let route = &t.routes[0];
    let mock = lingo::mock::knobs::Knobs::from_spec(&lingo::table::MockSpec::default());
    let rows: [(&str, &str, bool); 29] = [
        (
            "upstreams.<name>.timeouts.connect",
            "`5s`",
            up.timeouts.connect == secs(5),
        ),
        (
            "upstreams.<name>.timeouts.first_byte",
            "`300s`",
            up.timeouts.first_byte == secs(300),
        ),
        (
            "upstreams.<name>.timeouts.idle",
            "`120s`",
            up.timeouts.idle == secs(120),
        ),
        ("upstreams.<name>.http2", "HTTP/1.1", !up.http2),
        ("upstreams.<name>.auth.header", "`Authorization`", true),
        ("upstreams.<name>.mock.tokens", "`16`", mock.tokens == 16),
        (
            "upstreams.<name>.mock.token_delay",
            "`0ms`",
            mock.token_delay.is_zero(),
        ),
        (
            "upstreams.<name>.mock.first_token_delay",
            "`0ms`",
            mock.first_token_delay.is_zero(),
        ),
        (
            "upstreams.<name>.mock.embedding_size",
            "`16`",
            mock.embedding_size == 16,
        ),
        (
            "upstreams.<name>.mock.page_delay",
            "`0ms`",
            mock.page_delay.is_zero(),
        ),
        (
            "upstreams.<name>.mock.webhook_retry",
            "`[1m, 5m, 15m]`",
            mock.webhook.retry.delays() == [secs(60), secs(300), secs(900)],
        ),
        (
            "upstreams.<name>.mock.webhook_timeout",
            "`10s`",
            mock.webhook.timeout == secs(10),
        ),
        (
            "upstreams.<name>.mock.webhook_secret",
            "none",
            mock.webhook.secret.is_none(),
        ),
        (
            "routes[].max_body",
            "`limits.max_body`",
            route.max_body == 10 * MIB,
        ),
        (
            "routes[].allow_model_management",
            "`false`",
            !route.allow_model_management,
        ),
        ("routes[].options", "none", route.options.is_empty()),
        ("owned_by", "`lingo`", t.owned_by == "lingo"),
        ("limits.max_body", "`10MiB`", t.limits.max_body == 10 * MIB),
        ("limits.drain", "`30s`", t.limits.drain == secs(30)),
        ("limits.max_line", "`1MiB`", t.limits.max_line == MIB),
        (
            "limits.max_response",
            "`64MiB`",
            t.limits.max_response == 64 * MIB,
        ),
        (
            "limits.max_header_bytes",
            "`64KiB`",
            t.limits.max_header_bytes == 64 * 1024,
        ),
        ("limits.max_headers", "`100`", t.limits.max_headers == 100),
        (
            "limits.header_timeout",
            "`30s`",
            t.limits.header_timeout == secs(30),
        ),
        (
            "limits.body_timeout",
            "`60s`",
            t.limits.body_timeout == secs(60),
        ),
        ("routes[].websocket", "`false`", !route.websocket),
        (
            "limits.idle_timeout",
            "`75s`",
            t.limits.idle_timeout == secs(75),
        ),
        (
            "limits.max_connections",
            "`10000`",
            t.limits.max_connections == 10_000,
        ),
        (
            "limits.max_in_flight",
            "`10000`",
            t.limits.max_in_flight == 10_000,
        ),
    ];
    for (key, documented, holds) in rows {
        let row = page
            .lines()
            .find(|l| l.starts_with(&format!("| `{key}` |")))
            .unwrap_or_else(|| panic!("docs/configuration.md has no row for {key}"));
        // | key | type | default | reload | what it does |
        let default = row.split('|').nth(3).unwrap().trim();
        assert!(
            default.starts_with(documented),
            "the page says {default:?} for {key}, the test expects {documented:?}"
        );
        assert!(holds, "{key}: the default is not the page's {documented}");
    }
    assert!(t.admin.addr.is_none() && !t.admin.require_key);
    assert!(t.listeners[0].tls.is_none() && t.listeners[0].public_url.is_none());
}

// === docs/errors.md's table of error codes, from real conditions ===

/// One raw HTTP/1.1 exchange: writes `bytes`, half-closes when `close_write`, and reads the
/// response (status and JSON body) until lingo closes or the body is complete.
async fn raw(addr: std::net::SocketAddr, bytes: &[u8], close_write: bool) -> WholeResponse {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    if close_write {
        stream.shutdown().await.unwrap();
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    guarded("lingo responded or closed", async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                let len = head.lines().find_map(|l| {
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                });
                if len.is_some_and(|len| got.len() >= end + 4 + len) {
                    break;
                }
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response: {text:?}"));
    let status = head[9..12].parse().unwrap();
    let mut headers = hyper::HeaderMap::new();
    for line in head.lines().skip(1) {
        let (k, v) = line.split_once(':').unwrap();
        headers.insert(
            hyper::header::HeaderName::from_bytes(k.trim().as_bytes()).unwrap(),
            v.trim().parse().unwrap(),
        );
    }
    WholeResponse {
        status: hyper::StatusCode::from_u16(status).unwrap(),
        headers,
        body: body.to_owned(),
    }
}

/// lingo with a chat route (to the mock), a web-data route (to the mock) and a native route,
/// keyed, with small limits so that each condition is cheap to reach.
fn every_error_table(dead: &str) -> String {
    table(&format!(
        "clients:\n  - {{ name: app, key: {{ value: k-app }} }}\n\
         limits: {{ max_body: 1KiB, max_headers: 20, max_response: 64KiB }}\n\
         upstreams:\n  \
           models:\n    mock: {{}}\n    speaks: native\n  \
           web:\n    mock: {{}}\n    speaks: web-data\n  \
           dead:\n    url: {dead}\n    speaks: native\n  \
           deadweb:\n    url: {dead}\n    speaks: web-data\n\
         routes:\n  \
           - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  \
           - {{ path: /v1/responses, speaks: chat-completions, to: models }}\n  \
           - {{ path: /v1/completions, speaks: chat-completions, to: dead }}\n  \
           - {{ prefix: /v1/down, to: deadweb }}\n  \
           - {{ prefix: /v1, to: web }}\n  \
           - {{ prefix: /api, to: models }}\n"
    ))
}

/// Every row of docs/errors.md's table that a client can cause, caused for real, in the
/// chat-completions and web-data dialects: status, shape and `code` (web-data upper-cases it).
/// The rows not here have their own tests: `overloaded` (limits.rs), `upstream_timeout`
/// (errors.rs, upstream_limits.rs), `model_management_forbidden` (passthrough.rs; native
/// errors have no code), the 502 over `max_response` (upstream_limits.rs), the limits' 402,
/// 429 and 503 (quota.rs, quota_replicas.rs).
#[tokio::test]
async fn every_documented_error_code_from_a_real_condition() {
    let dead = format!("http://{}", closed_port().await);
    let lingo = Lingo::start(&every_error_table(&dead)).await;
    let key = ("authorization", "Bearer k-app");
    let chat_path = "/v1/chat/completions";
    let web_path = "/v1/scrape";
    let chat_ok = chat_body(false);

    for (dialect, path) in [("chat", chat_path), ("web-data", web_path)] {
        // 400 invalid_path
        let bad = format!("{path}/..%2fx");
        let response = send(request(Method::POST, &lingo.url(&bad), &[key], "{}")).await;
        assert_shape(
            &response,
            dialect,
            400,
            Some("invalid_path"),
            "not acceptable",
        );

        // 400 invalid_request: no Host (connection closed after).
        let bytes = format!("POST {path} HTTP/1.1\r\nContent-Length: 2\r\n\r\n{{}}");
        let response = raw(lingo.addr, bytes.as_bytes(), false).await;
        assert_shape(&response, dialect, 400, Some("invalid_request"), "Host");
        assert_eq!(response.headers["connection"], "close");

        // 400 invalid_request_body: a bad chunk size, and an upload cut mid-chunk.
        for (body, close) in [("zz\r\n{}\r\n0\r\n\r\n", false), ("10\r\n{\"mod", true)] {
            let bytes = format!(
                "POST {path} HTTP/1.1\r\nHost: lingo\r\nAuthorization: Bearer k-app\r\n\
                 Transfer-Encoding: chunked\r\n\r\n{body}"
            );
            let response = raw(lingo.addr, bytes.as_bytes(), close).await;
            assert_shape(
                &response,
                dialect,
                400,
                Some("invalid_request_body"),
                "request body could not be read",
            );
        }

        // 401 missing_api_key, invalid_api_key
        let response = send(request(Method::POST, &lingo.url(path), &[], &chat_ok)).await;
        assert_shape(
            &response,
            dialect,
            401,
            Some("missing_api_key"),
            "missing client key",
        );
        let wrong = [("authorization", "Bearer nope")];
        let response = send(request(Method::POST, &lingo.url(path), &wrong, &chat_ok)).await;
        assert_shape(
            &response,
            dialect,
            401,
            Some("invalid_api_key"),
            "invalid client key",
        );

        // 413 request_too_large, declared and streamed.
        let big = "x".repeat(2048);
        let response = send(request(Method::POST, &lingo.url(path), &[key], &big)).await;
        assert_shape(
            &response,
            dialect,
            413,
            Some("request_too_large"),
            "1024 bytes",
        );
        let chunked = format!(
            "POST {path} HTTP/1.1\r\nHost: lingo\r\nAuthorization: Bearer k-app\r\n\
             Transfer-Encoding: chunked\r\n\r\n800\r\n{big}\r\n0\r\n\r\n"
        );
        let response = raw(lingo.addr, chunked.as_bytes(), false).await;
        assert_shape(
            &response,
            dialect,
            413,
            Some("request_too_large"),
            "1024 bytes",
        );

        // 431 headers_too_large (checked before the key).
        let many: Vec<(String, String)> =
            (0..30).map(|i| (format!("x-h{i}"), "v".into())).collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        let response = send(request(Method::POST, &lingo.url(path), &many, "{}")).await;
        assert_shape(
            &response,
            dialect,
            431,
            Some("headers_too_large"),
            "too large",
        );
    }

    // 400 with code null: a translated request with a bad field; `param` names it.
    let bad = json!({"model": "m", "messages": "not a list"}).to_string();
    let response = send(request(Method::POST, &lingo.url(chat_path), &[key], &bad)).await;
    assert_shape(&response, "chat", 400, None, "messages");
    assert_eq!(response.json()["error"]["param"], "messages");

    // 404 unknown_url
    let response = send(request(Method::GET, &lingo.url("/elsewhere"), &[key], "")).await;
    assert_shape(
        &response,
        "chat",
        404,
        Some("unknown_url"),
        "no route for GET",
    );
    let response = send(request(Method::GET, &lingo.url("/v2/crawl"), &[key], "")).await;
    assert_shape(
        &response,
        "web-data",
        404,
        Some("unknown_url"),
        "no route for GET",
    );

    // 501 not_implemented
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/responses"),
        &[key],
        "{}",
    ))
    .await;
    assert_shape(
        &response,
        "chat",
        501,
        Some("not_implemented"),
        "cannot do yet",
    );

    // 502 upstream_unreachable: refused, and the mock's `cut_after`.
    let body = json!({"model": "m", "prompt": "x"}).to_string();
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/completions"),
        &[key],
        &body,
    ))
    .await;
    assert_shape(
        &response,
        "chat",
        502,
        Some("upstream_unreachable"),
        "unreachable",
    );
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/down/scrape"),
        &[key],
        "{}",
    ))
    .await;
    assert_shape(
        &response,
        "web-data",
        502,
        Some("upstream_unreachable"),
        "unreachable",
    );
    let cut = json!({"model": "m@cut_after=0", "messages": [{"role": "user", "content": "hi"}]});
    let response = send(request(
        Method::POST,
        &lingo.url(chat_path),
        &[key],
        &cut.to_string(),
    ))
    .await;
    assert_shape(
        &response,
        "chat",
        502,
        Some("upstream_unreachable"),
        "unreachable",
    );
}

/// The mock reads an upload whole before it responds; one that is cut mid-chunk or malformed
/// is the client's fault, a 400 `invalid_request_body` in the route's dialect, as a
/// real upstream's would be (it was a 413 "too large for the mock"); one over the route's
/// `max_body` is a 413 `request_too_large` naming the route's limit.
#[tokio::test]
async fn a_broken_upload_to_a_mock_upstream_is_the_clients_fault() {
    let yaml = table(
        "limits: { max_body: 1KiB }\n\
         upstreams:\n  models:\n    mock: {}\n    speaks: native\n  web:\n    mock: {}\n    speaks: web-data\n\
         routes:\n  - { prefix: /api, to: models }\n  - { prefix: /v1, to: web }\n",
    );
    let lingo = Lingo::start(&yaml).await;
    for (dialect, path) in [("native", "/api/tags"), ("web-data", "/v1/scrape")] {
        for (body, close) in [
            ("10\r\n{\"mod", true),
            ("zz\r\n{}\r\n0\r\n\r\n", false),
            ("2\r\n{}XX0\r\n\r\n", false),
        ] {
            let bytes = format!(
                "POST {path} HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n{body}"
            );
            let response = raw(lingo.addr, bytes.as_bytes(), close).await;
            assert_shape(
                &response,
                dialect,
                400,
                Some("invalid_request_body"),
                "request body could not be read",
            );
        }
        let big = "x".repeat(2048);
        let bytes = format!(
            "POST {path} HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n{big}\r\n0\r\n\r\n"
        );
        let response = raw(lingo.addr, bytes.as_bytes(), false).await;
        assert_shape(
            &response,
            dialect,
            413,
            Some("request_too_large"),
            "limit of 1024 bytes",
        );
    }
}

// === shutdown over HTTP/2 ===

/// On shutdown an HTTP/2 client is told GOAWAY: the stream it has in flight finishes whole,
/// and a new stream on the same connection is refused rather than served.
#[tokio::test]
async fn shutdown_sends_http2_clients_goaway_and_finishes_their_streams() {
    let (backend, lines) = scripted_backend().await;
    let lingo = Lingo::start(&routed(&backend.url(), "native", "/api", "")).await;
    let addr = lingo.addr;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let req = |path: &str| {
        let method = if path == "/healthz" { "GET" } else { "POST" };
        hyper::Request::builder()
            .method(method)
            .uri(format!("http://{addr}{path}"))
            .body(http_body_util::Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    };
    let response = sender.send_request(req("/api/chat")).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    lines.send(Bytes::from_static(b"one\n")).unwrap();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, "one\n");

    let stopped = tokio::spawn(lingo.shutdown());
    // Until the GOAWAY arrives a new stream may still be served; after it, none is.
    guarded("a new stream refused after GOAWAY", async {
        loop {
            match sender.send_request(req("/healthz")).await {
                Err(_) => break,
                Ok(r) => assert_eq!(r.status(), 200),
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    lines.send(Bytes::from_static(b"two\n")).unwrap();
    drop(lines);
    let rest = body.collect().await.expect("the stream in flight finished");
    assert_eq!(rest.to_bytes(), "two\n");
    guarded("lingo stopped", stopped).await.unwrap();
}

// === limits after a reload ===

/// `max_body` and lingo's header check apply at once after a reload, on a connection opened
/// before it; `max_in_flight` is sized when the listener is bound and needs a restart.
#[tokio::test]
async fn a_reload_applies_body_and_header_limits_at_once_but_not_the_pools() {
    let (held_backend, lines) = scripted_backend().await;
    let backend = Backend::json(200, "{}").await;
    let yaml = |limits: &str| {
        table(&format!(
            "{limits}upstreams:\n  held:\n    url: {}\n    speaks: native\n  \
             up:\n    url: {}\n    speaks: native\n\
             routes:\n  - {{ path: /api/chat, to: held }}\n  - {{ prefix: /api, to: up }}\n",
            held_backend.url(),
            backend.url()
        ))
    };
    let lingo = Lingo::start(&yaml("")).await;
    let tcp = TcpStream::connect(lingo.addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let host = lingo.addr.to_string();
    let post = |path: &str, headers: usize, body: &'static str| {
        let mut req = hyper::Request::post(path).header("host", &host);
        for i in 0..headers {
            req = req.header(format!("x-h{i}"), "v");
        }
        req.body(http_body_util::Full::new(Bytes::from_static(
            body.as_bytes(),
        )))
        .unwrap()
    };
    let big = "{\"model\":\"a-model-name-well-over-sixteen-bytes\"}";
    // Held open: the first response streams until `lines` is dropped.
    let held = sender
        .send_request(post("/api/chat", 8, big))
        .await
        .unwrap();
    assert_eq!(held.status(), 200);

    let after = yaml("limits: { max_body: 16, max_headers: 5, max_in_flight: 1 }\n");
    std::fs::write(lingo.config_path(), after).unwrap();
    lingo.reloader.reload(true).unwrap();
    // Pools are not resized: a second request while one is in flight is still served.
    let second = get(&lingo.url("/healthz")).await;
    assert_eq!(second.status, 200);
    let other = send(request(Method::GET, &lingo.url("/api/tags"), &[], "")).await;
    assert_eq!(
        other.status, 200,
        "max_in_flight is read at start: {}",
        other.body
    );

    drop(lines);
    held.into_body().collect().await.unwrap();
    // The same connection, opened before the reload: the new limits hold at once.
    let too_big = sender
        .send_request(post("/api/show", 0, big))
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);
    let body = too_big.into_body().collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&body).contains("limit of 16 bytes"),
        "{body:?}"
    );
    let crowded = sender
        .send_request(post("/api/show", 8, "{}"))
        .await
        .unwrap();
    assert_eq!(crowded.status(), 431);
}

/// `idle_timeout` changed by a reload applies to connections accepted after it: a new
/// connection is closed once idle for the new limit, while one opened before the reload (and
/// idle for longer) is still served under the old one.
#[tokio::test]
async fn a_reloaded_idle_timeout_applies_to_new_connections_only() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&routed(&backend.url(), "native", "/api", "")).await;
    let open = || async {
        let tcp = TcpStream::connect(lingo.addr).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .unwrap();
        let conn = tokio::spawn(conn);
        let req = hyper::Request::get("/api/tags")
            .header("host", lingo.addr.to_string())
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(req).await.unwrap();
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap();
        (sender, conn)
    };
    let (mut old, _old_conn) = open().await;
    std::fs::write(
        lingo.config_path(),
        routed(
            &backend.url(),
            "native",
            "/api",
            "limits: { idle_timeout: 300ms }\n",
        ),
    )
    .unwrap();
    lingo.reloader.reload(true).unwrap();
    let (_new, new_conn) = open().await;
    guarded("the new connection closed when idle", new_conn)
        .await
        .unwrap()
        .unwrap();
    // The old connection has been idle longer than the new one was: under the new limit it
    // would be gone too.
    let req = hyper::Request::get("/api/tags")
        .header("host", lingo.addr.to_string())
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let response = old
        .send_request(req)
        .await
        .expect("the old connection is open");
    assert_eq!(response.status(), 200);
}

/// `max_response` and `max_line` changed by a reload apply to the next request.
#[tokio::test]
async fn a_reloaded_max_response_and_max_line_apply_at_once() {
    let yaml = |limits: &str| {
        table(&format!(
            "{limits}upstreams:\n  models:\n    mock: {{ tokens: 200 }}\n    speaks: native\n\
             routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n"
        ))
    };
    let lingo = Lingo::start(&yaml("")).await;
    assert_eq!(chat(&lingo, false).await.status, 200);
    let streamed = chat(&lingo, true).await;
    assert!(
        streamed.body.ends_with("data: [DONE]\n\n"),
        "{}",
        streamed.body
    );

    std::fs::write(
        lingo.config_path(),
        yaml("limits: { max_response: 1KiB, max_line: 64 }\n"),
    )
    .unwrap();
    lingo.reloader.reload(true).unwrap();
    let whole = chat(&lingo, false).await;
    assert_shape(
        &whole,
        "chat",
        502,
        None,
        "limits.max_response (1024 bytes)",
    );
    let streamed = chat(&lingo, true).await;
    assert_failed_stream(&streamed.body, "longer than 64 bytes");
}

/// `header_timeout` changed by a reload applies to connections accepted after it: a new
/// client slow to send its headers is dropped after the new limit, while one that started
/// before the reload (and has been slow for longer) still gets its response.
#[tokio::test]
async fn a_reloaded_header_timeout_applies_to_new_connections_only() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&routed(&backend.url(), "native", "/api", "")).await;
    // Each connection is served one whole request first, so it is surely accepted (before the
    // reload, for the old one), then starts its next request's headers and stalls.
    let open = || async {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        stream
            .write_all(b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&got).ends_with("{}") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        assert!(got.starts_with(b"HTTP/1.1 200"));
        stream
            .write_all(b"GET /api/tags HTTP/1.1\r\n")
            .await
            .unwrap();
        stream
    };
    let mut old = open().await;
    std::fs::write(
        lingo.config_path(),
        routed(
            &backend.url(),
            "native",
            "/api",
            "limits: { header_timeout: 300ms }\n",
        ),
    )
    .unwrap();
    lingo.reloader.reload(true).unwrap();
    let mut new = open().await;
    let mut buf = [0u8; 1024];
    let read = guarded("the slow new client was dropped", new.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(0) | Err(_)) || buf.starts_with(b"HTTP/1.1 408"),
        "{read:?}"
    );
    old.write_all(b"Host: lingo\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    guarded("the old client's response", old.read_to_end(&mut response))
        .await
        .unwrap();
    assert!(
        response.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&response)
    );
}

/// `limits.drain` changed by a reload is the one a shutdown uses: with the table's first
/// drain of an hour, a shutdown with a stream still open ends at the reloaded 100 ms deadline.
#[tokio::test]
async fn a_reloaded_drain_is_the_one_shutdown_uses() {
    let (backend, lines) = scripted_backend().await;
    let lingo = Lingo::start(&routed(
        &backend.url(),
        "native",
        "/api",
        "limits: { drain: 1h }\n",
    ))
    .await;
    // Served once: the server is running on the first table before the reload.
    assert_eq!(get(&lingo.url("/healthz")).await.status, 200);
    std::fs::write(
        lingo.config_path(),
        routed(
            &backend.url(),
            "native",
            "/api",
            "limits: { drain: 100ms }\n",
        ),
    )
    .unwrap();
    lingo.reloader.reload(true).unwrap();
    let response = client()
        .request(request(Method::POST, &lingo.url("/api/chat"), &[], "{}"))
        .await
        .unwrap();
    lines.send(Bytes::from_static(b"one\n")).unwrap();
    let mut body = response.into_body();
    assert_eq!(
        body.frame().await.unwrap().unwrap().into_data().unwrap(),
        "one\n"
    );
    // The upstream never finishes (`lines` stays open): only the drain deadline lets the
    // server return (in the binary the process then exits and the stream is cut, see
    // process.rs; here the test's runtime would keep the connection's task alive).
    guarded(
        "shutdown returned at the reloaded drain deadline",
        lingo.shutdown(),
    )
    .await;
    drop((body, lines));
}
