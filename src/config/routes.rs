//! `routes:` -> [`Route`]s: matchers, target upstream, client dialect, and what a route
//! that translates will do today.

use super::ctx::Ctx;
use super::raw::{self, At};
use super::upstream::{self, Declared};
use crate::base::dialect::Dialect;
use crate::table::{Limits, PathMatch, Route};
use crate::translate::native::Extras;

/// What a route whose clients speak `client` and whose upstream speaks `upstream` does
/// today: `None` when it works (same dialect, or a translator exists), otherwise why not.
///
/// The one place to change when a translator lands; `compile` turns the text into a warning
/// and `lingo check` prints it next to the route.
pub fn translator_status(
    client: Dialect,
    upstream: Dialect,
    matcher: &PathMatch,
) -> Option<String> {
    use Dialect::{Chat, Native, WebData, WebDataV2};
    match (client, upstream) {
        _ if client == upstream => return None,
        // v1 calls are translated (those v2 has no home for response 501); v2 calls pass.
        (WebData, WebDataV2) | (WebDataV2, WebData) => return None,
        _ => {}
    }
    if client.is_web_data() || upstream.is_web_data() {
        return Some(
            "web-data and the model dialects cannot be translated into each other; responds with 501"
                .into(),
        );
    }
    let translated: Vec<String> = crate::translate::ENDPOINTS
        .iter()
        .filter(|(c, u, path, _)| {
            *c == client && *u == upstream && matcher.covers(&crate::translate::example(path))
        })
        .map(|(.., path, _)| path.replace('*', "{id}"))
        .collect();
    match (client, upstream, matcher) {
        (_, _, PathMatch::Exact(_)) if !translated.is_empty() => None,
        // Every endpoint under the prefix is translated (e.g. `/v1/models` and `/v1/models/{id}`).
        (_, _, PathMatch::Prefix(p))
            if !translated.is_empty()
                && translated.iter().all(|t| t.starts_with(p.as_str()))
                && !["/v1", "/api", "", "/"].contains(&p.as_str()) =>
        {
            None
        }
        (Chat, Native, _) | (Native, Chat, _) if translated.is_empty() => Some(format!(
            "no translator from {client} to {upstream} for this path yet; responds with 501"
        )),
        (Chat, Native, _) | (Native, Chat, _) => Some(format!(
            "only {} translated from {client} to {upstream} yet; other paths respond with 501",
            translated.join(", ")
        )),
        _ => Some(format!(
            "no translator from {client} to {upstream} yet; responds with 501"
        )),
    }
}

pub(super) fn compile(
    cx: &mut Ctx<'_>,
    raw: Vec<At<raw::Route>>,
    upstreams: &[Declared],
    limits: Limits,
) -> Vec<Route> {
    if raw.is_empty() {
        cx.warnings
            .push("no routes: every request gets a 404".into());
    }
    // Few routes: a list is simpler than a map and keeps `PathMatch` free of a `Hash` bound.
    let mut seen: Vec<(PathMatch, usize)> = Vec::new();
    let mut out = Vec::new();
    for at in raw {
        let (line, place) = (at.line, at.place());
        let r = at.value;
        let Some((matcher, label)) = matcher(cx, &place, r.path, r.prefix) else {
            continue;
        };
        once(cx, &mut seen, (&matcher, line), &place);
        let what = format!("route {label}");
        let max_body = (r.max_body.as_ref()).map(|s| cx.size(s, &format!("{what}: max_body")));
        let index = upstream::find(cx, upstreams, &r.to, &what);
        let client = r.speaks.as_ref().map(|s| cx.dialect(s, &what));
        let Some(index) = index else { continue };
        let Some(upstream_speaks) = upstreams[index].speaks else {
            continue;
        };
        let Some(speaks) = client.unwrap_or(Some(default_client(upstream_speaks))) else {
            continue;
        };
        let settings = (r.allow_model_management, r.options.as_ref());
        check_options(cx, (&place, &what), settings, &upstreams[index], speaks);
        let extras = extras(
            cx,
            &what,
            r.extra_options.as_ref(),
            (speaks, upstream_speaks),
        );
        if let Some(status) = translator_status(speaks, upstream_speaks, &matcher) {
            cx.warnings.push(format!("{what} (line {line}): {status}"));
        }
        let Some(max_body) = max_body.unwrap_or(Some(limits.max_body)) else {
            continue;
        };
        out.push(Route {
            label: matcher.to_string().into(),
            matcher,
            speaks,
            upstream: index,
            allow_model_management: r.allow_model_management,
            websocket: r.websocket,
            max_body,
            options: r.options.map(|o| o.value).unwrap_or_default(),
            extras,
            line,
        });
    }
    out
}

/// An error for a matcher already `seen` on an earlier line; else remembers it.
fn once(
    cx: &mut Ctx<'_>,
    seen: &mut Vec<(PathMatch, usize)>,
    (matcher, line): (&PathMatch, usize),
    place: &At<()>,
) {
    match seen.iter().find(|(m, _)| m == matcher) {
        Some((_, first)) => cx.error(
            place,
            format!("route {matcher} is defined twice: lines {first} and {line}"),
        ),
        None => seen.push((matcher.clone(), line)),
    }
}

/// What a route's clients speak when it does not say: its upstream's dialect, except that
/// the clients of a v2-only web-data upstream speak web-data (their v1 calls are translated).
pub fn default_client(upstream: Dialect) -> Dialect {
    match upstream {
        Dialect::WebDataV2 => Dialect::WebData,
        other => other,
    }
}

/// `allow_model_management` and `options` are refused where they would mean nothing: model
/// management off a native pass-through route, default native options off a route that
/// translates to a native upstream.
fn check_options(
    cx: &mut Ctx<'_>,
    (place, what): (&At<()>, &str),
    (allow_model_management, options): (
        bool,
        Option<&At<serde_json::Map<String, serde_json::Value>>>,
    ),
    upstream: &Declared,
    speaks: Dialect,
) {
    let Some(upstream_speaks) = upstream.speaks else {
        return;
    };
    if allow_model_management {
        let name = &upstream.name;
        let why = match (upstream_speaks, speaks) {
            (Dialect::Native, Dialect::Native) => None,
            (Dialect::Native, _) => Some(format!("this route translates {speaks} to native")),
            _ => Some(format!(
                "this route goes to {upstream_speaks} upstream `{name}`"
            )),
        };
        if let Some(why) = why {
            let message = format!(
                "{what}: allow_model_management only means something on a native pass-through route; {why}"
            );
            cx.error(place, message);
        }
    }
    let translates_to_native = speaks != upstream_speaks && upstream_speaks == Dialect::Native;
    if let Some(options) = options
        && !translates_to_native
    {
        let message = format!(
            "{what}: options (default native options) only mean something on a route that translates to a native upstream"
        );
        cx.error(&options.place(), message);
    }
}

/// `extra_options`: what a native route over a chat-completions upstream does with the
/// native-only options (`pass`, the default, `drop` or `refuse`); an error anywhere else,
/// where it would mean nothing.
fn extras(
    cx: &mut Ctx<'_>,
    what: &str,
    setting: Option<&At<String>>,
    (client, upstream): (Dialect, Dialect),
) -> Extras {
    let Some(setting) = setting else {
        return Extras::Pass;
    };
    if (client, upstream) != (Dialect::Native, Dialect::Chat) {
        let message = format!(
            "{what}: extra_options only means something on a native route to a chat-completions upstream"
        );
        cx.error(&setting.place(), message);
    }
    match setting.value.as_str() {
        "pass" => Extras::Pass,
        "drop" => Extras::Drop,
        "refuse" => Extras::Refuse,
        other => {
            let message =
                format!("{what}: extra_options is one of pass, drop, refuse (not `{other}`)");
            cx.error(&setting.place(), message);
            Extras::Pass
        }
    }
}

/// The route's matcher and its label in messages (the path as written).
fn matcher(
    cx: &mut Ctx<'_>,
    place: &At<()>,
    path: Option<At<String>>,
    prefix: Option<At<String>>,
) -> Option<(PathMatch, String)> {
    let (at, exact) = match (path, prefix) {
        (Some(path), None) => (path, true),
        (None, Some(prefix)) => (prefix, false),
        (Some(_), Some(_)) => {
            cx.error(
                place,
                "a route has `path:` (exact) or `prefix:` (whole segments), not both",
            );
            return None;
        }
        (None, None) => {
            cx.error(
                place,
                "a route needs `path:` (exact) or `prefix:` (whole segments)",
            );
            return None;
        }
    };
    let text = &at.value;
    if !text.starts_with('/') {
        cx.error(&at, format!("route path `{text}` must start with `/`"));
        return None;
    }
    if text.contains(['?', '#']) {
        cx.error(
            &at,
            format!("route path `{text}` must not have a query or fragment"),
        );
        return None;
    }
    let matcher = if exact {
        PathMatch::Exact(text.clone())
    } else {
        PathMatch::Prefix(text.trim_end_matches('/').to_owned())
    };
    Some((matcher, at.value))
}
