//! One `upstreams:` entry -> [`Upstream`]: its backends (`backends.rs`), dialect, timeouts,
//! auth.

use std::sync::Arc;

use hyper::header::{AUTHORIZATION, HeaderName, HeaderValue};

use super::backends::{self, Spreading, Targets};
use super::ctx::{Ctx, optional};
use super::raw::{self, At};
use super::tls::{self, Verify};
use crate::base::dialect::Dialect;
use crate::base::secret::Secret;
use crate::table::{
    Auth, Backend, DEFAULT_CONNECT, DEFAULT_FIRST_BYTE, DEFAULT_IDLE, MAX_WEBHOOK_RETRIES,
    MockSpec, Target, Timeouts, Upstream,
};

/// An upstream as routes see it: its name and dialect are known even when the rest of its
/// entry is wrong, so routes to it are still checked without a cascade of "undefined" errors.
pub(super) struct Declared {
    pub name: String,
    pub speaks: Option<Dialect>,
    /// `None` when the entry has an error (already recorded).
    pub built: Option<Arc<Upstream>>,
}

pub(super) fn compile(cx: &mut Ctx<'_>, name: At<String>, raw: At<raw::Upstream>) -> Declared {
    let label = format!("upstream `{}`", name.value);
    if name.value.is_empty() {
        cx.error(&name, "an upstream needs a non-empty name");
    }
    let raw = raw.value;
    let speaks = cx.dialect(&raw.speaks, &label);
    let targets = Targets {
        url: raw.url,
        mock: raw.mock,
        backends: raw.backends,
    };
    let backends = backends::compile(cx, targets, &name, &label);
    let listed = backends.as_ref().map(|(b, _)| &b[..]);
    let several = listed.is_some_and(|b| b.len() > 1);
    let spreading = (raw.balance, raw.health, raw.retry_budget);
    let spreading = backends::spreading(cx, spreading, &label, several);
    let timeouts = timeouts(cx, raw.timeouts, &label);
    let auth = optional(raw.auth, |a| auth(cx, a, &label));
    let tls = client_tls(cx, raw.tls, listed, &label);
    let http2 = http2(cx, raw.http2, listed, &label);
    let webhooks = optional(raw.webhooks, |w| {
        super::webhooks::compile(cx, w, speaks, &label).map(Arc::new)
    });
    let built = match (speaks, backends, timeouts, auth, tls, webhooks, spreading) {
        (
            Some(speaks),
            Some((backends, base_path)),
            Some(timeouts),
            Some(auth),
            Some(tls),
            Some(webhooks),
            Some(Spreading {
                balance,
                health,
                retry_budget,
            }),
        ) => Some(Arc::new(Upstream {
            name: name.value.as_str().into(),
            backends,
            base_path,
            speaks,
            timeouts,
            auth,
            tls,
            http2,
            webhooks,
            balance,
            health,
            retry_budget,
        })),
        _ => None,
    };
    Declared {
        name: name.value,
        speaks,
        built,
    }
}

/// `http2:`, said to do nothing when every backend is a `mock:`.
fn http2(
    cx: &mut Ctx<'_>,
    raw: Option<At<bool>>,
    backends: Option<&[Backend]>,
    label: &str,
) -> bool {
    let http2 = raw.is_some_and(|h| h.value);
    let all_mock = backends.is_some_and(|b| b.iter().all(|b| matches!(b.target, Target::Mock(_))));
    if http2 && all_mock {
        let warning = format!("{label}: `http2` has no effect on a `mock:` upstream");
        cx.warnings.push(warning);
    }
    http2
}

/// The index of the upstream `name` refers to; records an error listing the defined ones
/// when there is none. `what` starts the message (`route /v1`).
pub(super) fn find(
    cx: &mut Ctx<'_>,
    upstreams: &[Declared],
    name: &At<String>,
    what: &str,
) -> Option<usize> {
    let index = upstreams.iter().position(|u| u.name == name.value);
    if index.is_none() {
        let names: Vec<&str> = upstreams.iter().map(|u| u.name.as_str()).collect();
        let defined = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        let message = format!(
            "{what} goes to undefined upstream `{}`; defined: {defined}",
            name.value
        );
        cx.error(name, message);
    }
    index
}

fn timeouts(cx: &mut Ctx<'_>, raw: Option<raw::Timeouts>, label: &str) -> Option<Timeouts> {
    let raw = raw.unwrap_or_default();
    let mut one = |at: Option<At<String>>, key: &str, default| match at {
        None => Some(default),
        Some(at) => cx.duration(&at, &format!("{label} timeouts.{key}"), false),
    };
    let connect = one(raw.connect, "connect", DEFAULT_CONNECT);
    let first_byte = one(raw.first_byte, "first_byte", DEFAULT_FIRST_BYTE);
    let idle = one(raw.idle, "idle", DEFAULT_IDLE);
    Some(Timeouts {
        connect: connect?,
        first_byte: first_byte?,
        idle: idle?,
    })
}

/// The upstream's rustls client config. `tls:` only makes sense when every backend has an
/// https URL; skipping verification is allowed, but said out loud on every load.
fn client_tls(
    cx: &mut Ctx<'_>,
    raw: Option<At<raw::UpstreamTls>>,
    backends: Option<&[Backend]>,
    label: &str,
) -> Option<Arc<rustls::ClientConfig>> {
    let Some(at) = raw else {
        return tls::client_config(Verify::WebPki)
            .map_err(|e| cx.error(&At::<()>::default(), format!("{label}: {e}")))
            .ok();
    };
    let is_https =
        |b: &Backend| matches!(&b.target, Target::Url(url) if url.scheme_str() == Some("https"));
    if backends.is_some_and(|b| !b.iter().all(is_https)) {
        cx.error(
            &at,
            format!("{label}: `tls:` applies only to an https:// url"),
        );
        return None;
    }
    let place = at.place();
    let raw::UpstreamTls {
        ca,
        insecure_skip_verify,
    } = at.value;
    let ca_path = ca.as_ref().map(|ca| cx.path(&ca.value));
    let verify = match (&ca_path, insecure_skip_verify) {
        (Some(_), true) => {
            cx.error(
                &place,
                format!("{label}: `tls:` has both `ca:` and `insecure_skip_verify:`; keep one"),
            );
            return None;
        }
        (Some(path), false) => Verify::ExtraCa(path),
        (None, true) => {
            cx.warnings.push(format!(
                "{label}: insecure_skip_verify is on: its TLS certificate is NOT checked, so anyone on the path can read and change its traffic, including the upstream key"
            ));
            Verify::Skip
        }
        (None, false) => Verify::WebPki,
    };
    let at = ca.as_ref().map_or(place, At::place);
    tls::client_config(verify)
        .map_err(|e| cx.error(&at, format!("{label}: {e}")))
        .ok()
}

pub(super) fn mock_spec(cx: &mut Ctx<'_>, raw: raw::Mock, label: &str) -> Option<MockSpec> {
    // A zero delay is meaningful for the mock: respond as fast as possible. A zero reply time
    // is not: every delivery would fail.
    let mut delay = |d: Option<At<String>>, key: &str, zero_ok: bool| {
        optional(d, |d| {
            cx.duration(&d, &format!("{label} mock.{key}"), zero_ok)
        })
    };
    let token_delay = delay(raw.token_delay, "token_delay", true);
    let first_token_delay = delay(raw.first_token_delay, "first_token_delay", true);
    let page_delay = delay(raw.page_delay, "page_delay", true);
    let webhook_timeout = delay(raw.webhook_timeout, "webhook_timeout", false);
    let webhook_retry = optional(raw.webhook_retry, |r| {
        let what = format!("{label} mock.webhook_retry");
        cx.schedule(&r, &what, MAX_WEBHOOK_RETRIES)
    });
    let webhook_secret = optional(raw.webhook_secret, |s| {
        let what = format!("{label} mock.webhook_secret");
        cx.secret(&s, &what).map(|(secret, _)| secret)
    });
    Some(MockSpec {
        tokens: raw.tokens,
        token_delay: token_delay?,
        first_token_delay: first_token_delay?,
        embedding_size: raw.embedding_size,
        page_delay: page_delay?,
        webhook_retry: webhook_retry?,
        webhook_timeout: webhook_timeout?,
        webhook_secret: webhook_secret?,
    })
}

fn auth(cx: &mut Ctx<'_>, at: At<raw::Auth>, label: &str) -> Option<Auth> {
    let what = format!("{label} auth");
    let place = at.place();
    let raw::Auth {
        header,
        bearer,
        value,
    } = at.value;
    let header = optional(header, |h| {
        let name = HeaderName::from_bytes(h.value.as_bytes());
        name.map_err(|_| {
            cx.error(
                &h,
                format!("{what}: `{}` is not a valid header name", h.value),
            )
        })
        .ok()
    });
    let (secret_at, is_bearer) = match (bearer, value) {
        (Some(bearer), None) => (bearer, true),
        (None, Some(value)) => (value, false),
        _ => {
            let message = format!(
                "{what} needs exactly one of `bearer:` (sent as \"Bearer <key>\") or `value:` (the whole header value)"
            );
            cx.error(&place, message);
            return None;
        }
    };
    let (secret, source) = cx.secret(&secret_at, &what)?;
    let header = header?.unwrap_or(AUTHORIZATION);
    let (text, key) = if is_bearer {
        (format!("Bearer {}", secret.expose()), secret)
    } else {
        (
            secret.expose().to_owned(),
            Secret::new(bare_key(secret.expose())),
        )
    };
    let Ok(mut value) = HeaderValue::from_str(&text) else {
        cx.error(
            &secret_at,
            format!("{what}: the key from {source} has characters a header cannot carry"),
        );
        return None;
    };
    // Keeps the value out of hyper's Debug output and out of HPACK's dynamic table.
    value.set_sensitive(true);
    Some(Auth {
        header,
        value,
        key,
        source,
    })
}

/// The bare key in a whole header value: `Bearer abc` and `Token abc` give `abc`; a value
/// without a scheme word is the key itself.
fn bare_key(value: &str) -> &str {
    match value.split_once(' ') {
        Some((scheme, rest)) if !scheme.is_empty() && !rest.trim().is_empty() => rest.trim(),
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::bare_key;

    #[test]
    fn bare_key_drops_one_scheme_word() {
        let cases = [
            ("Bearer abc", "abc"),
            ("Token abc", "abc"),
            ("abc", "abc"),
            ("Bearer  abc ", "abc"),
            ("Bearer ", "Bearer "),
            (" abc", " abc"),
        ];
        for (value, key) in cases {
            assert_eq!(bare_key(value), key, "{value:?}");
        }
    }
}
