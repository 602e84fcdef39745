//! One page of a paginated list (`tools/list`, `resources/list`, ...), read straight from the
//! result's JSON text: the items under their key, `nextCursor`, and the 2026-07-28 caching
//! hints. Every other member is skipped unread, so a page is never also a tree of `Value`s.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserializer;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::Error;
use crate::protocol::member::Names;

/// A page's members that matter to the client.
#[derive(Debug)]
pub(crate) struct Page<T> {
    /// The items (none when the key is absent or `null`).
    pub items: Vec<T>,
    /// `nextCursor`, when it is a string.
    pub next_cursor: Option<String>,
    /// `ttlMs`, when it is an integer (2026-07-28).
    pub ttl_ms: Option<i64>,
    /// `cacheScope`, when it is a string (2026-07-28).
    pub cache_scope: Option<String>,
}

impl<T: DeserializeOwned> Page<T> {
    /// Reads a `method` result whose items are under `key`.
    pub fn read(method: &str, key: &str, raw: &RawValue) -> Result<Page<T>, Error> {
        super::budget::check(method, raw.get())?;
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let page = PageSeed::<T> {
            key,
            items: PhantomData,
        }
        .deserialize(&mut de)
        .and_then(|page| de.end().map(|()| page))
        .map_err(|e| Error::protocol(format!("invalid {method} result: {e}")))?;
        Ok(page)
    }
}

struct PageSeed<'k, T> {
    key: &'k str,
    items: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for PageSeed<'_, T> {
    type Value = Page<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Page<T>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for PageSeed<'_, T> {
    type Value = Page<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with `{}`", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Page<T>, A::Error> {
        let mut page = Page {
            items: Vec::new(),
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
        };
        let names = [self.key, "nextCursor", "cacheScope", "ttlMs"];
        while let Some(member) = map.next_key_seed(Names(&names))? {
            match member {
                Ok(0) => page.items = map.next_value::<Option<Vec<T>>>()?.unwrap_or_default(),
                Ok(1) => page.next_cursor = as_string(map.next_value()?),
                Ok(2) => page.cache_scope = as_string(map.next_value()?),
                Ok(_) => page.ttl_ms = map.next_value::<Value>()?.as_i64(),
                Err(_) => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

fn as_string(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    #[test]
    fn reads_the_items_the_cursor_and_the_hints() {
        let page: Page<Value> = Page::read(
            "tools/list",
            "tools",
            &raw(
                json!({"tools": [{"name": "a"}], "nextCursor": "c", "ttlMs": 5,
                "cacheScope": "public", "other": {"deep": [1]}}),
            ),
        )
        .unwrap();
        assert_eq!(page.items, vec![json!({"name": "a"})]);
        assert_eq!(page.next_cursor.as_deref(), Some("c"));
        assert_eq!(
            (page.ttl_ms, page.cache_scope.as_deref()),
            (Some(5), Some("public"))
        );
    }

    #[test]
    fn absent_or_null_items_are_none_and_odd_hints_are_ignored() {
        for v in [
            json!({}),
            json!({"tools": null, "nextCursor": 7, "ttlMs": "x"}),
        ] {
            let page: Page<Value> = Page::read("tools/list", "tools", &raw(v)).unwrap();
            assert!(page.items.is_empty() && page.next_cursor.is_none() && page.ttl_ms.is_none());
        }
        // An escaped key is still the key.
        let escaped = RawValue::from_string(r#"{"t\u006fols":[1]}"#.into()).unwrap();
        let page: Page<i64> = Page::read("tools/list", "tools", &escaped).unwrap();
        assert_eq!(page.items, [1]);
    }

    #[test]
    fn a_page_that_is_not_an_object_or_has_bad_items_is_a_protocol_error() {
        for v in [json!([1]), json!({"tools": 5}), json!({"tools": [5]})] {
            let e = Page::<String>::read("tools/list", "tools", &raw(v)).unwrap_err();
            assert!(e.to_string().contains("invalid tools/list result"), "{e}");
        }
    }
}
