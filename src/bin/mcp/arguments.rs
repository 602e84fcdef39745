//! Tool and prompt arguments from the command line: one JSON object, or `KEY=VALUE` words typed
//! by the tool's input schema. Kept free of the rest of the command (it needs `serde_json`
//! only) so the fuzz target `cli_arguments` can build it on its own.

use serde_json::{json, Map, Value};

/// `text` as the JSON value a property's schema asks for: a number where it says number or
/// integer, a boolean where it says boolean, JSON where it says array or object, a string where
/// it says string; without a type, JSON if it parses, else the string.
pub fn typed(prop: &Value, text: &str) -> Result<Value, String> {
    let kind = prop.get("type").and_then(Value::as_str);
    match kind {
        Some("string") => Ok(Value::String(text.to_owned())),
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{text:?} is not an integer")),
        Some("number") => match text.parse::<i64>() {
            Ok(n) => Ok(Value::from(n)),
            Err(_) => text
                .parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
                .ok_or_else(|| format!("{text:?} is not a number")),
        },
        Some("boolean") => match text {
            "true" | "yes" | "y" => Ok(Value::Bool(true)),
            "false" | "no" | "n" => Ok(Value::Bool(false)),
            _ => Err(format!("{text:?} is not true or false")),
        },
        Some("array") | Some("object") => {
            serde_json::from_str(text).map_err(|e| format!("{text:?} is not JSON: {e}"))
        }
        _ => Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))),
    }
}

/// Tool or prompt arguments from the command line: one JSON object, or `KEY=VALUE` words typed
/// by `schema` (a tool's input schema; `None` takes every value as a string).
pub fn arguments(words: &[String], schema: Option<&Value>) -> Result<Value, String> {
    match words {
        [] => return Ok(json!({})),
        [one] if one.trim_start().starts_with('{') => {
            return serde_json::from_str(one).map_err(|e| format!("ARGS_JSON is not JSON: {e}"))
        }
        _ => {}
    }
    let mut args = Map::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!(
                "arguments are one JSON object or KEY=VALUE words, not {word:?}"
            ));
        };
        let value = match schema {
            Some(schema) => {
                let prop = schema.pointer(&format!(
                    "/properties/{}",
                    key.replace('~', "~0").replace('/', "~1")
                ));
                typed(prop.unwrap_or(&Value::Null), value).map_err(|e| format!("{key}: {e}"))?
            }
            None => Value::String(value.to_owned()),
        };
        args.insert(key.to_owned(), value);
    }
    Ok(Value::Object(args))
}

/// The fuzz target `cli_arguments` (and the replay of its corpus): the first line of `data` is
/// a schema (ignored when it is not JSON), each further line a word. Typing never panics, an
/// accepted word list is an object with one member per distinct key, and a property the schema
/// calls a string keeps the word's text exactly.
#[cfg(any(test, fuzzing))]
#[allow(
    clippy::expect_used,
    reason = "a fuzz target's checks: one that fails must crash, for the fuzzer to see it"
)]
pub fn fuzz(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let schema: Option<Value> = lines.next().and_then(|l| serde_json::from_str(l).ok());
    let words: Vec<String> = lines.map(str::to_owned).collect();
    let Ok(args) = arguments(&words, schema.as_ref()) else {
        return;
    };
    let args = args.as_object().expect("arguments are an object");
    if words.len() == 1 && words[0].trim_start().starts_with('{') {
        return;
    }
    for word in &words {
        let (key, value) = word.split_once('=').expect("an accepted word has a =");
        let kind = schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(key))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        assert!(args.contains_key(key), "{key:?} is kept");
        if schema.is_none() || kind == Some("string") {
            // The last word of a key wins.
            let last = words
                .iter()
                .rev()
                .find_map(|w| w.split_once('=').filter(|(k, _)| *k == key))
                .map(|(_, v)| v);
            if last == Some(value) {
                assert_eq!(args[key], Value::String(value.to_owned()), "{key:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The fuzz corpus of `cli_arguments` replays here (the library's targets replay in its own
    /// tests).
    #[test]
    fn the_fuzz_corpus_replays() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/cli_arguments");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("the corpus is there") {
            super::fuzz(&std::fs::read(entry.unwrap().path()).unwrap());
            n += 1;
        }
        assert!(n > 0, "{} is empty", dir.display());
    }
}
