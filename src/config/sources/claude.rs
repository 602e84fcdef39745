//! Claude Code, read the way Claude Code reads it.
//!
//! Scopes, highest precedence first (Claude Code's documented order: local > project > user):
//! 1. **local**: `projects[<cwd>].mcpServers` in `~/.claude.json` (written by the user for this
//!    project, so user-level);
//! 2. **project**: `<cwd>/.mcp.json` (comes with the repository: project-level);
//! 3. **user**: the top-level `mcpServers` of `~/.claude.json`.
//!
//! When the managed `managed-mcp.json` exists (`/etc/claude-code/managed-mcp.json` on Linux,
//! `/Library/Application Support/ClaudeCode/managed-mcp.json` on macOS,
//! `C:\Program Files\ClaudeCode\managed-mcp.json` on Windows), it takes exclusive control, as in
//! Claude Code: its servers are the only ones this source yields.
//!
//! Claude Code's own approval of `.mcp.json` servers is honoured: `enabledMcpjsonServers`,
//! `disabledMcpjsonServers` and `enableAllProjectMcpServers`, from the project's entry in
//! `~/.claude.json` (where Claude Code records the answers to its dialog),
//! `~/.claude/settings.json`, `<cwd>/.claude/settings.json` and
//! `<cwd>/.claude/settings.local.json`. A rejection counts from any of them; an approval only
//! from the two files in the user's home: a repository can ship its own `.claude/settings*.json`,
//! and a file a project brings cannot approve that project's servers. `disabledMcpServers` in the
//! project's entry turns servers of every scope off.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;

use super::{load_json_servers, read_json, read_json_capped, servers_at, standard_entry};
use crate::config::file::CLAUDE_STATE_CAP;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput, ToolVerdict};

/// Claude Code's config files.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClaudeCode {
    /// The managed `managed-mcp.json` (default: the system path of this OS; tests set it).
    pub(crate) managed_file: Option<PathBuf>,
}

impl ClaudeCode {
    /// The system path of `managed-mcp.json` on this OS.
    pub(crate) fn default_managed_file() -> PathBuf {
        if cfg!(target_os = "macos") {
            PathBuf::from("/Library/Application Support/ClaudeCode/managed-mcp.json")
        } else if cfg!(windows) {
            PathBuf::from(r"C:\Program Files\ClaudeCode\managed-mcp.json")
        } else {
            PathBuf::from("/etc/claude-code/managed-mcp.json")
        }
    }
}

/// Claude Code's approval state for the project's `.mcp.json` servers.
#[derive(Debug, Default)]
struct Approvals {
    /// Name → where it was approved.
    enabled: Vec<(String, String)>,
    /// Name → where it was rejected.
    disabled: Vec<(String, String)>,
    /// Where `enableAllProjectMcpServers: true` was set, if anywhere trusted.
    all: Option<String>,
    /// `disabledMcpServers` of the project entry.
    off: HashSet<String>,
}

impl Approvals {
    fn read(&mut self, root: &Value, at: &str, may_approve: bool) {
        let names = |key: &str| -> Vec<String> {
            crate::config::jsonc::strings(root.get(key)).unwrap_or_default()
        };
        for name in names("disabledMcpjsonServers") {
            self.disabled
                .push((name, format!("disabledMcpjsonServers in {at}")));
        }
        if may_approve {
            for name in names("enabledMcpjsonServers") {
                self.enabled
                    .push((name, format!("enabledMcpjsonServers in {at}")));
            }
            if root.get("enableAllProjectMcpServers") == Some(&Value::Bool(true))
                && self.all.is_none()
            {
                self.all = Some(format!("enableAllProjectMcpServers in {at}"));
            }
        }
    }

    fn verdict(&self, name: &str) -> ToolVerdict {
        if let Some((_, at)) = self.disabled.iter().find(|(n, _)| n == name) {
            return ToolVerdict::Rejected(format!("rejected in Claude Code: {at}"));
        }
        if let Some((_, at)) = self.enabled.iter().find(|(n, _)| n == name) {
            return ToolVerdict::Approved(format!("approved in Claude Code: {at}"));
        }
        match &self.all {
            Some(at) => ToolVerdict::Approved(format!("approved in Claude Code: {at}")),
            None => ToolVerdict::None,
        }
    }
}

impl ConfigSource for ClaudeCode {
    fn id(&self) -> &str {
        "claude"
    }

    fn display_name(&self) -> &str {
        "Claude Code"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let managed = self
            .managed_file
            .clone()
            .unwrap_or_else(ClaudeCode::default_managed_file);
        if managed.exists() {
            load_json_servers(
                &mut out,
                &managed,
                Level::User,
                &["mcpServers"],
                &standard_entry,
            );
            return out;
        }
        let state = ctx.home.join(".claude.json");
        // Also Claude Code's state file: tens of MiB for real users, hence its larger cap.
        let root = read_json_capped(&mut out, &state, CLAUDE_STATE_CAP);
        let mut approvals = Approvals::default();
        let mut project_entry: Option<(&Value, String)> = None;
        if let Some(root) = &root {
            // The project key is the absolute path as Claude Code saw it.
            let mut keys = vec![ctx.cwd.to_string_lossy().into_owned()];
            if let Ok(canonical) = ctx.cwd.canonicalize() {
                keys.push(canonical.to_string_lossy().into_owned());
            }
            keys.dedup();
            project_entry = keys
                .iter()
                .find_map(|k| Some((root.get("projects")?.get(k)?, k.clone())));
        }
        if let Some((entry, key)) = &project_entry {
            approvals.read(entry, &format!("~/.claude.json projects[{key}]"), true);
            if let Some(off) = entry.get("disabledMcpServers").and_then(Value::as_array) {
                approvals.off = off
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
            }
        }
        let settings: [(PathBuf, bool); 3] = [
            (ctx.home.join(".claude").join("settings.json"), true),
            (ctx.cwd.join(".claude").join("settings.local.json"), false),
            (ctx.cwd.join(".claude").join("settings.json"), false),
        ];
        for (path, may_approve) in &settings {
            if let Some(v) = read_json(&mut out, path) {
                approvals.read(&v, &path.display().to_string(), *may_approve);
            }
        }
        let first = out.servers.len();
        if let Some((entry, _)) = &project_entry {
            servers_at(
                &mut out,
                entry,
                &state,
                Level::User,
                &["mcpServers"],
                &standard_entry,
            );
        }
        let local_end = out.servers.len();
        load_json_servers(
            &mut out,
            &ctx.cwd.join(".mcp.json"),
            Level::Project,
            &["mcpServers"],
            &standard_entry,
        );
        for server in &mut out.servers[local_end..] {
            server.verdict = approvals.verdict(&server.name);
        }
        if let Some(root) = &root {
            servers_at(
                &mut out,
                root,
                &state,
                Level::User,
                &["mcpServers"],
                &standard_entry,
            );
        }
        for server in &mut out.servers[first..] {
            if approvals.off.contains(&server.name) {
                server.verdict = ToolVerdict::Disabled(
                    "disabled in Claude Code (disabledMcpServers in ~/.claude.json)".into(),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::config::{load_all_mcp_configs, DiscoveryOptions, LoadedConfigs, ProjectTrust};

    /// A project and a home under a fresh directory, with fixture files placed in them.
    struct Fixture(PathBuf);

    impl Fixture {
        fn new(name: &str) -> Fixture {
            let root =
                std::env::temp_dir().join(format!("mcp-claude-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(root.join("home")).unwrap();
            std::fs::create_dir_all(root.join("project")).unwrap();
            Fixture(root)
        }
        /// Copies `tests/fixtures/claude-code/<fixture>` to `to`.
        fn place(&self, fixture: &str, to: &Path) {
            let from = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/claude-code")
                .join(fixture);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
        fn load(&self, source: ClaudeCode) -> LoadedConfigs {
            let options = DiscoveryOptions {
                home: Some(self.0.join("home")),
                project_trust: ProjectTrust::TrustAll,
                sources: Some(vec![Arc::new(source)]),
                ..DiscoveryOptions::default()
            };
            let loaded = load_all_mcp_configs(&self.0.join("project"), &options);
            assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
            loaded
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_project_mcp_json_expands_its_own_syntax() {
        let f = Fixture::new("project");
        f.place(".mcp.json", &f.0.join("project/.mcp.json"));
        // The docs' variable names, set only by this test.
        std::env::set_var("CLAUDE_UNIT_API_KEY", "k-docs");
        let text = std::fs::read_to_string(f.0.join("project/.mcp.json"))
            .unwrap()
            .replace("${API_KEY}", "${CLAUDE_UNIT_API_KEY}")
            .replace("${API_BASE_URL", "${CLAUDE_UNIT_API_BASE_URL");
        std::fs::write(f.0.join("project/.mcp.json"), text).unwrap();
        let loaded = f.load(ClaudeCode {
            managed_file: Some(f.0.join("no-managed-file")),
        });
        let c = &loaded.configs;
        assert_eq!(
            c["shared-server"].command.as_deref(),
            Some("/path/to/server")
        );
        assert_eq!(loaded.sources["shared-server"].level, Level::Project);
        let api = &c["api-server"];
        assert_eq!(api.transport.as_deref(), Some("http"));
        assert_eq!(api.url.as_deref(), Some("https://api.example.com/mcp"));
        assert_eq!(
            api.headers.get("Authorization").map(String::as_str),
            Some("Bearer k-docs")
        );
    }

    #[test]
    fn a_managed_mcp_json_takes_exclusive_control() {
        let f = Fixture::new("managed");
        f.place(".mcp.json", &f.0.join("project/.mcp.json"));
        let managed = f.0.join("etc/claude-code/managed-mcp.json");
        f.place("managed-mcp.json", &managed);
        let loaded = f.load(ClaudeCode {
            managed_file: Some(managed.clone()),
        });
        let names: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
        assert_eq!(names, ["company-internal", "github", "sentry"]);
        let internal = &loaded.configs["company-internal"];
        assert_eq!(internal.args, ["--config", "/etc/company/mcp-config.json"]);
        assert_eq!(
            internal.env.get("COMPANY_API_URL").map(String::as_str),
            Some("https://internal.company.com")
        );
        assert_eq!(loaded.sources["github"].level, Level::User);
        assert_eq!(loaded.sources["github"].path, managed);
        assert_eq!(
            ClaudeCode::default_managed_file(),
            if cfg!(target_os = "macos") {
                PathBuf::from("/Library/Application Support/ClaudeCode/managed-mcp.json")
            } else if cfg!(windows) {
                PathBuf::from(r"C:\Program Files\ClaudeCode\managed-mcp.json")
            } else {
                PathBuf::from("/etc/claude-code/managed-mcp.json")
            }
        );
    }
}
