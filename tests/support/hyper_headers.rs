//! The fields of hyper's own messages: the tests' clients and fake upstreams make and read
//! them with hyper, which keeps every field in the map. lingo's code reads a message's
//! fields through `lingo::http::message` instead, and `clippy.toml` refuses hyper's map
//! elsewhere; this is the tests' one way to it.

use hyper::HeaderMap;

/// A hyper message's fields.
pub trait HyperHeaders {
    fn fields(&self) -> &HeaderMap;
    fn fields_mut(&mut self) -> &mut HeaderMap;
}

/// hyper's `Request` and `Response` read alike.
macro_rules! fields {
    ($message:ident) => {
        #[expect(
            clippy::disallowed_methods,
            reason = "hyper made these messages: their fields are all in the map"
        )]
        impl<B> HyperHeaders for hyper::$message<B> {
            fn fields(&self) -> &HeaderMap {
                self.headers()
            }

            fn fields_mut(&mut self) -> &mut HeaderMap {
                self.headers_mut()
            }
        }
    };
}

fields!(Request);
fields!(Response);
