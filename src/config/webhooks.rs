//! `upstreams.<name>.webhooks` -> [`WebhookSpec`]: the relay's switch, receiver, secrets,
//! schedule, reply time, allowed ranges and store, each checked with its place.

use super::ctx::{Ctx, http_url, optional};
use super::raw::{self, At};
use crate::base::cidr::Cidr;
use crate::base::dialect::Dialect;
use crate::base::secret::Secret;
use crate::table::webhooks::{
    DEFAULT_RETRY, DEFAULT_STORE_FILE, DEFAULT_TIMEOUT, MAX_RELAY_RETRIES, SealKey,
};
use crate::table::{StoreAt, WebhookSpec};

/// The relay of upstream `label` (which speaks `speaks`, when that is known); `None` when
/// something in it is wrong (recorded).
pub(super) fn compile(
    cx: &mut Ctx<'_>,
    at: At<raw::Webhooks>,
    speaks: Option<Dialect>,
    label: &str,
) -> Option<WebhookSpec> {
    let what = format!("{label} webhooks");
    if speaks.is_some_and(|s| !s.is_web_data()) {
        cx.error(
            &at,
            format!("{what}: only a web-data upstream has job webhooks"),
        );
    }
    let place = at.place();
    let raw = at.value;
    let relay = raw.relay.as_ref().is_some_and(|r| r.value);
    let mut secret = |s: Option<At<raw::Secret>>, key: &str| {
        optional(s, |s| {
            cx.secret(&s, &format!("{what}.{key}"))
                .map(|(secret, _)| secret)
        })
    };
    let (verify, sign, seal) = (
        secret(raw.verify, "verify"),
        secret(raw.sign, "sign"),
        secret(raw.seal, "seal"),
    );
    let receiver = optional(raw.receiver, |r| {
        http_url(&r.value)
            .map_err(|e| cx.error(&r, format!("{what}.receiver {e}")))
            .ok()
    });
    let retry = optional(raw.retry, |r| {
        cx.schedule(&r, &format!("{what}.retry"), MAX_RELAY_RETRIES)
    });
    let timeout = optional(raw.timeout, |t| {
        cx.duration(&t, &format!("{what}.timeout"), false)
    });
    let allow = optional(raw.allow, |a| ranges(cx, a, &what));
    let store = store(cx, raw.store, &what);
    let (verify, sign, seal) = (verify?, sign?, seal?);
    let seal = seal_key(cx, (seal, &sign), relay, &place, &what)?;
    Some(WebhookSpec {
        relay,
        receiver: receiver?,
        verify,
        sign,
        seal,
        retry: retry?.unwrap_or_else(|| DEFAULT_RETRY.to_vec()),
        timeout: timeout?.unwrap_or(DEFAULT_TIMEOUT),
        allow: allow?.unwrap_or_default(),
        store: store?,
        firecrawl_signature: raw.firecrawl_signature.is_some_and(|f| f.value),
    })
}

/// The key tokens are sealed with: `seal`, else `sign`; `relay: true` needs one of them.
fn seal_key(
    cx: &mut Ctx<'_>,
    (seal, sign): (Option<Secret>, &Option<Secret>),
    relay: bool,
    place: &At<()>,
    what: &str,
) -> Option<Option<SealKey>> {
    Some(match (seal, sign) {
        (Some(secret), _) => Some(SealKey { secret, own: true }),
        (None, Some(sign)) => Some(SealKey {
            secret: sign.clone(),
            own: false,
        }),
        (None, None) if relay => {
            let message = format!(
                "{what}: `relay: true` needs `seal:` (the secret receiver tokens are sealed with) or `sign:` (one is derived from it)"
            );
            cx.error(place, message);
            return None;
        }
        (None, None) => None,
    })
}

/// `allow: [127.0.0.0/8, ...]`.
fn ranges(cx: &mut Ctx<'_>, raw: At<Vec<At<String>>>, what: &str) -> Option<Vec<Cidr>> {
    let ranges: Vec<_> = raw
        .value
        .iter()
        .map(|r| {
            Cidr::parse(&r.value)
                .map_err(|e| cx.error(r, format!("{what}.allow: {e}")))
                .ok()
        })
        .collect();
    ranges.into_iter().collect()
}

/// `store:`: a `redis://` URL, or the embedded store's file (relative to the table's
/// directory; by default [`DEFAULT_STORE_FILE`] there).
fn store(cx: &mut Ctx<'_>, raw: Option<At<String>>, what: &str) -> Option<StoreAt> {
    let Some(at) = raw else {
        return Some(StoreAt::File(cx.beside(DEFAULT_STORE_FILE)));
    };
    let text = at.value.trim();
    if text.starts_with("rediss://") || text.starts_with("redis+unix://") {
        let message = format!(
            "{what}.store: lingo speaks to Redis over plain TCP only (`redis://host:port`); reach a TLS Redis through a local tunnel"
        );
        cx.error(&at, message);
        return None;
    }
    if text.starts_with("redis://") {
        if let Err(e) = redis::Client::open(text) {
            // The URL may hold a password: the message names the key, not the value.
            cx.error(
                &at,
                format!("{what}.store is not a Redis URL: {}", e.category()),
            );
            return None;
        }
        return Some(StoreAt::Redis(text.to_owned()));
    }
    if text.is_empty() || text.contains("://") {
        let message =
            format!("{what}.store is a file path, or a `redis://host:port` URL for replicas");
        cx.error(&at, message);
        return None;
    }
    Some(StoreAt::File(cx.beside(text)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::load_str;

    /// The load errors of a table whose upstream `fire` has `webhooks` written as `hooks`.
    fn errors(speaks: &str, hooks: &str) -> String {
        let yaml = format!(
            "listen:\n  - addr: 127.0.0.1:0\nupstreams:\n  fire:\n    url: http://127.0.0.1:9\n    \
             speaks: {speaks}\n    webhooks: {hooks}\nroutes:\n  - {{ prefix: /v1, to: fire }}\n"
        );
        match load_str(&yaml, Path::new("/tables/proxy.yaml")) {
            Ok(_) => String::new(),
            Err(errors) => errors.to_string(),
        }
    }

    #[test]
    fn a_relay_is_checked_key_by_key() {
        let cases = [
            ("web-data", "{ relay: true }", "needs `seal:`"),
            ("web-data", "{ relay: true }", "or `sign:`"),
            (
                "native",
                "{ sign: { value: s } }",
                "only a web-data upstream",
            ),
            ("web-data", "{ allow: [10.1.2.3/8] }", "webhooks.allow"),
            ("web-data", "{ retry: [1m, soon] }", "webhooks.retry"),
            (
                "web-data",
                "{ timeout: 0s }",
                "webhooks.timeout must be more than 0",
            ),
            ("web-data", "{ receiver: \"ftp://x\" }", "webhooks.receiver"),
            (
                "web-data",
                "{ store: \"rediss://h:6379\" }",
                "plain TCP only",
            ),
            (
                "web-data",
                "{ store: \"s3://bucket/x\" }",
                "a file path, or a `redis://",
            ),
            ("web-data", "{ seal: { value: \"\" } }", "webhooks.seal"),
        ];
        for (speaks, hooks, said) in cases {
            let errors = errors(speaks, hooks);
            assert!(errors.contains(said), "{hooks}: {errors}");
            assert!(errors.contains("proxy.yaml:7:"), "placed: {errors}");
        }
        let many = vec!["1s"; crate::table::webhooks::MAX_RELAY_RETRIES + 1].join(", ");
        assert!(errors("web-data", &format!("{{ retry: [{many}] }}")).contains("at most"));
    }

    #[test]
    fn a_relay_takes_its_defaults_and_its_keys() {
        let yaml = "listen:\n  - addr: 127.0.0.1:0\nupstreams:\n  fire:\n    url: http://127.0.0.1:9\n    \
                    speaks: web-data\n    webhooks: { relay: true, sign: { value: s }, store: \"redis://:pw@h:6379/1\" }\n  \
                    other:\n    url: http://127.0.0.1:9\n    speaks: web-data-v2\n    webhooks: { seal: { value: k } }\n\
                    routes:\n  - { prefix: /v1, to: fire }\n";
        let table = load_str(yaml, Path::new("/tables/proxy.yaml")).unwrap();
        let fire = table.upstreams[0].webhooks.as_ref().unwrap();
        assert!(fire.relay && !fire.firecrawl_signature);
        assert_eq!(fire.retry, crate::table::webhooks::DEFAULT_RETRY);
        assert_eq!(fire.timeout, crate::table::webhooks::DEFAULT_TIMEOUT);
        let seal = fire.seal.as_ref().unwrap();
        assert!(!seal.own, "derived from `sign`");
        assert_eq!(fire.store.to_string(), "redis://:***@h:6379/1");
        let other = table.upstreams[1].webhooks.as_ref().unwrap();
        assert!(!other.relay && other.seal.as_ref().unwrap().own);
        let default = Path::new("/tables/lingo-webhooks.redb");
        assert_eq!(other.store, crate::table::StoreAt::File(default.into()));
    }
}
