//! The `mcp` CLI beyond tools: resources, templates, prompts, completions, logs, server info,
//! `--server`, `--version`, and usage errors, against the test server (`--features`).

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

fn mcp(root: &std::path::Path) -> Command {
    let mut cmd = common::cli(&root.join("home"));
    cmd.current_dir(root);
    cmd
}

/// A directory with a `.mcp.json` of `servers`.
fn setup(name: &str, servers: Value) -> (PathBuf, String) {
    let root = common::temp_dir(&format!("cli-features-{name}"));
    std::fs::create_dir_all(&root).unwrap();
    let cfg = root.join("servers.json");
    std::fs::write(&cfg, json!({ "mcpServers": servers }).to_string()).unwrap();
    (root, cfg.display().to_string())
}

fn docs() -> Value {
    json!({"docs": {"command": common::server_path(), "args": ["--features"]}})
}

fn run(root: &std::path::Path, cfg: &str, args: &[&str]) -> Output {
    mcp(root)
        .arg("--config")
        .arg(cfg)
        .args(args)
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_of(o: &Output) -> Value {
    assert!(o.status.success(), "{}\n{}", out(o), err(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

#[test]
fn resources_templates_and_prompts_are_listed() {
    let (root, cfg) = setup("lists", docs());
    let rows = json_of(&run(&root, &cfg, &["--json", "resources"]));
    let uris: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["test://a", "test://b"]);
    assert_eq!(rows[0]["server"], "docs");
    assert_eq!(rows[0]["mimeType"], "text/plain");

    let text = run(&root, &cfg, &["resources"]);
    assert!(out(&text).contains("test://a"), "{}", out(&text));

    let rows = json_of(&run(&root, &cfg, &["--json", "templates"]));
    assert_eq!(rows[0]["uriTemplate"], "test://item/{id}");
    assert_eq!(rows[0]["server"], "docs");

    let rows = json_of(&run(&root, &cfg, &["--json", "prompts"]));
    assert_eq!(rows[0]["command"], "mcp_docs_greet");
    assert_eq!(rows[0]["name"], "greet");
    assert_eq!(rows[0]["arguments"][0]["name"], "who");
    let text = run(&root, &cfg, &["prompts"]);
    assert!(
        out(&text).starts_with("mcp_docs_greet who=…"),
        "{}",
        out(&text)
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn read_prints_text_and_never_base64_unless_asked() {
    let (root, cfg) = setup("read", docs());
    let o = run(&root, &cfg, &["read", "test://a"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "contents of test://a\n");
    let o = run(&root, &cfg, &["read", "test://b"]);
    assert!(
        out(&o).contains("binary application/octet-stream"),
        "{}",
        out(&o)
    );
    assert!(!out(&o).contains("AAEC"), "{}", out(&o));
    let read = json_of(&run(&root, &cfg, &["--json", "read", "test://b"]));
    assert_eq!(read["contents"][0]["blob"], "AAEC");
    // A URI of a template is read from the template's server.
    let o = run(&root, &cfg, &["read", "test://item/7"]);
    assert_eq!(out(&o), "contents of test://item/7\n");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn prompt_takes_key_value_or_json_arguments() {
    let (root, cfg) = setup("prompt", docs());
    let o = run(&root, &cfg, &["prompt", "mcp_docs_greet", "who=Ada"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "user: Hello, Ada!\n");
    let got = json_of(&run(
        &root,
        &cfg,
        &["--json", "prompt", "mcp_docs_greet", r#"{"who":"Bo"}"#],
    ));
    assert_eq!(got["messages"][0]["content"]["text"], "Hello, Bo!");
    let o = run(&root, &cfg, &["prompt", "mcp_docs_nothing"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("no prompt named mcp_docs_nothing"),
        "{}",
        err(&o)
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn complete_a_prompt_argument_and_a_template_variable() {
    let (root, cfg) = setup("complete", docs());
    let o = run(&root, &cfg, &["complete", "mcp_docs_greet", "who", "al"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "alice\nalan\n");
    let got = json_of(&run(
        &root,
        &cfg,
        &["--json", "complete", "test://item/{id}", "id", "b"],
    ));
    assert_eq!(got["values"], json!(["bob"]));
    let o = run(&root, &cfg, &["complete", "nothing", "x"]);
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn info_shows_identity_capabilities_and_instructions() {
    let (root, cfg) = setup("info", docs());
    let got = json_of(&run(&root, &cfg, &["--json", "info", "docs"]));
    assert_eq!(got["name"], "docs");
    assert_eq!(got["serverInfo"]["name"], "mcp-test-server");
    assert_eq!(got["transport"], "stdio");
    assert!(got["capabilities"]["prompts"].is_object(), "{got}");
    assert_eq!(got["instructions"], "Use echo to test.");
    let o = run(&root, &cfg, &["info", "docs"]);
    assert!(
        out(&o).contains("instructions:\n  Use echo to test."),
        "{}",
        out(&o)
    );
    let o = run(&root, &cfg, &["info", "nobody"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("no configured server is named \"nobody\""),
        "{}",
        err(&o)
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn logs_follows_a_servers_messages_at_the_level_asked_until_interrupted() {
    let (root, cfg) = setup("logs", docs());
    let mut child = mcp(&root)
        .args(["--config", &cfg, "logs", "--level", "debug"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The test server answers logging/setLevel with a message at that level.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(20));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let status = child.wait().unwrap();
    assert_eq!(
        line.as_deref(),
        Ok("[docs] debug features: log level set to debug")
    );
    assert_eq!(status.code(), Some(130));

    let o = run(&root, &cfg, &["logs", "--level", "loud"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--level takes debug"), "{}", err(&o));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn server_limits_every_command_to_the_named_servers() {
    let servers = json!({
        "a": {"command": common::server_path()},
        "b": {"command": common::server_path(), "args": ["--features"]},
    });
    let (root, cfg) = setup("server-flag", servers);
    let rows = json_of(&run(&root, &cfg, &["--server", "a", "--json", "tools"]));
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["server"] == "a"), "{rows:?}");
    let rows = json_of(&run(&root, &cfg, &["--server", "a", "--json", "status"]));
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    let rows = json_of(&run(&root, &cfg, &["--server", "a", "--json", "prompts"]));
    assert_eq!(rows, json!([]));
    let o = run(&root, &cfg, &["--server", "zed", "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("no configured server is named \"zed\""),
        "{}",
        err(&o)
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn version_and_short_usage_errors() {
    let root = common::temp_dir("cli-features-version");
    std::fs::create_dir_all(&root).unwrap();
    let o = mcp(&root).arg("--version").output().unwrap();
    assert!(o.status.success());
    assert_eq!(out(&o), format!("mcp {}\n", env!("CARGO_PKG_VERSION")));
    let o = mcp(&root).arg("frobnicate").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let text = err(&o);
    assert!(
        text.starts_with("mcp: unrecognized subcommand 'frobnicate'"),
        "{text}"
    );
    assert!(
        text.lines().count() <= 3,
        "the whole help was printed: {text}"
    );
    let _ = std::fs::remove_dir_all(root);
}
