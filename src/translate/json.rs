//! A client's request as the chat-completions translators read it: a JSON value whose
//! strings borrow from the body and whose objects keep their members in a `Vec`, in the
//! order they were sent.
//!
//! `serde_json::Value` allocates every key and every string and builds a map per object,
//! which costs more than the rest of a request's translation; a request's objects are small
//! and each is looked up a few times, so a scan of a `Vec` costs less than a map. A key sent
//! twice reads as its last value, as with `Value`. What is passed on (tools, schemas,
//! tool-call arguments) keeps the client's member order, which a JSON schema's properties
//! need. [`Json::read`] reads a body with a [`Scan`] first and leaves what it is not sure of
//! to serde; the tests check both readers give the same value for generated bodies (a value
//! has no fields of its own to fall out of step with).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Number, Value};

use crate::translate::scan::Scan;

/// A JSON value borrowing its strings (an escaped string is the one that is copied).
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// An object's members, in the order sent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

// === impl Object ===

impl<'a> Object<'a> {
    /// The member `key` (its last value if it was sent twice: repeats are dropped as the
    /// object is read).
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// Keeps a repeated key's last member only (in its place), once, as the object is read:
    /// a scan for small objects, a map for large ones, so that no object costs more than
    /// linear time however a client repeats its keys.
    fn dedup(&mut self) {
        let members = &self.0;
        let repeated = |i: usize| members[i + 1..].iter().any(|(k, _)| *k == members[i].0);
        let keep: Vec<bool> = if members.len() <= 16 {
            if !(0..members.len()).any(repeated) {
                return;
            }
            (0..members.len()).map(|i| !repeated(i)).collect()
        } else {
            let last: HashMap<&str, usize> = members
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.as_ref(), i))
                .collect();
            if last.len() == members.len() {
                return;
            }
            (0..members.len())
                .map(|i| last[members[i].0.as_ref()] == i)
                .collect()
        };
        let mut keep = keep.into_iter();
        self.0.retain(|_| keep.next().unwrap_or(true));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As a `serde_json` map, for what is kept beyond the request's reading.
    pub fn to_map(&self) -> Map<String, Value> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_value()))
            .collect()
    }
}

// === impl Json ===

impl<'a> Json<'a> {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.as_object()?.get(key)
    }

    /// The value at a JSON pointer (`/function/name`, `/0`), as `Value::pointer` reads it.
    pub fn pointer(&self, pointer: &str) -> Option<&Json<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |at, token| match at {
            Json::Object(o) if token.contains('~') => {
                o.get(&token.replace("~1", "/").replace("~0", "~"))
            }
            Json::Object(o) => o.get(token),
            Json::Array(items) => items.get(index(token)?),
            _ => None,
        })
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        self.number()?.as_u64()
    }

    pub fn as_f64(&self) -> Option<f64> {
        self.number()?.as_f64()
    }

    /// An integer (`is_i64() || is_u64()` of a `Value`).
    pub fn is_integer(&self) -> bool {
        self.number().is_some_and(|n| n.is_i64() || n.is_u64())
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Json::Str(_))
    }

    fn number(&self) -> Option<&Number> {
        match self {
            Json::Number(n) => Some(n),
            _ => None,
        }
    }

    /// As a `serde_json` value, for what is kept beyond the request's reading.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::Str(s) => Value::String(s.as_ref().to_owned()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(o.to_map()),
        }
    }
}

/// An array index as RFC 6901 writes it: digits, no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::Str(text) => s.serialize_str(text),
            Json::Array(items) => s.collect_seq(items),
            Json::Object(o) => o.serialize(s),
        }
    }
}

impl Serialize for Object<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Deepest nesting [`Json::read`] scans; a deeper body is left to serde (whose limit is 128).
const MAX_SCAN_DEPTH: usize = 32;

impl<'a> Json<'a> {
    /// Reads a body as [`parse_json`](crate::translate::parse_json) does, with a [`Scan`]
    /// first, which reads a request in one pass where serde's generic visitor takes several
    /// times as long. The scan returns `None` for anything it is not sure of (a key with an
    /// escape, a lone surrogate, a number serde would refuse, deep nesting, ...), and serde
    /// then reads the body: its value or its error, never another.
    pub fn read(body: &'a [u8]) -> serde_json::Result<Json<'a>> {
        // Checked as UTF-8 once, whole: the scan's strings are then sliced from it unchecked.
        match std::str::from_utf8(body).ok().and_then(scanned_whole) {
            Some(json) => Ok(json),
            None => crate::translate::parse_json(body),
        }
    }
}

/// `text` scanned, if the scan is sure of all of it.
fn scanned_whole(text: &str) -> Option<Json<'_>> {
    let mut scan = Scan::of_str(text);
    scanned(&mut scan, 0).filter(|_| scan.end().is_some())
}

/// The value at `scan`, `depth` levels down, if the scan is sure of it.
fn scanned<'a>(scan: &mut Scan<'a>, depth: usize) -> Option<Json<'a>> {
    Some(match scan.peek()? {
        b'"' => Json::Str(scan.str()?),
        b'n' => scan.null().map(|()| Json::Null)?,
        b't' | b'f' => Json::Bool(scan.bool()?),
        b'-' | b'0'..=b'9' => Json::Number(number(scan.number()?)?),
        _ if depth == MAX_SCAN_DEPTH => return None,
        b'[' => {
            let mut items = Vec::with_capacity(4);
            scan.array(|scan| {
                items.push(scanned(scan, depth + 1)?);
                Some(())
            })?;
            Json::Array(items)
        }
        _ => {
            let mut members = Vec::with_capacity(4);
            // A key is plain ASCII (one with an escape or a byte past it is left to serde).
            scan.object_str(|key, scan| {
                members.push((Cow::Borrowed(key), scanned(scan, depth + 1)?));
                Some(())
            })?;
            object(members)
        }
    })
}

/// A number's text as serde reads it: up to 19 digits always fit a `u64`; anything else
/// (a sign, a fraction, an exponent, more digits) is read by serde_json's own parser, so
/// that a float rounds as serde's does and an out-of-range one is refused alike.
fn number(text: &str) -> Option<Number> {
    if text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<u64>().ok().map(Number::from);
    }
    text.parse().ok()
}

/// An object of the members read, a repeated key's last member kept (as `Value` does).
fn object<'a>(members: Vec<(Cow<'a, str>, Json<'a>)>) -> Json<'a> {
    let mut object = Object(members);
    if object.0.len() > 1 {
        object.dedup();
    }
    Json::Object(object)
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        Json::deserialize(d)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(n).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        // A member's name is read as a value (borrowed when it has no escapes: `Cow<str>`'s
        // own reading always copies); JSON's names are strings.
        while let Some(key) = map.next_key()? {
            let Json::Str(key) = key else {
                return Err(A::Error::custom("a member name must be a string"));
            };
            members.push((key, map.next_value()?));
        }
        Ok(object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::scan::{random_objects, spoilt};
    use serde_json::json;

    /// The body as [`Json::read`] reads it, checked against serde's reading.
    fn read(text: &str) -> Json<'_> {
        let json = Json::read(text.as_bytes()).unwrap();
        assert_eq!(Ok(&json), serde(text.as_bytes()).as_ref(), "{text}");
        json
    }

    /// What serde reads.
    fn serde(text: &[u8]) -> Result<Json<'_>, String> {
        crate::translate::parse_json(text).map_err(|e| e.to_string())
    }

    /// What the scan reads, if it is sure (of text that is UTF-8, as [`Json::read`] scans).
    fn scan(text: &[u8]) -> Option<Json<'_>> {
        scanned_whole(std::str::from_utf8(text).ok()?)
    }

    /// Request bodies as clients send them are scanned, to what serde reads.
    #[test]
    fn requests_are_scanned_as_serde_reads_them() {
        let bodies = [
            r#"{"model":"gpt-4o-mini","stream":false,"messages":[{"role":"user","content":"hello there"}]}"#,
            r#"{"model":"m","messages":[{"role":"system","content":"Be \"brief\".\n\u00e9 \ud83d\ude00"},{"role":"user","content":[{"type":"text","text":"café 😀"},{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}],"temperature":0.7,"top_p":1,"max_tokens":256,"seed":-3,"presence_penalty":-0.5e-1,"n":1,"stop":null,"logit_bias":{"50256":-100}}"#,
            r#"{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"]}}}],"tool_choice":"auto"}"#,
            r#" { "model" : "m" ,"stream_options":{"include_usage":true}, "big":18446744073709551616, "zero":-0, "e":1E+2 , "model":"last" } "#,
            "[1,[2,[3,[]]],{}]",
            r#""just a string""#,
            // Floats serde_json rounds otherwise than `str::parse::<f64>` does, and -0.
            r#"{"a":0.94993629969271426771,"b":2.2250738585072011e-308,"c":0.8036e-96,"d":-0}"#,
        ];
        for body in bodies {
            let scanned = scan(body.as_bytes()).unwrap_or_else(|| panic!("not scanned: {body}"));
            // As `Debug`, which tells -0.0 from 0.0 (`==` does not).
            let serde = serde(body.as_bytes()).map(|json| format!("{json:?}"));
            assert_eq!(Ok(format!("{scanned:?}")), serde, "{body}");
        }
    }

    /// Anything the scan is not sure of is read by serde: its value or its error.
    #[test]
    fn the_unsure_is_left_to_serde() {
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        let too_deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let bodies: [&[u8]; 14] = [
            br#"{"m\u006fdel":"m"}"#,
            "{\"caf\u{e9}\":1}".as_bytes(),
            br#"{"content":"lone \ud800"}"#,
            br#"{"n":1e400}"#,
            br#"{"n":01}"#,
            br#"{"n":1.}"#,
            br#"{"a":1,}"#,
            br#"{"a":1} x"#,
            b"{\"a\":\"\x01\"}",
            b"{\"a\":\"\xff\"}",
            b"{\"a\":tru}",
            b"",
            deep.as_bytes(),
            too_deep.as_bytes(),
        ];
        for body in bodies {
            assert!(scan(body).is_none(), "{body:?}");
            let ours = Json::read(body).map_err(|e| e.to_string());
            assert_eq!(ours, serde(body), "{body:?}");
        }
        // Some of them are JSON serde reads.
        assert!(serde(br#"{"m\u006fdel":"m"}"#).is_ok() && serde(deep.as_bytes()).is_ok());
    }

    /// Thousands of generated bodies, nested, past ASCII and spoilt: [`Json::read`] reads
    /// each exactly as serde does (value or error), and the scan reads many of them.
    #[test]
    fn generated_bodies_read_as_serde_reads_them() {
        let keys = ["model", "messages", "temperature", "café", r"e\u0073c", ""];
        let values = [
            r#"[{"role":"user","content":"hi"},{"role":"tool","content":null}]"#,
            r#"{"a":[-0.5,2E-3,-7,{"b":"\u00e9"}],"a":1}"#,
            "-0",
            "1e999",
        ];
        // As `Debug`, which tells -0.0 from 0.0 (`==` does not).
        let debug = |read: Result<Json, String>| read.map(|json| format!("{json:?}"));
        let (mut scanned, cases) = (0, 5_000);
        for line in random_objects(&keys, &values, cases) {
            for (i, bytes) in spoilt(&line).into_iter().enumerate() {
                let ours = Json::read(&bytes).map_err(|e| e.to_string());
                assert_eq!(debug(ours), debug(serde(&bytes)), "{bytes:?}");
                if let Some(json) = scan(&bytes) {
                    scanned += usize::from(i == 0);
                    assert_eq!(debug(Ok(json)), debug(serde(&bytes)), "{bytes:?}");
                }
            }
        }
        assert!(
            scanned > cases / 10,
            "only {scanned} of {cases} lines scanned"
        );
    }

    #[test]
    fn reads_and_writes_what_value_does() {
        for text in [
            r#"null"#,
            r#"[true,false,0,-1,18446744073709551615,1.5,-2.5e-7,"x"]"#,
            r#"{"a":{"b":[1,{"c":"d\"e\u00e9\n"}]},"e":[]}"#,
            r#"{"":"","\u0041":1}"#,
        ] {
            let ours = read(text);
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours.to_value(), theirs, "{text}");
            let written: Value =
                serde_json::from_slice(&serde_json::to_vec(&ours).unwrap()).unwrap();
            assert_eq!(written, theirs, "{text}");
        }
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let text = r#"{"plain":"abc","esc\"aped":"a\nb"}"#;
        let Json::Object(o) = read(text) else {
            panic!()
        };
        assert!(matches!(o.0[0].0, Cow::Borrowed("plain")));
        assert!(matches!(o.0[0].1, Json::Str(Cow::Borrowed("abc"))));
        assert!(matches!(o.0[1].0, Cow::Owned(_)));
        assert_eq!(o.get("esc\"aped").and_then(Json::as_str), Some("a\nb"));
    }

    #[test]
    fn member_order_is_kept_and_a_repeated_key_reads_last() {
        let v = read(r#"{"z":1,"a":2,"z":3,"m":{"y":1,"b":2}}"#);
        assert_eq!(v.get("z").and_then(Json::as_u64), Some(3));
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":2,"z":3,"m":{"y":1,"b":2}}"#
        );
        assert_eq!(v.to_value(), json!({"z": 3, "a": 2, "m": {"y": 1, "b": 2}}));
    }

    #[test]
    fn pointers_and_accessors() {
        let v = read(r#"{"f":{"name":"x","a/b":[10,"s"],"t~":null},"n":-3,"r":2.5}"#);
        assert_eq!(v.pointer("/f/name").and_then(Json::as_str), Some("x"));
        assert_eq!(v.pointer("/f/a~1b/0").and_then(Json::as_u64), Some(10));
        assert!(v.pointer("/f/t~0").is_some_and(Json::is_null));
        assert_eq!(v.pointer("/f/a~1b/2"), None);
        assert_eq!(v.pointer("f"), None);
        assert!(v.get("n").is_some_and(Json::is_integer));
        assert_eq!(v.get("n").and_then(Json::as_u64), None);
        assert!(!v.get("r").is_some_and(Json::is_integer));
        assert_eq!(v.get("r").and_then(Json::as_f64), Some(2.5));
        assert!(v.pointer("/f/a~1b/1").is_some_and(Json::is_string));
        assert_eq!(v.pointer(""), Some(&v));
        assert_eq!(v.pointer("/f/a~1b/+1"), None);
        assert_eq!(v.pointer("/f/a~1b/01"), None);
    }

    /// A repeated key keeps its last member, in its place, for small and large objects
    /// alike; many repeats cost linear time (a quadratic check of 100,000 members would
    /// take minutes).
    #[test]
    fn repeated_keys_are_dropped_once_as_read() {
        let small = read(r#"{"a":1,"b":2,"a":3}"#);
        assert_eq!(serde_json::to_string(&small).unwrap(), r#"{"b":2,"a":3}"#);
        let mut text = String::from("{");
        for i in 0..100_000 {
            text.push_str(&format!(r#""k{}":{i},"#, i % 20));
        }
        text.push_str(r#""z":true}"#);
        let large = read(&text);
        let Json::Object(o) = &large else { panic!() };
        assert_eq!(o.iter().count(), 21);
        assert_eq!(large.get("k0").and_then(Json::as_u64), Some(99_980));
        assert_eq!(large.get("k19").and_then(Json::as_u64), Some(99_999));
        let theirs: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(large.to_value(), theirs);
    }

    #[test]
    fn errors_are_the_parsers_own() {
        for text in ["", "{", r#"{"a":}"#, "[1,]", "nul"] {
            let theirs = serde_json::from_str::<Value>(text).unwrap_err().to_string();
            let ours = crate::translate::parse_json::<Json>(text.as_bytes()).unwrap_err();
            assert_eq!(ours.to_string(), theirs, "{text}");
            let read = Json::read(text.as_bytes()).unwrap_err();
            assert_eq!(read.to_string(), theirs, "{text}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(crate::translate::parse_json::<Json>(deep.as_bytes()).is_err());
        assert!(Json::read(deep.as_bytes()).is_err());
    }
}
