//! The `formats` list, both ways: v1's strings plus their option objects (`extract`,
//! `jsonOptions`, `changeTrackingOptions`) folded into v2's format objects, and v2's
//! objects unfolded again for the options v2 reports back.

use serde_json::{Map, Value, json};

use super::JsonAs;
use super::V1Error;
use super::keys::{self, at};

/// Every format a v1 scrape accepts.
const V1_FORMATS: &[&str] = &[
    "markdown",
    "html",
    "rawHtml",
    "links",
    "screenshot",
    "screenshot@fullPage",
    "extract",
    "json",
    "summary",
    "changeTracking",
];

/// The formats v1 search accepts in its `scrapeOptions`.
const V1_SEARCH_FORMATS: &[&str] = &[
    "markdown",
    "html",
    "rawHtml",
    "links",
    "screenshot",
    "screenshot@fullPage",
    "extract",
    "json",
];

/// The option objects the formats fold in, taken out of the scrape options.
pub(super) struct Folded {
    pub extract: Option<Value>,
    pub json_options: Option<Value>,
    pub change_tracking: Option<Value>,
}

/// v1 `formats` (at `path`) as v2's, and which field the client reads a json result from.
/// `search` restricts the list to what v1 search accepts.
pub(super) fn to_v2(
    formats: &Value,
    folded: &Folded,
    path: &[&str],
    search: bool,
) -> Result<(Vec<Value>, JsonAs), V1Error> {
    let names = names(formats, path, search)?;
    rules(&names, folded, path)?;
    let mut out = Vec::with_capacity(names.len());
    let mut json_done = false;
    for name in &names {
        match *name {
            "screenshot@fullPage" => out.push(json!({"type": "screenshot", "fullPage": true})),
            "extract" | "json" if json_done => {}
            "extract" | "json" => {
                json_done = true;
                out.push(json_format(folded, path)?);
            }
            "changeTracking" => out.push(change_tracking(folded, path)?),
            other => out.push(Value::String(other.to_owned())),
        }
    }
    let json_as = if names.contains(&"extract") && !names.contains(&"json") {
        JsonAs::Extract
    } else {
        JsonAs::Json
    };
    Ok((out, json_as))
}

/// The format names, each checked against v1's list.
fn names<'a>(formats: &'a Value, path: &[&str], search: bool) -> Result<Vec<&'a str>, V1Error> {
    let path = at(path, "formats");
    let Some(list) = formats.as_array() else {
        return Err(V1Error::field(&path, "formats must be an array of strings"));
    };
    let allowed = if search {
        V1_SEARCH_FORMATS
    } else {
        V1_FORMATS
    };
    list.iter()
        .map(|f| match f.as_str() {
            Some(name) if allowed.contains(&name) => Ok(name),
            Some(name) => Err(V1Error::field(
                &path,
                format!(
                    "'{name}' is not a v1 format here (one of {})",
                    allowed.join(", ")
                ),
            )),
            None => Err(V1Error::field(&path, "v1 formats are strings")),
        })
        .collect()
}

/// v1's own 400s that v2 no longer raises.
fn rules(names: &[&str], folded: &Folded, path: &[&str]) -> Result<(), V1Error> {
    let has = |n: &str| names.contains(&n);
    let fail = |key: &'static str, message: &str| Err(V1Error::field(&at(path, key), message));
    // v1's `extractRefine`: each format and its options go together, both ways.
    if has("extract") && folded.extract.is_none() {
        return fail("extract", "the extract format needs extract options");
    }
    if folded.extract.is_some() && !has("extract") {
        return fail("extract", "extract options need the extract format");
    }
    if has("json") && folded.json_options.is_none() {
        return fail("jsonOptions", "the json format needs jsonOptions");
    }
    if folded.json_options.is_some() && !has("json") {
        return fail("jsonOptions", "jsonOptions need the json format");
    }
    if folded.change_tracking.is_some() && !has("changeTracking") {
        return fail(
            "changeTrackingOptions",
            "changeTrackingOptions need the changeTracking format",
        );
    }
    if has("changeTracking") && !has("markdown") {
        return fail(
            "formats",
            "the changeTracking format needs the markdown format",
        );
    }
    if has("screenshot") && has("screenshot@fullPage") {
        return fail(
            "formats",
            "screenshot and screenshot@fullPage cannot both be requested",
        );
    }
    Ok(())
}

/// The one json format object: from `jsonOptions` if given, else from `extract`.
fn json_format(folded: &Folded, path: &[&str]) -> Result<Value, V1Error> {
    let (key, options) = match (&folded.json_options, &folded.extract) {
        (Some(json), Some(extract)) if json != extract => {
            return Err(V1Error::field(
                &at(path, "extract"),
                "give either extract or jsonOptions: v2 has one json format",
            ));
        }
        (Some(json), _) => ("jsonOptions", json),
        (None, Some(extract)) => ("extract", extract),
        (None, None) => {
            return Err(V1Error::field(
                &at(path, "jsonOptions"),
                "the json format needs jsonOptions",
            ));
        }
    };
    let path = at(path, key);
    let options = object(options, &path)?;
    keys::check(options, &path, &[keys::JSON_OPTIONS], &[])?;
    if options.get("agent").is_some_and(|a| !a.is_null()) {
        return Err(fire_1(&at(&path, "agent")));
    }
    if options.contains_key("temperature") {
        return Err(V1Error::field(
            &at(&path, "temperature"),
            "temperature has no v2 equivalent on this upstream",
        ));
    }
    if options.get("mode").is_some_and(|m| m != "llm") {
        return Err(V1Error::field(&at(&path, "mode"), "mode must be \"llm\""));
    }
    // `mode` has one value and `systemPrompt` was replaced by v1 servers themselves (2a).
    let mut out = json!({"type": "json"});
    copy_present(
        options,
        &mut out,
        &["schema", "prompt", "checkPromptInjection"],
    );
    Ok(out)
}

/// The changeTracking format object, from `changeTrackingOptions` (or v1's defaults).
fn change_tracking(folded: &Folded, path: &[&str]) -> Result<Value, V1Error> {
    let mut out = json!({"type": "changeTracking", "modes": [], "tag": null});
    if let Some(options) = &folded.change_tracking {
        let path = at(path, "changeTrackingOptions");
        let options = object(options, &path)?;
        keys::check(options, &path, &[keys::CHANGE_TRACKING], &[])?;
        copy_present(options, &mut out, &["modes", "tag", "schema", "prompt"]);
    }
    Ok(out)
}

/// Copies the non-null members named in `names`.
fn copy_present(from: &Map<String, Value>, to: &mut Value, names: &[&str]) {
    for name in names {
        if let Some(v) = from.get(*name).filter(|v| !v.is_null()) {
            to[*name] = v.clone();
        }
    }
}

pub(super) fn object<'a>(v: &'a Value, path: &[&str]) -> Result<&'a Map<String, Value>, V1Error> {
    v.as_object()
        .ok_or_else(|| V1Error::field(path, "must be an object"))
}

/// The FIRE-1 agent: no v2 home.
pub(super) fn fire_1(path: &[&str]) -> V1Error {
    V1Error::field(path, "agent (FIRE-1) is not supported by this upstream")
}

/// v2 scrape options as v1 shows them (active crawls' `options.scrapeOptions`): format
/// objects back to strings plus their option objects, `parsers` back to `parsePDF`.
pub(super) fn to_v1(options: &mut Map<String, Value>) {
    if let Some(Value::Array(formats)) = options.remove("formats") {
        let mut names = Vec::with_capacity(formats.len());
        for format in formats {
            names.push(unfold(format, options));
        }
        options.insert("formats".into(), Value::Array(names));
    }
    if let Some(Value::Array(parsers)) = options.remove("parsers") {
        let pdf = parsers
            .iter()
            .any(|p| p == "pdf" || p.get("type").is_some_and(|t| t == "pdf"));
        options.insert("parsePDF".into(), Value::Bool(pdf));
    }
}

/// One v2 format as a v1 string, its options moved into `options`.
fn unfold(format: Value, options: &mut Map<String, Value>) -> Value {
    let Value::Object(mut object) = format else {
        return format;
    };
    let kind = object.remove("type").unwrap_or(Value::Null);
    match kind.as_str() {
        Some("json") => {
            options.insert("jsonOptions".into(), Value::Object(object));
            kind
        }
        Some("changeTracking") => {
            options.insert("changeTrackingOptions".into(), Value::Object(object));
            kind
        }
        Some("screenshot") if object.get("fullPage") == Some(&Value::Bool(true)) => {
            Value::String("screenshot@fullPage".into())
        }
        _ => kind,
    }
}
