//! Several backends: the same translated requests (whole, 32 connections) to an upstream of
//! one `lingo mock` and to an upstream of three, through a lingo of their own, in interleaved
//! rounds: what picking a backend costs (throughput and lingo's CPU a request); then a
//! failover row, one of the three backends killed a third of the way through: how many
//! requests failed.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;

use crate::{Http, cpu_of, free_port, load, spawn, stop, wait_up};

const ONE: &str =
    r#"{"model":"one","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#;
const THREE: &str =
    r#"{"model":"three","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#;

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
    failover(&http, &url, victim, seconds).await;
    stop(&mut lingo);
}

/// Three backends under load, one killed (SIGKILL) a third of the way through.
async fn failover(http: &Http, url: &str, victim: &mut Child, seconds: f64) {
    let running = load(http, url, THREE, 32, seconds);
    let kill = async {
        tokio::time::sleep(std::time::Duration::from_secs_f64(seconds / 3.0)).await;
        let _ = victim.kill();
    };
    let (run, ()) = tokio::join!(running, kill);
    println!(
        "  failover (one of three killed mid-run): {:.0} req/s, {} of {} requests failed",
        run.rps,
        run.failed,
        run.ttlb.len() as u64 + run.failed
    );
}
