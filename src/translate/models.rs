//! `/v1/models` <- native `/api/tags`, and `/v1/models/{id}` <- native `/api/show`.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Tags {
    #[serde(default)]
    models: Option<Vec<Tag>>,
}

#[derive(Deserialize)]
struct Tag {
    #[serde(default)]
    name: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    modified_at: String,
}

#[derive(Deserialize)]
struct Show {
    #[serde(default)]
    modified_at: String,
}

#[derive(Serialize)]
struct Model<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    owned_by: &'a str,
}

#[derive(Serialize)]
struct List<'a> {
    object: &'static str,
    data: Vec<Model<'a>>,
}

/// The model list: every model of `/api/tags`, then the table's aliases (`(alias, model)`;
/// an alias's `created` is its model's, or 0 when the upstream does not list it).
pub fn list(tags: &[u8], aliases: &[(&str, &str)], owned_by: &str) -> Result<Bytes, String> {
    let tags: Tags = serde_json::from_slice(tags)
        .map_err(|e| format!("upstream sent an unexpected model list: {e}"))?;
    let tags = tags.models.unwrap_or_default();
    let id = |t: &Tag| {
        if t.model.is_empty() {
            t.name.clone()
        } else {
            t.model.clone()
        }
    };
    let ids: Vec<(String, u64)> = tags
        .iter()
        .map(|t| (id(t), unix_seconds(&t.modified_at)))
        .collect();
    let created_of = |model: &str| {
        ids.iter()
            .find(|(id, _)| id == model || id.strip_suffix(":latest") == Some(model))
            .map_or(0, |(_, c)| *c)
    };
    let mut data: Vec<Model<'_>> = ids
        .iter()
        .map(|(id, created)| Model {
            id,
            object: "model",
            created: *created,
            owned_by,
        })
        .collect();
    data.extend(aliases.iter().map(|(alias, model)| Model {
        id: alias,
        object: "model",
        created: created_of(model),
        owned_by,
    }));
    serde_json::to_vec(&List {
        object: "list",
        data,
    })
    .map(Bytes::from)
    .map_err(|e| e.to_string())
}

/// One model, from its `/api/show` answer.
pub fn one(id: &str, show: &[u8], owned_by: &str) -> Result<Bytes, String> {
    let show: Show = serde_json::from_slice(show)
        .map_err(|e| format!("upstream sent an unexpected model: {e}"))?;
    let model = Model {
        id,
        object: "model",
        created: unix_seconds(&show.modified_at),
        owned_by,
    };
    serde_json::to_vec(&model)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// Seconds since 1970 of an RFC 3339 time (`2024-07-22T20:33:28.123648-07:00`); 0 when it
/// cannot be read.
pub fn unix_seconds(time: &str) -> u64 {
    parse_rfc3339(time)
        .and_then(|s| u64::try_from(s).ok())
        .unwrap_or(0)
}

fn parse_rfc3339(time: &str) -> Option<i64> {
    let num = |s: &str| s.parse::<i64>().ok();
    let (date, rest) = time.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-');
    let (y, m, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    let clock = rest.get(..8)?;
    let mut c = clock.splitn(3, ':');
    let (h, min, s) = (num(c.next()?)?, num(c.next()?)?, num(c.next()?)?);
    let zone = rest[8..].trim_start_matches(|ch: char| ch == '.' || ch.is_ascii_digit());
    let offset = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) => {
            let secs = num(&z[1..3])? * 3600 + num(&z[4..6])? * 60;
            if z.starts_with('-') { -secs } else { secs }
        }
        _ => return None,
    };
    Some(days_from_civil(y, m, day) * 86_400 + h * 3600 + min * 60 + s - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn times() {
        for (text, want) in [
            ("1970-01-01T00:00:00Z", 0),
            ("2024-07-22T20:33:28.123648Z", 1_721_680_408),
            ("2024-07-22T13:33:28.5-07:00", 1_721_680_408),
            ("2000-02-29T00:00:00+00:00", 951_782_400),
            ("not a time", 0),
            ("", 0),
        ] {
            assert_eq!(unix_seconds(text), want, "{text}");
        }
    }

    #[test]
    fn lists_models_and_aliases() {
        let tags = br#"{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","modified_at":"2024-07-22T20:33:28Z"},{"name":"hf.co/x/y:Q4","model":"","modified_at":"bad"}]}"#;
        let out: Value = serde_json::from_slice(
            &list(
                tags,
                &[("gpt-4o-mini", "llama3.2"), ("other", "nope")],
                "acme",
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"object": "list", "data": [
                {"id": "llama3.2:latest", "object": "model", "created": 1_721_680_408, "owned_by": "acme"},
                {"id": "hf.co/x/y:Q4", "object": "model", "created": 0, "owned_by": "acme"},
                {"id": "gpt-4o-mini", "object": "model", "created": 1_721_680_408, "owned_by": "acme"},
                {"id": "other", "object": "model", "created": 0, "owned_by": "acme"},
            ]})
        );
        let empty: Value =
            serde_json::from_slice(&list(br#"{"models":null}"#, &[], "lingo").unwrap()).unwrap();
        assert_eq!(empty["data"], json!([]), "never null");
        let one: Value = serde_json::from_slice(
            &one("a/b", br#"{"modified_at":"1970-01-01T00:01:00Z"}"#, "lingo").unwrap(),
        )
        .unwrap();
        assert_eq!(
            one,
            json!({"id": "a/b", "object": "model", "created": 60, "owned_by": "lingo"})
        );
    }
}
