//! A member name told apart as it is read: the index of a name the reader knows, or the name
//! itself (copied only then). Lets the streaming readers of large results (content blocks,
//! listing pages) skip building an object to look its members up. Also: the strings of an
//! array member ([`strings`]).

use std::fmt;

use serde::de::{self, DeserializeSeed, Visitor};
use serde::Deserializer;
use serde_json::Value;

/// Reads a member name against a list of known ones (`map.next_key_seed(Names(&LIST))`).
pub(crate) struct Names<'a>(pub &'a [&'a str]);

/// What [`Names`] read: `Ok(index)` of a known name, or `Err(name)` of another.
pub(crate) type Member = Result<usize, String>;

impl<'de> DeserializeSeed<'de> for Names<'_> {
    type Value = Member;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Member, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Names<'_> {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Member, E> {
        Ok(self
            .0
            .iter()
            .position(|k| *k == name)
            .ok_or_else(|| name.to_owned()))
    }
}

/// The strings of a JSON array (its other items skipped), collected as `C`; `None` when the
/// value is absent or not an array.
pub(crate) fn strings<C: FromIterator<String>>(value: Option<&Value>) -> Option<C> {
    value.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_are_indices_and_others_are_kept() {
        let read = |json: &str| {
            let mut de = serde_json::Deserializer::from_str(json);
            Names(&["a", "b"]).deserialize(&mut de).unwrap()
        };
        assert_eq!(read(r#""b""#), Ok(1));
        assert_eq!(read(r#""\u0061""#), Ok(0));
        assert_eq!(read(r#""c""#), Err("c".to_owned()));
    }
}
