//! Discovery over a fixture home and project holding every source's real file shape.

mod common;

use std::path::Path;
use std::sync::Arc;

use mcp_runtime::auth::{AuthStorage, Credential};
use mcp_runtime::config::{
    load_all_mcp_configs, resolve_server_config, ConfigSource, DiscoveryContext, DiscoveryOptions,
    FileAuthStorage, Level, ServerConfig, SourceOutput,
};
use serde_json::{json, Map};

use common::fixture::Fixture;

/// One server named `shared` in every source, plus one unique server per source.
fn every_source(f: &Fixture) {
    let project = f.project();
    f.write(
        "project/.mcp-runtime/mcp.json",
        r#"{"mcpServers": {"shared": {"command": "own-project"}, "own-p": {"command": "a"}}}"#,
    );
    f.write(
        "home/.mcp-runtime/mcp.json",
        r#"{"mcpServers": {"shared": {"command": "own-user"}, "own-u": {"command": "a"}}}"#,
    );
    f.write(
        "home/.claude.json",
        &json!({
            "numStartups": 12,
            "mcpServers": {"shared": {"command": "claude-user"}, "claude-u": {"type": "stdio", "command": "a"}},
            "projects": {project.to_string_lossy(): {"mcpServers": {"claude-local": {"command": "a"}}, "allowedTools": []}}
        })
        .to_string(),
    );
    f.write(
        "home/.codex/config.toml",
        r#"
model = "o4"
[mcp_servers.shared]
command = "codex"
[mcp_servers.codex-u]
command = "npx"
args = ["-y", "server"]
env = { "K" = "v" }
startup_timeout_sec = 20
tool_timeout_sec = 90.5
enabled_tools = ["a"]
disabled_tools = ["b"]
[mcp_servers.codex-http]
url = "http://127.0.0.1:1/mcp"
http_headers = { "X-Static" = "s" }
"#,
    );
    f.write(
        "home/.gemini/settings.json",
        r#"{"theme": "dark", "mcpServers": {"shared": {"command": "gemini"},
            "gemini-http": {"httpUrl": "http://127.0.0.1:1/mcp", "timeout": 5000, "includeTools": ["x"], "excludeTools": ["y"]},
            "gemini-sse": {"url": "http://127.0.0.1:1/sse", "cwd": "sub", "trust": true}}}"#,
    );
    f.write(
        "home/.cursor/mcp.json",
        r#"{"mcpServers": {"shared": {"command": "cursor"}, "cursor-u": {"command": "a"}}}"#,
    );
    f.write(
        "project/.cursor/mcp.json",
        r#"{"mcpServers": {"cursor-p": {"command": "a"}}}"#,
    );
    f.write(
        "home/.codeium/windsurf/mcp_config.json",
        r#"{"mcpServers": {"shared": {"command": "windsurf"}, "windsurf-remote": {"serverUrl": "http://127.0.0.1:1/mcp"}}}"#,
    );
    f.write(
        "project/.vscode/mcp.json",
        r#"{
            // VS Code's real shape: top-level "servers", "type", "inputs"
            "inputs": [{"type": "promptString", "id": "api-key", "description": "Key", "password": true}],
            "servers": {
                "shared": {"type": "stdio", "command": "vscode"},
                "vscode-stdio": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/server.js"]},
                "vscode-needs-input": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:api-key}"}},
            }
        }"#,
    );
    f.write(
        "project/mcp.json",
        r#"{"mcpServers": {"shared": {"command": "mcp-json"}, "plain": {"command": "a"}}}"#,
    );
    f.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"dot-plain": {"command": "a"}, "claude-p": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#,
    );
}

#[cfg(all(feature = "yaml", feature = "toml"))]
#[test]
fn every_source_is_read_with_its_real_shape() {
    let f = Fixture::new("all");
    every_source(&f);
    let loaded = f.load();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let names: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
    for expected in [
        "own-p",
        "own-u",
        "claude-local",
        "claude-p",
        "claude-u",
        "codex-u",
        "codex-http",
        "gemini-http",
        "gemini-sse",
        "cursor-u",
        "cursor-p",
        "windsurf-remote",
        "vscode-stdio",
        "plain",
        "dot-plain",
        "shared",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let c = &loaded.configs;
    assert_eq!(c["codex-u"].args, ["-y", "server"]);
    assert_eq!(c["codex-u"].env.get("K").map(String::as_str), Some("v"));
    assert_eq!(c["codex-u"].timeout_ms, Some(20_000));
    assert_eq!(c["codex-u"].tool_timeout_ms, Some(90_500));
    assert_eq!(c["codex-u"].enabled_tools, Some(vec!["a".to_owned()]));
    assert_eq!(c["codex-u"].disabled_tools, Some(vec!["b".to_owned()]));
    assert_eq!(c["codex-http"].transport.as_deref(), Some("http"));
    assert_eq!(
        c["codex-http"].headers.get("X-Static").map(String::as_str),
        Some("s")
    );
    assert_eq!(c["gemini-http"].transport.as_deref(), Some("http"));
    assert_eq!(c["gemini-http"].enabled_tools, Some(vec!["x".to_owned()]));
    assert_eq!(c["gemini-http"].disabled_tools, Some(vec!["y".to_owned()]));
    assert_eq!(c["gemini-sse"].transport.as_deref(), Some("sse"));
    assert_eq!(c["gemini-sse"].cwd.as_deref(), Some("sub"));
    assert_eq!(
        c["windsurf-remote"].url.as_deref(),
        Some("http://127.0.0.1:1/mcp")
    );
    let server_js = format!("{}/server.js", f.project().display());
    assert_eq!(c["vscode-stdio"].args, [server_js]);
    assert!(matches!(
        c["claude-p"].endpoint(&f.project()).unwrap(),
        mcp_runtime::Endpoint::Http(_)
    ));

    // The VS Code server that needs a prompt fails, saying so.
    let problem = loaded
        .problems
        .iter()
        .find(|p| p.name == "vscode-needs-input")
        .unwrap();
    assert!(
        problem.message.contains("${input:api-key}"),
        "{}",
        problem.message
    );
    assert!(!c.contains_key("vscode-needs-input"));

    // Levels and providers.
    let src = &loaded.sources;
    assert_eq!(
        (src["own-p"].provider.as_str(), src["own-p"].level),
        ("host", Level::Project)
    );
    assert_eq!(src["own-u"].level, Level::User);
    assert_eq!(
        (
            src["claude-local"].provider.as_str(),
            src["claude-local"].level
        ),
        ("claude", Level::User)
    );
    assert_eq!(src["claude-p"].level, Level::Project);
    assert_eq!(src["codex-u"].provider_name, "OpenAI Codex");
    assert_eq!(src["plain"].provider, "mcp-json");
    assert_eq!(src["plain"].path, f.project().join("mcp.json"));
}

#[cfg(all(feature = "yaml", feature = "toml"))]
#[test]
fn the_highest_priority_source_wins_whole_and_the_others_are_kept_as_shadowed() {
    let f = Fixture::new("precedence");
    every_source(&f);
    let loaded = f.load();
    // The host's project file beats everything, even its own user file.
    assert_eq!(
        loaded.configs["shared"].command.as_deref(),
        Some("own-project")
    );
    let shadowed: Vec<&str> = loaded
        .discovered
        .iter()
        .filter(|d| d.name == "shared" && d.shadowed)
        .map(|d| d.config.command.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        shadowed,
        [
            "own-user",
            "claude-user",
            "codex",
            "gemini",
            "cursor",
            "windsurf",
            "vscode",
            "mcp-json"
        ]
    );
    // Remove sources one by one from the top: the next one wins.
    std::fs::remove_file(f.project().join(".mcp-runtime/mcp.json")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("own-user")
    );
    std::fs::remove_file(f.home().join(".mcp-runtime/mcp.json")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("claude-user")
    );
    std::fs::remove_file(f.home().join(".claude.json")).unwrap();
    assert_eq!(f.load().configs["shared"].command.as_deref(), Some("codex"));
    std::fs::remove_file(f.home().join(".codex/config.toml")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("gemini")
    );
    std::fs::remove_file(f.home().join(".gemini/settings.json")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("cursor")
    );
    std::fs::remove_file(f.home().join(".cursor/mcp.json")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("windsurf")
    );
    std::fs::remove_file(f.home().join(".codeium/windsurf/mcp_config.json")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("vscode")
    );
    std::fs::remove_file(f.project().join(".vscode/mcp.json")).unwrap();
    assert_eq!(
        f.load().configs["shared"].command.as_deref(),
        Some("mcp-json")
    );
}

#[test]
fn claude_code_scopes_local_then_project_then_user() {
    let f = Fixture::new("claude");
    let project = f.project();
    f.write(
        "home/.claude.json",
        &json!({"mcpServers": {"s": {"command": "user"}},
                "projects": {project.to_string_lossy(): {"mcpServers": {"s": {"command": "local"}}},
                             "/some/other/project": {"mcpServers": {"other": {"command": "x"}}}}})
        .to_string(),
    );
    f.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"s": {"command": "project"}, "p": {"command": "project"}}}"#,
    );
    let loaded = f.load();
    assert_eq!(loaded.configs["s"].command.as_deref(), Some("local"));
    assert!(
        !loaded.configs.contains_key("other"),
        "another project's servers stay there"
    );
    // Claude Code's order: local > project (.mcp.json) > user.
    let order: Vec<(&str, Level)> = loaded
        .discovered
        .iter()
        .filter(|d| d.name == "s")
        .map(|d| (d.config.command.as_deref().unwrap_or(""), d.source.level))
        .collect();
    assert_eq!(
        order,
        [
            ("local", Level::User),
            ("project", Level::Project),
            ("user", Level::User)
        ]
    );
    std::fs::write(
        f.home().join(".claude.json"),
        json!({"mcpServers": {"s": {"command": "user"}}}).to_string(),
    )
    .unwrap();
    let loaded = f.load();
    assert_eq!(
        loaded.configs["s"].command.as_deref(),
        Some("project"),
        "the project's .mcp.json beats the user scope"
    );
    assert_eq!(loaded.sources["p"].provider, "claude");
    // Files Claude Code does not read are not read.
    f.write(
        "project/.claude/mcp.json",
        r#"{"mcpServers": {"not-read-1": {"command": "x"}}}"#,
    );
    f.write(
        "project/.claude/.mcp.json",
        r#"{"mcpServers": {"not-read-2": {"command": "x"}}}"#,
    );
    f.write(
        "home/.claude/mcp.json",
        r#"{"mcpServers": {"not-read-3": {"command": "x"}}}"#,
    );
    let names: Vec<String> = f.load().discovered.into_iter().map(|d| d.name).collect();
    assert!(
        !names.iter().any(|n| n.starts_with("not-read")),
        "{names:?}"
    );
}

#[test]
fn project_config_can_be_turned_off() {
    let f = Fixture::new("project-off");
    every_source(&f);
    let loaded = load_all_mcp_configs(
        &f.project(),
        &DiscoveryOptions {
            enable_project_config: false,
            ..f.options()
        },
    );
    assert!(loaded.sources.values().all(|s| s.level == Level::User));
    // "shared" falls through to the user-level host file, not to a project file.
    assert_eq!(
        loaded.configs["shared"].command.as_deref(),
        Some("own-user")
    );
    assert!(!loaded.configs.contains_key("plain"));
    let plain = loaded
        .discovered
        .iter()
        .find(|d| d.name == "plain")
        .unwrap();
    assert_eq!(
        plain.skipped.as_deref(),
        Some("project-level config is disabled")
    );
}

#[test]
fn enabled_false_and_the_user_lists() {
    let f = Fixture::new("lists");
    f.write(
        "home/.mcp-runtime/mcp.json",
        r#"{"mcpServers": {"mine-off": {"command": "a", "enabled": false}},
            "disabledServers": ["theirs-on"], "enabledServers": ["theirs-off"]}"#,
    );
    f.write(
        "home/.cursor/mcp.json",
        r#"{"mcpServers": {"theirs-on": {"command": "a"}, "theirs-off": {"command": "a", "enabled": false},
            "other-off": {"command": "a", "enabled": "false"}}}"#,
    );
    let loaded = f.load();
    let names: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
    assert_eq!(names, ["theirs-off"]);
    let reason = |n: &str| {
        loaded
            .discovered
            .iter()
            .find(|d| d.name == n)
            .unwrap()
            .skipped
            .clone()
    };
    assert_eq!(reason("mine-off").as_deref(), Some("enabled: false"));
    assert_eq!(
        reason("theirs-on").as_deref(),
        Some("listed in disabledServers")
    );
    assert_eq!(reason("other-off").as_deref(), Some("enabled: false"));
}

#[test]
fn exa_servers_are_filtered_and_their_keys_returned() {
    let f = Fixture::new("exa");
    f.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"exa": {"command": "npx", "args": ["exa-mcp-server"], "env": {"EXA_API_KEY": "k-env"}},
            "web": {"url": "https://mcp.exa.ai/mcp?exaApiKey=k-url"}, "files": {"command": "a"}}}"#,
    );
    let loaded = f.load();
    assert_eq!(loaded.configs.keys().collect::<Vec<_>>(), ["files"]);
    let mut keys = loaded.exa_api_keys.clone();
    keys.sort();
    assert_eq!(keys, ["k-env", "k-url"]);
    let kept = load_all_mcp_configs(
        &f.project(),
        &DiscoveryOptions {
            filter_exa: false,
            ..f.options()
        },
    );
    assert_eq!(kept.configs.len(), 3);
    assert!(kept.exa_api_keys.is_empty());
}

#[cfg(all(feature = "yaml", feature = "toml"))]
#[test]
fn a_malformed_file_in_any_source_is_a_warning_and_the_others_load() {
    let broken = [
        "project/.mcp-runtime/mcp.json",
        "home/.mcp-runtime/mcp.json",
        "home/.claude.json",
        "project/.mcp.json",
        "project/.claude/settings.json",
        "home/.codex/config.toml",
        "project/.codex/config.toml",
        "home/.gemini/settings.json",
        "project/.cursor/mcp.json",
        "home/.codeium/windsurf/mcp_config.json",
        "project/.vscode/mcp.json",
        "project/mcp.json",
    ];
    for bad in broken {
        let f = Fixture::new("malformed");
        every_source(&f);
        let path = f.write(bad, "{ this is [ not valid");
        let loaded = f.load();
        assert_eq!(loaded.warnings.len(), 1, "{bad}: {:?}", loaded.warnings);
        assert!(
            loaded.warnings[0].contains(&path.display().to_string()),
            "{:?}",
            loaded.warnings
        );
        // Every server of the other files is still there.
        if bad != "project/.mcp.json" {
            assert!(loaded.configs.contains_key("dot-plain"), "{bad}");
        }
        assert!(loaded.configs.contains_key("cursor-u"), "{bad}");
        assert!(loaded.configs.contains_key("shared"), "{bad}");
    }
}

#[test]
fn variables_are_expanded_at_discovery() {
    let f = Fixture::new("expand");
    std::env::set_var("MCP_DISCOVERY_TEST_DIR", "/opt/tools");
    f.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"x": {"command": "${MCP_DISCOVERY_TEST_DIR}/bin/server",
            "args": ["--port", "${MCP_DISCOVERY_TEST_PORT:-8080}", "${MCP_DISCOVERY_UNSET}"],
            "env": {"HOME_DIR": "${MCP_DISCOVERY_TEST_DIR}"}}}}"#,
    );
    let c = &f.load().configs["x"];
    assert_eq!(c.command.as_deref(), Some("/opt/tools/bin/server"));
    assert_eq!(c.args, ["--port", "8080", "${MCP_DISCOVERY_UNSET}"]);
    assert_eq!(
        c.env.get("HOME_DIR").map(String::as_str),
        Some("/opt/tools")
    );
}

struct HostSource;

impl ConfigSource for HostSource {
    fn id(&self) -> &str {
        "my-host"
    }
    fn display_name(&self) -> &str {
        "My Host"
    }
    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        out.entry(
            "from-host",
            &ctx.home.join("host.cfg"),
            Level::User,
            Ok(ServerConfig::stdio(
                "host-server",
                ["--cwd", &ctx.cwd.to_string_lossy()],
            )),
        );
        out
    }
}

#[test]
fn a_host_adds_its_own_source() {
    let f = Fixture::new("host-source");
    f.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"from-host": {"command": "loses"}}}"#,
    );
    let mut sources = mcp_runtime::config::default_sources(Default::default());
    sources.insert(0, Arc::new(HostSource));
    let loaded = load_all_mcp_configs(
        &f.project(),
        &DiscoveryOptions {
            sources: Some(sources),
            ..f.options()
        },
    );
    assert_eq!(
        loaded.configs["from-host"].command.as_deref(),
        Some("host-server")
    );
    assert_eq!(loaded.sources["from-host"].provider_name, "My Host");
}

#[test]
fn resolved_secrets_never_reach_logs_or_error_texts() {
    common::capture_logs();
    std::env::set_var("MCP_SECRET_TEST_TOKEN", "sk-live-123456");
    let config: ServerConfig = serde_json::from_value(json!({
        "url": "http://127.0.0.1:1/mcp",
        "headers": {"Authorization": "!echo Bearer sk-cmd-987654", "X-Key": "MCP_SECRET_TEST_TOKEN", "X-Broken": "!exit 1"},
        "auth": {"type": "oauth", "credentialId": "cred"}
    }))
    .unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-secret-{}", std::process::id()));
    let storage = FileAuthStorage::new(dir.join("auth.json"));
    storage
        .set(
            "cred",
            Credential {
                access_token: "oauth-abcdef".into(),
                expires_at: None,
                refresh_token: None,
                extra: Map::new(),
            },
        )
        .unwrap();
    let resolved = resolve_server_config("secretive", &config, Some(&storage as &dyn AuthStorage));
    assert_eq!(
        resolved.headers().get("Authorization").map(String::as_str),
        Some("Bearer oauth-abcdef")
    );
    assert_eq!(
        resolved.headers().get("X-Key").map(String::as_str),
        Some("sk-live-123456")
    );
    assert!(!resolved.headers().contains_key("X-Broken"));
    // The unresolved config still names the variable, not its value.
    assert_eq!(
        config.headers.get("X-Key").map(String::as_str),
        Some("MCP_SECRET_TEST_TOKEN")
    );
    // Connecting fails (nothing listens there); neither the error nor any log line shows a secret.
    let endpoint = resolved.endpoint(Path::new("/")).unwrap();
    let err = mcp_runtime::Client::connect("secretive", &endpoint, Default::default()).unwrap_err();
    let texts = [
        err.to_string(),
        format!("{err:?}"),
        format!("{endpoint:?}"),
        format!("{resolved:?}"),
    ];
    for secret in ["sk-live-123456", "sk-cmd-987654", "oauth-abcdef"] {
        for t in &texts {
            assert!(!t.contains(secret), "{secret} in {t}");
        }
        assert!(common::logs(secret).is_empty(), "{secret} was logged");
    }
    assert!(
        !common::logs("X-Broken").is_empty(),
        "the unresolvable key is named"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_administrators_policy_turns_servers_off_whatever_user_and_project_files_say() {
    let f = Fixture::new("policy");
    // The user's own file declares a server the policy denies, and lists it as enabled.
    f.write(
        "home/.mcp-runtime/mcp.json",
        r#"{"mcpServers": {"mine": {"command": "ok-tool"}, "banned": {"command": "anything"}},
            "enabledServers": ["banned"]}"#,
    );
    f.write(
        "project/.mcp.json",
        r#"{"mcpServers": {"remote": {"url": "https://mcp.corp.example/v1"},
                           "elsewhere": {"url": "https://mcp.other.example/v1"}}}"#,
    );
    let policy = f.write(
        "etc/policy.json",
        &json!({
            "allowedMcpServers": [{"serverName": "mine"}, {"serverName": "banned"},
                                  {"serverUrl": "https://*.corp.example/*"}],
            "deniedMcpServers": [{"serverName": "banned"}]
        })
        .to_string(),
    );
    let options = DiscoveryOptions {
        policy_file: Some(policy.clone()),
        ..f.options()
    };
    let loaded = load_all_mcp_configs(&f.project(), &options);
    let on: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
    assert_eq!(on, ["mine", "remote"]);
    let skipped = |name: &str| {
        loaded
            .discovered
            .iter()
            .find(|d| d.name == name)
            .and_then(|d| d.skipped.clone())
            .unwrap_or_default()
    };
    assert!(
        skipped("banned").starts_with("denied by the administrator's policy")
            && skipped("banned").contains("serverName \"banned\""),
        "{}",
        skipped("banned")
    );
    assert!(
        skipped("elsewhere").starts_with("not allowed by the administrator's policy"),
        "{}",
        skipped("elsewhere")
    );
    // A policy file that cannot be understood refuses every server, and says why.
    std::fs::write(&policy, "{\"allowedMcpServers\": 3}").unwrap();
    let loaded = load_all_mcp_configs(&f.project(), &options);
    assert!(loaded.configs.is_empty(), "{:?}", loaded.configs.keys());
    assert!(loaded.discovered.iter().all(|d| d
        .skipped
        .as_deref()
        .is_some_and(|s| s.contains("cannot be used"))));
    // No file: no policy.
    std::fs::remove_file(&policy).unwrap();
    assert_eq!(
        load_all_mcp_configs(&f.project(), &options).configs.len(),
        4
    );
}
