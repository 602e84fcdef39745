//! `mcp search` (the tools that answer a query, ranked; exit 1 when none does) and what
//! `mcp call` shows: on a terminal a result cut as a model would be shown it (`--full`: all of
//! it), piped always whole.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use common::catalogue::file as catalogue;

fn setup(name: &str) -> (PathBuf, String) {
    let root = common::temp_dir(&format!("cli-search-{name}"));
    std::fs::create_dir_all(root.join("home")).unwrap();
    let server = |args: Vec<String>| json!({"command": common::server_path(), "args": args});
    let servers = json!({
        "git": server(vec!["--catalogue".into(), catalogue("git")]),
        "github": server(vec!["--catalogue".into(), catalogue("github")]),
        "big": server(vec!["--text-tool".into()]),
    });
    let cfg = root.join("servers.json");
    std::fs::write(&cfg, json!({ "mcpServers": servers }).to_string()).unwrap();
    (root, cfg.display().to_string())
}

fn mcp(root: &Path, cfg: &str) -> Command {
    let mut cmd = common::cli(&root.join("home"));
    cmd.current_dir(root).arg("--config").arg(cfg);
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn search_lists_the_best_tools_first_and_exits_1_when_none_answers() {
    let (root, cfg) = setup("ranked");
    let out = mcp(&root, &cfg)
        .args(["search", "show", "the", "working", "tree", "status"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let first = stdout.lines().next().unwrap_or("");
    assert!(first.starts_with("mcp_git_status "), "{stdout}");
    assert!(stdout.lines().count() <= 5, "{stdout}");

    let out = mcp(&root, &cfg)
        .args(["--json", "search", "--limit", "2", "list", "commits"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = found.as_array().unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0]["name"], "mcp_github_list_commits");
    assert_eq!(found[0]["server"], "github");
    assert!(found[0]["inputSchema"]["properties"]["owner"].is_object());
    assert!(found[0]["definitionTokens"].as_u64().unwrap() > 0);

    let out = mcp(&root, &cfg)
        .args(["search", "xylophone", "quartz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("mcp: no tool matches \"xylophone quartz\" among "),
        "{stderr}"
    );

    for (args, says) in [
        (&["search"][..], "not provided: <QUERY>"),
        (
            &["search", "--limit", "x", "git"][..],
            "invalid value 'x' for '--limit <N>'",
        ),
        (
            &["tools", "--limit", "2"][..],
            "unexpected argument '--limit'",
        ),
        (&["tools", "--full"][..], "unexpected argument '--full'"),
    ] {
        let out = mcp(&root, &cfg).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Runs `mcp` with a terminal for stdout (util-linux's `script`); `None` (said) where there is
/// no `script`.
fn on_a_terminal(root: &Path, cfg: &str, args: &[&str]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "script (util-linux) is missing: the terminal output of mcp call was not checked"
        );
        eprintln!("script (util-linux) is not installed; skipping the terminal check");
        return None;
    }
    let mut line = format!("'{}' --config '{cfg}'", common::cli_path().display());
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let out: Output = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(root)
        .env("HOME", root.join("home"))
        .env("XDG_CACHE_HOME", root.join("home/.cache"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
    Some(text(&out.stdout).replace("\r\n", "\n"))
}

#[test]
fn call_cuts_a_long_result_on_a_terminal_unless_full_and_never_when_piped() {
    let (root, cfg) = setup("budget");
    let call = ["call", "mcp_big_text", "bytes=300000"];
    let piped = mcp(&root, &cfg).args(call).output().unwrap();
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert_eq!(
        piped.stdout.len(),
        300_000 + 1,
        "piped: the whole result and a newline"
    );

    if let Some(shown) = on_a_terminal(&root, &cfg, &call) {
        assert!(shown.len() < 101_000, "{} bytes shown", shown.len());
        assert!(
            shown.contains("[Output cut to about 25,000 tokens: ")
                && shown.contains("left out; run the call again with --full to see all of it.]"),
            "{}",
            &shown[shown.len().saturating_sub(400)..]
        );
        let full = on_a_terminal(
            &root,
            &cfg,
            &["call", "--full", "mcp_big_text", "bytes=300000"],
        )
        .unwrap();
        assert_eq!(full.len(), 300_000 + 1);
    }
    let _ = std::fs::remove_dir_all(&root);
}
