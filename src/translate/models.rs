//! `/v1/models` <- native `/api/tags`, `/v1/models/{id}` <- native `/api/show`, and the native
//! `/api/tags` with the table's aliases in it.

use std::fmt::Display;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// What lingo reads of a native model-list entry.
#[derive(Deserialize)]
struct Tag {
    #[serde(default)]
    name: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    modified_at: String,
}

/// A native `/api/tags` response, parsed once. Entries are kept whole, so that what lingo does
/// not read (`capabilities`, `remote_host`, fields a newer server adds) reaches native
/// clients as the upstream wrote it.
pub struct TagList {
    /// The response's top-level fields but `models`.
    rest: Map<String, Value>,
    entries: Vec<(Tag, Map<String, Value>)>,
}

/// An alias as a native model list shows it.
pub struct AliasEntry<'a> {
    pub alias: &'a str,
    /// The model name the alias's upstream knows.
    pub model: &'a str,
    /// The model list of the alias's upstream; `None` when it could not be had.
    pub listed_by: Option<&'a TagList>,
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

// === impl TagList ===

impl TagList {
    /// Reads an `/api/tags` response; `"models"` missing or `null` is an empty list.
    pub fn parse(tags: &[u8]) -> Result<TagList, String> {
        let unexpected = |e: &dyn Display| format!("upstream sent an unexpected model list: {e}");
        let mut rest: Map<String, Value> =
            serde_json::from_slice(tags).map_err(|e| unexpected(&e))?;
        let items = match rest.remove("models") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(unexpected(&"`models` is not a list")),
        };
        let entries = items
            .into_iter()
            .map(|item| {
                let tag = Tag::deserialize(&item).map_err(|e| unexpected(&e))?;
                match item {
                    Value::Object(entry) => Ok((tag, entry)),
                    _ => Err(unexpected(&"an entry is not an object")),
                }
            })
            .collect::<Result<_, String>>()?;
        Ok(TagList { rest, entries })
    }

    /// The entry of `model`: the one of that id, or `model:latest` (the same model to the
    /// server when `model` has no tag).
    fn entry(&self, model: &str) -> Option<&(Tag, Map<String, Value>)> {
        self.entries.iter().find(|(tag, _)| {
            let id = tag.id();
            id == model || id.strip_suffix(":latest") == Some(model)
        })
    }
}

// === impl Tag ===

impl Tag {
    /// The name requests use: `model`, or `name` when `model` is empty.
    fn id(&self) -> &str {
        if self.model.is_empty() {
            &self.name
        } else {
            &self.model
        }
    }
}

/// The model list: every model of `/api/tags`, then the table's aliases (`(alias, model)`;
/// an alias's `created` is its model's, or 0 when the upstream does not list it).
pub fn list(tags: &[u8], aliases: &[(&str, &str)], owned_by: &str) -> Result<Bytes, String> {
    let tags = TagList::parse(tags)?;
    let created_of = |model: &str| {
        tags.entry(model)
            .map_or(0, |(tag, _)| unix_seconds(&tag.modified_at))
    };
    let mut data: Vec<Model<'_>> = tags
        .entries
        .iter()
        .map(|(tag, _)| Model {
            id: tag.id(),
            object: "model",
            created: unix_seconds(&tag.modified_at),
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

/// The native model list a native client sees: the upstream's entries, then one entry per
/// alias (in the order given), so that an Ollama-style model picker offers the names lingo
/// resolves. An alias's entry is its target's (`modified_at`, `size`, `digest`, `details` and
/// the rest) under the alias's name; when the target's upstream does not list it, or could not
/// be asked, it is [`unlisted`] rather than missing. An upstream entry of the same name as an
/// alias is left out: a request for that name goes to the alias's target.
pub fn tags_with_aliases(own: &TagList, aliases: &[AliasEntry<'_>]) -> Result<Bytes, String> {
    let shadowed = |tag: &Tag| {
        aliases
            .iter()
            .any(|a| a.alias == tag.name || a.alias == tag.model)
    };
    let mut models: Vec<Value> = own
        .entries
        .iter()
        .filter(|(tag, _)| !shadowed(tag))
        .map(|(_, entry)| Value::Object(entry.clone()))
        .collect();
    models.extend(
        aliases
            .iter()
            .map(|alias| Value::Object(alias_entry(alias))),
    );
    let mut response = own.rest.clone();
    response.insert("models".into(), Value::Array(models));
    serde_json::to_vec(&response)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// One alias's entry: its target's, renamed.
fn alias_entry(alias: &AliasEntry<'_>) -> Map<String, Value> {
    let mut entry = alias
        .listed_by
        .and_then(|list| list.entry(alias.model))
        .map_or_else(unlisted, |(_, entry)| entry.clone());
    entry.insert("name".into(), alias.alias.into());
    entry.insert("model".into(), alias.alias.into());
    entry
}

/// The entry of a model no list describes: every field a native client reads, present and
/// empty (the epoch, as `/v1/models` says `created: 0` of it), so that clients which parse
/// the entry strictly still show the alias.
pub fn unlisted() -> Map<String, Value> {
    let details = json!({
        "parent_model": "", "format": "", "family": "", "families": null,
        "parameter_size": "", "quantization_level": "",
    });
    Map::from_iter([
        (
            "modified_at".to_owned(),
            Value::from("1970-01-01T00:00:00Z"),
        ),
        ("size".to_owned(), Value::from(0)),
        ("digest".to_owned(), Value::from("")),
        ("details".to_owned(), details),
    ])
}

/// One model, from its `/api/show` response.
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

/// The RFC 3339 time (UTC, whole seconds) of Unix seconds: `modified_at` of a model whose
/// upstream tells only its `created`.
pub fn rfc3339(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX / 2));
    let (h, min, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}Z")
}

/// The RFC 3339 time (UTC, nanoseconds) of a time since the Unix epoch, as native servers
/// write `created_at` (`2026-01-01T00:00:00.123456789Z`): the shell passes its clock's
/// reading (`SystemTime::now().duration_since(UNIX_EPOCH)`), the translators read none.
pub fn rfc3339_nanos(since_epoch: std::time::Duration) -> String {
    let whole = rfc3339(since_epoch.as_secs());
    let seconds = whole.strip_suffix('Z').unwrap_or(&whole);
    format!("{seconds}.{:09}Z", since_epoch.subsec_nanos())
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm,
/// the inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
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
            ("2024-07-22T02:03:28+05:30", 1_721_594_008),
            ("2024-07-21T20:03:28-00:30", 1_721_594_008),
            ("2024-07-22T13:33:28+0700", 0),
            ("2024-07-22T13:33:28+07:00:00", 0),
            ("not a time", 0),
            ("", 0),
        ] {
            assert_eq!(unix_seconds(text), want, "{text}");
        }
        for (unix, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_721_680_408, "2024-07-22T20:33:28Z"),
            (1_767_225_599, "2025-12-31T23:59:59Z"),
        ] {
            assert_eq!(rfc3339(unix), text);
            assert_eq!(unix_seconds(text), unix);
        }
        // Every day from 1970 to 2100 (leap days and century years included) and back.
        for day in 0..47_482 {
            let unix = day * 86_400 + 45_296;
            assert_eq!(unix_seconds(&rfc3339(unix)), unix, "{}", rfc3339(unix));
        }
        let at = std::time::Duration::new(1_721_680_408, 123_648_000);
        assert_eq!(rfc3339_nanos(at), "2024-07-22T20:33:28.123648000Z");
        assert_eq!(unix_seconds(&rfc3339_nanos(at)), 1_721_680_408);
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

    /// Where a test alias's target is looked up.
    enum Listed {
        Own,
        Other(String),
        Unavailable,
    }

    const LLAMA: &str = r#"{"name":"llama3.2:latest","model":"llama3.2:latest","modified_at":"2024-07-22T20:33:28Z","size":2019393189,"digest":"a80c","details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"3.2B","quantization_level":"Q4_K_M"},"capabilities":["completion"]}"#;

    fn llama_as(alias: &str) -> Value {
        let mut entry: Value = serde_json::from_str(LLAMA).unwrap();
        entry["name"] = alias.into();
        entry["model"] = alias.into();
        entry
    }

    fn unlisted_as(alias: &str) -> Value {
        json!({"name": alias, "model": alias, "modified_at": "1970-01-01T00:00:00Z", "size": 0,
               "digest": "", "details": {"parent_model": "", "format": "", "family": "",
               "families": null, "parameter_size": "", "quantization_level": ""}})
    }

    /// `(case, the route upstream's tags, aliases, what a native client gets)`.
    type Case = (
        &'static str,
        String,
        Vec<(&'static str, &'static str, Listed)>,
        Value,
    );

    /// Cases with aliases on the route's own upstream.
    fn tag_cases() -> Vec<Case> {
        let llama: Value = serde_json::from_str(LLAMA).unwrap();
        let own_llama = format!(r#"{{"models":[{LLAMA}]}}"#);
        vec![
            (
                "no aliases: the list as it came",
                own_llama.clone(),
                vec![],
                json!({"models": [llama.clone()]}),
            ),
            (
                "a target on the same upstream, every field copied",
                own_llama.clone(),
                vec![("gpt-4o-mini", "llama3.2:latest", Listed::Own)],
                json!({"models": [llama.clone(), llama_as("gpt-4o-mini")]}),
            ),
            (
                "a target named without its tag is its :latest",
                own_llama.clone(),
                vec![("gpt-4o-mini", "llama3.2", Listed::Own)],
                json!({"models": [llama.clone(), llama_as("gpt-4o-mini")]}),
            ),
            (
                "a target the upstream does not list: empty details, not dropped",
                own_llama.clone(),
                vec![("big", "llama3.1:405b", Listed::Own)],
                json!({"models": [llama.clone(), unlisted_as("big")]}),
            ),
        ]
    }

    /// Cases with aliases on other upstreams, and odd lists.
    fn more_tag_cases() -> Vec<Case> {
        let own_llama = format!(r#"{{"models":[{LLAMA}]}}"#);
        vec![
            (
                "a target on another upstream, from that upstream's list",
                r#"{"models":[]}"#.into(),
                vec![(
                    "gpt-4o-mini",
                    "llama3.2:latest",
                    Listed::Other(own_llama.clone()),
                )],
                json!({"models": [llama_as("gpt-4o-mini")]}),
            ),
            (
                "another upstream that could not be asked",
                r#"{"models":[]}"#.into(),
                vec![("gpt-4o-mini", "llama3.2:latest", Listed::Unavailable)],
                json!({"models": [unlisted_as("gpt-4o-mini")]}),
            ),
            (
                "an alias hides the upstream's model of its name",
                own_llama.clone(),
                vec![(
                    "llama3.2:latest",
                    "llama3.2:latest",
                    Listed::Other(r#"{"models":null}"#.into()),
                )],
                json!({"models": [unlisted_as("llama3.2:latest")]}),
            ),
            (
                "an alias hides the upstream's model whose `model` is its name",
                r#"{"models":[{"name":"short","model":"llama3.2:latest"}]}"#.into(),
                vec![(
                    "llama3.2:latest",
                    "llama3.2:latest",
                    Listed::Other(r#"{"models":null}"#.into()),
                )],
                json!({"models": [unlisted_as("llama3.2:latest")]}),
            ),
            (
                "models null, other fields kept, aliases in the order given",
                r#"{"models":null,"next":"x"}"#.into(),
                vec![("b", "m", Listed::Own), ("a", "m", Listed::Own)],
                json!({"next": "x", "models": [unlisted_as("b"), unlisted_as("a")]}),
            ),
            (
                "no models field",
                "{}".into(),
                vec![("a", "m", Listed::Own)],
                json!({"models": [unlisted_as("a")]}),
            ),
        ]
    }

    #[test]
    fn native_tags_gain_the_aliases() {
        for (name, own, aliases, want) in tag_cases().into_iter().chain(more_tag_cases()) {
            let own = TagList::parse(own.as_bytes()).unwrap();
            let others: Vec<Option<TagList>> = aliases
                .iter()
                .map(|(_, _, listed)| match listed {
                    Listed::Other(tags) => Some(TagList::parse(tags.as_bytes()).unwrap()),
                    _ => None,
                })
                .collect();
            let entries: Vec<AliasEntry<'_>> = aliases
                .iter()
                .zip(&others)
                .map(|((alias, model, listed), other)| AliasEntry {
                    alias,
                    model,
                    listed_by: match listed {
                        Listed::Own => Some(&own),
                        Listed::Other(_) => other.as_ref(),
                        Listed::Unavailable => None,
                    },
                })
                .collect();
            let got: Value =
                serde_json::from_slice(&tags_with_aliases(&own, &entries).unwrap()).unwrap();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn unreadable_native_tags() {
        for (tags, why) in [
            ("not json", "expected ident"),
            ("[]", "invalid type: sequence"),
            (r#"{"models":5}"#, "`models` is not a list"),
            (r#"{"models":[5]}"#, "invalid type: integer"),
            (r#"{"models":[{"name":5}]}"#, "invalid type: integer"),
        ] {
            let err = TagList::parse(tags.as_bytes()).err().unwrap_or_default();
            assert!(
                err.starts_with("upstream sent an unexpected model list: ") && err.contains(why),
                "{tags}: {err}"
            );
        }
    }
}
