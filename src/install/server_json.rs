//! `server.json`, the MCP Registry's description of a server (schema `2025-12-11`,
//! [`SCHEMA`]): the document as typed values, and the schema's rules checked on it.
//!
//! Unknown members are accepted everywhere, as the schema accepts them (a newer publisher's
//! extra fields do not make an entry unreadable); what the schema constrains is checked by
//! [`ServerDetail::check`], which names every rule broken, not only the first.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The schema followed: the MCP Registry's `server.json` of 2025-12-11.
pub const SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

/// A server: what it is, and the packages and remote endpoints that provide it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerDetail {
    /// The reverse-DNS name, `namespace/name` (`io.github.user/weather`).
    pub name: String,
    pub description: String,
    pub version: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub packages: Vec<Package>,
    #[serde(default)]
    pub remotes: Vec<Remote>,
}

/// A package that runs the server locally (npm, PyPI, NuGet, OCI, an MCP bundle, ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Package {
    pub registry_type: String,
    /// The package's name, an image reference (OCI) or a download URL (a bundle).
    pub identifier: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub file_sha256: Option<String>,
    #[serde(default)]
    pub runtime_hint: Option<String>,
    pub transport: Transport,
    #[serde(default)]
    pub runtime_arguments: Vec<Argument>,
    #[serde(default)]
    pub package_arguments: Vec<Argument>,
    #[serde(default)]
    pub environment_variables: Vec<KeyValueInput>,
}

/// How a package's server is spoken to: `stdio`, or a URL it serves (`streamable-http`, `sse`).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Transport {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: Vec<KeyValueInput>,
}

/// A server reachable at a URL, with the variables its URL template names.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Remote {
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    #[serde(default)]
    pub headers: Vec<KeyValueInput>,
    #[serde(default)]
    pub variables: BTreeMap<String, Input>,
}

/// A value the user may have to give: fixed (`value`, with `{variable}`s of its own), or asked
/// (with a description, a default, choices).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Input {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub is_required: bool,
    /// `string` (the default), `number`, `boolean` or `filepath`.
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub is_secret: bool,
    #[serde(default)]
    pub default: Option<String>,
    #[serde(default)]
    pub placeholder: Option<String>,
    #[serde(default)]
    pub choices: Vec<String>,
    /// What `{name}` in `value` stands for.
    #[serde(default)]
    pub variables: BTreeMap<String, Input>,
}

/// An environment variable or a header: a name and its input.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct KeyValueInput {
    pub name: String,
    #[serde(flatten)]
    pub input: Input,
}

/// A command-line argument: `positional` (a value) or `named` (`--flag` and a value).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Argument {
    #[serde(rename = "type")]
    pub kind: String,
    /// A named argument's flag, dashes included.
    #[serde(default)]
    pub name: Option<String>,
    /// A positional argument's label (never on the command line).
    #[serde(default)]
    pub value_hint: Option<String>,
    #[serde(default)]
    pub is_repeated: bool,
    #[serde(flatten)]
    pub input: Input,
}

/// The formats an input may declare.
const FORMATS: [&str; 4] = ["string", "number", "boolean", "filepath"];

impl ServerDetail {
    /// Reads a `server.json` document: its shape, then its rules ([`ServerDetail::check`]).
    pub(crate) fn parse(text: &str) -> Result<ServerDetail, String> {
        let detail: ServerDetail =
            serde_json::from_str(text).map_err(|e| format!("not a server.json: {e}"))?;
        detail.checked()
    }

    /// `self` when it keeps the schema's rules; else every rule it breaks, in one text.
    pub(crate) fn checked(self) -> Result<ServerDetail, String> {
        let broken = self.check();
        if broken.is_empty() {
            Ok(self)
        } else {
            Err(broken.join("; "))
        }
    }

    /// The schema's rules this document breaks, each in words (empty when it keeps them all).
    pub(crate) fn check(&self) -> Vec<String> {
        let mut broken = Vec::new();
        if !is_server_name(&self.name) {
            broken.push(format!(
                "name {:?} is not namespace/name (3 to 200 letters, digits, '.', '-' and, after \
                 the one '/', '_')",
                self.name
            ));
        }
        length(&mut broken, "description", &self.description, 1, 100);
        length(&mut broken, "version", &self.version, 0, 255);
        if let Some(title) = &self.title {
            length(&mut broken, "title", title, 1, 100);
        }
        for (i, p) in self.packages.iter().enumerate() {
            p.check(&format!("packages[{i}]"), &mut broken);
        }
        for (i, r) in self.remotes.iter().enumerate() {
            let at = format!("remotes[{i}]");
            if !matches!(r.kind.as_str(), "streamable-http" | "sse") {
                broken.push(format!(
                    "{at}.type {:?} is neither streamable-http nor sse",
                    r.kind
                ));
            }
            url_rule(&mut broken, &at, &r.url);
            inputs(&mut broken, &at, "headers", &r.headers);
            for (name, v) in &r.variables {
                v.check(&format!("{at}.variables.{name}"), &mut broken);
            }
        }
        broken
    }
}

impl Package {
    fn check(&self, at: &str, broken: &mut Vec<String>) {
        if self.registry_type.is_empty() {
            broken.push(format!("{at}.registryType is empty"));
        }
        if self.identifier.is_empty() {
            broken.push(format!("{at}.identifier is empty"));
        }
        match self.version.as_deref() {
            Some("") => broken.push(format!("{at}.version is empty")),
            Some("latest") => broken.push(format!(
                "{at}.version is \"latest\": a package names the version it is"
            )),
            _ => {}
        }
        if let Some(sha) = &self.file_sha256 {
            if sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                broken.push(format!(
                    "{at}.fileSha256 is not 64 lowercase hexadecimal digits"
                ));
            }
        }
        match self.transport.kind.as_str() {
            "stdio" => {}
            "streamable-http" | "sse" => match &self.transport.url {
                Some(url) => url_rule(broken, &format!("{at}.transport"), url),
                None => broken.push(format!("{at}.transport has no url")),
            },
            other => broken.push(format!(
                "{at}.transport.type {other:?} is not stdio, streamable-http or sse"
            )),
        }
        inputs(
            broken,
            &format!("{at}.transport"),
            "headers",
            &self.transport.headers,
        );
        for (list, arguments) in [
            ("runtimeArguments", &self.runtime_arguments),
            ("packageArguments", &self.package_arguments),
        ] {
            for (i, a) in arguments.iter().enumerate() {
                a.check(&format!("{at}.{list}[{i}]"), broken);
            }
        }
        inputs(
            broken,
            at,
            "environmentVariables",
            &self.environment_variables,
        );
    }
}

impl Argument {
    fn check(&self, at: &str, broken: &mut Vec<String>) {
        match self.kind.as_str() {
            "positional" => {
                if self.value_hint.is_none() && self.input.value.is_none() {
                    broken.push(format!(
                        "{at} is a positional argument with neither valueHint nor value"
                    ));
                }
            }
            "named" => {
                if self.name.as_deref().is_none_or(str::is_empty) {
                    broken.push(format!("{at} is a named argument without a name"));
                }
            }
            other => broken.push(format!(
                "{at}.type {other:?} is neither positional nor named"
            )),
        }
        self.input.check(at, broken);
    }
}

impl Input {
    fn check(&self, at: &str, broken: &mut Vec<String>) {
        if let Some(format) = &self.format {
            if !FORMATS.contains(&format.as_str()) {
                broken.push(format!(
                    "{at}.format {format:?} is not one of {}",
                    FORMATS.join(", ")
                ));
            }
        }
        for (name, v) in &self.variables {
            v.check(&format!("{at}.variables.{name}"), broken);
        }
    }
}

/// Each entry of a list of named inputs (environment variables, headers).
fn inputs(broken: &mut Vec<String>, at: &str, list: &str, entries: &[KeyValueInput]) {
    for (i, kv) in entries.iter().enumerate() {
        let at = format!("{at}.{list}[{i}]");
        if kv.name.is_empty() {
            broken.push(format!("{at} has an empty name"));
        }
        kv.input.check(&at, broken);
    }
}

/// A length rule, counted in characters as JSON Schema counts them.
fn length(broken: &mut Vec<String>, what: &str, text: &str, min: usize, max: usize) {
    let n = text.chars().count();
    if n < min || n > max {
        broken.push(format!(
            "{what} is {n} characters long (from {min} to {max} allowed)"
        ));
    }
}

/// `^https?://[^\s]+$`: a URL template (its `{variables}` still in it).
fn url_rule(broken: &mut Vec<String>, at: &str, url: &str) {
    if !is_http_url(url) {
        broken.push(format!("{at}.url is not an http or https URL"));
    }
}

/// `^https?://[^\s]+$`.
pub(crate) fn is_http_url(url: &str) -> bool {
    url.strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .is_some_and(|r| !r.is_empty() && !r.contains(char::is_whitespace))
}

/// `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`, 3 to 200 characters.
fn is_server_name(name: &str) -> bool {
    let Some((namespace, own)) = name.split_once('/') else {
        return false;
    };
    (3..=200).contains(&name.len())
        && !namespace.is_empty()
        && !own.is_empty()
        && namespace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && own
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
