//! Which HTTP a new connection speaks, told before a byte of it is read.
//!
//! hyper-util's auto builder finds out by reading the first 24 bytes itself (HTTP/2's
//! preface is 24 bytes) and handing them back as a prefix: a read more per connection, and
//! (with hyper's HTTP/1.1 reader) a read buffer doubled for the connection's life. So lingo
//! decides first, without consuming anything: on plain TCP by peeking at the socket, on TLS by
//! what ALPN agreed. The connection is then served by the connection for that version
//! (`protocol`: lingo's own for HTTP/1.1, whose first read takes the request whole).

use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

/// The first bytes of every HTTP/2 connection (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The longest a strict prefix of the preface is waited on between two peeks.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// An HTTP version a connection is known to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    Http1,
    Http2,
}

/// What the bytes seen so far say. `None`: they are a strict prefix of HTTP/2's preface (an
/// HTTP/1.1 request can start with `P` too), so more must be seen. No bytes at all means the
/// client closed: HTTP/1.1, whose reader then sees the end and closes quietly.
pub fn decide(seen: &[u8]) -> Option<Speaks> {
    if !PREFACE.starts_with(seen) || seen.is_empty() {
        Some(Speaks::Http1)
    } else if seen.len() == PREFACE.len() {
        Some(Speaks::Http2)
    } else {
        None
    }
}

/// Peeks at a plain connection until its first bytes decide. Nothing is read from the
/// socket. Only a client whose first segment is a strict prefix of the preface (`P`, `PR`,
/// ...) is peeked at again, after a pause that grows up to [`MAX_PAUSE`]: readiness stays set
/// while unread bytes wait, so waiting for readiness again would spin. The caller bounds the
/// whole wait (idle timeout, shutdown).
pub async fn peek(stream: &TcpStream) -> io::Result<Speaks> {
    let mut seen = [0u8; PREFACE.len()];
    let mut pause = Duration::from_millis(1);
    loop {
        let n = stream.peek(&mut seen).await?;
        if let Some(speaks) = decide(&seen[..n]) {
            return Ok(speaks);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// What ALPN agreed on a TLS connection. Without `h2` it is HTTP/1.1: HTTP/2 over TLS is
/// only ever agreed by ALPN (RFC 9113, section 3.3: prior knowledge is for cleartext only).
pub fn by_alpn(protocol: Option<&[u8]>) -> Speaks {
    match protocol {
        Some(b"h2") => Speaks::Http2,
        _ => Speaks::Http1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_decide() {
        let cases: &[(&[u8], Option<Speaks>)] = &[
            (b"", Some(Speaks::Http1)),
            (b"GET / HTTP/1.1\r\n", Some(Speaks::Http1)),
            (b"G", Some(Speaks::Http1)),
            (
                b"POST /v1/chat/completions HTTP/1.1\r\n",
                Some(Speaks::Http1),
            ),
            (b"PO", Some(Speaks::Http1)),
            (b"PUT", Some(Speaks::Http1)),
            (b"PATCH", Some(Speaks::Http1)),
            (b"PRI * HTTP/1.1\r\n", Some(Speaks::Http1)),
            (b"P", None),
            (b"PR", None),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r", None),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Some(Speaks::Http2)),
        ];
        for (seen, want) in cases {
            assert_eq!(decide(seen), *want, "{:?}", String::from_utf8_lossy(seen));
        }
    }

    #[test]
    fn alpn_decides_tls_and_without_h2_it_is_http1() {
        assert_eq!(by_alpn(Some(b"h2")), Speaks::Http2);
        assert_eq!(by_alpn(Some(b"http/1.1")), Speaks::Http1);
        assert_eq!(by_alpn(Some(b"spdy/3")), Speaks::Http1);
        assert_eq!(by_alpn(None), Speaks::Http1);
    }
}
