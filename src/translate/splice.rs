//! Finding and replacing top-level values of a JSON object without re-serialising it.
//!
//! A proxy that changes one value of a body (a model alias, an API link) must leave the rest
//! exactly as the sender wrote it: field order, spacing, number spellings (`1e3`, integers
//! past 2^53), escapes and fields lingo does not know. So the value's bytes are located with a
//! borrowing parse (no tree is built) and the new value is spliced in around them.
//!
//! [`may_name`] is a search before that parse, because every native pass-through asks
//! whether its body names an alias and most do not: the search returns at memory speed,
//! where the parse reads every byte (docs/benchmarks.md has the figure). It reads no serde
//! struct (it looks for the keys [`find`] is asked for), so it has no fields to keep in step.

use std::ops::Range;

use bytes::{Bytes, BytesMut};
use memchr::memmem::Finder;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Where a top-level field's value stands in the body, and its raw JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<'a> {
    /// Which of the names asked for.
    pub name: usize,
    /// The byte range of the raw value (quotes included for a string).
    pub range: Range<usize>,
    pub raw: &'a str,
}

impl Found<'_> {
    /// The value as a string, if it is one (escapes decoded).
    pub fn string(&self) -> Option<String> {
        serde_json::from_str(self.raw).ok()
    }
}

/// The top-level fields of `body` that are named in `names`, in body order. `None` when
/// `body` is not one JSON object, or names one of them twice (which one counts would be a
/// guess; the caller leaves such a body alone).
pub fn find<'a>(body: &'a [u8], names: &[&str]) -> Option<Vec<Found<'a>>> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let raws = de.deserialize_map(Fields { names }).ok()?;
    de.end().ok()?;
    let base = body.as_ptr() as usize;
    Some(
        raws.into_iter()
            .map(|(name, raw)| {
                let start = raw.get().as_ptr() as usize - base;
                Found {
                    name,
                    range: start..start + raw.get().len(),
                    raw: raw.get(),
                }
            })
            .collect(),
    )
}

/// The quoted keys that [`may_name`] scans a body for, with their searchers built once: a
/// memmem searcher costs more to build (its SIMD set-up) than to run over a short body.
pub struct KeyScan {
    escape: Finder<'static>,
    keys: Vec<Finder<'static>>,
}

impl KeyScan {
    /// `keys` are given quoted: `br#""model""#`.
    pub fn new(keys: &[&'static [u8]]) -> KeyScan {
        KeyScan {
            escape: Finder::new(br"\u"),
            keys: keys.iter().map(|&key| Finder::new(key)).collect(),
        }
    }
}

/// A table's few aliases as the string literals a body writes them in when it uses no
/// escape (`"gpt-4o-mini"`), their searchers built once (with the table). One search per
/// alias is cheaper than [`KeyScan`]'s (two keys, each hit's value read and looked up) while
/// the aliases are few.
///
/// An alias JSON must escape (one with a quote, a backslash or a control character) has a
/// backslash in its literal, so no body without one holds it; and no such body can name it
/// either (a quote there ends the string, a control character is not JSON).
#[derive(Debug)]
pub struct LiteralScan(Vec<Finder<'static>>);

impl LiteralScan {
    /// The most aliases searched for one by one; a table with more uses the key scan alone.
    pub const MAX: usize = 4;

    /// `None` for more than [`LiteralScan::MAX`] aliases.
    pub fn new<'a>(aliases: impl ExactSizeIterator<Item = &'a str>) -> Option<LiteralScan> {
        (aliases.len() <= Self::MAX).then(|| {
            LiteralScan(
                aliases
                    .map(|alias| Finder::new(&string_literal(alias)).into_owned())
                    .collect(),
            )
        })
    }
}

/// Whether one of the top-level keys of `body` that `scan` names may have a string value that
/// `wanted` accepts: `false` only when surely none has, so that a body naming no alias skips
/// the parse [`find`] does (a scan runs at memory speed; the parse reads every byte of a long
/// chat body).
///
/// A body with no backslash writes every string exactly as it reads, so when `literals`
/// are given (they must be those of every name `wanted` accepts: the table's aliases), such
/// a body may name an alias only if it holds one's literal somewhere. Else
/// each `"key"` followed by `:` and a string is looked at, wherever it stands (one nested or
/// repeated only costs the parse); a key can be spelled differently only with `\u` escapes,
/// so a body with any of those is always parsed.
pub fn may_name(
    body: &[u8],
    scan: &KeyScan,
    literals: Option<&LiteralScan>,
    wanted: impl Fn(&str) -> bool,
) -> bool {
    if let Some(LiteralScan(literals)) = literals
        && memchr::memchr(b'\\', body).is_none()
    {
        return literals.iter().any(|literal| literal.find(body).is_some());
    }
    if scan.escape.find(body).is_some() {
        return true;
    }
    scan.keys.iter().any(|key| {
        key.find_iter(body).any(|at| {
            let rest = after_colon(&body[at + key.needle().len()..]);
            match rest.and_then(string_at) {
                Some(Ok(value)) => wanted(&value),
                Some(Err(())) => true, // not a string JSON reads: let the parse decide
                None => false,         // not a key with a string value
            }
        })
    })
}

/// What follows `: ` after a key, if a colon does.
fn after_colon(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest.trim_ascii_start().strip_prefix(b":")?;
    Some(rest.trim_ascii_start())
}

/// The string literal `rest` starts with, decoded; `None` when it starts with something
/// else, `Err` when the literal does not end or does not decode.
fn string_at(rest: &[u8]) -> Option<Result<std::borrow::Cow<'_, str>, ()>> {
    if rest.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    let mut escaped = false;
    while let Some(&b) = rest.get(i) {
        match b {
            b'\\' => {
                escaped = true;
                i += 2;
            }
            b'"' => {
                let literal = &rest[..=i];
                return Some(if escaped {
                    serde_json::from_slice::<String>(literal)
                        .map(Into::into)
                        .map_err(drop)
                } else {
                    std::str::from_utf8(&literal[1..i])
                        .map(Into::into)
                        .map_err(drop)
                });
            }
            _ => i += 1,
        }
    }
    Some(Err(()))
}

/// `body` with each range replaced by its new text, as pieces that share `body`'s memory.
/// Ranges must not overlap; they may come in any order.
pub fn pieces(body: &Bytes, mut edits: Vec<(Range<usize>, Bytes)>) -> Vec<Bytes> {
    edits.sort_by_key(|(range, _)| range.start);
    let mut out = Vec::with_capacity(edits.len() * 2 + 1);
    let mut at = 0;
    for (range, replacement) in edits {
        out.push(body.slice(at..range.start));
        out.push(replacement);
        at = range.end;
    }
    out.push(body.slice(at..));
    out
}

/// `body` with one range replaced by `replacement`, as one buffer.
pub fn replaced(body: &[u8], range: Range<usize>, replacement: &[u8]) -> BytesMut {
    let mut out = BytesMut::with_capacity(body.len() - range.len() + replacement.len() + 1);
    out.extend_from_slice(&body[..range.start]);
    out.extend_from_slice(replacement);
    out.extend_from_slice(&body[range.end..]);
    out
}

/// A JSON string literal for `value`.
pub fn string_literal(value: &str) -> Bytes {
    let mut out = Vec::with_capacity(value.len() + 2);
    // Writing a string into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut out, value);
    Bytes::from(out)
}

/// Visits one object, keeping the raw values of the named keys.
struct Fields<'n> {
    names: &'n [&'n str],
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = Vec<(usize, &'de RawValue)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found: Vec<(usize, &'de RawValue)> = Vec::new();
        while let Some(key) = map.next_key_seed(KeyIndex(self.names))? {
            match key {
                Some(name) if found.iter().any(|(n, _)| *n == name) => {
                    return Err(serde::de::Error::custom("duplicate field"));
                }
                Some(name) => found.push((name, map.next_value()?)),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// A key's position in the names asked for, compared without allocating.
struct KeyIndex<'n>(&'n [&'n str]);

impl<'de> DeserializeSeed<'de> for KeyIndex<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIndex<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(body: &str, names: &[&str]) -> Option<Vec<(usize, String)>> {
        let found = find(body.as_bytes(), names)?;
        Some(
            found
                .iter()
                .map(|f| (f.name, body[f.range.clone()].to_owned()))
                .collect(),
        )
    }

    /// (body, names asked for, the (name, raw value) pairs expected).
    type Case<'a> = (&'a str, &'a [&'a str], Option<Vec<(usize, &'a str)>>);

    #[test]
    fn finds_top_level_values_as_written() {
        let cases: &[Case<'_>] = &[
            (r#"{"model":"a"}"#, &["model"], Some(vec![(0, r#""a""#)])),
            (
                r#"{ "model" : "a" , "n": 1e3 }"#,
                &["model"],
                Some(vec![(0, r#""a""#)]),
            ),
            (
                r#"{"name":"x","model":"y"}"#,
                &["model", "name"],
                Some(vec![(1, r#""x""#), (0, r#""y""#)]),
            ),
            (
                r#"{"opts":{"model":"nested"},"model":"top"}"#,
                &["model"],
                Some(vec![(0, r#""top""#)]),
            ),
            (
                r#"{"mo\u0064el":"esc"}"#,
                &["model"],
                Some(vec![(0, r#""esc""#)]),
            ),
            (r#"{"model":null}"#, &["model"], Some(vec![(0, "null")])),
            (r#"{"other":1}"#, &["model"], Some(vec![])),
            (r#"{"model":"a","model":"b"}"#, &["model"], None),
            (r#"[{"model":"a"}]"#, &["model"], None),
            (r#"{"model":"a"} trailing"#, &["model"], None),
            ("not json", &["model"], None),
            ("", &["model"], None),
        ];
        for (body, names, want) in cases {
            let want = want
                .as_ref()
                .map(|v| v.iter().map(|(n, s)| (*n, (*s).to_owned())).collect());
            assert_eq!(strings(body, names), want, "{body}");
        }
    }

    /// The aliases the quick-check tests look for, and the two ways of looking.
    const ALIASES: [&str; 2] = ["gpt-4o-mini", "openai/o1"];

    fn keys() -> KeyScan {
        KeyScan::new(&[br#""model""#, br#""name""#])
    }

    fn literals() -> Option<LiteralScan> {
        LiteralScan::new(ALIASES.into_iter())
    }

    /// (body, whether it may name the alias `gpt-4o-mini` or `openai/o1` by the key scan,
    /// and by the aliases' literals). Whatever the quick response, it is never `false` where
    /// the parse finds a top-level alias.
    #[test]
    fn may_name_is_false_only_where_the_parse_finds_no_alias() {
        let wanted = |m: &str| ALIASES.contains(&m);
        let (keys, literals) = (&keys(), literals());
        let cases: &[(&str, bool, bool)] = &[
            (r#"{"model":"gpt-4o-mini","messages":[]}"#, true, true),
            (r#"{"model":"llama3.2","messages":[]}"#, false, false),
            ("{ \"model\" :\n\t\"gpt-4o-mini\" }", true, true),
            (r#"{"name":"openai/o1"}"#, true, true),
            (r#"{"model":"openai\/o1"}"#, true, true),
            (r#"{"model":"gpt-4o-mini\u0000"}"#, true, true),
            (r#"{"mo\u0064el":"gpt-4o-mini"}"#, true, true),
            (
                r#"{"model":"llama3.2","messages":[{"content":"caf\u00e9"}]}"#,
                true,
                true,
            ),
            (
                r#"{"model":"llama3.2","messages":[{"content":"say \"model\": \"gpt-4o-mini\""}]}"#,
                false,
                false,
            ),
            (
                r#"{"model":"llama3.2","messages":[{"content":"line\nbreak"}]}"#,
                false,
                false,
            ),
            (
                r#"{"opts":{"model":"gpt-4o-mini"},"model":"llama3.2"}"#,
                true,
                true,
            ),
            // The literal anywhere, not only as a model: the parse decides.
            (
                r#"{"model":"llama3.2","messages":[{"content":"gpt-4o-mini"}]}"#,
                false,
                true,
            ),
            (r#"{"model":null}"#, false, false),
            (r#"{"model":"gpt-4o-mini"#, true, false),
            (r#"{"model": "llama3.2", "stream": true}"#, false, false),
            (r#"{"messages":[{"role":"model"}]}"#, false, false),
            ("", false, false),
        ];
        for (body, by_keys, by_literals) in cases {
            let parsed = find(body.as_bytes(), &["model", "name"])
                .is_some_and(|found| found.iter().filter_map(Found::string).any(|m| wanted(&m)));
            for (literals, want) in [(None, by_keys), (literals.as_ref(), by_literals)] {
                let quick = may_name(body.as_bytes(), keys, literals, wanted);
                assert_eq!(quick, *want, "{body} (literals: {})", literals.is_some());
                assert!(quick || !parsed, "the parse finds an alias in {body}");
            }
        }
    }

    #[test]
    fn literals_are_searched_for_a_few_aliases_only() {
        let few = ["a"; LiteralScan::MAX];
        assert!(LiteralScan::new(few.into_iter()).is_some());
        let many = ["a"; LiteralScan::MAX + 1];
        assert!(LiteralScan::new(many.into_iter()).is_none());
    }

    #[test]
    fn string_values_are_decoded() {
        let found = find(br#"{"model":"caf\u00e9:1b"}"#, &["model"]).unwrap();
        assert_eq!(found[0].string().as_deref(), Some("café:1b"));
        let found = find(br#"{"model":3}"#, &["model"]).unwrap();
        assert_eq!(found[0].string(), None);
    }

    #[test]
    fn splicing_keeps_everything_else_byte_for_byte() {
        let body = Bytes::from_static(br#"{"n": 12345678901234567890, "model" : "a", "x":1e3}"#);
        let found = find(&body, &["model"]).unwrap();
        let edit = (found[0].range.clone(), string_literal("longer-name"));
        let joined: Vec<u8> = pieces(&body, vec![edit]).concat();
        assert_eq!(
            joined,
            br#"{"n": 12345678901234567890, "model" : "longer-name", "x":1e3}"#
        );
        let one = replaced(&body, found[0].range.clone(), b"\"b\"");
        assert_eq!(
            &one[..],
            br#"{"n": 12345678901234567890, "model" : "b", "x":1e3}"#
        );
    }

    mod soundness {
        use super::*;
        use proptest::prelude::*;

        /// Pieces a body is made of: keys spelled plainly or escaped, aliases spelled plainly
        /// or escaped, other values, nesting, and JSON's four kinds of whitespace.
        fn body() -> impl Strategy<Value = String> {
            let key = prop::sample::select(vec![
                r#""model""#,
                r#""name""#,
                r#""mo\u0064el""#,
                r#""content""#,
                r#""opts""#,
            ]);
            let value = prop::sample::select(vec![
                r#""gpt-4o-mini""#,
                r#""gpt\u002d4o-mini""#,
                r#""openai\/o1""#,
                r#""llama3.2""#,
                r#""say \"model\": \"gpt-4o-mini\"""#,
                "null",
                "1e3",
                r#"{"model":"gpt-4o-mini"}"#,
                r#"["model","gpt-4o-mini"]"#,
            ]);
            let space = prop::sample::select(vec!["", " ", "\n", "\t", "\r\n "]);
            prop::collection::vec((space.clone(), key, space.clone(), value), 0..5).prop_map(
                |fields| {
                    let fields: Vec<String> = fields
                        .into_iter()
                        .map(|(a, k, b, v)| format!("{a}{k}{b}:{a}{v}{b}"))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                },
            )
        }

        /// Names from characters JSON escapes, may escape, or writes as they are.
        fn alias() -> impl Strategy<Value = String> {
            let char = prop::sample::select(vec![
                'a', '-', '/', '"', '\\', '\n', '\u{1f}', '\u{7f}', '\u{9f}', 'é', '\u{2028}',
                '\u{feff}', '😀', ' ',
            ]);
            prop::collection::vec(char, 0..6).prop_map(|chars| chars.into_iter().collect())
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

            /// Aliases JSON must escape, or that it may write either way, written every way.
            #[test]
            fn awkward_aliases_are_never_missed(
                aliases in prop::collection::vec(alias(), 1..=LiteralScan::MAX),
                spelling in 0..4_usize,
                other in r#"[a-z \\"]{0,6}"#,
            ) {
                let named = &aliases[0];
                let value = match spelling {
                    0 => String::from_utf8(string_literal(named).to_vec()).unwrap(),
                    1 => serde_json::to_string(named).unwrap(),
                    2 => serde_json::to_string(named).unwrap().replace('/', r"\/"),
                    _ => {
                        let units = named.encode_utf16().map(|u| format!("\\u{u:04x}"));
                        format!("\"{}\"", units.collect::<String>())
                    }
                };
                let body = format!(r#"{{"x":{},"model":{value}}}"#, serde_json::to_string(&other).unwrap());
                let wanted = |m: &str| aliases.iter().any(|a| a == m);
                let literals = LiteralScan::new(aliases.iter().map(String::as_str));
                let parsed = find(body.as_bytes(), &["model", "name"]).is_some_and(|found| {
                    found.iter().filter_map(Found::string).any(|m| wanted(&m))
                });
                prop_assert!(parsed, "{}", body);
                prop_assert!(may_name(body.as_bytes(), &keys(), literals.as_ref(), wanted), "{}", body);
            }

            #[test]
            fn may_name_never_misses_an_alias_the_parse_finds(body in body()) {
                let wanted = |m: &str| ALIASES.contains(&m);
                let (keys, literals) = (&keys(), literals());
                let parsed = find(body.as_bytes(), &["model", "name"]).is_some_and(|found| {
                    found.iter().filter_map(Found::string).any(|m| wanted(&m))
                });
                for literals in [None, literals.as_ref()] {
                    let quick = may_name(body.as_bytes(), keys, literals, wanted);
                    prop_assert!(quick || !parsed, "{} (literals: {})", body, literals.is_some());
                }
            }
        }
    }
}
