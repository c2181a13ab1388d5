//! Native clients discover the table's aliases: `GET /api/tags` on a native route lists the
//! upstream's models plus one entry per alias (its target's details), over real sockets. And
//! `/api/show` for an alias keeps responding with the target's details.

mod support;

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use serde_json::{Value, json};
use support::*;
use tokio::sync::Notify;

/// An `/api/tags` entry as the real server writes one.
fn entry(name: &str, size: u64, family: &str) -> Value {
    json!({"name": name, "model": name, "modified_at": "2024-07-22T20:33:28.123648-07:00",
           "size": size, "digest": format!("{:064x}", size), "capabilities": ["completion"],
           "details": {"parent_model": "", "format": "gguf", "family": family,
                       "families": [family], "parameter_size": "3.2B",
                       "quantization_level": "Q4_K_M"}})
}

/// What an alias with no listed target looks like.
fn unlisted(alias: &str) -> Value {
    json!({"name": alias, "model": alias, "modified_at": "1970-01-01T00:00:00Z", "size": 0,
           "digest": "", "details": {"parent_model": "", "format": "", "family": "",
           "families": null, "parameter_size": "", "quantization_level": ""}})
}

/// `entry` under another name: an alias's entry when `entry` is its target's.
fn renamed(mut entry: Value, alias: &str) -> Value {
    entry["name"] = alias.into();
    entry["model"] = alias.into();
    entry
}

/// A backend responding to `/api/tags` with these entries.
async fn tags_backend(entries: Vec<Value>) -> Backend {
    let body = json!({ "models": entries }).to_string();
    Backend::start(move |_| {
        let body = body.clone();
        async move { json_response(200, &body) }
    })
    .await
}

/// A native table: upstream `models` at `url` (with `extra` lines under it), more upstreams,
/// `aliases` under `models:`, and `/api` passed through to `models`.
fn native_table(url: &str, extra: &str, more: &str, aliases: &str) -> String {
    let models = if aliases.is_empty() {
        String::new()
    } else {
        format!("models:\n{aliases}")
    };
    table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n{extra}{more}\
         {models}routes:\n  - {{ prefix: /api, to: models }}\n"
    ))
}

fn names(tags: &Value) -> Vec<&str> {
    tags["models"]
        .as_array()
        .unwrap_or_else(|| panic!("no models list: {tags}"))
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect()
}

/// Aliases on the route's own upstream: the target's whole entry under the alias's name
/// (`all-minilm` finds `all-minilm:latest`), an unlisted target an entry with empty details,
/// the upstream's own entries as they were; aliases in name order, after the upstream's.
#[tokio::test]
async fn tags_list_each_alias_with_its_targets_details() {
    let llama = entry("llama3.2:3b", 2_019_393_189, "llama");
    let minilm = entry("all-minilm:latest", 45_960_996, "bert");
    let backend = tags_backend(vec![llama.clone(), minilm.clone()]).await;
    let aliases = "  gpt-4o-mini: { upstream: models, model: \"llama3.2:3b\" }\n  \
                   text-embedding-3-small: { upstream: models, model: all-minilm }\n  \
                   big: { upstream: models, model: \"llama3.1:405b\" }\n";
    let lingo = Lingo::start(&native_table(&backend.url(), "", "", aliases)).await;
    let response = get(&lingo.url("/api/tags?page=1")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(
        response.json(),
        json!({"models": [llama.clone(), minilm.clone(), unlisted("big"),
                          renamed(llama, "gpt-4o-mini"),
                          renamed(minilm, "text-embedding-3-small")]})
    );
    let seen = backend.requests();
    assert_eq!(seen.len(), 1, "one upstream, asked once");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].uri.as_str()),
        ("GET", "/api/tags?page=1")
    );
}

/// An alias whose target is on another upstream takes that upstream's entry; both upstreams
/// are asked at once (the route's upstream responds only once the other has been asked).
#[tokio::test]
async fn an_alias_on_another_upstream_is_described_by_that_upstreams_list() {
    let asked = Arc::new(Notify::new());
    let other_asked = Arc::clone(&asked);
    let far = entry("qwen2.5:72b", 47_415_724_883, "qwen2");
    let far_body = json!({ "models": [far.clone()] }).to_string();
    let other = Backend::start(move |_| {
        other_asked.notify_one();
        let body = far_body.clone();
        async move { json_response(200, &body) }
    })
    .await;
    let local = entry("llama3.2:3b", 2_019_393_189, "llama");
    let local_body = json!({ "models": [local.clone()] }).to_string();
    let own = Backend::start(move |_| {
        let asked = Arc::clone(&asked);
        let body = local_body.clone();
        async move {
            match tokio::time::timeout(Duration::from_secs(5), asked.notified()).await {
                Ok(()) => json_response(200, &body),
                Err(_) => json_response(500, r#"{"error":"the other upstream was not asked"}"#),
            }
        }
    })
    .await;
    let more = format!(
        "  far:\n    url: {}\n    speaks: native\n    auth: {{ bearer: {{ value: far-key }} }}\n",
        other.url()
    );
    let aliases = "  smart: { upstream: far, model: \"qwen2.5:72b\" }\n";
    let lingo = Lingo::start(&native_table(&own.url(), "", &more, aliases)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        response.json(),
        json!({"models": [local, renamed(far, "smart")]})
    );
    let seen = other.last();
    assert_eq!(
        (seen.method.as_str(), seen.uri.as_str()),
        ("GET", "/api/tags")
    );
    assert_eq!(
        seen.headers["authorization"], "Bearer far-key",
        "its own key"
    );
}

/// Another upstream that is down, responds with an error, or with what is not a model list:
/// its aliases are still listed (without details), and the response is still a 200.
#[tokio::test]
async fn another_upstream_failing_still_lists_its_aliases() {
    let local = entry("llama3.2:3b", 2_019_393_189, "llama");
    let own = tags_backend(vec![local.clone()]).await;
    let failing = Backend::json(500, r#"{"error":"boom"}"#).await;
    let garbled = Backend::json(200, r#"{"models":"soon"}"#).await;
    let down = closed_port().await;
    let more = format!(
        "  failing:\n    url: {}\n    speaks: native\n  \
           garbled:\n    url: {}\n    speaks: native\n  \
           down:\n    url: http://{down}\n    speaks: native\n",
        failing.url(),
        garbled.url()
    );
    let aliases = "  a: { upstream: failing, model: m }\n  b: { upstream: garbled, model: m }\n  \
                   c: { upstream: down, model: m }\n  d: { upstream: models, model: \"llama3.2:3b\" }\n";
    let lingo = Lingo::start(&native_table(&own.url(), "", &more, aliases)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        response.json(),
        json!({"models": [local.clone(), unlisted("a"), unlisted("b"), unlisted("c"),
                          renamed(local, "d")]})
    );
}

/// The route's own upstream failing is the client's response, as pass-through would show it:
/// its status, a native `{"error"}`, the upstream's key never in it.
#[tokio::test]
async fn the_route_upstreams_failure_is_retold_without_its_key() {
    const KEY: &str = "sk-upstream-secret-4242";
    let backend = Backend::start(|seen| async move {
        let key = seen.headers["authorization"].to_str().unwrap().to_owned();
        json_response(
            401,
            &json!({ "error": format!("invalid key {key}") }).to_string(),
        )
    })
    .await;
    let auth = format!("    auth: {{ bearer: {{ value: {KEY} }} }}\n");
    let aliases = "  gpt-4o-mini: { upstream: models, model: m }\n";
    let lingo = Lingo::start(&native_table(&backend.url(), &auth, "", aliases)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 401);
    assert_eq!(
        response.json(),
        json!({"error": "invalid key Bearer <redacted>"})
    );
    assert!(!response.body.contains(KEY) && !format!("{:?}", response.headers).contains(KEY));
    assert_eq!(
        backend.last().headers["authorization"],
        format!("Bearer {KEY}")
    );

    let garbled = Backend::json(200, "<html>not a list</html>").await;
    let lingo = Lingo::start(&native_table(&garbled.url(), "", "", aliases)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 502);
    let message = response.json()["error"].as_str().unwrap().to_owned();
    assert!(message.contains("unexpected model list"), "{message}");

    let down = closed_port().await;
    let lingo = Lingo::start(&native_table(&format!("http://{down}"), "", "", aliases)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 502);
    assert!(response.json()["error"].is_string(), "{}", response.body);
}

/// What stays pass-through, byte for byte and header for header: `/api/tags` when the table
/// has no aliases (or only aliases native clients cannot use), and `HEAD`/`POST` even with
/// aliases.
#[tokio::test]
async fn tags_pass_through_when_there_is_nothing_to_add() {
    const RAW: &str = "{\"models\": [ ],\n \"odd\": true}";
    let backend = Backend::start(|_| async {
        let mut response = json_response(200, RAW);
        response
            .fields_mut()
            .insert("x-upstream", "yes".parse().unwrap());
        response
    })
    .await;
    let chat = Backend::json(200, "{}").await;
    let only_chat = format!(
        "  chat:\n    url: {}\n    speaks: chat-completions\n",
        chat.url()
    );
    for (more, aliases) in [
        (String::new(), ""),
        (only_chat, "  gpt-4o: { upstream: chat, model: gpt-4o }\n"),
    ] {
        let lingo = Lingo::start(&native_table(&backend.url(), "", &more, aliases)).await;
        let response = get(&lingo.url("/api/tags")).await;
        assert_eq!(
            (response.status.as_u16(), response.body.as_str()),
            (200, RAW)
        );
        assert_eq!(
            response.headers["x-upstream"], "yes",
            "the upstream's own response"
        );
    }
    let aliases = "  gpt-4o-mini: { upstream: models, model: m }\n";
    let lingo = Lingo::start(&native_table(&backend.url(), "", "", aliases)).await;
    for method in [Method::HEAD, Method::POST] {
        let response = send(request(method.clone(), &lingo.url("/api/tags"), &[], "")).await;
        assert_eq!(response.status, 200);
        assert_eq!(response.headers["x-upstream"], "yes", "{method}");
        assert_eq!(backend.last().method, method);
    }
    let merged = get(&lingo.url("/api/tags")).await;
    assert_eq!(
        names(&merged.json()),
        ["gpt-4o-mini"],
        "GET is the one merged"
    );
    assert!(!merged.headers.contains_key("x-upstream"));
}

/// `/api/show` for an alias (`model`, or `name` as older clients send it) goes to its target
/// and responds with the target's details, named as the alias; a missing model is a native 404.
#[tokio::test]
async fn show_for_an_alias_responds_with_its_targets_details() {
    let lingo = Lingo::start(&table(
        "upstreams:\n  models:\n    mock: {}\n    speaks: native\n\
         models:\n  gpt-4o-mini: { upstream: models, model: \"llama3.2:3b\" }\n  \
           text-embedding-3-small: { upstream: models, model: all-minilm }\n  \
           gone: { upstream: models, model: missing-model }\n\
         routes:\n  - { prefix: /api, to: models }\n",
    ))
    .await;
    let tags = get(&lingo.url("/api/tags")).await.json();
    let details = |name: &str| {
        tags["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {tags}"))["details"]
            .clone()
    };
    for (body, alias, target) in [
        (
            json!({"model": "gpt-4o-mini"}),
            "gpt-4o-mini",
            "llama3.2:3b",
        ),
        (
            json!({"name": "text-embedding-3-small"}),
            "text-embedding-3-small",
            "all-minilm:latest",
        ),
    ] {
        let show = send(request(
            Method::POST,
            &lingo.url("/api/show"),
            &[],
            &body.to_string(),
        ))
        .await;
        assert_eq!(show.status, 200, "{alias}: {}", show.body);
        let show = show.json();
        assert_eq!(show["details"], details(target), "{alias}");
        assert_eq!(
            show["details"],
            details(alias),
            "/api/tags and /api/show agree"
        );
        assert_eq!(show["model"], alias);
        assert!(show["model_info"]["general.architecture"].is_string());
    }
    for model in ["gone", "missing-too"] {
        let body = json!({ "model": model }).to_string();
        let missing = send(request(Method::POST, &lingo.url("/api/show"), &[], &body)).await;
        assert_eq!(missing.status, 404, "{model}");
        let error = missing.json()["error"].as_str().unwrap().to_owned();
        assert!(
            error.starts_with("model '") && error.ends_with("' not found"),
            "{error}"
        );
    }
}
