//! MCP Apps end to end, in a real browser against a real App server: `mcp app` hosts
//! `@modelcontextprotocol/server-basic-vanillajs` (npm) and headless Chromium (Debian's, driven
//! by puppeteer-core through `tests/interop/app_view.mjs`, the command's `$BROWSER`) opens the
//! page. The App shows its tool's result, its button's tool call reaches the server and comes
//! back, its message and log reach the command; inside the sandbox it can neither read the
//! host's page nor fetch anything. Skips, saying so, where node, npm or Chromium cannot be had
//! (fails in CI).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::npm;
use serde_json::{json, Value};

const BASIC_APP: &str = "@modelcontextprotocol/server-basic-vanillajs@2.0.3";
const ENTRY: &str = "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js";
const PUPPETEER: &str = "node_modules/puppeteer-core/lib/puppeteer/puppeteer-core.js";

/// The App server's entry and puppeteer-core's, installed on first use.
fn components() -> Option<(PathBuf, PathBuf, PathBuf)> {
    if !npm::has_node() {
        return npm::missing("node is not installed; the MCP Apps browser test did not run");
    }
    let packages = [BASIC_APP, npm::PUPPETEER_CORE];
    let server = npm::install("apps", &packages, ENTRY)?;
    let puppeteer = npm::install("apps", &packages, PUPPETEER)?;
    Some((server, puppeteer, npm::chromium()?))
}

#[test]
fn an_app_renders_in_chromium_shows_its_result_and_calls_its_server() {
    let Some((server, puppeteer, chromium)) = components() else {
        return;
    };
    let home = common::temp_dir("app-browser");
    let config = json!({"mcpServers": {"basic": {"command": "node",
        "args": [server, "--stdio"]}}});
    std::fs::write(home.join("mcp.json"), config.to_string()).unwrap();
    let findings = home.join("view.json");
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/app_view.mjs");
    let mut cmd = common::cli(&home);
    cmd.arg("--config")
        .arg(home.join("mcp.json"))
        .args(["--no-project-config", "app", "get-time"])
        .env("BROWSER", format!("node {}", driver.display()))
        .env("PUPPETEER_CORE", puppeteer)
        .env("CHROMIUM", chromium)
        .env("APP_VIEW_OUT", &findings);
    let out = npm::output_within(cmd, Duration::from_secs(150)).expect("mcp app ended");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let report: Value = serde_json::from_slice(&std::fs::read(&findings).expect("the findings"))
        .expect("the findings are JSON");
    assert!(report.get("error").is_none(), "{report}\n{said}");

    // The tool's result reached the View, and its button's call reached the server.
    let iso = |v: &Value| v.as_str().is_some_and(|s| s.len() >= 20 && &s[4..5] == "-");
    assert!(iso(&report["first"]), "{report}");
    assert!(iso(&report["second"]), "{report}");
    assert_ne!(report["first"], report["second"], "{report}");
    assert_eq!(report["hostState"], "showing", "{report}");
    assert!(stderr.contains("the App is showing"), "{said}");
    assert!(stderr.contains("the App calls get-time"), "{said}");
    // Its message is the command's output; its log line goes to stderr.
    assert!(stdout.contains("This is message text."), "{said}");
    assert!(
        stderr.contains("the App logs [info] This is log text."),
        "{said}"
    );
    // The sandbox holds.
    assert_eq!(report["host"], "blocked", "{report}");
    assert_eq!(report["network"], "blocked", "{report}");
    // The browser closed: the command noticed and ended on its own.
    assert!(stderr.contains("the App's page is gone"), "{said}");
    assert_eq!(out.status.code(), Some(0), "{said}");
}
