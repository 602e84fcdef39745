//! The `mcp` example CLI, driven as a black box.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn mcp() -> Command {
    common::cli(&std::env::temp_dir().join(format!("mcp-cli-test-{}-home", std::process::id())))
}

fn config_file(name: &str, servers: Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-cli-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(".mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

fn run(args: &[&str]) -> Output {
    mcp().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn test_server(extra: &[&str]) -> Value {
    json!({"command": common::server_path(), "args": extra})
}

#[test]
fn the_demo_runs_every_step_and_leaves_nothing_behind() {
    let tag = format!("cli-demo-{}", std::process::id());
    let out = mcp().env("MCP_CLI_TEST_TAG", &tag).output().unwrap();
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("mcp_fast_greet {\"name\":\"world\"} → Hello, world!"),
        "{text}"
    );
    assert!(text.contains("progress: 2 left, 1 left, 0 left"), "{text}");
    // The reload found the slow server's tools in the cache (the fast one may be deferred too
    // on a loaded machine), and the deferred call waited.
    let reload = text
        .lines()
        .filter(|l| l.contains("deferred (from the cache):"))
        .nth(1)
        .unwrap_or_else(|| panic!("no reload line: {text}"));
    assert!(
        reload.contains("deferred (from the cache): [") && reload.contains("\"slow\"]"),
        "{text}"
    );
    assert!(
        text.contains("mcp_slow_weather {\"city\":\"Lisbon\"} → Lisbon: sunny, 24°C"),
        "{text}"
    );
    assert!(text.contains("no server process left"), "{text}");
    // No process that inherited the tag survives the CLI.
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let needle = format!("MCP_CLI_TEST_TAG={tag}");
        if env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            assert!(!common::is_alive(pid), "process {pid} outlived the demo");
        }
    }
}

#[test]
fn tools_lists_every_server_in_json() {
    let cfg = config_file(
        "tools",
        json!({"alpha": test_server(&[]), "beta": test_server(&["--tools", "2"])}),
    );
    let out = run(&["--config", cfg.to_str().unwrap(), "--json", "tools"]);
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 17 + 19);
    let echo = rows.iter().find(|r| r["name"] == "mcp_alpha_echo").unwrap();
    assert_eq!(echo["server"], "alpha");
    assert_eq!(echo["tool"], "echo");
    assert_eq!(echo["description"], "Echoes the message");
    assert!(rows.iter().any(|r| r["name"] == "mcp_beta_tool_1"));
}

#[test]
fn call_prints_the_result_and_sets_the_exit_status() {
    let cfg = config_file("call", json!({"t": test_server(&[])}));
    let cfg = cfg.to_str().unwrap();
    let out = run(&[
        "--config",
        cfg,
        "call",
        "mcp_t_echo",
        r#"{"message":"hi there"}"#,
    ]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "hi there\n");

    let out = run(&["--config", cfg, "--json", "call", "mcp_t_rich"]);
    assert!(out.status.success());
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["structuredContent"], json!({"ok": true, "n": 5}));
    assert_eq!(
        result["content"][1],
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );

    // A tool error (isError) is exit status 1; a missing tool is a usage error (2) naming the
    // nearest tools. (The CLI answers roots/list and elicitation, never sampling.)
    let out = run(&[
        "--config",
        cfg,
        "call",
        "mcp_t_ask",
        r#"{"method":"sampling/createMessage"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with("Error: "));
    let out = run(&["--config", cfg, "call", "mcp_t_echoo"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean mcp_t_echo"), "{err}");
    // Bad usage is 2.
    assert_eq!(
        run(&["--config", cfg, "call", "mcp_t_echo", "{not json"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn status_shows_each_server_with_its_error() {
    let cfg = config_file(
        "status",
        json!({"good": test_server(&[]), "broken": test_server(&["--exit-on-initialize", "4"]),
               "off": {"command": "nothing", "enabled": false}}),
    );
    let out = run(&["--config", cfg.to_str().unwrap(), "--json", "status"]);
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 2, "disabled servers are skipped: {rows:?}");
    let good = rows.iter().find(|r| r["name"] == "good").unwrap();
    assert_eq!(good["status"], "connected");
    assert_eq!(good["transport"], "stdio");
    assert_eq!(good["error"], Value::Null);
    assert_eq!(good["path"], cfg.display().to_string());
    // What its tools' definitions cost, estimated; the same as `tools --tokens` says.
    let cost = good["definitionTokens"].as_u64().unwrap();
    assert!(cost > 0 && good["tools"].as_u64().unwrap() > 0, "{good}");
    let out = run(&[
        "--config",
        cfg.to_str().unwrap(),
        "--server",
        "good",
        "tools",
        "--tokens",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("good: {} tools, ~{cost} tokens", good["tools"])),
        "{text}"
    );
    assert!(text.contains("total: "), "{text}");
    let listed = run(&[
        "--config",
        cfg.to_str().unwrap(),
        "--server",
        "good",
        "--json",
        "tools",
    ]);
    let listed: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let sum: u64 = listed
        .iter()
        .map(|t| t["definitionTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, cost);
    assert_eq!(run(&["status", "--tokens"]).status.code(), Some(2));
    let broken = rows.iter().find(|r| r["name"] == "broken").unwrap();
    assert_eq!(broken["status"], "disconnected");
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("cannot initialize"),
        "{broken}"
    );
}

#[test]
fn a_malformed_config_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("mcp-cli-test-{}-bad", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(".mcp.json");
    std::fs::write(&path, "{\"mcpServers\": ").unwrap();
    let out = run(&["--config", path.to_str().unwrap(), "tools"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("malformed JSON") && err.contains(".mcp.json"),
        "{err}"
    );
}

#[test]
fn probe_a_stdio_server_and_report_in_json() {
    // The demo server: every tool answers, so the probe passes.
    let exe = mcp().get_program().to_owned();
    let out = run(&[
        "--json",
        "probe",
        "--",
        exe.to_str().unwrap(),
        "--demo-server",
        "slow",
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["server"], "demo-slow");
    assert_eq!(report["protocolVersion"], "2025-11-25");
    assert_eq!(report["transport"], "stdio");
    assert_eq!(report["tools"], json!(["weather", "countdown"]));
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert!(
        calls.contains(&json!({"tool": "weather", "ok": true, "isError": false, "error": null}))
    );
}

#[test]
fn probe_reports_protocol_failures_with_exit_status_1() {
    // The test server has a tool that never answers and one that crashes the server.
    let out = run(&[
        "--json",
        "--timeout",
        "2000",
        "probe",
        "--",
        common::server_path(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 17);
    let by_tool = |name: &str| calls.iter().find(|c| c["tool"] == name).unwrap().clone();
    assert_eq!(by_tool("hang")["ok"], false);
    assert_eq!(by_tool("crash")["ok"], false);
    assert!(calls
        .iter()
        .all(|c| c["ok"].is_boolean() && c.get("error").is_some()));
}

#[test]
fn probe_a_server_that_cannot_start() {
    let out = run(&["probe", "--", "/nonexistent/server"]);
    assert_eq!(
        out.status.code(),
        Some(69),
        "the server could not be started"
    );
    assert!(
        stdout(&out).contains("connect: FAILED: Failed to start MCP server"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_http_server_in_the_config() {
    let server = common::http_server::TestHttp::start(Default::default());
    let cfg = config_file(
        "http",
        json!({"remote": {"type": "http", "url": server.url()}}),
    );
    let out = run(&[
        "--config",
        cfg.to_str().unwrap(),
        "call",
        "mcp_remote_echo",
        r#"{"message":"via config"}"#,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout(&out), "via config\n");
    let out = run(&["--config", cfg.to_str().unwrap(), "--json", "status"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["transport"], "http");
    assert_eq!(rows[0]["status"], "connected");
}

#[test]
fn servers_lists_discovery_with_sources_and_shadowing() {
    let root = std::env::temp_dir().join(format!("mcp-cli-test-{}-servers", std::process::id()));
    let (home, project) = (root.join("home"), root.join("project"));
    let write = |path: PathBuf, v: Value| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, v.to_string()).unwrap();
    };
    write(
        home.join(".cursor/mcp.json"),
        json!({"mcpServers": {"t": test_server(&[]), "off": {"command": "x", "enabled": false}}}),
    );
    // The plain mcp.json is the lowest source (.mcp.json is Claude Code's project scope).
    write(
        project.join("mcp.json"),
        json!({"mcpServers": {"t": {"command": "loses"}}}),
    );
    let out = mcp()
        .env("HOME", &home)
        .args(["--cwd", project.to_str().unwrap(), "--json", "servers"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let find = |name: &str, shadowed: bool| {
        rows.iter()
            .find(|r| r["name"] == name && r["shadowed"] == shadowed)
            .cloned()
    };
    let t = find("t", false).unwrap();
    assert_eq!(t["provider"], "cursor");
    assert_eq!(t["providerName"], "Cursor");
    assert_eq!(t["level"], "user");
    assert_eq!(t["type"], "stdio");
    assert_eq!(t["enabled"], true);
    let loser = find("t", true).unwrap();
    assert_eq!(loser["provider"], "mcp-json");
    assert_eq!(loser["level"], "project");
    assert_eq!(loser["skipped"], "shadowed by a higher-priority source");
    assert_eq!(t["trust"], "user");
    assert_eq!(t["skipped"], Value::Null);
    assert_eq!(find("off", false).unwrap()["enabled"], false);
    assert_eq!(find("off", false).unwrap()["skipped"], "enabled: false");

    // Without --config, tools and calls go through discovery too.
    let out = mcp()
        .env("HOME", &home)
        .args([
            "--cwd",
            project.to_str().unwrap(),
            "call",
            "mcp_t_echo",
            r#"{"message":"discovered"}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(
        stdout(&out),
        "discovered\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_tool_cache_is_written_where_asked_and_not_at_all_with_no_cache() {
    let cfg = config_file("cache", json!({"cached": test_server(&[])}));
    let dir = std::env::temp_dir().join(format!("mcp-cli-test-{}-cachedir", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = run(&[
        "--config",
        cfg.to_str().unwrap(),
        "--cache-dir",
        dir.to_str().unwrap(),
        "tools",
    ]);
    assert!(out.status.success());
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1);
    let entry: Value =
        serde_json::from_str(&std::fs::read_to_string(entries[0].path()).unwrap()).unwrap();
    assert_eq!(entry["tools"].as_array().unwrap().len(), 17);
    assert_eq!(entry["version"], 1);
    let none = dir.join("none");
    let out = run(&[
        "--config",
        cfg.to_str().unwrap(),
        "--cache-dir",
        none.to_str().unwrap(),
        "--no-cache",
        "tools",
    ]);
    assert!(out.status.success());
    assert!(!none.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repl_driven_through_a_pipe_leaves_nothing_behind() {
    use std::io::Write;
    let tag = format!("cli-repl-{}", std::process::id());
    // Discovered from the project (the .mcp.json in --cwd), so /mcp add may edit the host's
    // project file there.
    let cfg = config_file("repl", json!({"t": test_server(&["--tag", &tag])}));
    let dir = cfg.parent().unwrap().to_path_buf();
    let mut child = mcp()
        // The test wrote the project's .mcp.json itself.
        .args(["--cwd", dir.to_str().unwrap(), "--trust-project", "repl"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let script = "/mcp status\ntools\ncall mcp_t_echo {\"message\": \"piped\"}\n/mcp add extra -- "
        .to_owned()
        + common::server_path()
        + " --tools 1\ncall mcp_extra_tool_0\n/mcp nope\nstatus\n";
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    drop(child.stdin.take()); // end of input ends the repl
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    assert!(text.starts_with("t: connected (17 tools)\n\n"), "{text}");
    assert!(text.contains("mcp_t_echo  Echoes the message"), "{text}");
    assert!(text.contains("\n\npiped\n\n"), "{text}");
    assert!(text.contains("Added MCP server extra to"), "{text}");
    assert!(text.contains("\n\ntool_0 called\n\n"), "{text}");
    assert!(
        text.contains("Unknown subcommand: nope. Type /mcp help for usage."),
        "{text}"
    );
    assert!(text.contains("extra: connected (18 tools)"), "{text}");
    assert!(
        common::processes_tagged(&tag).is_empty(),
        "the server outlived the repl"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn repl_quit_stops_at_once() {
    let tag = format!("cli-repl-quit-{}", std::process::id());
    let cfg = config_file("repl-quit", json!({"t": test_server(&["--tag", &tag])}));
    let dir = cfg.parent().unwrap().to_path_buf();
    let out = mcp()
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--cwd",
            dir.to_str().unwrap(),
            "repl",
        ])
        .stdin(std::fs::File::open(write_script(&dir, "tools\nquit\ncall never\n")).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!stdout(&out).contains("never"));
    assert!(common::processes_tagged(&tag).is_empty());
}

fn write_script(dir: &std::path::Path, text: &str) -> PathBuf {
    let path = dir.join("script.txt");
    std::fs::write(&path, text).unwrap();
    path
}
