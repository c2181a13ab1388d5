//! Limits and budgets (`LINGO_BENCH_LIMITS`): the same translated chat completions through
//! lingo from a client without limits, from one whose limits are held in the process, and
//! from one whose limits are in a `redis-server` on the loopback (started here on a free
//! port; without one, those rows and the throttled check are skipped), in interleaved rounds at
//! each shape. Printed: throughput and lingo's CPU a request against the client without
//! limits, and the median each adds (at c=1, what one request waits for its limits).
//!
//! The limited client's limits never refuse: a rate of requests (with Redis, a script call a
//! request) and a budget of tokens (the request's body read for its estimate; the answer's
//! usage settles it, with Redis in a call off the answer's path for each 10 ms of the
//! client's settlements). A third client has the rate of requests alone, in Redis: one
//! script call a request and nothing else, what one round trip adds. Beside lingo's CPU a
//! request, Redis's own, and the script calls Redis counted a request (`INFO commandstats`);
//! after the rows, the floor of a round trip: a `PING` and lingo's own script call sent from
//! the bench one at a time, with the bench's CPU for each. The rows without limits and with limits in the process are one lingo; the Redis rows are
//! a lingo of their own with the same table and a `quota_store`.
//!
//! Then a throttled client (one request an hour): once Redis has refused it, [`THROTTLED`]
//! more requests, one at a time, must each be refused by lingo without calling Redis. The
//! script calls Redis counts meanwhile are printed (expected 0). lingo's heartbeat calls a
//! script once a second, so the requests start just after one and end well within the second.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};

use crate::rows::body;
use crate::{Http, Run, cpu_of, free_port, load_as, pct, spawn, stop, wait_up};

/// Requests of the throttled client counted after its first refusal.
const THROTTLED: usize = 1000;

const FREE: &[(&str, &str)] = &[("authorization", "Bearer kf")];
const LIMITED: &[(&str, &str)] = &[("authorization", "Bearer ka")];
const COUNTED: &[(&str, &str)] = &[("authorization", "Bearer kr")];
const CAPPED: &str = "Bearer kc";

const OFF: &str = "through lingo, no limits";
const IN_PROCESS: &str = "through lingo, limits in the process";
const IN_REDIS: &str = "through lingo, limits in Redis (loopback)";
const REQUESTS_IN_REDIS: &str = "through lingo, requests only, in Redis";

/// Whether the limits rows run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Unset (or `0`).
    No,
    /// `1`: after the other throughput rows.
    Also,
    /// `only`: the limits rows alone.
    Only,
}

/// `LINGO_BENCH_LIMITS`.
pub fn wanted() -> Wanted {
    match std::env::var("LINGO_BENCH_LIMITS")
        .unwrap_or_default()
        .as_str()
    {
        "" | "0" => Wanted::No,
        "1" => Wanted::Also,
        "only" => Wanted::Only,
        other => panic!("LINGO_BENCH_LIMITS is 1 or only, not `{other}`"),
    }
}

/// The route table of the limits rows: clients `free` (no limits), `team-a` (limits that
/// never refuse), `team-r` (a request limit alone, that never refuses) and `capped` (one
/// request an hour), to the mock at `mock`; counters in the process, or in the Redis at
/// `store`.
fn table(addr: SocketAddr, mock: SocketAddr, store: Option<SocketAddr>) -> String {
    let mut table = format!(
        "listen:\n  - addr: {addr}\n\
         clients:\n  - name: free\n    key: {{ value: kf }}\n\
         \x20 - name: team-a\n    key: {{ value: ka }}\n    quota:\n      \
         - {{ requests: 100000000, per: 1m }}\n      - {{ tokens: 1000000000, per: 1d }}\n\
         \x20 - name: team-r\n    key: {{ value: kr }}\n    quota:\n      \
         - {{ requests: 100000000, per: 1m }}\n\
         \x20 - name: capped\n    key: {{ value: kc }}\n    quota:\n      - {{ requests: 1, per: 1h }}\n\
         upstreams:\n  models:\n    url: http://{mock}\n    speaks: native\n\
         limits: {{ max_connections: 20000, max_in_flight: 20000 }}\n\
         models:\n  gpt-4o-mini: {{ upstream: models, model: llama3.2 }}\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n"
    );
    if let Some(redis) = store {
        table.push_str(&format!(
            "quota_store:\n  redis: redis://{redis}\n  timeout: 20ms\n"
        ));
    }
    table
}

/// A `redis-server` of the bench's own on the loopback, nothing written to disk, stopped
/// when dropped.
struct Redis {
    child: Child,
    addr: SocketAddr,
}

impl Redis {
    /// `None` (and says so) where there is no `redis-server`.
    fn start(dir: &Path) -> Option<Redis> {
        let addr = free_port();
        let started = Command::new("redis-server")
            .args(["--port", &addr.port().to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .spawn();
        let child = match started {
            Ok(child) => child,
            Err(err) => {
                println!(
                    "  no redis-server ({err}; apt-get install redis-server): the Redis row and the throttled check are skipped"
                );
                return None;
            }
        };
        let redis = Redis { child, addr };
        for _ in 0..100 {
            if TcpStream::connect(addr).is_ok() {
                return Some(redis);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not start on {addr}");
    }

    fn cpu(&self) -> f64 {
        cpu_of(self.child.id())
    }

    /// Script calls Redis has counted (`EVAL`, `EVALSHA` and their read-only forms), refused
    /// ones included.
    fn script_calls(&self) -> u64 {
        self.scripts().0
    }

    /// Script calls Redis has counted, and the µs it spent running them, from `INFO
    /// commandstats`, asked on a connection of its own.
    fn scripts(&self) -> (u64, u64) {
        let mut redis = TcpStream::connect(self.addr).expect("connect to redis-server");
        redis.write_all(b"INFO commandstats\r\n").unwrap();
        let mut reader = BufReader::new(redis);
        let mut head = String::new();
        reader.read_line(&mut head).unwrap();
        let len: usize = (head.trim().strip_prefix('$'))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("INFO answered {head:?}"));
        let mut info = vec![0; len + 2];
        reader.read_exact(&mut info).unwrap();
        let info = String::from_utf8_lossy(&info);
        let counted = |stats: &str, name: &str| -> u64 {
            (stats.split(','))
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        (info.lines())
            .filter_map(|line| line.strip_prefix("cmdstat_eval")?.split_once(':'))
            .map(|(_, stats)| {
                let calls = counted(stats, "calls") + counted(stats, "rejected_calls");
                (calls, counted(stats, "usec"))
            })
            .fold((0, 0), |(c, u), (calls, usec)| (c + calls, u + usec))
    }

    /// `n` `PING`s sent one at a time from this process, as `call`: the floor of any call
    /// to Redis on this machine, lingo's included.
    fn ping(&self, n: usize) -> (f64, f64) {
        self.call(b"*1\r\n$4\r\nPING\r\n", n)
    }

    /// `n` calls of `command` (RESP) sent one at a time from this thread, each read to its
    /// answer's end (its last line): their median µs, and the thread's CPU µs a call.
    fn call(&self, command: &[u8], n: usize) -> (f64, f64) {
        let cpu = || crate::cpu_in("/proc/thread-self/stat");
        let cpu_before = cpu();
        let redis = TcpStream::connect(self.addr).expect("connect to redis-server");
        let _ = redis.set_nodelay(true);
        let mut reader = BufReader::new(redis.try_clone().unwrap());
        let mut writer = redis;
        let mut first = String::new();
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            writer.write_all(command).unwrap();
            first.clear();
            reader.read_line(&mut first).unwrap();
            // An array of numbers (a script's reply): one more line each.
            let more = first
                .strip_prefix('*')
                .map_or(0, |n| n.trim().parse().unwrap());
            for _ in 0..more {
                reader.read_line(&mut String::new()).unwrap();
            }
            times.push(start.elapsed());
        }
        let cpu_us = (cpu() - cpu_before) / n as f64 * 1e6;
        times.sort();
        (pct(&times, 0.5), cpu_us)
    }

    /// The script call lingo makes to admit a request that `send` sends for `client`, as
    /// Redis's `MONITOR` shows it, in RESP: to send it again from here.
    async fn lingos_call<F: Future>(&self, client: &str, send: F) -> Vec<u8> {
        let monitor = TcpStream::connect(self.addr).expect("connect to redis-server");
        let mut lines = BufReader::new(monitor.try_clone().unwrap());
        (&monitor).write_all(b"MONITOR\r\n").unwrap();
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        send.await;
        let key = format!("\"lingo:quota:{{{client}}}\"");
        loop {
            line.clear();
            lines.read_line(&mut line).unwrap();
            if line.contains("\"EVALSHA\"") && line.contains(&key) {
                break;
            }
        }
        // `... [0 127.0.0.1:port] "EVALSHA" "<sha>" "1" ...`: no argument has a quote.
        let args: Vec<&str> = line.trim_end().split('"').skip(1).step_by(2).collect();
        let mut resp = format!("*{}\r\n", args.len());
        for arg in args {
            resp.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        resp.into_bytes()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One row of a shape: who sends, to which lingo, and whether its limits are in Redis.
struct Scenario {
    name: &'static str,
    url: String,
    key: &'static [(&'static str, &'static str)],
    lingo: u32,
    redis: bool,
}

/// One row's rounds so far.
#[derive(Default)]
struct Measured {
    run: Option<Run>,
    lingo_cpu: f64,
    redis_cpu: f64,
    calls: u64,
    /// µs Redis spent running scripts.
    script_us: u64,
}

/// One measured row.
struct Row {
    concurrency: usize,
    stream: bool,
    name: &'static str,
    run: Run,
    /// lingo's CPU µs a request.
    lingo_us: f64,
    /// Redis's CPU µs a request and its script calls a request, for the Redis row.
    redis: Option<(f64, f64)>,
}

/// Runs the limits rows against the mock at `mock`, then the throttled check, printing them;
/// returns the requests that failed (a throttled request answered otherwise than 429
/// included).
pub async fn rows(dir: &Path, mock: SocketAddr, (seconds, rounds): (f64, usize)) -> u64 {
    println!(
        "\nlimits and budgets: translated chat completions from a client without limits, with limits in the process, with limits in Redis ({seconds}s per row in {rounds} interleaved rounds)"
    );
    let redis = Redis::start(dir);
    let http: Http =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(20_000)
            .build_http();
    wait_up(&http, &format!("http://{mock}/api/tags")).await;
    let mut lingos = Vec::new();
    let mut start = |name: &str, store: Option<SocketAddr>| {
        let addr = free_port();
        let path = dir.join(name);
        std::fs::write(&path, table(addr, mock, store)).unwrap();
        lingos.push(spawn("", &format!("--config {}", path.display())));
        (addr, lingos.last().unwrap().id())
    };
    let (embedded, embedded_pid) = start("limits.yaml", None);
    let shared = redis
        .as_ref()
        .map(|r| start("limits-redis.yaml", Some(r.addr)));
    let url = |addr: SocketAddr| format!("http://{addr}/v1/chat/completions");
    let mut scenarios = vec![
        Scenario {
            name: OFF,
            url: url(embedded),
            key: FREE,
            lingo: embedded_pid,
            redis: false,
        },
        Scenario {
            name: IN_PROCESS,
            url: url(embedded),
            key: LIMITED,
            lingo: embedded_pid,
            redis: false,
        },
    ];
    if let Some((addr, pid)) = shared {
        scenarios.push(Scenario {
            name: IN_REDIS,
            url: url(addr),
            key: LIMITED,
            lingo: pid,
            redis: true,
        });
        scenarios.push(Scenario {
            name: REQUESTS_IN_REDIS,
            url: url(addr),
            key: COUNTED,
            lingo: pid,
            redis: true,
        });
    }
    for scenario in &scenarios {
        let healthz = scenario.url.replace("/v1/chat/completions", "/healthz");
        wait_up(&http, &healthz).await;
    }

    println!(
        "{:<52} {:>9} {:>10} {:>10} {:>7} {:>9} {:>9} {:>11}",
        "scenario",
        "req/s",
        "last p50",
        "last p99",
        "failed",
        "lingo cpu",
        "redis cpu",
        "redis calls"
    );
    let shapes = [(1, false), (32, false), (1, true), (32, true)];
    let mut rows = Vec::new();
    let mut failures = 0;
    // Script calls in the Redis rows, and the µs Redis ran them for.
    let mut scripts = (0, 0);
    for (concurrency, stream) in shapes {
        let mut measured: Vec<Measured> = scenarios.iter().map(|_| Measured::default()).collect();
        for _ in 0..rounds {
            for (s, so_far) in scenarios.iter().zip(&mut measured) {
                let redis = redis.as_ref().filter(|_| s.redis);
                let lingo0 = cpu_of(s.lingo);
                let (redis0, scripts0) = redis.map_or((0.0, (0, 0)), |r| (r.cpu(), r.scripts()));
                let slice = seconds / rounds as f64;
                let run =
                    load_as(&http, &s.url, body(true, stream), s.key, concurrency, slice).await;
                // The last answers' settlements, off their path, land in their own row.
                tokio::time::sleep(Duration::from_millis(20)).await;
                so_far.lingo_cpu += cpu_of(s.lingo) - lingo0;
                if let Some(r) = redis {
                    so_far.redis_cpu += r.cpu() - redis0;
                    let scripts = r.scripts();
                    so_far.calls += scripts.0 - scripts0.0;
                    so_far.script_us += scripts.1 - scripts0.1;
                }
                so_far.run = Some(match so_far.run.take() {
                    Some(before) => before.merge(run),
                    None => run,
                });
            }
        }
        for (s, m) in scenarios.iter().zip(measured) {
            scripts = (scripts.0 + m.calls, scripts.1 + m.script_us);
            let run = m.run.expect("at least one round");
            let served = (run.ttlb.len() as u64 + run.failed).max(1) as f64;
            let row = Row {
                concurrency,
                stream,
                name: s.name,
                lingo_us: m.lingo_cpu / served * 1e6,
                redis: s
                    .redis
                    .then(|| (m.redis_cpu / served * 1e6, m.calls as f64 / served)),
                run,
            };
            failures += row.run.failed;
            print_row(&row);
            rows.push(row);
        }
    }
    ratios(&rows, &shapes);
    if let (Some(redis), Some((addr, _))) = (&redis, shared) {
        let counted = url(addr);
        let request = status(&http, &counted, COUNTED[0].1);
        let admit = redis.lingos_call("team-r", request).await;
        let (ping, ping_cpu) = redis.ping(5000);
        let (call, call_cpu) = redis.call(&admit, 5000);
        let pick = |name| {
            rows.iter()
                .find(|r| r.concurrency == 1 && !r.stream && r.name == name)
        };
        let lingos = match (pick(REQUESTS_IN_REDIS), pick(IN_PROCESS)) {
            (Some(redis), Some(local)) => redis.lingo_us - local.lingo_us,
            _ => f64::NAN,
        };
        println!(
            "  Redis: a script call ran {:.1}µs inside Redis (INFO commandstats); from the bench, one at a time: a PING p50 {ping:.0}µs ({ping_cpu:.0}µs of the bench's CPU a call), the script call lingo makes for a request limit p50 {call:.0}µs ({call_cpu:.0}µs of CPU): the floor of what one round trip adds here; lingo's CPU for that call, whole c=1 (the request limit in Redis against limits in the process): {lingos:.0}µs a request",
            scripts.1 as f64 / scripts.0.max(1) as f64,
        );
    }
    if let (Some(redis), Some((addr, _))) = (&redis, shared) {
        failures += throttled(&http, &url(addr), redis).await;
    }
    for lingo in &mut lingos {
        stop(lingo);
    }
    failures
}

fn print_row(row: &Row) {
    let kind = if row.stream { "streamed" } else { "whole" };
    let label = format!("{kind} c={} {}", row.concurrency, row.name);
    let (redis_us, calls) = row.redis.map_or(("-".into(), "-".into()), |(us, calls)| {
        (format!("{us:.0}µs"), format!("{calls:.2}/req"))
    });
    let run = &row.run;
    println!(
        "{:<52} {:>9.0} {:>9.0}µ {:>9.0}µ {:>7} {:>9} {:>9} {:>11}",
        label,
        run.rps,
        pct(&run.ttlb, 0.5),
        pct(&run.ttlb, 0.99),
        run.failed,
        format!("{:.0}µs", row.lingo_us),
        redis_us,
        calls,
    );
}

/// Per shape: throughput and lingo's CPU a request against the client without limits (with
/// Redis's CPU added, for its row), and the median latency limits add.
fn ratios(rows: &[Row], shapes: &[(usize, bool)]) {
    println!(
        "\nratios (same run) against no limits: throughput, lingo's CPU a request (with Redis's), added median:"
    );
    for &(concurrency, stream) in shapes {
        let pick = |n: &str| {
            rows.iter()
                .find(|r| r.concurrency == concurrency && r.stream == stream && r.name == n)
        };
        let (Some(off), Some(local)) = (pick(OFF), pick(IN_PROCESS)) else {
            continue;
        };
        let kind = if stream { "streamed" } else { "whole" };
        let vs = |row: &Row| row.run.rps / off.run.rps;
        let cpu = |row: &Row| row.lingo_us / off.lingo_us;
        let added = |row: &Row| pct(&row.run.ttlb, 0.5) - pct(&off.run.ttlb, 0.5);
        let in_redis = |name: &str| {
            pick(name).map_or("-".into(), |r| {
                let with_redis = (r.lingo_us + r.redis.map_or(0.0, |x| x.0)) / off.lingo_us;
                format!(
                    "throughput {:.2}, CPU {:.2} ({with_redis:.2}), median {:+.0}µs",
                    vs(r),
                    cpu(r),
                    added(r)
                )
            })
        };
        println!(
            "  {kind} c={concurrency}: in the process: throughput {:.2}, CPU {:.2}, median {:+.0}µs; in Redis: {}; requests only, in Redis: {}",
            vs(local),
            cpu(local),
            added(local),
            in_redis(IN_REDIS),
            in_redis(REQUESTS_IN_REDIS),
        );
    }
}

/// The throttled client: its first request admitted, its second refused by Redis; then
/// [`THROTTLED`] more, one at a time, just after a heartbeat, and the script calls Redis
/// counted meanwhile. Returns the answers that were not what they should be.
async fn throttled(http: &Http, url: &str, redis: &Redis) -> u64 {
    let first = status(http, url, CAPPED).await;
    let second = status(http, url, CAPPED).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Wait for a heartbeat's call: the next is a second away.
    let mut before = redis.script_calls();
    let waited = Instant::now();
    while waited.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let now = redis.script_calls();
        if now != before {
            before = now;
            break;
        }
    }
    let started = Instant::now();
    let (mut refused, mut other) = (0, 0);
    for _ in 0..THROTTLED {
        match status(http, url, CAPPED).await {
            Some(StatusCode::TOO_MANY_REQUESTS) => refused += 1,
            _ => other += 1,
        }
    }
    let elapsed = started.elapsed();
    let calls = redis.script_calls() - before;
    let show = |s: Option<StatusCode>| s.map_or("no answer".into(), |s| s.as_u16().to_string());
    println!(
        "\nthrottled client (1 request an hour, limits in Redis): first request {}, second {} (refused by Redis); \
         then {THROTTLED} requests one at a time in {:.0} ms: {refused} refused (429), {other} otherwise; \
         Redis script calls meanwhile: {calls} (expected 0{})",
        show(first),
        show(second),
        elapsed.as_secs_f64() * 1e3,
        if elapsed >= Duration::from_millis(900) {
            "; a heartbeat of lingo's may be among them"
        } else {
            ""
        },
    );
    if calls > 0 {
        eprintln!("limits: {calls} Redis calls for {THROTTLED} requests of a throttled client");
    }
    other
        + u64::from(first != Some(StatusCode::OK))
        + u64::from(second != Some(StatusCode::TOO_MANY_REQUESTS))
}

/// A request with `authorization`, read to its end: its status.
async fn status(http: &Http, url: &str, authorization: &str) -> Option<StatusCode> {
    let request = Request::post(url)
        .header("content-type", "application/json")
        .header("authorization", authorization)
        .body(Full::new(Bytes::from_static(body(true, false).as_bytes())))
        .unwrap();
    let response = http.request(request).await.ok()?;
    let status = response.status();
    let _ = response.into_body().collect().await;
    Some(status)
}
