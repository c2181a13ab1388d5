//! Several backends that are lingo's own mock, each set up by its knobs: a model loaded on one
//! (`loaded`), one whose queue is full (`busy`), a slow one (`first_token_delay`), one
//! that cuts its streams after their first tokens (`cut_after`), all but one down
//! (`status=500`); and a reload that keeps the backends' state. What each backend served is
//! read from lingo's per-backend metrics.

mod support;

use http_body_util::BodyExt;
use hyper::Method;
use support::*;

/// lingo passing native `/api` through to an upstream of `backends` (YAML list entries),
/// probed when the table loads and every second after, with `more` keys on the upstream.
async fn lingo_over(backends: &[String], more: &str) -> Lingo {
    let list: String = backends.iter().map(|b| format!("      - {b}\n")).collect();
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    speaks: native\n    health: {{ interval: 1s }}\n{more}    \
         backends:\n{list}routes:\n  - {{ prefix: /api, to: models }}\n"
    )))
    .await
}

/// The backend entry for the mock at `url`.
fn at(url: &str) -> String {
    format!("{{ url: \"{url}\" }}")
}

fn chat_body(model: &str, stream: bool) -> String {
    format!(
        "{{\"model\":\"{model}\",\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}],\"stream\":{stream}}}"
    )
}

async fn chat(lingo: &Lingo, model: &str, stream: bool) -> WholeResponse {
    let body = chat_body(model, stream);
    send(request(Method::POST, &lingo.url("/api/chat"), &[], &body)).await
}

/// `url`'s series of the backend metric `name` (with `more` labels), as `/metrics` says now.
fn of(metrics: &str, name: &str, url: &str, more: &str) -> f64 {
    let series = format!("{name}{{upstream=\"models\",backend=\"{url}\"{more}}}");
    metric(metrics, &series).unwrap_or_else(|| panic!("no {series} in {metrics}"))
}

fn served(metrics: &str, url: &str) -> f64 {
    of(
        metrics,
        "lingo_backend_requests_total",
        url,
        ",outcome=\"ok\"",
    )
}

#[tokio::test]
async fn a_model_goes_to_the_mock_that_has_it_loaded() {
    let (cold_a, warm, cold_b) = (
        mock_with("").await,
        mock_with("loaded=llama3.2").await,
        mock_with("").await,
    );
    let lingo = lingo_over(&[at(&cold_a), at(&warm), at(&cold_b)], "").await;
    let loaded = format!("lingo_backend_models_loaded{{upstream=\"models\",backend=\"{warm}\"}}");
    metrics_when(&lingo, |m| metric(m, &loaded) == Some(1.0)).await;
    for _ in 0..12 {
        assert_eq!(chat(&lingo, "llama3.2", false).await.status, 200);
    }
    let metrics = get(&lingo.url("/metrics")).await.body;
    let counts = [&cold_a, &warm, &cold_b].map(|url| served(&metrics, url));
    assert_eq!(counts, [0.0, 12.0, 0.0]);
}

/// The backend that has the model loaded but whose queue is full: each request it refuses
/// (503 "server busy") goes to another, and it stays in service, never ejected.
#[tokio::test]
async fn a_busy_mock_sends_its_requests_elsewhere_and_stays_in_service() {
    let (busy, idle) = (mock_with("busy=true,loaded=m").await, mock_with("").await);
    // Every request may be sent again: a request refused as busy is never lost here.
    let lingo = lingo_over(&[at(&busy), at(&idle)], "    retry_budget: 100%\n").await;
    // Its probe found it alive, with the model loaded: every request goes to it first.
    let loaded = format!("lingo_backend_models_loaded{{upstream=\"models\",backend=\"{busy}\"}}");
    metrics_when(&lingo, |m| metric(m, &loaded) == Some(1.0)).await;
    for _ in 0..10 {
        let response = chat(&lingo, "m", false).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let metrics = get(&lingo.url("/metrics")).await.body;
    let said_busy = of(
        &metrics,
        "lingo_backend_requests_total",
        &busy,
        ",outcome=\"busy\"",
    );
    assert_eq!(
        (said_busy, served(&metrics, &idle)),
        (10.0, 10.0),
        "{metrics}"
    );
    // Back-pressure is not a failure: the busy one is neither ejected nor out of service.
    assert_eq!(
        of(&metrics, "lingo_backend_ejections_total", &busy, ""),
        0.0
    );
    assert_eq!(of(&metrics, "lingo_backend_in_service", &busy, ""), 1.0);
    let retried = "lingo_backend_retries_total{upstream=\"models\",reason=\"busy\"}";
    assert_eq!(metric(&metrics, retried), Some(10.0));
}

#[tokio::test]
async fn the_slow_mock_gets_fewer_requests() {
    let slow = mock_with("first_token_delay=100ms").await;
    let (fast_a, fast_b) = (mock_with("").await, mock_with("").await);
    let lingo = lingo_over(&[at(&slow), at(&fast_a), at(&fast_b)], "").await;
    let clients: Vec<_> = (0..12)
        .map(|_| {
            let url = lingo.url("/api/chat");
            tokio::spawn(async move {
                for _ in 0..10 {
                    let body = chat_body("m", false);
                    let response = send(request(Method::POST, &url, &[], &body)).await;
                    assert_eq!(response.status, 200);
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let metrics = get(&lingo.url("/metrics")).await.body;
    let [s, a, b] = [&slow, &fast_a, &fast_b].map(|url| served(&metrics, url));
    assert_eq!(s + a + b, 120.0);
    assert!(s * 2.0 < a.min(b), "slow {s}, fast {a} and {b}");
    // Fewer for its load, not for its health: its probes answered in time.
    assert_eq!(of(&metrics, "lingo_backend_in_service", &slow, ""), 1.0);
}

/// A stream cut after its first tokens is never sent again: its client gets those tokens once
/// and then one error, and the cut counts against the backend that cut it.
#[tokio::test]
async fn a_stream_cut_after_its_first_tokens_ends_with_one_error() {
    let (cutting, whole) = (
        mock_with("cut_after=2,tokens=8").await,
        mock_with("tokens=8").await,
    );
    // The whole one is the backup: every stream starts on the one that cuts.
    let backup = format!("{{ url: \"{whole}\", priority: 1 }}");
    let lingo = lingo_over(&[at(&cutting), backup], "").await;
    let body = chat_body("m", true);
    let response = client()
        .request(request(Method::POST, &lingo.url("/api/chat"), &[], &body))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Pass-through: the cut reaches the client as a body that fails, after what came.
    let (text, failed) = read_until_failure(response.into_body()).await;
    let tokens = text
        .lines()
        .filter(|l| l.contains("\"done\":false"))
        .count();
    assert_eq!((tokens, failed), (2, true), "{text}");
    let metrics = get(&lingo.url("/metrics")).await.body;
    let cut = of(
        &metrics,
        "lingo_backend_failed_after_first_byte_total",
        &cutting,
        "",
    );
    assert_eq!(cut, 1.0);
    assert_eq!(
        served(&metrics, &whole),
        0.0,
        "sent again after its first byte"
    );
}

/// What `body` brought until it ended, and whether it ended with an error.
async fn read_until_failure(mut body: hyper::body::Incoming) -> (String, bool) {
    let mut text = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => text.extend_from_slice(&frame.into_data().unwrap_or_default()),
            Err(_) => return (String::from_utf8_lossy(&text).into_owned(), true),
        }
    }
    (String::from_utf8_lossy(&text).into_owned(), false)
}

/// With all but one down, everything goes to the last one; with all down, requests still go
/// to them (a backend is never refused on its health alone) and the client gets their error.
#[tokio::test]
async fn when_all_but_one_are_down_everything_goes_to_the_last_one() {
    let (down_a, down_b, up) = (
        mock_with("status=500").await,
        mock_with("status=500").await,
        mock_with("").await,
    );
    let lingo = lingo_over(&[at(&down_a), at(&down_b), at(&up)], "").await;
    // Their probes find them down.
    let out = |m: &str| [&down_a, &down_b].map(|d| of(m, "lingo_backend_in_service", d, ""));
    metrics_when(&lingo, |m| out(m) == [0.0, 0.0]).await;
    for _ in 0..20 {
        assert_eq!(chat(&lingo, "m", false).await.status, 200);
    }
    let metrics = get(&lingo.url("/metrics")).await.body;
    assert_eq!(served(&metrics, &up), 20.0);
    let lingo = lingo_over(&[at(&down_a), at(&down_b)], "").await;
    let response = chat(&lingo, "m", false).await;
    assert_eq!(response.status, 500, "{}", response.body);
    assert!(response.body.contains("mock failure"), "{}", response.body);
}

/// A reload keeps the state of each backend it keeps (its counts here; its health and pooled
/// connections are kept with them), and a backend it adds starts afresh.
#[tokio::test]
async fn a_reload_keeps_the_state_of_each_backend_it_keeps() {
    let (a, b, c) = (
        mock_with("").await,
        mock_with("").await,
        mock_with("").await,
    );
    let yaml = |urls: &[&String], budget: &str| {
        let list: String = urls
            .iter()
            .map(|u| format!("      - {}\n", at(u)))
            .collect();
        table(&format!(
            "upstreams:\n  models:\n    speaks: native\n    retry_budget: {budget}\n    \
             backends:\n{list}routes:\n  - {{ prefix: /api, to: models }}\n"
        ))
    };
    let lingo = Lingo::start(&yaml(&[&a, &b], "20%")).await;
    for _ in 0..10 {
        assert_eq!(chat(&lingo, "m", false).await.status, 200);
    }
    // Another retry budget, and a backend more.
    std::fs::write(lingo.config_path(), yaml(&[&a, &b, &c], "50%")).unwrap();
    lingo.reloader.reload(false).expect("the table loads");
    let metrics = get(&lingo.url("/metrics")).await.body;
    assert_eq!(
        served(&metrics, &a) + served(&metrics, &b),
        10.0,
        "{metrics}"
    );
    assert_eq!(served(&metrics, &c), 0.0);
    for _ in 0..10 {
        assert_eq!(chat(&lingo, "m", false).await.status, 200);
    }
    let metrics = get(&lingo.url("/metrics")).await.body;
    let all: f64 = [&a, &b, &c].iter().map(|u| served(&metrics, u)).sum();
    assert_eq!(all, 20.0);
}
