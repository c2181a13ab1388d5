//! How lingo reaches its upstreams: https verified against an extra CA (and refused without
//! it), verification explicitly skipped, and HTTP/2 by ALPN or by prior knowledge.

mod support;

use hyper::Version;
use support::pki::TestCa;
use support::*;

fn native_table(url: &str, upstream_extra: &str) -> String {
    table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n{upstream_extra}\
         routes:\n  - {{ prefix: /api, to: models }}\n"
    ))
}

/// An https backend on 127.0.0.1 whose certificate, for `localhost`, is signed by `ca`.
async fn https_backend(ca: &TestCa) -> (Backend, String) {
    let config = ca.issue("localhost").server_config(&[b"h2", b"http/1.1"]);
    let backend =
        Backend::start_tls(config, |_| async { json_response(200, r#"{"models":[]}"#) }).await;
    let url = format!("https://localhost:{}", backend.addr.port());
    (backend, url)
}

#[tokio::test]
async fn https_upstream_is_verified_against_an_extra_ca() {
    let ca = TestCa::new("lingo test CA");
    let (backend, url) = https_backend(&ca).await;

    // The bundled roots alone do not know the test CA: the handshake fails, nothing is sent.
    let lingo = Lingo::start(&native_table(&url, "")).await;
    let refused = get(&lingo.url("/api/tags")).await;
    assert_eq!(refused.status, 502, "{}", refused.body);
    let message = refused.json()["error"].as_str().unwrap().to_owned();
    assert!(message.contains("certificate"), "{message}");
    assert!(backend.requests().is_empty());

    // The same upstream with the CA named in the table.
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let extra = format!("    tls: {{ ca: {} }}\n", ca_path.display());
    let lingo = Lingo::start(&native_table(&url, &extra)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body, r#"{"models":[]}"#);
    // ALPN chose HTTP/2, which the backend offers first.
    assert_eq!(backend.last().version, Version::HTTP_2);

    // A CA that did not sign the backend's certificate is still refused.
    let other = TestCa::new("another CA");
    std::fs::write(&ca_path, other.pem()).unwrap();
    let lingo = Lingo::start(&native_table(&url, &extra)).await;
    assert_eq!(get(&lingo.url("/api/tags")).await.status, 502);
}

#[tokio::test]
async fn insecure_skip_verify_connects_and_is_warned_about() {
    let ca = TestCa::new("unknown CA");
    let (backend, url) = https_backend(&ca).await;
    let extra = "    tls: { insecure_skip_verify: true }\n";
    let lingo = Lingo::start(&native_table(&url, extra)).await;
    let response = get(&lingo.url("/api/tags")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(backend.requests().len(), 1);
    let warnings = lingo.reloader.snapshot().table.warnings.join("\n");
    assert!(warnings.contains("NOT checked"), "{warnings}");
}

#[tokio::test]
async fn tls_settings_on_a_plain_http_upstream_are_refused() {
    let backend = Backend::json(200, "{}").await;
    let path = tempfile::tempdir().unwrap();
    let file = path.path().join("proxy.yaml");
    let extra = "    tls: { insecure_skip_verify: true }\n";
    std::fs::write(&file, native_table(&backend.url(), extra)).unwrap();
    let err = lingo::config::load(&file).unwrap_err().to_string();
    assert!(err.contains("applies only to an https:// url"), "{err}");
}

#[tokio::test]
async fn http2_prior_knowledge_on_plain_http() {
    let backend = Backend::start(|seen| async move {
        json_response(200, &format!(r#"{{"got":{}}}"#, seen.body.len()))
    })
    .await;
    let lingo = Lingo::start(&native_table(&backend.url(), "    http2: true\n")).await;
    let response = send(request(
        hyper::Method::POST,
        &lingo.url("/api/generate"),
        &[("content-type", "application/json")],
        r#"{"model":"m","prompt":"hi"}"#,
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body, r#"{"got":27}"#);
    assert_eq!(backend.last().version, Version::HTTP_2);

    // Left out, plain-http upstreams get HTTP/1.1.
    let lingo = Lingo::start(&native_table(&backend.url(), "")).await;
    assert_eq!(get(&lingo.url("/api/tags")).await.status, 200);
    assert_eq!(backend.last().version, Version::HTTP_11);
}
