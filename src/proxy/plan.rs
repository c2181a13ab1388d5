//! What a request will be, decided once, before anything is sent upstream: translated (and
//! by which endpoint's translation), tunnelled, served with the table's model aliases, or
//! passed through. What the route refuses (model management, a body declared too large, a
//! path it has no translator for) is refused here.

use hyper::Request;

use super::exchange::Exchange;
use crate::base::dialect::Dialect;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::fields::Fields;
use crate::http::h1::fields::parse_length;
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
    /// A native model listing, answered with the table's aliases added.
    ListTags,
    /// A native call that may name a model alias.
    Rename,
    /// Forwarded unchanged.
    Pass,
}

// === impl Plan ===

impl Plan {
    /// Decides the plan for `req`, or what the route refuses.
    pub fn decide(x: &Exchange<'_>, req: &Request<Body>) -> Result<Plan, ProxyError> {
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

/// What the route itself refuses: model management where it is not allowed, and a body
/// declared larger than the route takes.
fn refuse(x: &Exchange<'_>, req: &Request<Body>) -> Result<(), ProxyError> {
    if x.upstream.speaks == Dialect::Native
        && !x.route.allow_model_management
        && is_model_management(x.path())
    {
        return Err(ProxyError::ModelManagement {
            path: x.path().to_owned(),
        });
    }
    let declared = Fields::new(req.headers(), x.raw_fields)
        .content_length()
        .and_then(parse_length);
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
