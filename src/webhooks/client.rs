//! The client deliveries go out with: HTTP/1.1, TLS for `https` with the bundled web PKI
//! roots, connections kept for the next delivery to the same place, redirects never
//! followed. Its resolver checks every address a name resolves to ([`dest::check`]) and the
//! connection goes to exactly the checked addresses: the name is not looked up again, so a
//! DNS response that changes between the check and the connection (rebinding) changes nothing.
//! An address written in the URL skips the resolver, so [`Deliverer::post`] checks it first.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{HeaderMap, Method, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;

use super::dest::{self, Refused};
use crate::base::cidr::Cidr;
use crate::http::message::{Request, Response};

/// How long an idle connection to a client's receiver is kept.
const IDLE: Duration = Duration::from_secs(30);

/// Idle connections kept per destination.
const IDLE_PER_HOST: usize = 32;

/// Sends deliveries for one relay (its `allow` list decides where they may go).
#[derive(Clone)]
pub struct Deliverer {
    client: Client<HttpsConnector<HttpConnector<Checked>>, Full<Bytes>>,
    allow: Arc<[Cidr]>,
}

/// Why a delivery got no response.
#[derive(Debug)]
pub enum Failure {
    /// The destination is not allowed.
    Refused(Refused),
    /// No connection, or it broke before a response.
    Unreachable(String),
}

/// Resolves names, then refuses the lot if any address is not allowed.
#[derive(Clone)]
struct Checked {
    allow: Arc<[Cidr]>,
}

/// The error the resolver gives for a refused address, found again in the client's error.
#[derive(Debug)]
struct RefusedError(Refused);

// === impl Deliverer ===

impl Deliverer {
    pub fn new(allow: &[Cidr]) -> Deliverer {
        let allow: Arc<[Cidr]> = allow.into();
        let mut http = HttpConnector::new_with_resolver(Checked {
            allow: Arc::clone(&allow),
        });
        http.enforce_http(false);
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config())
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE)
            .pool_max_idle_per_host(IDLE_PER_HOST)
            .build(https);
        Deliverer { client, allow }
    }

    /// Whether `url` may be delivered to as far as its text tells (an address written in
    /// it); a name is checked when it is resolved.
    pub fn check_literal(&self, url: &Uri) -> Result<(), Refused> {
        match url.host().and_then(dest::literal) {
            Some(addr) => dest::check(addr, &self.allow),
            None => Ok(()),
        }
    }

    /// POSTs `body` with `headers` to `url`; the response's head (its body is not read). The
    /// caller bounds the time it may take.
    pub async fn post(
        &self,
        url: &Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response<hyper::body::Incoming>, Failure> {
        self.check_literal(url).map_err(Failure::Refused)?;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = url.clone();
        *request.headers_mut() = headers;
        let sent = self.client.request(request.into_hyper()).await;
        sent.map(Response::from).map_err(|err| {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
            while let Some(err) = source {
                if let Some(RefusedError(refused)) = err.downcast_ref() {
                    return Failure::Refused(*refused);
                }
                source = err.source();
            }
            Failure::Unreachable(chain(&err))
        })
    }
}

/// An error and its causes, in one line.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(err) = source {
        let cause = err.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = err.source();
    }
    text
}

// === impl Checked ===

impl tower_service::Service<Name> for Checked {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let allow = Arc::clone(&self.allow);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = match dest::literal(name.as_str()) {
                Some(addr) => vec![SocketAddr::new(addr, 0)],
                None => tokio::net::lookup_host((name.as_str(), 0)).await?.collect(),
            };
            for addr in &addrs {
                dest::check(addr.ip(), &allow).map_err(RefusedError)?;
            }
            Ok(addrs.into_iter())
        })
    }
}

// === impl RefusedError ===

impl std::fmt::Display for RefusedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is {}", self.0.addr, self.0.range)
    }
}

impl std::error::Error for RefusedError {}

/// What a refused destination says in logs and responses.
pub fn refusal(refused: &Refused) -> String {
    let addr: IpAddr = refused.addr;
    format!(
        "{addr} is {}, which lingo does not deliver webhooks to (webhooks.allow names the ranges it may)",
        refused.range
    )
}

/// A TLS client that verifies with the bundled web PKI roots.
fn tls_config() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}
