//! The load bench: the same requests straight to the backend and through lingo, in one run
//! on one machine, printed as a table of absolute figures and ratios (through lingo /
//! direct). `cargo bench --bench proxy` (or `bench/load.sh`).
//!
//! The backend is `lingo mock` in its own process and lingo runs in its own process, both
//! release builds, so neither is measured as part of the other; lingo's CPU and memory are
//! read from `/proc`. The load generator is this file: a small hyper client on tokio, which
//! needs nothing installed, measures time to first and last byte per request (oha and wrk
//! report neither per stream), and counts every token of every stream.
//!
//! Knobs (environment): `LINGO_BENCH_SECONDS` per throughput measurement (default 3),
//! `LINGO_BENCH_STREAMS` concurrent slow streams (default 9000: each open stream costs lingo
//! two file descriptors and the machine's limit is 20000 per process).

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

type Http = Client<HttpConnector, Full<Bytes>>;

const CHAT_NATIVE: &str =
    r#"{"model":"llama3.2","stream":STREAM,"messages":[{"role":"user","content":"hello there"}]}"#;
const CHAT_OPENAI: &str = r#"{"model":"gpt-4o-mini","stream":STREAM,"messages":[{"role":"user","content":"hello there"}]}"#;

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A child process with the fd limit raised to the hard limit.
fn spawn(args: &str) -> Child {
    let exe = env!("CARGO_BIN_EXE_lingo");
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n $(ulimit -Hn); exec {exe} {args}"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lingo")
}

/// `(cpu seconds, resident MiB)` of a process.
fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    (ticks / 100.0, rss_kb / 1024.0)
}

async fn wait_up(http: &Http, url: &str) {
    for _ in 0..200 {
        if http
            .request(Request::get(url).body(Full::default()).unwrap())
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} did not come up");
}

/// One request: (time to first body byte, time to last byte, body bytes).
async fn one(
    http: &Http,
    url: &str,
    body: &'static str,
    headers: &[(&str, &str)],
) -> Result<(Duration, Duration, Bytes), String> {
    let start = Instant::now();
    let mut req = Request::post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = http
        .request(
            req.body(Full::new(Bytes::from_static(body.as_bytes())))
                .unwrap(),
        )
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    let mut body = response.into_body();
    let mut first = None;
    let mut all = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if let Ok(data) = frame.into_data() {
            first.get_or_insert_with(|| start.elapsed());
            all.extend_from_slice(&data);
        }
    }
    let last = start.elapsed();
    Ok((first.unwrap_or(last), last, Bytes::from(all)))
}

struct Run {
    rps: f64,
    ttfb: Vec<Duration>,
    ttlb: Vec<Duration>,
    failed: u64,
}

/// `concurrency` clients sending the same request for `seconds`.
async fn load(http: &Http, url: &str, body: &'static str, concurrency: usize, seconds: f64) -> Run {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let failed = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (http, url, failed) = (http.clone(), url.to_owned(), Arc::clone(&failed));
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < deadline {
                    match one(&http, &url, body, &[]).await {
                        Ok((first, last, _)) => times.push((first, last)),
                        Err(_) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                times
            })
        })
        .collect();
    let started = Instant::now();
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (mut ttfb, mut ttlb): (Vec<_>, Vec<_>) = times.into_iter().unzip();
    ttfb.sort();
    ttlb.sort();
    Run {
        rps: ttlb.len() as f64 / elapsed,
        ttfb,
        ttlb,
        failed: failed.load(Ordering::Relaxed),
    }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and `cargo test --benches` probe bench binaries.
    }
    let seconds: f64 = std::env::var("LINGO_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let streams: usize = std::env::var("LINGO_BENCH_STREAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(9000);
    let mock_addr = free_port();
    let lingo_addr = free_port();
    let dir = std::env::temp_dir().join(format!("lingo-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let table = dir.join("proxy.yaml");
    std::fs::write(&table, format!(
        "listen:\n  - addr: {lingo_addr}\nupstreams:\n  models:\n    url: http://{mock_addr}\n    speaks: native\n\
         models:\n  gpt-4o-mini: {{ upstream: models, model: llama3.2 }}\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  - {{ prefix: /api, to: models }}\n"
    )).unwrap();
    let mut mock = spawn(&format!("mock --listen {mock_addr} --tokens 16"));
    let mut lingo = spawn(&format!("--config {}", table.display()));
    let http: Http = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(20_000)
        .build_http();
    wait_up(&http, &format!("http://{mock_addr}/api/tags")).await;
    wait_up(&http, &format!("http://{lingo_addr}/healthz")).await;
    let pid = lingo.id(); // `sh` exec'd lingo, so the pid is lingo's.

    let direct = format!("http://{mock_addr}/api/chat");
    let through = format!("http://{lingo_addr}/api/chat");
    let translated = format!("http://{lingo_addr}/v1/chat/completions");
    let whole_native: &'static str =
        Box::leak(CHAT_NATIVE.replace("STREAM", "false").into_boxed_str());
    let whole_openai: &'static str =
        Box::leak(CHAT_OPENAI.replace("STREAM", "false").into_boxed_str());
    let stream_native: &'static str =
        Box::leak(CHAT_NATIVE.replace("STREAM", "true").into_boxed_str());
    let stream_openai: &'static str =
        Box::leak(CHAT_OPENAI.replace("STREAM", "true").into_boxed_str());

    println!(
        "\nlingo load bench: {seconds}s per row, mock backend and lingo in their own processes (release)\n"
    );
    println!(
        "{:<44} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7} {:>9} {:>8}",
        "scenario",
        "req/s",
        "ttfb p50",
        "ttfb p99",
        "last p50",
        "last p99",
        "failed",
        "lingo cpu",
        "rss MiB"
    );
    let mut failures = 0;
    let mut rows = Vec::new();
    for (concurrency, stream) in [(1, false), (32, false), (1, true), (32, true)] {
        let kind = if stream { "streamed" } else { "whole" };
        for (name, url, body, is_lingo) in [
            (
                "direct to backend (native)",
                &direct,
                if stream { stream_native } else { whole_native },
                false,
            ),
            (
                "through lingo, native pass-through",
                &through,
                if stream { stream_native } else { whole_native },
                true,
            ),
            (
                "through lingo, chat-completions translated",
                &translated,
                if stream { stream_openai } else { whole_openai },
                true,
            ),
        ] {
            let (cpu0, _) = usage(pid);
            let run = load(&http, url, body, concurrency, seconds).await;
            let (cpu1, rss) = usage(pid);
            failures += run.failed;
            let cpu = if is_lingo {
                format!("{:.0}%", (cpu1 - cpu0) / seconds * 100.0)
            } else {
                "-".into()
            };
            let label = format!("{kind} c={concurrency} {name}");
            println!(
                "{:<44} {:>9.0} {:>9.0}µ {:>9.0}µ {:>9.0}µ {:>9.0}µ {:>7} {:>9} {:>8.1}",
                label,
                run.rps,
                pct(&run.ttfb, 0.5),
                pct(&run.ttfb, 0.99),
                pct(&run.ttlb, 0.5),
                pct(&run.ttlb, 0.99),
                run.failed,
                cpu,
                rss
            );
            rows.push((concurrency, stream, name, run));
        }
    }
    println!("\nratios (through lingo / direct, same run):");
    for (concurrency, stream) in [(1, false), (32, false), (1, true), (32, true)] {
        let pick = |n: &str| {
            rows.iter()
                .find(|r| r.0 == concurrency && r.1 == stream && r.2.contains(n))
                .map(|r| &r.3)
                .unwrap()
        };
        let (d, p, t) = (pick("direct"), pick("pass-through"), pick("translated"));
        println!(
            "  {} c={concurrency}: throughput pass-through {:.2}, translated {:.2} (translated / pass-through {:.2}); median added latency pass-through {:+.0}µs, translated {:+.0}µs",
            if stream { "streamed" } else { "whole" },
            p.rps / d.rps,
            t.rps / d.rps,
            t.rps / p.rps,
            pct(&p.ttlb, 0.5) - pct(&d.ttlb, 0.5),
            pct(&t.ttlb, 0.5) - pct(&d.ttlb, 0.5)
        );
    }

    // Many slow streams: every token of every stream must arrive.
    let (_, idle_rss) = usage(pid);
    let tokens = 20;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(streams);
    for i in 0..streams {
        let (http, url) = (http.clone(), translated.clone());
        tasks.push(tokio::spawn(async move {
            let knobs = "tokens=20,token_delay=100ms";
            match one(&http, &url, stream_openai_slow(), &[("x-mock", knobs)]).await {
                Ok((_, _, body)) => body.windows(9).filter(|w| w == b"\"content\"").count() as u64,
                Err(_) => 0,
            }
        }));
        if i % 500 == 499 {
            tokio::time::sleep(Duration::from_millis(20)).await; // do not overflow the accept backlog
        }
    }
    let mut peak_rss: f64 = 0.0;
    let (cpu0, _) = usage(pid);
    while !tasks.iter().all(|t| t.is_finished()) && started.elapsed() < Duration::from_secs(120) {
        peak_rss = peak_rss.max(usage(pid).1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (cpu1, _) = usage(pid);
    let mut lost_streams = 0;
    let mut received = 0;
    for task in tasks {
        let got = task.await.unwrap_or(0);
        received += got;
        // The first delta carries `content` too: 20 tokens = 20 content deltas.
        if got != tokens {
            lost_streams += 1;
        }
    }
    let expected = streams as u64 * tokens;
    println!(
        "\n{streams} concurrent translated streams, a token every 100 ms ({tokens} tokens each): lingo RSS idle {idle_rss:.1} MiB, peak {peak_rss:.1} MiB, \
         {:.1} KiB per open stream; {received}/{expected} tokens arrived ({lost_streams} streams incomplete); lingo CPU {:.0}% over {:.1}s",
        (peak_rss - idle_rss) * 1024.0 / streams as f64,
        (cpu1 - cpu0) / started.elapsed().as_secs_f64() * 100.0,
        started.elapsed().as_secs_f64()
    );
    for child in [&mut lingo, &mut mock] {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failures > 0 || lost_streams > 0 {
        eprintln!("FAILED: {failures} requests failed, {lost_streams} streams lost tokens");
        std::process::exit(1);
    }
}

fn stream_openai_slow() -> &'static str {
    r#"{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#
}
