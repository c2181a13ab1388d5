//! How a response is framed from what it says of itself (RFC 9112 §6.3): its own
//! `Content-Length` among other fields, a `HEAD` response's length, no framing at all for 204
//! and 304, a body shorter than its length, `Connection: close`, and empty frames in a stream.

use super::*;

/// A response with `fields` (name, value) and `body`, whatever the request.
fn answering(
    status: u16,
    fields: &'static [(&'static str, &'static str)],
    body: &'static str,
) -> impl FnMut(Request<Body>) -> std::future::Ready<Response<Body>> + Send + 'static {
    move |_req| {
        let mut response = Response::new(Body::full(body));
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
        for (name, value) in fields {
            let name = hyper::header::HeaderName::from_static(name);
            response
                .headers_mut()
                .append(name, HeaderValue::from_static(value));
        }
        std::future::ready(response)
    }
}

/// What one request (closing its connection) got back.
async fn exchange(
    service: impl FnMut(Request<Body>) -> std::future::Ready<Response<Body>> + Send + 'static,
    request: &str,
) -> (String, Result<(), BoxError>) {
    let (mut client, served) = start(service);
    client.write_all(request.as_bytes()).await.unwrap();
    let all = read_to_end(&mut client).await;
    (all, served.await.unwrap())
}

const GET: &str = "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
const HEAD: &str = "HEAD / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";

/// The response's own `Content-Length` frames it, wherever it stands among its fields; to a
/// `HEAD` request it is said as it is, and an empty body that declares none says no length.
#[tokio::test]
async fn a_responses_own_length_frames_it_and_stands_for_a_head() {
    let fields = &[("x-a", "1"), ("content-length", "3")];
    let (all, served) = exchange(answering(200, fields, "abc"), GET).await;
    assert!(
        all.contains("content-length: 3\r\n") && all.ends_with("\r\n\r\nabc"),
        "{all}"
    );
    served.unwrap();
    let fields = &[("content-length", "100")];
    let (all, _) = exchange(answering(200, fields, "abc"), HEAD).await;
    assert!(
        all.contains("content-length: 100\r\n") && all.ends_with("\r\n\r\n"),
        "{all}"
    );
    let (all, _) = exchange(answering(200, &[], ""), HEAD).await;
    assert!(!all.contains("content-length"), "{all}");
}

/// A body that does not say its length is framed by what it has (here all of it, ready),
/// whatever other fields its response has: none of them is read as a length.
#[tokio::test]
async fn a_body_of_unsaid_length_is_framed_by_what_it_has() {
    let service = |_req| {
        let frame = Ok::<_, BoxError>(http_body::Frame::data(Bytes::from_static(b"abc")));
        let body = http_body_util::StreamBody::new(futures_util::stream::iter([frame]));
        let mut response = Response::new(Body::new(body));
        response
            .headers_mut()
            .insert("x-a", HeaderValue::from_static("1"));
        std::future::ready(response)
    };
    let (all, served) = exchange(service, GET).await;
    assert!(all.contains("content-length: 3\r\n"), "{all}");
    assert!(all.ends_with("\r\n\r\nabc"), "{all}");
    served.unwrap();
}

/// 204 and 304 responses have neither a length nor chunks (RFC 9110 §8.6, §15.3.5).
#[tokio::test]
async fn no_content_and_not_modified_have_no_framing_fields() {
    for status in [204, 304] {
        let (all, served) = exchange(answering(status, &[], ""), GET).await;
        let head = all.to_ascii_lowercase();
        assert!(
            !head.contains("content-length") && !head.contains("transfer-encoding"),
            "{all}"
        );
        served.unwrap();
    }
}

/// A body that ends before the length its response declared fails it, and the connection
/// closes: the client cannot mistake what follows for the rest.
#[tokio::test]
async fn a_body_shorter_than_its_length_closes_the_connection() {
    let keep_alive = "GET / HTTP/1.1\r\nhost: x\r\n\r\n";
    let (all, served) = exchange(
        answering(200, &[("content-length", "10")], "abc"),
        keep_alive,
    )
    .await;
    assert!(all.ends_with("\r\n\r\nabc"), "{all}");
    assert!(served.is_err());
}

/// A response that says `Connection: close` closes a connection the client would keep.
#[tokio::test]
async fn a_response_that_says_close_closes_the_connection() {
    let keep_alive = "GET / HTTP/1.1\r\nhost: x\r\n\r\n";
    let fields = &[("x-a", "keep-alive"), ("connection", "close")];
    let (all, served) = exchange(answering(200, fields, "ok"), keep_alive).await;
    assert!(
        all.contains("connection: close\r\n") && all.ends_with("ok"),
        "{all}"
    );
    served.unwrap();
}

/// An empty frame in the middle of a stream is no chunk: it would end the body.
#[tokio::test]
async fn an_empty_frame_in_a_stream_writes_no_chunk() {
    let (service, mut responses) = streaming();
    let (mut client, served) = start(service);
    client.write_all(GET.as_bytes()).await.unwrap();
    let mut tokens = responses.recv().await.unwrap();
    read_until(&mut client, "\r\n\r\n").await;
    for token in ["a", "", "b"] {
        send(&mut tokens, token).await;
        tokio::task::yield_now().await;
    }
    drop(tokens);
    let rest = read_to_end(&mut client).await;
    assert_eq!(rest, "1\r\na\r\n1\r\nb\r\n0\r\n\r\n");
    served.await.unwrap().unwrap();
}
