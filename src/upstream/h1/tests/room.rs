//! What read room a connection holds while it waits, and what it takes home.

use std::task::Poll;

use super::*;

/// A connection with `buf` as its buffer, to a listener that never answers.
async fn silent_conn(buf: BytesMut) -> (Conn, TcpListener) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let mut conn = Conn::open(&address, PATIENCE).await.unwrap();
    conn.buf = buf;
    (conn, listener)
}

/// A connection goes home from a response read with a grown buffer holding no room (the
/// next read takes it again), and from one read with a small buffer holding what it had
/// (the next response then takes none).
#[tokio::test]
async fn a_connection_goes_home_with_a_grown_buffer_given_back() {
    for (room, kept) in [(MIN_READ * 16, false), (MIN_READ / 2, true)] {
        let mut buf = BytesMut::with_capacity(room);
        buf.extend_from_slice(b"ok");
        let (conn, _listener) = silent_conn(buf).await;
        let shelf = Shelf::default();
        let mut body = ResponseBody {
            conn: Some(conn),
            decoder: Decoder::Length(2),
            keep_alive: true,
            home: Some(shelf.clone()),
            trailers: None,
            idle: PATIENCE,
        };
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "ok"
        );
        assert!(body.frame().await.is_none());
        let home = shelf
            .0
            .lock()
            .unwrap()
            .pop()
            .expect("the connection went home");
        assert!(home.buf.is_empty());
        assert_eq!(home.buf.capacity() > 0, kept, "room {room}");
    }
}

/// A connection that has given its room back takes none while nothing is there to read: a
/// stream waiting for its next token holds no read buffer.
#[tokio::test]
async fn a_connection_waiting_for_bytes_holds_no_room() {
    let (mut conn, _listener) = silent_conn(BytesMut::new()).await;
    let polled = std::future::poll_fn(|cx| Poll::Ready(conn.poll_fill(cx))).await;
    assert!(polled.is_pending());
    assert_eq!(conn.buf.capacity(), 0);
}
