//! One delivery attempt: a POST over a connection of its own (HTTP/1.1, TLS for `https`
//! with the bundled web PKI roots), whose response's status is all that counts. Redirects are
//! not followed: a 3xx is a response like any other non-2xx.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper::header::HOST;
use hyper::{HeaderMap, Method, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::http::message::Request;

/// Why an attempt failed before a status came back.
pub type AttemptError = Box<dyn std::error::Error + Send + Sync>;

/// POSTs `body` with `headers` to `url` and gives the response's status. The caller bounds
/// the time it may take.
pub async fn post(url: &Uri, headers: &HeaderMap, body: Bytes) -> Result<StatusCode, AttemptError> {
    let host = url.host().ok_or("the URL has no host")?;
    let https = url.scheme_str() == Some("https");
    let port = url.port_u16().unwrap_or(if https { 443 } else { 80 });
    // `[::1]` is written with brackets in a URL and connected to without.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let tcp = TcpStream::connect((bare, port)).await?;
    let _ = tcp.set_nodelay(true);
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = url.path_and_query().map_or("/", |p| p.as_str()).parse()?;
    let authority = url.authority().ok_or("the URL has no authority")?;
    let fields = request.headers_mut();
    *fields = headers.clone();
    fields.insert(HOST, authority.as_str().parse()?);
    let request = request.into_hyper();
    if https {
        let name = ServerName::try_from(bare.to_owned())?;
        let tls = tokio_rustls::TlsConnector::from(tls_config())
            .connect(name, tcp)
            .await?;
        exchange(tls, request).await
    } else {
        exchange(tcp, request).await
    }
}

/// Sends `request` on `io` and waits for the response's head, driving the connection
/// meanwhile; the connection closes when this returns.
async fn exchange<I>(
    io: I,
    request: hyper::Request<Full<Bytes>>,
) -> Result<StatusCode, AttemptError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = http1::handshake(TokioIo::new(io)).await?;
    let response = sender.send_request(request);
    tokio::pin!(connection);
    tokio::select! {
        response = response => Ok(response?.status()),
        ended = &mut connection => match ended {
            Err(err) => Err(err.into()),
            Ok(()) => Err("the connection closed before a response".into()),
        },
    }
}

/// A TLS client that verifies with the bundled web PKI roots, made on first use.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    });
    Arc::clone(config)
}
