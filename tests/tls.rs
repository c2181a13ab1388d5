//! HTTPS listeners: rustls, HTTP/1.1 and HTTP/2 chosen by ALPN, the forwarded proto, and a
//! certificate rotated by reload. Every certificate is made by the test (support::pki).

mod support;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use rustls::pki_types::pem::PemObject;
use support::pki::TestCa;
use support::*;
use tokio::net::TcpStream;

/// A table whose listener serves `cert.pem`/`cert.key` from `dir`.
fn tls_table(dir: &Path, backend: &Backend) -> String {
    format!(
        "listen:\n  - addr: 127.0.0.1:0\n    tls: {{ cert: {dir}/cert.pem, key: {dir}/cert.key }}\n\
         upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url(),
        dir = dir.display()
    )
}

/// A CA, and a listener certificate for `localhost` it signed, written to a new directory.
fn issued() -> (TestCa, tempfile::TempDir) {
    let ca = TestCa::new("lingo test CA");
    let dir = tempfile::tempdir().unwrap();
    ca.issue("localhost").write(dir.path(), "cert");
    (ca, dir)
}

/// A TLS handshake with lingo, trusting only `ca`, offering one ALPN protocol.
async fn handshake(
    addr: std::net::SocketAddr,
    ca: &TestCa,
    alpn: &[u8],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    handshake_with(addr, ca, &[alpn], rustls::DEFAULT_VERSIONS).await
}

/// The same, offering only the TLS `versions` given.
async fn handshake_with(
    addr: std::net::SocketAddr,
    ca: &TestCa,
    alpn: &[&[u8]],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    let der = rustls::pki_types::CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap();
    roots.add(der).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

fn get_tags(addr: std::net::SocketAddr) -> Request<Empty<Bytes>> {
    Request::get(format!("https://localhost:{}/api/tags", addr.port()))
        .body(Empty::new())
        .unwrap()
}

/// `GET /api/tags` over HTTP/1.1 on `tls`: the connection's sender (it stays open while that
/// is held) and the response.
async fn tags_over_http1(
    tls: tokio_rustls::client::TlsStream<TcpStream>,
    addr: std::net::SocketAddr,
) -> (
    hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    hyper::Response<hyper::body::Incoming>,
) {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = get_tags(addr);
    let host = format!("localhost:{}", addr.port());
    req.fields_mut().insert("host", host.parse().unwrap());
    let response = sender.send_request(req).await.unwrap();
    (sender, response)
}

/// `GET /api/tags` over HTTP/2 on `tls`, as [`tags_over_http1`].
async fn tags_over_http2(
    tls: tokio_rustls::client::TlsStream<TcpStream>,
    addr: std::net::SocketAddr,
) -> (
    hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    hyper::Response<hyper::body::Incoming>,
) {
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let response = sender.send_request(get_tags(addr)).await.unwrap();
    (sender, response)
}

#[tokio::test]
async fn serves_http1_over_tls() {
    let (ca, dir) = issued();
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start(&tls_table(dir.path(), &backend)).await;
    let tls = handshake(lingo.addr, &ca, b"http/1.1").await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (_sender, response) = tags_over_http1(tls, lingo.addr).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.into_body().collect().await.unwrap().to_bytes(),
        r#"{"models":[]}"#
    );
    assert_eq!(backend.last().headers["x-forwarded-proto"], "https");
}

/// On two workers, TLS connections are spread like plain ones, and one handed to the other
/// worker before its handshake is served there (in HTTP/1.1 and HTTP/2 alike).
#[tokio::test]
async fn tls_connections_are_spread_over_the_workers() {
    let (ca, dir) = issued();
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start_on(&tls_table(dir.path(), &backend), 2).await;
    let (mut h1, mut h2) = (Vec::new(), Vec::new());
    for alpn in [&b"http/1.1"[..], b"h2"].repeat(4) {
        let tls = handshake(lingo.addr, &ca, alpn).await.unwrap();
        let response = if alpn == b"h2" {
            let (sender, response) = tags_over_http2(tls, lingo.addr).await;
            h2.push(sender);
            response
        } else {
            let (sender, response) = tags_over_http1(tls, lingo.addr).await;
            h1.push(sender);
            response
        };
        assert_eq!(response.status(), 200);
        // Read to its end: a client that drops a response's body unread closes the connection.
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, r#"{"models":[]}"#);
    }
    let text = lingo.reloader.metrics().render();
    for worker in [1, 2] {
        let series = format!(r#"lingo_open_connections{{worker="{worker}"}}"#);
        assert_eq!(metric(&text, &series), Some(4.0), "{text}");
    }
}

#[tokio::test]
async fn serves_http2_over_tls() {
    let (ca, dir) = issued();
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start(&tls_table(dir.path(), &backend)).await;
    let tls = handshake(lingo.addr, &ca, b"h2").await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (_sender, response) = tags_over_http2(tls, lingo.addr).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.into_body().collect().await.unwrap().to_bytes(),
        r#"{"models":[]}"#
    );
    let seen = backend.last();
    assert_eq!(seen.headers["x-forwarded-proto"], "https");
    assert_eq!(
        seen.headers["x-forwarded-host"],
        format!("localhost:{}", lingo.addr.port()).as_str()
    );
}

/// Certificate rotation: the files are replaced by a certificate from another CA and the
/// table reloaded; new connections get the new certificate (a client trusting only the new
/// CA is refused before and accepted after), with no restart.
#[tokio::test]
async fn a_reload_rotates_the_certificate() {
    let (old_ca, dir) = issued();
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&tls_table(dir.path(), &backend)).await;
    let new_ca = TestCa::new("renewed CA");
    assert!(handshake(lingo.addr, &old_ca, b"h2").await.is_ok());
    assert!(handshake(lingo.addr, &new_ca, b"h2").await.is_err());

    new_ca.issue("localhost").write(dir.path(), "cert");
    lingo.reloader.reload(true).unwrap();
    assert!(handshake(lingo.addr, &new_ca, b"h2").await.is_ok());
    assert!(handshake(lingo.addr, &old_ca, b"h2").await.is_err());

    // A broken certificate is refused and the renewed one keeps serving.
    std::fs::write(dir.path().join("cert.pem"), "not a certificate").unwrap();
    assert!(lingo.reloader.reload(true).is_err());
    assert!(handshake(lingo.addr, &new_ca, b"h2").await.is_ok());
}

/// A certificate renewed in its own directory (as certbot or cert-manager do) is picked up by
/// the file watch alone: no SIGHUP, no edit of the table.
#[tokio::test]
async fn a_renewed_certificate_is_picked_up_without_a_signal() {
    let (old_ca, dir) = issued();
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&tls_table(dir.path(), &backend)).await;
    assert_ne!(lingo.config_path().parent(), Some(dir.path()));
    let generation = lingo.reloader.snapshot().generation;
    let new_ca = TestCa::new("renewed CA");
    new_ca.issue("localhost").write(dir.path(), "cert");
    let mut renewed = false;
    for _ in 0..200 {
        if handshake(lingo.addr, &new_ca, b"h2").await.is_ok() {
            renewed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(renewed, "the renewed certificate was not picked up");
    assert!(handshake(lingo.addr, &old_ca, b"h2").await.is_err());
    assert!(lingo.reloader.snapshot().generation > generation);
}

/// TLS 1.3 and 1.2 are both served (and nothing older exists in rustls to be offered).
#[tokio::test]
async fn tls_1_2_and_1_3_are_served() {
    let (ca, dir) = issued();
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&tls_table(dir.path(), &backend)).await;
    for (version, name) in [
        (&rustls::version::TLS12, rustls::ProtocolVersion::TLSv1_2),
        (&rustls::version::TLS13, rustls::ProtocolVersion::TLSv1_3),
    ] {
        let tls = handshake_with(lingo.addr, &ca, &[b"http/1.1"], &[version])
            .await
            .unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_eq!(tls.get_ref().1.protocol_version(), Some(name));
    }
}

/// Over `max_connections` on a `tls:` listener the refusal is spoken over TLS: a TLS client
/// reads a 503 with `Retry-After`, not a plain-text response it would take for a broken handshake.
/// It is spoken over HTTP/1.1 even to a client that offers h2 first, so that the connection
/// closes after the one response.
#[tokio::test]
async fn a_tls_connection_over_the_cap_is_told_503_over_tls() {
    let (ca, dir) = issued();
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let table = format!(
        "{}limits: {{ max_connections: 1 }}\n",
        tls_table(dir.path(), &backend)
    );
    let lingo = Lingo::start(&table).await;
    let first = handshake(lingo.addr, &ca, b"h2").await.unwrap();
    let (mut held, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(first))
            .await
            .unwrap();
    tokio::spawn(conn);
    let response = held.send_request(get_tags(lingo.addr)).await.unwrap();
    assert_eq!(response.status(), 200);

    let offers: &[&[u8]] = &[b"h2", b"http/1.1"];
    let second = handshake_with(lingo.addr, &ca, offers, rustls::DEFAULT_VERSIONS)
        .await
        .unwrap();
    assert_eq!(second.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (_sender, refused) = tags_over_http1(second, lingo.addr).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.fields()["retry-after"], "1");
    let body = refused.into_body().collect().await.unwrap().to_bytes();
    assert!(
        body.starts_with(br#"{"error":"lingo is at its limit of 1 connections"#),
        "{body:?}"
    );
    assert_eq!(backend.requests().len(), 1);
}

/// A web-data upstream responding to a crawl start with a `url` on its own address.
async fn crawl_backend() -> Backend {
    Backend::start(|seen| async move {
        let host = seen.headers["host"].to_str().unwrap().to_owned();
        json_response(
            200,
            &format!(r#"{{"success":true,"id":"a","url":"http://{host}/v1/crawl/a"}}"#),
        )
    })
    .await
}

/// POSTs `/v1/crawl` over HTTP/1.1 on TLS with `Host: localhost:PORT`; the response's `url`.
async fn crawl_over_tls(addr: std::net::SocketAddr, ca: &TestCa) -> String {
    let tls = handshake(addr, ca, b"http/1.1").await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::post(format!("https://localhost:{}/v1/crawl", addr.port()))
        .header("host", format!("localhost:{}", addr.port()))
        .body(http_body_util::Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    json["url"].as_str().unwrap().to_owned()
}

/// On a TLS listener, web-data links are re-based onto `https://` and the client's `Host`;
/// with `public_url`, onto that.
#[tokio::test]
async fn web_data_links_are_rebased_onto_https_or_the_public_url_on_tls() {
    let (ca, dir) = issued();
    let backend = crawl_backend().await;
    for public_url in [None, Some("https://proxy.example.com")] {
        let yaml = format!(
            "listen:\n  - addr: 127.0.0.1:0\n    tls: {{ cert: {dir}/cert.pem, key: {dir}/cert.key }}\n{public}\
             upstreams:\n  web:\n    url: {}\n    speaks: web-data\nroutes:\n  - {{ prefix: /v1, to: web }}\n",
            backend.url(),
            dir = dir.path().display(),
            public = public_url
                .map(|u| format!("    public_url: {u}\n"))
                .unwrap_or_default(),
        );
        let lingo = Lingo::start(&yaml).await;
        let url = crawl_over_tls(lingo.addr, &ca).await;
        let want = match public_url {
            None => format!("https://localhost:{}/v1/crawl/a", lingo.addr.port()),
            Some(base) => format!("{base}/v1/crawl/a"),
        };
        assert_eq!(url, want);
        assert_eq!(backend.last().headers["x-forwarded-proto"], "https");
    }
}

/// A client that opens a TCP connection to a TLS listener and never starts the handshake is
/// dropped once the 10 s handshake limit passes (never before it: only a lower bound is
/// checked, which load cannot break).
#[tokio::test]
async fn a_tls_handshake_that_never_starts_is_dropped_after_10s() {
    use tokio::io::AsyncReadExt;
    let (_ca, dir) = issued();
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&tls_table(dir.path(), &backend)).await;
    let mut silent = TcpStream::connect(lingo.addr).await.unwrap();
    let opened = std::time::Instant::now();
    let mut buf = [0u8; 64];
    // A guard, not a threshold: the connection must end by itself well before it.
    let read = tokio::time::timeout(std::time::Duration::from_secs(120), silent.read(&mut buf))
        .await
        .expect("a silent TLS client was never dropped");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(
        opened.elapsed() >= std::time::Duration::from_secs(10),
        "dropped after {:?}, before the 10 s limit",
        opened.elapsed()
    );
}
