//! What an approval of a project server is an approval of, in words a person checks: the
//! program and its arguments, the names of the environment values and headers (never their
//! values), the URL (its query values and userinfo masked). An approval remembers these facts
//! (the secret parts as digests only), so a config that changed since says what changed.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::server::ServerConfig;
use crate::net::url::redact;

/// The facts of `config` an approval remembers: one entry per setting a person would check,
/// values that may be secrets as short digests, and one digest for every other setting.
pub(crate) fn facts(config: &ServerConfig) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = config.clone();
    if let Some(t) = rest.transport.take() {
        out.insert("type".into(), t);
    }
    if let Some(command) = rest.command.take() {
        out.insert("command".into(), command);
    }
    if !rest.args.is_empty() {
        out.insert("args".into(), shell_words(&std::mem::take(&mut rest.args)));
    }
    if let Some(cwd) = rest.cwd.take() {
        out.insert("cwd".into(), cwd);
    }
    for (name, value) in std::mem::take(&mut rest.env) {
        out.insert(format!("env {name}"), digest(&value));
    }
    if let Some(url) = rest.url.take() {
        let shown = redact(&url);
        if shown != url {
            out.insert("url secrets".into(), digest(&url));
        }
        out.insert("url".into(), shown);
    }
    for (name, value) in std::mem::take(&mut rest.headers) {
        out.insert(format!("header {name}"), digest(&value));
    }
    // The sandbox in words (its rules are no secret): a project file that loosens its own
    // sandbox says so when it asks again.
    if let Some(shown) = sandbox_shown(&rest) {
        out.insert("sandbox".into(), shown);
    }
    rest.sandbox_enabled = None;
    rest.sandbox = None;
    if rest != ServerConfig::default() {
        out.insert(
            "other settings".into(),
            digest(&serde_json::to_string(&rest).unwrap_or_default()),
        );
    }
    out
}

/// What a person approves, one line each: `command: ...`, `env: A, B (values not shown)`,
/// `url: ...`, `headers: ... (values not shown)`, `cwd: ...`.
pub fn approval_lines(config: &ServerConfig) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(command) = &config.command {
        let mut all = vec![command.clone()];
        all.extend(config.args.iter().cloned());
        lines.push(format!("command: {}", shell_words(&all)));
    }
    if let Some(cwd) = &config.cwd {
        lines.push(format!("cwd: {cwd}"));
    }
    if !config.env.is_empty() {
        let names: Vec<&str> = config.env.keys().map(String::as_str).collect();
        lines.push(format!("env: {} (values not shown)", names.join(", ")));
    }
    if let Some(url) = config.url_for_display() {
        let kind = config.transport.as_deref().unwrap_or("url");
        lines.push(format!("{kind}: {url}"));
    }
    if !config.headers.is_empty() {
        let names: Vec<&str> = config.headers.keys().map(String::as_str).collect();
        lines.push(format!("headers: {} (values not shown)", names.join(", ")));
    }
    if let Some(var) = &config.bearer_token_env_var {
        lines.push(format!("bearer token from: ${var}"));
    }
    if let Some(shown) = sandbox_shown(config) {
        lines.push(format!("sandbox: {shown}"));
    }
    lines
}

/// The sandbox settings as a person reads them: `on` and its rules as written, `off` when
/// rules are written but not enabled, `None` when there are neither.
fn sandbox_shown(config: &ServerConfig) -> Option<String> {
    let rules = config.sandbox.as_ref().map(|s| s.to_string());
    match (super::sandbox::enabled(config), rules) {
        (true, Some(rules)) => Some(format!("on {rules}")),
        (true, None) => Some("on (no writes but its temporary directory, no network)".into()),
        (false, Some(rules)) => Some(format!("off (rules written but not enabled: {rules})")),
        (false, None) => config.sandbox_enabled.map(|_| "off".to_owned()),
    }
}

/// What changed from the approved facts `old` to `new`, one line each (empty: nothing that
/// the facts show). Values that may be secrets are said to have changed, never shown.
pub(crate) fn changes(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Vec<String> {
    if old.is_empty() {
        return vec!["the approved config was not recorded".into()];
    }
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let hidden = key.starts_with("env ")
            || key.starts_with("header ")
            || key == "url secrets"
            || key == "other settings";
        let what = match key.as_str() {
            "url secrets" => "the URL's query or userinfo",
            "other settings" => "other settings",
            k => k,
        };
        match (old.get(key), new.get(key)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(_), Some(_)) if hidden => out.push(format!("{what}: changed")),
            (Some(a), Some(b)) => out.push(format!("{what}: {a} → {b}")),
            (None, Some(_)) if hidden => out.push(format!("{what}: added")),
            (None, Some(b)) => out.push(format!("{what}: added ({b})")),
            (Some(_), None) => out.push(format!("{what}: removed")),
            (None, None) => {}
        }
    }
    out
}

/// Words as a shell would need them quoted (for reading, not for running).
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A short digest of a value that may be a secret (enough to tell a change, not to recover it).
fn digest(value: &str) -> String {
    let d = Sha256::digest(value.as_bytes());
    let hex = crate::hex::hex(&d[..8]);
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> ServerConfig {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_lines_show_what_runs_and_the_names_of_secrets_never_their_values() {
        let c = config(serde_json::json!({
            "command": "npx", "args": ["-y", "@scope/server", "a b"],
            "env": {"API_KEY": "sk-secret", "MODE": "x"}
        }));
        let lines = approval_lines(&c);
        assert_eq!(
            lines,
            [
                "command: npx -y @scope/server 'a b'",
                "env: API_KEY, MODE (values not shown)"
            ]
        );
        let remote = config(serde_json::json!({
            "type": "http", "url": "https://u:p@h/mcp?key=s3cret",
            "headers": {"Authorization": "Bearer t0ken"}
        }));
        let lines = approval_lines(&remote).join("\n");
        assert!(!lines.contains("s3cret") && !lines.contains("t0ken") && !lines.contains("u:p"));
        assert!(
            lines.contains("http: https://h/mcp?key=REDACTED"),
            "{lines}"
        );
        let facts = format!("{:?}", facts(&remote));
        assert!(
            !facts.contains("s3cret") && !facts.contains("t0ken"),
            "{facts}"
        );
    }

    #[test]
    fn a_loosened_sandbox_is_shown_as_a_change_and_in_the_approval() {
        let strict = config(serde_json::json!({
            "command": "node", "sandboxEnabled": true,
            "sandbox": {"filesystem": {"denyRead": ["~/.ssh"]}}
        }));
        let loose = config(
            serde_json::json!({"command": "node", "sandboxEnabled": false,
            "sandbox": {"filesystem": {"denyRead": ["~/.ssh"]}}}),
        );
        assert_ne!(
            crate::config::config_hash(&strict),
            crate::config::config_hash(&loose)
        );
        let changed = changes(&facts(&strict), &facts(&loose));
        assert_eq!(changed.len(), 1, "{changed:?}");
        assert!(
            changed[0].starts_with("sandbox: on {") && changed[0].contains("→ off (rules"),
            "{changed:?}"
        );
        let lines = approval_lines(&strict);
        assert!(lines
            .iter()
            .any(|l| l.starts_with("sandbox: on") && l.contains("~/.ssh")));
        assert!(!facts(&strict).contains_key("other settings"));
    }

    #[test]
    fn changes_name_what_changed_and_hide_secret_values() {
        let old = facts(&config(serde_json::json!({
            "command": "node", "args": ["server.js"], "env": {"KEY": "a", "GONE": "1"},
            "timeout": 1000
        })));
        let new = facts(&config(serde_json::json!({
            "command": "node", "args": ["evil.js"], "env": {"KEY": "b", "NEW": "2"},
            "timeout": 2000
        })));
        assert_eq!(
            changes(&old, &new),
            [
                "args: server.js → evil.js",
                "env GONE: removed",
                "env KEY: changed",
                "env NEW: added",
                "other settings: changed"
            ]
        );
        assert!(changes(&new, &new).is_empty());
        assert_eq!(
            changes(&BTreeMap::new(), &new),
            ["the approved config was not recorded"]
        );
    }
}
