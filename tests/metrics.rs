//! `/metrics`, `/readyz` and the admin listener, over real sockets.

mod support;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use hyper::Method;
use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const KEY: (&str, &str) = ("authorization", "Bearer k-team");

fn keyed_table(upstream: &str, admin: &str) -> String {
    table(&format!(
        "clients:\n  - {{ name: team, key: {{ value: k-team }} }}\n\
         upstreams:\n  models:\n{upstream}    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n\
         {admin}"
    ))
}

#[tokio::test]
async fn requests_tokens_and_overhead_are_counted() {
    let lingo = Lingo::start(&keyed_table("    mock: { tokens: 5 }\n", "")).await;
    let url = lingo.url("/v1/chat/completions");
    for stream in [false, true] {
        let response = send(request(Method::POST, &url, &[KEY], &chat_body(stream))).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let refused = send(request(Method::POST, &url, &[], &chat_body(false))).await;
    assert_eq!(refused.status, 401);

    let route = r#"route="path /v1/chat/completions",upstream="models""#;
    let count = format!("lingo_request_duration_seconds_count{{{route}}}");
    metrics_when(&lingo, |text| metric(text, &count) == Some(3.0)).await;
    let metrics = get(&lingo.url("/metrics")).await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
    );
    let text = &metrics.body;
    let ok = format!(
        r#"lingo_requests_total{{{route},status="200",dialect="chat-completions",outcome="complete"}}"#
    );
    assert_eq!(metric(text, &ok), Some(2.0), "{text}");
    let denied = format!(
        r#"lingo_requests_total{{{route},status="401",dialect="chat-completions",outcome="complete"}}"#
    );
    assert_eq!(metric(text, &denied), Some(1.0), "{text}");
    // The mock responds with 5 tokens per response; its prompt count is 1 per message word or more.
    let out =
        r#"lingo_tokens_total{route="path /v1/chat/completions",client="team",direction="out"}"#;
    assert_eq!(metric(text, out), Some(10.0), "{text}");
    let tokens_in =
        r#"lingo_tokens_total{route="path /v1/chat/completions",client="team",direction="in"}"#;
    assert!(metric(text, tokens_in).unwrap() > 0.0, "{text}");
    let overhead = format!("lingo_overhead_seconds_count{{{route}}}");
    assert_eq!(metric(text, &overhead), Some(3.0), "{text}");
    let duration = format!("lingo_request_duration_seconds_count{{{route}}}");
    assert_eq!(metric(text, &duration), Some(3.0), "{text}");
    assert_eq!(metric(text, "lingo_table_generation"), Some(1.0), "{text}");
    assert!(text.ends_with("# EOF\n"));
}

/// lingo's overhead leaves out the time spent waiting on the upstream, also when the waits
/// overlap (`n` choices are asked for concurrently). The bounds are far apart on purpose: this
/// checks what is measured, not how fast anything is.
#[tokio::test]
async fn overhead_leaves_out_the_upstream_wait() {
    let lingo = Lingo::start(&keyed_table("    mock: { first_token_delay: 800ms }\n", "")).await;
    for n in [1, 3] {
        let body = json!({"model": "m", "n": n, "messages": [{"role": "user", "content": "hi"}]});
        let url = lingo.url("/v1/chat/completions");
        let response = send(request(Method::POST, &url, &[KEY], &body.to_string())).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let route = r#"route="path /v1/chat/completions",upstream="models""#;
    let count = format!("lingo_request_duration_seconds_count{{{route}}}");
    let text = metrics_when(&lingo, |text| metric(text, &count) == Some(2.0)).await;
    let total = metric(
        &text,
        &format!("lingo_request_duration_seconds_sum{{{route}}}"),
    )
    .unwrap();
    let overhead = metric(&text, &format!("lingo_overhead_seconds_sum{{{route}}}")).unwrap();
    assert!(
        total >= 1.6,
        "two responses, each after an 800ms wait: {total}"
    );
    assert!(
        overhead < 0.8,
        "the waits are not lingo's: {overhead} of {total}"
    );
    // lingo's own work happens within polls of the connection's task: read with the poll's
    // one reading of the clock (`base::clock`), it would all measure zero.
    assert!(overhead > 0.0, "lingo's own work is measured: {overhead}");
}

/// An upstream's error response is read whole before lingo translates it: reading it is the
/// upstream's time too, however slowly its body comes.
#[tokio::test]
async fn overhead_leaves_out_a_slow_error_body() {
    let backend = Backend::start(|_| async {
        let (mut tx, body) = Channel::<Bytes, lingo::http::body::BoxError>::new(1);
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(800)).await;
            let _ = tx
                .send_data(Bytes::from_static(br#"{"error":"overloaded"}"#))
                .await;
        });
        hyper::Response::builder()
            .status(500)
            .header("content-type", "application/json")
            .body(lingo::http::body::Body::new(body))
            .unwrap()
    })
    .await;
    let upstream = format!("    url: {}\n", backend.url());
    let lingo = Lingo::start(&keyed_table(&upstream, "")).await;
    let url = lingo.url("/v1/chat/completions");
    let response = send(request(Method::POST, &url, &[KEY], &chat_body(false))).await;
    assert_eq!(response.status, 500, "{}", response.body);
    assert!(response.body.contains("overloaded"), "{}", response.body);
    let route = r#"route="path /v1/chat/completions",upstream="models""#;
    let (total, overhead) = one_request_times(&lingo, route).await;
    assert!(total >= 0.8, "the error body came after 800ms: {total}");
    assert!(
        overhead < 0.4,
        "the wait is not lingo's: {overhead} of {total}"
    );
}

/// A new connection goes to the worker serving the fewest (else the worker that wakes first
/// may take them all, and keep them), and `/metrics` shows how many each serves. The
/// connections open one after another, each served before the next: the counts are exact
/// (read in-process, so that reading them opens no connection). Shutdown then closes them all.
#[tokio::test]
async fn connections_go_to_the_worker_serving_fewest() {
    let lingo = Lingo::start_on(&keyed_table("    mock: {}\n", ""), 2).await;
    let metrics = std::sync::Arc::clone(lingo.reloader.metrics());
    let on = |text: &str, worker| {
        let series = format!(r#"lingo_open_connections{{worker="{worker}"}}"#);
        metric(text, &series).unwrap_or_else(|| panic!("no {series} in {text}"))
    };
    let mut open = Vec::new();
    for n in 1..=16 {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        let head = head_of(&mut stream, "GET /healthz HTTP/1.1\r\nHost: lingo\r\n\r\n").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        open.push(stream);
        let text = metrics.render();
        let (one, two) = (on(&text, 1), on(&text, 2));
        assert_eq!(one + two, f64::from(n), "{text}");
        assert!((one - two).abs() <= 1.0, "after {n}: {one} and {two}");
    }
    // Over a connection of its own, which the text counts too.
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let ask = "GET /metrics HTTP/1.1\r\nHost: lingo\r\nConnection: close\r\n\r\n";
    stream.write_all(ask.as_bytes()).await.unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let mut counts = [on(&text, 1), on(&text, 2)];
    counts.sort_by(f64::total_cmp);
    assert_eq!(counts, [8.0, 9.0], "{text}");
    assert_eq!(
        metric(&text, r#"lingo_open_connections{worker="0"}"#),
        None,
        "{text}"
    );

    let stopped = tokio::time::timeout(std::time::Duration::from_secs(20), lingo.shutdown());
    stopped
        .await
        .expect("shutdown closes the idle connections on both workers");
    let text = metrics.render();
    assert_eq!((on(&text, 1), on(&text, 2)), (0.0, 0.0), "{text}");
    drop(open);
}

#[tokio::test]
async fn open_streams_and_upstream_errors() {
    let (backend, lines) = scripted_backend().await;
    let upstream = format!("    url: {}\n", backend.url());
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  models:\n{upstream}    speaks: native\n  \
         gone:\n    url: http://{}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  \
         - {{ prefix: /api, to: gone }}\n",
        closed_port().await
    )))
    .await;
    let first = client()
        .request(request(
            Method::POST,
            &lingo.url("/v1/chat/completions"),
            &[],
            &chat_body(true),
        ))
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let during = get(&lingo.url("/metrics")).await.body;
    assert_eq!(metric(&during, "lingo_open_streams"), Some(1.0), "{during}");

    // The upstream breaks off after one line: an error frame, counted as mid-stream.
    lines
        .send(Bytes::from_static(
            b"{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}\n",
        ))
        .unwrap();
    lines.send(Bytes::from_static(b"not json\n")).unwrap();
    let text = first.into_body().collect().await.unwrap().to_bytes();
    assert!(!String::from_utf8_lossy(&text).contains("[DONE]"));

    assert_eq!(get(&lingo.url("/api/tags")).await.status, 502);
    // The server drops a finished response just after the client has read its end.
    let after = metrics_when(&lingo, |text| {
        metric(text, "lingo_open_streams") == Some(0.0)
    })
    .await;
    let unreachable = r#"lingo_upstream_errors_total{upstream="gone",kind="unreachable"}"#;
    assert_eq!(metric(&after, unreachable), Some(1.0), "{after}");
    let mid = r#"lingo_upstream_errors_total{upstream="models",kind="mid_stream"}"#;
    assert_eq!(metric(&after, mid), Some(1.0), "{after}");
}

#[tokio::test]
async fn reloads_are_counted_with_the_generation() {
    let lingo = Lingo::start(&keyed_table("    mock: {}\n", "")).await;
    let path = lingo.config_path();
    let good = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, "listen: [").unwrap();
    assert!(lingo.reloader.reload(true).is_err());
    std::fs::write(&path, good.replace("k-team", "k-other")).unwrap();
    assert_eq!(lingo.reloader.reload(true).unwrap(), 2);
    let text = get(&lingo.url("/metrics")).await.body;
    assert_eq!(
        metric(&text, r#"lingo_reloads_total{result="ok"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, r#"lingo_reloads_total{result="refused"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(metric(&text, "lingo_table_generation"), Some(2.0), "{text}");
}

/// A reload makes new route and upstream names: requests before and after it, and with the
/// route then pointed elsewhere, still count into the series their labels name.
#[tokio::test]
async fn series_count_across_reloads() {
    let lingo = Lingo::start(&keyed_table("    mock: {}\n", "")).await;
    let url = lingo.url("/v1/chat/completions");
    let path = lingo.config_path();
    let first = std::fs::read_to_string(&path).unwrap();
    let renamed = first
        .replace("  models:", "  others:")
        .replace("to: models", "to: others");
    for text in [&first, &first, &renamed, &first] {
        std::fs::write(&path, text).unwrap();
        lingo.reloader.reload(true).unwrap();
        let response = send(request(Method::POST, &url, &[KEY], &chat_body(false))).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let series = |upstream: &str| {
        format!(
            r#"lingo_requests_total{{route="path /v1/chat/completions",upstream="{upstream}",status="200",dialect="chat-completions",outcome="complete"}}"#
        )
    };
    let count = |upstream: &str| {
        format!(
            r#"lingo_request_duration_seconds_count{{route="path /v1/chat/completions",upstream="{upstream}"}}"#
        )
    };
    let (models, others) = (series("models"), series("others"));
    metrics_when(&lingo, |text| metric(text, &models) == Some(3.0)).await;
    let text = get(&lingo.url("/metrics")).await.body;
    assert_eq!(metric(&text, &others), Some(1.0), "{text}");
    assert_eq!(metric(&text, &count("models")), Some(3.0), "{text}");
    assert_eq!(metric(&text, &count("others")), Some(1.0), "{text}");
}

#[tokio::test]
async fn readyz_probes_every_upstream() {
    let lingo = Lingo::start(&keyed_table("    mock: {}\n", "")).await;
    let ready = get(&lingo.url("/readyz")).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.json()["upstreams"]["models"], "ok");

    let backend = Backend::json(200, "{}").await;
    let gone = closed_port().await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  up:\n    url: {}\n    speaks: native\n  down:\n    url: http://{gone}\n    speaks: native\n\
         routes:\n  - {{ prefix: /api, to: up }}\n",
        backend.url()
    )))
    .await;
    let not_ready = get(&lingo.url("/readyz")).await;
    assert_eq!(not_ready.status, 503, "{}", not_ready.body);
    let body = not_ready.json();
    assert_eq!(body["status"], "not ready");
    assert_eq!(body["upstreams"]["up"], "ok");
    assert!(
        body["upstreams"]["down"]
            .as_str()
            .unwrap()
            .starts_with("unreachable"),
        "{body}"
    );
}

#[tokio::test]
async fn admin_listener_takes_metrics_and_readyz_and_can_require_a_key() {
    let admin = "admin: { addr: 127.0.0.1:0, require_key: true }\n";
    let lingo = Lingo::start(&keyed_table("    mock: {}\n", admin)).await;
    let server_addrs = lingo.addrs.clone();
    assert_eq!(server_addrs.len(), 2, "a public and an admin listener");
    let admin_url = |path: &str| format!("http://{}{path}", server_addrs[1]);

    // On the admin listener: the key is required for /metrics and /readyz, not /healthz.
    assert_eq!(get(&admin_url("/healthz")).await.status, 200);
    for path in ["/metrics", "/readyz"] {
        let response = get(&admin_url(path)).await;
        assert_shape(
            &response,
            "chat",
            401,
            Some("missing_api_key"),
            "missing client key",
        );
        let wrong = [("authorization", "Bearer nope")];
        let response = send(request(Method::GET, &admin_url(path), &wrong, "")).await;
        assert_shape(
            &response,
            "chat",
            401,
            Some("invalid_api_key"),
            "invalid client key",
        );
    }
    let metrics = send(request(Method::GET, &admin_url("/metrics"), &[KEY], "")).await;
    assert_eq!(metrics.status, 200);
    let ready = send(request(Method::GET, &admin_url("/readyz"), &[KEY], "")).await;
    assert_eq!(ready.status, 200);
    // Nothing else is served there.
    let chat = send(request(
        Method::POST,
        &admin_url("/v1/chat/completions"),
        &[KEY],
        &chat_body(false),
    ))
    .await;
    assert_eq!(chat.status, 404);

    // On the public listener: /healthz stays, /metrics and /readyz are gone (routed like any
    // other path: no route here).
    assert_eq!(get(&lingo.url("/healthz")).await.status, 200);
    for path in ["/metrics", "/readyz"] {
        let gone = send(request(Method::GET, &lingo.url(path), &[KEY], "")).await;
        assert_shape(&gone, "chat", 404, Some("unknown_url"), "no route for GET");
    }
}

/// The admin listener is bound at startup only, so a reload that adds or drops `admin.addr`
/// must not move `/metrics` and `/readyz`: added, they would vanish from the public listener
/// with nowhere else to go; dropped, they would appear on it while the admin one still serves.
#[tokio::test]
async fn a_reload_does_not_move_metrics_off_or_onto_the_public_listener() {
    let lingo = Lingo::start(&keyed_table("    mock: {}\n", "")).await;
    let with_admin = keyed_table("    mock: {}\n", "admin: { addr: 127.0.0.1:0 }\n");
    std::fs::write(lingo.config_path(), with_admin).unwrap();
    lingo.reloader.reload(true).unwrap();
    assert_eq!(get(&lingo.url("/metrics")).await.status, 200);
    assert_eq!(get(&lingo.url("/readyz")).await.status, 200);

    let admin = "admin: { addr: 127.0.0.1:0 }\n";
    let lingo = Lingo::start(&keyed_table("    mock: {}\n", admin)).await;
    std::fs::write(lingo.config_path(), keyed_table("    mock: {}\n", "")).unwrap();
    lingo.reloader.reload(true).unwrap();
    assert_eq!(get(&lingo.url("/metrics")).await.status, 404);
    let on_admin = format!("http://{}/metrics", lingo.addrs[1]);
    assert_eq!(get(&on_admin).await.status, 200);
}
