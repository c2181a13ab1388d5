//! Rewriting the absolute URLs a web-data upstream builds from the `Host` it saw.
//!
//! A started crawl or batch responds with `"url": "https://<upstream>/v1/crawl/<id>"` and a status
//! page `"next": "https://<upstream>/v2/crawl/<id>?skip=40"`. Clients (the v1 Python SDK)
//! follow these verbatim, so they must name lingo, not the upstream. Only the top-level
//! `url` and `next` of a JSON object are touched: they are the API's own links in every
//! documented response, whereas nested `url`s are scraped pages' addresses.
//!
//! The response is scanned without building a tree ([`crate::translate::splice`]), and the output is the
//! original buffer sliced around the replaced values: one response in memory, no copy.

use bytes::Bytes;
use hyper::Uri;

use crate::translate::splice;

/// The top-level fields that hold API links.
const LINK_FIELDS: [&str; 2] = ["url", "next"];

/// Returns `body` as pieces with each top-level link re-based onto `public_base`
/// (`scheme://authority`, no trailing slash), after removing the upstream's `base_path`
/// prefix from its path. `None` when there is nothing to rewrite (not a JSON object, or no
/// absolute link in it), so the caller sends the body unchanged.
pub fn rebase_links(body: &Bytes, public_base: &str, base_path: &str) -> Option<Vec<Bytes>> {
    let edits: Vec<_> = splice::find(body, &LINK_FIELDS)?
        .into_iter()
        .filter_map(|found| {
            let rebased = rebase(&found.string()?, public_base, base_path)?;
            Some((found.range, splice::string_literal(&rebased)))
        })
        .collect();
    if edits.is_empty() {
        return None;
    }
    Some(splice::pieces(body, edits))
}

/// `https://up:3002/base/v1/crawl/x?skip=2` -> `<public_base>/v1/crawl/x?skip=2`; `None`
/// for anything but an absolute http(s) link.
pub fn rebase(link: &str, public_base: &str, base_path: &str) -> Option<String> {
    let uri: Uri = link.parse().ok()?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        return None;
    }
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let path_and_query = match path_and_query.strip_prefix(base_path) {
        Some(rest) if !base_path.is_empty() && rest.starts_with('/') => rest,
        _ => path_and_query,
    };
    Some(format!("{public_base}{path_and_query}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str, base_path: &str) -> Option<String> {
        let body = Bytes::copy_from_slice(body.as_bytes());
        let pieces = rebase_links(&body, "http://lingo:8080", base_path)?;
        Some(
            pieces
                .iter()
                .map(|p| std::str::from_utf8(p).unwrap())
                .collect(),
        )
    }

    #[test]
    fn rebases_top_level_links_only() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                r#"{"success":true,"id":"1","url":"https://api.up.dev/v1/crawl/1"}"#,
                "",
                Some(r#"{"success":true,"id":"1","url":"http://lingo:8080/v1/crawl/1"}"#),
            ),
            (
                r#"{"next": "http://10.0.0.5:3002/v2/crawl/1?skip=40&limit=10", "data":[{"url":"https://example.com/"}]}"#,
                "",
                Some(
                    r#"{"next": "http://lingo:8080/v2/crawl/1?skip=40&limit=10", "data":[{"url":"https://example.com/"}]}"#,
                ),
            ),
            (
                r#"{"url":"https://up/fc/v1/crawl/1","next":"https://up/fc/v1/crawl/1?skip=1"}"#,
                "/fc",
                Some(
                    r#"{"url":"http://lingo:8080/v1/crawl/1","next":"http://lingo:8080/v1/crawl/1?skip=1"}"#,
                ),
            ),
            // The base path is removed only as whole segments.
            (
                r#"{"url":"https://up/fcx/v1/crawl/1"}"#,
                "/fc",
                Some(r#"{"url":"http://lingo:8080/fcx/v1/crawl/1"}"#),
            ),
            (r#"{"url":"ftp://up/v1/crawl/1"}"#, "", None),
            (r#"{"url":"/v1/crawl/1"}"#, "", None),
            (r#"{"url":null}"#, "", None),
            (r#"{"url":"not a url"}"#, "", None),
            (r#"{"success":true,"data":{"url":"https://x"}}"#, "", None),
            (r#"[{"url":"https://up/v1/x"}]"#, "", None),
            ("not json", "", None),
        ];
        for (input, base_path, want) in cases {
            assert_eq!(run(input, base_path).as_deref(), *want, "{input}");
        }
    }

    #[test]
    fn escaped_links_are_decoded_and_re_encoded() {
        let got = run(r#"{"url":"https:\/\/up\/v1\/crawl\/1"}"#, "").unwrap();
        assert_eq!(got, r#"{"url":"http://lingo:8080/v1/crawl/1"}"#);
    }
}
