//! Dialing an upstream's host: its name looked up, its addresses tried with "happy
//! eyeballs" (RFC 8305), as hyper-util's connector does.
//!
//! Tried one after another, a name with an IPv6 address whose path drops packets would hold
//! every new connection for the whole connect timeout before trying its IPv4 address. Here
//! each attempt gets a head start of [`HEAD_START`]; then the next address (of the other
//! family first) is tried beside it, and the first connection made wins (the others are
//! dropped). An attempt that fails starts the next at once.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// How long an attempt runs alone before the next address is tried beside it (RFC 8305
/// recommends 250 ms; hyper-util uses 300 ms).
const HEAD_START: Duration = Duration::from_millis(250);

/// Connects to `address` (`host:port`).
pub async fn dial(address: &str) -> io::Result<TcpStream> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host(address).await?.collect();
    first_of(interleave(addresses), TcpStream::connect).await
}

/// The addresses with their families alternating, starting with the first's (RFC 8305
/// §4), each family in the resolver's order.
fn interleave(addresses: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let first_v6 = addresses.first().is_some_and(SocketAddr::is_ipv6);
    let (mut first, mut second): (Vec<_>, Vec<_>) =
        addresses.into_iter().partition(|a| a.is_ipv6() == first_v6);
    first.reverse();
    second.reverse();
    let mut out = Vec::with_capacity(first.len() + second.len());
    while !first.is_empty() || !second.is_empty() {
        out.extend(first.pop());
        out.extend(second.pop());
    }
    out
}

/// The first connection `connect` makes to one of `addresses`, tried as the module says;
/// the last failure if none is made.
async fn first_of<C, F, S>(addresses: Vec<SocketAddr>, connect: C) -> io::Result<S>
where
    C: Fn(SocketAddr) -> F,
    F: Future<Output = io::Result<S>> + Send + 'static,
    S: Send + 'static,
{
    let mut waiting = addresses.into_iter();
    let mut attempts = JoinSet::new();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    loop {
        if let Some(address) = waiting.next() {
            attempts.spawn(connect(address));
        }
        let outcome = if waiting.len() > 0 {
            match tokio::time::timeout(HEAD_START, attempts.join_next()).await {
                Ok(outcome) => outcome,
                Err(_) => continue, // the head start is over: the next address too
            }
        } else {
            attempts.join_next().await
        };
        match outcome {
            Some(Ok(Ok(stream))) => return Ok(stream),
            Some(Ok(Err(err))) => last = err,
            Some(Err(join)) => last = io::Error::other(join),
            None => return Err(last),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn families_alternate_from_the_first() {
        let got = interleave(
            ["[::1]:1", "[::2]:1", "[::3]:1", "10.0.0.1:1", "10.0.0.2:1"]
                .map(addr)
                .to_vec(),
        );
        let want = ["[::1]:1", "10.0.0.1:1", "[::2]:1", "10.0.0.2:1", "[::3]:1"].map(addr);
        assert_eq!(got, want);
        let got = interleave(["10.0.0.1:1", "10.0.0.2:1", "[::1]:1"].map(addr).to_vec());
        assert_eq!(got, ["10.0.0.1:1", "[::1]:1", "10.0.0.2:1"].map(addr));
    }

    /// What each address does when dialled (by its port): 1 never responds, 2 refuses at
    /// once, 3 connects after 10 ms; the order of the attempts is kept.
    fn script(
        tried: Arc<Mutex<Vec<u16>>>,
    ) -> impl Fn(SocketAddr) -> std::pin::Pin<Box<dyn Future<Output = io::Result<u16>> + Send>>
    {
        move |address| {
            tried.lock().unwrap().push(address.port());
            Box::pin(async move {
                match address.port() {
                    1 => std::future::pending().await,
                    2 => Err(io::Error::from(io::ErrorKind::ConnectionRefused)),
                    port => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        Ok(port)
                    }
                }
            })
        }
    }

    /// The addresses, what comes of them, how long it took, the ports tried.
    type Case = (
        &'static [&'static str],
        Result<u16, ()>,
        Duration,
        &'static [u16],
    );

    /// An address that never responds holds the next one back only for the head start; one
    /// that refuses, not at all; with none left, the last failure is the response.
    #[tokio::test(start_paused = true)]
    async fn a_silent_address_holds_the_next_back_only_for_its_head_start() {
        let cases: &[Case] = &[
            (
                &["[::1]:1", "127.0.0.1:3"],
                Ok(3),
                HEAD_START + ms(10),
                &[1, 3],
            ),
            (&["[::1]:2", "127.0.0.1:3"], Ok(3), ms(10), &[2, 3]),
            (&["[::1]:3", "127.0.0.1:1"], Ok(3), ms(10), &[3]),
            (&["[::1]:2", "127.0.0.1:2"], Err(()), ms(0), &[2, 2]),
            (&[], Err(()), ms(0), &[]),
        ];
        for (addresses, want, took, tried_want) in cases {
            let tried = Arc::new(Mutex::new(Vec::new()));
            let start = tokio::time::Instant::now();
            let list = addresses.iter().map(|a| addr(a)).collect();
            let got = first_of(list, script(Arc::clone(&tried))).await;
            assert_eq!(got.map_err(|_| ()), *want, "{addresses:?}");
            assert_eq!(start.elapsed(), *took, "{addresses:?}");
            assert_eq!(*tried.lock().unwrap(), *tried_want, "{addresses:?}");
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }
}
