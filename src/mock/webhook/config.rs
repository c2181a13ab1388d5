//! A job request's `webhook`, checked as the real API's strict schema checks it: a URL
//! string, or `{url, headers, metadata, events}` with string headers and metadata and events
//! from `started`, `page`, `completed`, `failed` (or their full names, such as `crawl.page`).
//! A bad one is the schema issue the real API gives, for a 400 `BAD_REQUEST`.

use hyper::Uri;
use hyper::header::{CONTENT_LENGTH, HOST, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::{Event, Kind, Webhook};
use crate::http::hop;

/// The short event names, in the order the real API's schema lists them.
const EVENTS: [&str; 4] = ["completed", "failed", "page", "started"];

/// The request's `webhook` for a job of `kind`: `None` when there is none, the schema issue
/// when it is bad.
pub fn parse(body: &Value, kind: Kind) -> Result<Option<Webhook>, Value> {
    let Some(raw) = body.get("webhook") else {
        return Ok(None);
    };
    let object = match raw {
        Value::String(url) => return Ok(Some(Webhook::to(uri(url)?))),
        Value::Object(object) => object,
        other => return Err(wrong_type(&["webhook"], "object", other)),
    };
    let unknown: Vec<&String> = object
        .keys()
        .filter(|k| !["url", "headers", "metadata", "events"].contains(&k.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(
            json!({"code": "unrecognized_keys", "keys": unknown, "path": ["webhook"],
            "message": "Unrecognized key in webhook object -- please review the API documentation for webhook configuration changes"}),
        );
    }
    let url = match object.get("url") {
        Some(Value::String(url)) => uri(url)?,
        Some(other) => return Err(wrong_type(&["webhook", "url"], "string", other)),
        None => return Err(required(&["webhook", "url"])),
    };
    Ok(Some(Webhook {
        headers: headers(object.get("headers"))?,
        metadata: Value::Object(strings(object.get("metadata"), "metadata")?),
        events: events(object.get("events"), kind)?,
        ..Webhook::to(url)
    }))
}

/// An absolute `http` or `https` URL with a host (what the mock can deliver to).
fn uri(text: &str) -> Result<Uri, Value> {
    let invalid = || json!({"validation": "url", "code": "invalid_string", "message": "Invalid url", "path": ["webhook", "url"]});
    let uri: Uri = text.parse().map_err(|_| invalid())?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.host().is_none_or(str::is_empty) {
        return Err(invalid());
    }
    Ok(uri)
}

/// `headers`: names and values fit to send, none of those that frame the request (a
/// `Content-Type` given replaces the sender's).
fn headers(raw: Option<&Value>) -> Result<HeaderMap, Value> {
    let mut out = HeaderMap::new();
    for (name, value) in strings(raw, "headers")? {
        let bad = |why: &str| json!({"code": "custom", "path": ["webhook", "headers", name], "message": why});
        let parsed = HeaderName::from_bytes(name.as_bytes());
        let header = parsed.map_err(|_| bad("not an HTTP header name"))?;
        let own = header == HOST || header == CONTENT_LENGTH;
        if own || hop::is_hop_by_hop(header.as_str().as_bytes()) {
            return Err(bad("a header the sender sets itself"));
        }
        let value = value.as_str().unwrap_or_default();
        let value = HeaderValue::from_str(value).map_err(|_| bad("not an HTTP header value"))?;
        out.append(header, value);
    }
    Ok(out)
}

/// A `{string: string}` record (`headers`, `metadata`); absent is empty.
fn strings(raw: Option<&Value>, key: &str) -> Result<Map<String, Value>, Value> {
    let object = match raw {
        None => return Ok(Map::new()),
        Some(Value::Object(object)) => object,
        Some(other) => return Err(wrong_type(&["webhook", key], "object", other)),
    };
    match object.iter().find(|(_, v)| !v.is_string()) {
        Some((name, value)) => Err(wrong_type(&["webhook", key, name], "string", value)),
        None => Ok(object.clone()),
    }
}

/// `events`, as the set of [`Event`]s a job of `kind` delivers; absent is all four. A full
/// name of another kind (`extract.page` on a crawl) is accepted and matches nothing.
fn events(raw: Option<&Value>, kind: Kind) -> Result<u8, Value> {
    let list = match raw {
        None => return Ok(Event::ALL),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(wrong_type(&["webhook", "events"], "array", other)),
    };
    let mut set = 0;
    for (i, name) in list.iter().enumerate() {
        let text = name.as_str().unwrap_or_default();
        let (of, short) = text.split_once('.').unwrap_or((kind.name(), text));
        let event = Event::EACH.into_iter().find(|e| e.name() == short);
        match event {
            Some(event) if Kind::EACH.iter().any(|k| k.name() == of) => {
                if of == kind.name() {
                    set |= event.bit();
                }
            }
            _ => return Err(bad_event(i, name)),
        }
    }
    Ok(set)
}

fn bad_event(i: usize, received: &Value) -> Value {
    let options = EVENTS.map(|e| format!("'{e}'")).join(" | ");
    let message = format!("Invalid enum value. Expected {options}, received {received}");
    json!({"received": received, "code": "invalid_enum_value", "options": EVENTS,
        "path": ["webhook", "events", i], "message": message})
}

fn required(path: &[&str]) -> Value {
    json!({"code": "invalid_type", "expected": "string", "received": "undefined",
        "path": path, "message": "Required"})
}

/// The schema's issue for a value of the wrong JSON type.
fn wrong_type(path: &[&str], expected: &str, value: &Value) -> Value {
    let received = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    json!({"code": "invalid_type", "expected": expected, "received": received, "path": path,
        "message": format!("Expected {expected}, received {received}")})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(webhook: Value) -> Result<Option<Webhook>, Value> {
        parse(&json!({ "webhook": webhook }), Kind::Crawl)
    }

    #[test]
    fn the_string_and_the_object_forms() {
        assert!(parse(&json!({}), Kind::Crawl).unwrap().is_none());
        let plain = parsed(json!("http://127.0.0.1:9/hook")).unwrap().unwrap();
        assert_eq!(plain.url, "http://127.0.0.1:9/hook");
        assert_eq!(plain.events, Event::ALL);
        assert_eq!(plain.metadata, json!({}));
        let full = parsed(
            json!({"url": "https://h.example/x?y=1", "headers": {"X-Key": "k"},
            "metadata": {"m": "n"}, "events": ["page", "crawl.completed", "extract.failed"]}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(full.headers["x-key"], "k");
        assert_eq!(full.metadata, json!({"m": "n"}));
        assert!(full.wants(Event::Page) && full.wants(Event::Completed));
        assert!(!full.wants(Event::Started) && !full.wants(Event::Failed));
    }

    #[test]
    fn bad_webhooks_are_the_schemas_issues() {
        let cases = [
            (json!(7), "invalid_type", json!(["webhook"])),
            (json!(null), "invalid_type", json!(["webhook"])),
            (
                json!("not a url"),
                "invalid_string",
                json!(["webhook", "url"]),
            ),
            (
                json!("ftp://h.example/x"),
                "invalid_string",
                json!(["webhook", "url"]),
            ),
            (json!({}), "invalid_type", json!(["webhook", "url"])),
            (json!({"url": 1}), "invalid_type", json!(["webhook", "url"])),
            (
                json!({"url": "http://h", "secret": "s"}),
                "unrecognized_keys",
                json!(["webhook"]),
            ),
            (
                json!({"url": "http://h", "headers": []}),
                "invalid_type",
                json!(["webhook", "headers"]),
            ),
            (
                json!({"url": "http://h", "headers": {"a": 1}}),
                "invalid_type",
                json!(["webhook", "headers", "a"]),
            ),
            (
                json!({"url": "http://h", "headers": {"a b": "c"}}),
                "custom",
                json!(["webhook", "headers", "a b"]),
            ),
            (
                json!({"url": "http://h", "headers": {"Host": "c"}}),
                "custom",
                json!(["webhook", "headers", "Host"]),
            ),
            (
                json!({"url": "http://h", "headers": {"Connection": "close"}}),
                "custom",
                json!(["webhook", "headers", "Connection"]),
            ),
            (
                json!({"url": "http://h", "metadata": {"a": {}}}),
                "invalid_type",
                json!(["webhook", "metadata", "a"]),
            ),
            (
                json!({"url": "http://h", "events": "page"}),
                "invalid_type",
                json!(["webhook", "events"]),
            ),
            (
                json!({"url": "http://h", "events": ["page", "done"]}),
                "invalid_enum_value",
                json!(["webhook", "events", 1]),
            ),
            (
                json!({"url": "http://h", "events": ["job.page"]}),
                "invalid_enum_value",
                json!(["webhook", "events", 0]),
            ),
        ];
        for (webhook, code, path) in cases {
            let issue = parsed(webhook.clone())
                .err()
                .unwrap_or_else(|| panic!("{webhook}"));
            assert_eq!(
                (&issue["code"], &issue["path"]),
                (&json!(code), &path),
                "{webhook}"
            );
            assert!(issue["message"].is_string());
        }
    }
}
