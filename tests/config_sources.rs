//! Every tool's files, read the way that tool reads them: each fixture under
//! `tests/fixtures/<tool>/` is in the tool's documented shape, put where the tool keeps it, and
//! each mapped field is asserted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_runtime::config::{builtin_source, GEMINI_DEFAULT_TIMEOUT_MS};
use mcp_runtime::config::{
    load_all_mcp_configs, ConfigSource, DiscoveryContext, DiscoveryOptions, Level, LoadedConfigs,
    ProjectTrust, ServerConfig,
};

struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let root = std::env::temp_dir().join(format!("mcp-sources-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Fixture { root }
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    fn ctx(&self) -> DiscoveryContext {
        self.options(Vec::new()).context(&self.project())
    }
    /// Copies `tests/fixtures/<fixture>` to `to`.
    fn place(&self, fixture: &str, to: &Path) {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(fixture);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
    fn options(&self, sources: Vec<Arc<dyn ConfigSource>>) -> DiscoveryOptions {
        DiscoveryOptions {
            home: Some(self.home()),
            project_trust: ProjectTrust::TrustAll,
            sources: Some(sources),
            ..DiscoveryOptions::default()
        }
    }
    /// Loads the built-in source with this id.
    fn builtin(&self, id: &str) -> LoadedConfigs {
        self.load_source(builtin_source(id).unwrap_or_else(|| panic!("no built-in source {id}")))
    }

    fn load_source(&self, source: Arc<dyn ConfigSource>) -> LoadedConfigs {
        let loaded = load_all_mcp_configs(&self.project(), &self.options(vec![source]));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        loaded
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn env<'a>(c: &'a ServerConfig, k: &str) -> Option<&'a str> {
    c.env.get(k).map(String::as_str)
}

fn header<'a>(c: &'a ServerConfig, k: &str) -> Option<&'a str> {
    c.headers.get(k).map(String::as_str)
}

fn skipped<'a>(loaded: &'a LoadedConfigs, name: &str) -> Option<&'a str> {
    loaded
        .discovered
        .iter()
        .find(|d| d.name == name && !d.shadowed)
        .unwrap_or_else(|| panic!("{name} not discovered"))
        .skipped
        .as_deref()
}

#[test]
fn claude_desktop_in_its_per_os_location() {
    let f = Fixture::new("desktop");
    // Where Claude Desktop keeps it: its app-data directory (on Linux `~/.config`).
    let path = f
        .ctx()
        .app_data_dir()
        .join("Claude/claude_desktop_config.json");
    if cfg!(target_os = "linux") {
        assert_eq!(
            path,
            f.home().join(".config/Claude/claude_desktop_config.json")
        );
    }
    f.place("claude-desktop/claude_desktop_config.json", &path);
    let loaded = f.builtin("claude-desktop");
    let fs = &loaded.configs["filesystem"];
    assert_eq!(fs.command.as_deref(), Some("npx"));
    assert_eq!(
        fs.args,
        [
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/Users/username/Desktop",
            "/Users/username/Downloads"
        ]
    );
    assert_eq!(loaded.sources["filesystem"].level, Level::User);
    assert_eq!(loaded.sources["filesystem"].provider_name, "Claude Desktop");
}

#[test]
fn cursor_variables_and_env_file() {
    let f = Fixture::new("cursor");
    f.place("cursor/mcp.json", &f.project().join(".cursor/mcp.json"));
    f.place("cursor/.env", &f.project().join(".env"));
    std::env::set_var("MY_SERVICE_TOKEN", "t-cursor");
    std::env::set_var("API_KEY", "k-docs");
    let loaded = f.builtin("cursor");
    let c = &loaded.configs;
    let server = &c["server-name"];
    assert_eq!(
        env(server, "API_KEY"),
        Some("k-docs"),
        "env wins over envFile"
    );
    assert_eq!(env(server, "EXTRA"), Some("quoted value"), "from envFile");
    assert!(!server.extra.contains_key("envFile"));
    let local = &c["local-server"];
    let project = f.project();
    assert_eq!(
        local.args,
        [format!("{}/tools/mcp_server.py", project.display())]
    );
    let sep = std::path::MAIN_SEPARATOR;
    assert_eq!(
        env(local, "CACHE").unwrap(),
        format!("{}{sep}.cache{sep}mcp", f.home().display())
    );
    assert_eq!(env(local, "NAME"), Some("project"));
    assert_eq!(
        env(local, "NOT_CURSORS"),
        Some("${API_KEY}"),
        "another tool's syntax is not Cursor's"
    );
    assert_eq!(
        header(&c["remote-server"], "Authorization"),
        Some("Bearer t-cursor")
    );
    assert_eq!(loaded.sources["remote-server"].level, Level::Project);
}

#[test]
fn windsurf_server_url_env_variables_and_disabled() {
    let f = Fixture::new("windsurf");
    f.place(
        "windsurf/mcp_config.json",
        &f.home().join(".codeium/windsurf/mcp_config.json"),
    );
    std::env::set_var("GITHUB_TOKEN", "gh-windsurf");
    std::env::set_var("FIGMA_KEY", "fk");
    let loaded = f.builtin("windsurf");
    let c = &loaded.configs;
    assert_eq!(
        env(&c["github"], "GITHUB_PERSONAL_ACCESS_TOKEN"),
        Some("gh-windsurf")
    );
    assert_eq!(
        c["github"].disabled_tools,
        Some(vec!["create_issue".to_owned()])
    );
    assert_eq!(
        c["figma"].url.as_deref(),
        Some("https://your-server-url/mcp")
    );
    assert_eq!(header(&c["figma"], "API_KEY"), Some("fk"));
    assert_eq!(header(&c["figma"], "Literal"), Some("${FIGMA_KEY}"));
    assert!(!c.contains_key("switched-off"));
    assert_eq!(skipped(&loaded, "switched-off"), Some("disabled: true"));
}

#[test]
fn vscode_workspace_user_profile_and_the_older_settings_key() {
    let f = Fixture::new("vscode");
    // VS Code's user directory: its app-data directory's `Code/User`.
    let user = f.ctx().app_data_dir().join("Code/User");
    if cfg!(target_os = "linux") {
        assert_eq!(user, f.home().join(".config/Code/User"));
    }
    f.place("vscode/mcp.json", &user.join("mcp.json"));
    f.place("vscode/settings.json", &user.join("settings.json"));
    std::fs::create_dir_all(f.project().join(".vscode")).unwrap();
    std::fs::write(
        f.project().join(".vscode/mcp.json"),
        r#"{"servers": {"fetch": {"type": "stdio", "command": "workspace-wins"}}}"#,
    )
    .unwrap();
    let loaded = f.builtin("vscode");
    let c = &loaded.configs;
    assert_eq!(c["fetch"].command.as_deref(), Some("workspace-wins"));
    assert_eq!(loaded.sources["fetch"].level, Level::Project);
    assert_eq!(c["github"].transport.as_deref(), Some("http"));
    assert_eq!(loaded.sources["github"].level, Level::User);
    // VS Code's own `http.proxy` is its remote servers' proxy.
    assert_eq!(
        c["github"].proxy.as_deref(),
        Some("http://proxy.example.com:8080")
    );
    assert_eq!(c["fetch"].proxy, None);
    // Not for what the editor would reach directly: loopback, and its own exceptions.
    assert_eq!(c["local-http"].proxy, None);
    assert_eq!(c["intranet"].proxy, None);
    assert_eq!(
        c["mcp-server-time"].args,
        [
            "-m",
            "mcp_server_time",
            "--local-timezone=America/Los_Angeles"
        ]
    );
    assert_eq!(
        loaded.sources["mcp-server-time"].path,
        user.join("settings.json")
    );
    let problem = loaded
        .problems
        .iter()
        .find(|p| p.name == "Perplexity")
        .unwrap();
    assert!(problem.message.contains("${input:perplexity-key}"));
}

#[test]
fn gemini_cli_timeouts_variables_lists_and_extensions() {
    let f = Fixture::new("gemini");
    f.place(
        "gemini/settings.json",
        &f.home().join(".gemini/settings.json"),
    );
    let ext = f.home().join(".gemini/extensions/my-extension");
    f.place(
        "gemini/gemini-extension.json",
        &ext.join("gemini-extension.json"),
    );
    std::env::set_var("MY_API_TOKEN", "gm-token");
    let loaded = f.builtin("gemini");
    let c = &loaded.configs;
    let s = &c["serverName"];
    assert_eq!(s.command.as_deref(), Some("path/to/server"));
    assert_eq!(
        env(s, "API_KEY"),
        Some("gm-token"),
        "$VAR, its docs' example"
    );
    assert_eq!(env(s, "BRACED"), Some("gm-token"));
    assert_eq!(s.cwd.as_deref(), Some("./server-directory"));
    assert_eq!(
        (s.timeout_ms, s.tool_timeout_ms),
        (Some(30_000), Some(30_000)),
        "timeout bounds the connect and the tool calls"
    );
    assert_eq!(
        s.enabled_tools,
        Some(vec!["tool1".to_owned(), "tool2".to_owned()])
    );
    let http = &c["httpServer"];
    assert_eq!(http.transport.as_deref(), Some("http"));
    assert_eq!(http.url.as_deref(), Some("http://localhost:3000/mcp"));
    assert_eq!(http.disabled_tools, Some(vec!["dangerous_tool".to_owned()]));
    assert_eq!(http.tool_timeout_ms, Some(GEMINI_DEFAULT_TIMEOUT_MS));
    assert_eq!(
        http.timeout_ms, None,
        "the connect keeps the host's default"
    );
    assert_eq!(c["sseServer"].transport.as_deref(), Some("sse"));
    assert_eq!(
        skipped(&loaded, "notAllowed"),
        Some("not in mcp.allowed (Gemini CLI)")
    );
    assert_eq!(
        skipped(&loaded, "experimental-server"),
        Some("listed in mcp.excluded (Gemini CLI)")
    );
    // The extension: its variables, and settings.json wins over it.
    let mine = &c["my-server"];
    let sep = std::path::MAIN_SEPARATOR;
    assert_eq!(mine.args, [format!("{}{sep}my-server.js", ext.display())]);
    assert_eq!(mine.cwd.as_deref(), Some(ext.to_str().unwrap()));
    assert_eq!(
        loaded.sources["my-server"].path,
        ext.join("gemini-extension.json")
    );
    assert_eq!(s.command.as_deref(), Some("path/to/server"));
}

#[cfg(feature = "toml")]
#[test]
fn codex_headers_from_the_environment_resolve_at_connect_time() {
    let f = Fixture::new("codex");
    f.place("codex/config.toml", &f.home().join(".codex/config.toml"));
    std::env::remove_var("FIGMA_API_KEY");
    std::env::remove_var("FIGMA_OAUTH_TOKEN");
    // An unset variable is no warning at discovery: nothing is read there any more.
    let loaded = f.builtin("codex");
    let c = &loaded.configs;
    let ctx7 = &c["context7"];
    assert_eq!(ctx7.args, ["-y", "@upstash/context7-mcp"]);
    assert_eq!(env(ctx7, "MY_ENV_VAR"), Some("MY_ENV_VALUE"));
    assert_eq!(
        (ctx7.timeout_ms, ctx7.tool_timeout_ms),
        (Some(20_000), Some(60_000))
    );
    assert_eq!(
        ctx7.enabled_tools,
        Some(vec!["resolve-library-id".to_owned()])
    );
    let figma = &c["figma"];
    assert_eq!(header(figma, "X-Figma-Region"), Some("us-east-1"));
    assert_eq!(header(figma, "X-Api-Key"), Some("FIGMA_API_KEY"));
    assert_eq!(
        figma.bearer_token_env_var.as_deref(),
        Some("FIGMA_OAUTH_TOKEN")
    );
    assert_eq!(skipped(&loaded, "off"), Some("enabled: false"));
    // At connect time the variables are read.
    std::env::set_var("FIGMA_API_KEY", "fa");
    std::env::set_var("FIGMA_OAUTH_TOKEN", "ft");
    let resolved = mcp_runtime::config::resolve_server_config("figma", figma, None);
    let resolved = resolved.headers();
    assert_eq!(resolved.get("X-Api-Key").map(String::as_str), Some("fa"));
    assert_eq!(
        resolved.get("Authorization").map(String::as_str),
        Some("Bearer ft")
    );
}

#[test]
fn zed_context_servers_in_both_shapes() {
    let f = Fixture::new("zed");
    // Zed's settings: the config directory's `zed/settings.json` (`Zed` on Windows).
    let user = f
        .ctx()
        .config_dir
        .join(if cfg!(windows) { "Zed" } else { "zed" })
        .join("settings.json");
    if cfg!(unix) {
        assert_eq!(user, f.home().join(".config/zed/settings.json"));
    }
    f.place("zed/settings.json", &user);
    std::fs::create_dir_all(f.project().join(".zed")).unwrap();
    std::fs::write(
        f.project().join(".zed/settings.json"),
        r#"{"context_servers": {"local-mcp-server": {"command": "project-wins", "args": []}}}"#,
    )
    .unwrap();
    let loaded = f.builtin("zed");
    let c = &loaded.configs;
    assert_eq!(
        c["local-mcp-server"].command.as_deref(),
        Some("project-wins")
    );
    assert_eq!(loaded.sources["local-mcp-server"].level, Level::Project);
    assert_eq!(
        c["remote-mcp-server"].url.as_deref(),
        Some("https://example.com/mcp")
    );
    assert_eq!(
        header(&c["remote-mcp-server"], "Authorization"),
        Some("Bearer <token>")
    );
    // Zed's own proxy setting is its remote servers' proxy.
    assert_eq!(
        c["remote-mcp-server"].proxy.as_deref(),
        Some("http://proxy.example.com:3128")
    );
    let older = &c["older-shape"];
    assert_eq!(older.proxy, None);
    assert_eq!(older.command.as_deref(), Some("/usr/local/bin/server"));
    assert_eq!(older.args, ["--stdio"]);
    assert_eq!(env(older, "KEY"), Some("v"));
    assert!(
        !loaded
            .discovered
            .iter()
            .any(|d| d.name == "mcp-server-github"),
        "a Zed extension's server is not an MCP config"
    );
}

#[test]
fn opencode_local_remote_environment_and_enabled() {
    let f = Fixture::new("opencode");
    f.place(
        "opencode/opencode.jsonc",
        &f.project().join("opencode.jsonc"),
    );
    std::env::set_var("OPENCODE_TEST_VAR", "oc");
    let loaded = f.builtin("opencode");
    let c = &loaded.configs;
    let local = &c["my-local-mcp-server"];
    assert_eq!(local.command.as_deref(), Some("npx"));
    assert_eq!(local.args, ["-y", "my-mcp-command"]);
    assert_eq!(env(local, "MY_ENV_VAR"), Some("my_env_var_value"));
    assert_eq!(env(local, "FROM_ENV"), Some("oc"));
    let remote = &c["my-remote-mcp"];
    assert_eq!(remote.url.as_deref(), Some("https://my-mcp-server.com"));
    assert_eq!(header(remote, "Authorization"), Some("Bearer oc"));
    assert_eq!(remote.timeout_ms, Some(5000));
    assert_eq!(skipped(&loaded, "jira"), Some("enabled: false"));
    assert_eq!(loaded.sources["my-remote-mcp"].level, Level::Project);
    // The user file, under the config directory.
    let user = f.ctx().config_dir.join("opencode/opencode.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        r#"{"mcp": {"servers": {"v2": {"type": "local", "command": ["a"], "disabled": true}}}}"#,
    )
    .unwrap();
    let loaded = f.builtin("opencode");
    assert_eq!(skipped(&loaded, "v2"), Some("disabled: true"));
    assert_eq!(loaded.sources.get("v2"), None);
}

#[cfg(feature = "yaml")]
#[test]
fn goose_extensions_from_yaml() {
    let f = Fixture::new("goose");
    // Goose's config: the config directory's `goose/config.yaml` (`Block/goose/config` on
    // Windows).
    let path = if cfg!(windows) {
        f.ctx().config_dir.join("Block/goose/config/config.yaml")
    } else {
        f.ctx().config_dir.join("goose/config.yaml")
    };
    if cfg!(unix) {
        assert_eq!(path, f.home().join(".config/goose/config.yaml"));
    }
    f.place("goose/config.yaml", &path);
    let loaded = load_all_mcp_configs(
        &f.project(),
        &f.options(vec![builtin_source("goose").unwrap()]),
    );
    // One note: github's env_keys live in Goose's keyring.
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("env_keys"));
    let c = &loaded.configs;
    assert!(
        !loaded.discovered.iter().any(|d| d.name == "developer"),
        "builtin"
    );
    let fs = &c["filesystem"];
    assert_eq!(fs.command.as_deref(), Some("npx"));
    assert_eq!(
        fs.args,
        ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    );
    assert_eq!(
        (fs.timeout_ms, fs.tool_timeout_ms),
        (Some(300_000), Some(300_000))
    );
    let remote = &c["remote-tools"];
    assert_eq!(remote.transport.as_deref(), Some("http"));
    assert_eq!(remote.url.as_deref(), Some("https://example.com/mcp"));
    assert_eq!(remote.enabled_tools, Some(vec!["search".to_owned()]));
    assert_eq!(skipped(&loaded, "github"), Some("enabled: false"));
    let gh = &loaded
        .discovered
        .iter()
        .find(|d| d.name == "github")
        .unwrap()
        .config;
    assert_eq!(env(gh, "GITHUB_HOST"), Some("github.example.com"));
    assert_eq!(loaded.sources["filesystem"].level, Level::User);
}

#[test]
fn cline_and_roo_code() {
    let f = Fixture::new("cline");
    let storage = f.ctx().app_data_dir().join("Code/User/globalStorage");
    f.place(
        "cline/cline_mcp_settings.json",
        &storage.join("saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
    );
    let loaded = f.builtin("cline");
    let c = &loaded.configs;
    let s = &c["my-server"];
    assert_eq!(s.args, ["/path/to/server.js"]);
    assert_eq!(env(s, "API_KEY"), Some("your_api_key"));
    assert_eq!(s.tool_timeout_ms, Some(90_000), "seconds");
    assert!(!s.extra.contains_key("autoApprove"), "ignored");
    assert_eq!(skipped(&loaded, "remote"), Some("disabled: true"));

    f.place("roo/mcp.json", &f.project().join(".roo/mcp.json"));
    f.place(
        "roo/mcp_settings.json",
        &storage.join("rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
    );
    std::env::set_var("ROO_TEST_KEY", "rk");
    let loaded = f.builtin("roo");
    let c = &loaded.configs;
    let local = &c["local-server"];
    assert_eq!(loaded.sources["local-server"].level, Level::Project);
    assert_eq!(local.args, [format!("{}/server.js", f.project().display())]);
    assert_eq!(env(local, "API_KEY"), Some("rk"));
    assert_eq!(local.cwd.as_deref(), Some("/path/to/project/root"));
    assert_eq!(local.tool_timeout_ms, Some(30_000));
    assert_eq!(local.disabled_tools, Some(vec!["tool3".to_owned()]));
    assert!(!local.extra.contains_key("alwaysAllow"));
    let remote = &c["remote-server"];
    assert_eq!(remote.transport.as_deref(), Some("streamable-http"));
    assert_eq!(header(remote, "X-API-Key"), Some("your-api-key"));
    assert_eq!(remote.tool_timeout_ms, Some(60_000), "Roo's default");
    assert_eq!(skipped(&loaded, "global-only"), Some("disabled: true"));
}

#[cfg(feature = "yaml")]
#[test]
fn continue_config_yaml_and_block_files() {
    let f = Fixture::new("continue");
    f.place(
        "continue/config.yaml",
        &f.home().join(".continue/config.yaml"),
    );
    let blocks = f.project().join(".continue/mcpServers");
    f.place(
        "continue/playwright-mcp.yaml",
        &blocks.join("playwright-mcp.yaml"),
    );
    f.place(
        "continue/from-claude.json",
        &blocks.join("from-claude.json"),
    );
    let loaded = f.builtin("continue");
    let c = &loaded.configs;
    let sqlite = &c["SQLite MCP"];
    assert_eq!(
        sqlite.args,
        ["-y", "mcp-sqlite", "/path/to/your/database.db"]
    );
    assert_eq!(env(sqlite, "LOG_LEVEL"), Some("debug"));
    assert_eq!(loaded.sources["SQLite MCP"].level, Level::User);
    let remote = &c["Remote"];
    assert_eq!(remote.transport.as_deref(), Some("streamable-http"));
    assert_eq!(header(remote, "X-Team"), Some("platform"));
    assert_eq!(c["Browser search"].args, ["@playwright/mcp@latest"]);
    assert_eq!(loaded.sources["Browser search"].level, Level::Project);
    assert_eq!(
        c["filesystem"].args,
        ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    );
    let hub = loaded
        .problems
        .iter()
        .find(|p| p.name == "Needs Hub")
        .unwrap();
    assert!(hub.message.contains("secrets"), "{}", hub.message);
}

#[test]
fn amazon_q_and_junie() {
    let f = Fixture::new("amazonq");
    f.place("amazonq/mcp.json", &f.home().join(".aws/amazonq/mcp.json"));
    let loaded = f.builtin("amazonq");
    let md = &loaded.configs["markdown-tools"];
    assert_eq!(md.args, ["-y", "@example/markdown-mcp"]);
    assert_eq!(md.timeout_ms, Some(60_000));
    assert_eq!(loaded.sources["markdown-tools"].level, Level::User);
    assert_eq!(skipped(&loaded, "aws-docs"), Some("disabled: true"));
    f.place("amazonq/mcp.json", &f.project().join(".amazonq/mcp.json"));
    let loaded = f.builtin("amazonq");
    assert_eq!(
        loaded.sources["markdown-tools"].level,
        Level::Project,
        "workspace wins"
    );

    f.place("junie/mcp.json", &f.project().join(".junie/mcp/mcp.json"));
    let loaded = f.builtin("junie");
    assert_eq!(
        loaded.configs["postgres"].args,
        [
            "-y",
            "@modelcontextprotocol/server-postgres",
            "postgresql://localhost/mydb"
        ]
    );
    assert_eq!(loaded.sources["postgres"].level, Level::Project);
    f.place("junie/mcp.json", &f.home().join(".junie/mcp/mcp.json"));
    std::fs::remove_file(f.project().join(".junie/mcp/mcp.json")).unwrap();
    assert_eq!(f.builtin("junie").sources["postgres"].level, Level::User);
}

#[test]
fn every_tool_is_in_the_default_order() {
    let ids: Vec<String> = mcp_runtime::config::default_sources(Default::default())
        .iter()
        .map(|s| s.id().to_owned())
        .collect();
    assert_eq!(
        ids,
        [
            "host",
            "claude",
            "claude-desktop",
            "codex",
            "gemini",
            "cursor",
            "windsurf",
            "vscode",
            "zed",
            "opencode",
            "goose",
            "cline",
            "roo",
            "continue",
            "amazonq",
            "junie",
            "mcp-json"
        ]
    );
}
