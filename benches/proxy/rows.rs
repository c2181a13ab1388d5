//! The load bench's throughput rows: the same requests straight to the backend, through the
//! bare relay, through nginx (when installed) and through lingo, at each shape (concurrency,
//! whole or streamed); then the ratios, all from the same run.
//!
//! Besides requests/s, each proxy's CPU time per request is measured (its processes' user +
//! system time from `/proc` over the row, divided by the requests it served): unlike
//! throughput, it barely depends on what else the machine's cores are doing. For lingo, how
//! that CPU was shared among its worker threads too: a row served by one worker of two
//! measures something else than one served by both (before connections were balanced, the
//! c=32 rows of the run that was checked were all one worker's).

use crate::nginx::tree_cpu;
use crate::{Http, Run, cpu_in, cpu_of, load, pct, usage};

const WHOLE_NATIVE: &str =
    r#"{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#;
const STREAM_NATIVE: &str =
    r#"{"model":"llama3.2","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#;
const WHOLE_OPENAI: &str = r#"{"model":"gpt-4o-mini","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#;
const STREAM_OPENAI: &str =
    r#"{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#;

const DIRECT: &str = "direct to backend (native)";
const RELAY: &str = "through a bare TCP relay (no HTTP)";
const NGINX: &str = "through nginx, plain reverse proxy";
const PASS: &str = "through lingo, native pass-through";
const TRANSLATED: &str = "through lingo, chat-completions translated";

/// Where each row sends its requests.
pub struct Targets {
    pub direct: String,
    pub relayed: String,
    /// nginx's URL and its master's pid, when it runs.
    pub nginx: Option<(String, u32)>,
    pub through: String,
    pub translated: String,
    /// lingo's pid.
    pub lingo: u32,
}

/// Whose CPU a row measures.
#[derive(Clone, Copy)]
enum Meter {
    Nothing,
    Lingo(u32),
    /// nginx's master and its workers.
    Nginx(u32),
}

impl Meter {
    fn cpu(self) -> f64 {
        match self {
            Meter::Nothing => 0.0,
            Meter::Lingo(pid) => cpu_of(pid),
            Meter::Nginx(pid) => tree_cpu(pid),
        }
    }
}

/// One measured row.
pub struct Row {
    concurrency: usize,
    stream: bool,
    name: &'static str,
    run: Run,
    /// CPU µs per request of the proxy in the path, if the row has one.
    cpu_us: Option<f64>,
    /// Each lingo worker's share of the workers' CPU, in percent ("52/48").
    split: Option<String>,
}

/// CPU seconds of each of lingo's worker threads (`lingo-worker-N`), by name.
fn workers_cpu(pid: u32) -> Vec<(String, f64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut workers: Vec<_> = tasks
        .flatten()
        .filter_map(|task| {
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            let name = name.trim().to_owned();
            let cpu = || cpu_in(task.path().join("stat"));
            name.starts_with("lingo-worker").then(|| (name, cpu()))
        })
        .collect();
    workers.sort_by(|a, b| a.0.cmp(&b.0));
    workers
}

/// What each worker used between two readings of [`workers_cpu`], by name.
fn used(before: &[(String, f64)], after: &[(String, f64)]) -> Vec<(String, f64)> {
    after
        .iter()
        .map(|(name, cpu)| {
            let was = before.iter().find(|b| &b.0 == name).map_or(0.0, |b| b.1);
            (name.clone(), cpu - was)
        })
        .collect()
}

/// Each worker's share of what all of them used ([`used`], summed over a row's rounds).
fn split(used: &[(String, f64)]) -> Option<String> {
    let total: f64 = used.iter().map(|u| u.1).sum();
    (total > 0.0).then(|| {
        let shares: Vec<String> = used
            .iter()
            .map(|u| format!("{:.0}", u.1 / total * 100.0))
            .collect();
        shares.join("/")
    })
}

/// One row's rounds so far: its load, its proxy's CPU seconds, each lingo worker's, and
/// lingo's resident MiB at the end of its last round (a lingo row's).
#[derive(Default)]
struct Measured {
    run: Option<Run>,
    cpu: f64,
    workers: Vec<(String, f64)>,
    rss: Option<f64>,
}

impl Measured {
    fn add(&mut self, run: Run, cpu: f64, workers: Vec<(String, f64)>, rss: Option<f64>) {
        self.rss = rss;
        self.run = Some(match self.run.take() {
            Some(before) => before.merge(run),
            None => run,
        });
        self.cpu += cpu;
        for (name, used) in workers {
            match self.workers.iter_mut().find(|w| w.0 == name) {
                Some(w) => w.1 += used,
                None => self.workers.push((name, used)),
            }
        }
    }
}

/// The rows of one shape: name, URL, whether the body is the chat-completions one, and whose
/// CPU to read.
fn scenarios(t: &Targets) -> Vec<(&'static str, &str, bool, Meter)> {
    let mut rows = vec![
        (DIRECT, t.direct.as_str(), false, Meter::Nothing),
        (RELAY, t.relayed.as_str(), false, Meter::Nothing),
    ];
    if let Some((url, pid)) = &t.nginx {
        rows.push((NGINX, url.as_str(), false, Meter::Nginx(*pid)));
    }
    rows.push((PASS, t.through.as_str(), false, Meter::Lingo(t.lingo)));
    rows.push((
        TRANSLATED,
        t.translated.as_str(),
        true,
        Meter::Lingo(t.lingo),
    ));
    rows
}

/// A request's body: native or chat-completions (`openai`), whole or streamed.
pub fn body(openai: bool, stream: bool) -> &'static str {
    match (openai, stream) {
        (false, false) => WHOLE_NATIVE,
        (false, true) => STREAM_NATIVE,
        (true, false) => WHOLE_OPENAI,
        (true, true) => STREAM_OPENAI,
    }
}

/// Measures every row of every shape, printing a shape's rows once its rounds end; returns
/// them and the number of failed requests.
///
/// A shape's rows are measured in `rounds` interleaved rounds of `seconds / rounds` each
/// (direct, relay, nginx, lingo, translated, then all again), each row's rounds summed: a
/// drift of the shared machine slower than a round (another tenant, a clock change) then
/// weighs on every row alike. Measured one after the other for their whole time, the rows
/// took it in turn: the ratio of one build to nginx moved by up to 0.2 from run to run.
pub async fn throughput(
    http: &Http,
    targets: &Targets,
    shapes: &[(usize, bool)],
    (seconds, rounds): (f64, usize),
) -> (Vec<Row>, u64) {
    println!(
        "{:<50} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7} {:>6} {:>8} {:>9} {:>8}",
        "scenario",
        "req/s",
        "ttfb p50",
        "ttfb p99",
        "last p50",
        "last p99",
        "failed",
        "cpu",
        "cpu/req",
        "lingo MiB",
        "workers%"
    );
    let (mut rows, mut failures) = (Vec::new(), 0);
    for &shape in shapes {
        for row in shape_rows(http, targets, shape, (seconds, rounds)).await {
            failures += row.run.failed;
            rows.push(row);
        }
    }
    (rows, failures)
}

/// One shape's rows, measured in interleaved rounds (see [`throughput`]), each printed.
async fn shape_rows(
    http: &Http,
    targets: &Targets,
    (concurrency, stream): (usize, bool),
    (seconds, rounds): (f64, usize),
) -> Vec<Row> {
    let scenarios = scenarios(targets);
    let mut measured: Vec<Measured> = scenarios.iter().map(|_| Measured::default()).collect();
    let slice = seconds / rounds as f64;
    for _ in 0..rounds {
        for (&(_, url, openai, meter), so_far) in scenarios.iter().zip(&mut measured) {
            let lingo = matches!(meter, Meter::Lingo(_)).then_some(targets.lingo);
            let (cpu0, workers0) = (meter.cpu(), lingo.map(workers_cpu));
            let run = load(http, url, body(openai, stream), concurrency, slice).await;
            let cpu = meter.cpu() - cpu0;
            let workers = lingo
                .zip(workers0)
                .map_or_else(Vec::new, |(pid, w0)| used(&w0, &workers_cpu(pid)));
            let rss = lingo.map(|pid| usage(pid).1);
            so_far.add(run, cpu, workers, rss);
        }
    }
    let rows = scenarios
        .into_iter()
        .zip(measured)
        .map(|((name, _, _, meter), m)| {
            let run = m.run.expect("at least one round");
            let served = (run.ttlb.len() as u64 + run.failed).max(1) as f64;
            let cpu_us = match meter {
                Meter::Nothing => None,
                _ => Some(m.cpu / served * 1e6),
            };
            let share = m.cpu / run.elapsed;
            let row = Row {
                concurrency,
                stream,
                name,
                run,
                cpu_us,
                split: split(&m.workers),
            };
            print_row(&row, share, m.rss);
            row
        });
    rows.collect()
}

fn print_row(row: &Row, cpu_share: f64, rss: Option<f64>) {
    let kind = if row.stream { "streamed" } else { "whole" };
    let label = format!("{kind} c={} {}", row.concurrency, row.name);
    let (cpu, per_req) = match row.cpu_us {
        Some(us) => (format!("{:.0}%", cpu_share * 100.0), format!("{us:.0}µs")),
        None => ("-".into(), "-".into()),
    };
    let rss = rss.map_or("-".into(), |mib| format!("{mib:.1}"));
    let run = &row.run;
    println!(
        "{:<50} {:>9.0} {:>9.0}µ {:>9.0}µ {:>9.0}µ {:>9.0}µ {:>7} {:>6} {:>8} {:>9} {:>8}",
        label,
        run.rps,
        pct(&run.ttfb, 0.5),
        pct(&run.ttfb, 0.99),
        pct(&run.ttlb, 0.5),
        pct(&run.ttlb, 0.99),
        run.failed,
        cpu,
        per_req,
        rss,
        row.split.as_deref().unwrap_or("-")
    );
}

/// Prints, per shape, throughput through each hop / direct and through lingo / nginx, CPU per
/// request side by side, and the median latency each hop adds.
pub fn ratios(rows: &[Row], shapes: &[(usize, bool)]) {
    println!("\nratios (same run): throughput / direct, throughput / nginx, CPU per request:");
    for &(concurrency, stream) in shapes {
        let pick = |n: &str| {
            rows.iter()
                .find(|r| r.concurrency == concurrency && r.stream == stream && r.name == n)
        };
        let (Some(d), Some(r), Some(p), Some(t)) =
            (pick(DIRECT), pick(RELAY), pick(PASS), pick(TRANSLATED))
        else {
            continue;
        };
        let n = pick(NGINX);
        let kind = if stream { "streamed" } else { "whole" };
        let vs = |row: &Row, base: &Row| row.run.rps / base.run.rps;
        let added = |row: &Row| pct(&row.run.ttlb, 0.5) - pct(&d.run.ttlb, 0.5);
        let us = |row: &Row| row.cpu_us.unwrap_or(f64::NAN);
        println!(
            "  {kind} c={concurrency}: / direct: pass-through {:.2}, translated {:.2}, nginx {}, bare relay {:.2}; translated / pass-through {:.2}",
            vs(p, d),
            vs(t, d),
            n.map_or("-".into(), |n| format!("{:.2}", vs(n, d))),
            vs(r, d),
            vs(t, p),
        );
        if let Some(n) = n {
            println!(
                "  {kind} c={concurrency}: / nginx: pass-through {:.2}, translated {:.2}; CPU per request: nginx {:.0}µs, lingo pass-through {:.0}µs, translated {:.0}µs",
                vs(p, n),
                vs(t, n),
                us(n),
                us(p),
                us(t),
            );
        }
        println!(
            "  {kind} c={concurrency}: median added latency: pass-through {:+.0}µs, translated {:+.0}µs, nginx {}, bare relay {:+.0}µs",
            added(p),
            added(t),
            n.map_or("-".into(), |n| format!("{:+.0}µs", added(n))),
            added(r),
        );
    }
}
