//! The config targets: the file formats, and each tool's config source on a file of its own;
//! a config's `Debug` never shows its secrets.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{ConfigSource, DiscoveryContext};

/// The config file formats (byte 0 picks one): JSON with comments (reading plain JSON exactly
/// as JSON), YAML (an alias refused, never expanded), TOML, and the `.mcp.json` shape.
pub fn config_text(data: &[u8]) {
    let [which, text @ ..] = data else { return };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    match which % 4 {
        0 => {
            let jsonc = crate::config::jsonc::parse(text);
            if let Ok(plain) = serde_json::from_str::<Value>(text) {
                assert_eq!(jsonc.as_ref(), Ok(&plain), "JSON is JSONC");
            }
        }
        1 => {
            if let Ok(v) = crate::config::sources::yaml::parse(text) {
                // What it gives is a tree of the text's size, written back without fail.
                let written = serde_json::to_string(&v).expect("JSON");
                assert!(written.len() <= 64 * text.len() + 16, "no expansion");
            }
        }
        2 => {
            let _ = toml::from_str::<Value>(text);
        }
        _ => {
            if let Ok(servers) = crate::config::parse_mcp_json(text) {
                servers.values().flatten().for_each(secrets_not_shown);
            }
        }
    }
}

/// A config's `Debug` shows no value of its `env` or `headers` (those it would not show anyway,
/// with every such value blanked, aside).
fn secrets_not_shown(config: &crate::config::ServerConfig) {
    let shown = format!("{config:?}");
    let mut blank = config.clone();
    blank.env.values_mut().for_each(String::clear);
    blank.headers.values_mut().for_each(String::clear);
    let anyway = format!("{blank:?}");
    for value in config.env.values().chain(config.headers.values()) {
        if value.len() >= 6 && !anyway.contains(value.as_str()) {
            assert!(!shown.contains(value.as_str()), "a secret shown: {shown}");
        }
    }
}

/// Where each built-in source reads one of its files (byte 0 of the input picks one).
fn source_file(ctx: &DiscoveryContext, which: u8) -> (&'static str, PathBuf) {
    use crate::config::sources::{ClaudeDesktop, Goose, HostConfig, VsCode, Zed};
    let user = VsCode::user_dir(ctx);
    let files: [(&'static str, PathBuf); 21] = [
        ("host", HostConfig::default().project_file(ctx)),
        ("claude", ctx.cwd.join(".mcp.json")),
        ("claude", ctx.home.join(".claude.json")),
        ("claude", ctx.cwd.join(".claude/settings.json")),
        ("claude-desktop", ClaudeDesktop::config_file(ctx)),
        ("codex", ctx.cwd.join(".codex/config.toml")),
        ("gemini", ctx.cwd.join(".gemini/settings.json")),
        (
            "gemini",
            ctx.cwd.join(".gemini/extensions/x/gemini-extension.json"),
        ),
        ("cursor", ctx.cwd.join(".cursor/mcp.json")),
        (
            "windsurf",
            ctx.home.join(".codeium/windsurf/mcp_config.json"),
        ),
        ("vscode", ctx.cwd.join(".vscode/mcp.json")),
        ("vscode", user.join("settings.json")),
        ("zed", Zed::user_file(ctx)),
        ("opencode", ctx.cwd.join("opencode.jsonc")),
        ("goose", Goose::config_file(ctx)),
        (
            "cline",
            user.join("globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
        ),
        ("roo", ctx.cwd.join(".roo/mcp.json")),
        ("continue", ctx.cwd.join(".continue/mcpServers/x.yaml")),
        ("continue", ctx.home.join(".continue/config.yaml")),
        ("amazonq", ctx.cwd.join(".amazonq/mcp.json")),
        ("junie", ctx.cwd.join(".junie/mcp/mcp.json")),
    ];
    files[usize::from(which) % files.len()].clone()
}

/// Each tool's config source on a file of its own (byte 0 picks the source and file), in a
/// directory of this process's: a bad file is a warning, a bad entry a problem, never a panic;
/// every server it yields names its source.
pub fn config_sources(data: &[u8]) {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| {
        std::env::temp_dir().join(format!("mcp-fuzz-config-{}", std::process::id()))
    });
    config_sources_in(root, data);
}

/// [`config_sources`] under `root`.
pub fn config_sources_in(root: &Path, data: &[u8]) {
    let [which, text @ ..] = data else { return };
    let ctx = DiscoveryContext {
        cwd: root.join("project"),
        home: root.join("home"),
        config_dir: root.join("home/.config"),
    };
    let (id, path) = source_file(&ctx, *which);
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).expect("a directory");
    std::fs::write(&path, text).expect("the file");
    let source: std::sync::Arc<dyn ConfigSource> = if id == "host" {
        std::sync::Arc::new(crate::config::HostConfig::default())
    } else {
        crate::config::builtin_source(id).expect("a built-in source")
    };
    let out = source.load(&ctx);
    let _ = std::fs::remove_file(&path);
    for found in &out.servers {
        secrets_not_shown(&found.config);
    }
    // A source may read files outside the fuzzer's directory too (`$CODEX_HOME`): only the
    // warnings about files in it are checked.
    // Either slash (Windows joins with `\\`, the places are written with `/`).
    let slashes = |s: &str| s.replace('\\', "/");
    let (root, path) = (
        slashes(&root.to_string_lossy()),
        slashes(&path.to_string_lossy()),
    );
    for w in out.warnings.iter().map(|w| slashes(w)) {
        if w.contains(&root) {
            assert!(w.contains(&path), "a warning names its file: {w}");
        }
    }
}
