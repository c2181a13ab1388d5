//! Header rules on the way to an upstream and back.
//!
//! Hop-by-hop headers stay on their hop; `Host` is the upstream's; `X-Forwarded-*` and
//! `X-Request-Id` say who asked; the client's credentials never travel on: `Authorization`
//! is replaced by the upstream's key, or removed when it has none.

use hyper::HeaderMap;
use hyper::header::{
    AUTHORIZATION, CONNECTION, EXPECT, HOST, HeaderName, HeaderValue, PROXY_AUTHENTICATE,
    PROXY_AUTHORIZATION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE,
};

use crate::table::Auth;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// What the upstream request's headers say about the client and the upstream.
pub struct Forwarding<'a> {
    /// The upstream's authority, for `Host`.
    pub host: HeaderValue,
    pub client_ip: HeaderValue,
    /// `http` or `https`: how the client reached lingo.
    pub proto: &'static str,
    /// The `Host` the client sent, if any.
    pub client_host: Option<HeaderValue>,
    pub request_id: HeaderValue,
    pub auth: Option<&'a Auth>,
    /// A WebSocket upgrade: keep `Connection: upgrade` and `Upgrade`.
    pub upgrade: bool,
}

/// Rewrites a client request's headers for the upstream.
pub fn to_upstream(headers: &mut HeaderMap, fwd: &Forwarding<'_>) {
    remove_hop_by_hop(headers, true);
    // Room for the (up to six) fields added below, made once: a client's map is sized for
    // its own fields, and each growth rehashes them all.
    headers.reserve(6);
    headers.remove(AUTHORIZATION);
    if let Some(auth) = fwd.auth {
        headers.insert(auth.header.clone(), auth.value.clone());
    }
    headers.insert(HOST, fwd.host.clone());
    headers.insert(X_FORWARDED_FOR, fwd.client_ip.clone());
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(fwd.proto));
    match &fwd.client_host {
        Some(host) => headers.insert(X_FORWARDED_HOST, host.clone()),
        None => headers.remove(X_FORWARDED_HOST),
    };
    headers.insert(X_REQUEST_ID, fwd.request_id.clone());
    if fwd.upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    }
}

/// Rewrites an upstream answer's headers for the client.
pub fn to_client(headers: &mut HeaderMap, request_id: &HeaderValue, upgrade: bool) {
    remove_hop_by_hop(headers, false);
    if upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    }
    headers.insert(X_REQUEST_ID, request_id.clone());
}

/// The hop-by-hop headers of RFC 9110 §7.6.1 (besides those `Connection` names).
const HOP_BY_HOP: [HeaderName; 9] = [
    CONNECTION,
    KEEP_ALIVE,
    PROXY_CONNECTION,
    PROXY_AUTHENTICATE,
    PROXY_AUTHORIZATION,
    TE,
    TRAILER,
    TRANSFER_ENCODING,
    UPGRADE,
];

/// Removes the hop-by-hop headers of RFC 9110 §7.6.1, including any the `Connection`
/// header names; `upward`, also `Expect`, which the connection has already answered on the client's
/// hop (when the body was first read), so the upstream gets the body without being asked.
fn remove_hop_by_hop(headers: &mut HeaderMap, upward: bool) {
    // Many messages carry none: one pass over their few names costs less than a lookup of
    // each of the nine (callgrind: 2,700 instructions a request).
    let listed = |name: &HeaderName| HOP_BY_HOP.contains(name) || (upward && name == EXPECT);
    if !headers.keys().any(listed) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    if upward {
        headers.remove(EXPECT);
    }
}

/// Whether the request asks for a WebSocket upgrade.
pub fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let has_token = |name: HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    has_token(CONNECTION, "upgrade") && has_token(UPGRADE, "websocket")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::secret::Secret;

    fn fwd(auth: Option<&Auth>) -> Forwarding<'_> {
        Forwarding {
            host: HeaderValue::from_static("up:11434"),
            client_ip: HeaderValue::from_static("10.1.2.3"),
            proto: "https",
            client_host: Some(HeaderValue::from_static("proxy.example")),
            request_id: HeaderValue::from_static("rid"),
            auth,
            upgrade: false,
        }
    }

    fn client_headers() -> HeaderMap {
        [
            ("authorization", "Bearer client-key"),
            ("host", "proxy.example"),
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-authorization", "Basic xyz"),
            ("te", "trailers"),
            ("x-forwarded-for", "6.6.6.6"),
            ("content-type", "application/json"),
            ("expect", "100-continue"),
        ]
        .into_iter()
        .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
        .collect()
    }

    #[test]
    fn client_key_is_replaced_by_the_upstream_key() {
        let auth = Auth {
            header: AUTHORIZATION,
            value: HeaderValue::from_static("Bearer up-key"),
            key: Secret::new("up-key"),
            source: crate::base::secret::SecretSource::Inline,
        };
        let mut h = client_headers();
        to_upstream(&mut h, &fwd(Some(&auth)));
        assert_eq!(h[AUTHORIZATION], "Bearer up-key");
        assert_eq!(h[HOST], "up:11434");
        assert_eq!(
            h[X_FORWARDED_FOR], "10.1.2.3",
            "a client cannot spoof its address"
        );
        assert_eq!(h[X_FORWARDED_PROTO], "https");
        assert_eq!(h[X_FORWARDED_HOST], "proxy.example");
        assert_eq!(h[X_REQUEST_ID], "rid");
        assert_eq!(h["content-type"], "application/json");
        for gone in [
            "expect",
            "connection",
            "x-secret-hop",
            "keep-alive",
            "proxy-authorization",
            "te",
        ] {
            assert!(!h.contains_key(gone), "{gone} must not be forwarded");
        }
    }

    #[test]
    fn client_key_is_removed_when_the_upstream_has_none() {
        let mut h = client_headers();
        to_upstream(&mut h, &fwd(None));
        assert!(!h.contains_key(AUTHORIZATION));
    }

    /// Each hop-by-hop header is removed when it is the only one (the quick check that
    /// skips messages without any must see every one of them); the others stay.
    #[test]
    fn each_hop_by_hop_header_is_removed_on_its_own() {
        for name in HOP_BY_HOP
            .iter()
            .chain([&HeaderName::from_static("content-type")])
        {
            let mut h = HeaderMap::new();
            h.insert(name.clone(), HeaderValue::from_static("x"));
            h.insert("x-kept", HeaderValue::from_static("1"));
            to_client(&mut h, &HeaderValue::from_static("rid"), false);
            let hop = HOP_BY_HOP.contains(name);
            assert_eq!(h.contains_key(name), !hop, "{name}");
            assert_eq!(h["x-kept"], "1");
            assert_eq!(h[X_REQUEST_ID], "rid");
        }
    }

    #[test]
    fn detects_websocket_upgrades() {
        let h: HeaderMap = [
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "WebSocket"),
        ]
        .into_iter()
        .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
        .collect();
        assert!(is_websocket_upgrade(&h));
        assert!(!is_websocket_upgrade(&HeaderMap::new()));
    }
}
