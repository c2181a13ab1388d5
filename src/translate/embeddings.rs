//! `/v1/embeddings` <-> native `/api/embed` (and the older `/api/embeddings`).
//!
//! `encoding_format: base64` (the official Python SDK's default) is the little-endian float32
//! bytes of each vector, in standard base64.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::json::Json;
use super::params::{self, err};
use super::translation::InvalidRequest;
use super::translation::{NoStream, Translation, UpstreamCall};
use crate::base::dialect::Dialect;
use crate::base::usage::Usage;

/// A translated embeddings request.
#[derive(Debug)]
pub struct EmbedRequest {
    pub model: String,
    pub inputs: Vec<String>,
    pub dimensions: Option<u64>,
    pub base64: bool,
    /// `keep_alive`, `truncate`, `options`: passed on as they are.
    pub extras: Map<String, Value>,
}

/// Reads a chat-completions embeddings request.
pub fn request(body: &[u8]) -> Result<EmbedRequest, InvalidRequest> {
    let body = params::object(body)?;
    let model = params::model(&body)?;
    let bad_input = || {
        err(
            "input",
            "input must be a non-empty string or a non-empty array of non-empty strings",
        )
    };
    let inputs = match body.get("input") {
        Some(Json::Str(s)) if !s.is_empty() => vec![s.as_ref().to_owned()],
        Some(Json::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad_input)?,
        _ => return Err(bad_input()),
    };
    let dimensions = match body.get("dimensions") {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|d| *d > 0)
                .ok_or_else(|| err("dimensions", "dimensions must be a positive integer"))?,
        ),
    };
    let base64 = match body.get("encoding_format") {
        None | Some(Json::Null) => false,
        Some(Json::Str(f)) if f.eq_ignore_ascii_case("float") => false,
        Some(Json::Str(f)) if f.eq_ignore_ascii_case("base64") => true,
        Some(_) => {
            return Err(err(
                "encoding_format",
                "encoding_format must be float or base64",
            ));
        }
    };
    let extras = ["keep_alive", "truncate", "options"]
        .iter()
        .filter_map(|k| {
            Some((
                (*k).to_owned(),
                body.get(k).filter(|v| !v.is_null())?.to_value(),
            ))
        })
        .collect();
    Ok(EmbedRequest {
        model,
        inputs,
        dimensions,
        base64,
        extras,
    })
}

impl EmbedRequest {
    /// The `/api/embed` body for `model` (the upstream's name): all inputs in one call.
    pub fn embed_body(&self, model: &str) -> Bytes {
        let mut native = self.extras.clone();
        native.insert("model".into(), model.into());
        native.insert("input".into(), json!(self.inputs));
        if let Some(d) = self.dimensions {
            native.insert("dimensions".into(), d.into());
        }
        Bytes::from(serde_json::to_vec(&native).unwrap_or_default())
    }

    /// The legacy `/api/embeddings` body for one input.
    pub fn legacy_body(&self, model: &str, input: &str) -> Bytes {
        let mut native = self.extras.clone();
        native.remove("truncate");
        native.insert("model".into(), model.into());
        native.insert("prompt".into(), input.into());
        Bytes::from(serde_json::to_vec(&native).unwrap_or_default())
    }
}

#[derive(Deserialize)]
struct Embed {
    embeddings: Vec<Vec<f32>>,
    #[serde(default)]
    prompt_eval_count: u64,
}

#[derive(Deserialize)]
struct Legacy {
    embedding: Vec<f32>,
}

/// The vectors of an `/api/embed` response and its token count.
pub fn parse_embed(body: &[u8]) -> Result<(Vec<Vec<f32>>, u64), String> {
    let embed: Embed = serde_json::from_slice(body)
        .map_err(|e| format!("upstream sent an unexpected embed response: {e}"))?;
    Ok((embed.embeddings, embed.prompt_eval_count))
}

/// The vector of a legacy `/api/embeddings` response.
pub fn parse_legacy(body: &[u8]) -> Result<Vec<f32>, String> {
    let legacy: Legacy = serde_json::from_slice(body)
        .map_err(|e| format!("upstream sent an unexpected embeddings response: {e}"))?;
    Ok(legacy.embedding)
}

#[derive(Serialize)]
#[serde(untagged)]
enum Vector<'a> {
    Float(&'a [f32]),
    Base64(String),
}

#[derive(Serialize)]
struct Item<'a> {
    object: &'static str,
    index: usize,
    embedding: Vector<'a>,
}

/// The `object: list` response (the name the client asked for in `model`).
pub fn response(vectors: &[Vec<f32>], tokens: u64, model: &str, base64: bool) -> Bytes {
    let data: Vec<Item<'_>> = vectors
        .iter()
        .enumerate()
        .map(|(index, v)| Item {
            object: "embedding",
            index,
            embedding: if base64 {
                Vector::Base64(encode_base64(v))
            } else {
                Vector::Float(v)
            },
        })
        .collect();
    let body = json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    });
    Bytes::from(body.to_string())
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 (with padding) of the vector's little-endian float32 bytes.
pub fn encode_base64(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|f| f.to_le_bytes()).collect();
    encode_bytes(&bytes)
}

/// Standard base64 (with padding) of `bytes`.
pub fn encode_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// An embeddings request as a [`Translation`]: all inputs in one `/api/embed` call, or, on an
/// upstream that only has the older endpoint, one `/api/embeddings` call per input. Never
/// streamed.
pub struct Embeddings {
    request: EmbedRequest,
    legacy: bool,
}

impl Embeddings {
    pub fn new(request: EmbedRequest) -> Self {
        Embeddings {
            request,
            legacy: false,
        }
    }

    /// The same request for an upstream that only has `/api/embeddings`.
    pub fn legacy(self) -> Self {
        Embeddings {
            legacy: true,
            ..self
        }
    }

    /// The whole response from one `/api/embed` response.
    fn embedded(&self, upstream_body: &[u8]) -> Result<(Bytes, Usage), String> {
        let (vectors, tokens) = parse_embed(upstream_body)?;
        let inputs = self.request.inputs.len();
        if vectors.len() != inputs {
            return Err(format!(
                "returned {} embeddings for {inputs} inputs",
                vectors.len()
            ));
        }
        let body = response(&vectors, tokens, &self.request.model, self.request.base64);
        Ok((body, Usage::new(tokens, 0)))
    }
}

impl Translation for Embeddings {
    type Stream = NoStream;

    fn model(&self) -> &str {
        &self.request.model
    }

    fn streams(&self) -> bool {
        false
    }

    fn calls(&mut self, model: &str) -> Vec<UpstreamCall> {
        if !self.legacy {
            let body = self.request.embed_body(model);
            return vec![UpstreamCall {
                path: "/api/embed",
                body,
            }];
        }
        let request = &self.request;
        request
            .inputs
            .iter()
            .map(|input| UpstreamCall {
                path: "/api/embeddings",
                body: request.legacy_body(model, input),
            })
            .collect()
    }

    fn stream(&self, _: usize, _: usize) -> NoStream {
        NoStream(Dialect::Chat)
    }

    fn closing(&self, _: Option<Usage>, _: usize) -> Vec<Bytes> {
        Vec::new()
    }

    fn whole(&self, responses: &[Bytes]) -> Result<(Bytes, Usage), String> {
        if !self.legacy {
            return self.embedded(responses.first().map_or(&[][..], |a| &a[..]));
        }
        let vectors = responses
            .iter()
            .map(|a| parse_legacy(a))
            .collect::<Result<Vec<_>, _>>()?;
        // The legacy endpoint reports no token counts.
        let body = response(&vectors, 0, &self.request.model, self.request.base64);
        Ok((body, Usage::default()))
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
        super::chat::upstream_error(status, body)
    }
}

/// The bytes of standard base64 text (padding optional, ASCII whitespace skipped); `None`
/// when it is not base64. Native images and base64 vectors are read with it.
pub fn decode_bytes(text: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let body = clean
        .strip_suffix(b"==")
        .or_else(|| clean.strip_suffix(b"="));
    let body = body.unwrap_or(&clean);
    if body.len() % 4 == 1 || (body.len() < clean.len() && !clean.len().is_multiple_of(4)) {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for chunk in body.chunks(4) {
        let n = chunk.iter().enumerate().try_fold(0u32, |n, (i, b)| {
            let v = ALPHABET.iter().position(|a| a == b)? as u32;
            Some(n | (v << (18 - 6 * i)))
        })?;
        out.extend(n.to_be_bytes()[1..chunk.len()].iter());
    }
    Some(out)
}

/// The float32 vector of little-endian base64 (what `encoding_format: base64` responses hold).
pub fn decode_base64(text: &str) -> Option<Vec<f32>> {
    let bytes = decode_bytes(text)?;
    bytes.len().is_multiple_of(4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_little_endian_float32() {
        // Three little-endian float32s: [0.1, -0.2, 0.3] -> 12 bytes.
        assert_eq!(encode_base64(&[0.1, -0.2, 0.3]), "zczMPc3MTL6amZk+");
        assert_eq!(encode_base64(&[1.0]), "AACAPw==");
        assert_eq!(encode_base64(&[]), "");
    }

    #[test]
    fn base64_decodes_what_it_encodes() {
        for bytes in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            b"\x89PNG\r\n\x1a\n\0\xff",
        ] {
            assert_eq!(decode_bytes(&encode_bytes(bytes)).as_deref(), Some(bytes));
        }
        assert_eq!(decode_bytes("YWJj\nZA"), Some(b"abcd".to_vec()));
        for bad in ["a", "ab!c", "YQ=", "Y===", "YWJjZA=x"] {
            assert_eq!(decode_bytes(bad), None, "{bad}");
        }
        assert_eq!(
            decode_base64("zczMPc3MTL6amZk+"),
            Some(vec![0.1, -0.2, 0.3])
        );
        assert_eq!(decode_base64("YWJ"), None);
    }

    #[test]
    fn requests_and_refusals() {
        let ok = request(br#"{"model":"e","input":["a","b"],"dimensions":3,"encoding_format":"BASE64","user":"u","keep_alive":"1m"}"#).unwrap();
        assert_eq!(
            (ok.inputs.clone(), ok.dimensions, ok.base64),
            (vec!["a".to_owned(), "b".to_owned()], Some(3), true)
        );
        let body: Value = serde_json::from_slice(&ok.embed_body("up")).unwrap();
        assert_eq!(
            body,
            json!({"model": "up", "input": ["a", "b"], "dimensions": 3, "keep_alive": "1m"})
        );
        for (body, param) in [
            (r#"{"input":"a"}"#, Some("model")),
            (r#"{"model":"e"}"#, Some("input")),
            (r#"{"model":"e","input":""}"#, Some("input")),
            (r#"{"model":"e","input":[]}"#, Some("input")),
            (r#"{"model":"e","input":[1,2]}"#, Some("input")),
            (
                r#"{"model":"e","input":"a","dimensions":0}"#,
                Some("dimensions"),
            ),
            (
                r#"{"model":"e","input":"a","encoding_format":"json"}"#,
                Some("encoding_format"),
            ),
            ("nope", None),
        ] {
            assert_eq!(request(body.as_bytes()).unwrap_err().param, param, "{body}");
        }
    }

    #[test]
    fn float_is_the_default_encoding_and_may_be_named() {
        for format in [
            r#""#,
            r#","encoding_format":null"#,
            r#","encoding_format":"Float""#,
        ] {
            let body = format!(r#"{{"model":"e","input":"a"{format}}}"#);
            assert!(!request(body.as_bytes()).unwrap().base64, "{body}");
        }
    }

    #[test]
    fn an_embeddings_translation_gets_a_whole_response() {
        // The driver never streams it: no stream, no closing frames (no `data: [DONE]`).
        let t = Embeddings::new(request(br#"{"model":"e","input":"a"}"#).unwrap());
        assert!(!t.streams());
        assert!(t.closing(None, 1).is_empty());
    }

    #[test]
    fn responses() {
        let out: Value =
            serde_json::from_slice(&response(&[vec![0.5, 1.0]], 4, "alias", false)).unwrap();
        assert_eq!(
            out,
            json!({"object": "list", "model": "alias", "usage": {"prompt_tokens": 4, "total_tokens": 4},
            "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 1.0]}]})
        );
        let b64: Value = serde_json::from_slice(&response(&[vec![1.0]], 0, "m", true)).unwrap();
        assert_eq!(b64["data"][0]["embedding"], "AACAPw==");
        assert_eq!(
            parse_embed(br#"{"embeddings":[[1,2]],"prompt_eval_count":3}"#).unwrap(),
            (vec![vec![1.0, 2.0]], 3)
        );
        assert_eq!(
            parse_legacy(br#"{"embedding":[0.25]}"#).unwrap(),
            vec![0.25]
        );
        assert!(parse_embed(b"{}").is_err());
    }
}
