//! `mcp login`, `mcp logout`, `mcp auth status` and `needs login` in `mcp status`, against a
//! protected MCP server and authorization server of our own (loopback).
#![cfg(feature = "oauth")]

mod common;
#[path = "common/oauth_server.rs"]
mod oauth_server;

use std::path::Path;
use std::process::{Command, Output};

use oauth_server::*;
use serde_json::json;

fn mcp(home: &Path) -> Command {
    common::cli(home)
}

fn run(home: &Path, config: &Path, words: &[&str]) -> Output {
    let mut cmd = mcp(home);
    cmd.arg("--config").arg(config).args(words);
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn login_status_call_and_logout() {
    let server = OAuthServer::start(Script::default());
    let home = std::env::temp_dir().join(format!("mcp-cli-auth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let config = home.join(".mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"remote": {"type": "http", "url": server.url(),
                                          "oauth": {"clientId": "pre-registered"}}}})
        .to_string(),
    )
    .unwrap();

    let o = run(&home, &config, &["--json", "status"]);
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["status"], "needs login", "{}", text(&o));

    let o = run(&home, &config, &["auth", "status"]);
    assert!(text(&o).contains("remote: not logged in"), "{}", text(&o));

    let o = run(&home, &config, &["login", "remote", "--headless"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("logged in to remote (1 tools)"),
        "{}",
        text(&o)
    );
    let stored = std::fs::read_to_string(home.join(".mcp-runtime/auth.json")).unwrap();
    assert!(!stored.is_empty());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join(".mcp-runtime/auth.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the auth file is private");
    }

    let o = run(&home, &config, &["auth", "status"]);
    assert!(text(&o).contains("remote: logged in"), "{}", text(&o));
    let o = run(&home, &config, &["call", "mcp_remote_whoami"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("scope"), "{}", text(&o));

    let o = run(&home, &config, &["logout", "remote"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&home, &config, &["auth", "status"]);
    assert!(text(&o).contains("remote: not logged in"), "{}", text(&o));
    // No token, code or secret in anything the CLI printed.
    for secret in server.secrets() {
        assert!(!text(&o).contains(&secret));
    }
}

#[test]
fn probe_logs_in_headlessly_with_an_inline_oauth_object() {
    let server = OAuthServer::start(Script::default());
    let home = std::env::temp_dir().join(format!("mcp-cli-probe-auth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let o = mcp(&home)
        .args([
            "--json",
            "probe",
            "--oauth",
            r#"{"clientId": "pre-registered"}"#,
        ])
        .arg(server.url())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["tools"], json!(["whoami"]), "{report}");
    assert!(!server.seen_at("/token").is_empty(), "it logged in");
    // Without --oauth the same probe is refused at the door.
    let o = mcp(&home)
        .args(["--json", "probe"])
        .arg(server.url())
        .env("HOME", home.join("elsewhere"))
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn login_where_there_is_nothing_to_log_in_to_says_so_and_opens_nothing() {
    use common::http_server::{Behaviour, TestHttp};
    let open = TestHttp::start(Behaviour::default());
    let home = common::temp_dir("cli-login-nothing");
    let opened = home.join("browser-opened");
    let browser = home.join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\ntouch '{}'\n", opened.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = home.join(".mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"open": {"type": "http", "url": open.url()},
                              "local": {"command": common::server_path()}}})
        .to_string(),
    )
    .unwrap();
    let login = |name: &str| {
        let mut cmd = mcp(&home);
        cmd.env("BROWSER", &browser)
            .arg("--config")
            .arg(&config)
            .args(["login", name]);
        cmd.output().unwrap()
    };

    // A server that answers without asking: nothing is registered, nothing stored.
    let o = login("open");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("answered without asking for authorization: it needs no login"),
        "{}",
        text(&o)
    );
    assert!(
        !open
            .seen()
            .iter()
            .any(|s| s.path.contains("register") || s.path.contains(".well-known")),
        "login went looking for an authorization server"
    );
    assert!(!home.join(".mcp-runtime/auth.json").exists());

    // A stdio server: OAuth does not apply, and no browser is opened for it.
    let o = login("local");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("does not use OAuth"), "{}", text(&o));
    assert!(!text(&o).contains("opening your browser"), "{}", text(&o));
    assert!(!opened.exists(), "a browser was opened");
}
