//! rustls configs, built at load time so a bad certificate, key or CA file fails `lingo check`
//! (and a reload) instead of the first handshake: a listener's server config and an
//! upstream's client config.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::version::{TLS12, TLS13};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

/// Reads a PEM certificate chain and key and builds a server config: ring provider (one
/// provider for the whole binary), TLS 1.3 and 1.2, no client certificates, ALPN `h2` then
/// `http/1.1`. Errors name the file and never quote its contents (the key is a secret).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_problem(cert, "certificate", e))?;
    if chain.is_empty() {
        return Err(pem_problem(cert, "certificate", pem::Error::NoItemsFound));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| pem_problem(key, "private key", e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&TLS13, &TLS12])
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            let why = match e {
                rustls::Error::InconsistentKeys(_) => {
                    "the key does not belong to the certificate".to_owned()
                }
                e => e.to_string(),
            };
            format!(
                "certificate `{}` and key `{}` cannot be used together: {why}",
                cert.display(),
                key.display()
            )
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Words a PEM error without its payload: pem's own messages may quote lines of the file.
fn pem_problem(path: &Path, what: &str, error: pem::Error) -> String {
    let path = path.display();
    match error {
        pem::Error::Io(e) => format!("cannot read TLS {what} file `{path}`: {e}"),
        pem::Error::NoItemsFound => format!("no PEM {what} found in `{path}`"),
        _ => format!("TLS {what} file `{path}` is not valid PEM"),
    }
}

/// How an https upstream's certificate is checked.
#[derive(Debug, Clone, Default)]
pub enum Verify<'a> {
    /// Against the bundled web PKI roots.
    #[default]
    WebPki,
    /// Against the bundled roots plus the CA certificates in a PEM file (self-hosted backends).
    ExtraCa(&'a Path),
    /// Not at all: `insecure_skip_verify: true`, for tests and closed networks only.
    Skip,
}

/// The rustls client config for one upstream: ring provider, TLS 1.3 and 1.2. ALPN is left
/// empty: the connector sets it from the HTTP versions the upstream is allowed.
pub fn client_config(verify: Verify<'_>) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&TLS13, &TLS12])
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = match verify {
        Verify::WebPki => builder.with_root_certificates(roots),
        Verify::ExtraCa(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| pem_problem(path, "CA certificate", e))?;
            if certs.is_empty() {
                return Err(pem_problem(
                    path,
                    "CA certificate",
                    pem::Error::NoItemsFound,
                ));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    format!(
                        "CA file `{}` holds a certificate rustls refuses: {e}",
                        path.display()
                    )
                })?;
            }
            builder.with_root_certificates(roots)
        }
        Verify::Skip => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider))),
    };
    Ok(Arc::new(config.with_no_client_auth()))
}

/// Accepts any certificate, but still checks that the handshake is signed by the key in it,
/// so the connection is encrypted to *someone*; only who that is goes unchecked.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
