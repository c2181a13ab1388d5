//! The official OpenAI Python SDK against lingo (`tests/sdk/openai_chat.py`).
//!
//! CI installs the SDK (`.ci/run`); where it is missing outside CI, the test prints a
//! `SKIPPED:` line in `cargo test`'s normal output (`pip install openai` enables it). With `CI`
//! set, a missing SDK fails.

mod support;

use std::process::Command;

use support::*;

#[tokio::test]
async fn openai_python_sdk_works_unchanged() {
    let has_sdk = Command::new("python3")
        .args(["-c", "import openai"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_sdk && !can_run("the openai Python package", "pip install openai") {
        return;
    }
    let lingo = Lingo::start(&table(
        "upstreams:\n  models:\n    mock: { tokens: 4 }\n    speaks: native\n\
         models:\n  gpt-4o-mini: { upstream: models, model: llama3.2 }\n\
         routes:\n  - { path: /v1/chat/completions, speaks: chat-completions, to: models }\n",
    ))
    .await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_chat.py");
    let base_url = lingo.url("/v1");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("python3").arg(script).arg(base_url).output()
    })
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK script failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("openai sdk: ok"), "{stdout}");
}
