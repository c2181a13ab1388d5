//! Several backends per upstream, over real sockets: the load spread by requests in flight,
//! failover before the first byte (a dead backend, a 5xx, a native error on a `200`'s first
//! line), the retry budget in an outage, no retry after the first byte, the model loaded on
//! one backend, sticky sessions, ejection, `/readyz`, and `lingo check`.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::Method;

use support::*;

const OK_LINE: &str =
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true}\n";

/// lingo passing native `/api` through to an upstream of `backends` (YAML list entries),
/// with `more` keys on the upstream.
async fn lingo_over(backends: &[String], more: &str) -> Lingo {
    let list: String = backends.iter().map(|b| format!("      - {b}\n")).collect();
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    speaks: native\n{more}    backends:\n{list}\
         routes:\n  - {{ prefix: /api, to: models }}\n"
    )))
    .await
}

/// The requests `backend` saw that were not lingo's probes.
fn chats(backend: &Backend) -> usize {
    backend
        .requests()
        .iter()
        .filter(|s| s.uri == "/api/chat")
        .count()
}

fn url(backend: &Backend) -> String {
    format!("{{ url: \"{}\" }}", backend.url())
}

async fn native_chat(lingo: &Lingo, model: &str) -> WholeResponse {
    let body = format!(
        "{{\"model\":\"{model}\",\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}],\"stream\":false}}"
    );
    send(request(Method::POST, &lingo.url("/api/chat"), &[], &body)).await
}

/// A whole native chat (`{"model":"m","stream":false}`) with `headers`.
async fn chat_with(lingo: &Lingo, headers: &[(&str, &str)]) -> WholeResponse {
    let body = "{\"model\":\"m\",\"stream\":false}";
    send(request(
        Method::POST,
        &lingo.url("/api/chat"),
        headers,
        body,
    ))
    .await
}

/// A backend answering every request with one native line, after `delay`.
async fn answering(delay: Duration) -> Backend {
    Backend::start(move |_| async move {
        tokio::time::sleep(delay).await;
        json_response(200, OK_LINE)
    })
    .await
}

#[tokio::test]
async fn the_slow_backend_gets_fewer_requests() {
    let fast_a = answering(Duration::ZERO).await;
    let fast_b = answering(Duration::ZERO).await;
    let slow = answering(Duration::from_millis(150)).await;
    let lingo = lingo_over(&[url(&fast_a), url(&fast_b), url(&slow)], "").await;
    let lingo = Arc::new(lingo);
    let mut clients = Vec::new();
    for _ in 0..8 {
        let lingo = Arc::clone(&lingo);
        clients.push(tokio::spawn(async move {
            for _ in 0..15 {
                assert_eq!(native_chat(&lingo, "m").await.status, 200);
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    let (a, b, s) = (chats(&fast_a), chats(&fast_b), chats(&slow));
    assert_eq!(a + b + s, 120);
    assert!(s * 3 < a.min(b), "fast {a} and {b}, slow {s}");
}

#[tokio::test]
async fn a_dead_backend_costs_no_client_an_error() {
    let dead = closed_port().await;
    let alive = answering(Duration::ZERO).await;
    let backends = [format!("{{ url: \"http://{dead}\" }}"), url(&alive)];
    let lingo = lingo_over(&backends, "").await;
    for _ in 0..30 {
        let response = native_chat(&lingo, "m").await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    assert_eq!(chats(&alive), 30);
    let metrics = get(&lingo.url("/metrics")).await.body;
    let state =
        format!("lingo_backend_in_service{{upstream=\"models\",backend=\"http://{dead}\"}}");
    assert_eq!(metric(&metrics, &state), Some(0.0), "{metrics}");
}

#[tokio::test]
async fn failures_in_a_row_eject_a_backend_its_probes_find_well() {
    let failing = Backend::start(|seen| async move {
        match seen.uri.as_str() {
            "/api/chat" => json_response(500, "{\"error\":\"out of memory\"}"),
            _ => json_response(200, "{\"models\":[]}"),
        }
    })
    .await;
    let alive = answering(Duration::ZERO).await;
    let lingo = lingo_over(&[url(&failing), url(&alive)], "").await;
    for _ in 0..30 {
        let response = native_chat(&lingo, "m").await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    // Ejected after its third failure in a row: each was retried, none after.
    assert_eq!(chats(&failing), 3);
    let metrics = get(&lingo.url("/metrics")).await.body;
    let labels = format!("upstream=\"models\",backend=\"{}\"", failing.url());
    let ejected = format!("lingo_backend_ejections_total{{{labels}}}");
    assert_eq!(metric(&metrics, &ejected), Some(1.0), "{metrics}");
    let state = format!("lingo_backend_in_service{{{labels}}}");
    assert_eq!(metric(&metrics, &state), Some(0.0), "{metrics}");
    let retried = "lingo_backend_retries_total{upstream=\"models\",reason=\"server_error\"}";
    assert_eq!(metric(&metrics, retried), Some(3.0), "{metrics}");
}

#[tokio::test]
async fn a_5xx_or_an_error_on_a_200s_first_line_is_sent_once_more_elsewhere() {
    for failing in [
        Backend::json(500, "{\"error\":\"boom\"}").await,
        Backend::json(200, "{\"error\":\"model failed to load\"}\n").await,
    ] {
        let good = answering(Duration::ZERO).await;
        let lingo = lingo_over(&[url(&failing), url(&good)], "").await;
        for _ in 0..6 {
            let response = native_chat(&lingo, "m").await;
            assert_eq!(response.status, 200, "{}", response.body);
            assert_eq!(response.body, OK_LINE);
        }
        // The same request body went to both.
        for seen in failing.requests().iter().filter(|s| s.uri == "/api/chat") {
            assert!(String::from_utf8_lossy(&seen.body).contains("\"model\":\"m\""));
        }
        assert_eq!(chats(&good), 6);
    }
}

#[tokio::test]
async fn in_an_outage_the_retry_budget_bounds_the_load() {
    let a = Backend::json(502, "{\"error\":\"down\"}").await;
    let b = Backend::json(502, "{\"error\":\"down\"}").await;
    let lingo = lingo_over(&[url(&a), url(&b)], "    health: { eject_after: 1000 }\n").await;
    for _ in 0..50 {
        assert_eq!(native_chat(&lingo, "m").await.status, 502);
    }
    let sent = chats(&a) + chats(&b);
    // 50 requests, 20% of them retried, and the 3 tokens saved up at the start.
    assert!(sent <= 50 + 10 + 3, "{sent} requests upstream for 50");
    assert!(sent > 50, "nothing was retried");
    let metrics = get(&lingo.url("/metrics")).await.body;
    let exhausted = "lingo_backend_retry_budget_exhausted_total{upstream=\"models\"}";
    assert!(
        metric(&metrics, exhausted).unwrap_or(0.0) > 0.0,
        "{metrics}"
    );
}

/// A backend that answers `200` with one chunk of a native stream and then closes the
/// connection mid-body.
async fn cut_after_one_line(line: &'static str) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                if buf[..n].starts_with(b"POST") {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n";
                let chunk = format!("{head}{:x}\r\n{line}\r\n", line.len());
                let _ = stream.write_all(chunk.as_bytes()).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            });
        }
    });
    (addr, asked)
}

#[tokio::test]
async fn a_failure_after_the_first_byte_is_not_sent_again() {
    use http_body_util::BodyExt;
    let first = "{\"model\":\"m\",\"message\":{\"content\":\"Hel\"},\"done\":false}\n";
    let (cut, asked) = cut_after_one_line(first).await;
    let other = answering(Duration::ZERO).await;
    let backends = [
        format!("{{ url: \"http://{cut}\", priority: 0 }}"),
        format!("{{ url: \"{}\", priority: 1 }}", other.url()),
    ];
    let lingo = lingo_over(&backends, "").await;
    let body = "{\"model\":\"m\",\"stream\":true}";
    let response = client()
        .request(request(Method::POST, &lingo.url("/api/chat"), &[], body))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut text = Vec::new();
    let mut failed = false;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => text.extend_from_slice(&frame.into_data().unwrap_or_default()),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&text);
    assert_eq!(text.matches("Hel").count(), 1, "{text}");
    assert!(
        failed || text.contains("error"),
        "the cut is not hidden: {text}"
    );
    assert_eq!(asked.load(Ordering::Relaxed), 1);
    assert_eq!(chats(&other), 0, "sent again after its first byte");
    let metrics = get(&lingo.url("/metrics")).await.body;
    let after = format!(
        "lingo_backend_failed_after_first_byte_total{{upstream=\"models\",backend=\"http://{cut}\"}}"
    );
    assert_eq!(metric(&metrics, &after), Some(1.0), "{metrics}");
}

#[tokio::test]
async fn a_session_stays_on_its_backend() {
    let backends = [
        answering(Duration::ZERO).await,
        answering(Duration::ZERO).await,
        answering(Duration::ZERO).await,
    ];
    let urls: Vec<String> = backends.iter().map(url).collect();
    let lingo = lingo_over(&urls, "    balance: { sticky: { header: X-Session-Id } }\n").await;
    for session in ["alpha", "beta", "gamma", "delta"] {
        let before: Vec<usize> = backends.iter().map(chats).collect();
        for _ in 0..5 {
            let response = chat_with(&lingo, &[("x-session-id", session)]).await;
            assert_eq!(response.status, 200);
        }
        let grew: Vec<usize> = (backends.iter().zip(&before))
            .map(|(b, n)| chats(b) - n)
            .collect();
        assert!(grew.contains(&5), "session {session} spread: {grew:?}");
    }
    // Without the header, a conversation is known by its first two messages.
    for topic in ["tides", "bees", "rust", "tea"] {
        let before: Vec<usize> = backends.iter().map(chats).collect();
        for turn in 0..5 {
            let body = format!(
                "{{\"model\":\"m\",\"stream\":false,\"messages\":[{{\"role\":\"system\",\"content\":\"brief\"}},\
                 {{\"role\":\"user\",\"content\":\"{topic}\"}},{{\"role\":\"user\",\"content\":\"turn {turn}\"}}]}}"
            );
            let response = send(request(Method::POST, &lingo.url("/api/chat"), &[], &body)).await;
            assert_eq!(response.status, 200);
        }
        let grew: Vec<usize> = (backends.iter().zip(&before))
            .map(|(b, n)| chats(b) - n)
            .collect();
        assert!(grew.contains(&5), "conversation {topic} spread: {grew:?}");
    }
}

#[tokio::test]
async fn requests_go_where_their_model_is_loaded() {
    let asked = Arc::new(AtomicUsize::new(0));
    let loaded_on = |models: &'static str| {
        let asked = Arc::clone(&asked);
        Backend::start(move |seen| {
            let asked = Arc::clone(&asked);
            async move {
                match seen.uri.as_str() {
                    "/api/ps" | "/api/tags" => json_response(200, models),
                    _ => {
                        asked.fetch_add(1, Ordering::Relaxed);
                        json_response(200, OK_LINE)
                    }
                }
            }
        })
    };
    let a = loaded_on("{\"models\":[]}").await;
    let b =
        loaded_on("{\"models\":[{\"name\":\"llama3.2:latest\",\"model\":\"llama3.2:latest\"}]}")
            .await;
    let lingo = lingo_over(&[url(&a), url(&b)], "    health: { interval: 50ms }\n").await;
    // lingo has read b's probe when its metrics say so.
    let loaded = format!(
        "lingo_backend_models_loaded{{upstream=\"models\",backend=\"{}\"}}",
        b.url()
    );
    metrics_when(&lingo, |m| metric(m, &loaded) == Some(1.0)).await;
    let on = chats;
    for _ in 0..10 {
        assert_eq!(native_chat(&lingo, "llama3.2").await.status, 200);
    }
    assert_eq!((on(&a), on(&b)), (0, 10));
    // Another model: either.
    for _ in 0..20 {
        native_chat(&lingo, "qwen").await;
    }
    assert!(on(&a) > 0);
}

#[tokio::test]
async fn readyz_says_when_no_backend_is_in_service() {
    let down = |_: Seen| async { json_response(500, "{}") };
    let a = Backend::start(down).await;
    let b = Backend::start(down).await;
    let lingo = lingo_over(&[url(&a), url(&b)], "    health: { interval: 50ms }\n").await;
    let mut ready = get(&lingo.url("/readyz")).await;
    for _ in 0..100 {
        if ready.status == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        ready = get(&lingo.url("/readyz")).await;
    }
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert!(
        ready.body.contains("no backend in service"),
        "{}",
        ready.body
    );
    assert!(
        ready.body.contains(&format!("{} down", a.url())),
        "{}",
        ready.body
    );
}

/// A web-data backend of its own jobs: `POST /v2/crawl` starts one named after `name`, and
/// `GET /v2/crawl/{id}` knows only its own (404 for the others').
async fn job_server(name: &'static str) -> Backend {
    let started = Arc::new(AtomicUsize::new(0));
    Backend::start(move |seen| {
        let started = Arc::clone(&started);
        async move {
            match (seen.method.as_str(), seen.uri.as_str()) {
                ("POST", "/v2/crawl") => {
                    let n = started.fetch_add(1, Ordering::Relaxed);
                    let body = format!("{{\"success\":true,\"id\":\"{name}-{n}\",\"url\":\"http://x/v2/crawl/{name}-{n}\"}}");
                    json_response(200, &body)
                }
                (_, path) if path.starts_with(&format!("/v2/crawl/{name}-")) => {
                    json_response(200, "{\"success\":true,\"status\":\"scraping\",\"data\":[]}")
                }
                _ => json_response(404, "{\"success\":false,\"error\":\"Job not found\"}"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_web_data_job_is_asked_about_where_it_was_started() {
    let (a, b) = (job_server("a").await, job_server("b").await);
    let yaml = format!(
        "upstreams:\n  web:\n    speaks: web-data\n    backends:\n      - {}\n      - {}\n\
         routes:\n  - {{ prefix: /v2, to: web }}\n",
        url(&a),
        url(&b)
    );
    let lingo = Lingo::start(&table(&yaml)).await;
    let crawl = "{\"url\":\"https://example.com\"}";
    let mut ids = Vec::new();
    for _ in 0..8 {
        let started = send(request(Method::POST, &lingo.url("/v2/crawl"), &[], crawl)).await;
        assert_eq!(started.status, 200, "{}", started.body);
        ids.push(started.json()["id"].as_str().unwrap().to_owned());
    }
    assert!(ids.iter().any(|id| id.starts_with('a')) && ids.iter().any(|id| id.starts_with('b')));
    let not_found = |backend: &Backend| {
        let seen = backend.requests();
        seen.iter()
            .filter(|s| s.method == Method::GET && s.uri.starts_with("/v2/crawl/"))
            .count()
    };
    for id in &ids {
        let status = get(&lingo.url(&format!("/v2/crawl/{id}"))).await;
        assert_eq!(status.status, 200, "{id}: {}", status.body);
    }
    // Each status went straight to its job's backend.
    assert_eq!(not_found(&a) + not_found(&b), ids.len());
    // A replica that did not start them (a lingo of its own) finds each on the way.
    let other = Lingo::start(&table(&yaml)).await;
    for id in &ids {
        let status = get(&other.url(&format!("/v2/crawl/{id}"))).await;
        assert_eq!(status.status, 200, "{id}: {}", status.body);
    }
    // And once found, a job's next status goes straight to it.
    let before = not_found(&a) + not_found(&b);
    for id in &ids {
        assert_eq!(
            get(&other.url(&format!("/v2/crawl/{id}"))).await.status,
            200
        );
    }
    assert_eq!(not_found(&a) + not_found(&b), before + ids.len());
}

#[tokio::test]
async fn a_stalled_backend_is_taken_out_and_comes_back_when_its_probe_answers() {
    let stalled = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = Arc::clone(&stalled);
    let sometimes = Backend::start(move |seen| {
        let stalled = flag.load(Ordering::Relaxed);
        async move {
            if stalled {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            match seen.uri.as_str() {
                "/api/ps" | "/api/tags" => json_response(200, "{\"models\":[]}"),
                _ => json_response(200, OK_LINE),
            }
        }
    })
    .await;
    let steady = answering(Duration::ZERO).await;
    let more = "    timeouts: { first_byte: 300ms }\n    health: { interval: 100ms, eject_after: 2, eject_for: 500ms }\n";
    let lingo = lingo_over(&[url(&sometimes), url(&steady)], more).await;
    for _ in 0..6 {
        let response = native_chat(&lingo, "m").await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let state = format!(
        "lingo_backend_in_service{{upstream=\"models\",backend=\"{}\"}}",
        sometimes.url()
    );
    // Out of service: ejected after its timeouts, or by its first probe, whichever ends first
    // on a busy machine.
    metrics_when(&lingo, |m| metric(m, &state) == Some(0.0)).await;
    // It answers again: a probe brings it back, and requests reach it.
    stalled.store(false, Ordering::Relaxed);
    metrics_when(&lingo, |m| metric(m, &state) == Some(1.0)).await;
    let before = chats(&sometimes);
    for _ in 0..20 {
        assert_eq!(native_chat(&lingo, "m").await.status, 200);
    }
    assert!(chats(&sometimes) > before);
}

#[tokio::test]
async fn a_request_goes_to_any_backend_with_the_same_fields_as_to_one() {
    let (a, b) = (
        answering(Duration::ZERO).await,
        answering(Duration::ZERO).await,
    );
    let lingo = lingo_over(&[url(&a), url(&b)], "").await;
    let headers = [
        ("x-custom", "kept"),
        ("connection", "x-drop"),
        ("x-drop", "gone"),
    ];
    let body = "{\"model\":\"m\",\"stream\":false}";
    for _ in 0..6 {
        let response = chat_with(&lingo, &headers).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    for backend in [&a, &b] {
        for seen in backend.requests().iter().filter(|s| s.uri == "/api/chat") {
            let h = &seen.headers;
            assert_eq!(h["x-custom"], "kept");
            assert!(
                h.get("x-drop").is_none() && h.get("connection").is_none(),
                "{h:?}"
            );
            assert_eq!(h["host"], backend.addr.to_string());
            assert_eq!(h["x-forwarded-for"], "127.0.0.1");
            assert!(h.get("x-request-id").is_some());
            assert_eq!(seen.body, body.as_bytes());
        }
    }
    assert_eq!(chats(&a) + chats(&b), 6);
}
