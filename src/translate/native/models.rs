//! `/api/tags` from `/v1/models`, `/api/show` from `/v1/models/{id}`, and the `/api/version`
//! and `/api/ps` bodies, for native clients of a chat-completions upstream.
//!
//! A chat-completions model entry says only `id`, `created` and `owned_by`; native clients
//! read more (`size`, `digest`, `details`, ...), and some parse it strictly. So every field of
//! a native entry is present: `modified_at` from `created`, `size` 0 (unknown), a stable
//! `digest` of the id ([`crate::base::ids::digest`], the mock's), and `details` guessed from the
//! id's spelling (`llama3.2:3b` -> family `llama`, parameter size `3B`), empty when the
//! id says nothing.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::base::ids::digest;
use crate::translate::models::{rfc3339, unlisted};

/// One `/v1/models` entry, as lingo reads it.
struct Entry {
    id: String,
    created: u64,
}

fn entry_of(item: &Value) -> Option<Entry> {
    Some(Entry {
        id: item.get("id")?.as_str()?.to_owned(),
        created: item.get("created").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// The native `/api/tags` response: every model of the `/v1/models` response, then one entry
/// per alias (`(alias, target)`, in the order given) copied from its target's entry (an
/// unlisted target gives the empty entry native alias listings use).
pub fn tags(models: &[u8], aliases: &[(&str, &str)]) -> Result<Bytes, String> {
    let unexpected = |what: &str| format!("upstream sent an unexpected model list: {what}");
    let list: Value = serde_json::from_slice(models).map_err(|e| unexpected(&e.to_string()))?;
    let items = match list.get("data") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => return Err(unexpected("`data` is not a list")),
    };
    let entries: Vec<Entry> = items.iter().filter_map(entry_of).collect();
    let mut out: Vec<Value> = entries
        .iter()
        .filter(|e| !aliases.iter().any(|(alias, _)| *alias == e.id))
        .map(|e| Value::Object(native_entry(&e.id, e.created)))
        .collect();
    for (alias, target) in aliases {
        let mut entry = match entries.iter().find(|e| e.id == *target) {
            Some(e) => native_entry(&e.id, e.created),
            None => unlisted(),
        };
        entry.insert("name".into(), (*alias).into());
        entry.insert("model".into(), (*alias).into());
        out.push(Value::Object(entry));
    }
    Ok(Bytes::from(json!({ "models": out }).to_string()))
}

/// A native model-list entry for `id`.
fn native_entry(id: &str, created: u64) -> Map<String, Value> {
    let entry = json!({
        "name": id, "model": id, "modified_at": rfc3339(created),
        "size": 0, "digest": digest(id), "details": details(id),
    });
    match entry {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The native `/api/show` response for `name` (what the client asked for) from the upstream's
/// `/v1/models/{id}` response. The template, system prompt and Modelfile are the upstream's
/// own business: empty. `capabilities` says `completion` and `tools`, what a chat
/// completion offers; lingo cannot know more.
pub fn show(name: &str, model: &[u8]) -> Result<Bytes, String> {
    let model: Value = serde_json::from_slice(model)
        .map_err(|e| format!("upstream sent an unexpected model: {e}"))?;
    let entry = entry_of(&model).ok_or("upstream sent a model without an id")?;
    let details = details(&entry.id);
    let family = details["family"].as_str().unwrap_or("").to_owned();
    let response = json!({
        "model": name,
        "modified_at": rfc3339(entry.created),
        "license": "", "modelfile": "", "parameters": "", "template": "", "system": "",
        "details": details,
        "model_info": {"general.architecture": family, "general.basename": basename(&entry.id)},
        "capabilities": ["completion", "tools"],
    });
    Ok(Bytes::from(response.to_string()))
}

/// The native server version lingo responds to `/api/version` with: the API whose fields it
/// translates (`think`, streamed tool calls, `/api/embed` with `dimensions`, `logprobs`).
/// Native clients compare it to turn features on, so it is a native version, not lingo's.
pub const NATIVE_VERSION: &str = "0.12.0";

/// `/api/version`: `{"version": "0.12.0"}` ([`NATIVE_VERSION`]).
pub fn version() -> Bytes {
    Bytes::from(json!({ "version": NATIVE_VERSION }).to_string())
}

/// `/api/ps`: no model is known to be loaded (a chat-completions server does not say).
pub fn ps() -> Bytes {
    Bytes::from_static(b"{\"models\":[]}")
}

/// `details` guessed from the id: family, parameter size and quantisation when its spelling
/// says them, every other field present and empty.
fn details(id: &str) -> Value {
    let base = basename(id);
    let family: String = base
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_lowercase();
    let tokens: Vec<&str> = id.split(['-', ':', '/']).collect();
    let size = tokens
        .iter()
        .find(|t| is_size(t))
        .map(|t| t.to_ascii_uppercase());
    let quant = tokens
        .iter()
        .find(|t| is_quant(t))
        .map(|t| t.to_ascii_uppercase());
    json!({
        "parent_model": "", "format": "",
        "families": if family.is_empty() { Value::Null } else { json!([family]) },
        "family": family,
        "parameter_size": size.unwrap_or_default(),
        "quantization_level": quant.unwrap_or_default(),
    })
}

/// The model's own name: after the last `/`, before the tag.
fn basename(id: &str) -> &str {
    let name = id.rsplit('/').next().unwrap_or(id);
    name.split(':').next().unwrap_or(name)
}

/// `3b`, `7B`, `0.5b`, `22m`: a parameter count.
fn is_size(token: &str) -> bool {
    let Some(number) = token.strip_suffix(['b', 'B', 'm', 'M']) else {
        return false;
    };
    number.parse::<f64>().is_ok_and(|n| n > 0.0) && !number.starts_with('.')
}

/// `q4_K_M`-style heads (`q4`, `Q8`), `f16`, `fp16`, `bf16`: a quantisation.
fn is_quant(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    matches!(lower.as_str(), "f16" | "fp16" | "bf16" | "f32" | "fp8")
        || (lower.starts_with('q') && lower[1..].starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_quantisations_are_told_from_other_tokens() {
        for (token, size) in [
            ("3b", true),
            ("0.5B", true),
            ("22m", true),
            ("0b", false),
            (".5b", false),
            ("b", false),
            ("web", false),
            ("3x", false),
        ] {
            assert_eq!(is_size(token), size, "{token}");
        }
        for (token, quant) in [
            ("q4_K_M", true),
            ("Q8", true),
            ("fp16", true),
            ("bf16", true),
            ("q", false),
            ("qwen", false),
            ("instruct", false),
        ] {
            assert_eq!(is_quant(token), quant, "{token}");
        }
    }
}
