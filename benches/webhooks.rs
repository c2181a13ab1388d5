//! The webhook relay's bench: how fast lingo acknowledges the upstream's events with the
//! embedded store (each acknowledged only once committed to disk), and how fast it delivers them
//! to a receiver that responds with 204, with nothing lost. `cargo bench --bench webhooks` (or
//! `benches/webhooks.sh`).
//!
//! lingo runs as its own release process (the binary `LINGO_BENCH_BIN` names, else the one
//! `cargo build --release` makes), its store a file in a scratch directory (or, with
//! `LINGO_BENCH_STORE=redis`, a `redis-server` the bench starts, its append-only file on).
//! This program plays both sides: the upstream (it starts one crawl through lingo to learn
//! the receiver URL lingo gives, then POSTs signed events to it, `LINGO_BENCH_CONCURRENCY` at
//! a time, default 32, `LINGO_BENCH_EVENTS` in all, default 20000, each with its own
//! `webhookId`) and the client's receiver (204 to every delivery, each event's `webhook-id` counted). It prints events
//! acknowledged a second and the acknowledgement's p50 and p99 (per POST, start to response),
//! events delivered a second (from the first POST to the last event delivered), and exits
//! non-zero if an event was not acknowledged or not delivered.

#[path = "proxy/release.rs"]
mod release;

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lingo::http::message;
use tokio::net::TcpListener;

type Http = Client<HttpConnector, Full<Bytes>>;

/// A request's head, as the bench's servers read it.
type Head = message::Request<()>;

/// A response the bench's servers write, its body whole.
type FullResponse = message::Response<Full<Bytes>>;

/// The field each delivery names its event by.
const WEBHOOK_ID: HeaderName = HeaderName::from_static("webhook-id");

/// The upstream's webhook secret, which lingo checks.
const SECRET: &[u8] = b"bench-upstream-secret";

/// The deliveries the receiver got: each event's id, and when the last new one came.
#[derive(Default)]
struct Received {
    ids: HashSet<String>,
    attempts: u64,
    last: Option<Instant>,
}

/// What the upstream was asked: the body of the job request lingo sent it.
type JobRequestBody = Option<Bytes>;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ok = runtime.block_on(bench());
    std::process::exit(if ok { 0 } else { 1 });
}

async fn bench() -> bool {
    let events = knob("LINGO_BENCH_EVENTS", 20_000);
    let concurrency = knob("LINGO_BENCH_CONCURRENCY", 32);
    let dir = tempfile::tempdir().unwrap();
    let received = Arc::new(Mutex::new(Received::default()));
    let receiver = serve(Arc::clone(&received), receive).await;
    let job_request: Arc<Mutex<JobRequestBody>> = Arc::default();
    let upstream = serve(Arc::clone(&job_request), job_start).await;
    let (store, _redis) = store(dir.path());
    let (mut lingo, addrs) = start_lingo(dir.path(), upstream, &store);
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let token_url = start_crawl(&http, addrs[0], receiver, &job_request).await;
    eprintln!("{events} events, {concurrency} at a time; store {store}");
    let started = Instant::now();
    let mut acks = send_events(&http, &token_url, events, concurrency).await;
    let sent_for = started.elapsed();
    let delivered = wait_delivered(&received, events)
        .await
        .map(|at| at - started);
    let metrics = get(&http, &format!("http://{}/metrics", addrs[1])).await;
    let _ = lingo.kill();
    let _ = lingo.wait();
    let received = received.lock().unwrap();
    report(&mut acks, sent_for, delivered, events, &received, &metrics)
}

/// A server on a free port responding to each request with `response(state, head, body)`.
async fn serve<S: Send + 'static>(
    state: Arc<Mutex<S>>,
    response: fn(&Mutex<S>, &Head, Bytes) -> FullResponse,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let state = Arc::clone(&state);
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let state = Arc::clone(&state);
                async move {
                    let (head, body) = message::Request::from(req).into_parts();
                    let body = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    Ok::<_, Infallible>(response(&state, &head, body).into_hyper())
                }
            });
            tokio::spawn(async move {
                let io = TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    addr
}

/// The client's receiver: 204, the event's id counted.
fn receive(received: &Mutex<Received>, head: &Head, _: Bytes) -> FullResponse {
    let id = head.headers().get(&WEBHOOK_ID).and_then(message::text);
    let mut received = received.lock().unwrap();
    received.attempts += 1;
    if let Some(id) = id
        && received.ids.insert(id.to_owned())
    {
        received.last = Some(Instant::now());
    }
    let mut response = message::Response::new(Full::new(Bytes::new()));
    *response.status_mut() = hyper::StatusCode::NO_CONTENT;
    response
}

/// The upstream: a crawl's start, the request kept.
fn job_start(job_request: &Mutex<JobRequestBody>, _: &Head, body: Bytes) -> FullResponse {
    *job_request.lock().unwrap() = Some(body);
    let started =
        r#"{"success":true,"id":"bench-job","url":"https://up.example/v2/crawl/bench-job"}"#;
    let mut response = message::Response::new(Full::new(Bytes::from_static(started.as_bytes())));
    let json = HeaderValue::from_static("application/json");
    response.headers_mut().insert(CONTENT_TYPE, json);
    response
}

/// A `redis-server` of the bench's own, stopped when dropped.
struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The relay's `store`: the embedded store's file in `dir`, or with `LINGO_BENCH_STORE=redis`
/// a `redis-server` started here (an append-only file written every second, as Redis
/// ships it), and that server.
fn store(dir: &Path) -> (String, Option<Redis>) {
    if std::env::var("LINGO_BENCH_STORE").as_deref() != Ok("redis") {
        return ("hooks.redb".into(), None);
    }
    let addr = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &addr.port().to_string(), "--bind", "127.0.0.1"])
        .args(["--appendonly", "yes", "--save", ""])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("run redis-server (apt-get install redis-server)");
    let redis = Redis(child);
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return (format!("redis://{addr}"), Some(redis));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("redis-server did not start");
}

/// lingo on a table relaying `upstream`'s webhooks, its store `store` (a path in `dir`, or a
/// Redis URL): the process, and its listener and admin listener.
fn start_lingo(dir: &Path, upstream: SocketAddr, store: &str) -> (Child, [SocketAddr; 2]) {
    let (listen, admin) = (free_port(), free_port());
    let table = format!(
        "listen:\n  - addr: {listen}\nadmin: {{ addr: {admin} }}\n\
         upstreams:\n  fire:\n    url: http://{upstream}\n    speaks: web-data\n    webhooks:\n      \
         relay: true\n      verify: {{ value: {} }}\n      sign: {{ value: bench-sign }}\n      \
         allow: [127.0.0.0/8]\n      store: {store}\n\
         routes:\n  - {{ prefix: /v2, to: fire }}\n",
        String::from_utf8_lossy(SECRET)
    );
    let config = dir.join("proxy.yaml");
    std::fs::write(&config, table).unwrap();
    let mut child = Command::new(lingo_binary())
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(listen).is_ok() {
            return (child, [listen, admin]);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("lingo did not start");
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `LINGO_BENCH_BIN`, else the release build `cargo build --release` makes here.
fn lingo_binary() -> PathBuf {
    match std::env::var_os("LINGO_BENCH_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => release::build(),
    }
}

/// Starts a crawl through lingo with a webhook to `receiver`: the receiver URL lingo gave
/// the upstream instead.
async fn start_crawl(
    http: &Http,
    lingo: SocketAddr,
    receiver: SocketAddr,
    job_request: &Mutex<JobRequestBody>,
) -> String {
    let body = serde_json::json!({"url": "https://example.com",
        "webhook": format!("http://{receiver}/hook")});
    let request = Request::post(format!("http://{lingo}/v2/crawl"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = http.request(request).await.unwrap();
    assert_eq!(response.status(), 200, "the crawl started");
    let sent = job_request
        .lock()
        .unwrap()
        .clone()
        .expect("the upstream was asked");
    let sent: serde_json::Value = serde_json::from_slice(&sent).unwrap();
    sent["webhook"].as_str().unwrap().to_owned()
}

/// POSTs `events` signed page events to `url`, `concurrency` at a time: each one's time to
/// its response (`None`: not acknowledged with a 200).
async fn send_events(
    http: &Http,
    url: &str,
    events: usize,
    concurrency: usize,
) -> Vec<Option<Duration>> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let senders = (0..concurrency).map(|_| {
        let (http, url, next) = (http.clone(), url.to_owned(), Arc::clone(&next));
        tokio::spawn(async move {
            let mut times = Vec::new();
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= events {
                    return times;
                }
                times.push(send_event(&http, &url, n).await);
            }
        })
    });
    let mut times = Vec::with_capacity(events);
    for sender in senders.collect::<Vec<_>>() {
        times.extend(sender.await.unwrap());
    }
    times
}

/// One event, as the upstream sends it: its time to a 200.
async fn send_event(http: &Http, url: &str, n: usize) -> Option<Duration> {
    let body = serde_json::json!({"success": true, "type": "crawl.page", "id": "bench-job",
        "webhookId": format!("bench-{n}"), "metadata": {},
        "data": [{"markdown": "# A page\n\nOf a benched crawl.", "metadata": {"sourceURL": format!("https://example.com/{n}"), "statusCode": 200}}]})
    .to_string();
    let tag = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET),
        body.as_bytes(),
    );
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let request = Request::post(url)
        .header("content-type", "application/json")
        .header("x-firecrawl-signature", format!("sha256={hex}"))
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let started = Instant::now();
    let response = http.request(request).await.ok()?;
    let status = response.status();
    let _ = response.into_body().collect().await;
    (status == 200).then(|| started.elapsed())
}

/// Waits (up to a minute after the last new delivery) for `events` distinct deliveries:
/// when the last came, or `None` if they never all did.
async fn wait_delivered(received: &Mutex<Received>, events: usize) -> Option<Instant> {
    let mut seen = (0, Instant::now());
    loop {
        let (count, last) = {
            let received = received.lock().unwrap();
            (received.ids.len(), received.last)
        };
        if count >= events {
            return last;
        }
        if count != seen.0 {
            seen = (count, Instant::now());
        } else if seen.1.elapsed() > Duration::from_secs(60) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn get(http: &Http, url: &str) -> String {
    let request = Request::get(url).body(Full::new(Bytes::new())).unwrap();
    let response = http.request(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// Prints the figures; whether every event was acknowledged and delivered.
fn report(
    acks: &mut [Option<Duration>],
    sent_for: Duration,
    delivered_for: Option<Duration>,
    events: usize,
    received: &Received,
    metrics: &str,
) -> bool {
    let acknowledged: Vec<Duration> = {
        let mut times: Vec<Duration> = acks.iter().flatten().copied().collect();
        times.sort();
        times
    };
    let at = |q: f64| {
        acknowledged[((acknowledged.len() as f64 * q) as usize).min(acknowledged.len() - 1)]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "acknowledged: {} of {events} in {:.2} s: {:.0} events/s; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        acknowledged.len(),
        sent_for.as_secs_f64(),
        acknowledged.len() as f64 / sent_for.as_secs_f64(),
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(1.0))
    );
    match delivered_for {
        Some(took) => println!(
            "delivered: {} events in {:.2} s: {:.0} events/s ({} attempts)",
            received.ids.len(),
            took.as_secs_f64(),
            received.ids.len() as f64 / took.as_secs_f64(),
            received.attempts
        ),
        None => println!("delivered: only {} of {events} events", received.ids.len()),
    }
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("lingo_webhook_") && !l.contains("_created"))
    {
        println!("  {line}");
    }
    acknowledged.len() == events && received.ids.len() == events
}
