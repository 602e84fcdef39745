//! `mcp call` (only the tool's server starts; `KEY=VALUE` arguments typed by the schema), what
//! the CLI declares to servers, `tools --json` / `probe --json` fields, and `status`'s transport.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::http_server::{Behaviour, TestHttp};
use serde_json::{json, Value};

fn mcp(root: &Path) -> Command {
    let mut cmd = common::cli(&root.join("home"));
    cmd.current_dir(root);
    cmd
}

fn setup(name: &str, servers: Value) -> (PathBuf, String) {
    let root = common::temp_dir(&format!("cli-call-{name}"));
    std::fs::create_dir_all(&root).unwrap();
    let cfg = root.join("servers.json");
    std::fs::write(&cfg, json!({ "mcpServers": servers }).to_string()).unwrap();
    (root, cfg.display().to_string())
}

fn run(root: &Path, cfg: &str, args: &[&str]) -> Output {
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

fn test_server() -> Value {
    json!({"command": common::server_path()})
}

/// A test server that leaves `marker` behind when it is started.
fn marked_server(marker: &Path) -> Value {
    json!({"command": "sh", "args": ["-c", format!("touch '{}'; exec '{}'", marker.display(), common::server_path())]})
}

#[test]
fn call_starts_only_the_server_its_name_names() {
    let root = common::temp_dir("cli-call-prefix");
    std::fs::create_dir_all(&root).unwrap();
    let marker = root.join("other-started");
    let (root, cfg) = setup(
        "prefix",
        json!({"alpha": test_server(), "other": marked_server(&marker)}),
    );
    let o = run(
        &root,
        &cfg,
        &["--no-cache", "call", "mcp_alpha_echo", "message=hi"],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "hi\n");
    assert!(
        !marker.exists(),
        "the other server was started for the call"
    );
    // A name no prefix gives away: every server starts.
    let o = run(&root, &cfg, &["--no-cache", "call", "mcp_nobody_echo"]);
    assert_eq!(o.status.code(), Some(2), "no such tool: a usage error");
    assert!(marker.exists());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn call_finds_the_owner_in_the_tool_cache_when_prefixes_are_ambiguous() {
    let root = common::temp_dir("cli-call-cache");
    std::fs::create_dir_all(&root).unwrap();
    let marker = root.join("a-started");
    // `mcp_a_b_echo` has the prefix of both `a` and `a_b`; only the cache knows it is a_b's.
    let (root, cfg) = setup(
        "cache",
        json!({"a": marked_server(&marker), "a_b": test_server()}),
    );
    let o = run(&root, &cfg, &["tools"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    let o = run(&root, &cfg, &["call", "mcp_a_b_echo", "message=cached"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "cached\n");
    assert!(
        !marker.exists(),
        "a was started although the cache names a_b"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn key_value_arguments_are_typed_by_the_tools_schema() {
    let (root, cfg) = setup("typed", json!({"t": test_server()}));
    // `message` is a string in the schema: 42 stays a string (the echo would fail otherwise).
    let o = run(&root, &cfg, &["call", "mcp_t_echo", "message=42"]);
    assert_eq!(out(&o), "42\n", "{}", err(&o));
    // `a` and `b` are numbers.
    let o = run(&root, &cfg, &["call", "mcp_t_add", "a=2", "b=3.5"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "5.5\n");
    let o = run(&root, &cfg, &["call", "mcp_t_add", "a=two"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("a: \"two\" is not a number"),
        "{}",
        err(&o)
    );
    let o = run(&root, &cfg, &["call", "mcp_t_echo", "no-equals"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn tools_json_has_schemas_and_annotations() {
    let (root, cfg) = setup("tools-json", json!({"t": test_server()}));
    let o = run(&root, &cfg, &["--json", "tools"]);
    assert!(o.status.success(), "{}", err(&o));
    let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let echo = rows.iter().find(|r| r["name"] == "mcp_t_echo").unwrap();
    assert_eq!(echo["server"], "t");
    assert_eq!(echo["description"], "Echoes the message");
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    let rich = rows.iter().find(|r| r["name"] == "mcp_t_rich").unwrap();
    assert_eq!(rich["outputSchema"], json!({"type": "object"}));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn probe_json_has_identity_capabilities_and_instructions() {
    let root = common::temp_dir("cli-call-probe");
    std::fs::create_dir_all(&root).unwrap();
    let o = mcp(&root)
        .args(["--json", "probe", "--", common::server_path(), "--features"])
        .output()
        .unwrap();
    let got: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(&o)));
    assert_eq!(got["server"], "mcp-test-server");
    assert_eq!(got["serverInfo"]["version"], "1.0.0");
    assert!(got["capabilities"]["resources"].is_object(), "{got}");
    assert_eq!(got["instructions"], "Use echo to test.");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_cli_declares_roots_and_elicitation_and_answers_them() {
    let (root, cfg) = setup("capabilities", json!({"t": test_server()}));
    let o = run(&root, &cfg, &["--json", "call", "mcp_t_client_info"]);
    let got: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", err(&o)));
    let caps = &got["structuredContent"]["capabilities"];
    assert!(caps["roots"].is_object(), "{caps}");
    assert!(caps["elicitation"].is_object(), "{caps}");
    assert!(caps.get("sampling").is_none(), "{caps}");

    let ask = |method: &str, params: Value| -> (Value, bool) {
        let args = json!({"method": method, "params": params}).to_string();
        let o = run(&root, &cfg, &["--json", "call", "mcp_t_ask", &args]);
        let got: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", err(&o)));
        (
            got["structuredContent"]["response"].clone(),
            got["isError"] == true,
        )
    };
    // Roots: the project directory (here the current one).
    let (roots, failed) = ask("roots/list", json!({}));
    assert!(!failed, "{roots}");
    let project = std::fs::canonicalize(&root).unwrap();
    assert_eq!(
        roots["roots"][0]["uri"],
        format!("file://{}", project.display())
    );
    // Elicitation without a terminal: the defaults, when they cover what is required.
    let schema =
        json!({"type": "object", "properties": {"color": {"type": "string", "default": "blue"}}});
    let (answer, _) = ask(
        "elicitation/create",
        json!({"message": "Pick", "requestedSchema": schema}),
    );
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {"color": "blue"}})
    );
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let (answer, _) = ask(
        "elicitation/create",
        json!({"message": "Name?", "requestedSchema": schema}),
    );
    assert_eq!(answer, json!({"action": "decline"}));
    // Sampling is not offered.
    let (answer, failed) = ask(
        "sampling/createMessage",
        json!({"messages": [], "maxTokens": 1}),
    );
    assert!(failed);
    assert_eq!(answer["code"], -32601);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn status_names_the_transport_actually_used() {
    // The server refuses Streamable HTTP at its legacy URL: the client falls back to SSE.
    let server = TestHttp::start(Behaviour::default());
    let (root, cfg) = setup("status-sse", json!({"legacy": {"url": server.sse_url()}}));
    let o = run(&root, &cfg, &["--json", "status"]);
    let rows: Vec<Value> =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", err(&o)));
    assert_eq!(rows[0]["status"], "connected", "{rows:?}");
    assert_eq!(rows[0]["transport"], "sse");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn call_shows_progress_on_a_terminal_only() {
    let (root, cfg) = setup("progress", json!({"t": test_server()}));
    let args = ["call", "mcp_t_progress", "steps=3"];
    // Piped: the result, and no progress drawing on stderr.
    let o = run(&root, &cfg, &args);
    assert_eq!(out(&o), "3 steps\n", "{}", err(&o));
    assert!(!err(&o).contains('\r'), "{:?}", err(&o));
    // On a terminal (script(1) gives the CLI one): a bar with the server's message, then the
    // line is cleared before the result.
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("skipped the terminal half: no /usr/bin/script");
        let _ = std::fs::remove_dir_all(root);
        return;
    }
    let exe = mcp(&root).get_program().to_owned();
    let line = format!(
        "'{}' --config '{cfg}' {}",
        Path::new(&exe).display(),
        args.join(" ")
    );
    let o = Command::new("/usr/bin/script")
        .args(["-qec", &line, "/dev/null"])
        .env("HOME", root.join("home"))
        .env("XDG_CACHE_HOME", root.join("home/.cache"))
        .current_dir(&root)
        .output()
        .unwrap();
    let text = out(&o);
    assert!(
        text.contains("mcp_t_progress [########################] 100% step 3"),
        "{text:?}"
    );
    assert!(text.contains("\r\x1b[K3 steps"), "{text:?}");
    let _ = std::fs::remove_dir_all(root);
}
