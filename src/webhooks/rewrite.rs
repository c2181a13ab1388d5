//! A job request's `webhook`, pointed at lingo's receiver: the client's URL and headers are
//! sealed into the receiver URL's token (with the upstream, route, client and the shape its
//! events are read in), and the upstream is given `<receiver>/lingo/webhooks/<token>` with
//! the webhook's `metadata` and `events` as they were (the string form stays a string). The
//! client's headers do not go to the upstream: they go with each delivery.
//!
//! The webhook is checked as the web-data API's schema checks it (the mock's rules, which
//! follow it): a bad one is refused with the schema's issue, as the upstream would. A URL
//! whose host is an address lingo does not deliver to is refused here, before anything goes
//! upstream; a name is checked when the event is delivered.

use bytes::Bytes;
use serde_json::{Value, json};

use super::Relaying;
use super::client;
use super::seal::{Destination, Shape};
use crate::mock::webhook::{self, Kind};

/// The receiver's path, under the receiver's base URL; the token follows.
pub const RECEIVER_PATH: &str = "/lingo/webhooks/";

/// Where a job request came from, as its events will need it.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The route's label.
    pub route: &'a str,
    pub client: Option<&'a str>,
    pub shape: Shape,
    /// The receiver's base URL (`scheme://authority[/path]`, no trailing `/`).
    pub receiver: &'a str,
}

/// The job a request path starts (`/v1/crawl`, `/v2/batch/scrape`, `/v1/extract`, ...).
pub fn job_kind(path: &str) -> Option<Kind> {
    let rest = path
        .strip_prefix("/v1/")
        .or_else(|| path.strip_prefix("/v2/"))?;
    match rest.trim_end_matches('/') {
        "crawl" => Some(Kind::Crawl),
        "batch/scrape" => Some(Kind::BatchScrape),
        "extract" => Some(Kind::Extract),
        _ => None,
    }
}

/// `body` with its webhook pointed at the receiver; `Ok(None)` when it goes as it is (no
/// webhook, not a JSON object: the upstream refuses that). `Err`: the schema issue that
/// refuses it.
pub fn rewrite(
    body: &[u8],
    kind: Kind,
    relay: &Relaying,
    at: &Origin<'_>,
) -> Result<Option<Bytes>, Value> {
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(body) else {
        return Ok(None);
    };
    let Some(hook) = webhook::parse(&Value::Object(obj.clone()), kind)? else {
        return Ok(None);
    };
    if let Err(refused) = relay.deliverer.check_literal(&hook.url) {
        return Err(json!({"code": "custom", "path": ["webhook", "url"],
            "message": client::refusal(&refused)}));
    }
    let raw = obj.get("webhook").cloned().unwrap_or_default();
    let url = match &raw {
        Value::String(url) => url.clone(),
        other => other["url"].as_str().unwrap_or_default().to_owned(),
    };
    let headers = hook.headers.iter().filter_map(|(name, value)| {
        Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
    });
    let destination = Destination {
        upstream: relay.upstream.clone(),
        route: at.route.to_owned(),
        client: at.client.map(str::to_owned),
        url,
        headers: headers.collect(),
        shape: at.shape,
    };
    let Some(token) = relay.seal(&destination) else {
        return Ok(None);
    };
    let receiver = format!("{}{RECEIVER_PATH}{token}", at.receiver);
    let replaced = match raw {
        Value::Object(mut object) => {
            object.remove("headers");
            object.insert("url".into(), Value::String(receiver));
            Value::Object(object)
        }
        _ => Value::String(receiver),
    };
    obj.insert("webhook".into(), replaced);
    Ok(Some(Bytes::from(Value::Object(obj).to_string())))
}
