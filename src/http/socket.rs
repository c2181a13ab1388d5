//! Listening sockets, as lingo's listeners and the mock's want them.

use std::net::SocketAddr;

use tokio::net::TcpListener;

/// Binds a listener with a deep accept queue (the kernel caps it at `somaxconn`), so that a
/// burst of new connections waits in the queue instead of being dropped and retried.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}
