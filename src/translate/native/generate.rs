//! `/api/generate` -> a chat completion (`system` and the prompt as one user turn, with its
//! `images`), or `/v1/completions` when the client asks for the prompt as it is (`raw: true`)
//! or for fill-in-the-middle (`suffix`), which only a text completion can do. The response
//! comes back through `super::stream` or `super::response` (either path's responses are read). The final
//! line has no `context` (there is none to give).
//!
//! `context` (the deprecated token array of an earlier response) is a 400 naming it when it is
//! not empty: no chat-completions upstream takes tokens back, and silently dropping it would
//! lose the conversation the client thinks it continues. lingo's responses carry no `context`,
//! so a client that sends back what it got sends none. `template` is refused the same way
//! (the upstream applies its own). With `raw` or `suffix`, `system`, `images` and `format`
//! are refused (a text completion has no place for them) and `think` is ignored. Beware: a
//! text completion without `max_tokens` stops at 16 tokens on the official API and vLLM (the
//! native default is no limit); lingo cannot know the model's context to send a better one,
//! so a client that wants more sets `options.num_predict`.

use serde_json::{Map, Value, json};

use super::params::{self, Extras};
use super::{CHAT_PATH, COMPLETIONS_PATH, NativeError, Translated, messages};

/// Translates an `/api/generate` body.
pub fn request(body: &[u8], extras: Extras) -> Result<Translated, NativeError> {
    let (body, model) = params::object(body)?;
    let text = |key: &str| match body.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(NativeError::bad(format!("{key} must be a string"))),
    };
    let (prompt, suffix, system) = (text("prompt")?, text("suffix")?, text("system")?);
    if body
        .get("context")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        return Err(NativeError::bad(
            "context is not supported: this route's upstream speaks chat-completions, which takes no token context; send the conversation to /api/chat instead",
        ));
    }
    if !text("template")?.is_empty() {
        return Err(NativeError::bad(
            "template is not supported: this route's upstream applies its own prompt template",
        ));
    }
    let images = body.get("images").filter(|i| !i.is_null());
    let has_images = images
        .and_then(Value::as_array)
        .is_some_and(|i| !i.is_empty());
    let raw = body.get("raw").and_then(Value::as_bool).unwrap_or(false);
    let stream = params::stream(&body)?;
    let mut out = Map::new();
    out.insert("model".into(), model.clone().into());
    let path = if raw || !suffix.is_empty() {
        completion(&body, &mut out, &prompt, &suffix, &system, has_images)?;
        COMPLETIONS_PATH
    } else {
        chat(&body, &mut out, &prompt, &system, images)?;
        CHAT_PATH
    };
    params::set_stream(&mut out, stream);
    let dropped = params::options(&body, &mut out, extras)?;
    Ok(Translated {
        path,
        model,
        body: out,
        stream,
        dropped,
        load_only: prompt.is_empty() && !has_images,
    })
}

/// The chat fields: `system` and the prompt (with its `images`) as the turns, then what
/// `/api/chat` also sends.
fn chat(
    body: &Map<String, Value>,
    out: &mut Map<String, Value>,
    prompt: &str,
    system: &str,
    images: Option<&Value>,
) -> Result<(), NativeError> {
    let mut turns = Vec::new();
    if !system.is_empty() {
        turns.push(json!({"role": "system", "content": system}));
    }
    let mut user = json!({"role": "user", "content": prompt});
    if let Some(images) = images {
        user["images"] = images.clone();
    }
    turns.push(user);
    // Made from strings only: no tool calls, so no ids are needed.
    let mut no_ids = String::new;
    out.insert(
        "messages".into(),
        messages::translate(&turns, &mut no_ids)?.into(),
    );
    super::chat::common(body, out)
}

/// The `/v1/completions` fields: `prompt` and `suffix`; what it cannot carry is refused.
fn completion(
    body: &Map<String, Value>,
    out: &mut Map<String, Value>,
    prompt: &str,
    suffix: &str,
    system: &str,
    has_images: bool,
) -> Result<(), NativeError> {
    let refuse = |field: &str| {
        Err(NativeError::bad(format!(
            "{field} is not supported with raw or suffix: they are sent as a text completion"
        )))
    };
    if !system.is_empty() {
        return refuse("system");
    }
    if has_images {
        return refuse("images");
    }
    if params::format(body)?.is_some() {
        return refuse("format");
    }
    out.insert("prompt".into(), prompt.into());
    if !suffix.is_empty() {
        out.insert("suffix".into(), suffix.into());
    }
    Ok(())
}
