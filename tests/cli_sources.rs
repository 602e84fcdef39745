//! Discovery through the `mcp` CLI where the environment matters: `CODEX_HOME`, and Codex's
//! environment headers read at connect time (no warning at `servers`).

mod common;

use serde_json::Value;

#[test]
fn codex_home_is_where_codex_keeps_its_config() {
    let root = common::temp_dir("cli-codex-home");
    let (home, project, codex) = (root.join("home"), root.join("project"), root.join("codex"));
    for d in [&home, &project, &codex] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        codex.join("config.toml"),
        "[mcp_servers.docs]\nurl = \"http://127.0.0.1:9/mcp\"\nenv_http_headers = { \"X-Key\" = \"MCP_CLI_UNSET_VAR\" }\n",
    )
    .unwrap();
    let out = common::cli(&home)
        .env("CODEX_HOME", &codex)
        .env_remove("MCP_CLI_UNSET_VAR")
        .args(["--cwd", project.to_str().unwrap(), "--json", "servers"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let docs = rows.iter().find(|r| r["name"] == "docs").expect("docs");
    assert_eq!(docs["provider"], "codex");
    assert_eq!(
        docs["path"],
        codex.join("config.toml").display().to_string()
    );
    assert_eq!(docs["level"], "user");
    assert!(!stderr.contains("MCP_CLI_UNSET_VAR"), "{stderr}");
    let _ = std::fs::remove_dir_all(root);
}
