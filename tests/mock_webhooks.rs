//! The mock delivers web-data webhooks by the contract, over real sockets to a scripted
//! receiver: every event of every job kind (v1 and v2, and the version-2-only mock), the
//! `events` filter, metadata and headers, the signature, the retry schedule and the reply
//! time (scaled by knobs), 3xx as a failure, pages sent while the job runs; as `lingo mock`
//! (flags) and as a `mock:` upstream behind lingo (table keys).

mod support;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hyper::Method;
use serde_json::{Value, json};
use support::receiver::{Hit, Receiver};
use support::*;

const MS: Duration = Duration::from_millis(1);

async fn post(url: &str, body: &Value) -> WholeResponse {
    let headers = [("content-type", "application/json")];
    send(request(Method::POST, url, &headers, &body.to_string())).await
}

/// Starts a job of `family` (`crawl`, `batch/scrape`, `extract`) at `base`/`version` with
/// `webhook`; its id.
async fn start(base: &str, version: &str, family: &str, webhook: Value) -> String {
    let mut body = match family {
        "crawl" => json!({"url": "https://example.com"}),
        "batch/scrape" => json!({"urls": ["https://example.com/a", "https://example.com/b"]}),
        _ => json!({"urls": ["https://example.com"], "prompt": "the title"}),
    };
    body["webhook"] = webhook;
    let started = post(&format!("{base}/{version}/{family}"), &body).await;
    assert_eq!(started.status, 200, "{}", started.body);
    started.json()["id"].as_str().unwrap().to_owned()
}

fn types(hits: &[Hit]) -> Vec<String> {
    hits.iter()
        .map(|h| h.json()["type"].as_str().unwrap().to_owned())
        .collect()
}

fn webhook_ids(hits: &[Hit]) -> Vec<String> {
    hits.iter()
        .map(|h| h.json()["webhookId"].as_str().unwrap().to_owned())
        .collect()
}

/// The types a job of `kind` sends, in order, when nothing fails.
fn all_events(kind: &str) -> Vec<String> {
    let events: &[&str] = if kind == "extract" {
        &["started", "completed"]
    } else {
        &["started", "page", "page", "page", "completed"]
    };
    events.iter().map(|e| format!("{kind}.{e}")).collect()
}

#[tokio::test]
async fn every_job_kind_sends_its_events_with_metadata_and_headers() {
    let receiver = Receiver::ok().await;
    let common = mock_with("page_delay=10ms").await;
    let v2_only = mock_with("page_delay=10ms,speaks=web-data-v2").await;
    let mut jobs = Vec::new();
    for (base, version) in [(&common, "v1"), (&common, "v2"), (&v2_only, "v2")] {
        for (family, kind) in [
            ("crawl", "crawl"),
            ("batch/scrape", "batch_scrape"),
            ("extract", "extract"),
        ] {
            let path = format!("/hook/{}", jobs.len());
            let hook = json!({"url": receiver.url(&path), "headers": {"X-Hook": "yes"},
                "metadata": {"customer": "acme"}});
            let id = start(base, version, family, hook).await;
            jobs.push((base, version, family, kind, id, path));
        }
    }
    for (base, version, family, kind, id, path) in jobs {
        let hits = receiver.wait(&path, all_events(kind).len()).await;
        let place = format!("{base} {version} {family}");
        assert_eq!(types(&hits), all_events(kind), "{place}");
        for hit in &hits {
            let payload = hit.json();
            assert_eq!(hit.headers["content-type"], "application/json", "{place}");
            assert_eq!(hit.headers["x-hook"], "yes", "{place}");
            assert!(hit.headers.get("x-firecrawl-signature").is_none());
            assert_eq!(
                (&payload["id"], &payload["success"]),
                (&json!(id), &json!(true))
            );
            assert_eq!(payload["metadata"], json!({"customer": "acme"}), "{place}");
        }
        let mut ids = webhook_ids(&hits);
        ids.dedup();
        assert_eq!(ids.len(), hits.len(), "a webhookId per event: {ids:?}");
        let status = get(&format!("{base}/{version}/{family}/{id}")).await.json();
        assert_eq!(status["status"], "completed", "{place}");
        if kind == "extract" {
            let result = &hits[1].json()["data"][0];
            assert_eq!(
                (&result["data"], &result["extractId"]),
                (&status["data"], &json!(id))
            );
            continue;
        }
        for (i, page) in hits[1..4].iter().enumerate() {
            assert_eq!(
                page.json()["data"],
                json!([status["data"][i]]),
                "{place} page {i}"
            );
        }
        assert_eq!(hits[0].json()["data"], json!([]));
        assert_eq!(hits[4].json()["data"], json!([]));
    }
}

/// The version-2-only mock's pages carry the formats the job asked for, as its status does.
#[tokio::test]
async fn v2_pages_carry_the_formats_asked_for() {
    let receiver = Receiver::ok().await;
    let base = mock_with("speaks=web-data-v2").await;
    let body = json!({"url": "https://example.com", "webhook": receiver.url("/v2"),
        "scrapeOptions": {"formats": ["markdown", {"type": "json", "prompt": "the title"}]}});
    let id = post(&format!("{base}/v2/crawl"), &body).await.json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let hits = receiver.wait("/v2", 5).await;
    let status = get(&format!("{base}/v2/crawl/{id}")).await.json();
    let page = &hits[1].json()["data"][0];
    assert!(page["json"].is_object(), "{page}");
    assert_eq!(page, &status["data"][0]);
}

#[tokio::test]
async fn the_events_filter_takes_short_and_full_names() {
    let receiver = Receiver::ok().await;
    let base = mock_with("").await;
    let filtered = [
        (
            "crawl",
            json!(["started", "crawl.completed"]),
            vec!["crawl.started", "crawl.completed"],
        ),
        (
            "batch/scrape",
            json!(["batch_scrape.page", "completed", "crawl.started"]),
            vec![
                "batch_scrape.page",
                "batch_scrape.page",
                "batch_scrape.page",
                "batch_scrape.completed",
            ],
        ),
        (
            "extract",
            json!(["extract.completed"]),
            vec!["extract.completed"],
        ),
    ];
    for (family, events, want) in filtered {
        let path = format!("/{family}");
        let hook = json!({"url": receiver.url(&path), "events": events});
        start(&base, "v1", family, hook).await;
        // The job's last event is its end: once it came, every earlier one had been sent.
        let hits = receiver.wait(&path, want.len()).await;
        assert_eq!(types(&hits), want, "{family}");
    }
}

#[tokio::test]
async fn deliveries_are_signed_with_the_secret() {
    let receiver = Receiver::ok().await;
    let base = mock_with("webhook_secret=s3cret-for-tests").await;
    start(&base, "v2", "crawl", json!(receiver.url("/signed"))).await;
    let hits = receiver.wait("/signed", 5).await;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"s3cret-for-tests");
    for hit in hits {
        let header = hit.headers["x-firecrawl-signature"].to_str().unwrap();
        let hex = header.strip_prefix("sha256=").expect("sha256=<hex>");
        assert!(
            hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "{hex}"
        );
        let tag: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        ring::hmac::verify(&key, &hit.body, &tag).expect("the signature is the body's HMAC");
        let other = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"another secret");
        assert!(ring::hmac::verify(&other, &hit.body, &tag).is_err());
    }
}

/// Four attempts (the first and three retries), each gap at least its delay and each longer
/// than the one before, the same `webhookId`; then none.
#[tokio::test]
async fn a_failing_receiver_gets_the_whole_schedule_then_nothing() {
    let receiver = Receiver::start(|_| (500, Duration::ZERO)).await;
    let base = mock_with("webhook_retry=100ms,400ms,800ms").await;
    let hook = json!({"url": receiver.url("/down"), "events": ["started"]});
    start(&base, "v1", "crawl", hook).await;
    let hits = receiver.wait("/down", 4).await;
    let gaps: Vec<Duration> = hits.windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, delay) in gaps.iter().zip([100, 400, 800]) {
        assert!(*gap >= MS * delay, "{gaps:?}");
    }
    assert!(gaps[0] < gaps[1] && gaps[1] < gaps[2], "{gaps:?}");
    let ids = webhook_ids(&hits);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    tokio::time::sleep(MS * 1600).await;
    assert_eq!(
        receiver.hits("/down").len(),
        4,
        "given up after the schedule"
    );
}

#[tokio::test]
async fn a_receiver_that_fails_twice_gets_exactly_three_attempts() {
    let receiver =
        Receiver::start(|hits| (if hits.len() <= 2 { 503 } else { 204 }, Duration::ZERO)).await;
    let base = mock_with("webhook_retry=50ms,50ms,50ms").await;
    let hook = json!({"url": receiver.url("/flaky"), "events": ["completed"]});
    start(&base, "v2", "batch/scrape", hook).await;
    let hits = receiver.wait("/flaky", 3).await;
    tokio::time::sleep(MS * 300).await;
    let hits_later = receiver.hits("/flaky");
    assert_eq!(hits_later.len(), 3, "no attempt after the 2xx");
    let ids = webhook_ids(&hits);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(types(&hits), ["batch_scrape.completed"; 3]);
}

/// A receiver slower than `webhook_timeout` has failed, though it responds with 200 in the end: its
/// first response would come after the test gave up waiting, so only a retry can be seen.
#[tokio::test]
async fn a_response_after_the_reply_time_is_a_failure() {
    let slow = Duration::from_secs(60);
    let receiver = Receiver::start(move |hits| {
        (
            200,
            if hits.len() == 1 {
                slow
            } else {
                Duration::ZERO
            },
        )
    })
    .await;
    let base = mock_with("webhook_timeout=300ms,webhook_retry=100ms").await;
    let hook = json!({"url": receiver.url("/slow"), "events": ["started"]});
    start(&base, "v1", "extract", hook).await;
    let hits = receiver.wait("/slow", 2).await;
    assert_eq!(webhook_ids(&hits)[0], webhook_ids(&hits)[1]);
    assert_eq!(types(&hits), ["extract.started"; 2]);
}

#[tokio::test]
async fn a_redirect_is_a_failure_and_is_not_followed() {
    let receiver = Receiver::start(|_| (302, Duration::ZERO)).await;
    let base = mock_with("webhook_retry=50ms").await;
    let hook = json!({"url": receiver.url("/moved"), "events": ["started"]});
    start(&base, "v1", "crawl", hook).await;
    assert_eq!(receiver.wait("/moved", 2).await.len(), 2, "retried");
    tokio::time::sleep(MS * 200).await;
    assert_eq!(receiver.hits("/moved").len(), 2);
    assert!(receiver.hits("/redirected").is_empty(), "never followed");
}

/// With a page delay, the first page's event comes while the job still runs, and the status
/// says so; a job set to fail sends `failed` after its pages, and its status agrees.
#[tokio::test]
async fn pages_are_sent_while_the_job_runs() {
    let receiver = Receiver::ok().await;
    let base = mock_with("page_delay=1s").await;
    let id = start(&base, "v1", "crawl", json!(receiver.url("/paced"))).await;
    let status_url = format!("{base}/v1/crawl/{id}");
    let early = get(&status_url).await.json();
    assert_eq!(
        (&early["status"], &early["completed"]),
        (&json!("scraping"), &json!(0))
    );
    assert!(early["next"].is_string(), "more pages may come: {early}");
    let hits = receiver.wait("/paced", 2).await;
    assert_eq!(types(&hits), ["crawl.started", "crawl.page"]);
    let during = get(&status_url).await.json();
    assert_eq!(
        during["status"], "scraping",
        "the first page came before the last: {during}"
    );
    assert!(during["completed"].as_u64().unwrap() < 3);
    assert_eq!(during["data"][0], hits[1].json()["data"][0]);
    let hits = receiver.wait("/paced", 5).await;
    assert_eq!(types(&hits), all_events("crawl"));
    assert_eq!(get(&status_url).await.json()["status"], "completed");

    let failing = mock_with("page_delay=10ms,job_fail_after=1").await;
    let id = start(&failing, "v2", "crawl", json!(receiver.url("/failing"))).await;
    let hits = receiver.wait("/failing", 3).await;
    assert_eq!(
        types(&hits),
        ["crawl.started", "crawl.page", "crawl.failed"]
    );
    let failed = hits[2].json();
    assert_eq!(
        (&failed["success"], &failed["data"]),
        (&json!(false), &json!([]))
    );
    assert!(failed["error"].is_string());
    let status = get(&format!("{failing}/v2/crawl/{id}")).await.json();
    assert_eq!(
        (&status["status"], &status["completed"]),
        (&json!("failed"), &json!(1))
    );
    let id = start(
        &failing,
        "v1",
        "extract",
        json!(receiver.url("/failing-extract")),
    )
    .await;
    let hits = receiver.wait("/failing-extract", 2).await;
    assert_eq!(types(&hits), ["extract.started", "extract.failed"]);
    let status = get(&format!("{failing}/v1/extract/{id}")).await.json();
    assert_eq!(
        (&status["status"], &status["success"]),
        (&json!("failed"), &json!(false))
    );
}

/// An `https` webhook is reached over TLS: the receiver's first bytes are a TLS handshake
/// record (its certificate is no public CA's, so the delivery itself fails).
#[tokio::test]
async fn an_https_webhook_is_reached_over_tls() {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/hook", listener.local_addr().unwrap());
    let base = mock_with("webhook_retry=").await;
    start(
        &base,
        "v1",
        "crawl",
        json!({"url": url, "events": ["started"]}),
    )
    .await;
    let (mut stream, _) = listener.accept().await.unwrap();
    let mut first = [0u8; 1];
    stream.read_exact(&mut first).await.unwrap();
    assert_eq!(first[0], 0x16, "a TLS handshake record");
}

#[tokio::test]
async fn a_bad_webhook_is_a_400_in_the_web_data_shape() {
    let common = mock_with("").await;
    let v2_only = mock_with("speaks=web-data-v2").await;
    let cases = [
        (json!(7), json!(["webhook"])),
        (json!("not a url"), json!(["webhook", "url"])),
        (
            json!({"url": "http://127.0.0.1:9/", "secret": "x"}),
            json!(["webhook"]),
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "events": ["finished"]}),
            json!(["webhook", "events", 0]),
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "metadata": {"n": 1}}),
            json!(["webhook", "metadata", "n"]),
        ),
    ];
    for (base, version) in [(&common, "v1"), (&common, "v2"), (&v2_only, "v2")] {
        for family in ["crawl", "batch/scrape", "extract"] {
            for (webhook, path) in &cases {
                let body = json!({"url": "https://example.com", "urls": ["https://example.com"],
                    "prompt": "p", "webhook": webhook});
                let response = post(&format!("{base}/{version}/{family}"), &body).await;
                let place = format!("{base} {version} {family} {webhook}");
                assert_eq!(response.status, 400, "{place}");
                let response = response.json();
                assert_eq!(
                    (&response["success"], &response["code"]),
                    (&json!(false), &json!("BAD_REQUEST"))
                );
                assert_eq!(&response["details"][0]["path"], path, "{place}");
            }
        }
    }
}

/// A `mock:` upstream takes the knobs from the table: its pace, schedule, reply time and
/// secret; a crawl through lingo reaches the receiver signed, its `started` event (failed
/// twice) on that schedule, its pages meanwhile.
#[tokio::test]
async fn a_mock_upstream_delivers_with_the_tables_knobs() {
    let receiver = Receiver::start(|hits| {
        let is_started = |h: &Hit| h.json()["type"] == "crawl.started";
        let started = hits.iter().filter(|h| is_started(h)).count();
        let failing = is_started(hits.last().unwrap()) && started <= 2;
        (if failing { 500 } else { 200 }, Duration::ZERO)
    })
    .await;
    let yaml = table(
        "upstreams:\n  webdata:\n    mock:\n      page_delay: 10ms\n      webhook_retry: [100ms, 300ms, 5s]\n      \
         webhook_timeout: 2s\n      webhook_secret: { value: table-secret }\n    speaks: web-data\n\
         routes:\n  - { prefix: /v1, to: webdata }\n  - { prefix: /v2, to: webdata }\n",
    );
    let lingo = Lingo::start(&yaml).await;
    let hook = json!({"url": receiver.url("/through"), "events": ["started", "page"],
        "metadata": {"via": "lingo"}});
    let id = start(&lingo.url(""), "v1", "crawl", hook).await;
    let hits = receiver.wait("/through", 6).await;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"table-secret");
    let (started, pages): (Vec<Hit>, Vec<Hit>) = hits
        .iter()
        .cloned()
        .partition(|h| h.json()["type"] == "crawl.started");
    assert_eq!(
        (started.len(), types(&pages)),
        (3, vec!["crawl.page".to_owned(); 3])
    );
    let ids = webhook_ids(&started);
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one event, three attempts: {ids:?}"
    );
    assert!(started[1].at - started[0].at >= MS * 100);
    assert!(started[2].at - started[1].at >= MS * 300);
    for hit in &hits {
        assert_eq!(hit.json()["id"], id.as_str());
        assert_eq!(hit.json()["metadata"], json!({"via": "lingo"}));
        let header = hit.headers["x-firecrawl-signature"].to_str().unwrap();
        let expected = ring::hmac::sign(&key, &hit.body);
        let hex: String = expected
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(header, format!("sha256={hex}"));
    }
    lingo.shutdown().await;
}

/// `lingo mock`'s flags set the same knobs as the table's keys.
#[tokio::test]
async fn lingo_mock_takes_the_webhook_knobs_as_flags() {
    let receiver =
        Receiver::start(|hits| (if hits.len() == 1 { 503 } else { 200 }, Duration::ZERO)).await;
    let args = [
        "mock",
        "--listen",
        "127.0.0.1:0",
        "--page-delay",
        "10ms",
        "--webhook-retry",
        "100ms,5s",
        "--webhook-timeout",
        "2s",
        "--webhook-secret",
        "flag-secret",
    ];
    let mut child = MockProcess::run(&args);
    let hook = json!({"url": receiver.url("/flags"), "events": ["completed"]});
    start(&child.url(), "v2", "batch/scrape", hook).await;
    let hits = receiver.wait("/flags", 2).await;
    assert!(hits[1].at - hits[0].at >= MS * 100);
    assert_eq!(webhook_ids(&hits)[0], webhook_ids(&hits)[1]);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"flag-secret");
    let header = hits[1].headers["x-firecrawl-signature"].to_str().unwrap();
    let hex = header.strip_prefix("sha256=").unwrap();
    let tag: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    ring::hmac::verify(&key, &hits[1].body, &tag).unwrap();
    child.stop();
}

/// `lingo mock ARGS`, once it says where it listens.
struct MockProcess {
    child: Child,
    addr: SocketAddr,
}

impl MockProcess {
    fn run(args: &[&str]) -> MockProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lingo"))
            .args(args.iter().map(OsStr::new))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(addr) = listening_on(&line) {
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("lingo mock started");
        MockProcess { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
