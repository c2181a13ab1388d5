//! Which route responds to a path: an exact `path:` beats any `prefix:`, a longer prefix beats a
//! shorter one, and the first in the file wins a tie.
//!
//! Pure and allocation-free: it runs on every request against a table compiled once.
//! Prefixes match whole segments, so `/v1` never serves `/v10`.

use super::{PathMatch, Route};

/// The route for `path` (already normalised by the caller), or `None` (404).
pub fn find<'a>(routes: &'a [Route], path: &str) -> Option<&'a Route> {
    let mut best: Option<(&Route, usize)> = None;
    for route in routes {
        match &route.matcher {
            PathMatch::Exact(exact) if exact == path => return Some(route),
            PathMatch::Exact(_) => {}
            PathMatch::Prefix(prefix) if prefix_matches(prefix, path) => {
                // Strictly longer only: on a tie the earlier route stays.
                if best.is_none_or(|(_, len)| prefix.len() > len) {
                    best = Some((route, prefix.len()));
                }
            }
            PathMatch::Prefix(_) => {}
        }
    }
    best.map(|(route, _)| route)
}

/// Whole-segment prefix match. Prefixes are stored without a trailing `/` (the root is ""),
/// so what follows the prefix must be nothing or a `/`.
fn prefix_matches(prefix: &str, path: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::dialect::Dialect;

    /// A route whose `line` identifies it in the expectations.
    fn route(matcher: PathMatch, line: usize) -> Route {
        Route {
            label: matcher.to_string().into(),
            matcher,
            speaks: Dialect::Native,
            upstream: 0,
            allow_model_management: false,
            websocket: false,
            max_body: 1,
            options: Default::default(),
            extras: crate::translate::native::Extras::Pass,
            line,
        }
    }

    fn exact(path: &str, line: usize) -> Route {
        route(PathMatch::Exact(path.into()), line)
    }

    fn prefix(prefix: &str, line: usize) -> Route {
        route(PathMatch::Prefix(prefix.into()), line)
    }

    fn found(routes: &[Route], path: &str) -> Option<usize> {
        find(routes, path).map(|r| r.line)
    }

    #[test]
    fn single_pattern_table() {
        // (pattern, path, matches)
        let cases = [
            (prefix("/v1", 1), "/v1", true),
            (prefix("/v1", 1), "/v1/", true),
            (prefix("/v1", 1), "/v1/x", true),
            (prefix("/v1", 1), "/v10", false),
            (prefix("/v1", 1), "/v10/x", false),
            (prefix("/v1", 1), "/v", false),
            (prefix("/v1", 1), "/", false),
            (prefix("/v1/models", 1), "/v1/models", true),
            (prefix("/v1/models", 1), "/v1/models/", true),
            (prefix("/v1/models", 1), "/v1/models/x", true),
            (prefix("/v1/models", 1), "/v1/modelsx", false),
            (prefix("", 1), "/", true),
            (prefix("", 1), "/anything/at/all", true),
            (exact("/v1/models", 1), "/v1/models", true),
            (exact("/v1/models", 1), "/v1/models/", false),
            (exact("/v1/models", 1), "/v1/models/x", false),
            (exact("/v1/models/", 1), "/v1/models/", true),
            (exact("/", 1), "/", true),
            (exact("/", 1), "/x", false),
        ];
        for (pattern, path, matches) in cases {
            let label = pattern.matcher.to_string();
            assert_eq!(
                found(&[pattern], path),
                matches.then_some(1),
                "{label} vs {path}"
            );
        }
    }

    #[test]
    fn precedence_table() {
        // (routes in file order, path, line of the winner)
        let cases: Vec<(Vec<Route>, &str, Option<usize>)> = vec![
            // Exact beats any prefix, wherever it is in the file.
            (
                vec![prefix("/v1/models", 1), exact("/v1/models", 2)],
                "/v1/models",
                Some(2),
            ),
            (
                vec![prefix("/v1/models", 1), exact("/v1/models", 2)],
                "/v1/models/x",
                Some(1),
            ),
            // Longer prefix beats shorter, in either order.
            (
                vec![prefix("/v1", 1), prefix("/v1/models", 2)],
                "/v1/models/x",
                Some(2),
            ),
            (
                vec![prefix("/v1/models", 1), prefix("/v1", 2)],
                "/v1/models/x",
                Some(1),
            ),
            (
                vec![prefix("/v1", 1), prefix("/v1/models", 2)],
                "/v1/scrape",
                Some(1),
            ),
            // Ties: the first in the file wins.
            (vec![prefix("/v1", 1), prefix("/v1", 2)], "/v1/x", Some(1)),
            (vec![exact("/a", 1), exact("/a", 2)], "/a", Some(1)),
            // The root prefix catches what nothing else does.
            (vec![prefix("", 1), prefix("/api", 2)], "/api/tags", Some(2)),
            (vec![prefix("", 1), prefix("/api", 2)], "/other", Some(1)),
            // No match.
            (vec![prefix("/v1", 1), exact("/v2", 2)], "/v2/x", None),
            (vec![], "/", None),
        ];
        for (routes, path, expected) in cases {
            assert_eq!(found(&routes, path), expected, "{path}");
        }
    }

    #[test]
    fn shipped_contract_routes() {
        // The seven routes of the route-table contract (tests/fixtures/route-table.yaml), identified by their position.
        let routes = [
            exact("/v1/chat/completions", 1),
            exact("/v1/completions", 2),
            exact("/v1/embeddings", 3),
            prefix("/v1/models", 4),
            prefix("/api", 5),
            prefix("/v1", 6),
            prefix("/v2", 7),
        ];
        let cases = [
            ("/v1/chat/completions", Some(1)),
            ("/v1/completions", Some(2)),
            ("/v1/embeddings", Some(3)),
            ("/v1/models", Some(4)),
            ("/v1/models/llama3.2:3b", Some(4)),
            ("/api/tags", Some(5)),
            ("/api/chat", Some(5)),
            ("/v1/scrape", Some(6)),
            ("/v1/chat/completions/x", Some(6)),
            ("/v2/crawl/x", Some(7)),
            ("/v3", None),
            ("/", None),
        ];
        for (path, expected) in cases {
            assert_eq!(found(&routes, path), expected, "{path}");
        }
    }
}
