//! What a request will be, decided once, before anything is sent upstream: translated (and
//! by which endpoint's translation), tunnelled, served with the table's model aliases, or
//! passed through (a job whose webhook lingo relays has it rewritten on the way). What the
//! route refuses (model management, a body declared too large, a
//! path it has no translator for, a WebSocket upgrade with a body) is refused here.

use super::exchange::Exchange;
use super::run::webhook_relay;
use crate::base::dialect::Dialect;
use crate::error::ProxyError;
use crate::http::h1::fields::parse_length;
use crate::http::message::Request;
use crate::table::{Route, Upstream};
use crate::translate::{self, Endpoint};

/// The native endpoints whose body names a model.
const MODEL_PATHS: [&str; 5] = [
    "/api/chat",
    "/api/generate",
    "/api/embed",
    "/api/embeddings",
    "/api/show",
];

/// What a request will be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Translated by this endpoint's translation.
    Translate(Endpoint),
    /// A WebSocket upgrade, tunnelled.
    Tunnel,
    /// A native model listing, returned with the table's aliases added.
    ListTags,
    /// A native call that may name a model alias.
    Rename,
    /// A job started on an upstream whose webhooks lingo relays: its `webhook` rewritten.
    Relay,
    /// Forwarded unchanged.
    Pass,
}

// === impl Plan ===

impl Plan {
    /// Decides the plan for `req`, or what the route refuses.
    pub fn decide(x: &Exchange<'_>, req: &Request) -> Result<Plan, ProxyError> {
        let (route, upstream, path) = (x.route, x.upstream, x.path());
        let endpoint = translate::endpoint(route.speaks, upstream.speaks, path);
        if (route.speaks, upstream.speaks) == (Dialect::Native, Dialect::Chat)
            && is_model_management(path)
        {
            return Err(ProxyError::NoModelManagement {
                path: path.to_owned(),
            });
        }
        // Web-data clients of a v2-only upstream: `/v1/...` is translated, the rest passes.
        let v2_passes = route.speaks == Dialect::WebData && upstream.speaks == Dialect::WebDataV2;
        if route.translates(upstream) && endpoint.is_none() && !v2_passes {
            return Err(ProxyError::NoTranslator {
                client: route.speaks,
                upstream: upstream.speaks,
            });
        }
        refuse(x, req)?;
        let native = route.speaks == Dialect::Native && upstream.speaks == Dialect::Native;
        let table = &x.snapshot.table;
        Ok(match endpoint {
            Some(endpoint) => Plan::Translate(endpoint),
            None if x.upgrade => Plan::Tunnel,
            None if webhook_relay::relays(x, req.method()) => Plan::Relay,
            None if native && path == "/api/tags" && table.native_aliases().next().is_some() => {
                Plan::ListTags
            }
            None if native && !table.models.is_empty() && MODEL_PATHS.contains(&path) => {
                Plan::Rename
            }
            None => Plan::Pass,
        })
    }
}

/// Whether a request that asks for a WebSocket upgrade is tunnelled, or what refuses it.
///
/// An upgrade request with a body is refused (400), on every route: after a 101 the
/// connection is the tunnel's, and a body lingo did not read would reach the upstream
/// through it as the new protocol's first bytes (a request hidden there, with none of the
/// route's rules applied). The server's connection hands over no connection with a body
/// unread either (`server::h1`). One is tunnelled where the route serves WebSockets
/// ([`tunnels`]); elsewhere it is served as a plain request, without the upgrade's
/// hop-by-hop fields (`Connection: upgrade`, `Upgrade`), which the header rules drop.
pub fn upgrade(
    req: &Request,
    route: &Route,
    upstream: &Upstream,
    path: &str,
) -> Result<bool, ProxyError> {
    if !http_body::Body::is_end_stream(req.body()) {
        return Err(ProxyError::BadRequest(
            "a WebSocket upgrade request cannot carry a body",
        ));
    }
    Ok(tunnels(route, upstream, path))
}

/// Where WebSocket upgrades are tunnelled: the web-data job watchers (`/v1/crawl/{id}`,
/// `/v2/crawl/{id}`) on a route to a web-data upstream, and every path of a route that says
/// `websocket: true` (but those it translates).
pub fn tunnels(route: &Route, upstream: &Upstream, path: &str) -> bool {
    if upstream.speaks.is_web_data() && is_watcher(path) {
        return true;
    }
    route.websocket && translate::endpoint(route.speaks, upstream.speaks, path).is_none()
}

/// `/v1/crawl/{id}` or `/v2/crawl/{id}`: a crawl job's WebSocket status stream.
fn is_watcher(path: &str) -> bool {
    let id = (path.strip_prefix("/v1/crawl/")).or_else(|| path.strip_prefix("/v2/crawl/"));
    id.is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// What the route itself refuses: model management where it is not allowed, and a body
/// declared larger than the route takes.
fn refuse(x: &Exchange<'_>, req: &Request) -> Result<(), ProxyError> {
    if x.upstream.speaks == Dialect::Native
        && !x.route.allow_model_management
        && is_model_management(x.path())
    {
        return Err(ProxyError::ModelManagement {
            path: x.path().to_owned(),
        });
    }
    let declared = req.headers().content_length().and_then(parse_length);
    if declared.is_some_and(|len| len > x.route.max_body) {
        return Err(ProxyError::BodyTooLarge {
            limit: x.route.max_body,
        });
    }
    Ok(())
}

/// The native endpoints that change what the server holds (pull, push, create, copy,
/// delete, blobs). Compared without case and trailing slash, as a lenient upstream router
/// might match them.
pub fn is_model_management(path: &str) -> bool {
    const BLOCKED: [&str; 6] = ["pull", "push", "create", "copy", "delete", "blobs"];
    // Compared after `/api/`, once: every native request asks.
    let Some(rest) = path
        .get(..5)
        .filter(|api| api.eq_ignore_ascii_case("/api/"))
        .map(|_| path[5..].trim_end_matches('/'))
    else {
        return false;
    };
    BLOCKED
        .iter()
        .any(|blocked| rest.eq_ignore_ascii_case(blocked))
        || rest
            .get(..6)
            .is_some_and(|p| p.eq_ignore_ascii_case("blobs/"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn watcher_paths() {
        for (path, watcher) in [
            ("/v1/crawl/3f1c", true),
            ("/v2/crawl/3f1c", true),
            ("/v1/crawl/", false),
            ("/v1/crawl", false),
            ("/v1/crawl/3f1c/errors", false),
            ("/v2/crawl/3f1c/", false),
            ("/v1/scrape", false),
            ("/v3/crawl/3f1c", false),
            ("/public/v1/crawl/3f1c", false),
            ("/api/tags", false),
        ] {
            assert_eq!(super::is_watcher(path), watcher, "{path}");
        }
    }

    #[test]
    fn model_management_paths() {
        for (path, blocked) in [
            ("/api/pull", true),
            ("/api/pull/", true),
            ("/API/Delete", true),
            ("/api/blobs/sha256:abc", true),
            ("/api/blobs", true),
            ("/api/chat", false),
            ("/api/pulling", false),
            ("/api/blobsx", false),
            ("/api/tags", false),
            ("/API/Blobs/sha256:abc", true),
            ("/api/blobs//", true),
            ("/api/blob", false),
            ("/api/b\u{e9}", false),
            ("", false),
            ("/api", false),
            ("/api/", false),
            ("/apix/pull", false),
            ("/api//pull", false),
            ("/api/copy/", true),
            ("/Api/Create", true),
            ("/api/push", true),
        ] {
            assert_eq!(super::is_model_management(path), blocked, "{path}");
        }
    }
}
