//! What a request's body says of itself before and after it is read: the upstream's client
//! frames by its size and skips a poll for an end it has been told.

use http_body::Body as _;
use http_body_util::BodyExt;

use super::*;

/// A body framed by its length says how much is left, and once all of it is read that it
/// has ended (without a poll more for its end).
#[tokio::test]
async fn a_request_body_tells_its_size_and_its_end() {
    let (mut client, served) = start(|req: Request<Body>| async move {
        let mut body = req.into_body();
        let before = (body.size_hint().exact(), body.is_end_stream());
        let mut read = Vec::new();
        while read.len() < 5 {
            let frame = body.frame().await.unwrap().unwrap();
            read.extend_from_slice(&frame.into_data().unwrap());
        }
        let after = (body.size_hint().exact(), body.is_end_stream());
        Response::new(Body::full(format!("{before:?} {after:?}")))
    });
    let request =
        "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello";
    client.write_all(request.as_bytes()).await.unwrap();
    let all = read_to_end(&mut client).await;
    assert!(all.ends_with("(Some(5), false) (Some(0), true)"), "{all}");
    served.await.unwrap().unwrap();
}
