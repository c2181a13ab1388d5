//! HTTPS listeners: rustls, HTTP/1.1 and HTTP/2 chosen by ALPN, and the forwarded proto.

mod support;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use rustls::pki_types::pem::PemObject;
use support::*;
use tokio::net::TcpStream;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

fn tls_table(backend: &Backend) -> String {
    format!(
        "listen:\n  - addr: 127.0.0.1:0\n    tls: {{ cert: {FIXTURES}/server.pem, key: {FIXTURES}/server.key }}\n\
         upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    )
}

/// A TLS connection to lingo that trusts only the test CA, offering one ALPN protocol.
async fn connect(
    addr: std::net::SocketAddr,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(
            rustls::pki_types::CertificateDer::from_pem_file(format!("{FIXTURES}/ca.pem")).unwrap(),
        )
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap()
}

fn get_tags(addr: std::net::SocketAddr) -> Request<Empty<Bytes>> {
    Request::get(format!("https://localhost:{}/api/tags", addr.port()))
        .body(Empty::new())
        .unwrap()
}

#[tokio::test]
async fn serves_http1_over_tls() {
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start(&tls_table(&backend)).await;
    let tls = connect(lingo.addr, b"http/1.1").await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = get_tags(lingo.addr);
    req.headers_mut().insert(
        "host",
        format!("localhost:{}", lingo.addr.port()).parse().unwrap(),
    );
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.into_body().collect().await.unwrap().to_bytes(),
        r#"{"models":[]}"#
    );
    assert_eq!(backend.last().headers["x-forwarded-proto"], "https");
}

#[tokio::test]
async fn serves_http2_over_tls() {
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start(&tls_table(&backend)).await;
    let tls = connect(lingo.addr, b"h2").await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let response = sender.send_request(get_tags(lingo.addr)).await.unwrap();
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

/// The certificate is read again on reload and used for new connections: after a reload to
/// a self-signed CA certificate, a client that trusts only that certificate gets it (and
/// rustls refuses a CA certificate as a server's own, which is the proof it was served).
#[tokio::test]
async fn a_reload_swaps_the_certificate() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&tls_table(&backend)).await;
    connect(lingo.addr, b"h2").await;
    let other = tls_table(&backend)
        .replace("server.pem", "localhost.pem")
        .replace("server.key", "localhost.key");
    std::fs::write(lingo.config_path(), other).unwrap();
    lingo.reloader.reload(true).unwrap();

    let mut roots = rustls::RootCertStore::empty();
    let pem = format!("{FIXTURES}/localhost.pem");
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_file(pem).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(lingo.addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let err = connector.connect(name, tcp).await.unwrap_err().to_string();
    assert!(err.contains("CaUsedAsEndEntity"), "{err}");
}
