//! A request or a response as lingo holds it, and the one way to its header fields.
//!
//! lingo's HTTP/1.1 server and client keep a head's fields as read when they fit
//! (`h1::raw`), and make a map only for what reads or edits one. [`Request`] and
//! [`Response`] are hyper's head and a body, with those fields beside them (the head's map
//! then empty): the fields are read through [`Request::headers`] and [`Response::headers`]
//! ([`HeaderView`]), wherever they are; `headers_mut` puts them in the map first. Reading
//! hyper's map directly would miss the raw header fields, so `clippy.toml` refuses it
//! everywhere but here.
//!
//! The raw header fields ride beside hyper's head: its extensions would cost an allocation
//! a message, and the body's box would hide them from whoever reads the head.

mod view;

use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::http::{Extensions, request, response};
use hyper::{HeaderMap, Method, StatusCode, Uri, Version};

use crate::http::body::Body;
use crate::http::h1::raw::{Headers, RawHeaders};
pub use view::{HeaderView, text};

/// A request: hyper's head and a body, its fields in the head's map or kept raw beside
/// it.
#[derive(Debug)]
pub struct Request<B = Body> {
    head: request::Parts,
    body: B,
    /// The raw header fields; the head's map is then empty.
    raw: Option<Box<RawHeaders>>,
}

/// A response: hyper's head and a body, its fields in the head's map or kept raw beside
/// it.
#[derive(Debug)]
pub struct Response<B = Body> {
    head: response::Parts,
    body: B,
    /// The raw header fields; the head's map is then empty.
    raw: Option<Box<RawHeaders>>,
}

/// What [`Request`] and [`Response`] share: their fields through the door, and hyper's
/// accessors for the rest.
macro_rules! message {
    ($message:ident, $parts:ident) => {
        #[expect(
            clippy::disallowed_fields,
            reason = "the door: the head's map is read and edited only here"
        )]
        impl<B> $message<B> {
            /// A message of `head` (its fields not in its map: `headers`) and `body`.
            pub fn from_head(mut head: $parts::Parts, headers: Headers, body: B) -> Self {
                let raw = match headers {
                    Headers::Map(map) => {
                        head.headers = map;
                        None
                    }
                    Headers::Raw(raw) => Some(raw),
                };
                $message { head, body, raw }
            }

            /// Its fields, wherever they are kept.
            pub fn headers(&self) -> HeaderView<'_> {
                match &self.raw {
                    Some(raw) => HeaderView::Raw(raw),
                    None => HeaderView::Map(&self.head.headers),
                }
            }

            /// Its fields as a map, made of the raw header fields if they are.
            pub fn headers_mut(&mut self) -> &mut HeaderMap {
                let map = &mut self.head.headers;
                if let Some(raw) = self.raw.take() {
                    raw.append_to(map);
                }
                map
            }

            /// Its fields, taken out: it has none left.
            pub fn take_headers(&mut self) -> Headers {
                match self.raw.take() {
                    Some(raw) => Headers::Raw(raw),
                    None => Headers::Map(std::mem::take(&mut self.head.headers)),
                }
            }

            /// hyper's message, its fields all in its map.
            pub fn into_hyper(mut self) -> hyper::$message<B> {
                self.headers_mut();
                hyper::$message::from_parts(self.head, self.body)
            }

            pub fn version(&self) -> Version {
                self.head.version
            }

            pub fn version_mut(&mut self) -> &mut Version {
                &mut self.head.version
            }

            pub fn extensions_mut(&mut self) -> &mut Extensions {
                &mut self.head.extensions
            }

            pub fn body(&self) -> &B {
                &self.body
            }

            pub fn body_mut(&mut self) -> &mut B {
                &mut self.body
            }

            pub fn into_body(self) -> B {
                self.body
            }

            /// The same message with its body made by `f` from this one's.
            pub fn map<C>(self, f: impl FnOnce(B) -> C) -> $message<C> {
                let $message { head, body, raw } = self;
                let body = f(body);
                $message { head, body, raw }
            }

            /// Its head (all but the body, its fields included) and its body.
            pub fn into_parts(self) -> ($message<()>, B) {
                let $message { head, body, raw } = self;
                (
                    $message {
                        head,
                        body: (),
                        raw,
                    },
                    body,
                )
            }

            pub fn from_parts(head: $message<()>, body: B) -> Self {
                let $message { head, raw, .. } = head;
                $message { head, body, raw }
            }
        }

        impl<B> From<hyper::$message<B>> for $message<B> {
            fn from(message: hyper::$message<B>) -> Self {
                let (head, body) = message.into_parts();
                $message {
                    head,
                    body,
                    raw: None,
                }
            }
        }
    };
}

message!(Request, request);
message!(Response, response);

// === impl Request ===

impl<B> Request<B> {
    /// A `GET /` request with no fields, in HTTP/1.1.
    pub fn new(body: B) -> Self {
        hyper::Request::new(body).into()
    }

    pub fn method(&self) -> &Method {
        &self.head.method
    }

    pub fn method_mut(&mut self) -> &mut Method {
        &mut self.head.method
    }

    pub fn uri(&self) -> &Uri {
        &self.head.uri
    }

    pub fn uri_mut(&mut self) -> &mut Uri {
        &mut self.head.uri
    }
}

// === impl Response ===

impl<B> Response<B> {
    /// A `200 OK` response with no fields.
    pub fn new(body: B) -> Self {
        hyper::Response::new(body).into()
    }

    /// Sets the field `name`, standing for any of its name: among the raw header fields
    /// when they take it (lingo's request id: see `RawHeaders::insert`), which then need no
    /// map; else in the map.
    pub fn insert_header(&mut self, name: HeaderName, value: HeaderValue) {
        match &mut self.raw {
            Some(raw) if raw.takes(&name) => raw.insert(name, value),
            _ => drop(self.headers_mut().insert(name, value)),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.head.status
    }

    pub fn status_mut(&mut self) -> &mut StatusCode {
        &mut self.head.status
    }
}

impl Response {
    /// A JSON response with `status`: lingo's own (errors, translated responses, health).
    pub fn json(status: StatusCode, body: impl Into<Bytes>) -> Self {
        let mut response = Response::new(Body::full(body));
        *response.status_mut() = status;
        let json = HeaderValue::from_static("application/json");
        response.headers_mut().insert(CONTENT_TYPE, json);
        response
    }
}

#[cfg(test)]
mod tests;
