//! Skills (the `io.modelcontextprotocol/skills` extension): a server's skills listed, and a
//! skill's files read lazily, each checked against the list before it is handed over (see
//! [`crate::protocol::Skill`]).
//!
//! Nothing is read before the host asks: `list_skills` reads the list only; `load_skill` reads
//! the skill's `SKILL.md` and checks its size, digest and frontmatter; `read_skill_file` reads
//! one more file the list names and checks its size and digest. A file that fails its check is
//! an [`Error::Integrity`] and nothing of it is returned.

use base64::Engine;

use super::Client;
use crate::error::Error;
use crate::protocol::frontmatter::YAML_NEEDED;
use crate::protocol::{
    methods, verify_file, verify_frontmatter, ReadResourceResult, Skill, SKILLS_EXTENSION,
};

impl Client {
    /// Whether the server declared the skills extension (`capabilities.extensions`).
    pub fn offers_skills(&self) -> bool {
        self.server_extension(SKILLS_EXTENSION).is_some()
    }

    /// Every skill of the server (all pages); empty when it did not declare the extension.
    /// No skill file is read.
    pub fn list_skills(&self) -> Result<Vec<Skill>, Error> {
        if !self.offers_skills() {
            return Ok(Vec::new());
        }
        self.list_all(methods::SKILLS_LIST, "skills")
    }

    /// Reads a skill's `SKILL.md` and checks it against the list (size, digest, then
    /// frontmatter); its text when all agree.
    pub fn load_skill(&self, skill: &Skill) -> Result<String, Error> {
        let bytes = self.read_checked(skill, &skill.uri)?;
        let text = String::from_utf8(bytes).map_err(|_| Error::Integrity {
            uri: skill.uri.clone(),
            problem: "SKILL.md is not UTF-8 text".into(),
        })?;
        verify_frontmatter(skill, &text).map_err(|problem| {
            // Without the `yaml` feature a frontmatter beyond plain lines is not checked: the
            // build's limit, not the server's fault.
            if cfg!(not(feature = "yaml")) && problem.contains(YAML_NEEDED) {
                return Error::feature_missing(
                    "yaml",
                    format!(
                        "reading the frontmatter of {} (more than plain `key: value` lines)",
                        skill.uri
                    ),
                );
            }
            Error::Integrity {
                uri: skill.uri.clone(),
                problem,
            }
        })?;
        Ok(text)
    }

    /// Reads one more file of a loaded skill (`file` relative to the skill's directory, or a
    /// whole URI), checked against the list; its bytes. A file the list does not name is
    /// refused unread (unless the skill's files are `dynamic`).
    pub fn read_skill_file(&self, skill: &Skill, file: &str) -> Result<Vec<u8>, Error> {
        let uri = skill.file_uri(file);
        if uri == skill.uri {
            // SKILL.md itself: every check `load_skill` makes.
            return self.load_skill(skill).map(String::into_bytes);
        }
        self.read_checked(skill, &uri)
    }

    /// Reads `uri` (a file inside the skill's folder) and checks it against the skill's entry
    /// for it.
    fn read_checked(&self, skill: &Skill, uri: &str) -> Result<Vec<u8>, Error> {
        if !skill.holds(uri) {
            return Err(Error::Integrity {
                uri: uri.to_owned(),
                problem: "not a file inside the skill's folder".into(),
            });
        }
        let entry = match &skill.resources {
            None => None,
            Some(_) => Some(skill.file(uri).ok_or_else(|| Error::Integrity {
                uri: uri.to_owned(),
                problem: "the skill's list does not name this file".into(),
            })?),
        };
        let read = self.read_resource(uri)?;
        let bytes = contents_of(&read, uri)?;
        if let Some(entry) = entry {
            verify_file(entry, &bytes).map_err(|problem| Error::Integrity {
                uri: uri.to_owned(),
                problem,
            })?;
        }
        Ok(bytes)
    }
}

/// The bytes of `uri` in a `resources/read` result: its text, or its blob decoded.
fn contents_of(read: &ReadResourceResult, uri: &str) -> Result<Vec<u8>, Error> {
    let contents = read
        .contents
        .iter()
        .find(|c| c.uri == uri)
        .ok_or_else(|| Error::Protocol {
            message: format!("{} gave no contents for {uri}", methods::RESOURCES_READ),
        })?;
    if let Some(text) = &contents.text {
        return Ok(text.as_bytes().to_vec());
    }
    if let Some(blob) = &contents.blob {
        return base64::engine::general_purpose::STANDARD
            .decode(blob.trim())
            .map_err(|e| Error::Protocol {
                message: format!("{uri}: its blob is not base64: {e}"),
            });
    }
    Err(Error::Protocol {
        message: format!("{uri}: neither text nor blob"),
    })
}
