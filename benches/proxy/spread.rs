//! Several backends: the same translated requests (whole, 32 connections) to an upstream of
//! one `lingo mock` and to an upstream of three, through a lingo of their own, in interleaved
//! rounds: what picking a backend costs (throughput and lingo's CPU a request); then two
//! failover rows, whole and streamed, one of the three backends killed a third of the way
//! through: how many requests failed before their first byte, and how many streams were cut.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use crate::{Http, cpu_of, free_port, load, spawn, stop, wait_up};

const ONE: &str =
    r#"{"model":"one","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#;
const THREE: &str =
    r#"{"model":"three","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#;
const THREE_STREAMED: &str =
    r#"{"model":"three","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#;

/// Runs the rows with `mocks` (three `lingo mock` addresses; the last is `victim`'s, killed in
/// the failover row), printing them.
pub async fn rows(
    dir: &Path,
    mocks: [SocketAddr; 3],
    victim: &mut Child,
    (seconds, rounds): (f64, usize),
) {
    let addr = free_port();
    let table = dir.join("backends.yaml");
    let [a, b, c] = mocks;
    std::fs::write(&table, format!(
        "listen:\n  - addr: {addr}\nupstreams:\n  one: {{ url: \"http://{a}\", speaks: native }}\n  \
         three:\n    speaks: native\n    backends: [{{ url: \"http://{a}\" }}, {{ url: \"http://{b}\" }}, {{ url: \"http://{c}\" }}]\n    health: {{ interval: 1s }}\n\
         limits: {{ max_connections: 20000, max_in_flight: 20000 }}\n\
         models:\n  one: {{ upstream: one, model: llama3.2 }}\n  three: {{ upstream: three, model: llama3.2 }}\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: one }}\n"
    )).unwrap();
    let mut lingo = spawn("", &format!("--config {}", table.display()));
    let http: Http =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(20_000)
            .build_http();
    wait_up(&http, &format!("http://{addr}/healthz")).await;
    let pid = lingo.id();
    let url = format!("http://{addr}/v1/chat/completions");
    let mut measured = [(0.0, 0.0, 0u64, 0.0); 2];
    for _ in 0..rounds {
        for (body, m) in [ONE, THREE].into_iter().zip(&mut measured) {
            let cpu = cpu_of(pid);
            let run = load(&http, &url, body, 32, seconds / rounds as f64).await;
            m.0 += run.ttlb.len() as f64;
            m.1 += cpu_of(pid) - cpu;
            m.2 += run.failed;
            m.3 += run.elapsed;
        }
    }
    println!(
        "\nseveral backends (whole chat completions translated, c=32, {seconds}s in {rounds} rounds):"
    );
    for (name, (served, cpu, failed, elapsed)) in
        ["one backend", "three backends"].iter().zip(measured)
    {
        println!(
            "  {name:<16} {:>9.0} req/s  {:>5.1}µs CPU/request  {failed} failed",
            served / elapsed,
            cpu / served.max(1.0) * 1e6
        );
    }
    let (one, three) = (measured[0], measured[1]);
    println!(
        "  three / one: throughput {:.2}, lingo CPU a request {:.2}",
        (three.0 / three.3) / (one.0 / one.3),
        (three.1 / three.0) / (one.1 / one.0)
    );
    stop(&mut lingo);
    // Each failover row gets a fresh lingo (none of its backends ejected) and the victim
    // started again.
    for (name, body) in [("whole", THREE), ("streamed", THREE_STREAMED)] {
        if victim.try_wait().is_ok_and(|gone| gone.is_some()) {
            *victim = spawn("", &format!("mock --listen {c} --tokens 16"));
            wait_up(&http, &format!("http://{c}/api/tags")).await;
        }
        let mut lingo = spawn("", &format!("--config {}", table.display()));
        wait_up(&http, &format!("http://{addr}/healthz")).await;
        failover(&http, &url, name, body, victim, seconds).await;
        stop(&mut lingo);
    }
}

/// Three backends under load, one killed (SIGKILL) a third of the way through: requests
/// that failed before their first byte (lingo's to send elsewhere), and streams cut after it
/// (each gets one error; none can be sent again).
async fn failover(
    http: &Http,
    url: &str,
    name: &str,
    body: &'static str,
    victim: &mut Child,
    seconds: f64,
) {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let clients: Vec<_> = (0..32)
        .map(|_| {
            let (http, url, counts) = (http.clone(), url.to_owned(), Arc::clone(&counts));
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    let ended = attempt(&http, &url, body).await as usize;
                    counts[ended].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs_f64(seconds / 3.0)).await;
    let _ = victim.kill();
    let _ = victim.wait();
    for client in clients {
        client.await.unwrap();
    }
    let [whole, before, after] = counts
        .as_ref()
        .each_ref()
        .map(|n| n.load(Ordering::Relaxed));
    println!(
        "  failover, {name} (one of three killed mid-run): {} requests, {before} failed before \
         their first byte, {after} cut after it",
        whole + before + after
    );
}

/// How one request ended.
#[derive(Clone, Copy)]
enum Ended {
    Whole = 0,
    BeforeFirstByte = 1,
    AfterFirstByte = 2,
}

/// Sends `body` and reads the response to its end. A stream is whole only with its `[DONE]`
/// and no error event (lingo ends a stream cut upstream with one, in the dialect).
async fn attempt(http: &Http, url: &str, body: &'static str) -> Ended {
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    let Ok(response) = http.request(request).await else {
        return Ended::BeforeFirstByte;
    };
    if !response.status().is_success() {
        return Ended::BeforeFirstByte;
    }
    let streamed = body.contains("\"stream\":true");
    let mut body = response.into_body();
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => read.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..])),
            Err(_) if read.is_empty() => return Ended::BeforeFirstByte,
            Err(_) => return Ended::AfterFirstByte,
        }
    }
    let text = String::from_utf8_lossy(&read);
    let cut = streamed && (!text.contains("[DONE]") || text.contains("\"error\""));
    if cut {
        Ended::AfterFirstByte
    } else {
        Ended::Whole
    }
}
