//! A bundle's `manifest.json` (MCPB manifest 0.1 to 0.4): read into typed values and checked
//! (every rule broken named), its `user_config` as questions, and its `mcp_config` with the
//! platform's override and the variables filled in (`${__dirname}`, `${user_config.KEY}`,
//! `${HOME}`, `${DESKTOP}`, `${DOCUMENTS}`, `${DOWNLOADS}`, `${pathSeparator}`, `${/}`), as the
//! format's own client fills them: one pass, an argument that is exactly a `multiple` value's
//! variable becoming one argument per value.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::install::{Asked, Question};

/// The manifest versions read.
const VERSIONS: &[&str] = &["0.1", "0.2", "0.3", "0.4"];

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Manifest {
    #[serde(default)]
    manifest_version: Option<String>,
    #[serde(default)]
    dxt_version: Option<String>,
    pub name: String,
    pub version: String,
    pub description: String,
    #[serde(default)]
    pub display_name: Option<String>,
    pub author: Author,
    pub server: Server,
    #[serde(default)]
    pub compatibility: Option<Compatibility>,
    #[serde(default)]
    pub user_config: BTreeMap<String, UserConfig>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Author {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Server {
    #[serde(rename = "type")]
    pub kind: String,
    pub entry_point: String,
    #[serde(default)]
    pub mcp_config: Option<McpConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct McpConfig {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub platform_overrides: BTreeMap<String, McpConfig>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Compatibility {
    #[serde(default)]
    pub platforms: Option<Vec<String>>,
    #[serde(default)]
    pub runtimes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct UserConfig {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub description: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub multiple: bool,
    #[serde(default)]
    pub sensitive: bool,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

/// The platform's name as manifests write it (Node's `process.platform`).
pub(crate) fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

impl Manifest {
    /// Reads and checks a manifest; every rule broken, named.
    pub(crate) fn parse(text: &str) -> Result<Manifest, String> {
        let manifest: Manifest =
            serde_json::from_str(text).map_err(|e| format!("manifest.json: {e}"))?;
        let mut problems = Vec::new();
        let version = manifest
            .manifest_version
            .as_deref()
            .or(manifest.dxt_version.as_deref());
        match version {
            Some(v) if VERSIONS.contains(&v) => {
                if let (Some(a), Some(b)) = (&manifest.manifest_version, &manifest.dxt_version) {
                    if a != b {
                        problems.push(format!("manifest_version {a} and dxt_version {b} disagree"));
                    }
                }
            }
            Some(v) => problems.push(format!(
                "manifest_version {v:?} is not one this reads ({})",
                VERSIONS.join(", ")
            )),
            None => problems.push("manifest_version is missing".into()),
        }
        let version = version.unwrap_or("0.1");
        if manifest.name.trim().is_empty() {
            problems.push("name is empty".into());
        }
        if manifest.version.trim().is_empty() {
            problems.push("version is empty".into());
        }
        let kinds: &[&str] = if version == "0.4" {
            &["node", "python", "binary", "uv"]
        } else {
            &["node", "python", "binary"]
        };
        if !kinds.contains(&manifest.server.kind.as_str()) {
            problems.push(format!(
                "server.type {:?} is not one of {} (manifest {version})",
                manifest.server.kind,
                kinds.join(", ")
            ));
        }
        match &manifest.server.mcp_config {
            None if manifest.server.kind != "uv" => {
                problems.push("server.mcp_config is missing".into())
            }
            Some(c) if c.command.as_deref().is_none_or(str::is_empty) => {
                problems.push("server.mcp_config.command is missing".into())
            }
            _ => {}
        }
        if manifest.server.entry_point.is_empty() {
            problems.push("server.entry_point is empty".into());
        }
        for (key, option) in &manifest.user_config {
            if !matches!(
                option.kind.as_str(),
                "string" | "number" | "boolean" | "directory" | "file"
            ) {
                problems.push(format!(
                    "user_config.{key}.type {:?} is not string, number, boolean, directory or file",
                    option.kind
                ));
            }
        }
        if let Some(platforms) = manifest
            .compatibility
            .as_ref()
            .and_then(|c| c.platforms.as_ref())
        {
            for p in platforms {
                if !matches!(p.as_str(), "darwin" | "win32" | "linux") {
                    problems.push(format!(
                        "compatibility.platforms has {p:?} (darwin, win32, linux)"
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(format!("manifest.json: {}", problems.join("; ")))
        }
    }

    /// What its `user_config` asks, in key order (`user_config:KEY`).
    pub(crate) fn questions(&self, home: &Path) -> Vec<Question> {
        (self.user_config.iter())
            .map(|(key, option)| Question {
                key: format!("user_config:{key}"),
                asked: Asked::UserConfig,
                name: key.clone(),
                description: Some(format!("{}: {}", option.title, option.description)),
                required: option.required,
                secret: option.sensitive,
                default: option
                    .default
                    .as_ref()
                    .map(|d| fill_system(&text_of(d), home)),
                placeholder: None,
                choices: Vec::new(),
                format: match option.kind.as_str() {
                    "file" => "filepath".to_owned(),
                    other => other.to_owned(),
                },
                repeated: option.multiple,
            })
            .collect()
    }

    /// The values of its `user_config` from `answers` (by key, without the `user_config:`
    /// prefix; a `multiple` one's lines are its values), defaults where unanswered, each
    /// checked; or every problem.
    pub(crate) fn values(
        &self,
        answers: &BTreeMap<String, String>,
        home: &Path,
    ) -> Result<BTreeMap<String, Vec<String>>, Vec<String>> {
        let mut values = BTreeMap::new();
        let mut problems = Vec::new();
        for q in self.questions(home) {
            let option = &self.user_config[&q.name];
            let given = answers.get(&q.key).filter(|a| !a.is_empty()).cloned();
            let answered = given.is_some();
            let Some(text) = given.or(q.default.clone()) else {
                if q.required {
                    problems.push(format!("{} ({}) is required", q.key, option.title));
                }
                continue;
            };
            // A default is the author's text: it must not make the config run a command or
            // read the user's environment (the user's own answer may do either).
            if !answered {
                if let Some(why) = publisher_problem(&text) {
                    problems.push(format!("the default of {} {why}", q.key));
                    continue;
                }
            }
            let list: Vec<String> = if option.multiple {
                text.lines()
                    .map(str::to_owned)
                    .filter(|l| !l.is_empty())
                    .collect()
            } else {
                vec![text]
            };
            // A secret's value is never repeated in a message.
            let shown = |value: &str| match option.sensitive {
                true => "(hidden)".to_owned(),
                false => format!("{value:?}"),
            };
            for value in &list {
                if value.starts_with("${") || value.starts_with('!') {
                    continue;
                }
                match option.kind.as_str() {
                    "number" => match value.parse::<f64>() {
                        Ok(n) if option.min.is_some_and(|m| n < m) => problems.push(format!(
                            "{}: {} is below {}",
                            q.key,
                            shown(value),
                            option.min.unwrap_or_default()
                        )),
                        Ok(n) if option.max.is_some_and(|m| n > m) => problems.push(format!(
                            "{}: {} is above {}",
                            q.key,
                            shown(value),
                            option.max.unwrap_or_default()
                        )),
                        Ok(_) => {}
                        Err(_) => {
                            problems.push(format!("{}: {} is not a number", q.key, shown(value)))
                        }
                    },
                    "boolean" if !matches!(value.as_str(), "true" | "false") => {
                        problems.push(format!("{}: {} is not true or false", q.key, shown(value)))
                    }
                    _ => {}
                }
            }
            if list.is_empty() && q.required {
                problems.push(format!("{} ({}) is required", q.key, option.title));
            }
            values.insert(q.name.clone(), list);
        }
        if problems.is_empty() {
            Ok(values)
        } else {
            Err(problems)
        }
    }

    /// What runs it from `dir`, with `values` (from [`Manifest::values`]) and the platform's
    /// override applied; or every problem: the manifest's own text may not make the config
    /// run a command (an environment value `!...`), read the user's environment (a `${NAME}`
    /// that is none of its variables, or an environment value that is the name of one of the
    /// user's environment variables, which a config reads as that variable) or leave a
    /// variable unfilled.
    pub(crate) fn command(
        &self,
        dir: &Path,
        values: &BTreeMap<String, Vec<String>>,
        home: &Path,
    ) -> Result<Filled, Vec<String>> {
        let base = self.server.mcp_config.clone().unwrap_or_else(|| McpConfig {
            // A uv server without an mcp_config: uv runs its entry point in its project.
            command: Some("uv".into()),
            args: Some(vec![
                "run".into(),
                "--directory".into(),
                "${__dirname}".into(),
                self.server.entry_point.clone(),
            ]),
            ..McpConfig::default()
        });
        // An override replaces what it names (no merge), as the format's client does.
        let chosen = base.platform_overrides.get(platform());
        let command = (chosen.and_then(|c| c.command.clone()))
            .filter(|c| !c.is_empty())
            .or_else(|| base.command.clone())
            .unwrap_or_default();
        let args = (chosen.and_then(|c| c.args.clone()))
            .or_else(|| base.args.clone())
            .unwrap_or_default();
        let env = (chosen.and_then(|c| c.env.clone()))
            .or_else(|| base.env.clone())
            .unwrap_or_default();

        let separator = std::path::MAIN_SEPARATOR.to_string();
        let mut vars: Vec<(String, Vec<String>)> = vec![
            ("__dirname".into(), vec![dir.display().to_string()]),
            ("pathSeparator".into(), vec![separator.clone()]),
            ("/".into(), vec![separator]),
        ];
        for (name, path) in system_dirs(home) {
            vars.push((name.to_owned(), vec![path]));
        }
        for (key, list) in values {
            vars.push((format!("user_config.{key}"), list.clone()));
        }
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        // The author's text, with every variable's value left out: what remains is theirs.
        let theirs = |template: &str| {
            let blanks: Vec<(String, Vec<String>)> =
                vars.iter().map(|(n, _)| (n.clone(), Vec::new())).collect();
            fill(template, &blanks)
        };
        let unknown = |template: &str, what: &str| {
            theirs(template).contains("${").then(|| {
                format!(
                    "{what} uses a ${{...}} that is none of its variables (it would be read from \
                     the user's environment)"
                )
            })
        };
        problems.extend(unknown(&command, "server.mcp_config.command"));
        for arg in &args {
            problems.extend(unknown(arg, "server.mcp_config.args"));
        }
        for (key, template) in &env {
            problems.extend(unknown(template, &format!("server.mcp_config.env.{key}")));
            if template.starts_with('!') {
                problems.push(format!(
                    "server.mcp_config.env.{key} is a command (!...), which would run on this \
                     machine"
                ));
            } else if !template.contains("${") && std::env::var_os(template).is_some() {
                problems.push(format!(
                    "server.mcp_config.env.{key} is the name of one of your environment \
                     variables, which a config reads as its value"
                ));
            }
        }
        // A secret on the command line is shown there and seen by other processes.
        for (key, option) in &self.user_config {
            let variable = format!("${{user_config.{key}}}");
            if option.sensitive && args.iter().chain([&command]).any(|a| a.contains(&variable)) {
                warnings.push(format!(
                    "the secret user_config:{key} goes on the server's command line, which \
                     this display and other processes on this machine show"
                ));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let fill = |text: &str| fill(text, &vars);
        let mut out_args = Vec::new();
        for arg in &args {
            // An argument that is exactly a setting's variable is its values, one argument
            // each (none for an empty list).
            let whole = (arg.strip_prefix("${").and_then(|a| a.strip_suffix('}')))
                .and_then(|name| vars.iter().find(|(n, _)| n == name))
                .filter(|(n, _)| n.starts_with("user_config."));
            match whole {
                Some((_, list)) => out_args.extend(list.iter().cloned()),
                None => out_args.push(fill(arg)),
            }
        }
        let env = env.iter().map(|(k, v)| (k.clone(), fill(v))).collect();
        Ok(Filled {
            command: fill(&command),
            args: out_args,
            env,
            warnings,
        })
    }
}

/// What runs a bundle.
#[derive(Debug)]
pub(crate) struct Filled {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// What to tell the user before they approve it.
    pub warnings: Vec<String>,
}

/// Why an author's value may not go into a config as it is: a command (`!...`), or a
/// `${NAME}` (read from the user's environment when the config is read).
fn publisher_problem(text: &str) -> Option<&'static str> {
    if text.starts_with('!') {
        Some("is a command (!...), which would run on this machine")
    } else if text.contains("${") {
        Some("reads the user's environment (${...})")
    } else {
        None
    }
}

/// A default's text (a list's items one per line).
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    }
}

/// The user's folders a manifest names.
fn system_dirs(home: &Path) -> [(&'static str, String); 4] {
    let at = |sub: &str| home.join(sub).display().to_string();
    [
        ("HOME", home.display().to_string()),
        ("DESKTOP", at("Desktop")),
        ("DOCUMENTS", at("Documents")),
        ("DOWNLOADS", at("Downloads")),
    ]
}

/// A default with the user's folders filled in.
fn fill_system(text: &str, home: &Path) -> String {
    let vars: Vec<(String, Vec<String>)> = system_dirs(home)
        .into_iter()
        .map(|(n, p)| (n.to_owned(), vec![p]))
        .collect();
    fill(text, &vars)
}

/// `${NAME}` replaced by its value, in one pass from the left (a value is never filled
/// again); a list inside a longer text is its items joined by spaces; an unknown name stays.
fn fill(text: &str, vars: &[(String, Vec<String>)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                match vars.iter().find(|(n, _)| n == name) {
                    Some((_, values)) => out.push_str(&values.join(" ")),
                    None => out.push_str(&rest[start..start + 3 + end]),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
