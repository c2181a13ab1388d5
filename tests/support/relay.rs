//! What the webhook relay's tests share: a route table with a relayed web-data upstream, a
//! check of the Standard Webhooks signature written from its specification (not with
//! lingo's code), lingo as a child process (for `kill -9`), and a `redis-server` of the
//! test's own.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ring::hmac;

use serde_json::Value;

use super::receiver::Hit;
use super::{Backend, WholeResponse, get, json_response, metric, request, send};

/// The bytes of the client's Standard Webhooks secret, and the secret as the table writes
/// it (`whsec_` and their base64).
pub const CLIENT_SECRET_BYTES: &[u8] = b"the client's own 32 byte secret!";

pub fn client_secret() -> String {
    format!("whsec_{}", b64(CLIENT_SECRET_BYTES))
}

/// Standard base64 with padding, written here from RFC 4648.
pub fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Checks `hit`'s Standard Webhooks headers with the secret `key`: `webhook-signature` is
/// `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`. The timestamp is now-ish.
pub fn assert_standard_signature(hit: &Hit, key: &[u8]) {
    let header = |name: &str| {
        hit.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name}: {hit:?}"))
            .to_str()
            .unwrap()
            .to_owned()
    };
    let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
    let signed = [id.as_bytes(), b".", timestamp.as_bytes(), b".", &hit.body].concat();
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), &signed);
    assert_eq!(
        header("webhook-signature"),
        format!("v1,{}", b64(tag.as_ref()))
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at: u64 = timestamp.parse().unwrap();
    assert!(now.abs_diff(at) < 300, "timestamp {at}, now {now}");
}

/// `X-Firecrawl-Signature`: `sha256=` and the hex HMAC-SHA256 of the body with `key`.
pub fn firecrawl_signature(key: &[u8], body: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// A metric's value on `/metrics` at `base`, 0 when it has no sample yet.
pub async fn metric_at(base: &str, name_and_labels: &str) -> f64 {
    let text = get(&format!("{base}/metrics")).await.body;
    metric(&text, name_and_labels).unwrap_or(0.0)
}

/// Waits (30 s at most) until a metric at `base` reaches `value`.
pub async fn wait_metric(base: &str, name_and_labels: &str, value: f64) {
    for _ in 0..300 {
        if metric_at(base, name_and_labels).await >= value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = get(&format!("{base}/metrics")).await.body;
    panic!("{name_and_labels} never reached {value}:\n{text}");
}

/// POSTs JSON `body` with `headers`.
pub async fn post_json(url: &str, headers: &[(&str, &str)], body: &str) -> WholeResponse {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send(request(hyper::Method::POST, url, &all, body)).await
}

/// lingo as a child process, its stderr kept.
pub struct LingoProcess {
    child: Child,
    pub addr: SocketAddr,
    /// The admin listener, when the table has one.
    pub admin: Option<SocketAddr>,
    log: Arc<Mutex<Vec<String>>>,
}

impl LingoProcess {
    /// `lingo --config CONFIG`, once it says where it listens (and where its admin listener
    /// is, when `admin` says it has one).
    pub fn start(config: &Path, admin: bool) -> LingoProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lingo"))
            .arg("--config")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(listener) = super::listener_in(&line) {
                    let _ = tx.send(listener);
                }
                lines.lock().unwrap().push(line);
            }
        });
        let (mut addr, mut admin_addr) = (None, None);
        while addr.is_none() || (admin && admin_addr.is_none()) {
            let (at, is_admin) = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("lingo did not start: {:?}", log.lock().unwrap()));
            if is_admin {
                admin_addr = Some(at);
            } else {
                addr = Some(at);
            }
        }
        LingoProcess {
            child,
            addr: addr.unwrap(),
            admin: admin_addr,
            log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.admin.expect("an admin listener"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`: no drain, no flush, nothing.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for LingoProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The relay's table: clients `app` (a Standard Webhooks secret of its own) and `other`
/// (none: lingo's `sign` is used), upstream `fire` as `upstream` says (a mock's knobs, or a
/// URL) speaking `speaks`, `/v1` and `/v2` routed to it, an admin listener; `webhooks`
/// gets `extra` lines.
pub fn relay_table(upstream: &str, speaks: &str, extra: &str) -> String {
    format!(
        "listen:\n  - addr: 127.0.0.1:0\nadmin: {{ addr: 127.0.0.1:0 }}\n\
         clients:\n  - {{ name: app, key: {{ value: app-key }}, webhook_secret: {{ value: \"{}\" }} }}\n  \
         - {{ name: other, key: {{ value: other-key }} }}\n\
         upstreams:\n  fire:\n    {upstream}\n    speaks: {speaks}\n    webhooks:\n      relay: true\n      \
         verify: {{ value: upstream-secret }}\n      sign: {{ value: lingo-sign }}\n      \
         retry: [100ms, 200ms, 300ms]\n      timeout: 2s\n      store: hooks.redb\n{extra}\
         routes:\n  - {{ prefix: /v1, to: fire }}\n  - {{ prefix: /v2, to: fire }}\n",
        client_secret()
    )
}

/// A mock upstream whose events are signed with the secret the relay verifies.
pub const MOCK: &str = "mock: { page_delay: 20ms, webhook_secret: { value: upstream-secret }, webhook_retry: [200ms, 200ms] }";

pub const ALLOW_LOOPBACK: &str = "      allow: [127.0.0.0/8]\n";

/// Starts a job at `url` as client `key`.
pub async fn start_job(url: &str, key: &str, body: Value) -> WholeResponse {
    let auth = format!("Bearer {key}");
    post_json(url, &[("authorization", &auth)], &body.to_string()).await
}

/// An upstream that records the job request it got and responds to it as a crawl's start.
pub async fn scripted_upstream() -> Backend {
    Backend::start(|seen| async move {
        let _ = seen;
        json_response(
            200,
            r#"{"success":true,"id":"job-1","url":"https://up.example/v2/crawl/job-1"}"#,
        )
    })
    .await
}

/// The receiver URL lingo gave the upstream in the job request it recorded last.
pub fn receiver_url_given(upstream: &Backend) -> String {
    let sent: Value = serde_json::from_slice(&upstream.last().body).unwrap();
    let hook = &sent["webhook"];
    hook.as_str()
        .or_else(|| hook["url"].as_str())
        .unwrap()
        .to_owned()
}

/// An event as the upstream sends it, signed with `secret`.
pub async fn send_event(url: &str, event: &Value, secret: Option<&[u8]>) -> WholeResponse {
    let body = event.to_string();
    let signature = secret.map(|s| firecrawl_signature(s, body.as_bytes()));
    let headers: Vec<(&str, &str)> = signature
        .iter()
        .map(|s| ("x-firecrawl-signature", s.as_str()))
        .collect();
    post_json(url, &headers, &body).await
}
