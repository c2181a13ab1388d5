//! Limits shared by three lingo replicas through one real `redis-server` (each test starts its
//! own on a free port), and by two through a Redis Cluster of three: under load on every replica at once the total admitted stays within
//! each limit (requests exactly, tokens with nothing over); a client already refused costs no
//! Redis call; a Redis that stops answering costs each request at most the store's timeout,
//! each limit's fallback (allow, deny, each replica's share) does what it says, and a Redis that
//! answers again is used again. Without `redis-server` the tests say SKIPPED (and fail under
//! `CI`, where `.ci/run` installs it).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{Value, json};
use support::redis_server::{RedisCluster, RedisServer};
use support::*;

/// The table of every replica: `clients` (YAML list entries, indented for `clients:`), a
/// native mock answering 4 tokens, a chat-completions route, and the store at `redis` with
/// `timeout`.
fn replica_table(clients: &str, redis: &RedisServer, timeout: &str) -> String {
    table(&format!(
        "clients:\n{clients}\
         upstreams:\n  models:\n    mock: {{ tokens: 4 }}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n\
         quota_store:\n  redis: \"{}\"\n  timeout: {timeout}\n",
        redis.url()
    ))
}

/// A client entry with key `key` and one limit.
fn client(name: &str, key: &str, limit: &str) -> String {
    format!("  - name: {name}\n    key: {{ value: {key} }}\n    quota:\n      - {limit}\n")
}

async fn three(yaml: &str) -> [Lingo; 3] {
    [
        Lingo::start(yaml).await,
        Lingo::start(yaml).await,
        Lingo::start(yaml).await,
    ]
}

fn chat_body(max_tokens: u64) -> String {
    json!({"model": "m", "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

/// A chat completion for `key` on `lingo`.
async fn ask(lingo: &Lingo, key: &str, max_tokens: u64) -> WholeResponse {
    let url = lingo.url("/v1/chat/completions");
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str())];
    send(request(
        Method::POST,
        &url,
        &headers,
        &chat_body(max_tokens),
    ))
    .await
}

/// What each replica's load admitted: requests, and the answers' tokens.
#[derive(Default)]
struct Admitted {
    requests: AtomicU64,
    tokens: AtomicU64,
}

/// Four clients on each replica at once, each asking for `key` until it has been refused
/// `refusals` times.
async fn load(replicas: &[Lingo; 3], key: &str, refusals: u64, max_tokens: u64) -> Arc<Admitted> {
    let admitted = Arc::new(Admitted::default());
    let mut tasks = Vec::new();
    for lingo in replicas {
        for _ in 0..4 {
            let (url, admitted, key) = (lingo.url(""), Arc::clone(&admitted), key.to_owned());
            tasks.push(tokio::spawn(async move {
                let mut refused = 0;
                while refused < refusals {
                    let chat = format!("{url}/v1/chat/completions");
                    let auth = format!("Bearer {key}");
                    let body = chat_body(max_tokens);
                    let r = send(request(
                        Method::POST,
                        &chat,
                        &[("authorization", &auth)],
                        &body,
                    ))
                    .await;
                    match r.status.as_u16() {
                        200 => {
                            admitted.requests.fetch_add(1, Ordering::Relaxed);
                            let used = r.json()["usage"]["total_tokens"].as_u64().unwrap();
                            admitted.tokens.fetch_add(used, Ordering::Relaxed);
                        }
                        429 => refused += 1,
                        other => panic!("{other}: {}", r.body),
                    }
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    admitted
}

/// A counter of client `name` as Redis holds it (its `used`).
fn redis_used(redis: &RedisServer, name: &str, id: &str) -> f64 {
    let mut connection = redis.connection();
    let used: Option<String> = redis::cmd("HGET")
        .arg(format!("lingo:quota:{{{name}}}"))
        .arg(format!("{id}|u"))
        .query(&mut connection)
        .unwrap();
    used.map_or(0.0, |u| u.parse().unwrap())
}

/// Waits (5 s at most) until Redis's counter is `want`, as settlements land off the answers'
/// path.
async fn redis_used_becomes(redis: &RedisServer, name: &str, id: &str, want: f64) {
    for _ in 0..500 {
        if redis_used(redis, name, id) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "{id} of {name} is {} in Redis, never {want}",
        redis_used(redis, name, id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_under_load_admit_no_more_than_each_limit() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client("counted", "kc", "{ requests: 40, per: 1h }")
        + &client("spender", "ks", "{ tokens: 300, per: 1h }");
    let replicas = three(&replica_table(&clients, &redis, "200ms")).await;

    // Requests: exactly the limit, across the three.
    let admitted = load(&replicas, "kc", 3, 4).await;
    assert_eq!(admitted.requests.load(Ordering::Relaxed), 40);

    // Tokens: each request reserves its estimate and is charged its answer's 5 tokens.
    let admitted = load(&replicas, "ks", 3, 4).await;
    let mut tokens = admitted.tokens.load(Ordering::Relaxed);
    // Under load, requests in flight hold their reservations, so some were refused early.
    // Every answer was settled in Redis: its counter is what the answers used. One at a
    // time, once a replica no longer remembers the refusal (a second at most for a token
    // limit), what is left is used up.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    redis_used_becomes(&redis, "spender", "tokens/1h", tokens as f64).await;
    for lingo in replicas.iter().cycle() {
        let answer = ask(lingo, "ks", 4).await;
        if answer.status == 429 {
            break;
        }
        tokens += answer.json()["usage"]["total_tokens"].as_u64().unwrap();
        // Settled (off the answer's path) before the next is asked.
        redis_used_becomes(&redis, "spender", "tokens/1h", tokens as f64).await;
    }
    let reservation = (chat_body(4).len() as u64).div_ceil(4) + 4;
    assert!(tokens <= 300, "{tokens} tokens admitted of 300");
    assert!(
        tokens + reservation > 300,
        "{tokens} tokens admitted: the next reservation of {reservation} would have fitted"
    );
}

/// Counts the script calls Redis is given for a client's counters, from `MONITOR`, until
/// dropped.
struct Monitor {
    seen: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Monitor {
    fn start(redis: &RedisServer, client: &str) -> Monitor {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", redis.port)).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut lines = BufReader::new(stream);
        let mut ok = String::new();
        lines.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim(), "+OK");
        let (seen, stop) = (Arc::<AtomicU64>::default(), Arc::<AtomicBool>::default());
        let key = format!("\"lingo:quota:{{{client}}}\"");
        let (counted, stopped) = (Arc::clone(&seen), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut line = String::new();
            while !stopped.load(Ordering::Relaxed) {
                line.clear();
                let read = lines.read_line(&mut line).is_ok();
                if read && line.contains(&key) && line.contains("\"EVAL") {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Monitor { seen, stop }
    }

    fn seen(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_already_refused_costs_no_redis_call() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client("throttled", "kt", "{ requests: 1, per: 1h }");
    let lingo = Lingo::start(&replica_table(&clients, &redis, "200ms")).await;
    let monitor = Monitor::start(&redis, "throttled");
    assert_eq!(ask(&lingo, "kt", 4).await.status, 200);
    assert_eq!(ask(&lingo, "kt", 4).await.status, 429);
    // Both were asked of Redis (a script's first call may be sent twice: EVALSHA, then EVAL).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = monitor.seen();
    assert!(asked >= 2, "{asked} calls for the first two requests");
    for _ in 0..20 {
        let refused = ask(&lingo, "kt", 4).await;
        assert_eq!(refused.status, 429);
        assert!(refused.headers.contains_key("retry-after-ms"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        monitor.seen(),
        asked,
        "no Redis call for a client known to be over"
    );
}

/// A client that keeps sending costs about one script call a request, not two: its
/// settlements wait a little and go together, in one call for all that waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_settlements_go_together() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client("steady", "kd", "{ tokens: 100000, per: 1h }");
    let lingo = Lingo::start(&replica_table(&clients, &redis, "200ms")).await;
    let tokens = |answer: &WholeResponse| answer.json()["usage"]["total_tokens"].as_u64();
    // The scripts are loaded first: a script's first call may go twice (EVALSHA, then EVAL).
    let mut used = tokens(&ask(&lingo, "kd", 4).await).unwrap();
    redis_used_becomes(&redis, "steady", "tokens/1h", used as f64).await;
    let monitor = Monitor::start(&redis, "steady");
    for _ in 0..20 {
        used += tokens(&ask(&lingo, "kd", 4).await).expect("answered");
    }
    redis_used_becomes(&redis, "steady", "tokens/1h", used as f64).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // 20 admit calls and a settlement call each 10 ms at most (requests that take longer
    // than that each see theirs go alone): not 40.
    let calls = monitor.seen();
    assert!(
        (21..=30).contains(&calls),
        "{calls} script calls for 20 requests"
    );
}

/// A replica that stops sends the settlements that wait before it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_stops_sends_the_settlements_that_wait() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client("last", "kl", "{ tokens: 100000, per: 1h }");
    let lingo = Lingo::start(&replica_table(&clients, &redis, "200ms")).await;
    let answer = ask(&lingo, "kl", 4).await;
    let used = answer.json()["usage"]["total_tokens"].as_u64().unwrap();
    lingo.shutdown().await;
    assert_eq!(redis_used(&redis, "last", "tokens/1h"), used as f64);
}

/// A reload that moves the counters to another Redis settles, in the one before, the
/// requests charged there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_charged_before_a_reload_is_settled_in_its_own_store() {
    let (Some(first), Some(second)) = (RedisServer::start(false), RedisServer::start(false)) else {
        return;
    };
    let clients = client("mover", "km", "{ tokens: 100000, per: 1h }");
    let slow = |redis: &RedisServer| {
        replica_table(&clients, redis, "200ms").replace(
            "mock: { tokens: 4 }",
            "mock: { tokens: 4, first_token_delay: 300ms }",
        )
    };
    let lingo = Arc::new(Lingo::start(&slow(&first)).await);
    let running = tokio::spawn({
        let lingo = Arc::clone(&lingo);
        async move { ask(&lingo, "km", 4).await }
    });
    // Reserved in the first store; then the table moves to the second.
    let waited = Instant::now();
    while redis_used(&first, "mover", "tokens/1h") == 0.0 {
        assert!(waited.elapsed() < Duration::from_secs(5), "never reserved");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let moved = slow(&second).replace("127.0.0.1:0", &lingo.addr.to_string());
    std::fs::write(lingo.config_path(), moved).unwrap();
    lingo.reloader.reload(true).unwrap();
    let answer = running.await.unwrap();
    let used = answer.json()["usage"]["total_tokens"].as_u64().unwrap();
    redis_used_becomes(&first, "mover", "tokens/1h", used as f64).await;
    assert_eq!(redis_used(&second, "mover", "tokens/1h"), 0.0);
}

/// `/readyz`'s word on the quota store.
async fn store_state(lingo: &Lingo) -> Value {
    get(&lingo.url("/readyz")).await.json()["quota_store"].clone()
}

/// Waits until every replica's heartbeat has counted the three of them (each one's share
/// while Redis is away is a third).
async fn replicas_seen(replicas: &[Lingo; 3]) {
    for _ in 0..100 {
        let mut all = true;
        for lingo in replicas {
            let quota = get(&lingo.url("/quota")).await.json();
            all &= quota["store"]["replicas"] == 3;
        }
        if all {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the replicas never saw each other");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_stops_answering_costs_at_most_its_timeout_and_each_fallback_holds() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client(
        "open",
        "ko",
        "{ requests: 2, per: 1h, on_store_error: allow }",
    ) + &client(
        "strict",
        "kd",
        "{ requests: 100, per: 1h, on_store_error: deny }",
    ) + &client(
        "shared",
        "kl",
        "{ requests: 6, per: 1h, on_store_error: local }",
    );
    let replicas = three(&replica_table(&clients, &redis, "50ms")).await;
    replicas_seen(&replicas).await;
    for lingo in &replicas {
        assert_eq!(store_state(lingo).await, "ok");
        assert_eq!(ask(lingo, "kd", 4).await.status, 200);
    }

    // Redis stops answering: calls to it hang until lingo's timeout.
    redis.pause();
    let mut slowest = Duration::ZERO;
    let mut timed = async |lingo: &Lingo, key: &str| {
        let started = Instant::now();
        let response = ask(lingo, key, 4).await;
        slowest = slowest.max(started.elapsed());
        response
    };
    let mut statuses = Vec::new();
    for lingo in &replicas {
        // Over its limit of 2, and admitted: `allow`.
        for _ in 0..3 {
            assert_eq!(timed(lingo, "ko").await.status, 200);
        }
        // `deny`: 503, in the client's dialect.
        let denied = timed(lingo, "kd").await;
        assert_eq!(denied.status, 503, "{}", denied.body);
        assert_eq!(denied.json()["error"]["code"], "quota_unavailable");
        // `local`: each replica admits its share, 6 / 3.
        let mut admitted = 0;
        for _ in 0..4 {
            let status = timed(lingo, "kl").await.status.as_u16();
            admitted += u32::from(status == 200);
            statuses.push(status);
        }
        assert_eq!(admitted, 2, "{statuses:?}");
        assert!(
            store_state(lingo)
                .await
                .as_str()
                .unwrap()
                .starts_with("unreachable")
        );
    }
    // The store's timeout is 50ms; the margin is for the machine, not for Redis.
    assert!(
        slowest < Duration::from_millis(600),
        "a request took {slowest:?}"
    );
    let metrics = get(&replicas[0].url("/metrics")).await.body;
    assert_eq!(metric(&metrics, "lingo_quota_store_up"), Some(0.0));

    // Redis answers again: the heartbeat finds it, and limits are shared again.
    redis.resume();
    for lingo in &replicas {
        for _ in 0..100 {
            if store_state(lingo).await == "ok" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(store_state(lingo).await, "ok");
    }
    // `open` counted its two in Redis before it stopped: shared again, it is over.
    for lingo in &replicas {
        assert_eq!(ask(lingo, "ko", 4).await.status, 429);
        assert_eq!(ask(lingo, "kd", 4).await.status, 200);
    }
    assert_eq!(redis_used(&redis, "strict", "requests/1h"), 6.0);
}

/// A bucket on Redis, asked through the three replicas in turn: a burst of its capacity, then
/// its rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_on_redis_admits_a_burst_then_its_rate() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client("bursty", "kb", "{ requests: 2, per: 1s, capacity: 3 }");
    let replicas = three(&replica_table(&clients, &redis, "200ms")).await;
    for lingo in &replicas {
        assert_eq!(ask(lingo, "kb", 4).await.status, 200);
    }
    let refused = ask(&replicas[0], "kb", 4).await;
    assert_eq!(refused.status, 429);
    let wait: u64 = refused.headers["retry-after-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=500).contains(&wait), "{wait}");
    tokio::time::sleep(Duration::from_millis(wait + 20)).await;
    assert_eq!(ask(&replicas[1], "kb", 4).await.status, 200, "room again");
}

/// A client known to be over a token limit is refused without Redis for a moment, with the
/// wait its limit really has: not the moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_refusal_tells_the_limits_own_wait() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client("spent", "ks", "{ tokens: 40, per: 1h }");
    let lingo = Lingo::start(&replica_table(&clients, &redis, "200ms")).await;
    while ask(&lingo, "ks", 4).await.status == 200 {}
    let remembered = ask(&lingo, "ks", 4).await;
    assert_eq!(remembered.status, 429);
    let wait: u64 = remembered.headers["retry-after-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let error = remembered.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(wait > 1_000, "retry-after-ms {wait}: {error}");
}

/// A settlement due while Redis is known to be away is kept, and sent when it answers again:
/// the counter ends at what the answer used, not at what was reserved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settlement_due_while_redis_is_away_lands_when_it_is_back() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let clients = client(
        "patient",
        "kp",
        "{ tokens: 1000, per: 1h, on_store_error: allow }",
    );
    let lingo = Lingo::start(&replica_table(&clients, &redis, "50ms")).await;
    // A stream of 8 tokens, 800ms apart: long enough for the heartbeat to find Redis gone
    // (its own wait is 2 s) before it ends.
    let slow = json!({"model": "m@tokens=8,token_delay=800ms", "stream": true, "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]});
    let url = lingo.url("/v1/chat/completions");
    let streaming = tokio::spawn(send(request(
        Method::POST,
        &url,
        &[("authorization", "Bearer kp")],
        &slow.to_string(),
    )));
    // Admitted and reserved; then Redis stops answering, and lingo knows it before the
    // stream ends.
    let reserved = (slow.to_string().len() as f64 / 4.0).ceil() + 8.0;
    redis_used_becomes(&redis, "patient", "tokens/1h", reserved).await;
    redis.pause();
    for _ in 0..100 {
        if store_state(&lingo).await != "ok" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(
        store_state(&lingo).await,
        "ok",
        "the heartbeat found Redis gone"
    );
    let answer = streaming.await.unwrap();
    assert_eq!(answer.status, 200);
    assert!(answer.body.contains("[DONE]"));
    redis.resume();
    // "hi" and the 8 tokens the mock answered.
    redis_used_becomes(&redis, "patient", "tokens/1h", 9.0).await;
}

/// Two replicas on a Redis Cluster of three nodes: each client's counters live on the node
/// of its key's slot, and every limit still holds across the replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_a_redis_cluster_share_each_clients_limit() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let names = ["ana", "bo", "cy", "dee", "eli", "fay"];
    let clients: String = (names.iter())
        .map(|name| client(name, &format!("k-{name}"), "{ requests: 5, per: 1h }"))
        .collect();
    let yaml = table(&format!(
        "clients:\n{clients}\
         upstreams:\n  models:\n    mock: {{ tokens: 4 }}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n\
         quota_store:\n  redis: \"{}\"\n  timeout: 200ms\n  cluster: true\n",
        cluster.url()
    ));
    let replicas = [Lingo::start(&yaml).await, Lingo::start(&yaml).await];
    for name in names {
        let key = format!("k-{name}");
        let mut admitted = 0;
        for lingo in replicas.iter().cycle().take(10) {
            let status = ask(lingo, &key, 4).await.status.as_u16();
            assert!(status == 200 || status == 429, "{name}: {status}");
            admitted += u32::from(status == 200);
        }
        assert_eq!(admitted, 5, "{name}");
    }
    for lingo in &replicas {
        assert_eq!(store_state(lingo).await, "ok");
    }
    // The six clients' counters are spread over the nodes (the replicas' set on one more).
    let keys = cluster.keys_by_node();
    assert_eq!(keys.iter().sum::<u64>(), 7, "{keys:?}");
    assert!(keys.iter().filter(|&&n| n > 0).count() >= 2, "{keys:?}");
}
