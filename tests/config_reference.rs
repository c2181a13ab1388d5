//! `docs/configuration.md` names every key of the route table, and only those: the keys the
//! code reads are taken from the code itself, by walking the raw serde structs
//! (`lingo::config::raw::File`) with a deserializer that records the field names serde asks
//! for (as serde-reflection does), and compared with the first column of the page's tables.
//!
//! A key is written as on the page: `upstreams.<name>.timeouts.connect` (a mapping of names),
//! `routes[].path` (an entry of a list). A secret (`{ env | file | value }`) is one value on
//! the page, so the walk does not go into it.

use std::cell::RefCell;
use std::collections::BTreeSet;

use lingo::config::raw::File;
use serde::Deserialize;
use serde::de::value::Error;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess};

/// The keys of the route table, as the code reads them.
fn code_keys() -> BTreeSet<String> {
    let keys = RefCell::new(BTreeSet::new());
    File::deserialize(Walk {
        path: String::new(),
        keys: &keys,
    })
    .expect("the walk gives every field a value of its type");
    keys.into_inner()
}

/// The keys `docs/configuration.md` documents: the first cell of each table row that starts
/// with a key in backticks.
fn page_keys() -> BTreeSet<String> {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    page.lines()
        .filter_map(|line| line.strip_prefix("| `")?.split_once('`'))
        .map(|(key, _)| key.to_owned())
        .collect()
}

#[test]
fn every_key_in_the_code_is_on_the_page_and_every_key_on_the_page_is_in_the_code() {
    let (code, page) = (code_keys(), page_keys());
    // The walk itself, on keys that must be found: a walk that found nothing would pass.
    for key in [
        "listen[].addr",
        "upstreams.<name>.timeouts.idle",
        "clients[].key",
    ] {
        assert!(code.contains(key), "the walk missed {key}: {code:?}");
    }
    let undocumented: Vec<_> = code.difference(&page).collect();
    let unknown: Vec<_> = page.difference(&code).collect();
    assert!(
        undocumented.is_empty(),
        "keys lingo reads that docs/configuration.md does not document: {undocumented:?}"
    );
    assert!(
        unknown.is_empty(),
        "keys docs/configuration.md documents that lingo does not read: {unknown:?}"
    );
}

// === the walk ===

/// A deserializer that records each struct field it is asked for at `path`, and gives every
/// value the smallest one of its type: `Some`, one list entry, one mapping entry named
/// `<name>`, `false`, `0`, `""`.
struct Walk<'a> {
    path: String,
    keys: &'a RefCell<BTreeSet<String>>,
}

impl<'a> Walk<'a> {
    fn at(&self, path: String) -> Walk<'a> {
        Walk {
            path,
            keys: self.keys,
        }
    }

    fn key(&self, field: &str) -> String {
        match self.path.as_str() {
            "" => field.to_owned(),
            path => format!("{path}.{field}"),
        }
    }
}

impl<'de> Deserializer<'de> for Walk<'_> {
    type Error = Error;

    /// No place to give: `At<T>` reads the value alone.
    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_struct<V: de::Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // A secret's fields are all optional: none of them is a valid (unchecked) value.
        let fields = if name == "Secret" { &[][..] } else { fields };
        for field in fields {
            self.keys.borrow_mut().insert(self.key(field));
        }
        visitor.visit_map(Fields {
            walk: self,
            fields: fields.iter(),
            value_path: String::new(),
        })
    }

    fn deserialize_map<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let entry = self.at(self.key("<name>"));
        visitor.visit_map(OneEntry(Some(entry)))
    }

    fn deserialize_seq<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let entry = self.at(format!("{}[]", self.path));
        visitor.visit_seq(OneEntry(Some(entry)))
    }

    fn deserialize_option<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bool<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_bool(false)
    }

    fn deserialize_u32<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_u32(0)
    }

    fn deserialize_u64<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_u64(0)
    }

    fn deserialize_string<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str("")
    }

    fn deserialize_str<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str("")
    }

    /// A value of any shape (a route's `options`' values): no keys below it.
    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u128 f32 f64 char bytes byte_buf unit unit_struct
        tuple tuple_struct enum identifier ignored_any
    }
}

/// A struct's fields, each walked at its own key.
struct Fields<'a> {
    walk: Walk<'a>,
    fields: std::slice::Iter<'static, &'static str>,
    value_path: String,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(field) = self.fields.next() else {
            return Ok(None);
        };
        self.value_path = self.walk.key(field);
        seed.deserialize(field.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(self.walk.at(std::mem::take(&mut self.value_path)))
    }
}

/// One list entry, or one mapping entry named `<name>`.
struct OneEntry<'a>(Option<Walk<'a>>);

impl<'de> SeqAccess<'de> for OneEntry<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.take().map(|walk| seed.deserialize(walk)).transpose()
    }
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.0.is_none() {
            return Ok(None);
        }
        seed.deserialize(Name).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let walk = self.0.take().expect("a value follows its key");
        seed.deserialize(walk)
    }
}

/// A mapping entry's name: `<name>`, with no place (the names are `At<String>`).
struct Name;

impl<'de> Deserializer<'de> for Name {
    type Error = Error;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str("<name>")
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}
