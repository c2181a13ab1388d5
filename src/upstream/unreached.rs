//! Why an upstream could not be used, in words a client can act on: "connection refused",
//! "DNS lookup failed", "TLS handshake failed: ...". The system's own text ("Connection
//! refused (os error 111)") says which host lingo runs on and little more to the client;
//! it goes to the log instead (`ProxyError::Unreachable`'s `detail`).

use std::error::Error as StdError;
use std::io;

use super::h1;

/// What any other failure is told as.
const FAILED: &str = "the connection failed";
const CLOSED: &str = "the upstream closed the connection before responding";

/// The first cause along `err`'s chain that has words of its own.
pub fn in_words(err: &(dyn StdError + 'static)) -> String {
    for e in causes(err) {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return format!("TLS handshake failed: {tls}");
        }
        if let Some(io) = e.downcast_ref::<io::Error>()
            && let Some(words) = io_words(io)
        {
            return words.to_owned();
        }
        let closed = e
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
            || matches!(e.downcast_ref(), Some(h1::SendError::Closed));
        if closed {
            return CLOSED.to_owned();
        }
        if is_dns(e) {
            return "DNS lookup of the upstream's host failed".to_owned();
        }
    }
    FAILED.to_owned()
}

/// `err` and its causes, outermost first. An I/O error's `source` skips the error it carries
/// (it is that error's `source`), and an I/O error may carry another (hyper-rustls wraps
/// tokio-rustls's, which carries rustls's): `get_ref` goes through each.
fn causes<'a>(err: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut out = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        out.push(e);
        next = match e.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
            Some(carried) => Some(carried as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    out
}

fn io_words(io: &io::Error) -> Option<&'static str> {
    use io::ErrorKind as K;
    Some(match io.kind() {
        K::ConnectionRefused => "connection refused",
        K::ConnectionReset => "the connection was reset",
        K::ConnectionAborted => "the connection was aborted",
        K::BrokenPipe | K::UnexpectedEof => CLOSED,
        K::HostUnreachable | K::NetworkUnreachable | K::NetworkDown => {
            "no route to the upstream's host"
        }
        K::AddrNotAvailable => "the upstream's address is not available from this host",
        K::TimedOut => "the connection timed out",
        // The dialler's "the name has no address".
        K::NotFound => "DNS lookup of the upstream's host found no address",
        _ => return None,
    })
}

/// A name lookup that failed: hyper-util says "dns error"; the resolver (getaddrinfo, by
/// way of std) "failed to lookup address information".
fn is_dns(e: &(dyn StdError + 'static)) -> bool {
    let text = e.to_string();
    text.starts_with("dns error") || text.starts_with("failed to lookup address")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a cause, as hyper's and hyper-util's are.
    #[derive(Debug)]
    struct Wrapped(&'static str, Box<dyn StdError + Send + Sync>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(self.1.as_ref())
        }
    }

    fn wrapped(outer: &'static str, inner: impl StdError + Send + Sync + 'static) -> Wrapped {
        Wrapped(outer, Box::new(inner))
    }

    #[test]
    fn causes_are_told_in_words_without_the_systems_text() {
        let os = |code| io::Error::from_raw_os_error(code);
        let cases: Vec<(Box<dyn StdError>, &str)> = vec![
            (
                Box::new(wrapped("client error (Connect)", os(111))),
                "connection refused",
            ),
            (Box::new(os(104)), "the connection was reset"),
            (Box::new(os(113)), "no route to the upstream's host"),
            (
                Box::new(wrapped(
                    "client error (Connect)",
                    wrapped(
                        "dns error",
                        io::Error::other(
                            "failed to lookup address information: Name or service not known",
                        ),
                    ),
                )),
                "DNS lookup of the upstream's host failed",
            ),
            (
                Box::new(io::Error::other(
                    "failed to lookup address information: Temporary failure in name resolution",
                )),
                "DNS lookup of the upstream's host failed",
            ),
            (
                Box::new(io::Error::new(
                    io::ErrorKind::NotFound,
                    "the name has no address",
                )),
                "DNS lookup of the upstream's host found no address",
            ),
            (
                Box::new(wrapped(
                    "client error (Connect)",
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
                    ),
                )),
                "TLS handshake failed: invalid peer certificate: UnknownIssuer",
            ),
            // hyper-rustls wraps tokio-rustls's I/O error in one of its own.
            (
                Box::new(io::Error::other(io::Error::new(
                    io::ErrorKind::InvalidData,
                    rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                ))),
                "TLS handshake failed: received corrupt message of type InvalidContentType",
            ),
            (Box::new(h1::SendError::Closed), CLOSED),
            (Box::new(h1::SendError::Io(os(32))), CLOSED),
            (Box::new(io::Error::other("something else")), FAILED),
        ];
        for (err, words) in cases {
            let got = in_words(err.as_ref());
            assert_eq!(got, words, "{err}");
            assert!(!got.contains("os error"), "{got}");
        }
    }
}
