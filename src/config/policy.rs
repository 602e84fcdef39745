//! The administrator's policy: which servers may run at all, whatever user and project configs
//! say (they cannot widen it).
//!
//! A JSON file with `allowedMcpServers` and `deniedMcpServers` (Claude Code's managed-settings
//! names), each a list of rules:
//!
//! ```json
//! {"allowedMcpServers": [{"serverName": "github"},
//!                        {"serverCommand": ["npx", "-y", "@corp/mcp-server"]},
//!                        {"serverUrl": "https://*.corp.example/*"}],
//!  "deniedMcpServers": [{"serverName": "filesystem"}]}
//! ```
//!
//! - A server a `deniedMcpServers` rule matches never runs.
//! - With an `allowedMcpServers` list (even an empty one), only a server one of its rules
//!   matches runs.
//! - `serverName` is the configured name; `serverCommand` the exact program and arguments;
//!   `serverUrl` the URL as written, `*` matching any run of characters.
//! - `"requireSandbox": true` runs every stdio server in the sandbox (see the transport
//!   module's page), whatever its config says; with `"unsandboxedMcpServers"` (a list of rules,
//!   as above), every stdio server but those. A server whose config has no `sandbox` rules
//!   gets the strictest (write only its temporary directory, no network); one that has rules
//!   keeps them. Where the sandbox cannot be applied, such a server does not start.
//! - The file is the system-wide one (`/etc/mcp-runtime/policy.json`; on macOS
//!   `/Library/Application Support/mcp-runtime/policy.json`; on Windows
//!   `%ProgramData%\mcp-runtime\policy.json`), or the one a host names
//!   ([`DiscoveryOptions::policy_file`](super::DiscoveryOptions::policy_file)). No file: no
//!   policy. A file that exists but cannot be read or understood refuses every server, saying
//!   why (an administrator's restriction is never dropped silently).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::file::{read_text, ReadError, CONFIG_FILE_CAP};
use super::server::ServerConfig;

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    Name(String),
    Command(Vec<String>),
    Url(String),
}

impl Rule {
    fn parse(value: &Value) -> Result<Rule, String> {
        let (key, value) = value
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.iter().next())
            .ok_or_else(|| {
                "each rule is an object with one of serverName, serverCommand, serverUrl".to_owned()
            })?;
        match (key.as_str(), value) {
            ("serverName", Value::String(name)) => Ok(Rule::Name(name.clone())),
            ("serverUrl", Value::String(url)) => Ok(Rule::Url(url.clone())),
            ("serverCommand", Value::Array(words)) if !words.is_empty() => words
                .iter()
                .map(|w| w.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Rule::Command)
                .ok_or_else(|| "serverCommand is a list of strings".to_owned()),
            (other, _) => Err(format!("{other:?} is not a rule this policy knows")),
        }
    }

    fn matches(&self, name: &str, config: &ServerConfig) -> bool {
        match self {
            Rule::Name(n) => n == name,
            Rule::Command(words) => {
                config.command.as_deref() == Some(words[0].as_str())
                    && config.args.as_slice() == &words[1..]
            }
            Rule::Url(pattern) => config.url.as_deref().is_some_and(|u| glob(pattern, u)),
        }
    }

    /// The rule as a message names it (a URL pattern is the administrator's, not a secret).
    fn describe(&self) -> String {
        match self {
            Rule::Name(n) => format!("serverName {n:?}"),
            Rule::Command(words) => format!("serverCommand {words:?}"),
            Rule::Url(u) => format!("serverUrl {u:?}"),
        }
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The policy in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Policy {
    /// The file it came from (for messages).
    file: PathBuf,
    allowed: Option<Vec<Rule>>,
    denied: Vec<Rule>,
    /// `requireSandbox`: stdio servers run sandboxed...
    require_sandbox: bool,
    /// ...but for those these rules match (`unsandboxedMcpServers`).
    unsandboxed: Vec<Rule>,
    /// Why the file could not be used: every server is refused.
    broken: Option<String>,
}

/// Why the administrator's policy ([`DiscoveryOptions::policy_file`], else the system-wide
/// file) refuses the server `name`, or `None` when it lets it run. Discovery applies it to
/// every server it finds; this is for servers a host starts without discovery (a file the
/// user names, a config built in code).
///
/// [`DiscoveryOptions::policy_file`]: super::DiscoveryOptions::policy_file
pub fn policy_refusal(
    options: &super::DiscoveryOptions,
    name: &str,
    config: &ServerConfig,
) -> Option<String> {
    let file = (options.policy_file.clone()).unwrap_or_else(system_policy_file);
    Policy::load(&file)?.refusal(name, config)
}

/// Whether the administrator's policy makes the stdio server `name` run in the sandbox
/// (`requireSandbox`); discovery applies it, this is for servers a host starts without
/// discovery, which then set [`ServerConfig::sandbox_enabled`].
pub fn policy_requires_sandbox(
    options: &super::DiscoveryOptions,
    name: &str,
    config: &ServerConfig,
) -> bool {
    let file = (options.policy_file.clone()).unwrap_or_else(system_policy_file);
    Policy::load(&file).is_some_and(|p| p.requires_sandbox(name, config))
}

/// The system-wide policy file of this OS.
pub(crate) fn system_policy_file() -> PathBuf {
    if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/mcp-runtime/policy.json")
    } else if cfg!(windows) {
        let data = std::env::var_os("ProgramData").unwrap_or_else(|| r"C:\ProgramData".into());
        PathBuf::from(data).join("mcp-runtime").join("policy.json")
    } else {
        PathBuf::from("/etc/mcp-runtime/policy.json")
    }
}

impl Policy {
    /// The policy in `path`: none when the file does not exist.
    pub(crate) fn load(path: &Path) -> Option<Policy> {
        let text = match read_text(path, CONFIG_FILE_CAP) {
            Ok(text) => text,
            Err(ReadError::Missing) => return None,
            Err(ReadError::Bad(why)) => return Some(Policy::broken(path, why)),
        };
        Some(Policy::parse(path, &text).unwrap_or_else(|why| Policy::broken(path, why)))
    }

    fn broken(path: &Path, why: String) -> Policy {
        Policy {
            file: path.to_path_buf(),
            broken: Some(why),
            ..Policy::default()
        }
    }

    fn parse(path: &Path, text: &str) -> Result<Policy, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| format!("malformed JSON: {e}"))?;
        let root = root.as_object().ok_or("not a JSON object")?;
        let rules = |key: &str| -> Result<Option<Vec<Rule>>, String> {
            match root.get(key) {
                None => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(Rule::parse)
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
                    .map_err(|why| format!("{key}: {why}")),
                Some(_) => Err(format!("{key} is a list of rules")),
            }
        };
        Ok(Policy {
            file: path.to_path_buf(),
            allowed: rules("allowedMcpServers")?,
            denied: rules("deniedMcpServers")?.unwrap_or_default(),
            require_sandbox: match root.get("requireSandbox") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("requireSandbox is true or false".to_owned()),
            },
            unsandboxed: rules("unsandboxedMcpServers")?.unwrap_or_default(),
            broken: None,
        })
    }

    /// Whether the policy makes the stdio server `name` run in the sandbox.
    pub(crate) fn requires_sandbox(&self, name: &str, config: &ServerConfig) -> bool {
        self.require_sandbox
            && config.url.is_none()
            && !self.unsandboxed.iter().any(|r| r.matches(name, config))
    }

    /// Why the server `name` may not run, or `None` when the policy lets it.
    pub(crate) fn refusal(&self, name: &str, config: &ServerConfig) -> Option<String> {
        let file = self.file.display();
        if let Some(why) = &self.broken {
            return Some(format!(
                "the administrator's policy {file} cannot be used ({why}): no server runs"
            ));
        }
        if let Some(rule) = self.denied.iter().find(|r| r.matches(name, config)) {
            return Some(format!(
                "denied by the administrator's policy ({file}: {})",
                rule.describe()
            ));
        }
        match &self.allowed {
            Some(allowed) if !allowed.iter().any(|r| r.matches(name, config)) => Some(format!(
                "not allowed by the administrator's policy ({file}: no allowedMcpServers rule matches)"
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(v: Value) -> Policy {
        Policy::parse(Path::new("/etc/p.json"), &v.to_string()).unwrap()
    }

    fn server(v: Value) -> ServerConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_sandbox_is_required_of_stdio_servers_not_exempted() {
        let p = policy(json!({"requireSandbox": true,
                              "unsandboxedMcpServers": [{"serverName": "trusted"}]}));
        let stdio = server(json!({"command": "x"}));
        assert!(p.requires_sandbox("any", &stdio));
        assert!(!p.requires_sandbox("trusted", &stdio));
        assert!(!p.requires_sandbox("remote", &server(json!({"url": "https://x/"}))));
        assert!(!policy(json!({})).requires_sandbox("any", &stdio));
        assert!(Policy::parse(Path::new("/p"), r#"{"requireSandbox": "yes"}"#).is_err());
    }

    #[test]
    fn denied_wins_and_an_allow_list_allows_only_what_it_names() {
        let p = policy(json!({
            "allowedMcpServers": [{"serverName": "github"},
                                  {"serverCommand": ["npx", "-y", "@corp/srv"]},
                                  {"serverUrl": "https://*.corp.example/*"}],
            "deniedMcpServers": [{"serverName": "bad"}]
        }));
        let any = server(json!({"command": "x"}));
        assert_eq!(p.refusal("github", &any), None);
        assert!(p
            .refusal("other", &any)
            .unwrap()
            .contains("no allowedMcpServers rule"));
        let cmd = server(json!({"command": "npx", "args": ["-y", "@corp/srv"]}));
        assert_eq!(p.refusal("mine", &cmd), None);
        let more = server(json!({"command": "npx", "args": ["-y", "@corp/srv", "--x"]}));
        assert!(
            p.refusal("mine", &more).is_some(),
            "arguments match exactly"
        );
        let url = server(json!({"url": "https://mcp.corp.example/v1"}));
        assert_eq!(p.refusal("remote", &url), None);
        let evil = server(json!({"url": "https://corp.example.evil/v1"}));
        assert!(p.refusal("remote", &evil).is_some());
        let denied = p.refusal("bad", &any).unwrap();
        assert!(
            denied.contains("denied") && denied.contains("serverName \"bad\""),
            "{denied}"
        );
        // Denied even when an allow rule matches too.
        let both = policy(json!({"allowedMcpServers": [{"serverName": "x"}],
                                 "deniedMcpServers": [{"serverName": "x"}]}));
        assert!(both.refusal("x", &any).is_some());
        // An empty allow list allows nothing; no allow list allows what is not denied.
        assert!(policy(json!({"allowedMcpServers": []}))
            .refusal("x", &any)
            .is_some());
        assert_eq!(
            policy(json!({"deniedMcpServers": []})).refusal("x", &any),
            None
        );
    }

    #[test]
    fn a_policy_that_cannot_be_understood_refuses_everything() {
        for bad in [
            json!([]),
            json!({"allowedMcpServers": "github"}),
            json!({"deniedMcpServers": [{"serverNam": "x"}]}),
            json!({"deniedMcpServers": [{"serverCommand": []}]}),
            json!({"deniedMcpServers": [{"serverName": "a", "serverUrl": "b"}]}),
        ] {
            assert!(
                Policy::parse(Path::new("/p"), &bad.to_string()).is_err(),
                "{bad}"
            );
        }
        let dir = std::env::temp_dir().join(format!("mcp-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("policy.json");
        assert_eq!(Policy::load(&file), None, "no file: no policy");
        std::fs::write(&file, "{not json").unwrap();
        let broken = Policy::load(&file).unwrap();
        let why = broken
            .refusal("any", &server(json!({"command": "x"})))
            .unwrap();
        assert!(
            why.contains("cannot be used") && why.contains("no server runs"),
            "{why}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn url_patterns_match_runs_of_characters() {
        assert!(glob(
            "https://*.corp.example/*",
            "https://a.b.corp.example/mcp"
        ));
        assert!(glob("https://mcp.example/mcp", "https://mcp.example/mcp"));
        assert!(!glob("https://mcp.example/mcp", "https://mcp.example/mcp2"));
        assert!(glob("*", "anything"));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(!glob("a*b*c", "aXcYb"));
        assert!(!glob("ab*ba", "aba"), "the two ends may not overlap");
    }
}
