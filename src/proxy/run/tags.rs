//! `GET /api/tags` on native routes: the upstream's model list plus the table's aliases.
//!
//! A native client (an Ollama-style model picker, `ollama.list()`) learns the names it may ask
//! for from `/api/tags`; without this, the aliases lingo resolves on native routes (see
//! [`super::rename`]) would be names no native client can discover. Only a `GET /api/tags` on
//! a native route to a native upstream, when the table has aliases a native client can use,
//! is read here; everything else, and every table without such aliases, passes through
//! untouched (no body read).
//!
//! The route's upstream and every other upstream an alias points at are asked concurrently.
//! The route's upstream failing is the client's error, rewritten as pass-through would show it
//! (its status, a native `{"error"}`, its key redacted); another upstream failing only costs
//! its aliases their details (logged).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use hyper::Method;

use super::shared::{bad_gateway, json, send, upstream_failure, whole};
use crate::error::ProxyError;
use crate::http::join::join_all;
use crate::http::message::{HeaderView, Request, Response};
use crate::proxy::exchange::Exchange;
use crate::proxy::run::pass;
use crate::table::{ModelAlias, RouteTable};
use crate::translate::chat;
use crate::translate::models::{self, AliasEntry, TagList};

/// One upstream's model list, or why there is none.
type Fetched = Result<Bytes, ProxyError>;

/// Responds to `GET /api/tags` with the route upstream's list and one entry per usable alias;
/// other methods (`HEAD` included: there is no list to merge) pass through.
pub async fn handle(call: &Exchange<'_>, req: Request) -> Result<Response, ProxyError> {
    if req.method() != Method::GET {
        return pass::forward_raw(call, req).await;
    }
    let own_index = call.route.upstream;
    let (aliases, others) = plan(&call.snapshot.table, own_index);
    let headers = req.headers();
    let own = fetch(call, own_index, headers, &call.path_and_query);
    let other_fetches: Vec<Pin<Box<dyn Future<Output = Fetched> + Send + '_>>> = others
        .iter()
        .map(|&index| Box::pin(fetch(call, index, headers, "/api/tags")) as _)
        .collect();
    // The route's upstream failing ends the call at once (the others are dropped, cancelled).
    let others_done = async { Ok::<_, ProxyError>(join_all(other_fetches).await) };
    let (own, fetched) = tokio::try_join!(own, others_done)?;

    let own = TagList::parse(&own).map_err(|m| bad_gateway(call.upstream, m))?;
    let lists: Vec<(usize, Option<TagList>)> = others
        .iter()
        .zip(fetched)
        .map(|(&index, response)| (index, readable(call, index, response)))
        .collect();
    let listed_by = |index: usize| {
        if index == own_index {
            return Some(&own);
        }
        lists
            .iter()
            .find(|(i, _)| *i == index)
            .and_then(|(_, list)| list.as_ref())
    };
    let entries: Vec<AliasEntry<'_>> = aliases
        .iter()
        .map(|(name, alias)| AliasEntry {
            alias: name,
            model: &alias.model,
            listed_by: listed_by(alias.upstream),
        })
        .collect();
    let body =
        models::tags_with_aliases(&own, &entries).map_err(|m| bad_gateway(call.upstream, m))?;
    Ok(json(body))
}

/// The usable aliases in name order (the order they are listed in), and the other upstreams
/// that list their targets, each once.
fn plan(table: &RouteTable, own_index: usize) -> (Vec<(&str, &ModelAlias)>, Vec<usize>) {
    let mut aliases: Vec<(&str, &ModelAlias)> = table.native_aliases().collect();
    aliases.sort_unstable_by_key(|(name, _)| *name);
    let mut others: Vec<usize> = aliases
        .iter()
        .map(|(_, alias)| alias.upstream)
        .filter(|index| *index != own_index)
        .collect();
    others.sort_unstable();
    others.dedup();
    (aliases, others)
}

/// One upstream's `/api/tags`, read whole (under `limits.max_response`), with the client's
/// end-to-end headers and the upstream's own key. An error response becomes the error
/// pass-through would show: its status and message, the upstream's key redacted.
async fn fetch(call: &Exchange<'_>, index: usize, headers: HeaderView<'_>, path: &str) -> Fetched {
    let upstream = call.snapshot.table.upstream(index);
    let client = &call.snapshot.peer(index).backends;
    let headers = Some(headers);
    let response = send(
        call,
        upstream,
        client,
        Method::GET,
        headers,
        path,
        Bytes::new(),
    );
    let response = response.await?;
    if !response.status().is_success() {
        return Err(upstream_failure(&call.stats, upstream, response, chat::upstream_error).await);
    }
    whole(call, upstream, response.into_body()).await
}

/// Another upstream's list, when it could be had and read; a warning when not (its aliases
/// are still listed, without their target's details).
fn readable(call: &Exchange<'_>, index: usize, response: Fetched) -> Option<TagList> {
    let upstream = call.snapshot.table.upstream(index);
    let list =
        response.and_then(|tags| TagList::parse(&tags).map_err(|m| bad_gateway(upstream, m)));
    match list {
        Ok(list) => Some(list),
        Err(err) => {
            tracing::warn!(
                upstream = %upstream.name,
                "/api/tags: the model list of an alias's upstream is unavailable ({err}); its aliases are listed without details"
            );
            None
        }
    }
}
