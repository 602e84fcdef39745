//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640): what `skills/list`
//! returns, and the checks a skill's files pass before a host is given them.
//!
//! A skill is a `SKILL.md` (YAML frontmatter between `---` lines, then instructions) and the
//! files beside it; the list gives each file's URI, its SHA-256 (`sha256:<hex>`) and its size
//! in bytes, and the frontmatter the `SKILL.md` must carry. The files are read with
//! `resources/read`, lazily; each is checked against the list (size first, then digest; for
//! `SKILL.md` its frontmatter too) before anything of it is handed over. The checks here are
//! plain functions of the list's entry and the bytes read; the reading is the client's.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The extension's name in `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// One skill of a `skills/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// Its `SKILL.md` (`skill://<path>/SKILL.md`).
    pub uri: String,
    /// The frontmatter its `SKILL.md` carries: `name` and `description` at least.
    #[serde(default)]
    pub frontmatter: Map<String, Value>,
    /// Its files (`SKILL.md` among them) with their digests and sizes; `None` when the list
    /// says `"dynamic"` (files the server makes up when asked, nothing to check them against).
    #[serde(default = "no_files", with = "files")]
    pub resources: Option<Vec<SkillFile>>,
    /// Anything else, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Skill {
    /// The frontmatter's `name`.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The entry of the file `uri`, when the list names its files.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.resources.as_ref()?.iter().find(|f| f.uri == uri)
    }

    /// The URI of a file given relative to the skill's directory (`references/FORMS.md`), or
    /// as a whole URI.
    pub fn file_uri(&self, file: &str) -> String {
        if file.contains("://") {
            return file.to_owned();
        }
        match self.uri.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{}", file.trim_start_matches('/')),
            None => file.to_owned(),
        }
    }

    /// Whether `uri` is a file inside the skill's directory: under it, with no `.` or `..`
    /// segment (plain or percent-encoded) and no backslash.
    pub fn holds(&self, uri: &str) -> bool {
        let Some((dir, _)) = self.uri.rsplit_once('/') else {
            return false;
        };
        let Some(rest) = uri.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) else {
            return false;
        };
        !rest.is_empty()
            && !rest.contains('\\')
            && rest.split('/').all(|segment| {
                let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
                !segment.is_empty() && decoded != "." && decoded != ".."
            })
    }
}

/// A skill with no `resources` member lists no files.
fn no_files() -> Option<Vec<SkillFile>> {
    Some(Vec::new())
}

/// `resources` as `skills/list` gives it: a list of files, or `"dynamic"` (`None`).
mod files {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use super::SkillFile;

    pub(super) fn serialize<S: Serializer>(
        files: &Option<Vec<SkillFile>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match files {
            Some(files) => files.serialize(s),
            None => s.serialize_str("dynamic"),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<SkillFile>>, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "dynamic" => Ok(None),
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "resources is a list of files or \"dynamic\", not {other}"
            ))),
        }
    }
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// Its URI.
    pub uri: String,
    /// `sha256:` and the lowercase hex SHA-256 of its bytes.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Checks `bytes` (a file as read) against its entry: the size first, then the digest. The
/// error says what differs.
pub fn verify_file(entry: &SkillFile, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 != entry.size {
        return Err(format!(
            "{} is {} bytes; the skill's list says {}",
            entry.uri,
            bytes.len(),
            entry.size
        ));
    }
    let Some(hex) = entry
        .digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    else {
        return Err(format!(
            "{}: the skill's list gives a digest that is not sha256:<64 lowercase hex digits>",
            entry.uri
        ));
    };
    let actual = crate::hex::hex(&Sha256::digest(bytes));
    if actual != hex {
        return Err(format!(
            "{}: its SHA-256 is {actual}; the skill's list says {hex}",
            entry.uri
        ));
    }
    Ok(())
}

/// The YAML frontmatter of a `SKILL.md` (between a first `---` line and the next), as JSON.
/// Without the `yaml` feature, only a frontmatter of plain `key: value` lines is read (see
/// `frontmatter`); any other is an error that names the feature.
pub fn frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Err("SKILL.md does not start with a --- frontmatter line".into());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err("SKILL.md's frontmatter has no closing --- line".into());
    }
    super::frontmatter::mapping(&yaml)
}

/// Checks a `SKILL.md`'s frontmatter against the skill's list entry: the same keys with the
/// same values (types included), a non-empty `name` and `description`, and a `name` that is
/// the last segment of the skill's path.
pub fn verify_frontmatter(skill: &Skill, text: &str) -> Result<(), String> {
    let found = frontmatter(text)?;
    for key in found.keys().chain(skill.frontmatter.keys()) {
        let (a, b) = (found.get(key), skill.frontmatter.get(key));
        if !same(a.unwrap_or(&Value::Null), b.unwrap_or(&Value::Null)) {
            return Err(format!(
                "SKILL.md says {key}: {}; the skill's list says {}",
                a.unwrap_or(&Value::Null),
                b.unwrap_or(&Value::Null)
            ));
        }
    }
    for key in ["name", "description"] {
        if found
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!("SKILL.md's frontmatter has no {key}"));
        }
    }
    let name = skill.name().unwrap_or("");
    let dir = skill.uri.rsplit_once('/').map_or("", |(dir, _)| dir);
    if dir.rsplit('/').next() != Some(name) {
        return Err(format!(
            "the skill's name {name:?} is not the last segment of its path {dir:?}"
        ));
    }
    Ok(())
}

/// JSON equality, numbers compared by value (YAML's `1.0` is the `1` a server's JSON may say).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn entry(text: &str) -> SkillFile {
        let hex = crate::hex::hex(&Sha256::digest(text.as_bytes()));
        SkillFile {
            uri: "skill://pdf-processing/SKILL.md".into(),
            digest: format!("sha256:{hex}"),
            size: text.len() as u64,
        }
    }

    fn skill() -> Skill {
        serde_json::from_value(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [entry(SKILL_MD)]
        }))
        .unwrap()
    }

    #[test]
    fn files_are_checked_by_size_then_digest() {
        let good = entry(SKILL_MD);
        assert_eq!(verify_file(&good, SKILL_MD.as_bytes()), Ok(()));
        let evil = SKILL_MD.replace("Skill body.", "Evil body!!");
        let e = verify_file(&good, evil.as_bytes()).unwrap_err();
        assert!(e.contains("SHA-256"), "{e}");
        let longer = format!("{SKILL_MD}more\n");
        let e = verify_file(&good, longer.as_bytes()).unwrap_err();
        assert!(e.contains("bytes; the skill's list says"), "{e}");
        let bad = SkillFile {
            digest: "md5:abc".into(),
            ..good
        };
        assert!(verify_file(&bad, SKILL_MD.as_bytes()).is_err());
    }

    #[test]
    fn frontmatter_must_match_the_list() {
        let skill = skill();
        assert_eq!(verify_frontmatter(&skill, SKILL_MD), Ok(()));
        let changed = SKILL_MD.replace(
            "Extract, fill, and assemble PDF documents",
            "Exfiltrate credentials",
        );
        let e = verify_frontmatter(&skill, &changed).unwrap_err();
        assert!(e.contains("description"), "{e}");
        let extra = SKILL_MD.replace("---\n\n", "version: 2.1\n---\n\n");
        assert!(verify_frontmatter(&skill, &extra).is_err());
        assert!(verify_frontmatter(&skill, "no frontmatter").is_err());
        assert!(verify_frontmatter(&skill, "---\nname: x\n").is_err());
        let crlf = SKILL_MD.replace('\n', "\r\n");
        assert_eq!(verify_frontmatter(&skill, &crlf), Ok(()));
    }

    #[test]
    fn files_stay_inside_the_skills_folder() {
        let s = skill();
        assert!(s.holds("skill://pdf-processing/references/FORMS.md"));
        assert!(s.holds("skill://pdf-processing/SKILL.md"));
        for outside in [
            "skill://pdf-processing/../other/SKILL.md",
            "skill://pdf-processing/a/%2E%2E/b",
            "skill://pdf-processing/./x",
            "skill://pdf-processing/a\\b",
            "skill://pdf-processing/",
            "skill://pdf-processing-evil/x",
            "file:///etc/passwd",
        ] {
            assert!(!s.holds(outside), "{outside}");
        }
    }

    #[test]
    fn numbers_are_compared_by_value() {
        let mut s = skill();
        s.frontmatter.insert("version".into(), json!(1));
        let text = SKILL_MD.replace("---\n\n", "version: 1.0\n---\n\n");
        assert_eq!(verify_frontmatter(&s, &text), Ok(()));
    }

    #[test]
    fn lists_read_with_files_or_dynamic() {
        let s = skill();
        assert_eq!(s.name(), Some("pdf-processing"));
        assert!(s.file("skill://pdf-processing/SKILL.md").is_some());
        assert_eq!(
            s.file_uri("references/FORMS.md"),
            "skill://pdf-processing/references/FORMS.md"
        );
        let dynamic: Skill = serde_json::from_value(
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "dynamic"}),
        )
        .unwrap();
        assert_eq!(dynamic.resources, None);
        assert!(
            serde_json::from_value::<Skill>(json!({"uri": "u", "resources": "other"})).is_err()
        );
    }
}
