//! A listener's rustls server config, built at load time so a bad certificate or key fails
//! `lingo check` (and a reload) instead of the first handshake.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::version::{TLS12, TLS13};

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
