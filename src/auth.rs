//! Client-key check: who is calling, by name.
//!
//! A key is read from `Authorization` (any scheme word, as the web-data API does, so
//! `Bearer <key>` and `Basic`-less SDKs both work) or, on a WebSocket upgrade, from
//! `Sec-WebSocket-Protocol` (the web-data JS SDK sends its key there). Every configured key is
//! compared, in constant time, so timing says nothing about which key nearly matched.

use hyper::header::{AUTHORIZATION, SEC_WEBSOCKET_PROTOCOL};

use crate::base::secret::constant_time_eq;
use crate::error::ProxyError;
use crate::http::message::{HeaderView, text};
use crate::table::ClientKey;

/// The client that sent `headers`, `None` on an open proxy.
pub fn check<'a>(
    clients: &'a [ClientKey],
    headers: HeaderView<'_>,
    upgrade: bool,
) -> Result<Option<&'a ClientKey>, ProxyError> {
    if clients.is_empty() {
        return Ok(None);
    }
    let candidates = presented_keys(headers, upgrade);
    if candidates.is_empty() {
        return Err(ProxyError::MissingKey);
    }
    let mut found = None;
    for client in clients {
        for candidate in &candidates {
            // No early exit: every key is compared every time.
            if constant_time_eq(client.key.expose().as_bytes(), candidate.as_bytes()) {
                found = Some(client);
            }
        }
    }
    found.map(Some).ok_or(ProxyError::InvalidKey)
}

/// Keys the request presents: the `Authorization` credential, and on upgrades each offered
/// WebSocket subprotocol.
fn presented_keys(headers: HeaderView<'_>, upgrade: bool) -> Vec<&str> {
    let mut keys: Vec<&str> = headers
        .get(&AUTHORIZATION)
        .and_then(text)
        .map(credential)
        .filter(|k| !k.is_empty())
        .into_iter()
        .collect();
    if upgrade {
        keys.extend(subprotocols(headers));
    }
    keys
}

/// The credential of an `Authorization` value: the word after the scheme, or the whole
/// value when there is no scheme word. A lone `Bearer` (an SDK with an empty key; the
/// trailing space is gone by the time the header is parsed) is no credential.
pub fn credential(value: &str) -> &str {
    let value = value.trim();
    match value.split_once(' ') {
        Some((_, key)) => key.trim(),
        None if value.eq_ignore_ascii_case("bearer") => "",
        None => value,
    }
}

/// The subprotocols offered in `Sec-WebSocket-Protocol` (comma-separated, maybe repeated).
pub fn subprotocols(headers: HeaderView<'_>) -> impl Iterator<Item = &str> {
    headers
        .get_all(&SEC_WEBSOCKET_PROTOCOL)
        .filter_map(text)
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::secret::Secret;
    use crate::http::h1::raw::{self, Kind, RawHeaders};
    use hyper::HeaderMap;
    use hyper::header::HeaderValue;

    fn clients() -> Vec<ClientKey> {
        ["alice:ka", "bob:kb"]
            .iter()
            .map(|s| {
                let (name, key) = s.split_once(':').unwrap();
                ClientKey {
                    name: name.into(),
                    key: Secret::new(key),
                    source: crate::base::secret::SecretSource::Inline,
                    webhook_secret: None,
                    quota: std::sync::Arc::from([]),
                }
            })
            .collect()
    }

    /// The fields in a map, and kept raw.
    fn headers(pairs: &[(&'static str, &'static str)]) -> (HeaderMap, RawHeaders) {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
            .collect();
        let section: String = pairs.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        (map, raw::read(&(section + "\r\n"), Kind::Request))
    }

    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        bool,
        Result<Option<&'a str>, &'a str>,
    );

    #[test]
    fn names_the_caller_or_says_why_not() {
        let c = clients();
        let cases: &[Case] = &[
            (&[("authorization", "Bearer ka")], false, Ok(Some("alice"))),
            (&[("authorization", "kb")], false, Ok(Some("bob"))),
            (&[("authorization", "Token kb")], false, Ok(Some("bob"))),
            (&[("authorization", "Bearer nope")], false, Err("invalid")),
            (&[("authorization", "Bearer ")], false, Err("missing")),
            (&[], false, Err("missing")),
            (&[("sec-websocket-protocol", "kb")], true, Ok(Some("bob"))),
            (&[("sec-websocket-protocol", "kb")], false, Err("missing")),
            (
                &[("sec-websocket-protocol", "x, ka")],
                true,
                Ok(Some("alice")),
            ),
        ];
        for (pairs, upgrade, want) in cases {
            let (map, raw) = headers(pairs);
            for fields in [HeaderView::Map(&map), HeaderView::Raw(&raw)] {
                match (check(&c, fields, *upgrade), want) {
                    (Ok(client), Ok(want)) => {
                        assert_eq!(client.map(|c| c.name.as_str()), *want, "{pairs:?}")
                    }
                    (Err(ProxyError::MissingKey), Err("missing")) => {}
                    (Err(ProxyError::InvalidKey), Err("invalid")) => {}
                    (got, want) => panic!("{pairs:?}: got {got:?}, want {want:?}"),
                }
            }
        }
    }

    #[test]
    fn open_proxy_needs_no_key() {
        assert!(
            check(&[], HeaderView::Map(&HeaderMap::new()), false)
                .unwrap()
                .is_none()
        );
    }
}
