//! Header rules on the way to an upstream and back, applied as a request is sent and its
//! response comes back (`UpstreamClient::send`; the WebSocket tunnel's own handshake).
//!
//! Hop-by-hop headers stay on their hop; `Host` is the upstream's; `X-Forwarded-*` and
//! `X-Request-Id` say who asked; the client's credentials never travel on: `Authorization`
//! is replaced by the upstream's key, or removed when it has none.

use hyper::header::{
    ACCEPT_ENCODING, CONNECTION, CONTENT_TYPE, HOST, HeaderName, HeaderValue, UPGRADE,
};
use hyper::{HeaderMap, Method};

use crate::http::hop::{self, HOP_BY_HOP, connection_named, is_lowered, remove_hop_by_hop};
use crate::http::message::HeaderView;
use crate::table::Auth;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// What the upstream request's headers say about the client and the upstream. The values
/// are lent (by the table, the connection and the exchange), not cloned: each clone of a
/// shared value is an atomic count taken and given back per request.
#[derive(Clone, Copy)]
pub struct Forwarding<'a> {
    /// The upstream's authority, for `Host`.
    pub host: &'a HeaderValue,
    pub client_ip: &'a HeaderValue,
    /// `http` or `https`: how the client reached lingo.
    pub proto: &'static str,
    /// The `Host` the client sent, if any.
    pub client_host: Option<&'a HeaderValue>,
    pub request_id: &'a HeaderValue,
    pub auth: Option<&'a Auth>,
    /// A WebSocket upgrade: keep `Connection: upgrade` and `Upgrade`.
    pub upgrade: bool,
    /// Ask for the response unencoded (`Accept-Encoding: identity`): lingo reads it.
    pub identity: bool,
    /// The body is lingo's own JSON (a translated request): the client's `Content-Type` and
    /// `Content-Encoding` described the client's body and stay behind.
    pub json: bool,
    /// lingo's own client may keep the response's fields as read (`http::h1::raw`): they are
    /// most likely written on as they are, or not read at all (whoever edits them makes the
    /// map then: `http::message::Response::headers_mut`).
    pub raw_response: bool,
    /// The client's fields, when they go up with this request (a pass-through's, a
    /// translation's; not with lingo's own requests, such as a model listing): forwarded by
    /// the same rules as the request's own (written as they are by lingo's own client, put in
    /// the map by [`to_upstream`] otherwise).
    pub client: Option<HeaderView<'a>>,
}

/// The most fields [`Forwarding::each_added`] adds.
const MOST_ADDED: usize = 10;

impl Forwarding<'_> {
    /// Whether a client field named `name` stays behind (besides those `Connection` names):
    /// hop-by-hop fields; `Expect`, which the connection has already handled on the client's
    /// hop (when the body was first read), so the upstream gets the body without being asked;
    /// the framing lingo writes itself; the client's credentials; and every field lingo sets
    /// (`each_added`).
    pub fn drops(&self, name: &HeaderName) -> bool {
        HOP_BY_HOP.contains(name) || self.leaves(name.as_str().as_bytes())
    }

    /// [`Forwarding::drops`] for a field that is not hop-by-hop, its name as read (any case).
    /// Told apart by length first, each length's few names compared as bytes (no
    /// `HeaderName` made of the name read).
    pub fn leaves(&self, name: &[u8]) -> bool {
        let is = |lower: &[u8]| is_lowered(name, lower);
        let fixed = match name.len() {
            4 => is(b"host"),
            6 => is(b"expect"),
            12 => is(b"x-request-id") || (self.json && is(b"content-type")),
            13 => is(b"authorization"),
            14 => is(b"content-length"),
            15 => is(b"x-forwarded-for") || (self.identity && is(b"accept-encoding")),
            16 => is(b"x-forwarded-host") || (self.json && is(b"content-encoding")),
            17 => is(b"x-forwarded-proto"),
            _ => false,
        };
        fixed || self.auth.is_some_and(|auth| hop::is(name, &auth.header))
    }

    /// Each of `headers` that these rules let through to the upstream, lent to `each`: not
    /// one [`Forwarding::drops`], nor one a `Connection` field names (raw header fields
    /// have left those out as they were read).
    pub fn each_forwarded(&self, headers: HeaderView<'_>, mut each: impl FnMut(&[u8], &[u8])) {
        match headers {
            HeaderView::Map(map) => {
                let named = connection_named(map);
                for (name, value) in map {
                    if !self.drops(name) && !named.contains(name) {
                        each(name.as_str().as_bytes(), value.as_bytes());
                    }
                }
            }
            HeaderView::Raw(raw) => raw.each_passed(|name, value| {
                if !self.leaves(name) {
                    each(name, value);
                }
            }),
        }
    }

    /// Each field lingo sets on the upstream request, whatever the client sent, lent to
    /// `add` (written as they are by lingo's own client, cloned into a map otherwise).
    pub fn each_added(&self, mut add: impl FnMut(&HeaderName, &HeaderValue)) {
        if let Some(auth) = self.auth {
            add(&auth.header, &auth.value);
        }
        add(&HOST, self.host);
        add(&X_FORWARDED_FOR, self.client_ip);
        add(&X_FORWARDED_PROTO, &HeaderValue::from_static(self.proto));
        if let Some(host) = self.client_host {
            add(&X_FORWARDED_HOST, host);
        }
        add(&X_REQUEST_ID, self.request_id);
        if self.upgrade {
            add(&CONNECTION, &HeaderValue::from_static("upgrade"));
            add(&UPGRADE, &HeaderValue::from_static("websocket"));
        }
        if self.json {
            add(&CONTENT_TYPE, &HeaderValue::from_static("application/json"));
        }
        if self.identity {
            add(&ACCEPT_ENCODING, &HeaderValue::from_static("identity"));
        }
    }
}

/// Rewrites an upstream request's headers, in its map (with the client's,
/// [`Forwarding::client`], put there first): [`Forwarding::drops`] and the fields
/// `Connection` names go, [`Forwarding::each_added`] come. lingo's own HTTP/1.1 client
/// applies the same rules as it writes the head instead (no map made).
pub fn to_upstream(headers: &mut HeaderMap, fwd: &Forwarding<'_>) {
    if let Some(client) = fwd.client {
        client.append_to(headers);
    }
    let named = connection_named(headers);
    let dropped: Vec<HeaderName> = headers
        .keys()
        .filter(|name| fwd.drops(name) || named.contains(*name))
        .cloned()
        .collect();
    for name in dropped {
        headers.remove(name);
    }
    // Room for the fields added, made once: each growth of a map rehashes all its fields.
    headers.reserve(MOST_ADDED);
    fwd.each_added(|name, value| {
        headers.insert(name.clone(), value.clone());
    });
}

/// Rewrites an upstream response's headers for the client: its hop-by-hop fields stay on the
/// upstream's hop (raw header fields leave them out as they are read). Its `X-Request-Id`
/// is lingo's, set on every response, lingo's own included, by `proxy::respond::finish`.
pub fn to_client(headers: &mut HeaderMap, upgrade: bool) {
    remove_hop_by_hop(headers);
    if upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    }
}

/// Whether the request asks for a WebSocket upgrade (a `GET` with `Connection: upgrade` and
/// `Upgrade: websocket`; RFC 6455 §4.1: only a `GET` can ask).
pub fn is_websocket_upgrade(method: &Method, headers: HeaderView<'_>) -> bool {
    let has_token = |name: &HeaderName, token: &[u8]| {
        headers
            .get_all(name)
            .flat_map(|v| v.split(|&b| b == b','))
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
    };
    *method == Method::GET
        && has_token(&CONNECTION, b"upgrade")
        && has_token(&UPGRADE, b"websocket")
}

/// A client's fields with one of each kind the rules treat apart (for the tests here and
/// those of lingo's client, which applies the rules as it writes).
#[cfg(test)]
pub(crate) fn sample_client_headers() -> HeaderMap {
    [
        ("authorization", "Bearer client-key"),
        ("host", "proxy.example"),
        ("connection", "keep-alive, x-secret-hop"),
        ("x-secret-hop", "1"),
        ("keep-alive", "timeout=5"),
        ("proxy-authorization", "Basic xyz"),
        ("te", "trailers"),
        ("x-forwarded-for", "6.6.6.6"),
        ("x-forwarded-host", "spoofed"),
        ("x-request-id", "client-id"),
        ("content-type", "application/json"),
        ("content-encoding", "gzip"),
        ("accept-encoding", "br"),
        ("content-length", "5"),
        ("expect", "100-continue"),
        ("x-api-key", "client-api-key"),
        ("x-kept", "a"),
        ("x-kept", "b"),
    ]
    .into_iter()
    .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::secret::Secret;
    use crate::http::hop::is;
    use hyper::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_LENGTH, EXPECT};

    static UP: HeaderValue = HeaderValue::from_static("up:11434");
    static CLIENT_IP: HeaderValue = HeaderValue::from_static("10.1.2.3");
    static PROXY: HeaderValue = HeaderValue::from_static("proxy.example");
    static RID: HeaderValue = HeaderValue::from_static("rid");

    fn fwd(auth: Option<&Auth>) -> Forwarding<'_> {
        Forwarding {
            host: &UP,
            client_ip: &CLIENT_IP,
            proto: "https",
            client_host: Some(&PROXY),
            request_id: &RID,
            auth,
            upgrade: false,
            identity: false,
            json: false,
            raw_response: false,
            client: None,
        }
    }

    /// `leaves`, as the list of names it stands for, compared one by one (where `leaves`
    /// tells names apart by length first).
    fn leaves_by_the_list(fwd: &Forwarding<'_>, name: &[u8]) -> bool {
        let set = [
            AUTHORIZATION,
            HOST,
            X_FORWARDED_FOR,
            X_FORWARDED_PROTO,
            X_FORWARDED_HOST,
            X_REQUEST_ID,
        ];
        set.iter().any(|set| is(name, set))
            || is(name, &EXPECT)
            || is(name, &CONTENT_LENGTH)
            || fwd.auth.is_some_and(|auth| is(name, &auth.header))
            || (fwd.identity && is(name, &ACCEPT_ENCODING))
            || (fwd.json && (is(name, &CONTENT_TYPE) || is(name, &CONTENT_ENCODING)))
    }

    #[test]
    fn the_fields_left_behind_are_the_listed_ones_in_any_case() {
        let auth = |header: HeaderName| Auth {
            header,
            value: HeaderValue::from_static("k"),
            key: Secret::new("k"),
            source: crate::base::secret::SecretSource::Inline,
        };
        let (api_key, bearer) = (
            auth(HeaderName::from_static("x-api-key")),
            auth(AUTHORIZATION),
        );
        let mut names: Vec<String> = sample_client_headers()
            .keys()
            .map(|n| n.to_string())
            .collect();
        names.extend(
            ["x-forwarded-proto", "x-forwarded-prots", "hosts", "hos", ""].map(String::from),
        );
        // Each name also in capitals, and with its last letter changed (same length).
        for name in names.clone() {
            names.push(name.to_ascii_uppercase());
            if let Some(last) = name.bytes().last() {
                names.push(format!("{}{}", &name[..name.len() - 1], (last ^ 1) as char));
            }
        }
        for auth in [None, Some(&api_key), Some(&bearer)] {
            for (identity, json) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut rules = fwd(auth);
                (rules.identity, rules.json) = (identity, json);
                for name in &names {
                    let (fast, listed) = (
                        rules.leaves(name.as_bytes()),
                        leaves_by_the_list(&rules, name.as_bytes()),
                    );
                    assert_eq!(
                        fast,
                        listed,
                        "{name:?} identity={identity} json={json} auth={:?}",
                        auth.map(|a| &a.header)
                    );
                }
            }
        }
    }

    #[test]
    fn client_key_is_replaced_by_the_upstream_key() {
        let auth = Auth {
            header: AUTHORIZATION,
            value: HeaderValue::from_static("Bearer up-key"),
            key: Secret::new("up-key"),
            source: crate::base::secret::SecretSource::Inline,
        };
        let mut h = sample_client_headers();
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
        let mut h = sample_client_headers();
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
            to_client(&mut h, false);
            let hop = HOP_BY_HOP.contains(name);
            assert_eq!(h.contains_key(name), !hop, "{name}");
            assert_eq!(h["x-kept"], "1");
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
        assert!(is_websocket_upgrade(&Method::GET, (&h).into()));
        assert!(!is_websocket_upgrade(&Method::POST, (&h).into()));
        assert!(!is_websocket_upgrade(
            &Method::GET,
            (&HeaderMap::new()).into()
        ));
    }
}
