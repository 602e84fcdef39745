//! The example host programs a host author copies (`examples/agent.rs`, `examples/editor.rs`)
//! run as their doc comments say, against the `mcp` command's demo servers.

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// Runs `example` from the checkout (as `cargo run --example` does), or from `cwd`.
fn run_in(example: &str, args: &[&str], home: &Path, cwd: &Path) -> Output {
    Command::new(common::example_path(example))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("MCP_CLI", common::cli_path())
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn run(example: &str, args: &[&str], home: &Path) -> Output {
    run_in(example, args, home, Path::new(env!("CARGO_MANIFEST_DIR")))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_agent_loop_calls_the_tools_its_model_picks_and_answers() {
    let home = common::temp_dir("example-agent");
    let out = run("agent", &["--config", "examples/mcp.json"], &home);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("mcp_fast_add -> 5.5"), "{stdout}");
    assert!(stdout.contains("mcp_fast_greet -> Hello, Ada"), "{stdout}");
    assert!(stdout.contains("mcp_slow_weather -> "), "{stdout}");
    assert!(
        stdout.contains("model: Here is what I found: 5.5 | "),
        "{stdout}"
    );
}

#[test]
fn the_agent_without_a_config_finds_no_server_in_an_empty_home_and_still_answers() {
    let home = common::temp_dir("example-agent-empty");
    let out = run_in("agent", &[], &home, &home);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("offering 0 tools"), "{stdout}");
    assert!(stderr.contains("no tool offered adds"), "{stderr}");
}

#[test]
fn the_editor_asks_before_a_projects_server_runs_and_follows_its_changes() {
    let home = common::temp_dir("example-editor");
    let workspace = home.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let config = serde_json::json!({"mcpServers": {"docs": {
        "command": common::cli_path(), "args": ["--demo-server", "docs"]}}});
    std::fs::write(workspace.join(".mcp.json"), config.to_string()).unwrap();
    let ws = workspace.to_str().unwrap();

    // Without the user's answer, nothing of the project runs.
    let out = run("editor", &[ws], &home);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("[dialog] docs (declared in "), "{stdout}");
    assert!(stdout.contains("[tools] \n"), "{stdout}");

    // Approved: it runs, its prompt and resources reach the panels, disable and enable and
    // reload follow.
    let out = run("editor", &[ws, "--approve"], &home);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("[tools] mcp_docs_note"), "{stdout}");
    assert!(
        stdout.contains("[resources] docs docs://readme"),
        "{stdout}"
    );
    assert!(stdout.contains("[prompts] /mcp_docs_explain"), "{stdout}");
    assert!(stdout.contains("[tools] after disable: 0"), "{stdout}");
    assert!(stdout.contains("[tools] after enable: 1"), "{stdout}");
    assert!(stdout.contains("[reload] connected: docs;"), "{stdout}");

    // The approval is remembered: the next run needs no dialog.
    let out = run("editor", &[ws], &home);
    let (stdout, _) = text(&out);
    assert!(!stdout.contains("[dialog]"), "{stdout}");
    assert!(stdout.contains("[tools] mcp_docs_note"), "{stdout}");
}
