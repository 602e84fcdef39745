//! Reading a YAML config file (Goose, Continue) as JSON, through [`read_text`] like every other
//! config file. A document with aliases is refused: the parser copies an alias's whole tree
//! at each use, so a few KiB of nested aliases would expand to gigabytes (no config of these
//! tools needs them).
//!
//! Without the `yaml` feature no YAML is parsed: a file that is there is skipped with a
//! warning naming it and the feature.

use std::path::Path;

use serde_json::Value;
#[cfg(feature = "yaml")]
use serde_json::{Map, Number};
#[cfg(feature = "yaml")]
use yaml_rust2::parser::{Event, EventReceiver, Parser};
#[cfg(feature = "yaml")]
use yaml_rust2::{Yaml, YamlLoader};

use crate::config::file::{read_text, ReadError, CONFIG_FILE_CAP};
use crate::config::source::SourceOutput;

#[cfg(feature = "yaml")]
struct Aliases(usize);

#[cfg(feature = "yaml")]
impl EventReceiver for Aliases {
    fn on_event(&mut self, ev: Event) {
        if matches!(ev, Event::Alias(_)) {
            self.0 += 1;
        }
    }
}

/// Parses YAML text into JSON (the first document; an empty file is `null`).
#[cfg(feature = "yaml")]
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let mut aliases = Aliases(0);
    Parser::new_from_str(text)
        .load(&mut aliases, true)
        .map_err(|e| format!("malformed YAML: {e}"))?;
    if aliases.0 > 0 {
        return Err("YAML aliases (*name) are not supported in config files".into());
    }
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("malformed YAML: {e}"))?;
    Ok(docs.into_iter().next().map(to_json).unwrap_or(Value::Null))
}

/// Without the `yaml` feature: every file is refused, saying so.
#[cfg(not(feature = "yaml"))]
pub(crate) fn parse(_text: &str) -> Result<Value, String> {
    Err(
        "skipped: YAML config files need the \"yaml\" feature, which this build of \
         mcp-runtime leaves out"
            .into(),
    )
}

/// Reads a YAML file; `None` when missing or (with a warning) unreadable or malformed.
pub(crate) fn read_yaml(out: &mut SourceOutput, path: &Path) -> Option<Value> {
    let text = match read_text(path, CONFIG_FILE_CAP) {
        Ok(t) => t,
        Err(ReadError::Missing) => return None,
        Err(ReadError::Bad(e)) => {
            out.warn(path, e);
            return None;
        }
    };
    match parse(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            out.warn(path, e);
            None
        }
    }
}

#[cfg(feature = "yaml")]
fn to_json(y: Yaml) -> Value {
    match y {
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::String(s)),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::String(s) => Value::String(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Yaml::Hash(map) => {
            let mut obj = Map::new();
            for (k, v) in map {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => continue,
                };
                obj.insert(key, to_json(v));
            }
            Value::Object(obj)
        }
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "yaml")]
    #[test]
    fn yaml_becomes_json_and_aliases_are_refused() {
        use serde_json::json;
        let v = parse("a: 1\nb: [x, 2.5, true, ~]\nc:\n  d: e\n").unwrap();
        assert_eq!(
            v,
            json!({"a": 1, "b": ["x", 2.5, true, null], "c": {"d": "e"}})
        );
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n";
        assert!(parse(bomb).unwrap_err().contains("aliases"));
        assert!(parse("a: [unclosed").is_err());
        assert_eq!(parse("").unwrap(), Value::Null);
    }

    #[cfg(not(feature = "yaml"))]
    #[test]
    fn without_the_feature_a_file_is_skipped_naming_it() {
        let e = parse("a: 1\n").unwrap_err();
        assert!(e.contains("\"yaml\" feature"), "{e}");
    }
}
