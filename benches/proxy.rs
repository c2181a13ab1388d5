//! The load bench: the same requests straight to the backend and through lingo, in one run
//! on one machine, printed as a table of absolute figures and ratios (through lingo /
//! direct). `cargo bench --bench proxy` (or `benches/load.sh`).
//!
//! The backend is `lingo mock` in its own process and lingo runs in its own process, both
//! release builds, so neither is measured as part of the other; lingo's CPU and memory are
//! read from `/proc`. A bare TCP relay (this binary again, copying bytes, in a process of its
//! own) is measured beside them: the floor of what any extra hop costs on this machine. The
//! load generator is this file: a small hyper client on tokio, which needs nothing installed,
//! measures time to first and last byte per request (oha and wrk report neither per stream),
//! and counts every token of every stream.
//!
//! The slow streams run three times: clients reach lingo over HTTP/2 (100 streams per
//! connection) and lingo reaches the backend over HTTP/2 (one connection for all); clients
//! over HTTP/1.1 (a connection each) and the backend over HTTP/2; both over HTTP/1.1 (two
//! file descriptors per stream in lingo, so at most (open-file limit - 2000) / 2: 9000 under
//! this machine's limit of 20000 per process).
//!
//! Several backends (`proxy/spread.rs`): the same translated requests to an upstream of one
//! mock and to one of three, through a lingo of their own, and a failover row with one of the
//! three killed mid-run.
//!
//! Limits and budgets (`proxy/limits.rs`, with `LINGO_BENCH_LIMITS`): translated chat
//! completions from a client without limits, from one with limits held in the process and
//! from one with limits in a `redis-server` the bench starts on the loopback, through lingos
//! of their own, in interleaved rounds; then the Redis calls of a client already throttled.
//!
//! Knobs (environment): `LINGO_BENCH_SECONDS` per throughput measurement (default 3; 0 runs
//! only the slow streams), `LINGO_BENCH_ROUNDS` how many interleaved rounds each row's time
//! is measured in (default 3, see `rows`), `LINGO_BENCH_STREAMS` concurrent slow streams
//! (default 10000), `LINGO_BENCH_SLOW` one of the three slow runs only (`http/2-http/2`,
//! `http/1.1-http/2`, `http/1.1-http/1.1`: client side, then upstream side),
//! `LINGO_BENCH_WRAP` a command line to run lingo under (a profiler: `heaptrack -o
//! /tmp/lingo`), `LINGO_BENCH_BIN` the lingo binary to measure, as lingo and as the mock
//! backend (default: the release build as shipped, built by the bench, see `choose_lingo`),
//! `LINGO_BENCH_LIMITS` the limits rows: `1` after the throughput rows, `only` alone (default:
//! not run).

#[path = "proxy/limits.rs"]
mod limits;
#[path = "proxy/nginx.rs"]
mod nginx;
#[path = "proxy/release.rs"]
mod release;
#[path = "proxy/rows.rs"]
mod rows;
#[path = "proxy/spread.rs"]
mod spread;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
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

pub type Http = Client<HttpConnector, Full<Bytes>>;

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The lingo binary measured, for `lingo` and `lingo mock` alike: see [`choose_lingo`].
static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Picks the lingo binary to measure, copied into `dir` first so that a build during the run
/// (`cargo test --release` relinks `target/release/lingo`) cannot swap it for the next start:
/// `LINGO_BENCH_BIN` if set, else lingo as it ships, built here by `cargo build --release`.
/// Not `CARGO_BIN_EXE_lingo`: cargo builds that with the bench's dev-dependencies, among them
/// tokio's `test-util` (for the tests' paused clocks), whose clock takes a lock at every
/// reading: ~1% more instructions a request, measured.
fn choose_lingo(dir: &Path) {
    let built = match std::env::var_os("LINGO_BENCH_BIN") {
        Some(bin) if bin.is_empty() => panic!("LINGO_BENCH_BIN is set but empty"),
        Some(bin) => PathBuf::from(bin),
        None => release::build(),
    };
    let exe = dir.join("lingo");
    if let Err(err) = std::fs::copy(&built, &exe) {
        panic!("copy {} to {}: {err}", built.display(), exe.display());
    }
    eprintln!("lingo under test: {}", built.display());
    EXE.set(exe).expect("lingo is chosen once");
}

/// A child process with the fd limit raised to the hard limit, run under `wrap` (a profiler's
/// command line, or nothing).
fn spawn(wrap: &str, args: &str) -> Child {
    let exe = EXE.get().expect("choose_lingo first");
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n $(ulimit -Hn); exec {wrap} \"$0\" {args}"
        ))
        .arg(exe)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lingo")
}

/// CPU seconds (user + system, all threads) a running process has used, from `/proc`.
pub fn cpu_of(pid: u32) -> f64 {
    cpu_in(format!("/proc/{pid}/stat"))
}

/// CPU seconds (user + system) in a `/proc` `stat` file: a process's (all its threads), or
/// one thread's (`/proc/PID/task/TID/stat`).
pub fn cpu_in(stat: impl AsRef<std::path::Path>) -> f64 {
    let stat = std::fs::read_to_string(stat).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// `(cpu seconds, resident MiB)` of a process.
pub fn usage(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    (cpu_of(pid), rss_kb / 1024.0)
}

/// Ends a child. Under a profiler (`LINGO_BENCH_WRAP`) lingo is the wrapper's child: it is
/// asked to stop (SIGTERM, so that it drains and exits) and the wrapper is given time to write
/// its profile; killing the wrapper alone would leave lingo running, holding its port.
fn stop(child: &mut Child) {
    let wrapped = Command::new("pkill")
        .args(["-TERM", "-x", "-P", &child.id().to_string(), "lingo"])
        .status()
        .is_ok_and(|s| s.success());
    for _ in 0..if wrapped { 600 } else { 0 } {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
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
    read(response, start).await
}

/// The same over one of a few HTTP/2 connections opened by hand (the pooled client would put
/// every stream on one connection, over the server's stream limit).
async fn one_h2(
    sender: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    url: &str,
    body: &'static str,
    headers: &[(&str, &str)],
) -> Result<(Duration, Duration, Bytes), String> {
    let start = Instant::now();
    let mut req = Request::post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender.send_request(req).await.map_err(|e| e.to_string())?;
    read(response, start).await
}

/// Reads a response to its end: (time to first body byte, time to last byte, body).
async fn read(
    response: hyper::Response<hyper::body::Incoming>,
    start: Instant,
) -> Result<(Duration, Duration, Bytes), String> {
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

pub struct Run {
    pub rps: f64,
    pub ttfb: Vec<Duration>,
    pub ttlb: Vec<Duration>,
    pub failed: u64,
    /// Seconds the load ran.
    pub elapsed: f64,
}

impl Run {
    /// Two runs of the same row (two rounds) as one: their requests over their time.
    pub fn merge(self, other: Run) -> Run {
        let (mut ttfb, mut ttlb) = (self.ttfb, self.ttlb);
        ttfb.extend(other.ttfb);
        ttlb.extend(other.ttlb);
        ttfb.sort();
        ttlb.sort();
        let elapsed = self.elapsed + other.elapsed;
        Run {
            rps: ttlb.len() as f64 / elapsed,
            ttfb,
            ttlb,
            failed: self.failed + other.failed,
            elapsed,
        }
    }
}

/// `concurrency` clients sending the same request for `seconds`.
pub async fn load(
    http: &Http,
    url: &str,
    body: &'static str,
    concurrency: usize,
    seconds: f64,
) -> Run {
    load_as(http, url, body, &[], concurrency, seconds).await
}

/// [`load`] with `headers` on every request (a client's key).
pub async fn load_as(
    http: &Http,
    url: &str,
    body: &'static str,
    headers: &'static [(&'static str, &'static str)],
    concurrency: usize,
    seconds: f64,
) -> Run {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let failed = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (http, url, failed) = (http.clone(), url.to_owned(), Arc::clone(&failed));
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < deadline {
                    match one(&http, &url, body, headers).await {
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
        elapsed,
    }
}

pub fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

/// How many streams fit when each costs lingo two file descriptors (client and upstream
/// connection), under the open-file limit lingo inherits, with 2000 to spare.
fn two_fd_streams() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(usize::MAX);
    soft.saturating_sub(2000) / 2
}

/// A bare TCP relay in its own process (this binary again, in relay mode): the floor of what
/// one more hop costs on this machine, with no HTTP in it at all.
fn spawn_relay(listen: SocketAddr, target: SocketAddr) -> Child {
    Command::new(std::env::current_exe().expect("the bench binary"))
        .env("LINGO_BENCH_RELAY", format!("{listen} {target}"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the relay")
}

/// Relay mode: copy bytes both ways between each accepted connection and `target`.
async fn relay(spec: &str) {
    let (listen, target) = spec.split_once(' ').expect("`LISTEN TARGET`");
    let target: SocketAddr = target.parse().unwrap();
    let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
    loop {
        let Ok((mut client, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                return;
            };
            let _ = (client.set_nodelay(true), upstream.set_nodelay(true));
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
    }
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and `cargo test --benches` probe bench binaries.
    }
    if let Ok(spec) = std::env::var("LINGO_BENCH_RELAY") {
        return relay(&spec).await;
    }
    let seconds: f64 = std::env::var("LINGO_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let rounds: usize = std::env::var("LINGO_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(3);
    let streams: usize = std::env::var("LINGO_BENCH_STREAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let dir = std::env::temp_dir().join(format!("lingo-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    choose_lingo(&dir); // before ports are picked: a first build takes minutes
    let mock_addr = free_port();
    let lingo_addr = free_port();
    let table = dir.join("proxy.yaml");
    std::fs::write(&table, format!(
        "listen:\n  - addr: {lingo_addr}\nupstreams:\n  models:\n    url: http://{mock_addr}\n    speaks: native\n  \
         models-h2:\n    url: http://{mock_addr}\n    speaks: native\n    http2: true\n\
         limits: {{ max_connections: 20000, max_in_flight: 20000 }}\n\
         models:\n  gpt-4o-mini: {{ upstream: models, model: llama3.2 }}\n  slow-h2: {{ upstream: models-h2, model: llama3.2 }}\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  - {{ prefix: /api, to: models }}\n"
    )).unwrap();
    let mut mock = spawn("", &format!("mock --listen {mock_addr} --tokens 16"));
    if limits::wanted() == limits::Wanted::Only {
        let failures = if seconds > 0.0 {
            limits::rows(&dir, mock_addr, (seconds, rounds)).await
        } else {
            0
        };
        stop(&mut mock);
        let _ = std::fs::remove_dir_all(&dir);
        if failures > 0 {
            eprintln!("FAILED: {failures} requests failed");
            std::process::exit(1);
        }
        return;
    }
    let relay_addr = free_port();
    let mut relay = spawn_relay(relay_addr, mock_addr);
    // LINGO_BENCH_WRAP: run lingo under a profiler, e.g. `heaptrack -o /tmp/lingo`.
    let wrap = std::env::var("LINGO_BENCH_WRAP").unwrap_or_default();
    let mut lingo = spawn(&wrap, &format!("--config {}", table.display()));
    let http: Http = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(20_000)
        .build_http();
    wait_up(&http, &format!("http://{mock_addr}/api/tags")).await;
    wait_up(&http, &format!("http://{lingo_addr}/healthz")).await;
    wait_up(&http, &format!("http://{relay_addr}/api/tags")).await;
    let pid = lingo.id(); // `sh` exec'd lingo, so the pid is lingo's.

    let nginx_addr = free_port();
    let nginx = nginx::Nginx::start(&dir, nginx_addr, mock_addr);
    if nginx.is_some() {
        wait_up(&http, &format!("http://{nginx_addr}/api/tags")).await;
    }
    let targets = rows::Targets {
        direct: format!("http://{mock_addr}/api/chat"),
        relayed: format!("http://{relay_addr}/api/chat"),
        nginx: nginx
            .as_ref()
            .map(|n| (format!("http://{nginx_addr}/api/chat"), n.pid())),
        through: format!("http://{lingo_addr}/api/chat"),
        translated: format!("http://{lingo_addr}/v1/chat/completions"),
        lingo: pid,
    };
    println!(
        "\nlingo load bench: {seconds}s per row in {rounds} interleaved rounds, mock backend and lingo in their own processes (release)\n"
    );
    // LINGO_BENCH_SECONDS=0: only the slow streams.
    let shapes = if seconds > 0.0 {
        vec![(1, false), (32, false), (1, true), (32, true)]
    } else {
        Vec::new()
    };
    let (rows, mut failures) = rows::throughput(&http, &targets, &shapes, (seconds, rounds)).await;
    rows::ratios(&rows, &shapes);
    drop(nginx);
    if seconds > 0.0 && limits::wanted() == limits::Wanted::Also {
        failures += limits::rows(&dir, mock_addr, (seconds, rounds)).await;
    }
    if seconds > 0.0 {
        // Two more mocks beside the first: an upstream of three, one of them killed.
        let (b, c) = (free_port(), free_port());
        let mut mock_b = spawn("", &format!("mock --listen {b} --tokens 16"));
        let mut mock_c = spawn("", &format!("mock --listen {c} --tokens 16"));
        wait_up(&http, &format!("http://{b}/api/tags")).await;
        wait_up(&http, &format!("http://{c}/api/tags")).await;
        spread::rows(&dir, [mock_addr, b, c], &mut mock_c, (seconds, rounds)).await;
        for child in [&mut mock_b, &mut mock_c] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    // Many slow streams: every token of every stream must arrive. Each run gets a fresh lingo
    // (memory a previous run freed would otherwise be reused and hide what a stream costs)
    // and fresh client connections.
    let mut lost_streams = 0;
    let which = std::env::var("LINGO_BENCH_SLOW").unwrap_or_default();
    let h1_streams = streams.min(two_fd_streams());
    for (client_side, upstream, model, count) in [
        ("HTTP/2", "HTTP/2", "slow-h2", streams),
        ("HTTP/1.1", "HTTP/2", "slow-h2", streams),
        ("HTTP/1.1", "HTTP/1.1", "gpt-4o-mini", h1_streams),
    ] {
        let name = format!("{client_side}-{upstream}");
        if !which.is_empty() && !name.eq_ignore_ascii_case(&which) {
            continue;
        }
        stop(&mut lingo);
        lingo = spawn(&wrap, &format!("--config {}", table.display()));
        let http: Http = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(20_000)
            .build_http();
        wait_up(&http, &format!("http://{lingo_addr}/healthz")).await;
        let pid = lingo.id();
        let clients = if client_side == "HTTP/2" {
            h2_connections(lingo_addr, count.div_ceil(100)).await
        } else {
            Clients::Http1(Box::new(http))
        };
        let slow = slow_streams(&clients, &targets.translated, model, count, pid).await;
        println!(
            "\n{count} concurrent translated streams, clients -> lingo over {client_side}, lingo -> backend over {upstream}, a token every 100 ms \
             ({TOKENS} tokens each): lingo RSS before {:.1} MiB, peak {:.1} MiB, {:.1} KiB per open stream; \
             {}/{} tokens arrived ({} streams incomplete); lingo CPU {:.0}% over {:.1}s",
            slow.rss_before,
            slow.peak_rss,
            (slow.peak_rss - slow.rss_before) * 1024.0 / count as f64,
            slow.received,
            count as u64 * TOKENS,
            slow.lost,
            slow.cpu_percent,
            slow.seconds,
        );
        lost_streams += slow.lost;
    }
    for child in [&mut lingo, &mut mock, &mut relay] {
        stop(child);
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failures > 0 || lost_streams > 0 {
        eprintln!("FAILED: {failures} requests failed, {lost_streams} streams lost tokens");
        std::process::exit(1);
    }
}

/// Tokens per slow stream.
const TOKENS: u64 = 20;

/// How the bench's clients reach lingo.
#[derive(Clone)]
enum Clients {
    /// One HTTP/1.1 connection per stream.
    Http1(Box<Http>),
    /// Streams spread over HTTP/2 connections (prior knowledge), 100 per connection.
    Http2(Vec<hyper::client::conn::http2::SendRequest<Full<Bytes>>>),
}

/// `n` HTTP/2 connections to `addr`.
async fn h2_connections(addr: SocketAddr, n: usize) -> Clients {
    let mut senders = Vec::with_capacity(n);
    for _ in 0..n {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http2::handshake(
            TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tcp),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        senders.push(sender);
    }
    Clients::Http2(senders)
}

struct Slow {
    rss_before: f64,
    peak_rss: f64,
    received: u64,
    lost: u64,
    cpu_percent: f64,
    seconds: f64,
}

/// `count` concurrent streamed chat completions for `model`, the backend sending a token
/// every 100 ms; counts every token that arrives and samples lingo's memory meanwhile.
async fn slow_streams(clients: &Clients, url: &str, model: &str, count: usize, pid: u32) -> Slow {
    let body: &'static str = Box::leak(
        format!(
            r#"{{"model":"{model}","stream":true,"messages":[{{"role":"user","content":"hello there"}}]}}"#
        )
        .into_boxed_str(),
    );
    let (cpu0, rss_before) = usage(pid);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        let url = url.to_owned();
        let clients = match clients {
            Clients::Http1(http) => Clients::Http1(http.clone()),
            Clients::Http2(senders) => Clients::Http2(vec![senders[i % senders.len()].clone()]),
        };
        tasks.push(tokio::spawn(async move {
            let knobs = [("x-mock", "tokens=20,token_delay=100ms")];
            let response = match clients {
                Clients::Http1(http) => one(&http, &url, body, &knobs).await,
                Clients::Http2(mut sender) => one_h2(&mut sender[0], &url, body, &knobs).await,
            };
            match response {
                Ok((_, _, body)) => body.windows(9).filter(|w| w == b"\"content\"").count() as u64,
                Err(_) => 0,
            }
        }));
        if i % 500 == 499 {
            tokio::time::sleep(Duration::from_millis(20)).await; // do not overflow the accept backlog
        }
    }
    let mut peak_rss: f64 = 0.0;
    while !tasks.iter().all(|t| t.is_finished()) && started.elapsed() < Duration::from_secs(120) {
        peak_rss = peak_rss.max(usage(pid).1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (cpu1, _) = usage(pid);
    let (mut received, mut lost) = (0, 0);
    for task in tasks {
        let got = task.await.unwrap_or(0);
        received += got;
        // The first delta carries `content` too: 20 tokens = 20 content deltas.
        if got != TOKENS {
            lost += 1;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Slow {
        rss_before,
        peak_rss,
        received,
        lost,
        cpu_percent: (cpu1 - cpu0) / seconds * 100.0,
        seconds,
    }
}
