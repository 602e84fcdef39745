//! A `SKILL.md`'s frontmatter (the YAML between its `---` lines) as JSON, for the skills checks.
//!
//! With the `yaml` feature it is read with a YAML parser. Without it, the frontmatter a skill
//! usually has is still read: plain `key: value` lines whose values are scalars (plain,
//! single- or double-quoted without escapes; `true`, `false`, `null`, numbers as YAML 1.2's
//! core schema reads them). Anything else (nesting, lists, block or flow values, anchors,
//! tags, escapes) is refused with a message naming the feature ([`YAML_NEEDED`]), never read
//! differently from the full build.

use serde_json::{Map, Value};

/// What a refusal for want of the `yaml` feature says (the client turns it into
/// [`Error::FeatureMissing`](crate::Error::FeatureMissing)).
pub(crate) const YAML_NEEDED: &str =
    "needs the \"yaml\" feature, which this build of mcp-runtime leaves out";

/// The YAML text as a mapping.
#[cfg(feature = "yaml")]
pub(crate) fn mapping(yaml: &str) -> Result<Map<String, Value>, String> {
    let docs = yaml_rust2::YamlLoader::load_from_str(yaml)
        .map_err(|e| format!("SKILL.md's frontmatter is not YAML: {e}"))?;
    match docs.first().map(to_json) {
        Some(Value::Object(map)) => Ok(map),
        _ => Err("SKILL.md's frontmatter is not a mapping".into()),
    }
}

#[cfg(feature = "yaml")]
fn to_json(yaml: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        Yaml::Real(r) => r.clone(),
                        _ => return None,
                    };
                    Some((key, to_json(v)))
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// The YAML text as a mapping, when it is plain `key: value` lines (see the module docs).
#[cfg(not(feature = "yaml"))]
pub(crate) fn mapping(yaml: &str) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    for (n, line) in yaml.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let beyond = || {
            format!(
                "SKILL.md's frontmatter (its line {}) is more than plain `key: value` lines: \
                 reading it {YAML_NEEDED}",
                n + 1
            )
        };
        let (key, value) = match (line.split_once(": "), line.strip_suffix(':')) {
            (Some(pair), _) => pair,
            (None, Some(key)) => (key, ""),
            (None, None) => return Err(beyond()),
        };
        let plain_key = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            && !key.starts_with(['-', '.']);
        let value = scalar(value.trim()).ok_or_else(beyond)?;
        if !plain_key || map.insert(key.to_owned(), value).is_some() {
            return Err(beyond());
        }
    }
    Ok(map)
}

/// A scalar as YAML 1.2's core schema reads it; `None` for what only a YAML parser reads.
#[cfg(not(feature = "yaml"))]
fn scalar(text: &str) -> Option<Value> {
    if let Some(inner) = text.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        return (!inner.contains(['"', '\\'])).then(|| Value::String(inner.to_owned()));
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        // Inside, a quote is only ever doubled.
        let lone_quote = inner.replace("''", "").contains('\'');
        return (!lone_quote).then(|| Value::String(inner.replace("''", "'")));
    }
    let special = text.starts_with([
        '[', '{', '|', '>', '&', '*', '!', '%', '@', '`', '#', ',', '?', '-', '.',
    ]) && !is_number(text);
    if special || text.contains(": ") || text.contains(" #") || text.ends_with(':') {
        return None;
    }
    Some(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ if is_number(text) => {
            if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else {
                let f = text.parse::<f64>().ok()?;
                Value::Number(serde_json::Number::from_f64(f)?)
            }
        }
        // Another base or a special float is a number to YAML: refuse rather than guess.
        _ if text.starts_with("0x") || text.starts_with("0o") || text.starts_with("+.") => {
            return None
        }
        _ => Value::String(text.to_owned()),
    })
}

/// Whether a plain scalar is a decimal number in YAML 1.2's core schema.
#[cfg(not(feature = "yaml"))]
fn is_number(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match digits.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['-', '+']).unwrap_or(e))),
        None => (digits, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    (!int.is_empty() || !frac.is_empty())
        && all_digits(int)
        && all_digits(frac)
        && (mantissa.contains('.') || exponent.is_some() || !int.is_empty())
        && exponent.is_none_or(|e| !e.is_empty() && all_digits(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_lines_are_read_alike_in_both_builds() {
        let text = "name: pdf-processing\ndescription: 'Extract, fill: and ''assemble'''\n\
                    version: 2\nratio: 0.5\nbeta: true\nnote: \"plain\"\nempty:\n# comment\n";
        let map = mapping(text).unwrap();
        assert_eq!(
            Value::Object(map),
            json!({"name": "pdf-processing", "description": "Extract, fill: and 'assemble'",
                   "version": 2, "ratio": 0.5, "beta": true, "note": "plain", "empty": null})
        );
    }

    #[cfg(not(feature = "yaml"))]
    #[test]
    fn more_than_plain_lines_names_the_feature() {
        for text in [
            "name: x\nmetadata:\n  a: b\n",
            "tags: [a, b]\n",
            "tags:\n- a\n",
            "description: |\n  long\n",
            "note: \"esc\\\"aped\"\n",
            "a: &x 1\n",
            "n: 0x1F\n",
            "x: 1 # comment\n",
        ] {
            let e = mapping(text).unwrap_err();
            assert!(e.contains(YAML_NEEDED), "{text}: {e}");
        }
    }
}
