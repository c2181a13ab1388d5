//! Golden files for web-data v1 clients over a v2 upstream: each
//! `tests/fixtures/webdata/*.json` is one exchange as a v1 client and a v2 upstream see it
//! (`method`, `path`, `query`, `body`; the upstream's `status` and `response`), and
//! `tests/fixtures/expected/webdata/*.json` is what lingo makes of it: the v2 request it sends
//! (`upstream`) or the v1 error it sends instead (`refused`), and the response the client gets.
//! lingo's address is `http://lingo:8080`. `LINGO_BLESS=1 cargo test --test golden_webdata`
//! rewrites the expected files.

use std::path::Path;

use lingo::translate::webdata::{self, ResponseContext};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// What lingo makes of one exchange.
fn exchange(input: &Value) -> Value {
    let method = input["method"].as_str().unwrap();
    let path = input["path"].as_str().unwrap();
    let route = match webdata::route(method, path, input["query"].as_str()) {
        Ok(route) => route,
        Err(refusal) => return refused(&refusal),
    };
    let body = input
        .get("body")
        .map_or(Vec::new(), |b| b.to_string().into_bytes());
    let translated = match webdata::request(route.call, &body) {
        Ok(translated) => translated,
        Err(refusal) => return refused(&refusal),
    };
    let sent = translated
        .body
        .map(|b| serde_json::from_slice::<Value>(&b).unwrap());
    let mut out =
        json!({"upstream": {"method": method, "path": route.path_and_query, "body": sent}});
    if let Some(response) = input.get("response") {
        let at = ResponseContext {
            call: route.call,
            json_as: translated.json_as,
            public_base: "http://lingo:8080",
            base_path: "",
        };
        let status = u16::try_from(input["status"].as_u64().unwrap()).unwrap();
        let raw = response.to_string();
        let v1 = webdata::response(&at, status, raw.as_bytes())
            .map_or(raw, |b| String::from_utf8(b.to_vec()).unwrap());
        out["response"] =
            json!({"status": status, "body": serde_json::from_str::<Value>(&v1).unwrap()});
    }
    out
}

fn refused(refusal: &webdata::V1Error) -> Value {
    let body: Value = serde_json::from_slice(&refusal.body()).unwrap();
    json!({"refused": {"status": refusal.status, "body": body}})
}

#[test]
fn golden_webdata_exchanges() {
    let bless = std::env::var_os("LINGO_BLESS").is_some();
    let mut inputs: Vec<_> = std::fs::read_dir(Path::new(FIXTURES).join("webdata"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 8);
    for input in inputs {
        let name = input.file_stem().unwrap().to_str().unwrap().to_owned();
        let parsed: Value = serde_json::from_slice(&std::fs::read(&input).unwrap()).unwrap();
        let got = serde_json::to_string_pretty(&exchange(&parsed)).unwrap() + "\n";
        let expected_path = Path::new(FIXTURES)
            .join("expected/webdata")
            .join(format!("{name}.json"));
        if bless {
            std::fs::write(&expected_path, &got).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{expected_path:?} is missing: run with LINGO_BLESS=1"));
        assert_eq!(got, expected, "{name}");
    }
}
