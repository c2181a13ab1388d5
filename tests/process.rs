//! The `lingo` binary as operators run it: SIGHUP reloads, SIGTERM drains (`lingo mock`
//! stops), and no key ever appears in its log output or in an error body.

#![cfg(unix)]

mod support;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;
use support::*;

/// A `lingo` child process and everything it wrote to stderr.
struct Proc {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn start(config: &Path) -> Proc {
        Proc::run([OsStr::new("--config"), config.as_os_str()])
    }

    /// `lingo ARGS...`, once it says where it listens.
    fn run<'a>(args: impl IntoIterator<Item = &'a OsStr>) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lingo"))
            .args(args)
            .env("RUST_LOG", "debug")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // The line's end: `...listening on ADDR"` (logfmt quotes the message).
                if let Some(addr) = line.split("listening on ").nth(1) {
                    let addr = addr.trim().trim_end_matches('"');
                    let _ = addr_tx.send(addr.parse::<SocketAddr>().unwrap());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("lingo did not start: {:?}", log.lock().unwrap()));
        Proc { child, addr, log }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn with_key(url: &str, key: &str) -> WholeResponse {
    send(request(
        Method::GET,
        url,
        &[("authorization", &format!("Bearer {key}"))],
        "",
    ))
    .await
}

#[tokio::test]
async fn sighup_rereads_the_table_and_its_secret_files() {
    let backend = Backend::json(200, "{}").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    std::fs::write(dir.path().join("keys/app.key"), "first-key\n").unwrap();
    let config = dir.path().join("proxy.yaml");
    std::fs::write(
        &config,
        table(&format!(
            "clients:\n  - {{ name: app, key: {{ file: keys/app.key }} }}\n\
             upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models }}\n",
            backend.url()
        )),
    )
    .unwrap();
    let lingo = Proc::start(&config);
    assert_eq!(
        with_key(&lingo.url("/api/tags"), "first-key").await.status,
        200
    );
    // SIGHUP reloads even when nothing changed (file events then do not).
    let generation = || async { get(&lingo.url("/healthz")).await.json()["generation"].clone() };
    assert_eq!(generation().await, 1);
    lingo.signal("HUP");
    let mut reloaded = false;
    for _ in 0..100 {
        if generation().await == 2 {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reloaded, "SIGHUP reloaded: {}", lingo.log_text());

    // A rotated key file is read again (the watch may see it first; SIGHUP makes sure).
    std::fs::write(dir.path().join("keys/app.key"), "second-key\n").unwrap();
    lingo.signal("HUP");
    let mut status = 0;
    for _ in 0..100 {
        status = with_key(&lingo.url("/api/tags"), "second-key")
            .await
            .status
            .as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        status,
        200,
        "SIGHUP re-read the key file: {}",
        lingo.log_text()
    );
    assert_eq!(
        with_key(&lingo.url("/api/tags"), "first-key").await.status,
        401
    );
}

/// Writes a file beside the table every 20 ms, from a thread of its own, until the returned
/// guard is dropped: file events that never let the directory be quiet (a log written
/// there, say).
fn keep_writing_beside(dir: &Path) -> Writing {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (notes, stopped) = (dir.join("notes.txt"), Arc::clone(&stop));
    std::thread::spawn(move || {
        for n in 0u64.. {
            if stopped.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            let _ = std::fs::write(&notes, n.to_string());
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    Writing(stop)
}

/// Stops [`keep_writing_beside`]'s thread when dropped.
struct Writing(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Writing {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether lingo's table reaches `generation` within 10 s.
async fn reaches(lingo: &Proc, generation: u64) -> bool {
    for _ in 0..100 {
        if get(&lingo.url("/healthz")).await.json()["generation"] == generation {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// A SIGHUP that comes while file events are being debounced (here, a file beside the table
/// keeps changing: the table itself does not) ends the wait with a forced reload.
#[tokio::test]
async fn a_sighup_during_a_file_events_debounce_still_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let upstreams = "upstreams:\n  models: { mock: {}, speaks: native }\n";
    std::fs::write(
        &config,
        table(&format!(
            "{upstreams}routes:\n  - {{ prefix: /api, to: models }}\n"
        )),
    )
    .unwrap();
    let lingo = Proc::start(&config);
    assert!(reaches(&lingo, 1).await);
    let writing = keep_writing_beside(dir.path());
    tokio::time::sleep(Duration::from_millis(100)).await;
    lingo.signal("HUP");
    // Within the longest debounce (2 s) there is no reload but the SIGHUP's.
    let reloaded = reaches(&lingo, 2).await;
    drop(writing);
    assert!(reloaded, "the SIGHUP was lost: {}", lingo.log_text());
}

/// Addresses only take effect on restart: a reload that changes them is warned about each
/// time it differs from what is bound, and one that goes back to it is not.
#[tokio::test]
async fn a_reload_that_moves_addresses_is_warned_about_until_it_matches_again() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let base = table("upstreams:\n  models:\n    mock: {}\n    speaks: native\nroutes: []\n");
    std::fs::write(&config, &base).unwrap();
    let lingo = Proc::start(&config);
    let warnings = || lingo.log_text().matches("admin.addr in").count();
    let mut generation = 1;
    for (text, warned) in [
        (format!("{base}admin: {{ addr: 127.0.0.1:0 }}\n"), 1),
        (base.clone(), 1),
        (format!("{base}admin: {{ addr: 127.0.0.1:0 }}\n"), 2),
    ] {
        std::fs::write(&config, text).unwrap();
        lingo.signal("HUP");
        generation += 1;
        let mut now = 0;
        for _ in 0..100 {
            now = get(&lingo.url("/healthz")).await.json()["generation"]
                .as_u64()
                .unwrap();
            if now >= generation {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(now, generation, "{}", lingo.log_text());
        // The log line is read from the child's stderr a moment after it is written.
        for _ in 0..100 {
            if warnings() >= warned {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(warnings(), warned, "{}", lingo.log_text());
    }
}

/// A lingo process with `limits.drain` passing `/api` through to a scripted backend, and a
/// stream through it that has sent its first line (`one\n`); the sender scripts the rest.
/// (The directory holds the table.)
async fn streaming_through(
    drain: &str,
) -> (
    Proc,
    hyper::body::Incoming,
    tokio::sync::mpsc::UnboundedSender<Bytes>,
    tempfile::TempDir,
) {
    let (backend, lines_tx) = scripted_backend().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let yaml = table(&format!(
        "limits: {{ drain: {drain} }}\nupstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    ));
    std::fs::write(&config, yaml).unwrap();
    let lingo = Proc::start(&config);
    let req = request(Method::POST, &lingo.url("/api/chat"), &[], "{}");
    let body = client().request(req).await.unwrap().into_body();
    lines_tx.send(Bytes::from_static(b"one\n")).unwrap();
    (lingo, body, lines_tx, dir)
}

/// A stream that outlives `limits.drain` does not hold the shutdown: it is cut at the
/// deadline and lingo still exits 0.
#[tokio::test]
async fn sigterm_cuts_what_is_still_running_at_the_drain_deadline() {
    let (mut lingo, mut body, lines_tx, _dir) = streaming_through("500ms").await;
    body.frame().await.unwrap().unwrap();

    lingo.signal("TERM");
    // The upstream never finishes (lines_tx stays open): the deadline ends the stream.
    let rest = tokio::time::timeout(Duration::from_secs(20), body.collect())
        .await
        .expect("the drain deadline ended the stream");
    assert!(
        rest.is_err(),
        "a stream cut by the deadline must not end cleanly"
    );
    let (status, lingo) = tokio::task::spawn_blocking(move || (lingo.child.wait().unwrap(), lingo))
        .await
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    assert!(lingo.log_text().contains("drain"), "{}", lingo.log_text());
    drop(lines_tx);
}

/// SIGTERM and SIGINT alike: new connections are refused at once, the stream in flight
/// finishes, and lingo exits 0.
#[tokio::test]
async fn sigterm_refuses_new_connections_and_drains_streams() {
    for signal in ["TERM", "INT"] {
        stops_and_drains_on(signal).await;
    }
}

async fn stops_and_drains_on(signal: &str) {
    let (mut lingo, mut body, lines_tx, _dir) = streaming_through("60s").await;
    assert_eq!(
        body.frame().await.unwrap().unwrap().into_data().unwrap(),
        "one\n"
    );

    lingo.signal(signal);
    let mut refused = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(lingo.addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refused, "new connections are refused after SIG{signal}");

    lines_tx.send(Bytes::from_static(b"two\n")).unwrap();
    drop(lines_tx);
    let rest = body
        .collect()
        .await
        .expect("the stream in flight finished")
        .to_bytes();
    assert_eq!(rest, "two\n");
    let status = tokio::task::spawn_blocking(move || lingo.child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "SIG{signal}: exit status {status:?}");
}

/// `lingo mock` ends with success on SIGTERM and SIGINT, as lingo does: a build that counts
/// what runs (benches/pgo.sh) writes its counts only on a normal exit.
#[tokio::test]
async fn the_mock_exits_with_success_on_sigterm_and_sigint() {
    for signal in ["TERM", "INT"] {
        let mut mock = Proc::run(["mock", "--listen", "127.0.0.1:0"].map(OsStr::new));
        assert_eq!(get(&mock.url("/api/tags")).await.status, 200);
        mock.signal(signal);
        let status = tokio::task::spawn_blocking(move || mock.child.wait().unwrap())
            .await
            .unwrap();
        assert!(status.success(), "SIG{signal}: exit status {status:?}");
    }
}

/// Each request writes one `lingo::access` line when its response ends, with every field
/// docs/operations.md names: method, path, route, upstream, status, duration, bytes, the
/// client key's name, the request id, the outcome and lingo's own error.
#[tokio::test]
async fn each_response_writes_one_access_line_with_its_fields() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let yaml = table(
        "clients:\n  - { name: app-one, key: { value: k-app-one } }\n\
         upstreams:\n  models:\n    mock: { tokens: 2 }\n    speaks: native\n\
         routes:\n  - { prefix: /api, to: models }\n",
    );
    std::fs::write(&config, yaml).unwrap();
    let lingo = Proc::start(&config);
    let response = send(request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[
            ("authorization", "Bearer k-app-one"),
            ("x-request-id", "rid-access-1"),
        ],
        CHAT,
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let refused = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("x-request-id", "rid-access-2")],
        "",
    ))
    .await;
    assert_eq!(refused.status, 401);
    let line = |rid: &str| {
        lingo
            .log
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.contains("lingo::access") && l.contains(&format!("request_id={rid}")))
            .cloned()
    };
    // The line is written when the response's end reaches the server, a moment after the client
    // read it: wait for it.
    let mut found = None;
    for _ in 0..1000 {
        if let (Some(a), Some(b)) = (line("rid-access-1"), line("rid-access-2")) {
            found = Some((a, b));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (ok, refused) = found.unwrap_or_else(|| panic!("no access lines:\n{}", lingo.log_text()));
    for field in [
        "method=POST",
        "path=/api/chat",
        "route=",
        "upstream=models",
        "status=200",
        "duration_ms=",
        "bytes=",
        "client=app-one",
        "request_id=rid-access-1",
        "outcome=complete",
        "error=",
    ] {
        assert!(ok.contains(field), "{field} missing: {ok}");
    }
    assert!(
        !ok.contains("bytes=0 "),
        "the response's bytes are counted: {ok}"
    );
    for field in ["method=GET", "path=/api/tags", "status=401", "error="] {
        assert!(refused.contains(field), "{field} missing: {refused}");
    }
    assert!(refused.contains("missing client key"), "{refused}");
    assert_eq!(
        lingo
            .log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("lingo::access") && l.contains("rid-access-1"))
            .count(),
        1,
        "one line per request"
    );
}

const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
const CHAT_STREAM: &str =
    r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

/// A native upstream that repeats the credential it was sent in its errors (some servers
/// do): an error status for whole responses, an error line after one token for streams, a
/// "model not found" 404 for embeddings.
async fn echoing_backend() -> Backend {
    Backend::start(|seen| async move {
        let sent = seen
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        if seen.uri.ends_with("/api/embed") {
            return json_response(
                404,
                &format!(r#"{{"error":"no model for credential {sent}"}}"#),
            );
        }
        if !String::from_utf8_lossy(&seen.body).contains("\"stream\":true") {
            return json_response(401, &format!(r#"{{"error":"invalid credential {sent}"}}"#));
        }
        let lines = format!(
            "{{\"message\":{{\"role\":\"assistant\",\"content\":\"Hi\"}},\"done\":false}}\n\
             {{\"error\":\"credential {sent} was revoked\"}}\n"
        );
        hyper::Response::builder()
            .header("content-type", "application/x-ndjson")
            .body(lingo::http::body::Body::full(Bytes::from(lines)))
            .unwrap()
    })
    .await
}

#[tokio::test]
async fn keys_never_reach_logs_or_error_bodies() {
    const CLIENT_KEY: &str = "client-key-5f0c1e";
    const UPSTREAM_KEY: &str = "fc-upstream-key-9a7b3d";
    let backend = Backend::json(200, r#"{"success":true}"#).await;
    let slow = Backend::start(|_| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        json_response(200, "{}")
    })
    .await;
    let dead = closed_port().await;
    let echo = echoing_backend().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let auth = format!("    auth: {{ bearer: {{ value: {UPSTREAM_KEY} }} }}\n");
    let yaml = table(&format!(
        "clients:\n  - {{ name: app, key: {{ value: {CLIENT_KEY} }} }}\nlimits: {{ max_body: 96 }}\n\
         upstreams:\n  ok:\n    url: {}\n    speaks: web-data\n{auth}  \
         slow:\n    url: {}\n    speaks: web-data\n    timeouts: {{ first_byte: 200ms }}\n{auth}  \
         dead:\n    url: http://{dead}\n    speaks: web-data\n{auth}  \
         echo:\n    url: {}\n    speaks: native\n{auth}\
         routes:\n  - {{ prefix: /v1, to: ok }}\n  - {{ prefix: /v2/slow, to: slow }}\n  - {{ prefix: /v2/dead, to: dead }}\n  \
           - {{ path: /v1/chat/completions, speaks: chat-completions, to: echo }}\n  \
           - {{ path: /v1/responses, speaks: chat-completions, to: echo }}\n  \
           - {{ path: /v1/embeddings, speaks: chat-completions, to: echo }}\n  \
           - {{ prefix: /api, to: echo }}\n",
        backend.url(),
        slow.url(),
        echo.url()
    ));
    std::fs::write(&config, yaml).unwrap();
    let lingo = Proc::start(&config);
    let good = [("authorization", &*format!("Bearer {CLIENT_KEY}"))];
    let names: Vec<String> = (0..120).map(|i| format!("x-h{i}")).collect();
    let mut crowded: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    crowded.push(good[0]);
    let mut bodies = Vec::new();
    for path in ["/metrics", "/readyz"] {
        bodies.push(
            send(request(Method::GET, &lingo.url(path), &good, ""))
                .await
                .body,
        );
    }
    for (path, headers, body) in [
        ("/v1/scrape", &crowded[..], "{}"),
        ("/v1/scrape", &good[..], "{}"),
        ("/v2/slow/x", &good[..], "{}"),
        ("/v2/dead/x", &good[..], "{}"),
        ("/v1/scrape", &good[..], &*"x".repeat(100)),
        ("/v1/scrape", &[][..], "{}"),
        ("/v1/scrape", &[("authorization", "Bearer wrong")][..], "{}"),
        ("/nowhere", &good[..], "{}"),
        // The echoing upstream: a rewritten error, a mid-stream error line, a pass-through error.
        ("/v1/chat/completions", &good[..], CHAT),
        ("/v1/chat/completions", &good[..], CHAT_STREAM),
        ("/api/chat", &good[..], "{}"),
        ("/v1/embeddings", &good[..], r#"{"model":"m","input":"hi"}"#),
        // lingo's own refusals on the way there.
        ("/v1/chat/completions", &good[..], r#"{"model":5}"#),
        ("/v1/responses", &good[..], "{}"),
        ("/api/pull", &good[..], "{}"),
        ("/api/%2e%2e/v1/scrape", &good[..], "{}"),
    ] {
        bodies.push(
            send(request(Method::POST, &lingo.url(path), headers, body))
                .await
                .body,
        );
    }
    let redacted = bodies.iter().filter(|b| b.contains("<redacted>")).count();
    assert_eq!(
        redacted, 4,
        "the upstream's echo reached the client redacted: {bodies:#?}"
    );
    // A table that does not load, with both keys in it, is refused without printing them.
    std::fs::write(
        &config,
        format!(
            "clients: [{{ name: app, key: {{ value: {CLIENT_KEY}, bogus: {UPSTREAM_KEY} }} }}]\n"
        ),
    )
    .unwrap();
    lingo.signal("HUP");
    // Give the access-log lines of the last responses (and the refusal) time to be written.
    for _ in 0..50 {
        let log = lingo.log_text();
        if log.matches("lingo::access").count() >= 17 && log.contains("refused") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = lingo.log_text();
    assert!(
        log.matches("lingo::access").count() >= 17,
        "one access line per request:\n{log}"
    );
    assert!(log.contains("refused"), "the bad table was refused:\n{log}");
    for key in [CLIENT_KEY, UPSTREAM_KEY] {
        assert!(!log.contains(key), "{key} leaked into the log:\n{log}");
        for body in &bodies {
            assert!(!body.contains(key), "{key} leaked into a response: {body}");
        }
    }
    assert!(
        log.contains("client=app"),
        "the access log names the client:\n{log}"
    );
}

/// `allow_open: true` on an address beyond loopback with no client keys: lingo starts, and
/// says loudly that it is an open proxy.
#[tokio::test]
async fn an_allowed_open_proxy_starts_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let yaml = "listen:\n  - addr: 0.0.0.0:0\n    allow_open: true\n\
                upstreams:\n  models:\n    mock: {}\n    speaks: native\n\
                routes:\n  - { prefix: /api, to: models }\n";
    std::fs::write(&config, yaml).unwrap();
    let lingo = Proc::start(&config);
    assert_eq!(lingo.addr.ip().to_string(), "0.0.0.0");
    let warned = |log: &str| {
        log.lines().any(|l| {
            l.contains("level=WARN")
                && l.contains("OPEN PROXY: listen 0.0.0.0:0 has `allow_open: true`")
        })
    };
    assert!(warned(&lingo.log_text()), "{}", lingo.log_text());
}

/// A reload to a table that would be an open proxy is refused like any table that does not
/// load: the old one keeps serving.
#[tokio::test]
async fn a_reload_to_an_open_proxy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let base = "upstreams:\n  models:\n    mock: {}\n    speaks: native\nroutes:\n  - { prefix: /api, to: models }\n";
    std::fs::write(&config, table(base)).unwrap();
    let lingo = Proc::start(&config);
    std::fs::write(&config, format!("listen:\n  - addr: 0.0.0.0:0\n{base}")).unwrap();
    lingo.signal("HUP");
    for _ in 0..500 {
        if lingo.log_text().contains("is an open proxy") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = lingo.log_text();
    let refusal = log
        .lines()
        .find(|l| l.contains("route table refused"))
        .unwrap_or_else(|| panic!("no refusal:\n{log}"));
    assert!(
        refusal.contains("listen 0.0.0.0:0 is an open proxy"),
        "{refusal}"
    );
    let health = get(&lingo.url("/healthz")).await.json();
    assert_eq!(health["generation"], 1, "{health}");
    assert_eq!(get(&lingo.url("/api/tags")).await.status, 200);
}
